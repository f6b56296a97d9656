"""The diagnosis engine: joining text with live facts, titles, fixes, warnings, renderers."""

from __future__ import annotations

import json
import logging

import pytest

from cudnn_magic.engines.diagnose import CATALOGUE, FIX_IDS, diagnose, gpu_unused_warnings
from cudnn_magic.model import (
    CudnnInUse,
    Diagnosis,
    Driver,
    Finding,
    Fix,
    FrameworkBuild,
    Gpu,
    LibraryCopy,
    Report,
    Resolution,
    Unavailable,
)
from cudnn_magic.render.diagnosis import diagnoses_html, diagnoses_json, diagnoses_text

HANDLE = "E tensorflow/stream_executor/cuda/cuda_dnn.cc:329] Could not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR"
VERSION_LINE = ("2021-12-14 13:30:57.846447: E tensorflow/stream_executor/cuda/cuda_dnn.cc:359] Loaded runtime CuDNN "
                "library: 8.0.5 but source was compiled with: 8.1.0.  CuDNN library needs to have matching major version "
                "and equal or higher minor version.")


def _tf(verdict="mismatch", used="8.0.5", cuda="11.2"):
    return FrameworkBuild("TensorFlow", "tensorflow", "2.6.0", imported=True, cudnn_compiled="8.1", cuda_compiled=cuda,
                          cudnn_used=used, cudnn_used_path="/usr/lib/x86_64-linux-gnu/libcudnn.so.8", verdict=verdict,
                          detail="cuDNN 8.0.5 is older than the 8.1 it was built with")


def test_plain_text_gives_generic_init_failed():
    res = diagnose(log=HANDLE)
    assert res[0].id == "cudnn-init-failed"
    assert "gpu-out-of-memory" in [d.id for d in res]


def test_facts_refine_init_failed_to_version_mismatch():
    report = Report(cudnn_loaded=(LibraryCopy("/usr/lib/x86_64-linux-gnu/libcudnn.so.8", "libcudnn.so.8", "libcudnn.so.8",
                                              "8.0.5", loaded=True),), frameworks=(_tf(),))
    res = diagnose(exception="UnknownError: Failed to get convolution algorithm.", log=HANDLE, report=report)
    top = res[0]
    assert top.id == "cudnn-version-mismatch"
    assert top.versions["loaded"] == "8.0.5" and top.versions["compiled"] == "8.1"
    assert "8.0.5" in top.title and "8.1" in top.title and "TensorFlow" in top.title
    assert any(e.startswith("fact:") for e in top.evidence)
    assert any(e.startswith("E tensorflow") for e in top.evidence) or any("handle" in e for d in res for e in d.evidence)


def test_facts_refine_to_memory_when_gpu_full():
    gpu = Gpu(0, "NVIDIA T4", total_bytes=16 * 2**30, used_bytes=16 * 2**30 - 50 * 2**20, free_bytes=50 * 2**20)
    res = diagnose(log=HANDLE, report=Report(gpus=(gpu,), frameworks=(_tf("ok", "8.1.0"),)))
    assert res[0].id == "gpu-out-of-memory"
    assert any("50 MiB free" in e for e in res[0].evidence)


def test_facts_refine_to_driver():
    report = Report(driver=Driver("450.51.06", "11.0"), gpus=(Gpu(0, "V100", total_bytes=2**34, free_bytes=2**33),),
                    frameworks=(_tf("ok", "8.1.0", cuda="12.2"),))
    res = diagnose(log=HANDLE, report=report)
    assert res[0].id == "cuda-driver-too-old"
    assert res[0].versions["required_driver"] == "525.60.13"
    assert any(f.id == "upgrade-driver" and "525.60.13" in f.title for f in res[0].fixes)


def test_empty_facts_do_not_override_the_log():
    bare = Report(driver=Unavailable("NVML Shared Library Not Found"), notes=("no GPU",))
    for report in (None, bare, Report()):
        assert diagnose(log=VERSION_LINE, report=report)[0].id == "cudnn-version-mismatch"
        assert diagnose(log=HANDLE, report=report)[0].id == "cudnn-init-failed"


def test_facts_alone_make_no_diagnosis():
    assert diagnose(exception="ValueError: bad", report=Report(frameworks=(_tf(),))) == []


def test_shadowing_fix_names_the_directory():
    report = Report(frameworks=(_tf(),), resolutions=(Resolution("TensorFlow", None, "libcudnn.so.8", "/opt/old/libcudnn.so.8",
                                                                 "LD_LIBRARY_PATH entry /opt/old",
                                                                 ("/site/nvidia/cudnn/lib/libcudnn.so.8",)),))
    res = diagnose(log=VERSION_LINE, report=report)
    fixes = {f.id: f for f in res[0].fixes}
    assert "/opt/old" in fixes["remove-shadowing-dir"].action


@pytest.mark.parametrize("reason, offered", [
    ("LD_LIBRARY_PATH entry /opt/old", True),
    # the loader's other steps (probes/loader.py, glibc's search order): taking the folder off
    # LD_LIBRARY_PATH would not change what these pick, so that fix is not offered
    ("RUNPATH $ORIGIN/../nvidia/cudnn/lib of libtensorflow_framework.so.2", False),
    ("RPATH /opt/old of libtensorflow_framework.so.2", False),
    ("ld.so cache", False),
], ids=["ld-library-path", "runpath", "rpath", "ld-so-cache"])
def test_shadowing_fix_only_where_ld_library_path_made_the_pick(reason, offered):
    report = Report(frameworks=(_tf(),), resolutions=(Resolution("TensorFlow", None, "libcudnn.so.8", "/opt/old/libcudnn.so.8",
                                                                 reason, ("/site/nvidia/cudnn/lib/libcudnn.so.8",)),))
    top = diagnose(log=VERSION_LINE, report=report)[0]
    assert any("picks /opt/old/libcudnn.so.8" in e and reason in e for e in top.evidence)
    # the folder's own fix (the catalogue's general advice "Keep other cuDNN copies off the
    # library path", never applicable, may stay)
    mine = [f for f in top.fixes if f.id == "remove-shadowing-dir" and "/opt/old" in f.action]
    assert [(f.title, f.applicable) for f in mine] == ([("Take /opt/old off the library path", True)] if offered else [])


def test_title_and_fix_from_versions():
    top = diagnose(log=VERSION_LINE)[0]
    assert top.title == "The cuDNN loaded at runtime (8.0.5) is older than the 8.1.0 TensorFlow was built with"
    fix = top.fixes[0]
    assert fix.id == "install-matching-cudnn" and fix.restart_required
    assert "cudnn" in fix.action and "8.1" in fix.action
    jax = diagnose(log="E0607 11:27:34.427160    7414 cuda_dnn.cc:522] Loaded runtime CuDNN library: 9.5.1 but source was "
                       "compiled with: 9.8.0.", exception="jaxlib.xla_extension.XlaRuntimeError: FAILED_PRECONDITION: "
                       "DNN library initialization failed.")[0]
    assert jax.fixes[0].action == 'python -m pip install "nvidia-cudnn-cu12<10,>=9.8"'
    assert "JAX" in jax.title


def test_commands_never_copy_log_text():
    evil = ("Loaded runtime CuDNN library: 8.0.5 but source was compiled with: 8.1.0; rm -rf / `touch x` $(id)\n"
            "Could not load dynamic library 'libcudnn.so.8;rm -rf /'; dlerror")
    for d in diagnose(log=evil):
        for f in d.fixes:
            assert "rm -rf" not in f.action and "$(id)" not in f.action and "touch x" not in f.action


def test_every_fix_id_is_stable_and_documented():
    import json as _json

    from helpers.support import corpus_dir

    cases = corpus_dir() / "cases.jsonl"
    for case in cases.read_text(encoding="utf-8").splitlines():
        c = _json.loads(case)
        for d in diagnose(exception=c["exception"] or "", log=c["stderr"] or "", traceback=c["traceback_tail"] or ""):
            assert d.id in CATALOGUE
            assert d.fixes
            for f in d.fixes:
                assert f.id in FIX_IDS and f.title and f.action


def test_never_raises():
    assert diagnose(exception=None, log=None, traceback=None) == []  # type: ignore[arg-type]
    assert diagnose(log=b"bytes are not str") == []  # type: ignore[arg-type]
    assert gpu_unused_warnings(None) == []  # type: ignore[arg-type]


def test_exc_type_joins_the_message():
    assert diagnose(exception="CUDNN_STATUS_NOT_SUPPORTED. This error may appear if you passed in a non-contiguous input.",
                    exc_type="RuntimeError")[0].id == "cudnn-unsupported-config"


# --------------------------------------------------------------- gpu_unused_warnings

TF_SKIP = """2022-07-10 15:08:09.276131: W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic library 'libcudnn.so.8'; dlerror: libcudnn.so.8: cannot open shared object file: No such file or directory
2022-07-10 15:08:09.276917: W tensorflow/core/common_runtime/gpu/gpu_device.cc:1850] Cannot dlopen some GPU libraries. Please make sure the missing libraries mentioned above are installed properly if you would like to use GPU. Follow the guide at https://www.tensorflow.org/install/gpu for how to download and setup the required libraries for your platform.
Skipping registering GPU devices..."""


def test_warning_tf_skipping_gpu():
    w = gpu_unused_warnings(TF_SKIP)
    assert w and w[0].id == "cudnn-library-not-found" and w[0].versions["soname"] == "libcudnn.so.8"
    only_summary = "\n".join(TF_SKIP.splitlines()[1:])
    assert gpu_unused_warnings(only_summary)[0].id == "cudnn-library-not-found"


def test_warning_not_for_other_missing_libraries():
    other = TF_SKIP.replace("libcudnn.so.8", "libcusolver.so.11")
    assert gpu_unused_warnings(other) == []


def test_warning_onnxruntime_and_jax():
    ort = ("[W:onnxruntime:Default, onnxruntime_pybind_state.cc:1055 CreateExecutionProviderInstance] Failed to create "
           "CUDAExecutionProvider. Require cuDNN 9.* and CUDA 12.*. Please install all dependencies")
    w = gpu_unused_warnings(ort)
    assert w[0].id == "cudnn-library-not-found" and "9" in w[0].title
    jax = ("CUDA backend failed to initialize: Found cuDNN version 8600, but JAX was built against version 8700, which is "
           "newer. (Set TF_CPP_MIN_LOG_LEVEL=0 and rerun for more info.)")
    assert gpu_unused_warnings(jax)[0].id == "cudnn-version-mismatch"
    nojax = "An NVIDIA GPU may be present on this machine, but a CUDA-enabled jaxlib is not installed. Falling back to cpu."
    assert gpu_unused_warnings(nojax)[0].id == "framework-cpu-build"  # JAX without its CUDA plugin
    assert gpu_unused_warnings("CUDA backend failed to initialize: Unable to load CUDA. Is it installed?") == []


def test_no_warning_for_ordinary_logs():
    assert gpu_unused_warnings("Epoch 1/10\nloss: 0.1\nI tensorflow Successfully opened dynamic library libcudnn.so.8") == []
    assert gpu_unused_warnings("") == []


# --------------------------------------------------------------- renderers


def test_json_contract():
    data = diagnoses_json(diagnose(log=VERSION_LINE))
    json.dumps(data)
    d = data["diagnoses"][0]
    assert set(d) == {"id", "title", "summary", "evidence", "versions", "fixes"}
    assert set(d["fixes"][0]) == {"id", "title", "action", "restart_required", "applicable"}
    assert isinstance(d["evidence"], list) and isinstance(d["versions"], dict)
    assert diagnoses_json([]) == {"diagnoses": []}


def test_html_is_escaped_and_compact():
    d = Diagnosis("cudnn-init-failed", "<b>x</b>", "s & t", ("<script>alert(1)</script>",), {"k": "<v>"})
    out = diagnoses_html([d], log_slice="<img src=x onerror=alert(1)>" + "x" * 50_000)
    assert "<script>" not in out and "<img" not in out and "&lt;script&gt;" in out
    assert "<details>" in out and "last 20,000 characters" in out
    res = diagnoses_html(diagnose(log=VERSION_LINE))
    assert "install-matching-cudnn" in res and "conda install -c conda-forge &quot;cudnn" in res
    assert diagnoses_html([]) == ""


def test_text_rendering():
    txt = diagnoses_text(diagnose(log=VERSION_LINE + "\n" + HANDLE))
    assert "[cudnn-version-mismatch]" in txt and "Evidence:" in txt and "Fixes:" in txt
    assert "Loaded runtime CuDNN library" in txt
    assert diagnoses_text([]) == ""


def test_no_driver_in_the_live_report_is_said_and_fixed_first():
    live = Report(driver=Unavailable("NVML Shared Library Not Found: no NVIDIA driver is installed on this machine"))
    d = diagnose(exception="RuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED", report=live)
    assert d[0].id == "cudnn-init-failed"
    assert any("no NVIDIA driver" in e for e in d[0].evidence)
    assert d[0].fixes[0].id == "upgrade-driver"
    pasted = diagnose(exception="RuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED")
    assert not any("no NVIDIA driver" in e for e in pasted[0].evidence)  # no live facts, no claim


# "cudnn <Op> launch failed" (TensorFlow core/kernels/pooling_ops_common.cc) may be memory, a
# mismatch or the kernel itself; next to a decisive out-of-memory line (TensorFlow's
# ResourceExhaustedError, PyTorch's CUDACachingAllocator message) memory comes first, however many
# distinct launch lines follow (each adds to their own id's score, up to 3).
_LAUNCH_OPS = ("PoolForward", "PoolBackward", "LRNForward", "BatchNormForward")
_OOM_LINES = {
    "tensorflow": "tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor with shape[64,128,56,56]",
    "pytorch": "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 15.78 GiB total capacity; 12.1 GiB already allocated)",
}


_AMBIGUOUS = {
    # two alternatives (memory, a mismatch): TensorFlow core/kernels/pooling_ops_common.cc
    "op-launch": lambda i: f"2020-01-01 00:00:0{i}.000000: E tensorflow/core/kernels/pooling_ops_common.cc:1] cudnn {_LAUNCH_OPS[i]} launch failed",
    # one alternative (memory): TensorFlow core/kernels/cudnn_rnn_ops.cc
    "rnn-call": lambda i: f"2020-01-01 00:00:0{i}.000000: W tensorflow/core/framework/op_kernel.cc:1] Internal: Failed to call ThenRnnForward with model config: [rnn_mode, num_layers]: [{i}, 1]",
}


@pytest.mark.parametrize("oom", sorted(_OOM_LINES))
@pytest.mark.parametrize("n", [1, 2, 3, 4])
@pytest.mark.parametrize("wording", sorted(_AMBIGUOUS))
def test_memory_stays_first_next_to_repeated_launch_failures(oom, n, wording):
    log = "\n".join([_OOM_LINES[oom]] + [_AMBIGUOUS[wording](i) for i in range(n)])
    got = [d.id for d in diagnose(log=log)]
    assert got[:2] == ["gpu-out-of-memory", "cudnn-execution-failed"]


# --------------------------------------------------------------------------------------------------
# Titles, ranking, install advice and warnings at their edges.
#
# diagnose() at its edges: the relation words of a version-mismatch title, the ranking (a log line
# outweighs the same words in an exception; decisive evidence promotes an ambiguous wording), the
# cuDNN/CUDA pairing behind the install advice, and which warnings a succeeding cell gets.
# Sources: docs/facts.md "Which runtime cuDNN each framework accepts" (the relation is the
# framework's own rule), "cuDNN version encoding"; NVIDIA's nvidia-cudnn-cu11 / -cu12 wheels on PyPI
# (8.5 is the first cuDNN 8 wheel for CUDA 11 on PyPI, 8.9 the first for CUDA 12); the cuDNN 8 Linux
# installation guide (cuDNN 8 links zlib: libz.so.1) and its Windows guide (zlibwapi.dll).
# --------------------------------------------------------------------------------------------------


TF_VERSION = ("E tensorflow/stream_executor/cuda/cuda_dnn.cc:359] Loaded runtime CuDNN library: {rt} but source was "
              "compiled with: {src}.  CuDNN library needs to have matching major version and equal or higher minor "
              "version.")
TORCH_VERSION = ("RuntimeError: cuDNN version incompatibility: PyTorch was compiled  against {src} but found runtime "
                 "version {rt}. PyTorch already comes bundled with cuDNN.")

RELATIONS = [
    # runtime, compiled-against, words of the title
    ("8.0.5", "8.1.0", "is older than"),  # one minor below
    ("8.1.0", "8.1.2", "is older than"),  # same minor, older patch
    ("8.1.2", "8.1.0", "is not accepted by the check against"),  # same minor, newer patch: not "older"
    ("8.1.0", "8.1.0", "is not accepted by the check against"),  # equal
    ("8.2.0", "8.1.0", "is a different minor release than"),  # one minor above
    ("7.6.5", "8.1.0", "is a different major version than"),
    ("9.0.0", "8.1.0", "is a different major version than"),
]


@pytest.mark.parametrize("rt, src, words", RELATIONS, ids=[f"{r}-vs-{s}" for r, s, _ in RELATIONS])
def test_version_mismatch_title_relation(rt, src, words):
    top = diagnose(log=TF_VERSION.format(rt=rt, src=src))[0]
    assert top.id == "cudnn-version-mismatch"
    assert top.title == f"The cuDNN loaded at runtime ({rt}) {words} the {src} TensorFlow was built with"
    assert top.versions == {"loaded": rt, "compiled": src}


@pytest.mark.parametrize("rt, src, words", [
    ("(8, 9, 2)", "(9, 1, 0)", "is a different major version than"),
    ("(9, 0, 0)", "(9, 1, 0)", "is older than"),
])
def test_pytorch_title_relation(rt, src, words):
    top = diagnose(exception=TORCH_VERSION.format(rt=rt, src=src))[0]
    loaded, compiled = (".".join(x.strip() for x in v.strip("()").split(",")) for v in (rt, src))
    assert top.id == "cudnn-version-mismatch"
    assert f"({loaded}) {words} the {compiled} PyTorch was built with" in top.title


def test_a_native_log_line_outweighs_the_same_words_in_an_exception():
    from_log = diagnose(log=HANDLE)
    from_exc = diagnose(exception=HANDLE)
    assert [d.id for d in from_log] == [d.id for d in from_exc] == ["cudnn-init-failed", "gpu-out-of-memory"]
    assert from_log[0].score > from_exc[0].score
    # the "also" alternative (memory) is weighed the same from either source
    assert from_log[1].score == from_exc[1].score
    assert from_log[0].score > from_log[1].score


def test_repeated_distinct_lines_add_weight_but_a_repeated_line_does_not():
    one = diagnose(log=HANDLE)[0].score
    same_twice = diagnose(log=HANDLE + "\n" + HANDLE)[0].score
    other = "RuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED"
    two = diagnose(log=HANDLE + "\n" + other)
    assert same_twice == one
    assert two[0].id == "cudnn-init-failed"
    assert two[0].score > max(one, diagnose(log=other)[0].score)


ALGO = "Unable to find a valid cuDNN algorithm to run convolution"
OOM = "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB"


def test_decisive_evidence_promotes_the_alternative_of_an_ambiguous_wording():
    # alone, the wording means an unsupported configuration, memory second
    assert [d.id for d in diagnose(exception=ALGO)][:2] == ["cudnn-unsupported-config", "gpu-out-of-memory"]
    # next to "CUDA out of memory" it is memory (torch raises it when the workspace cannot be allocated)
    assert [d.id for d in diagnose(exception=OOM, log=ALGO)][:2] == ["gpu-out-of-memory", "cudnn-unsupported-config"]


@pytest.mark.parametrize("exception, exc_type, expected", [
    ("CUDNN_STATUS_BAD_PARAM", "RuntimeError", "cudnn-bad-param"),
    ("x" * 300_000 + " CUDNN_STATUS_BAD_PARAM", None, "cudnn-bad-param"),  # the end of a huge message is kept
    ("CUDNN_STATUS_BAD_PARAM " + "x" * 300_000, None, "cudnn-bad-param"),  # and its start
])
def test_exception_text_is_read_at_both_ends(exception, exc_type, expected):
    assert diagnose(exception=exception, exc_type=exc_type)[0].id == expected


def test_the_traceback_does_not_quote_the_message_twice():
    exc = "RuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED"
    tb = 'Traceback (most recent call last):\n  File "x.py", line 1, in <module>\n' + exc
    d = diagnose(exception=exc, traceback=tb)[0]
    assert d.id == "cudnn-init-failed"
    assert sum(exc in e for e in d.evidence) == 1


@pytest.mark.parametrize("text, framework", [
    ("jaxlib.xla_extension.XlaRuntimeError: " + HANDLE.split("] ", 1)[1], "JAX"),
    ("keras " + HANDLE.split("] ", 1)[1], "TensorFlow"),
    ("import torch\n" + HANDLE.split("] ", 1)[1], "PyTorch"),
])
def test_the_framework_comes_from_the_context(text, framework):
    top = diagnose(exception=text)[0]
    assert any(framework in f.title or framework in f.action for f in top.fixes) or framework in top.title \
        or framework in top.summary


