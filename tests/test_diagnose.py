"""The diagnosis engine: joining text with live facts, titles, fixes, warnings, renderers."""

from __future__ import annotations

import json

import pytest

from cudnn_magic.engines.diagnose import CATALOGUE, FIX_IDS, diagnose, gpu_unused_warnings
from cudnn_magic.model import Diagnosis, Driver, FrameworkBuild, Gpu, LibraryCopy, Report, Resolution, Unavailable
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

    from support import corpus_dir

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
