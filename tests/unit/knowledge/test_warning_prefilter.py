"""A succeeding cell's fd-2 output is checked for "GPU silently unused" warnings on the lines
that hold a warning literal only (``knowledge.keyword_lines``): the result must be the same as
over the whole text, for every wording of the knowledge tables and the real corpus, and for a
warning buried anywhere in a megabyte of ordinary native log in a real shell."""

from __future__ import annotations

import json

import pytest
from test_knowledge_families import CASES as FAMILY_CASES

from cudnn_magic.engines.diagnose import gpu_unused_warnings
from cudnn_magic.knowledge import keyword_lines
from helpers.shell_child import TF_SKIP, run, section
from helpers.support import corpus_dir

NOISE = [
    "2023-12-12 16:48:40.100000: I external/local_xla/xla/stream_executor/cuda/cuda_executor.cc:901] successful NUMA node "
    "read from SysFS had negative value (-1), but there must be at least one NUMA node, so returning NUMA node zero.",
    "2023-12-12 16:48:40.200000: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1929] Created device "
    "/job:localhost/replica:0/task:0/device:GPU:0 with 22290 MB memory:  -> device: 0, name: NVIDIA A10G",
    "W0000 00:00:1700000000.100000   4242 gpu_timer.cc:114] Skipping the delay kernel, measurement accuracy will be reduced",
    "I0000 00:00:1700000000.200000   4242 some_native.cc:12] step 4400: loss 1.2345, 51234 tokens/s",
]

WARNINGS = [
    TF_SKIP,
    "2021-06-02 13:10:30.111111: W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic "
    "library 'libcudnn.so.8'; dlerror: libcudnn.so.8: cannot open shared object file: No such file or directory\n" + TF_SKIP,
    "2021-06-02 13:10:30.111111: W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic "
    "library 'libcublas.so.11'; dlerror: libcublas.so.11: cannot open shared object file: No such file or directory\n" + TF_SKIP,
    "2024-01-01 00:00:00.000000 [W:onnxruntime:Default, onnxruntime_pybind_state.cc:965 CreateExecutionProviderInstance] "
    "Failed to create CUDAExecutionProvider. Require cuDNN 9.* and CUDA 12.*. Please install all dependencies as mentioned "
    "in the GPU requirements page.\n",
    "An NVIDIA GPU may be present on this machine, but a CUDA-enabled jaxlib is not installed. Falling back to cpu.\n",
    "CUDA backend failed to initialize: Found cuDNN version 8600, but JAX was built against version 8907, which is newer. "
    "The copy of cuDNN that is installed must be at least as new as the version against which JAX was built. "
    "(Set TF_CPP_MIN_LOG_LEVEL=0 and rerun for more info.)\n",
    "W tensorflow/core/common_runtime/gpu/gpu_device.cc:1900] Ignoring visible gpu device (device: 0, name: Tesla K40c, "
    "pci bus id: 0000:02:00.0, compute capability: 3.5) with Cuda compute capability 3.5. The minimum required Cuda "
    "capability is 3.7.\n",
]


def _texts() -> list[str]:
    out = [log for _, log, _ in FAMILY_CASES if log] + [exc for exc, _, _ in FAMILY_CASES if exc]
    for name in ("cases.jsonl", "negatives.jsonl"):
        path = corpus_dir() / name
        for row in path.read_text(encoding="utf-8").splitlines():
            if row.strip():
                case = json.loads(row)
                out += [case.get(k) or "" for k in ("stderr", "exception", "traceback_tail")]
    return [t for t in out if t] + WARNINGS


def _ids(diags) -> list[tuple[str, str]]:
    return [(d.id, d.title) for d in diags]


@pytest.mark.parametrize("text", _texts(), ids=range(len(_texts())))
def test_same_warnings_through_the_keyword_lines(text):
    whole = gpu_unused_warnings(text)
    lines = keyword_lines(text.encode("utf-8", "surrogatepass"))
    reduced = gpu_unused_warnings(lines.decode("utf-8", "replace"), joined=False) if lines else []
    assert _ids(reduced) == _ids(whole)


@pytest.mark.parametrize("where", ["start", "middle", "end"])
@pytest.mark.parametrize("warning", WARNINGS, ids=range(len(WARNINGS)))
def test_a_warning_buried_in_a_megabyte_is_found(where, warning):
    noise = []
    size = 0
    i = 0
    while size < 1 << 20:
        line = NOISE[i % len(NOISE)].replace("4242", "%04d" % (i % 9999))
        noise.append(line)
        size += len(line) + 1
        i += 1
    at = {"start": 0, "middle": len(noise) // 2, "end": len(noise)}[where]
    text = "\n".join([*noise[:at], warning.rstrip("\n"), *noise[at:]]) + "\n"
    expected = _ids(gpu_unused_warnings(warning))  # [] for the cuBLAS one: not a cuDNN matter
    lines = keyword_lines(text.encode())
    assert len(lines) < 64 * 1024, len(lines)
    assert _ids(gpu_unused_warnings(lines.decode(), joined=False)) == expected
    assert _ids(gpu_unused_warnings(text)) == expected


def test_ordinary_log_has_no_keyword_lines():
    text = ("\n".join(NOISE) + "\n") * 2000
    assert keyword_lines(text.encode()) == b""


def test_a_literal_on_every_line_keeps_first_and_last_lines():
    line = b"I tensorflow/core/util.cc:1] opened dynamic library libcudnn.so.9 for worker %d\n"
    data = b"".join(line % i for i in range(50_000))
    out = keyword_lines(data)
    assert b"worker 0\n" in out + b"\n" and b"worker 49999" in out
    assert len(out) < len(data) // 5


def test_shell_shows_a_warning_buried_in_a_megabyte(tmp_path):
    """A real shell with the capture: a cell writes 1 MiB of ordinary native log with TensorFlow's
    "Cannot dlopen some GPU libraries" lines in the middle; the warning is shown, and a quiet
    succeeding cell after it shows nothing."""
    block = "\n".join(NOISE) + "\n"
    out, err, rc = run(tmp_path, f"""
        ip.run_line_magic("load_ext", "cudnn_magic")
        noise = {block!r}.encode() * 1400
        payload = noise + {TF_SKIP!r}.encode() + noise
        ip.user_ns["payload"], ip.user_ns["noise"] = payload, noise + noise
        mark("big"); r = cell("import os\\nos.write(2, payload)\\nx = 1"); mark("noise")
        r2 = cell("import os\\nos.write(2, noise)"); mark("end")
        print("success:", r.success, r2.success)
    """)
    assert rc == 0, err[-3000:]
    expected = gpu_unused_warnings(TF_SKIP)
    assert expected[0].id in section(out, "big"), out[-3000:]
    assert "cudnn-magic" not in section(out, "noise")
    assert "success: True True" in out