# nvidia-cudnn-cu11 starts at 8.5 on PyPI, nvidia-cudnn-cu12 at 8.9; cuDNN 9 wheels pair with CUDA 12 here.
@pytest.mark.parametrize("src, requirement", [
    ("8.9.0", "nvidia-cudnn-cu12<9,>=8.9"), ("8.8.0", "nvidia-cudnn-cu11<9,>=8.8"),
    ("8.5.0", "nvidia-cudnn-cu11<9,>=8.5"), ("8.4.0", None), ("9.1.0", "nvidia-cudnn-cu12<10,>=9.1"), ("7.6.0", None),
])
def test_install_advice_names_the_wheel_of_the_usual_cuda_pairing(src, requirement):
    top = diagnose(log=TF_VERSION.format(rt="8.0.5" if src.startswith("8") else "9.0.0", src=src))[0]
    fix = next(f for f in top.fixes if f.id == "install-matching-cudnn")
    if requirement is None:
        assert "conda install" in fix.action and f"cudnn<{int(src[0]) + 1},>={src[:3]}" in fix.action
        assert fix.applicable is False
    else:
        assert fix.action == f'python -m pip install "{requirement}"'
        assert fix.applicable is True


@pytest.mark.parametrize("log, title, action", [
    # Linux: cuDNN 8 links libz.so.1 (the system zlib), not Windows' zlibwapi.dll
    ("Could not load library libcudnn_cnn_infer.so.8. Error: libz.so.1: cannot open shared object file: No such file "
     "or directory", "Install zlib (libz.so.1), which cuDNN 8 needs", "zlib1g"),
    ("Could not locate zlibwapi.dll. Please make sure it is in your library path!",
     "Install zlibwapi.dll next to the cuDNN DLLs", "zlibwapi.dll"),
    # the unversioned name: no wheel ships it (a link, or the toolkit's development package)
    ("Could not load library libcudnn_cnn_infer.so.8. Error: libnvrtc.so: cannot open shared object file: No such file "
     "or directory", "Make libnvrtc.so (unversioned) resolvable for cuDNN", "ln -s libnvrtc.so.<version> libnvrtc.so"),
    # the versioned name for cuDNN 8: the CUDA 11 wheel, and its folder on LD_LIBRARY_PATH
    ("Could not load library libcudnn_cnn_infer.so.8. Error: libnvrtc.so.11.2: cannot open shared object file: No such "
     "file or directory", "Install NVRTC and put its folder on LD_LIBRARY_PATH for cuDNN 8", "nvidia-cuda-nvrtc-cu11, "
     "then export LD_LIBRARY_PATH="),
])
def test_dependency_advice_per_platform(log, title, action):
    top = diagnose(log=log)[0]
    fix = next(f for f in top.fixes if f.id == "install-cudnn-deps")
    assert fix.title == title
    assert action in fix.action


CANNOT_DLOPEN = ("2023-01-01 W tensorflow/core/common_runtime/gpu/gpu_device.cc:1934] Cannot dlopen some GPU libraries. "
                 "Please make sure the missing libraries mentioned above are installed properly if you would like to "
                 "use GPU.\nSkipping registering GPU devices...")


@pytest.mark.parametrize("log, expected", [
    (CANNOT_DLOPEN, [("cudnn-library-not-found", "TensorFlow could not load its GPU libraries and will run on the CPU")]),
    ("W dso_loader.cc:64] Could not load dynamic library 'libcudnn.so.8'; dlerror: libcudnn.so.8: cannot open shared "
     "object file: No such file or directory\n" + CANNOT_DLOPEN,
     [("cudnn-library-not-found", "TensorFlow could not load libcudnn.so.8")]),
    # the missing libraries are named and none is cuDNN: no cuDNN warning
    ("W dso_loader.cc:64] Could not load dynamic library 'libcublasLt.so.12'; dlerror: libcublasLt.so.12: cannot open "
     "shared object file: No such file or directory\n" + CANNOT_DLOPEN, []),
    (HANDLE, []),  # an error line in a succeeding cell is not a GPU-unused warning
    ("", []),
])
def test_gpu_unused_warnings(log, expected):
    assert [(d.id, d.title) for d in gpu_unused_warnings(log)] == expected


# --------------------------------------------------------------------------- gpu_unused_warnings, _build, _versions
# gpu_unused_warnings, _build and _versions at their edges (what is left: tests/mutation_survivors.md).

JAX_BACKEND = ("WARNING:jax._src.xla_bridge:CUDA backend failed to initialize: Unable to load CUDA. Is it installed? "
               "(Set TF_CPP_MIN_LOG_LEVEL=0 and rerun for more info.)")
SET_DESCRIPTOR = ("E tensorflow/stream_executor/cuda/cuda_dnn.cc:1000] could not set cudnn tensor descriptor: "
                  "CUDNN_STATUS_BAD_PARAM")


@pytest.mark.parametrize("log, expected", [
    # JAX's "CUDA backend failed to initialize" is a marker of weight 0: it only supports the cuDNN reason printed
    # with it (jax/_src/xla_bridge.py). Without such a reason it makes no warning, not even next to a weaker
    # cuDNN line ("could not set cudnn ... descriptor" is bad-param, and a version mismatch only at 60 < 80).
    (JAX_BACKEND, []),
    (SET_DESCRIPTOR, []),
    (JAX_BACKEND + "\n" + SET_DESCRIPTOR, []),
    # with a decisive cuDNN reason (XLA's cuda_dnn.cc version check) it warns
    (JAX_BACKEND + "\n" + TF_VERSION.format(rt="8.0.5", src="8.1.0"), ["cudnn-version-mismatch"]),
])
def test_gpu_unused_warning_needs_a_positive_warning_or_a_decisive_line(log, expected):
    assert [d.id for d in gpu_unused_warnings(log)] == expected


def test_gpu_unused_warnings_never_raise_and_log_the_failure_at_debug(monkeypatch, caplog):
    import cudnn_magic.engines.diagnose as diag

    def broken(*args, **kwargs):
        raise RuntimeError("scan broke")

    caplog.set_level(logging.DEBUG, logger="cudnn_magic")
    monkeypatch.setattr(diag, "scan", broken)
    assert gpu_unused_warnings(CANNOT_DLOPEN) == []
    failed = [r for r in caplog.records if r.name == "cudnn_magic" and r.getMessage() == "gpu_unused_warnings failed"]
    assert len(failed) == 1
    assert failed[0].levelno == logging.DEBUG
    assert failed[0].exc_info and failed[0].exc_info[0] is RuntimeError  # the traceback is kept for a bug report


def test_a_log_that_is_not_text_gets_no_warning_and_no_failure(caplog):
    # the docstring's contract is a str (a cell's decoded output): bytes are refused up front, not by failing inside
    caplog.set_level(logging.DEBUG, logger="cudnn_magic")
    assert gpu_unused_warnings(CANNOT_DLOPEN.encode()) == []
    assert gpu_unused_warnings(None) == []  # type: ignore[arg-type]
    assert not [r for r in caplog.records if "failed" in r.getMessage()]


WIN_DLL = ('OSError: [WinError 126] The specified module could not be found. Error loading '
           '"C:\\Python\\Lib\\site-packages\\torch\\lib\\cudnn64_8.dll" or one of its dependencies.')


@pytest.mark.parametrize("kw, alternative, quoted", [
    # "could not set cudnn ... descriptor" also speaks for a version mismatch (TF's cuda_dnn.cc, knowledge/status.py)
    ({"log": SET_DESCRIPTOR}, "cudnn-version-mismatch", "could not set cudnn tensor descriptor"),
    # cudnn64_8.dll is the main cuDNN 8 DLL (cuDNN 8 Windows installation guide): the wording's own id
    # (a sub-library or a dependency failed) stays as the alternative, quoting the same line
    ({"exception": WIN_DLL}, "cudnn-sublibrary-load-failed", "cudnn64_8.dll"),
])
def test_an_alternative_diagnosis_quotes_the_line_it_stands_on(kw, alternative, quoted):
    ds = diagnose(**kw)
    alt = next(d for d in ds if d.id == alternative)
    assert ds[0].id != alternative
    assert any(quoted in e for e in alt.evidence)


@pytest.mark.parametrize("kw, ranking", [
    # a refinement moves the hit to another id; the wording's own id stays at least 10 below it, so
    # it never outranks the refined one (88 for the main DLL vs min(90, 88 - 10) for a sub-library)
    ({"exception": WIN_DLL}, ["cudnn-library-not-found", "cudnn-sublibrary-load-failed"]),
    # cudnn-frontend error_code_t names decide the id, ahead of the generic "unsupported" of CUDNN_FE failure
    ({"log": "CUDNN_FE failure 3: HANDLE_ERROR"}, ["cudnn-init-failed", "cudnn-unsupported-config"]),
    ({"log": "CUDNN_FE failure 5: ATTRIBUTE_NOT_SET"}, ["cudnn-bad-param", "cudnn-unsupported-config"]),
])
def test_a_refined_wording_ranks_before_its_own_id(kw, ranking):
    assert [d.id for d in diagnose(**kw)][:2] == ranking


UNDEFINED_SUB = ("Could not load library libcudnn_cnn_train.so.8. Error: /opt/lib/libcudnn_ops_train.so.8: undefined "
                 "symbol: _Z22cudnnGenericOpTensorNdILi2EE13cudnnStatus_tP12cudnnContext, version libcudnn_ops_infer.so.8")
TORCH_SYMBOL = ("ImportError: /usr/lib/python3/dist-packages/torch/lib/libtorch_cuda.so: undefined symbol: "
                "cudnnGetRNNWorkspaceSize, version libcudnn.so.7")
DSO_SYMBOL = ("F tensorflow/stream_executor/cuda/cuda_dnn.cc:221] could not find cudnnGetRNNDescriptor_v6 in cudnn DSO; "
              "dlerror: undefined")


@pytest.mark.parametrize("log, id_, versions", [
    # Windows system error 126 (ERROR_MOD_NOT_FOUND) is kept next to the DLL cuDNN's loader names
    ("Could not load library libcudnn_cnn_infer64_8.dll. Error code 126",
     "cudnn-sublibrary-load-failed", {"library": "libcudnn_cnn_infer64_8.dll", "error_code": "126"}),
    # every field of the line is read, the symbol after the library (cuDNN 8's loader message)
    (UNDEFINED_SUB, "cudnn-sublibrary-load-failed",
     {"library": "libcudnn_cnn_train.so.8",
      "symbol": "_Z22cudnnGenericOpTensorNdILi2EE13cudnnStatus_tP12cudnnContext"}),
    # of two version lines the later one decides (the last attempt is what failed)
    (TF_VERSION.format(rt="8.0.5", src="8.1.0") + "\n" + TF_VERSION.format(rt="8.0.4", src="8.2.0"),
     "cudnn-version-mismatch", {"loaded": "8.0.4", "compiled": "8.2.0"}),
    # a diagnosis's own wording gives its values before a line it only shares ("could not find ... in cudnn DSO"
    # is a missing library first, a version mismatch second)
    (TORCH_SYMBOL + "\n" + DSO_SYMBOL, "cudnn-version-mismatch", {"symbol": "cudnnGetRNNWorkspaceSize"}),
    (TORCH_SYMBOL + "\n" + DSO_SYMBOL, "cudnn-library-not-found", {"symbol": "cudnnGetRNNDescriptor_v6"}),
])
def test_diagnosis_versions_come_from_its_strongest_own_line(log, id_, versions):
    d = next(d for d in diagnose(log=log) if d.id == id_)
    assert d.versions == versions


# The live report's CUDA decides the wheel (fixes/advice.py _cuda_major_for: "known CUDA first, else the usual
# pairing"):
# nvidia-cudnn-cu11 carries 8.9 too (PyPI), and CUDA 10.x has no cuDNN wheel at all (cu11 is the first).
@pytest.mark.parametrize("src, cuda, action", [
    ("8.9.0", "11.8", 'python -m pip install "nvidia-cudnn-cu11<9,>=8.9"'),  # without a report: cu12
    ("8.6.0", "12.2", 'python -m pip install "nvidia-cudnn-cu12<9,>=8.6"'),  # without a report: cu11
    ("8.6.0", "10.2", 'conda install -c conda-forge "cudnn<9,>=8.6"'),
])
def test_install_advice_follows_the_cuda_of_the_live_report(src, cuda, action):
    from cudnn_magic.model import FrameworkBuild, Report

    tf = FrameworkBuild("TensorFlow", "tensorflow", "2.6.0", imported=True, cudnn_compiled=src, cuda_compiled=cuda)
    top = diagnose(log=TF_VERSION.format(rt="8.0.5", src=src), report=Report(frameworks=(tf,)))[0]
    fix = next(f for f in top.fixes if f.id == "install-matching-cudnn")
    assert fix.action.startswith(action)


STREAM = "F tensorflow/stream_executor/cuda/cuda_dnn.cc:100] "


def test_a_printed_status_number_is_not_replaced_by_a_name_from_another_line():
    # two stream failures; the later line printed the number (TF's CHECK "(8 vs. 0)", cuDNN 8 numbering:
    # 8 is EXECUTION_FAILED); the earlier one's name (MAPPING_ERROR, 7 in cuDNN 8 only) does not overwrite it
    log = (STREAM + "failed to set stream for cudnn handle: CUDNN_STATUS_MAPPING_ERROR\n" + STREAM
           + "Check failed: status == CUDNN_STATUS_SUCCESS (8 vs. 0)Failed to set cuDNN stream.")
    top = diagnose(log=log)[0]
    assert top.id == "cudnn-stream-set-failed"
    assert top.versions["status_code"] == "8"


def test_a_status_refined_by_its_call_quotes_the_last_status_line():
    # Caffe creates cuDNN handles in LayerSetUp (knowledge/calls.py, Caffe's cudnn_*_layer.cpp): a bare
    # INTERNAL_ERROR there is a handle that could not be created; of two equal status lines the later one,
    # next to the stack trace that names the call, is quoted
    first = ("F0101 00:00:00.000 cudnn_conv_layer.cpp:53] Check failed: status == CUDNN_STATUS_SUCCESS (4 vs. 0)  "
             "CUDNN_STATUS_INTERNAL_ERROR")
    last = ("F0101 00:00:01.000 cudnn_relu_layer.cpp:20] Check failed: status == CUDNN_STATUS_SUCCESS (4 vs. 0)  "
            "CUDNN_STATUS_INTERNAL_ERROR")
    top = diagnose(log=f"{first}\n{last}\n    @     0x7f caffe::CuDNNReLULayer<>::LayerSetUp()")[0]
    assert top.id == "cudnn-init-failed"
    assert "cudnnCreate" in top.title
    assert top.evidence[0] == last
    assert first not in top.evidence


@pytest.mark.parametrize("log", [CANNOT_DLOPEN + "\n" + SET_DESCRIPTOR, SET_DESCRIPTOR + "\n" + CANNOT_DLOPEN],
                         ids=["dlopen-first", "descriptor-first"])
def test_a_gpu_unused_warning_read_from_the_log_ranks_before_a_mismatch_only_suggested(log):
    # TF skipping its GPU ("Cannot dlopen some GPU libraries", weight 58, a log line: + 2, and its second line
    # "Skipping registering GPU devices": + 1) comes before the version mismatch that "could not set cudnn ...
    # descriptor" only suggests (also 60), whichever line comes first (knowledge/warnings.py, knowledge/status.py)
    assert [d.id for d in gpu_unused_warnings(log)] == ["cudnn-library-not-found", "cudnn-version-mismatch"]


# --------------------------------------------------------------------------------------------------
# Each rule of the engine at its edge.
#
# Each rule of ``cudnn_magic.engines.diagnose`` at its edge, through what a caller sees: the
# diagnosis ids and their rank, the fact lines of the evidence, the fix ids offered (and their
# order), the title's rule-bearing words and the parsed versions. The facts are built with the real
# model types (``cudnn_magic.model``), the failures are real log lines of the frameworks.
# Sources of the rules: docs/report.md ("A failing cell's diagnosis with the live facts");
# docs/ids.md (the catalogue ids, evidence order: facts, then native log lines, then the Python
# exception); docs/facts.md "Which runtime cuDNN each framework accepts" and "cuDNN version
# encoding"; the check's findings as ``cudnn_magic.check`` writes them (ids
# ``cudnn-version-mismatch``, ``cudnn-shadowed``, ``cudnn-wheel-overwritten``,
# ``cudnn-multiple-copies-loaded``); the loader's search order (ld.so(8): ``LD_LIBRARY_PATH`` is
# searched before a library's ``DT_RUNPATH``). What no test can tell apart is in
# tests/mutation_survivors.md.
# --------------------------------------------------------------------------------------------------


MiB, GiB = 2**20, 2**30
INTERNAL = "RuntimeError: cuDNN error: CUDNN_STATUS_INTERNAL_ERROR"
VERSION_LINE_OF = ("E tensorflow/stream_executor/cuda/cuda_dnn.cc:359] Loaded runtime CuDNN library: {rt} but source was "
                "compiled with: {src}.  CuDNN library needs to have matching major version and equal or higher minor "
                "version.")
MISMATCH = VERSION_LINE_OF.format(rt="8.0.5", src="8.1.0")
SUBLIB = ("Could not load library libcudnn_cnn_infer.so.8. Error: libcudnn_cnn_infer.so.8: cannot open shared object "
          "file: No such file or directory")
NOT_FOUND = ("Could not load dynamic library 'libcudnn.so.8'; dlerror: libcudnn.so.8: cannot open shared object file: "
             "No such file or directory")
OOM_LINE = "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 15.78 GiB total capacity)"

#: A GPU with plenty of free memory: makes the live facts usable (they were read) without a fact
#: of its own on any diagnosis but an internal error.
ROOMY = (Gpu(0, "A100", total_bytes=40 * GiB, free_bytes=30 * GiB),)

SHADOW_FIX = Fix("remove-shadowing-dir", "Take /opt/old out of LD_LIBRARY_PATH",
                 "Remove the LD_LIBRARY_PATH entry /opt/old for this kernel, then start the kernel fresh", True, True)
RESTART_FIX = Fix("restart-kernel", "Restart the kernel so no cuDNN is mapped yet",
                  "restart, then import this framework before anything else that loads cuDNN", True, True)
INSTALL_FIX = Fix("install-matching-cudnn", "Install nvidia-cudnn-cu11>=8.1,<9",
                  "python -m pip install 'nvidia-cudnn-cu11>=8.1,<9'", True, True)


def _facts_and_notes(diag) -> list[str]:
    return [e for e in diag.evidence if e.startswith(("fact:", "note:"))]


def _fix_ids(diag) -> list[str]:
    return [f.id for f in diag.fixes]


def _by_id(res, diag_id):
    return next(d for d in res if d.id == diag_id)


# --- step 5: the cause the check's findings establish, with their fixes ------------------------
# cudnn_magic.check writes these four findings for "another copy won" (shadowed by LD_LIBRARY_PATH,
# loaded first, wheels overwriting each other) and for a framework's compiled-vs-used mismatch;
# "another copy won" (remove-shadowing-dir or restart-kernel offered, install-matching-cudnn not)
# means a satisfying cuDNN is installed: installing one more with pip changes nothing.
CAUSAL = [
    # finding id, the finding's fixes, fix ids of the mismatch diagnosis (finding's first)
    ("cudnn-version-mismatch", (SHADOW_FIX,), ["remove-shadowing-dir", "import-order"]),
    ("cudnn-version-mismatch", (RESTART_FIX,), ["restart-kernel", "remove-shadowing-dir", "import-order"]),
    ("cudnn-version-mismatch", (SHADOW_FIX, INSTALL_FIX),
     ["remove-shadowing-dir", "install-matching-cudnn", "import-order"]),
    ("cudnn-version-mismatch", (), ["install-matching-cudnn", "remove-shadowing-dir", "import-order"]),
    ("cudnn-shadowed", (SHADOW_FIX,), ["remove-shadowing-dir", "import-order"]),
    ("cudnn-shadowed", (SHADOW_FIX, INSTALL_FIX), ["remove-shadowing-dir", "install-matching-cudnn", "import-order"]),
    # overwritten wheels and several copies mapped: their fixes come first, pip stays offered
    ("cudnn-wheel-overwritten", (SHADOW_FIX,), ["remove-shadowing-dir", "install-matching-cudnn", "import-order"]),
    ("cudnn-multiple-copies-loaded", (RESTART_FIX,),
     ["restart-kernel", "install-matching-cudnn", "remove-shadowing-dir", "import-order"]),
]


@pytest.mark.parametrize("fid, fixes, expected", CAUSAL,
                         ids=[f"{f}-{'+'.join(x.id for x in fx) or 'nofix'}" for f, fx, _ in CAUSAL])
def test_a_causal_finding_is_a_fact_with_its_fixes_first(fid, fixes, expected):
    finding = Finding(fid, "error", "TensorFlow 2.6.0 was built with cuDNN 8.1, but loads 8.0.5",
                      "cuDNN 8.0.5 from LD_LIBRARY_PATH entry /opt/old was loaded first.", fixes)
    res = diagnose(log=MISMATCH, report=Report(gpus=ROOMY, findings=(finding,)))
    top = res[0]
    assert top.id == "cudnn-version-mismatch"
    assert _facts_and_notes(top) == ["fact: TensorFlow 2.6.0 was built with cuDNN 8.1, but loads 8.0.5. cuDNN 8.0.5 from "
                           "LD_LIBRARY_PATH entry /opt/old was loaded first."]
    assert _fix_ids(top) == expected
    if fixes:  # the finding's own fix, with its own words
        assert top.fixes[0].title == fixes[0].title


@pytest.mark.parametrize("fid", ["no-nvidia-driver", "cudnn-sublibrary-load-failed-elsewhere", "gpu-arch-unsupported"])
def test_a_finding_that_is_no_cause_of_a_mismatch_adds_nothing(fid):
    finding = Finding(fid, "error", "Something else", "Detail.", (SHADOW_FIX,))
    top = diagnose(log=MISMATCH, report=Report(gpus=ROOMY, findings=(finding,)))[0]
    assert _facts_and_notes(top) == []
    assert _fix_ids(top) == ["install-matching-cudnn", "remove-shadowing-dir", "import-order"]


CAUSAL_TARGETS = [
    # the log, the diagnosis, does the cause of the check speak to it?
    (MISMATCH, "cudnn-version-mismatch", True),
    (SUBLIB, "cudnn-sublibrary-load-failed", True),
    (HANDLE, "cudnn-init-failed", True),
    (NOT_FOUND, "cudnn-library-not-found", True),
    (INTERNAL, "cudnn-internal-error", False),
    (OOM_LINE, "gpu-out-of-memory", False),
    (HANDLE, "gpu-out-of-memory", False),
]


@pytest.mark.parametrize("log, diag, said", CAUSAL_TARGETS, ids=[f"{d}-{s}" for _, d, s in CAUSAL_TARGETS])
def test_the_cause_is_said_on_the_diagnoses_about_which_cudnn_loads(log, diag, said):
    finding = Finding("cudnn-shadowed", "error", "LD_LIBRARY_PATH entry /opt/old shadows the cuDNN 8.9.4 that "
                      "TensorFlow ships with", "It is searched first.", (SHADOW_FIX,))
    d = _by_id(diagnose(log=log, report=Report(gpus=ROOMY, findings=(finding,))), diag)
    line = ("fact: LD_LIBRARY_PATH entry /opt/old shadows the cuDNN 8.9.4 that TensorFlow ships with. It is searched "
            "first.")
    assert (line in d.evidence) is said
    assert (d.fixes[0].title == SHADOW_FIX.title) is said
    if said:
        assert "install-matching-cudnn" not in _fix_ids(d)


@pytest.mark.parametrize("length, kept", [(899, True), (900, True), (901, False), (2000, False)])
def test_a_long_finding_is_cut_at_900_characters(length, kept):
    head = "fact: T. "
    detail = "d" * (length - len(head))
    top = diagnose(log=MISMATCH, report=Report(gpus=ROOMY, findings=(Finding("cudnn-shadowed", "error", "T", detail),)))[0]
    (fact,) = _facts_and_notes(top)
    if kept:
        assert fact == head + detail and len(fact) == length
    else:
        assert fact == (head + detail)[:897] + "..." and len(fact) == 900


def test_two_findings_give_each_fix_once_and_each_fact_once():
    one = Finding("cudnn-shadowed", "error", "T1", "D1.", (SHADOW_FIX,))
    two = Finding("cudnn-multiple-copies-loaded", "warning", "T2", "D2.", (SHADOW_FIX, RESTART_FIX))
    top = diagnose(log=MISMATCH, report=Report(gpus=ROOMY, findings=(one, two, one)))[0]
    assert _facts_and_notes(top) == ["fact: T1. D1.", "fact: T2. D2."]
    assert _fix_ids(top) == ["remove-shadowing-dir", "restart-kernel", "import-order"]


# --- without the check's findings: a framework's resolution that shadows copies ------------------
def _shadowing(picked="/opt/old/libcudnn.so.8", reason="LD_LIBRARY_PATH entry /opt/old",
               shadowed=("/site/nvidia/cudnn/lib/libcudnn.so.8",)):
    return Resolution("TensorFlow", None, "libcudnn.so.8", picked, reason, shadowed)


RESOLUTIONS = [
    # resolutions, the picked directory named by the fix (None: no shadowing fact)
    ((_shadowing(),), "/opt/old"),
    ((_shadowing(picked=None),), None),  # nothing picked
    ((_shadowing(shadowed=()),), None),  # nothing hidden
    ((_shadowing(shadowed=()), _shadowing(picked="/opt/b c/libcudnn.so.8")), "/opt/b c"),  # the first that shadows
    ((_shadowing(picked="/opt/a/libcudnn.so.8"), _shadowing(picked="/opt/b/libcudnn.so.8")), "/opt/a"),
]


@pytest.mark.parametrize("resolutions, directory", RESOLUTIONS, ids=["shadows", "unpicked", "hides-nothing", "second",
                                                                     "first-of-two"])
def test_a_shadowing_resolution_is_the_fact_and_the_fix(resolutions, directory):
    res = diagnose(log=MISMATCH, report=Report(gpus=ROOMY, resolutions=resolutions))
    top = res[0]
    shadow = [f for f in top.fixes if f.id == "remove-shadowing-dir"]
    assert len(shadow) == 1
    if directory is None:
        assert _facts_and_notes(top) == []
        assert shadow[0].title != f"Take {directory} off the library path"
        return
    picked = f"{directory}/libcudnn.so.8"
    assert _facts_and_notes(top) == [f"fact: TensorFlow picks {picked} (LD_LIBRARY_PATH entry /opt/old); it shadows "
                           "/site/nvidia/cudnn/lib/libcudnn.so.8"]
    fix = top.fixes[0]
    assert fix.id == "remove-shadowing-dir" and fix.title == f"Take {directory} off the library path"
    quoted = "'/opt/b c'" if " " in directory else directory
    assert fix.action == (f"TensorFlow loads libcudnn.so.8 from {directory} (LD_LIBRARY_PATH entry /opt/old), hiding "
                          f"/site/nvidia/cudnn/lib/libcudnn.so.8. Remove {quoted} from LD_LIBRARY_PATH before starting "
                          "Jupyter/Python, then restart the kernel.")
    assert fix.restart_required is True


def test_a_shadowing_resolution_names_at_most_three_hidden_copies():
    hidden = tuple(f"/h{i}/libcudnn.so.8" for i in range(5))
    top = diagnose(log=MISMATCH, report=Report(gpus=ROOMY, resolutions=(_shadowing(shadowed=hidden),)))[0]
    assert _facts_and_notes(top) == ["fact: TensorFlow picks /opt/old/libcudnn.so.8 (LD_LIBRARY_PATH entry /opt/old); it shadows "
                           "/h0/libcudnn.so.8, /h1/libcudnn.so.8, /h2/libcudnn.so.8"]
    assert "hiding /h0/libcudnn.so.8, /h1/libcudnn.so.8, /h2/libcudnn.so.8. Remove" in top.fixes[0].action


@pytest.mark.parametrize("log, diag, said", [
    (MISMATCH, "cudnn-version-mismatch", True), (SUBLIB, "cudnn-sublibrary-load-failed", True),
    (HANDLE, "cudnn-init-failed", True), (NOT_FOUND, "cudnn-library-not-found", False),
    (INTERNAL, "cudnn-internal-error", False), (HANDLE, "gpu-out-of-memory", False),
])
def test_a_shadowing_resolution_is_said_on_the_diagnoses_it_explains(log, diag, said):
    d = _by_id(diagnose(log=log, report=Report(gpus=ROOMY, resolutions=(_shadowing(),))), diag)
    assert any(e.startswith("fact: TensorFlow picks /opt/old/libcudnn.so.8") for e in d.evidence) is said
    assert any(f.title == "Take /opt/old off the library path" for f in d.fixes) is said


def test_a_causal_finding_outranks_the_resolutions():
    # the check's finding already tells the cause: the hand-made resolution adds no second story
    finding = Finding("cudnn-wheel-overwritten", "error", "T", "D.", (RESTART_FIX,))
    top = diagnose(log=MISMATCH, report=Report(gpus=ROOMY, findings=(finding,), resolutions=(_shadowing(),)))[0]
    assert _facts_and_notes(top) == ["fact: T. D."]
    assert all(f.title != "Take /opt/old off the library path" for f in top.fixes)


# --- no framework, no finding: the mapped copy comes from LD_LIBRARY_PATH ------------------------
# ld.so(8): LD_LIBRARY_PATH is searched before any library's DT_RUNPATH, so a cuDNN there wins over
# the environment's own; the environment's own copy satisfies the log's compiled-against release
# under the framework's rule when its major is the same and its minor is equal or higher (TensorFlow's
# cuda_dnn.cc: "matching major version and equal or higher minor version"; docs/facts.md).
def _copy(path, version, *, source="mapped", loaded=False, is_main=True, owner="system"):
    name = path.rsplit("/", 1)[1]
    return LibraryCopy(path, name, name, version, owner=owner, source=source, loaded=loaded, is_main=is_main)


OLD = "/opt/old/libcudnn.so.8"
OLD_MAPPED = _copy(OLD, "8.0.5", loaded=True)
OLD_ON_PATH = _copy(OLD, "8.0.5", source="LD_LIBRARY_PATH", loaded=True)
OWN_PATH = "/site/nvidia/cudnn/lib/libcudnn.so.8"


def _own(version, **kw):
    kw.setdefault("owner", "pip: nvidia-cudnn-cu11")
    kw.setdefault("source", "runpath")
    return _copy(OWN_PATH, version, **kw)


SHADOWED_OWN = [
    # the environment's own copy (installed, not mapped), does it satisfy the compiled 8.1.0?
    (_own("8.1.0"), True),  # the same minor
    (_own("8.1.2"), True),
    (_own("8.2.0"), True),  # one minor above
    (_own("8.0.9"), False),  # one minor below
    (_own("9.1.0"), False),  # another major
    (_own("7.6.5"), False),
    (_own("8"), False),  # no minor known
    (_own(None), False),
    (_own("8.1.0", loaded=True), False),  # it is mapped: not further down the search
    (_own("8.1.0", source="LD_LIBRARY_PATH"), False),  # itself on LD_LIBRARY_PATH
    (_own("8.1.0", is_main=False), False),  # a sub-library, not the main library
]


@pytest.mark.parametrize("own, satisfies", SHADOWED_OWN,
                         ids=[f"{c.version}-{c.source}-{'mapped' if c.loaded else 'disk'}-{'main' if c.is_main else 'sub'}"
                              for c, _ in SHADOWED_OWN])
def test_the_ld_library_path_copy_shadows_an_own_copy_that_satisfies(own, satisfies):
    res = diagnose(log=MISMATCH, report=Report(cudnn_loaded=(OLD_MAPPED,), cudnn_installed=(OLD_ON_PATH, own)))
    top = res[0]
    assert top.id == "cudnn-version-mismatch"
    said = [e for e in top.evidence if "comes from the LD_LIBRARY_PATH entry" in e]
    if satisfies:
        assert said == [f"fact: libcudnn.so.8 8.0.5 comes from the LD_LIBRARY_PATH entry /opt/old, which the loader "
                        f"searches before any library's RUNPATH; this environment's own libcudnn.so.8 {own.version} "
                        "(pip: nvidia-cudnn-cu11, /site/nvidia/cudnn/lib) would satisfy 8.1.0"]
        # the path entry is the fix; pip would change nothing, and with one copy mapped the import order neither
        assert _fix_ids(top) == ["remove-shadowing-dir"]
        fix = top.fixes[0]
        assert fix.title == "Take /opt/old off LD_LIBRARY_PATH" and fix.restart_required is True
        assert fix.action == ("Remove /opt/old from LD_LIBRARY_PATH where this kernel is started (the kernelspec's env, "
                              "or the shell that starts Jupyter), then restart the kernel: cuDNN then comes from the "
                              "framework's own search (its RUNPATH, its wheel), not from /opt/old.")
    else:
        assert said == []
        assert _fix_ids(top) == ["install-matching-cudnn", "remove-shadowing-dir", "import-order"]


def test_a_mapped_copy_not_from_ld_library_path_is_no_shadowing():
    report = Report(cudnn_loaded=(OLD_MAPPED,), cudnn_installed=(_copy(OLD, "8.0.5", source="ldconfig", loaded=True),
                                                                  _own("8.1.0")))
    top = diagnose(log=MISMATCH, report=report)[0]
    assert not any("comes from the LD_LIBRARY_PATH entry" in e for e in top.evidence)
    assert _fix_ids(top) == ["install-matching-cudnn", "remove-shadowing-dir", "import-order"]


def test_the_shadowing_copy_may_be_any_mapped_one_and_the_first_own_copy_is_named():
    # the first mapped copy is the environment's; the second one comes from LD_LIBRARY_PATH
    site = _copy("/usr/lib/libcudnn.so.8", "8.0.5", loaded=True)
    installed = (_copy("/usr/lib/libcudnn.so.8", "8.0.5", source="ldconfig", loaded=True), OLD_ON_PATH,
                 _own("8.0.4"), _own("8.3.0"), _copy("/other/libcudnn.so.8", "8.4.0", owner="conda: cudnn"))
    top = diagnose(log=MISMATCH, report=Report(cudnn_loaded=(site, OLD_MAPPED), cudnn_installed=installed))[0]
    said = [e for e in top.evidence if "comes from the LD_LIBRARY_PATH entry" in e]
    assert said == ["fact: libcudnn.so.8 8.0.5 comes from the LD_LIBRARY_PATH entry /opt/old, which the loader searches "
                    "before any library's RUNPATH; this environment's own libcudnn.so.8 8.3.0 (pip: nvidia-cudnn-cu11, "
                    "/site/nvidia/cudnn/lib) would satisfy 8.1.0"]
    # two copies mapped: which framework is imported first still matters
    assert _fix_ids(top) == ["remove-shadowing-dir", "import-order"]


def test_the_minimum_a_log_names_is_the_release_to_satisfy():
    # JAX's own check (jax_plugins/cuda/__init__.py): "must be no lower than" names only the minimum,
    # in cuDNN 8's encoding (cudnn_version.h: major*1000 + minor*100 + patch: 8100 is 8.1.0)
    log = "RuntimeError: Unable to load cuDNN. The local installation version must be no lower than 8100."
    report = Report(cudnn_loaded=(OLD_MAPPED,), cudnn_installed=(OLD_ON_PATH, _own("8.1.0")))
    top = diagnose(log=log, report=report)[0]
    assert top.id == "cudnn-version-mismatch"
    assert any(e.endswith("would satisfy 8.1.0") for e in top.evidence)
    assert "install-matching-cudnn" not in _fix_ids(top)


def test_a_resolution_that_shadows_decides_before_the_mapped_copy():
    report = Report(cudnn_loaded=(OLD_MAPPED,), cudnn_installed=(OLD_ON_PATH, _own("8.1.0")),
                    resolutions=(_shadowing(),))
    top = diagnose(log=MISMATCH, report=report)[0]
    assert not any("comes from the LD_LIBRARY_PATH entry" in e for e in top.evidence)
    assert top.fixes[0].title == "Take /opt/old off the library path"


# --- the cuDNN consumer check's findings (rules/consumers.py), on the diagnoses they explain -----
# A consumer (CTranslate2, TensorRT, ...) has no version check of its own: what the consumer check
# found about it (its vendored cuDNN lacking sub-libraries, consumers needing different majors,
# an import order that mixes copies) is said on the loading diagnoses, with the check's own fixes.
CT2 = FrameworkBuild("CTranslate2", "ctranslate2", "4.4.0", cudnn_compiled="8.9.7", cudnn_used="8.9.7",
                     cudnn_used_path="/site/ctranslate2.libs/libcudnn-1a2b.so.8", verdict="mismatch", checker="ctranslate2")
UPGRADE = Fix("upgrade-consumer", "Upgrade CTranslate2", "python -m pip install -U 'ctranslate2>=4.6.3'", True)
SEPARATE = Fix("separate-kernels", "Run them in separate kernels", "one kernel per consumer", True)
NOT_A_FIX = Fix("no-such-fix-id", "Not in the catalogue", "nothing", False)
CT2_SUBLIB = Finding("cudnn-sublibrary-load-failed", "error", "CTranslate2 4.4.0: cuDNN 8.9.7 will not find "
                     "libcudnn_ops_infer.so.8", "d", (UPGRADE, NOT_A_FIX))
CLASH = Finding("cudnn-consumer-clash", "error", "TensorRT 8.6.1 needs cuDNN 8, but this environment's cuDNN is 9 (for "
                "CTranslate2 4.4.0)", "d", (SEPARATE, UPGRADE))
ORDER = Finding("cudnn-import-order", "warning", "CTranslate2 4.4.0 and TensorRT 8.6.1 would take sub-libraries from "
                "different copies", "d", (Fix("import-order", "Import CTranslate2 first", "import it first", True),))
DIR_SUBLIB = Finding("cudnn-sublibrary-load-failed", "error", "Mixed cuDNN versions in /usr/lib", "d",
                     (Fix("reinstall-cudnn", "Reinstall", "reinstall it", True),))

CONSUMER = [
    # finding, the log's diagnosis, is the finding's title a fact there, its fix ids first
    (CT2_SUBLIB, SUBLIB, "cudnn-sublibrary-load-failed", True, ["upgrade-consumer"]),
    (CT2_SUBLIB, NOT_FOUND, "cudnn-library-not-found", True, ["upgrade-consumer"]),
    (CT2_SUBLIB, MISMATCH, "cudnn-version-mismatch", False, []),
    (CLASH, SUBLIB, "cudnn-sublibrary-load-failed", True, ["separate-kernels", "upgrade-consumer"]),
    (CLASH, NOT_FOUND, "cudnn-library-not-found", True, ["separate-kernels", "upgrade-consumer"]),
    (CLASH, MISMATCH, "cudnn-version-mismatch", True, ["separate-kernels", "upgrade-consumer"]),
    (CLASH, HANDLE, "cudnn-init-failed", False, []),
    (ORDER, SUBLIB, "cudnn-sublibrary-load-failed", True, ["import-order"]),
    (ORDER, MISMATCH, "cudnn-version-mismatch", True, ["import-order"]),
    (ORDER, NOT_FOUND, "cudnn-library-not-found", True, ["import-order"]),
    (ORDER, INTERNAL, "cudnn-internal-error", False, []),
    # the check's own directory finding (no consumer's name): the generic text already covers it
    (DIR_SUBLIB, SUBLIB, "cudnn-sublibrary-load-failed", False, []),
]


@pytest.mark.parametrize("finding, log, diag, said, first", CONSUMER,
                         ids=[f"{f.id}-{d}-{s}" for f, _, d, s, _ in CONSUMER])
def test_a_consumer_finding_is_said_with_its_fixes(finding, log, diag, said, first):
    d = _by_id(diagnose(log=log, report=Report(gpus=ROOMY, frameworks=(CT2,), findings=(finding,))), diag)
    assert (f"fact: {finding.title}" in d.evidence) is said
    if said:
        assert _fix_ids(d)[:len(first)] == first
        assert [f.title for f in d.fixes[:len(first)]] == [f.title for f in finding.fixes if f.id in first]
    assert "no-such-fix-id" not in _fix_ids(d)  # a fix id the catalogue does not know is never offered
    assert not any(f.title == "Reinstall" for f in d.fixes)


def test_a_consumer_finding_is_said_once_and_its_fixes_once():
    top = diagnose(log=SUBLIB, report=Report(gpus=ROOMY, frameworks=(CT2,), findings=(CT2_SUBLIB, CLASH, CT2_SUBLIB)))[0]
    assert top.id == "cudnn-sublibrary-load-failed"
    consumer_facts = [e for e in top.evidence if e.startswith(("fact: CTranslate2", "fact: TensorRT"))]
    assert consumer_facts == [f"fact: {CT2_SUBLIB.title}", f"fact: {CLASH.title}"]
    assert _fix_ids(top).count("upgrade-consumer") == 1
    assert _fix_ids(top)[:2] == ["upgrade-consumer", "separate-kernels"]


def test_a_consumer_row_failing_for_its_sublibraries_is_no_version_mismatch():
    # the CTranslate2 row says "mismatch" for its missing sub-libraries: no version-mismatch story
    res = diagnose(log=HANDLE, report=Report(gpus=ROOMY, frameworks=(CT2,), findings=(CT2_SUBLIB,)))
    assert "cudnn-version-mismatch" not in [d.id for d in res]
    assert res[0].id == "cudnn-init-failed"


def test_a_consumer_row_whose_version_the_check_rejects_is_a_version_mismatch():
    finding = Finding("cudnn-version-mismatch", "error", "CTranslate2 4.4.0 was built with cuDNN 8.9.7 but will load 9.1.0",
                      "d", ())
    ct2 = FrameworkBuild("CTranslate2", "ctranslate2", "4.4.0", cudnn_compiled="8.9.7", cudnn_used="9.1.0",
                         cudnn_used_path="/usr/lib/libcudnn.so.9", verdict="mismatch", checker="ctranslate2")
    res = diagnose(log=HANDLE, report=Report(gpus=ROOMY, frameworks=(ct2,), findings=(finding,)))
    top = res[0]
    assert top.id == "cudnn-version-mismatch"
    assert top.versions["loaded"] == "9.1.0" and top.versions["compiled"] == "8.9.7"
    assert "fact: CTranslate2 4.4.0 was built with cuDNN 8.9.7; cuDNN 9.1.0 is in use (/usr/lib/libcudnn.so.9)." \
        in top.evidence
    # a finding about another version of the same consumer does not count
    other = Finding("cudnn-version-mismatch", "error", "CTranslate2 4.4.01 was built with cuDNN 8.9.7", "d", ())
    res = diagnose(log=HANDLE, report=Report(gpus=ROOMY, frameworks=(ct2,), findings=(other,)))
    assert not any(e.startswith("fact: CTranslate2 4.4.0 was built with") for d in res for e in d.evidence)


# --- the failing call decides what a bare status means (knowledge/calls.py REFINES) --------------
# cuDNN API reference: cudnnCreate fails when the handle cannot be made (memory taken, a cuDNN/driver
# mismatch); cudnnSetStream on a context an earlier CUDA error broke; cudnnBackendFinalize of a plan
# when no engine supports the graph; Find*/Get*Algorithm allocate every candidate's workspace. The
# call's id ranks first ("first") or is only added after the status's own id ("also").
def _ort(status, call, code=4):
    # ONNX Runtime core/providers/cuda/cuda_call.cc: "CUDNN failure <n>: <status> ; GPU=... ; expr=<call>(...);"
    return f"CUDNN failure {code}: {status} ; GPU=0 ; hostname=h ; file=cudnn_common.cc ; line=52 ; expr={call}(h);"


BY_CALL = [
    # log, ids in rank order, the top diagnosis's title
    (_ort("CUDNN_STATUS_INTERNAL_ERROR", "cudnnCreate"), ["cudnn-init-failed", "cudnn-internal-error"],
     "cuDNN could not create its handle (cudnnCreate returned CUDNN_STATUS_INTERNAL_ERROR)"),
    (_ort("CUDNN_STATUS_NOT_SUPPORTED", "cudnnCreate"), ["cudnn-init-failed", "cudnn-unsupported-config"],
     "cuDNN could not create its handle (cudnnCreate returned CUDNN_STATUS_NOT_SUPPORTED)"),
    ("RuntimeError: cuDNN error: CUDNN_STATUS_EXECUTION_FAILED\nException raised from createCuDNNHandle at "
     "../aten/src/ATen/cudnn/Handle.cpp:9 (most recent call first):", ["cudnn-init-failed", "cudnn-execution-failed"],
     "cuDNN could not create its handle (createCuDNNHandle returned CUDNN_STATUS_EXECUTION_FAILED)"),
    (_ort("CUDNN_STATUS_INTERNAL_ERROR", "cudnnSetStream"), ["cudnn-stream-set-failed", "cudnn-internal-error"],
     "cuDNN could not attach to the CUDA stream (cudnnSetStream returned CUDNN_STATUS_INTERNAL_ERROR)"),
    (_ort("CUDNN_STATUS_NOT_INITIALIZED", "cudnnSetStream", 1001), ["cudnn-stream-set-failed", "cudnn-init-failed"],
     "cuDNN could not attach to the CUDA stream (cudnnSetStream returned CUDNN_STATUS_NOT_INITIALIZED)"),
    (_ort("CUDNN_STATUS_INTERNAL_ERROR", "cudnnBackendFinalize"), ["cudnn-unsupported-config", "cudnn-internal-error"],
     "cuDNN has no execution plan for this operation (cudnnBackendFinalize returned CUDNN_STATUS_INTERNAL_ERROR)"),
    # the algorithm search only adds memory as the second possibility
    (_ort("CUDNN_STATUS_INTERNAL_ERROR", "cudnnFindConvolutionForwardAlgorithmEx"),
     ["cudnn-internal-error", "gpu-out-of-memory"], "A cuDNN call failed with CUDNN_STATUS_INTERNAL_ERROR"),
    (_ort("CUDNN_STATUS_EXECUTION_FAILED", "cudnnGetConvolutionForwardAlgorithm_v7"),
     ["cudnn-execution-failed", "gpu-out-of-memory"], "A cuDNN kernel failed to launch or run"),
    # a call without a role (a kernel) keeps the status's meaning
    (_ort("CUDNN_STATUS_INTERNAL_ERROR", "cudnnConvolutionForward"), ["cudnn-internal-error"],
     "A cuDNN call failed with CUDNN_STATUS_INTERNAL_ERROR"),
    # a status with a meaning of its own is never overridden
    (_ort("CUDNN_STATUS_ALLOC_FAILED", "cudnnCreate"), ["gpu-out-of-memory"], "The GPU ran out of memory for cuDNN"),
]


@pytest.mark.parametrize("log, ids, title", BY_CALL, ids=[f"{i[0]}-{len(i)}" for _, i, _ in BY_CALL])
def test_the_failing_call_refines_a_bare_status(log, ids, title):
    res = diagnose(log=log)
    assert [d.id for d in res] == ids
    assert res[0].title == title
    # the status line is the evidence of the refined diagnosis too
    assert res[0].evidence[0].startswith(("CUDNN failure", "RuntimeError: cuDNN error"))
    if len(ids) > 1:
        assert res[1].evidence[0] == res[0].evidence[0]
    for d in res:  # the status and the call on one line: quoted once
        assert len(set(d.evidence)) == len(d.evidence)
    if log.startswith("CUDNN failure"):
        assert list(res[0].evidence) == [log]


def test_a_wording_of_its_own_is_not_refined_by_the_call():
    # "Could not create cudnn handle" is TensorFlow's own words: a cudnnSetStream frame nearby does not
    # make it a stream failure (the status's meaning is refined only when the status stands alone)
    log = ("Exception raised from cudnnSetStream at ../aten/src/ATen/cudnn/Handle.cpp:9 (most recent call first):\n"
           + HANDLE)
    assert [d.id for d in diagnose(log=log)] == ["cudnn-init-failed", "gpu-out-of-memory"]


# --- the relation words of a version-mismatch title built from the live facts -------------------
# With no wording of its own (a failed handle, the framework's compiled cuDNN vs the one in use),
# the title says how the cuDNN in use relates to the compiled one: older (a lower minor, or the same
# minor and a lower patch), another major, another minor (newer minor: not "older"), else "not
# accepted by the check" (the framework's own rule; docs/facts.md "Which runtime cuDNN each framework
# accepts"). The framework picks the rule (PyTorch's or TensorFlow's: rules/compat.py RULES).
def _fw(name, used, compiled, checker="nvidia"):
    return FrameworkBuild(name, name.lower(), "2.0.0", cudnn_compiled=compiled, cuda_compiled="12.2", cudnn_used=used,
                          cudnn_used_path="/x/libcudnn.so.9", verdict="mismatch", checker=checker)


FACT_RELATIONS = [
    # in use, compiled, words
    ("9.1.0", "9.3.0", "is older than"),  # a lower minor
    ("9.2.9", "9.3.0", "is older than"),  # one minor below
    ("9.3.0", "9.3.1", "is older than"),  # same minor, one patch below
    ("9.3.1", "9.3.0", "is not accepted by the check against"),  # same minor, one patch above
    ("9.3.0", "9.3.0", "is not accepted by the check against"),  # equal
    ("9.3.0", "9.3", "is not accepted by the check against"),  # no compiled patch: 0
    ("9.3", "9.3.0", "is not accepted by the check against"),  # no runtime patch: 0
    ("9.4.0", "9.3", "is a different minor release than"),  # one minor above
    ("8.9.7", "9.3", "is a different major version than"),
    ("10.0.0", "9.3", "is a different major version than"),
    ("9", "9.3", "is not accepted by the check against"),  # the runtime's minor unknown
    ("9.3.0", "9", "is not accepted by the check against"),  # the compiled minor unknown
]


@pytest.mark.parametrize("framework", ["TensorFlow", "PyTorch", "JAX"])
@pytest.mark.parametrize("used, compiled, words", FACT_RELATIONS, ids=[f"{u}-vs-{c}" for u, c, _ in FACT_RELATIONS])
def test_the_relation_words_of_a_title_from_the_facts(used, compiled, words, framework):
    top = diagnose(log=HANDLE, report=Report(frameworks=(_fw(framework, used, compiled),)))[0]
    assert top.id == "cudnn-version-mismatch"
    assert top.title == f"The cuDNN in use ({used}) {words} the {compiled} {framework} was built with"
    assert top.versions["loaded"] == used and top.versions["compiled"] == compiled


def test_a_title_from_the_facts_needs_both_versions():
    top = diagnose(log=HANDLE, report=Report(frameworks=(_fw("PyTorch", "9.3.0", None),)))[0]
    assert top.id == "cudnn-version-mismatch"
    assert top.title == "The cuDNN loaded is not compatible with the one the framework was built with"
    assert "compiled" not in top.versions


# --- the versions a diagnosis carries (the keys of Diagnosis.versions) ----------------------------
TF_LINE = "E tensorflow/stream_executor/cuda/cuda_dnn.cc:359] Loaded runtime CuDNN library: {} but source was compiled with: {}."

VERSIONS = [
    # loaded, compiled as the log prints them, versions parsed
    ("8.1.0 (compatibility version 8100)", "8.0.5 (compatibility version 8000)",
     {"loaded": "8.1.0", "loaded_compat": "8.1", "compiled": "8.0.5", "compiled_compat": "8.0"}),
    # cuDNN 8's encoding (cudnn_version.h: major*1000 + minor*100 + patch)
    ("8005", "8100", {"loaded": "8.0.5", "compiled": "8.1.0"}),
    # a major above 99 is no cuDNN release: not a version (the rest stays)
    ("99.1.0", "8.1.0", {"loaded": "99.1.0", "compiled": "8.1.0"}),
    ("100.1.0", "8.1.0", {"compiled": "8.1.0"}),
    ("8.0.5", "100.0.0", {"loaded": "8.0.5"}),
]


@pytest.mark.parametrize("loaded, compiled, versions", VERSIONS, ids=[f"{lo}-{c}" for lo, c, _ in VERSIONS])
def test_the_versions_a_log_line_gives(loaded, compiled, versions):
    top = diagnose(log=TF_LINE.format(loaded, compiled))[0]
    assert top.id == "cudnn-version-mismatch"
    assert top.versions == versions


STATUS_CODES = [
    # status name, the number given with it: a name in only one numbering has one number
    # (cuDNN 8 cudnn_ops_infer.h: ALLOC_FAILED = 2; cuDNN 9 cudnn_graph.h: BAD_PARAM_NULL_POINTER =
    # 2002, NOT_SUPPORTED_SHAPE = 3002); a name in both (BAD_PARAM: 3 / 2000) has none
    ("CUDNN_STATUS_ALLOC_FAILED", "gpu-out-of-memory", "2"),
    ("CUDNN_STATUS_BAD_PARAM_NULL_POINTER", "cudnn-bad-param", "2002"),
    ("CUDNN_STATUS_NOT_SUPPORTED_SHAPE", "cudnn-unsupported-config", "3002"),
    ("CUDNN_STATUS_BAD_PARAM", "cudnn-bad-param", None),
    ("CUDNN_STATUS_INTERNAL_ERROR", "cudnn-internal-error", None),
    ("CUDNN_STATUS_NOT_INITIALIZED", "cudnn-init-failed", None),
]


@pytest.mark.parametrize("status, diag, code", STATUS_CODES, ids=[s for s, _, _ in STATUS_CODES])
def test_a_status_name_gives_its_number_when_it_has_one(status, diag, code):
    top = diagnose(exception=f"RuntimeError: cuDNN error: {status}")[0]
    assert top.id == diag
    assert top.versions["status"] == status
    assert top.versions.get("status_code") == code


def test_memory_amounts_are_carried_in_bytes():
    # TensorFlow cuda_dnn.cc CudnnSupport::Init prints the memory after a failed handle
    log = ("E cuda_dnn.cc:334] Memory usage: 1048576 bytes free, 16945512448 bytes total.\n"
           "E tensorflow/stream_executor/cuda/cuda_dnn.cc:329] Could not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR")
    top = diagnose(log=log)[0]
    assert top.id == "gpu-out-of-memory"
    assert top.versions["free_bytes"] == "1048576" and top.versions["total_bytes"] == "16945512448"
    assert "free" not in top.versions and "total" not in top.versions


# --- warnings for a cell that succeeded -----------------------------------------------------------


def test_a_strong_loading_wording_is_a_warning_without_a_warning_marker():
    # TensorFlow's "No OpKernel was registered to support Op 'CudnnRNN'" (weight 80): a relevant id at
    # the 80 threshold is a warning even though the wording is no warning of its own
    log = "NotFoundError: No OpKernel was registered to support Op 'CudnnRNN' used by {{node cudnn_rnn}}"
    assert [d.id for d in gpu_unused_warnings(log)] == ["cudnn-library-not-found"]


def test_only_the_relevant_warnings_are_given():
    # an error line next to the warning: only the GPU-unused warning comes back
    assert [d.id for d in gpu_unused_warnings(HANDLE + "\n" + CANNOT_DLOPEN)] == ["cudnn-library-not-found"]


@pytest.mark.parametrize("log", [CANNOT_DLOPEN.encode(), None, 42, ""])
def test_warnings_need_text(log):
    assert gpu_unused_warnings(log) == []


def test_warnings_take_the_live_facts():
    lib = LibraryCopy("/x/libcudnn.so.8", "libcudnn.so.8", "libcudnn.so.8", "8.9.4", loaded=True)
    (w,) = gpu_unused_warnings(CANNOT_DLOPEN, Report(cudnn_loaded=(lib,)))
    assert _facts_and_notes(w) == ["fact: libcudnn.so.8 8.9.4 is mapped from /x/libcudnn.so.8 (system)"]


# --- which framework printed it (the context), read at bounded ends -------------------------------
# An XLA line in the absl format carries no path: the framework named in the title comes from the
# rest of the text (JAX's words before TensorFlow's before PyTorch's; the exception and traceback
# before the log).
XLA_LINE = "E0607 11:27:34.427160 7414 cuda_dnn.cc:522] Loaded runtime CuDNN library: 9.1.0 but source was compiled with: 9.8.0."

CONTEXT = [
    # exception, traceback, the log before the line, framework in the title
    ("", "", "", "TensorFlow/JAX (XLA)"),
    ("XlaRuntimeError: FAILED_PRECONDITION: DNN library initialization failed.", "", "", "JAX"),
    ("jaxlib.xla_extension.XlaRuntimeError", "", "", "JAX"),
    ("", "  File \"/site/jax/_src/dispatch.py\", line 1", "", "JAX"),
    ("", "", "import jax.numpy as jnp", "JAX"),
    ("", "", "JAX_PLATFORMS=cuda", "JAX"),
    ("", "", "jax is here", "TensorFlow/JAX (XLA)"),  # "jax" alone is no JAX word
    ("", "", "import tensorflow as tf", "TensorFlow"),
    ("", "", "from keras import layers", "TensorFlow"),
    ("", "", "import torch", "PyTorch"),
    ("", "", "keras then jaxlib", "JAX"),  # JAX's words first
    ("", "", "torch then keras", "TensorFlow"),
    ("tensorflow", "", "jaxlib", "TensorFlow"),  # the exception before the log
    ("", "keras", "jaxlib", "TensorFlow"),  # the traceback before the log
]


@pytest.mark.parametrize("exception, tb, before, framework", CONTEXT, ids=[f"{e[:12]}|{t[:12]}|{b[:12]}" for e, t, b, _ in CONTEXT])
def test_the_framework_of_an_xla_line_comes_from_the_context(exception, tb, before, framework):
    top = diagnose(exception=exception, traceback=tb, log=(before + "\n" if before else "") + XLA_LINE)
    mismatch = _by_id(top, "cudnn-version-mismatch")
    assert mismatch.title == f"The cuDNN loaded at runtime (9.1.0) is older than the 9.8.0 {framework} was built with"


def _title_framework(**kw):
    return _by_id(diagnose(**kw), "cudnn-version-mismatch").title.split("9.8.0 ", 1)[1].rsplit(" was built", 1)[0]


@pytest.mark.parametrize("as_bytes", [False, True], ids=["str", "bytes"])
@pytest.mark.parametrize("offset, seen", [(65_530, True), (65_531, False)])
def test_the_context_reads_the_first_64_kib_of_the_log(offset, seen, as_bytes):
    log = "x" * offset + "jaxlib" + "x" * 70_000 + "\n" + XLA_LINE
    got = _title_framework(log=log.encode() if as_bytes else log)
    assert got == ("JAX" if seen else "TensorFlow/JAX (XLA)")


@pytest.mark.parametrize("as_bytes", [False, True], ids=["str", "bytes"])
@pytest.mark.parametrize("after, seen", [(65_536 - 6, True), (65_536 - 5, False)])
def test_the_context_reads_the_last_64_kib_of_the_log(after, seen, as_bytes):
    log = XLA_LINE + "\n" + "y" * 70_000 + "jaxlib" + "y" * after
    got = _title_framework(log=log.encode() if as_bytes else log)
    assert got == ("JAX" if seen else "TensorFlow/JAX (XLA)")


@pytest.mark.parametrize("offset, seen", [(100_000 - 6, True), (100_000 - 5, False)])
def test_the_context_reads_the_first_100_000_characters_of_the_exception(offset, seen):
    exc = "x" * offset + "jaxlib" + "x" * 10
    assert _title_framework(exception=exc, log=XLA_LINE) == ("JAX" if seen else "TensorFlow/JAX (XLA)")


@pytest.mark.parametrize("after, seen", [(100_000 - 6, True), (100_000 - 5, False)])
def test_the_context_reads_the_last_100_000_characters_of_the_traceback(after, seen):
    tb = "x" * 10 + "jaxlib" + "x" * after
    assert _title_framework(traceback=tb, log=XLA_LINE) == ("JAX" if seen else "TensorFlow/JAX (XLA)")


# --- the exception and traceback are read at their ends (MAX_EXCEPTION_CHARS = 256 KiB) -----------
LIMIT = 256 * 1024


@pytest.mark.parametrize("extra, ids", [(0, ["cudnn-init-failed", "cudnn-bad-param"]), (1, ["cudnn-init-failed"])],
                         ids=["at-limit", "one-above"])
def test_an_exception_longer_than_the_limit_loses_its_middle(extra, ids):
    # NOT_INITIALIZED at the start is kept; BAD_PARAM astride the middle is cut one character above the limit
    start, status = "CUDNN_STATUS_NOT_INITIALIZED ", " CUDNN_STATUS_BAD_PARAM "
    head = LIMIT // 2 - len(status) // 2
    exc = start + " " * (head - len(start)) + status + " " * (LIMIT - head - len(status) + extra)
    assert len(exc) == LIMIT + extra
    assert sorted(d.id for d in diagnose(exception=exc)) == sorted(ids)


@pytest.mark.parametrize("extra, ids", [(0, ["cudnn-init-failed", "cudnn-bad-param"]), (1, ["cudnn-init-failed"])],
                         ids=["at-limit", "one-above"])
def test_a_traceback_longer_than_the_limit_keeps_its_end(extra, ids):
    start, end = "CUDNN_STATUS_BAD_PARAM ", " CUDNN_STATUS_NOT_INITIALIZED"
    tb = start + " " * (LIMIT - len(start) - len(end) + extra) + end
    assert len(tb) == LIMIT + extra
    assert sorted(d.id for d in diagnose(traceback=tb)) == sorted(ids)


@pytest.mark.parametrize("exc_type, where, framework", [
    ("XlaRuntimeError", "", "JAX"),  # the type name joins the message: it names JAX
    (None, "", "TensorFlow/JAX (XLA)"),
])
def test_the_exception_type_is_read_with_the_message(exc_type, where, framework):
    exc = where + "FAILED_PRECONDITION: DNN library initialization failed."
    assert _title_framework(exception=exc, exc_type=exc_type, log=XLA_LINE) == framework


@pytest.mark.parametrize("exception", [None, 42, b"CUDNN_STATUS_BAD_PARAM"])
def test_an_exception_that_is_no_text_is_ignored(exception):
    assert [d.id for d in diagnose(exception=exception, log=HANDLE)] == ["cudnn-init-failed", "gpu-out-of-memory"]


# --- the amounts of memory a fact gives: MiB below 1 GiB, GiB (one decimal) from 1 GiB on ---------
@pytest.mark.parametrize("free, text", [(1023 * MiB, "1023 MiB"), (GiB, "1.0 GiB"), (GiB + GiB // 2, "1.5 GiB"),
                                        (2 * GiB - MiB, "2.0 GiB")])
def test_a_nearly_full_fact_gives_the_amount_in_its_unit(free, text):
    # 40 GiB total: under 5 % (2 GiB) free is nearly full (docs/report.md "A failing cell's diagnosis with the live facts")
    top = diagnose(log=HANDLE, report=Report(gpus=(Gpu(0, "A100", total_bytes=40 * GiB, free_bytes=free),)))[0]
    assert top.id == "gpu-out-of-memory"
    assert _facts_and_notes(top) == [f"fact: GPU 0 (A100) has {text} free of 40.0 GiB"]


# --- how much evidence a diagnosis quotes: 6 lines of its own, 4 supporting lines, 6 facts --------
def test_at_most_six_lines_of_evidence_the_latest_first():
    lines = [f"E tensorflow/stream_executor/cuda/cuda_dnn.cc:{300 + i}] Could not create cudnn handle: "
             "CUDNN_STATUS_INTERNAL_ERROR" for i in range(8)]
    top = diagnose(log="\n".join(lines))[0]
    assert top.id == "cudnn-init-failed"
    assert list(top.evidence) == lines[:1:-1]  # lines 7..2: equal weight, the line nearest the failure first


def test_at_most_four_supporting_lines_in_their_order():
    # CUDA driver errors (cuda-context-broken) support an internal error; quoted after its own line
    support = [f"step {i}: CUDA_ERROR_ILLEGAL_ADDRESS" for i in range(6)]
    top = diagnose(log="\n".join(["RuntimeError: cuDNN error: CUDNN_STATUS_INTERNAL_ERROR", *support]))[0]
    assert top.id == "cudnn-internal-error"
    assert list(top.evidence) == ["RuntimeError: cuDNN error: CUDNN_STATUS_INTERNAL_ERROR", *support[:4]]


def test_at_most_six_facts():
    findings = tuple(Finding("cudnn-shadowed", "error", f"T{i}", "D.") for i in range(8))
    top = diagnose(log=MISMATCH, report=Report(gpus=ROOMY, findings=findings))[0]
    assert _facts_and_notes(top) == [f"fact: T{i}. D." for i in range(6)]
    assert top.evidence[0] == MISMATCH


# --- what counts: wordings that need a cuDNN failure next to them, refined wordings ----------------
NO_KERNEL = "RuntimeError: CUDA error: no kernel image is available for execution on the device"

NEEDS_CONTEXT = [
    # log, ids: "no kernel image" is a GPU architecture matter for cuDNN only next to a cuDNN failure
    # or inside a cuDNN code path (docs/ids.md, gpu-arch-unsupported)
    (NO_KERNEL, []),
    (NO_KERNEL + "\nRuntimeError: cuDNN error: CUDNN_STATUS_EXECUTION_FAILED", ["gpu-arch-unsupported", "cudnn-execution-failed"]),
    ('  File "rnn.py", line 1, in flatten_parameters\n    torch._cudnn_rnn_flatten_weight(\n' + NO_KERNEL,
     ["gpu-arch-unsupported"]),
    # CUDA running out of memory is a GPU problem, not a cuDNN failure: it gives no context
    (NO_KERNEL + "\nRuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB", ["gpu-out-of-memory"]),
]


@pytest.mark.parametrize("log, ids", NEEDS_CONTEXT, ids=["alone", "cudnn-failure", "cudnn-path", "plain-gpu"])
def test_a_wording_that_needs_context(log, ids):
    assert [d.id for d in diagnose(log=log)] == ids


@pytest.mark.parametrize("exception, ids", [
    # "undefined symbol" in a cuDNN sub-library is a sub-library mix; the wording's own id (a version
    # mismatch) stays as the alternative, ranked after (knowledge/versions.py _undefined_symbol)
    ("ImportError: /site/nvidia/cudnn/lib/libcudnn_cnn.so.9: undefined symbol: cudnnGetLibConfig, version "
     "libcudnn_graph.so.9", ["cudnn-sublibrary-load-failed", "cudnn-version-mismatch"]),
    ("ImportError: /site/torch/lib/libtorch_cuda.so: undefined symbol: cudnnGetLibConfig, version libcudnn_graph.so.9",
     ["cudnn-version-mismatch"]),
])
def test_a_refined_wording_keeps_its_own_id_as_the_alternative(exception, ids):
    assert [d.id for d in diagnose(exception=exception)] == ids


# --- which failures the live facts explain ---------------------------------------------------------
# A generic failure (a handle not created, an internal error, a kernel that failed, no engine) does not
# single out its cause: a framework's cuDNN mismatch, a driver below the floor or a nearly full GPU
# explains it and ranks first. A failure with a meaning of its own (BAD_PARAM, MAPPING_ERROR,
# ARCH_MISMATCH) stays first (docs/report.md "A failing cell's diagnosis with the live facts").
def _tf215_mismatched(verdict="mismatch", used="8.6.0"):
    return FrameworkBuild("TensorFlow", "tensorflow", "2.15.0", imported=True, cudnn_compiled="8.9", cuda_compiled="12.2",
                          cudnn_used=used, cudnn_used_path="/site/nvidia/cudnn/lib/libcudnn.so.8", verdict=verdict)


FACT_REPORTS = {
    "framework": (Report(frameworks=(_tf215_mismatched(),)), "cudnn-version-mismatch"),
    # CUDA 12.x needs driver >= 525.60.13 on Linux (docs/facts.md "Drivers")
    "driver": (Report(driver=Driver("450.51.06"), frameworks=(_tf215_mismatched("ok", "8.9.4"),), platform="linux"), "cuda-driver-too-old"),
    "memory": (Report(gpus=(Gpu(0, "T4", total_bytes=16 * GiB, free_bytes=100 * MiB),)), "gpu-out-of-memory"),
}
GENERIC = [
    # status, its diagnosis, generic (explained by a fact)?
    ("CUDNN_STATUS_NOT_INITIALIZED", "cudnn-init-failed", True),
    ("CUDNN_STATUS_INTERNAL_ERROR", "cudnn-internal-error", True),
    ("CUDNN_STATUS_EXECUTION_FAILED", "cudnn-execution-failed", True),
    ("CUDNN_STATUS_NOT_SUPPORTED", "cudnn-unsupported-config", True),
    ("CUDNN_STATUS_BAD_PARAM", "cudnn-bad-param", False),
    ("CUDNN_STATUS_MAPPING_ERROR", "tensors-on-different-devices", False),
    ("CUDNN_STATUS_ARCH_MISMATCH", "gpu-arch-unsupported", False),
]


@pytest.mark.parametrize("fact", sorted(FACT_REPORTS))
@pytest.mark.parametrize("status, diag, generic", GENERIC, ids=[s[13:] for s, _, _ in GENERIC])
def test_a_fact_explains_a_generic_failure_only(status, diag, generic, fact):
    report, explained = FACT_REPORTS[fact]
    ids = [d.id for d in diagnose(exception=f"RuntimeError: cuDNN error: {status}", report=report)]
    if generic:
        assert ids == [explained, diag]
    else:
        assert ids[0] == diag
        # the framework's mismatch is still said (after); a driver or memory fact is not invented
        assert ids == ([diag, explained] if fact == "framework" else [diag])


# --- each fact at its details ------------------------------------------------------------------------
def _build_of(name, used, compiled, *, cuda="12.2", path="/x/libcudnn.so.8", detail="", verdict="mismatch"):
    return FrameworkBuild(name, name.lower(), "2.0.0", cudnn_compiled=compiled, cuda_compiled=cuda, cudnn_used=used,
                          cudnn_used_path=path, verdict=verdict, detail=detail)


def test_the_first_mismatching_framework_is_the_fact():
    report = Report(frameworks=(_build_of("TensorFlow", "8.6.0", "8.9", path=None, detail="built for 8.9"),
                                _build_of("PyTorch", "8.5.0", "8.7")))
    top = diagnose(log=HANDLE, report=report)[0]
    assert top.id == "cudnn-version-mismatch"
    assert _facts_and_notes(top) == ["fact: TensorFlow 2.0.0 was built with cuDNN 8.9; cuDNN 8.6.0 is in use (path unknown). "
                           "built for 8.9"]
    assert top.versions == {"loaded": "8.6.0", "compiled": "8.9"}
    assert "TensorFlow was built with" in top.title


def test_a_framework_mismatch_without_the_cudnn_in_use_is_no_fact():
    res = diagnose(log=HANDLE, report=Report(frameworks=(_build_of("TensorFlow", None, "8.9"),)))
    assert [d.id for d in res] == ["cudnn-init-failed", "gpu-out-of-memory"]


def test_the_log_versions_are_kept_before_the_framework_facts():
    top = diagnose(log=MISMATCH, report=Report(frameworks=(_build_of("TensorFlow", "8.6.0", "8.9"),)))[0]
    assert top.versions == {"loaded": "8.0.5", "compiled": "8.1.0"}
    assert "fact: TensorFlow 2.0.0 was built with cuDNN 8.9; cuDNN 8.6.0 is in use (/x/libcudnn.so.8)." in top.evidence


DRIVER_FRAMEWORKS = [
    # driver, platform, the frameworks' CUDA (in order), the floor named (docs/facts.md "Drivers": 11.x >=
    # 450.80.02 Linux; 12.x >= 525.60.13 Linux, 527.41 Windows)
    ("470.57.02", "linux", ("11.2", "12.2"), ("525.60.13", "12.2")),  # the first is fine: the next decides
    ("450.51.06", "linux", ("11.8", "12.2"), ("450.80.02", "11.8")),  # both below: the first is said
    ("525.60.13", "Windows-10-10.0.19041-SP0", ("12.2",), ("527.41", "12.2")),  # platform.platform() spelling
    ("n/a", "linux", ("12.2",), None),  # an unreadable driver version proves nothing
]


@pytest.mark.parametrize("driver, platform, cudas, floor", DRIVER_FRAMEWORKS,
                         ids=[f"{d}-{p[:7]}-{'+'.join(c)}" for d, p, c, _ in DRIVER_FRAMEWORKS])
def test_the_driver_floor_of_the_frameworks_cuda(driver, platform, cudas, floor):
    fws = tuple(_build_of(n, "8.9.4", "8.9", cuda=c, verdict="ok") for n, c in zip(("TensorFlow", "PyTorch"), cudas))
    res = diagnose(log=HANDLE, report=Report(driver=Driver(driver), platform=platform, frameworks=fws))
    if floor is None:
        assert [d.id for d in res] == ["cudnn-init-failed", "gpu-out-of-memory"]
        return
    top = res[0]
    assert top.id == "cuda-driver-too-old"
    assert top.versions == {"driver": driver, "required_driver": floor[0]}
    assert _facts_and_notes(top) == [f"fact: NVIDIA driver {driver} is below {floor[0]}, the minimum for CUDA {floor[1]}"]


def test_the_first_nearly_full_gpu_is_named():
    gpus = (Gpu(0, "A", total_bytes=16 * GiB, free_bytes=8 * GiB), Gpu(1, "B", total_bytes=16 * GiB, free_bytes=100 * MiB),
            Gpu(2, "C", total_bytes=16 * GiB, free_bytes=50 * MiB))
    top = diagnose(log=HANDLE, report=Report(gpus=gpus))[0]
    assert top.id == "gpu-out-of-memory"
    assert _facts_and_notes(top) == ["fact: GPU 1 (B) has 100 MiB free of 16.0 GiB"]


def test_the_no_driver_fix_in_full():
    top = diagnose(log=HANDLE, report=Report(driver=Unavailable("Driver Not Loaded")))[0]
    (fix,) = [f for f in top.fixes if f.id == "upgrade-driver"]
    assert top.fixes[0] is fix  # the fact's fix comes first
    assert fix.action == ("install the NVIDIA driver (nvidia-smi must list the GPU), or select a GPU runtime (Colab: "
                          "Runtime > Change runtime type)")
    assert fix.applicable is False  # advice: no button installs a driver


# --- the mapped cuDNN and the one calls reach ------------------------------------------------------
def _mapped(path, version, reached=None, is_main=True):
    name = path.rsplit("/", 1)[1]
    return LibraryCopy(path, name, name, version, loaded=True, is_main=is_main, reached_version=reached)


def test_a_mapped_sublibrary_is_no_fact():
    sub = _mapped("/x/libcudnn_ops_infer.so.8", "8.9.4", is_main=False)
    top = diagnose(log=HANDLE, report=Report(cudnn_loaded=(sub,), gpus=ROOMY))[0]
    assert _facts_and_notes(top) == []


def test_the_cudnn_in_use_is_said_only_when_several_copies_are_mapped():
    in_use = CudnnInUse("/b/libcudnn.so.9", "9.3.0", "cudnnGetVersion through the first mapped copy",
                        reached_version="9.5.0")
    one = Report(cudnn_loaded=(_mapped("/b/libcudnn.so.9", "9.3.0"),), cudnn_in_use=in_use)
    assert not any("the cuDNN in use" in e for e in _facts_and_notes(diagnose(log=HANDLE, report=one)[0]))
    two = Report(cudnn_loaded=(_mapped("/a/libcudnn.so.9", "9.1.0"), _mapped("/b/libcudnn.so.9", "9.3.0")),
                 cudnn_in_use=in_use)
    facts = _facts_and_notes(diagnose(log=HANDLE, report=two)[0])
    # the measured one (cudnn_in_use), not the first mapped
    assert "fact: the cuDNN in use is 9.3.0 at /b/libcudnn.so.9 (its calls reach 9.5.0)" in facts


@pytest.mark.parametrize("version, reached, note", [
    ("8.9.4", "8.9.7", "8.9.7"),  # calls reach another copy: that one is named
    ("8.9.4", None, "8.9.4"),
    (None, None, None),  # nothing known of the mapped copy: no disagreement to tell
])
def test_the_log_and_the_facts_disagree_names_what_calls_reach(version, reached, note):
    top = diagnose(log=MISMATCH, report=Report(cudnn_loaded=(_mapped("/x/libcudnn.so.8", version, reached),)))[0]
    notes = [e for e in top.evidence if e.startswith("note:")]
    if note is None:
        assert notes == []
    else:
        assert notes == [f"note: the log says cuDNN 8.0.5 was loaded, but this kernel's cuDNN calls reach {note}: the "
                         "message came from another process, or a library loaded another copy privately (check with "
                         "%cudnn_check)"]


# --- titles, summaries and fixes of a diagnosis --------------------------------------------------
def test_an_alternative_id_takes_the_catalogue_title_not_the_wording_of_another_id():
    res = diagnose(log=HANDLE)
    assert [(d.id, d.title) for d in res] == [
        ("cudnn-init-failed", "cuDNN could not create its handle (CUDNN_STATUS_INTERNAL_ERROR)"),
        ("gpu-out-of-memory", "The GPU ran out of memory for cuDNN")]
    refined = diagnose(exception="ImportError: /site/nvidia/cudnn/lib/libcudnn_cnn.so.9: undefined symbol: "
                                 "cudnnGetLibConfig, version libcudnn_graph.so.9")
    alt = _by_id(refined, "cudnn-version-mismatch")
    assert alt.title == "The cuDNN loaded is not compatible with the one the framework was built with"
    assert alt.summary.startswith("The framework was built against another cuDNN release")


def test_a_title_missing_a_version_falls_back_to_its_plain_words():
    top = diagnose(log="E tensorflow/stream_executor/cuda/cuda_dnn.cc:359] Loaded runtime CuDNN library: 8.0.5")[0]
    assert top.id == "cudnn-version-mismatch"
    assert top.title == "The cuDNN loaded at runtime is not compatible with the one TensorFlow was built with"
    assert top.versions == {"loaded": "8.0.5"}


def test_the_wordings_own_fixes_and_summary_come_first():
    # PyTorch's own check (torch/backends/cudnn/__init__.py): its wheels bundle cuDNN, so a directory
    # on LD_LIBRARY_PATH is the usual cause: that fix first, then the catalogue's
    top = diagnose(exception="RuntimeError: cuDNN version incompatibility: PyTorch was compiled  against (9, 1, 0) but "
                             "found runtime version (8, 9, 2). PyTorch already comes bundled with cuDNN.")[0]
    assert _fix_ids(top) == ["remove-shadowing-dir", "install-matching-cudnn", "import-order"]
    assert top.summary.endswith("a cuDNN directory on LD_LIBRARY_PATH is loaded before it.")


def test_a_suppressed_fix_is_not_offered_even_from_another_finding():
    # one finding shows another copy won (pip would change nothing); a second one offers pip: not offered
    shadowed = Finding("cudnn-shadowed", "error", "T1", "D1.", (SHADOW_FIX,))
    overwritten = Finding("cudnn-wheel-overwritten", "error", "T2", "D2.", (INSTALL_FIX,))
    top = diagnose(log=MISMATCH, report=Report(gpus=ROOMY, findings=(shadowed, overwritten)))[0]
    assert _fix_ids(top) == ["remove-shadowing-dir", "import-order"]


APPLICABLE = [
    # the finding's fix, applicable on the diagnosis (a button only for the ids the registry runs:
    # fixes/catalogue.py RUNNABLE; a fix marked not applicable for a reason of its own stays so)
    (Fix("remove-shadowing-dir", "Take /opt/old out", "remove it", True, False), True),
    (Fix("install-matching-cudnn", "Install", "pip install", True, False, "pip would change nothing"), False),
    (Fix("install-matching-cudnn", "Install", "pip install", True, True), True),
    (Fix("upgrade-consumer", "Upgrade CTranslate2", "pip install -U ctranslate2", True, True), False),
]


@pytest.mark.parametrize("fix, applicable", APPLICABLE, ids=[f"{f.id}-{f.applicable}-{bool(f.reason)}" for f, _ in APPLICABLE])
def test_which_fixes_are_applicable(fix, applicable):
    top = diagnose(log=MISMATCH, report=Report(gpus=ROOMY, findings=(Finding("cudnn-wheel-overwritten", "error", "T", "D.",
                                                                             (fix,)),)))[0]
    assert top.fixes[0].id == fix.id and top.fixes[0].title == fix.title
    assert top.fixes[0].applicable is applicable
    assert top.fixes[0].reason == fix.reason


# --- which framework an XLA/TensorFlow line comes from: its source path ----------------------------
# TF <= 2.14 logs "tensorflow/stream_executor" or "tensorflow/compiler/xla"; TF >= 2.15 vendors XLA as
# "external/local_xla"; jaxlib builds log "external/xla" (the paths in their cuda_dnn.cc log lines).
XLA_PATHS = [
    ("tensorflow/compiler/xla/stream_executor/cuda/cuda_dnn.cc:439", "", "TensorFlow"),
    ("external/local_xla/xla/stream_executor/cuda/cuda_dnn.cc:535", "", "TensorFlow"),
    ("external/xla/xla/stream_executor/cuda/cuda_dnn.cc:535", "", "JAX"),
    ("external/xla/xla/stream_executor/cuda/cuda_dnn.cc:535", "import tensorflow", "JAX"),  # the path beats the context
    ("tensorflow/stream_executor/cuda/cuda_dnn.cc:359", "import jax.numpy", "TensorFlow"),
]


@pytest.mark.parametrize("path, before, framework", XLA_PATHS, ids=[f"{p.split('/')[1]}-{b[7:12]}" for p, b, _ in XLA_PATHS])
def test_the_framework_of_a_version_line_comes_from_its_path(path, before, framework):
    line = f"E {path}] Loaded runtime CuDNN library: 8.6.0 but source was compiled with: 8.9.4."
    top = diagnose(log=(before + "\n" if before else "") + line)[0]
    assert top.title == f"The cuDNN loaded at runtime (8.6.0) is older than the 8.9.4 {framework} was built with"


# --- two ambiguous wordings never promote each other -----------------------------------------------
BEST = "Failed to determine best cudnn convolution algorithm"  # memory, unsupported config also possible


@pytest.mark.parametrize("exception, log, ids", [
    (ALGO, BEST, ["cudnn-unsupported-config", "gpu-out-of-memory"]),
    (BEST, ALGO, ["cudnn-unsupported-config", "gpu-out-of-memory"]),
    # decisive (unambiguous) memory evidence does promote the alternative
    ("RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB", ALGO, ["gpu-out-of-memory", "cudnn-unsupported-config"]),
    # a failed handle only lists memory as its alternative: no decisive evidence of memory
    (ALGO, HANDLE, ["cudnn-unsupported-config", "cudnn-init-failed", "gpu-out-of-memory"]),
])
def test_only_decisive_evidence_promotes_an_alternative(exception, log, ids):
    assert [d.id for d in diagnose(exception=exception, log=log)] == ids


def test_the_ld_library_path_copy_must_be_the_mapped_one():
    elsewhere = _copy("/opt/other/libcudnn.so.8", "8.0.5", source="LD_LIBRARY_PATH")
    top = diagnose(log=MISMATCH, report=Report(cudnn_loaded=(OLD_MAPPED,), cudnn_installed=(elsewhere, _own("8.1.0"))))[0]
    assert not any("comes from the LD_LIBRARY_PATH entry" in e for e in top.evidence)


def test_a_minimum_of_a_major_only_names_no_satisfying_copy():
    # "must be no lower than 9": only the major is known, no minor to compare an own copy with
    log = "RuntimeError: Unable to load cuDNN. The local installation version must be no lower than 9."
    own = _copy("/site/nvidia/cudnn/lib/libcudnn.so.9", "9.3.0", owner="pip: nvidia-cudnn-cu12", source="runpath")
    old = _copy("/opt/old/libcudnn.so.9", "9.1.0", loaded=True)
    report = Report(cudnn_loaded=(old,), cudnn_installed=(_copy("/opt/old/libcudnn.so.9", "9.1.0", source="LD_LIBRARY_PATH",
                                                                     loaded=True), own))
    top = diagnose(log=log, report=report)[0]
    assert top.id == "cudnn-version-mismatch"
    assert not any("comes from the LD_LIBRARY_PATH entry" in e for e in top.evidence)
    assert "install-matching-cudnn" in _fix_ids(top)


# --- fix_advice: a fix's words from the given facts alone (cudnn-magic fix <id>, fixes.plan) --------
def test_fix_advice_takes_the_framework():
    from cudnn_magic.engines.diagnose import fix_advice

    assert fix_advice("install-cudnn-build").title == "Install a framework build with cuDNN support"  # no framework
    assert fix_advice("install-cudnn-build", framework="TensorFlow").title == "Install a TensorFlow build with cuDNN support"
    assert fix_advice("allow-memory-growth", framework="JAX").title == "Stop JAX from preallocating GPU memory"
    assert fix_advice("allow-memory-growth").title == "Let TensorFlow allocate GPU memory as needed"


@pytest.mark.parametrize("versions, cuda, action", [
    # nvidia-cudnn-cu12 starts at 8.9 on PyPI, -cu11 ends at 9.x for CUDA 11 (the wheels on PyPI); the
    # report's framework CUDA decides the wheel's CUDA major when the text does not say
    ({"compiled": "8.9.0"}, None, 'python -m pip install "nvidia-cudnn-cu12<9,>=8.9"'),
    ({"compiled": "9.1.0"}, None, 'python -m pip install "nvidia-cudnn-cu12<10,>=9.1"'),
    ({"compiled": "9.1.0"}, "11.8", 'python -m pip install "nvidia-cudnn-cu11<10,>=9.1"'),
    ({"compiled": "9.1.0", "cuda": "12.4"}, "11.8", 'python -m pip install "nvidia-cudnn-cu12<10,>=9.1"'),
])
def test_fix_advice_takes_the_versions_and_the_report(versions, cuda, action):
    from cudnn_magic.engines.diagnose import fix_advice

    report = Report(frameworks=(_build_of("TensorFlow", "9.1.0", "9.1", cuda=cuda, verdict="ok"),)) if cuda else None
    fix = fix_advice("install-matching-cudnn", versions, report=report)
    assert fix.action == action and fix.applicable is True


def test_fix_advice_without_versions_says_what_is_unknown():
    from cudnn_magic.engines.diagnose import fix_advice

    fix = fix_advice("install-matching-cudnn")
    assert fix.applicable is False and fix.reason == "the needed version is not known from the text"
    assert fix_advice("no-such-fix") is None


# --- every field a wording reads is carried in Diagnosis.versions (cleaned) -------------------------
# Real lines: tests/fixtures/corpus/cases.jsonl (qanet-5, dfl-654, stt-76, whisperwebui-346, facefusion-docker-9,
# tf-1969, roundtrip-4, easyphoto-27), ONNX Runtime onnxruntime_pybind_state.cc, PyTorch
# torch/backends/cudnn/__init__.py (SM check), TensorFlow gpu_device.cc, ONNX Runtime cudnn_fe_call.cc.
DLOPEN_OTHER = ("W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic library "
                "'libcublasLt.so.11'; dlerror: libcublasLt.so.11: cannot open shared object file: No such file or directory\n"
                "W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic library "
                "'libcudnn.so.8'; dlerror: libcudnn.so.8: cannot open shared object file: No such file or directory")
FIELDS = [
    # field, log, diagnosis, value
    ("driver", "E tensorflow/stream_executor/cuda/cuda_dnn.cc:393] possibly insufficient driver version: 384.69.0",
     "cuda-driver-too-old", "384.69.0"),
    ("status_code", "F tensorflow/stream_executor/cuda/cuda_dnn.cc:194] Check failed: status == CUDNN_STATUS_SUCCESS "
     "(7 vs. 0)Failed to set cuDNN stream.", "cudnn-stream-set-failed", "7"),
    ("soname", SUBLIB.replace("cnn_infer", "ops_infer"), "cudnn-sublibrary-load-failed", "libcudnn_ops_infer.so.8"),
    ("library", "Unable to load any of {libcudnn_ops.so.9.1.0, libcudnn_ops.so.9.1, libcudnn_ops.so.9, libcudnn_ops.so}",
     "cudnn-sublibrary-load-failed", "libcudnn_ops.so.9.1.0"),
    ("symbol", "Invalid handle. Cannot load symbol cudnnCreateTensorDescriptor", "cudnn-sublibrary-load-failed",
     "cudnnCreateTensorDescriptor"),
    ("dependency", "Could not load library libcudnn_cnn_infer.so.8. Error: libnvrtc.so: cannot open shared object file: "
     "No such file or directory", "cudnn-sublibrary-load-failed", "libnvrtc.so"),
    ("required", "[W:onnxruntime:Default, onnxruntime_pybind_state.cc:965 CreateExecutionProviderInstance] Failed to "
     "create CUDAExecutionProvider. Require cuDNN 9.* and CUDA 12.*. Please install all dependencies as mentioned in "
     "the GPU requirements page", "cudnn-library-not-found", "9"),
    ("cuda", "[W:onnxruntime:Default, onnxruntime_pybind_state.cc:965 CreateExecutionProviderInstance] Failed to "
     "create CUDAExecutionProvider. Require cuDNN 9.* and CUDA 12.*. Please install all dependencies as mentioned in "
     "the GPU requirements page", "cudnn-library-not-found", "12"),
    ("min_sm", "RuntimeError: cuDNN version 9.11.0 is not compatible with devices with SM < 7.5", "gpu-arch-unsupported",
     "7.5"),
    ("compute_capability", "I tensorflow/core/common_runtime/gpu/gpu_device.cc:1700] Ignoring visible gpu device "
     "(device: 0, name: Tesla K40c, pci bus id: 0000:03:00.0, compute capability: 3.5) with Cuda compute capability 3.5. "
     "The minimum required Cuda capability is 3.7.", "gpu-arch-unsupported", "3.5"),
    ("descriptor", "F tensorflow/stream_executor/cuda/cuda_dnn.cc:427] could not set cudnn filter descriptor: "
     "CUDNN_STATUS_BAD_PARAM", "cudnn-bad-param", "filter"),
    # _clean keeps only word characters, dots, signs, parentheses, commas, spaces, slashes and colons
    ("shape", "InternalError (see above for traceback): cuDNN launch failure : input shape ([64,128,1,1])",
     "cudnn-execution-failed", "64,128,1,1"),
    ("cuda_error", "E tensorflow/stream_executor/cuda/cuda_driver.cc:981] failed to synchronize the stop event: "
     "CUDA_ERROR_LAUNCH_FAILED: unspecified launch failure\nF tensorflow/stream_executor/cuda/cuda_dnn.cc:194] Check "
     "failed: status == CUDNN_STATUS_SUCCESS (7 vs. 0)Failed to set cuDNN stream.", "cudnn-stream-set-failed",
     "CUDA_ERROR_LAUNCH_FAILED"),
    ("other_library", DLOPEN_OTHER, "cudnn-library-not-found", "libcublasLt.so.11"),
    ("mode", "RuntimeError: FIND was unable to find an engine to execute this computation", "cudnn-unsupported-config",
     "FIND"),
    ("driver_cuda", "RuntimeError: The NVIDIA driver on your system is too old (found version 11020). Please update "
     "your GPU driver\nRuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED", "cuda-driver-too-old", "11020"),
    ("call", _ort("CUDNN_STATUS_INTERNAL_ERROR", "cudnnCreate"), "cudnn-init-failed", "cudnnCreate"),
    ("op", "E tensorflow/stream_executor/cuda/cuda_dnn.cc:352] could not destroy cudnn handle: CUDNN_STATUS_BAD_PARAM",
     "cudnn-init-failed", "destroy"),
    ("fe_code", "CUDNN_FE failure 8: HEURISTIC_QUERY_FAILED ; GPU=0 ; hostname=h ; file=cudnn_fe_call.cc ; line=8 ; "
     "expr=s_.cudnn_fe_graph->create_execution_plans({heur_mode});", "cudnn-unsupported-config", "HEURISTIC_QUERY_FAILED"),
]


@pytest.mark.parametrize("field, log, diag, value", FIELDS, ids=[f for f, _, _, _ in FIELDS])
def test_each_field_a_wording_reads_is_carried(field, log, diag, value):
    res = diagnose(log=log) or gpu_unused_warnings(log)
    assert _by_id(res, diag).versions[field] == value


WARNED = [
    # a succeeding cell's output, the warnings (relevant ids only: loading, versions, architecture)
    (MISMATCH, ["cudnn-version-mismatch"]),
    (SUBLIB, ["cudnn-sublibrary-load-failed", "cudnn-library-not-found"]),
    ("I tensorflow/core/common_runtime/gpu/gpu_device.cc:1700] Ignoring visible gpu device (device: 0, name: Tesla K40c, "
     "pci bus id: 0000:03:00.0, compute capability: 3.5) with Cuda compute capability 3.5. The minimum required Cuda "
     "capability is 3.7.", ["gpu-arch-unsupported"]),
    (NOT_FOUND, ["cudnn-library-not-found"]),
    ("RuntimeError: cuDNN error: CUDNN_STATUS_BAD_PARAM", []),
    (OOM_LINE, []),
]


@pytest.mark.parametrize("log, ids", WARNED, ids=["mismatch", "sublib", "arch", "not-found", "bad-param", "oom"])
def test_which_lines_warn_in_a_succeeding_cell(log, ids):
    assert [d.id for d in gpu_unused_warnings(log)] == ids


# --- only facts that were read count (a CI machine explaining a pasted log changes nothing) ----------
USABLE = [
    # what the report read besides the check's finding, is the finding said?
    ({}, False),
    ({"gpus": ROOMY}, True),
    ({"driver": Driver("550.54.15")}, True),
    ({"driver": Unavailable("Insufficient Permissions")}, False),
    ({"cudnn_loaded": (_mapped("/x/libcudnn.so.8", "8.9.4"),)}, True),
    ({"frameworks": (_build_of("TensorFlow", "8.9.4", "8.9", verdict="ok"),)}, True),
    ({"frameworks": (_build_of("TensorFlow", "8.9.4", "8.9", verdict="unknown"),)}, False),
    ({"frameworks": (_build_of("TensorFlow", None, None, verdict="no-cudnn"),)}, False),
]


@pytest.mark.parametrize("read, said", USABLE, ids=["nothing", "gpus", "driver", "no-nvml", "mapped", "fw-ok", "fw-unknown",
                                                    "fw-no-cudnn"])
def test_only_facts_that_were_read_count(read, said):
    finding = Finding("cudnn-shadowed", "error", "T", "D.", (SHADOW_FIX,))
    top = diagnose(log=MISMATCH, report=Report(findings=(finding,), **read))[0]
    assert ("fact: T. D." in top.evidence) is said
    assert (top.fixes[0].title == SHADOW_FIX.title) is said


def test_a_directory_finding_first_does_not_hide_a_consumer_finding():
    report = Report(gpus=ROOMY, frameworks=(CT2,), findings=(DIR_SUBLIB, CT2_SUBLIB))
    top = _by_id(diagnose(log=SUBLIB, report=report), "cudnn-sublibrary-load-failed")
    assert f"fact: {CT2_SUBLIB.title}" in top.evidence
    assert f"fact: {DIR_SUBLIB.title}" not in top.evidence


# --- _refine_with_facts, each branch stated as a rule ------------------------------------------------
@pytest.mark.parametrize("log, diag", [(SUBLIB, "cudnn-sublibrary-load-failed"), (NOT_FOUND, "cudnn-library-not-found"),
                                       (MISMATCH, "cudnn-version-mismatch"), (HANDLE, "cudnn-init-failed")])
def test_the_cudnn_in_use_of_several_copies_is_said_on_the_loading_diagnoses(log, diag):
    two = Report(cudnn_loaded=(_mapped("/a/libcudnn.so.8", None), _mapped("/b/libcudnn.so.8", "8.9.4")))
    d = _by_id(diagnose(log=log, report=two), diag)
    # the first mapped one, its version unknown
    assert "fact: the cuDNN in use is ? at /a/libcudnn.so.8" in d.evidence


def test_a_framework_that_accepts_its_cudnn_does_not_stop_the_search_for_one_that_does_not():
    report = Report(frameworks=(_build_of("TensorFlow", "8.9.4", "8.9", verdict="ok"),
                                _build_of("PyTorch", "8.6.0", None)))
    top = diagnose(log=HANDLE, report=report)[0]
    assert top.id == "cudnn-version-mismatch"
    # the compiled-against release unknown: "?"
    assert _facts_and_notes(top) == ["fact: PyTorch 2.0.0 was built with cuDNN ?; cuDNN 8.6.0 is in use (/x/libcudnn.so.8)."]


def test_a_consumer_row_without_a_version_finding_does_not_stop_the_search():
    report = Report(frameworks=(CT2, _build_of("PyTorch", "8.6.0", "8.9")), findings=(CT2_SUBLIB,))
    res = diagnose(log=HANDLE, report=report)
    assert res[0].id == "cudnn-version-mismatch"
    assert "fact: PyTorch 2.0.0 was built with cuDNN 8.9; cuDNN 8.6.0 is in use (/x/libcudnn.so.8)." in res[0].evidence


def test_a_framework_mismatch_made_from_the_facts_takes_the_shadowing_cause():
    # no wording of a mismatch in the log: the framework's fact makes it, and the mapped copy's
    # LD_LIBRARY_PATH origin (with the environment's own 8.9 installed) is then its cause
    old = _copy("/opt/old/libcudnn.so.8", "8.6.0", loaded=True)
    report = Report(cudnn_loaded=(old,), cudnn_installed=(_copy("/opt/old/libcudnn.so.8", "8.6.0", source="LD_LIBRARY_PATH",
                                                                 loaded=True), _own("8.9.4")),
                    frameworks=(_build_of("TensorFlow", "8.6.0", "8.9"),))
    top = diagnose(log=HANDLE, report=report)[0]
    assert top.id == "cudnn-version-mismatch"
    assert any(e.endswith("would satisfy 8.9") for e in top.evidence)
    assert _fix_ids(top)[0] == "remove-shadowing-dir" and "install-matching-cudnn" not in _fix_ids(top)


def test_a_nearly_full_gpu_does_not_lift_a_logged_memory_error_over_a_specific_one():
    res = diagnose(log=MISMATCH + "\n" + OOM_LINE,
                   report=Report(gpus=(Gpu(0, "T4", total_bytes=16 * GiB, free_bytes=100 * MiB),)))
    assert [d.id for d in res] == ["cudnn-version-mismatch", "gpu-out-of-memory"]
    assert _facts_and_notes(res[1]) == ["fact: GPU 0 (T4) has 100 MiB free of 16.0 GiB"]


DRIVER_LINE = "E tensorflow/stream_executor/cuda/cuda_dnn.cc:393] possibly insufficient driver version: 384.69.0"
OLD_DRIVER = dict(driver=Driver("384.69.0"), platform="linux",
                  frameworks=(_build_of("TensorFlow", "8.9.4", "8.9", cuda="12.2", verdict="ok"),))


def test_an_unreadable_driver_is_no_driver_fact():
    report = Report(driver=Unavailable("Insufficient Permissions"),
                    frameworks=(_build_of("TensorFlow", "8.9.4", "8.9", cuda="12.2", verdict="ok"),))
    assert [d.id for d in diagnose(log=HANDLE, report=report)] == ["cudnn-init-failed", "gpu-out-of-memory"]


def test_the_driver_fact_joins_a_logged_driver_diagnosis():
    # the log already says the driver is too old (TensorFlow cuda_dnn.cc): the floor is added to it
    top = diagnose(log=DRIVER_LINE, report=Report(**OLD_DRIVER))[0]
    assert top.id == "cuda-driver-too-old"
    assert _facts_and_notes(top) == ["fact: NVIDIA driver 384.69.0 is below 525.60.13, the minimum for CUDA 12.2"]


def test_the_driver_fact_does_not_lift_a_logged_driver_diagnosis_over_a_specific_one():
    res = diagnose(log=MISMATCH + "\n" + DRIVER_LINE, report=Report(**OLD_DRIVER))
    assert [d.id for d in res][:2] == ["cudnn-version-mismatch", "cuda-driver-too-old"]
    assert "fact: NVIDIA driver 384.69.0 is below 525.60.13, the minimum for CUDA 12.2" in res[1].evidence


def test_a_driver_fact_does_not_end_the_facts():
    finding = Finding("cudnn-shadowed", "error", "T", "D.", (SHADOW_FIX,))
    res = diagnose(log=HANDLE, report=Report(findings=(finding,), **OLD_DRIVER))
    assert res[0].id == "cuda-driver-too-old"
    assert "fact: T. D." in _by_id(res, "cudnn-init-failed").evidence


def test_a_finding_that_is_no_cause_first_does_not_hide_a_cause():
    findings = (Finding("no-nvidia-driver", "info", "No NVIDIA driver found", "d"),
                Finding("cudnn-shadowed", "error", "T", "D.", (SHADOW_FIX,)))
    top = diagnose(log=MISMATCH, report=Report(gpus=ROOMY, findings=findings))[0]
    assert _facts_and_notes(top) == ["fact: T. D."]


def test_a_diagnosis_that_is_no_target_first_does_not_hide_a_target():
    finding = Finding("cudnn-shadowed", "error", "T", "D.", (SHADOW_FIX,))
    res = diagnose(log=OOM_LINE + "\n" + SUBLIB, report=Report(gpus=ROOMY, findings=(finding,)))
    assert "fact: T. D." in _by_id(res, "cudnn-sublibrary-load-failed").evidence
    assert "fact: T. D." not in _by_id(res, "gpu-out-of-memory").evidence


def test_a_pasted_warning_hard_wrapped_at_40_columns_is_found_unless_told_not_to_join():
    # a paste wrapped at a fixed column (knowledge/matcher.py _scan_joined); a cell's own output is
    # scanned with joined=False (shell/annotate.py)
    line = CANNOT_DLOPEN.split("\n")[0]
    wrapped = "\n".join(line[i:i + 40] for i in range(0, len(line), 40))
    assert [d.id for d in gpu_unused_warnings(wrapped)] == ["cudnn-library-not-found"]
    assert gpu_unused_warnings(wrapped, joined=False) == []


# ===================================================================================================
# diagnose (the public entry), _is_core, _drop_unnamed_loads, _clean: the edges of what is read
# (what no test can tell apart is listed, with the reason, in tests/mutation_survivors.md)
# ===================================================================================================
# Rules, from diagnose()'s docstring and comments (docs/report.md "A failing cell's diagnosis"):
# an exception message or traceback longer than MAX_EXCEPTION_CHARS (256 KiB) is cut to its ends,
# "the decisive words are at the ends of a message": the first and the last half of the limit are
# read, the middle is not; the traceback repeats the message (its raise line): its wordings
# already found in the exception are quoted once; a bytes log is "scanned in place, never decoded
# whole", and only its first and last 65,536 bytes name the framework; "Never raises: an internal
# error is logged at debug level and gives []" (logger "cudnn_magic").


from cudnn_magic.engines.diagnose import MAX_EXCEPTION_CHARS  # noqa: E402

NOT_SUPPORTED = "cuDNN error: CUDNN_STATUS_NOT_SUPPORTED"
_HALF = MAX_EXCEPTION_CHARS // 2
_OVERSIZED = MAX_EXCEPTION_CHARS + 50_000  # head [0, _HALF), middle, tail [len - _HALF, len)


def _oversized_with(start: int) -> str:
    """An oversized exception message of filler lines with NOT_SUPPORTED at character ``start``."""
    filler = ("x" * 99 + "\n") * (_OVERSIZED // 100 + 1)
    text = filler[:start - 1] + "\n" + NOT_SUPPORTED + "\n" + filler
    return text[:_OVERSIZED]


OVERSIZED_EXCEPTION = [
    # where the wording starts, whether it is read
    (_HALF - 40_000, True),  # well inside the head (past a third of the limit)
    (_HALF - len(NOT_SUPPORTED), True),  # its last character is the head's last one
    (_HALF + 1_000, False),  # the middle: past the head, before the tail
    (_OVERSIZED - _HALF + 1_000, True),  # inside the tail
]


@pytest.mark.parametrize("start, read", OVERSIZED_EXCEPTION, ids=["head", "head-end", "middle", "tail"])
def test_an_oversized_exception_is_read_at_its_two_ends(start, read):
    exc = _oversized_with(start)
    assert len(exc) > MAX_EXCEPTION_CHARS and exc[start:start + len(NOT_SUPPORTED)] == NOT_SUPPORTED
    ids = [d.id for d in diagnose(exc)]
    assert ("cudnn-unsupported-config" in ids) is read
    if read:
        assert _by_id(diagnose(exc), "cudnn-unsupported-config").versions["status"] == "CUDNN_STATUS_NOT_SUPPORTED"


TRACEBACK = ('Traceback (most recent call last):\n  File "train.py", line 9, in <module>\n    y = conv(x)\n'
             f"RuntimeError: {NOT_SUPPORTED}")


@pytest.mark.parametrize("exception, evidence", [
    (NOT_SUPPORTED, (NOT_SUPPORTED,)),  # the raise line repeats the message: quoted once, from the message
    ("", (f"RuntimeError: {NOT_SUPPORTED}",)),  # no message given: the traceback's line is the evidence
])
def test_the_traceback_repeating_the_message_is_quoted_once(exception, evidence):
    with_tb = diagnose(exception, traceback=TRACEBACK)
    assert [d.id for d in with_tb] == ["cudnn-unsupported-config"]
    assert with_tb[0].evidence == evidence
    if exception:  # the same diagnosis as the message alone (no second quote, no stronger rank)
        assert with_tb == diagnose(exception)


@pytest.mark.parametrize("kw", [{"log": None}, {"traceback": None}, {"log": None, "traceback": None}],
                         ids=["log", "traceback", "both"])
def test_a_missing_log_or_traceback_given_as_none_changes_nothing(kw):
    # callers pass None for "not captured" (the docstring: never raises)
    assert diagnose(INTERNAL, **kw) == diagnose(INTERNAL)
    assert [d.id for d in diagnose(INTERNAL, **kw)] == ["cudnn-internal-error"]


@pytest.mark.parametrize("garbage", [b"\xff\xfe", b"\x80", b"\xc3"], ids=["bom-like", "continuation", "truncated"])
def test_a_bytes_log_with_invalid_utf8_is_still_diagnosed(garbage):
    # "UTF-8 bytes as read from a file": a stray invalid byte (a binary progress bar, a cut
    # multibyte character) does not cost the diagnosis
    log = garbage + b"\n" + NOT_FOUND.encode() + b"\n" + garbage
    got = diagnose(log=log)
    assert [d.id for d in got] == ["cudnn-library-not-found"]
    assert got == diagnose(log=NOT_FOUND)


@pytest.mark.parametrize("head, seen", [
    # the marker ends at this byte index; the bytes before it are 2-byte characters ("é")
    (65_530, True),  # "jaxlib" is bytes 65530..65535: inside the first 65,536 bytes
    (65_531, False),  # "jaxlib" ends at byte 65536: one byte past the head
])
def test_the_head_window_of_a_bytes_log_counts_bytes_not_characters(head, seen):
    prefix = ("x" if head % 2 else "") + "é" * (head // 2)
    log = (prefix + "jaxlib" + "y" * 70_000 + "\n" + XLA_LINE).encode()
    assert log.index(b"jaxlib") == head
    assert _title_framework(log=log) == ("JAX" if seen else "TensorFlow/JAX (XLA)")


@pytest.mark.parametrize("after, seen", [
    # bytes after "jaxlib", as 2-byte characters ("é"), plus one ASCII byte when odd
    (65_530, True),  # "jaxlib" lies wholly in the last 65,536 bytes
    (65_531, False),  # its first byte is one before the last 65,536
])
def test_the_tail_window_of_a_bytes_log_counts_bytes_not_characters(after, seen):
    suffix = ("x" if after % 2 else "") + "é" * (after // 2)
    log = (XLA_LINE + "\n" + "y" * 70_000 + "jaxlib" + suffix).encode()
    assert len(log) - log.index(b"jaxlib") - 6 == after
    assert _title_framework(log=log) == ("JAX" if seen else "TensorFlow/JAX (XLA)")


@pytest.mark.parametrize("as_bytes", [False, True], ids=["str", "bytes"])
def test_a_log_shorter_than_the_two_windows_is_read_whole(as_bytes):
    # 65,536 + 65,536 bytes cover the whole log: a word across the 64 KiB mark is seen
    log = "x" * 65_533 + "jaxlib" + "y" * 40_000 + "\n" + XLA_LINE
    assert len(log) < 2 * 65_536 and log.index("jaxlib") < 65_536 < log.index("jaxlib") + 6
    assert _title_framework(log=log.encode() if as_bytes else log) == "JAX"


def test_an_internal_error_gives_nothing_and_is_logged_at_debug_level(caplog):
    # the docstring: "Never raises: an internal error is logged at debug level and gives []"
    broken_report = object()  # not a Report: the refinement with live facts fails inside
    with caplog.at_level(logging.DEBUG, logger="cudnn_magic"):
        assert diagnose(INTERNAL, report=broken_report) == []
    records = [r for r in caplog.records if r.name == "cudnn_magic" and r.levelno == logging.DEBUG]
    assert [r.getMessage() for r in records] == ["diagnose failed"]
    assert records[0].exc_info is not None and records[0].exc_info[0] is not None  # the traceback is kept


# _is_core: a marker (weight 0: "which library a loader said it could not open", knowledge/__init__)
# is no cuDNN failure; a needs_context wording ("no kernel image is available", CUDA runtime
# cudaErrorNoKernelImageForDevice) counts only next to one (diagnose._build).
CUBLAS_MISSING = ("Could not load library libcublasLt.so.12. Error: libcublasLt.so.12: cannot open shared object "
                  "file: No such file or directory")


@pytest.mark.parametrize("lines, arch", [
    ([NO_KERNEL], False),  # alone: a CUDA matter, not cuDNN's
    ([CUBLAS_MISSING, NO_KERNEL], False),  # a non-cuDNN library missing is no cuDNN failure
    (["RuntimeError: cuDNN error: CUDNN_STATUS_INTERNAL_ERROR", NO_KERNEL], True),  # next to a cuDNN failure
])
def test_no_kernel_image_counts_only_next_to_a_cudnn_failure(lines, arch):
    ids = [d.id for d in diagnose(log="\n".join(lines))]
    assert ("gpu-arch-unsupported" in ids) is arch
    if not arch:
        assert ids == []


# _drop_unnamed_loads: ONNX Runtime's "Failed to create CUDAExecutionProvider" names no library
# (onnxruntime provider_bridge_ort.cc): it is a cuDNN matter unless the loader named only
# non-cuDNN libraries as missing; a cuDNN library among the missing keeps it.
ORT_EP = ("[E:onnxruntime:Default, provider_bridge_ort.cc:1480 TryGetProviderInfo_CUDA] Failed to create "
          "CUDAExecutionProvider")
CUDNN9_MISSING = "OSError: libcudnn.so.9: cannot open shared object file: No such file or directory"


@pytest.mark.parametrize("lines, quoted", [
    ([ORT_EP], True),  # nothing named: the provider line stands
    ([CUDNN9_MISSING, ORT_EP], True),
    ([CUDNN9_MISSING, CUBLAS_MISSING, ORT_EP], True),  # cuDNN among the missing: still a cuDNN matter
    ([CUBLAS_MISSING, ORT_EP], False),  # only cuBLAS missing: not cuDNN's
])
def test_the_provider_line_is_quoted_when_cudnn_is_among_the_missing(lines, quoted):
    got = diagnose(log="\n".join(lines))
    ev = _by_id(got, "cudnn-library-not-found").evidence if got else ()
    assert (ORT_EP in ev) is quoted
    if not quoted:
        assert got == []


# _clean: a quoted value (here the undefined symbol) is cut to 80 characters and loses only trailing
# ".,: " (the catalogue quotes it in titles and versions; ld.so's "undefined symbol: NAME").
def _symbol_of(sym):
    got = diagnose(log=f"ImportError: /x/libcudnn_ops_infer.so.8: undefined symbol: {sym}")
    return _by_id(got, "cudnn-sublibrary-load-failed").versions["symbol"]


@pytest.mark.parametrize("sym, quoted", [
    ("_ZN5cudnn" + "a" * 70, "_ZN5cudnn" + "a" * 70),  # 79 characters: whole
    ("_ZN5cudnn" + "a" * 71, "_ZN5cudnn" + "a" * 71),  # 80: whole
    ("_ZN5cudnn" + "a" * 72, "_ZN5cudnn" + "a" * 71),  # 81: cut to 80
    ("_ZN5cudnn" + "a" * 70 + "X", "_ZN5cudnn" + "a" * 70 + "X"),  # a letter at the end stays
    ("cudnnFooX", "cudnnFooX"),
    ("cudnnFooXX", "cudnnFooXX"),
])
def test_a_quoted_symbol_is_cut_to_80_characters_and_keeps_its_letters(sym, quoted):
    assert _symbol_of(sym) == quoted


# The parts read for the framework (the exception, the traceback, the two ends of the log) are
# joined by a line break only: a joint adds no letters, so a word that is not a framework's word
# ("LaRuntimeError" is not JAX's XlaRuntimeError) names no framework wherever it stands.
NEAR_MISS = "LaRuntimeError: not a JAX word"


@pytest.mark.parametrize("kw", [
    {"traceback": NEAR_MISS, "log": XLA_LINE},  # after the exception/traceback joint
    {"exception": "RuntimeError: failed", "traceback": NEAR_MISS, "log": XLA_LINE},
    {"log": NEAR_MISS + "\n" + XLA_LINE},  # after the joint of the log's two ends
    {"log": (NEAR_MISS + "\n" + XLA_LINE).encode()},  # the same log as bytes
], ids=["traceback", "exception+traceback", "log", "log-bytes"])
def test_a_near_miss_word_names_no_framework(kw):
    assert _title_framework(**kw) == "TensorFlow/JAX (XLA)"


# exc_type: "Type: " is put before the message unless the message already names its type within its
# first 200 characters (diagnose: str(exc) usually lacks the type; "Type: message" already has it).
@pytest.mark.parametrize("last_index, prefixed", [
    (198, False), (199, False),  # the type name ends inside the first 200 characters
    (200, True), (201, True),  # it ends past them: the type is put before the message
])
def test_the_exception_type_is_named_unless_the_first_200_characters_name_it(last_index, prefixed):
    head = NOT_SUPPORTED + " "
    msg = head + "z" * (last_index + 1 - len("RuntimeError") - len(head)) + "RuntimeError"
    assert msg.rindex("RuntimeError") + len("RuntimeError") - 1 == last_index
    ev = _by_id(diagnose(msg, exc_type="RuntimeError"), "cudnn-unsupported-config").evidence
    assert ev[0].startswith("RuntimeError: " + NOT_SUPPORTED) is prefixed
    assert NOT_SUPPORTED in ev[0]


# --------------------------------------------------------------------------------------------------
# The live facts at the edges of each rule.
#
# diagnose() joining a log with this kernel's live facts, at the edges of each rule
# (``_refine_with_facts``, ``_note_missing_driver``), as docs/report.md states them ("A failing
# cell's diagnosis with the live facts"):
# * a GPU is nearly full when it has less than 256 MiB free or less than 5 % of its memory free; a
#   generic failure (a handle that could not be created, an internal error) is then explained as
#   memory running out;
# * every GPU has plenty free when each has at least 1 GiB and at least 10 % of its memory free; an
#   internal error is then not memory running out (the "free GPU memory" fix is not offered);
# * a driver below the floor of a framework's CUDA explains a generic failure (floors: docs/facts.md
#   "Drivers", NVIDIA's CUDA minor-version compatibility page: CUDA 13.x >= 580; 12.x >=
#   525.60.13 on Linux, 527.41 on Windows; 11.x >= 450.80.02 / 452.39);
# * a framework whose compiled cuDNN does not accept the one in use explains it before the driver,
#   and the driver before memory; a specific diagnosis from the log (a version mismatch) is not
#   replaced by a fact about the driver or memory;
# * NVML reporting no driver (its "Not Found" / "Not Loaded" errors, NVML API reference
#   ``NVML_ERROR_LIBRARY_NOT_FOUND`` / ``NVML_ERROR_DRIVER_NOT_LOADED``) means no cuDNN handle can
#   be created here; memory running out, only inferred from a generic failure, is then dropped.
# Every case runs the real engine on the real log lines of TensorFlow and PyTorch.
# --------------------------------------------------------------------------------------------------


MiB, GiB = 2**20, 2**30
VERSION_LINE_UNSTAMPED = ("E tensorflow/stream_executor/cuda/cuda_dnn.cc:359] Loaded runtime CuDNN library: 8.0.5 but source was "
                "compiled with: 8.1.0.  CuDNN library needs to have matching major version and equal or higher minor "
                "version.")


def _tf215(verdict: str = "ok", cuda: str = "12.2", used: str = "8.9.4") -> FrameworkBuild:
    return FrameworkBuild("TensorFlow", "tensorflow", "2.15.0", imported=True, cudnn_compiled="8.9", cuda_compiled=cuda,
                          cudnn_used=used, cudnn_used_path="/site/nvidia/cudnn/lib/libcudnn.so.8", verdict=verdict,
                          detail="")


def _facts(diag) -> list[str]:
    return [e for e in diag.evidence if e.startswith("fact:")]


# --- nearly full: free < 256 MiB or free < 5 % of the total --------------------------------------
NEARLY_FULL = [
    # total, free, nearly full?  (on 4 GiB 5 % is 204.8 MiB: the 256 MiB edge decides; on 40 GiB
    # 5 % is 2 GiB: the 5 % edge decides)
    (4 * GiB, 255 * MiB, True),
    (4 * GiB, 256 * MiB, False),
    (40 * GiB, 2 * GiB - MiB, True),
    (40 * GiB, 2 * GiB, False),
    (16 * GiB, 0, True),
]


@pytest.mark.parametrize("total, free, full", NEARLY_FULL, ids=[f"{t // MiB}MiB-free{f // MiB}MiB" for t, f, _ in NEARLY_FULL])
def test_nearly_full_gpu_explains_a_failed_handle(total, free, full):
    res = diagnose(log=HANDLE, report=Report(gpus=(Gpu(0, "NVIDIA T4", total_bytes=total, free_bytes=free),)))
    oom = next(d for d in res if d.id == "gpu-out-of-memory")
    if full:
        assert res[0].id == "gpu-out-of-memory"
        assert any(e.startswith("fact: GPU 0 (NVIDIA T4) has ") and " free of " in e for e in _facts(oom))
    else:
        assert res[0].id == "cudnn-init-failed"
        assert _facts(oom) == []


@pytest.mark.parametrize("free, text", [(255 * MiB, "255 MiB free of 4.0 GiB"), (0, "0 MiB free of 4.0 GiB")])
def test_nearly_full_fact_gives_the_amounts(free, text):
    res = diagnose(log=HANDLE, report=Report(gpus=(Gpu(3, "NVIDIA L4", total_bytes=4 * GiB, free_bytes=free),)))
    assert _facts(res[0]) == [f"fact: GPU 3 (NVIDIA L4) has {text}"]


def test_unknown_free_memory_is_no_fact():
    # NVML could not say (free_bytes None, or no total): neither nearly full nor plenty
    for gpu in (Gpu(0, "T4", total_bytes=16 * GiB, free_bytes=None), Gpu(0, "T4", total_bytes=None, free_bytes=0)):
        res = diagnose(log=INTERNAL, report=Report(gpus=(gpu,)))
        assert [d.id for d in res] == ["cudnn-internal-error"]
        assert _facts(res[0]) == []
        assert "free-gpu-memory" in [f.id for f in res[0].fixes]


def test_nearly_full_gpu_explains_an_internal_error():
    res = diagnose(log=INTERNAL, report=Report(gpus=(Gpu(0, "T4", total_bytes=16 * GiB, free_bytes=100 * MiB),)))
    assert res[0].id == "gpu-out-of-memory"
    assert "cudnn-internal-error" in [d.id for d in res]


def test_nearly_full_gpu_does_not_replace_a_version_mismatch():
    res = diagnose(log=VERSION_LINE_UNSTAMPED, report=Report(gpus=(Gpu(0, "T4", total_bytes=16 * GiB, free_bytes=100 * MiB),)))
    assert [d.id for d in res] == ["cudnn-version-mismatch"]


def test_nearly_full_fact_joins_a_logged_out_of_memory():
    res = diagnose(log=OOM_LINE, report=Report(gpus=(Gpu(0, "T4", total_bytes=16 * GiB, free_bytes=100 * MiB),)))
    assert res[0].id == "gpu-out-of-memory"
    assert _facts(res[0]) == ["fact: GPU 0 (T4) has 100 MiB free of 16.0 GiB"]


# --- plenty free on every GPU: >= 1 GiB and >= 10 % of the total ---------------------------------
PLENTY = [
    # (total, free) per GPU, plenty on every GPU?
    ([(8 * GiB, 1 * GiB)], True),  # 1 GiB is 12.5 %: the 1 GiB edge decides
    ([(8 * GiB, 1 * GiB - MiB)], False),
    ([(20 * GiB, 2 * GiB)], True),  # 10 % of 20 GiB is 2 GiB: the 10 % edge decides
    ([(20 * GiB, 2 * GiB - MiB)], False),
    ([(20 * GiB, 3 * GiB), (8 * GiB, 1 * GiB)], True),
    ([(20 * GiB, 3 * GiB), (8 * GiB, 1 * GiB - MiB)], False),  # one GPU short is enough
]


@pytest.mark.parametrize("gpus, plenty", PLENTY, ids=[f"{'+'.join(str(f // MiB) for _, f in g)}MiB" for g, _ in PLENTY])
def test_plenty_free_memory_rules_out_memory_for_an_internal_error(gpus, plenty):
    report = Report(gpus=tuple(Gpu(i, "A100", total_bytes=t, free_bytes=f) for i, (t, f) in enumerate(gpus)))
    res = diagnose(log=INTERNAL, report=report)
    assert [d.id for d in res] == ["cudnn-internal-error"]
    fixes = [f.id for f in res[0].fixes]
    facts = _facts(res[0])
    if plenty:
        assert "free-gpu-memory" not in fixes
        assert len(facts) == 1 and facts[0].endswith("now: GPU memory did not run out")
    else:
        assert "free-gpu-memory" in fixes
        assert facts == []


def test_plenty_names_the_gpu_with_the_least_free():
    report = Report(gpus=(Gpu(0, "A100", total_bytes=40 * GiB, free_bytes=30 * GiB),
                          Gpu(1, "L4", total_bytes=8 * GiB, free_bytes=2 * GiB)))
    assert _facts(diagnose(log=INTERNAL, report=report)[0]) == [
        "fact: GPU 1 (L4) has 2.0 GiB free of 8.0 GiB (the least free of the GPUs) now: GPU memory did not run out"]
    one = Report(gpus=(Gpu(0, "A100", total_bytes=40 * GiB, free_bytes=30 * GiB),))
    assert _facts(diagnose(log=INTERNAL, report=one)[0]) == [
        "fact: GPU 0 (A100) has 30.0 GiB free of 40.0 GiB now: GPU memory did not run out"]


def test_plenty_is_said_of_an_internal_error_only():
    res = diagnose(log=HANDLE, report=Report(gpus=(Gpu(0, "A100", total_bytes=40 * GiB, free_bytes=30 * GiB),)))
    assert res[0].id == "cudnn-init-failed"
    assert all(not e.endswith("did not run out") for d in res for e in d.evidence)


# --- the driver floor of each CUDA major (docs/facts.md "Drivers") ------------------------------------
DRIVERS = [
    # framework's CUDA, driver, platform, the floor when the driver is below it (None: not below)
    ("12.2", "525.60.13", "linux", None),
    ("12.2", "525.60.12", "linux", "525.60.13"),
    ("12.2", "525.61", "linux", None),
    ("12.2", "527.41", "win32", None),
    ("12.2", "527.40", "win32", "527.41"),
    ("12.2", "525.60.13", "win32", "527.41"),  # Windows' floor is higher than Linux'
    ("11.8", "450.80.02", "linux", None),
    ("11.8", "450.80.01", "linux", "450.80.02"),
    ("11.8", "452.39", "win32", None),
    ("11.8", "452.38", "win32", "452.39"),
    ("13.0", "580.65.06", "linux", None),
    ("13.0", "575.57.08", "linux", "580"),
]


@pytest.mark.parametrize("cuda, driver, platform, floor", DRIVERS, ids=[f"cuda{c}-{d}-{p}" for c, d, p, _ in DRIVERS])
def test_driver_below_the_floor_explains_a_failed_handle(cuda, driver, platform, floor):
    report = Report(driver=Driver(driver, cuda), frameworks=(_tf215(cuda=cuda),), platform=platform)
    res = diagnose(log=HANDLE, report=report)
    if floor is None:
        assert res[0].id == "cudnn-init-failed"
        assert "cuda-driver-too-old" not in [d.id for d in res]
    else:
        top = res[0]
        assert top.id == "cuda-driver-too-old"
        assert top.versions["driver"] == driver and top.versions["required_driver"] == floor
        assert f"fact: NVIDIA driver {driver} is below {floor}, the minimum for CUDA {cuda}" in top.evidence


def test_driver_fact_needs_a_known_driver_version_and_cuda():
    for report in (Report(driver=Driver(None), frameworks=(_tf215(),)),
                   Report(driver=Driver("450.51.06"), frameworks=(_tf215(cuda=None),))):
        assert diagnose(log=HANDLE, report=report)[0].id == "cudnn-init-failed"


def test_driver_below_the_floor_does_not_replace_a_version_mismatch():
    res = diagnose(log=VERSION_LINE_UNSTAMPED, report=Report(driver=Driver("450.51.06"), frameworks=(_tf215(),), platform="linux"))
    assert [d.id for d in res] == ["cudnn-version-mismatch"]


# --- which fact explains a generic failure first ------------------------------------------------
def test_framework_mismatch_then_driver_then_memory():
    report = Report(driver=Driver("450.51.06"), platform="linux",
                    gpus=(Gpu(0, "T4", total_bytes=16 * GiB, free_bytes=100 * MiB),),
                    frameworks=(_tf215("mismatch", used="8.6.0"),))
    ids = [d.id for d in diagnose(log=HANDLE, report=report)]
    assert ids[:3] == ["cudnn-version-mismatch", "cuda-driver-too-old", "gpu-out-of-memory"]
    without_framework_fault = Report(driver=Driver("450.51.06"), platform="linux", frameworks=(_tf215(),),
                                     gpus=(Gpu(0, "T4", total_bytes=16 * GiB, free_bytes=100 * MiB),))
    ids = [d.id for d in diagnose(log=HANDLE, report=without_framework_fault)]
    assert ids[:2] == ["cuda-driver-too-old", "gpu-out-of-memory"]


def test_framework_mismatch_fact_carries_both_versions():
    res = diagnose(log=HANDLE, report=Report(frameworks=(_tf215("mismatch", used="8.6.0"),)))
    top = res[0]
    assert top.id == "cudnn-version-mismatch"
    assert top.versions["loaded"] == "8.6.0" and top.versions["compiled"] == "8.9"
    assert any(e.startswith("fact: TensorFlow 2.15.0 was built with cuDNN 8.9; cuDNN 8.6.0 is in use "
                            "(/site/nvidia/cudnn/lib/libcudnn.so.8)") for e in top.evidence)


@pytest.mark.parametrize("verdict", ["ok", "unknown", "no-cudnn"])
def test_a_framework_that_accepts_its_cudnn_is_no_mismatch(verdict):
    res = diagnose(log=HANDLE, report=Report(frameworks=(_tf215(verdict),), gpus=(Gpu(0, "A100", total_bytes=40 * GiB,
                                                                                    free_bytes=30 * GiB),)))
    assert res[0].id == "cudnn-init-failed"
    assert "cudnn-version-mismatch" not in [d.id for d in res]


# --- NVML says there is no driver ---------------------------------------------------------------
NO_DRIVER = [
    # NVML's reason, does it mean no driver here?
    ("NVML Shared Library Not Found: no NVIDIA driver is installed on this machine", True),
    ("Driver Not Loaded", True),
    ("Insufficient Permissions", False),
    ("Unknown Error", False),
]


@pytest.mark.parametrize("reason, no_driver", NO_DRIVER, ids=[r.split(":")[0] for r, _ in NO_DRIVER])
def test_no_driver_is_said_on_a_failed_handle(reason, no_driver):
    res = diagnose(log=HANDLE, report=Report(driver=Unavailable(reason)))
    top = res[0]
    assert top.id == "cudnn-init-failed"
    said = [e for e in top.evidence if "no NVIDIA driver on this machine" in e]
    if no_driver:
        assert said == [f"fact: no NVIDIA driver on this machine (NVML: {reason.split(':')[0]}); cuDNN cannot "
                        "create a handle without a GPU and its driver"]
        assert any(f.id == "upgrade-driver" and "NVIDIA GPU and driver" in f.title for f in top.fixes)
        # memory running out was only inferred from the generic failure: not without a driver
        assert "gpu-out-of-memory" not in [d.id for d in res]
    else:
        assert said == []
        assert "gpu-out-of-memory" in [d.id for d in res]


def test_no_driver_keeps_a_logged_out_of_memory():
    res = diagnose(log=OOM_LINE + "\n" + HANDLE, report=Report(driver=Unavailable("Driver Not Loaded")))
    assert "gpu-out-of-memory" in [d.id for d in res]


@pytest.mark.parametrize("log, diag", [(INTERNAL, "cudnn-internal-error"),
                                       ("RuntimeError: cuDNN error: CUDNN_STATUS_EXECUTION_FAILED", "cudnn-execution-failed"),
                                       (OOM_LINE, "gpu-out-of-memory")])
def test_no_driver_is_said_on_each_failure_that_needs_a_handle(log, diag):
    res = diagnose(log=log, report=Report(driver=Unavailable("NVML Shared Library Not Found: libnvidia-ml.so.1: cannot "
                                                             "open shared object file")))
    d = next(d for d in res if d.id == diag)
    assert ("fact: no NVIDIA driver on this machine (NVML: NVML Shared Library Not Found); cuDNN cannot create a handle "
            "without a GPU and its driver") in d.evidence
    (fix,) = [f for f in d.fixes if f.id == "upgrade-driver"]
    assert fix.title == "Run on a machine with an NVIDIA GPU and driver"
    assert "nvidia-smi must list the GPU" in fix.action and "Colab: Runtime > Change runtime type" in fix.action
    assert fix.restart_required is True


# --- the mapped cuDNN, as facts on the diagnoses about which cuDNN is loaded ----------------------
def _lib(version, path="/site/nvidia/cudnn/lib/libcudnn.so.9", reached=None, owner="pip: nvidia-cudnn-cu12 9.1.0.70"):
    name = path.rsplit("/", 1)[1]
    return LibraryCopy(path, name, name, version, owner=owner, loaded=True, is_main=True,
                       reached_version=reached)


MAPPED = [
    # mapped copies, fact lines expected on a failed handle
    ([_lib("9.1.0")], ["fact: libcudnn.so.9 9.1.0 is mapped from /site/nvidia/cudnn/lib/libcudnn.so.9 "
                       "(pip: nvidia-cudnn-cu12 9.1.0.70)"]),
    ([_lib(None)], ["fact: libcudnn.so.9 (version unknown) is mapped from /site/nvidia/cudnn/lib/libcudnn.so.9 "
                    "(pip: nvidia-cudnn-cu12 9.1.0.70)"]),
    ([_lib("9.1.0", reached="9.1.0")], ["fact: libcudnn.so.9 9.1.0 is mapped from /site/nvidia/cudnn/lib/libcudnn.so.9 "
                                        "(pip: nvidia-cudnn-cu12 9.1.0.70)"]),
    ([_lib("9.1.0", reached="9.3.0")], ["fact: libcudnn.so.9 9.1.0 is mapped from /site/nvidia/cudnn/lib/libcudnn.so.9 "
                                        "(pip: nvidia-cudnn-cu12 9.1.0.70); calls through it reach 9.3.0"]),
]


@pytest.mark.parametrize("libs, lines", MAPPED, ids=["plain", "no-version", "reach-same", "reach-other"])
def test_the_mapped_cudnn_is_a_fact(libs, lines):
    res = diagnose(log=HANDLE, report=Report(cudnn_loaded=tuple(libs)))
    assert _facts(res[0]) == lines


def test_at_most_three_mapped_copies_and_the_one_in_use():
    libs = tuple(_lib(f"9.{i}.0", path=f"/c{i}/libcudnn.so.9", owner="system") for i in range(1, 5))
    facts = _facts(diagnose(log=HANDLE, report=Report(cudnn_loaded=libs))[0])
    assert [f for f in facts if "is mapped from" in f] == [f"fact: libcudnn.so.9 9.{i}.0 is mapped from /c{i}/libcudnn.so.9 "
                                                          "(system)" for i in (1, 2, 3)]
    # several copies: which one calls reach (without the in-process measurement: the first mapped)
    assert "fact: the cuDNN in use is 9.1.0 at /c1/libcudnn.so.9" in facts
    two = (_lib("9.1.0", path="/a/libcudnn.so.9", reached="9.3.0"), _lib("9.3.0", path="/b/libcudnn.so.9"))
    facts = _facts(diagnose(log=HANDLE, report=Report(cudnn_loaded=two))[0])
    assert "fact: the cuDNN in use is 9.1.0 at /a/libcudnn.so.9 (its calls reach 9.3.0)" in facts


@pytest.mark.parametrize("log, diag", [(HANDLE, "cudnn-init-failed"), (VERSION_LINE_UNSTAMPED, "cudnn-version-mismatch"),
                                       ("Could not load library libcudnn_cnn_infer.so.8. Error: libcudnn_cnn_infer.so.8: "
                                        "cannot open shared object file: No such file or directory",
                                        "cudnn-sublibrary-load-failed"),
                                       ("Could not load dynamic library 'libcudnn.so.8'; dlerror: libcudnn.so.8: cannot "
                                        "open shared object file: No such file or directory", "cudnn-library-not-found")])
def test_the_mapped_cudnn_is_said_on_the_diagnoses_about_loading(log, diag):
    res = diagnose(log=log, report=Report(cudnn_loaded=(_lib("8.9.4", path="/x/libcudnn.so.8"),)))
    d = next(d for d in res if d.id == diag)
    assert any(e.startswith("fact: libcudnn.so.8 8.9.4 is mapped from /x/libcudnn.so.8") for e in d.evidence)


def test_the_mapped_cudnn_is_not_said_on_an_internal_error():
    res = diagnose(log=INTERNAL, report=Report(cudnn_loaded=(_lib("9.1.0"),)))
    assert not any("is mapped from" in e for d in res for e in d.evidence)


LOGGED = [
    # mapped version (and reached), the log's loaded version, does the diagnosis say they disagree?
    ("8.9.4", None, "8.0.5", True),
    ("8.0.5", None, "8.0.5", False),
    ("8.0.5.39", None, "8.0.5", False),  # the same release, more digits
    ("8.9.4", "8.0.5", "8.0.5", False),  # calls reach the logged one
]


@pytest.mark.parametrize("mapped, reached, logged, disagree", LOGGED, ids=[f"{m}-{r}-{lg}" for m, r, lg, _ in LOGGED])
def test_the_log_and_the_live_facts_disagree(mapped, reached, logged, disagree):
    assert logged == "8.0.5"
    res = diagnose(log=VERSION_LINE_UNSTAMPED, report=Report(cudnn_loaded=(_lib(mapped, path="/x/libcudnn.so.8", reached=reached),)))
    notes = [e for e in res[0].evidence if e.startswith("note: the log says cuDNN 8.0.5 was loaded")]
    if disagree:
        assert notes == [f"note: the log says cuDNN 8.0.5 was loaded, but this kernel's cuDNN calls reach {mapped}: the "
                         "message came from another process, or a library loaded another copy privately (check with "
                         "%cudnn_check)"]
    else:
        assert notes == []


# =================================================================================================
# diagnose._refine_by_call, _note_missing_driver, _refine_with_facts and
# _diagnosis (what a caller sees: ids in rank order, titles, facts, the fixes offered)
# =================================================================================================


# PyTorch c10::Error backtrace: "Exception raised from <function> at <file>:<line>" (knowledge/calls.py)
TORCH_STREAM = ("RuntimeError: cuDNN error: CUDNN_STATUS_INTERNAL_ERROR\nException raised from cudnnSetStream at "
                "../aten/src/ATen/cudnn/Handle.cpp:9 (most recent call first):")

CALL_AMONG_OTHERS = [
    # log, exception, ids in rank order, the top diagnosis's title (None: not checked)
    # cuDNN API reference, cudnnCreate: a bare INTERNAL_ERROR from it is a handle that could not be
    # created, whatever else the log said first (here TensorFlow's version line, ranked above it)
    (VERSION_LINE_UNSTAMPED, _ort("CUDNN_STATUS_INTERNAL_ERROR", "cudnnCreate"),
     ["cudnn-version-mismatch", "cudnn-init-failed", "cudnn-internal-error"], None),
    # cudnnSetStream fails on a context an earlier CUDA error broke: the bare status is refined even
    # when TensorFlow's own wording ("Could not create cudnn handle", kept as it is) came first
    (HANDLE, TORCH_STREAM, ["cudnn-stream-set-failed", "cudnn-init-failed", "cudnn-internal-error", "gpu-out-of-memory"],
     "cuDNN could not attach to the CUDA stream (cudnnSetStream returned CUDNN_STATUS_INTERNAL_ERROR)"),
]


@pytest.mark.parametrize("log, exception, ids, title", CALL_AMONG_OTHERS, ids=["after-version-line", "after-own-wording"])
def test_the_failing_call_refines_a_bare_status_found_after_other_diagnoses(log, exception, ids, title):
    res = diagnose(log=log, exception=exception)
    assert [d.id for d in res] == ids
    if title is not None:
        assert res[0].title == title


ALGO_SEARCH_MEMORY = [
    # free, total, ids in rank order. Find*/Get*Algorithm allocate every candidate's workspace
    # (knowledge/calls.py REFINES "algo-search"): memory is added as the second possibility; a nearly
    # full GPU (< 256 MiB free, docs/report.md "A failing cell's diagnosis with the live facts") then puts it
    # first, on the one memory diagnosis.
    # (on 4 GiB 5 % is 204.8 MiB: the 256 MiB edge decides)
    (255 * MiB, 4 * GiB, ["gpu-out-of-memory", "cudnn-internal-error"]),
    (256 * MiB, 4 * GiB, ["cudnn-internal-error", "gpu-out-of-memory"]),
]


@pytest.mark.parametrize("free, total, ids", ALGO_SEARCH_MEMORY, ids=["255MiB", "256MiB"])
def test_a_nearly_full_gpu_speaks_to_the_memory_an_algorithm_search_suggests(free, total, ids):
    log = _ort("CUDNN_STATUS_INTERNAL_ERROR", "cudnnFindConvolutionForwardAlgorithmEx")
    res = diagnose(log=log, report=Report(gpus=(Gpu(0, "T4", total_bytes=total, free_bytes=free),)))
    assert [d.id for d in res] == ids
    oom = next(d for d in res if d.id == "gpu-out-of-memory")
    assert oom.evidence[0] == log
    assert (_facts(oom) == [f"fact: GPU 0 (T4) has {free // MiB} MiB free of 4.0 GiB"]) is (free < 256 * MiB)


NO_DRIVER_ONLY = [
    # log, ids in rank order. NVML "Not Found" (NVML_ERROR_LIBRARY_NOT_FOUND): no driver here. Memory
    # merely inferred next to a generic failure is dropped (TensorFlow's failed handle); a status that
    # is itself memory (ALLOC_FAILED from cudnnCreate, ONNX Runtime's line) is the only diagnosis and stays.
    (_ort("CUDNN_STATUS_ALLOC_FAILED", "cudnnCreate"), ["gpu-out-of-memory"]),
    (HANDLE, ["cudnn-init-failed"]),
]


@pytest.mark.parametrize("log, ids", NO_DRIVER_ONLY, ids=["alloc-failed-alone", "handle-with-inferred-memory"])
def test_no_driver_never_drops_the_only_diagnosis(log, ids):
    res = diagnose(log=log, report=Report(driver=Unavailable("NVML Shared Library Not Found")))
    assert [d.id for d in res] == ids
    assert _facts(res[0]) == ["fact: no NVIDIA driver on this machine (NVML: NVML Shared Library Not Found); cuDNN "
                              "cannot create a handle without a GPU and its driver"]


# XLA cuda_dnn.cc: "There was an error before creating cudnn handle" (a CUDA error already pending;
# knowledge/init.py: cudnn-init-failed, a too-old driver also possible).
BEFORE_HANDLE = ("E1123 19:13:25.034265  814362 cuda_dnn.cc:502] There was an error before creating cudnn handle (500): "
                 "cudaErrorSymbolNotFound : named symbol not found")
MISMATCH_THEN_DRIVER = [
    # driver, ids in rank order. Floor of CUDA 12.x on Linux: 525.60.13 (docs/facts.md "Drivers"). A
    # framework whose compiled cuDNN refuses the one in use explains the failure before the driver
    # does, even when the log itself already named the driver as possible.
    ("525.60.12", ["cudnn-version-mismatch", "cuda-driver-too-old", "cudnn-init-failed"]),
    ("525.60.13", ["cudnn-version-mismatch", "cudnn-init-failed", "cuda-driver-too-old"]),
]


@pytest.mark.parametrize("driver, ids", MISMATCH_THEN_DRIVER, ids=["below-floor", "at-floor"])
def test_a_framework_mismatch_outranks_a_driver_the_log_already_suggested(driver, ids):
    report = Report(frameworks=(_tf215("mismatch", cuda="12.2", used="8.6.0"),), driver=Driver(driver))
    res = diagnose(log=BEFORE_HANDLE, report=report)
    assert [d.id for d in res] == ids
    drv = next(d for d in res if d.id == "cuda-driver-too-old")
    below = [f"fact: NVIDIA driver {driver} is below 525.60.13, the minimum for CUDA 12.2"]
    assert _facts(drv) == (below if driver == "525.60.12" else [])


WHEEL_FOR_CUDA = [
    # the framework's CUDA (live facts), the compiled cuDNN in the log, the wheel the fix installs.
    # PyPI: nvidia-cudnn-cu11 has cuDNN 8.5-8.9 and 9.x, -cu12 8.9 and 9.x, -cu13 9.12 on; with no
    # known CUDA a cuDNN 8.9 is paired with CUDA 12 (fixes/advice.py _cuda_major_for, docs/facts.md).
    ("11.8", "8.9.4", "nvidia-cudnn-cu11<9,>=8.9"),
    ("12.2", "8.9.4", "nvidia-cudnn-cu12<9,>=8.9"),
    (None, "8.9.4", "nvidia-cudnn-cu12<9,>=8.9"),
    ("11.8", "8.6.0", "nvidia-cudnn-cu11<9,>=8.6"),
]


@pytest.mark.parametrize("cuda, compiled, req", WHEEL_FOR_CUDA, ids=[f"{c}-{v}" for c, v, _ in WHEEL_FOR_CUDA])
def test_the_cudnn_wheel_to_install_follows_the_frameworks_cuda(cuda, compiled, req):
    log = (f"E tensorflow/stream_executor/cuda/cuda_dnn.cc:359] Loaded runtime CuDNN library: 8.5.0 but source was "
           f"compiled with: {compiled}.")
    res = diagnose(log=log, report=Report(frameworks=(_tf215("ok", cuda=cuda, used="8.9.4"),)))
    fix = next(f for f in res[0].fixes if f.id == "install-matching-cudnn")
    assert fix.action == f'python -m pip install "{req}"'
    assert fix.applicable is True


ADVICE_ONLY_FOR_A_REASON = [
    # log, fix id, its reason. A fix the registry could run from a button stays advice only when it
    # says why (model.Fix.reason): the version to install is unknown from the text (TensorFlow's rule
    # sentence alone, cuda_dnn.cc), or the library path is read at process start.
    ("E tensorflow/stream_executor/cuda/cuda_dnn.cc:359] CuDNN library needs to have matching major version and "
     "equal or higher minor version.", "install-matching-cudnn", "the needed version is not known from the text"),
    (VERSION_LINE_UNSTAMPED, "remove-shadowing-dir", "the library path is read at process start"),
]


@pytest.mark.parametrize("log, fid, reason", ADVICE_ONLY_FOR_A_REASON, ids=["version-unknown", "library-path"])
def test_a_runnable_fix_with_a_reason_stays_advice_only(log, fid, reason):
    fix = next(f for f in diagnose(log=log)[0].fixes if f.id == fid)
    assert fix.applicable is False
    assert fix.reason == reason
