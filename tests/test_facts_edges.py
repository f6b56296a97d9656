"""diagnose() joining a log with this kernel's live facts, at the edges of each rule (issue 20:
mutation testing of ``diagnose._refine_with_facts`` / ``_note_missing_driver``).

What the facts change is stated in docs/report.md ("A failing cell's
diagnosis with the live facts"):

* a GPU is nearly full when it has less than 256 MiB free or less than 5 % of its memory free; a
  generic failure (a handle that could not be created, an internal error) is then explained as
  memory running out;
* every GPU has plenty free when each has at least 1 GiB and at least 10 % of its memory free; an
  internal error is then not memory running out (the "free GPU memory" fix is not offered);
* a driver below the floor of a framework's CUDA explains a generic failure (floors: docs/facts.md
  "Drivers", NVIDIA's CUDA minor-version compatibility page: CUDA 13.x >= 580; 12.x >=
  525.60.13 on Linux, 527.41 on Windows; 11.x >= 450.80.02 / 452.39);
* a framework whose compiled cuDNN does not accept the one in use explains it before the driver,
  and the driver before memory; a specific diagnosis from the log (a version mismatch) is not
  replaced by a fact about the driver or memory;
* NVML reporting no driver (its "Not Found" / "Not Loaded" errors, NVML API reference
  ``NVML_ERROR_LIBRARY_NOT_FOUND`` / ``NVML_ERROR_DRIVER_NOT_LOADED``) means no cuDNN handle can
  be created here; memory running out, only inferred from a generic failure, is then dropped.

Every case runs the real engine on the real log lines of TensorFlow and PyTorch (tests/test_diagnose.py).
"""

from __future__ import annotations

import pytest

from cudnn_magic.engines.diagnose import diagnose
from cudnn_magic.model import Driver, FrameworkBuild, Gpu, LibraryCopy, Report, Unavailable

MiB, GiB = 2**20, 2**30
HANDLE = "E tensorflow/stream_executor/cuda/cuda_dnn.cc:329] Could not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR"
INTERNAL = "RuntimeError: cuDNN error: CUDNN_STATUS_INTERNAL_ERROR"
VERSION_LINE = ("E tensorflow/stream_executor/cuda/cuda_dnn.cc:359] Loaded runtime CuDNN library: 8.0.5 but source was "
                "compiled with: 8.1.0.  CuDNN library needs to have matching major version and equal or higher minor "
                "version.")
OOM_LINE = "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 15.78 GiB total capacity)"


def _tf(verdict: str = "ok", cuda: str = "12.2", used: str = "8.9.4") -> FrameworkBuild:
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
    res = diagnose(log=VERSION_LINE, report=Report(gpus=(Gpu(0, "T4", total_bytes=16 * GiB, free_bytes=100 * MiB),)))
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
    report = Report(driver=Driver(driver, cuda), frameworks=(_tf(cuda=cuda),), platform=platform)
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
    for report in (Report(driver=Driver(None), frameworks=(_tf(),)),
                   Report(driver=Driver("450.51.06"), frameworks=(_tf(cuda=None),))):
        assert diagnose(log=HANDLE, report=report)[0].id == "cudnn-init-failed"


def test_driver_below_the_floor_does_not_replace_a_version_mismatch():
    res = diagnose(log=VERSION_LINE, report=Report(driver=Driver("450.51.06"), frameworks=(_tf(),), platform="linux"))
    assert [d.id for d in res] == ["cudnn-version-mismatch"]


# --- which fact explains a generic failure first ------------------------------------------------
def test_framework_mismatch_then_driver_then_memory():
    report = Report(driver=Driver("450.51.06"), platform="linux",
                    gpus=(Gpu(0, "T4", total_bytes=16 * GiB, free_bytes=100 * MiB),),
                    frameworks=(_tf("mismatch", used="8.6.0"),))
    ids = [d.id for d in diagnose(log=HANDLE, report=report)]
    assert ids[:3] == ["cudnn-version-mismatch", "cuda-driver-too-old", "gpu-out-of-memory"]
    without_framework_fault = Report(driver=Driver("450.51.06"), platform="linux", frameworks=(_tf(),),
                                     gpus=(Gpu(0, "T4", total_bytes=16 * GiB, free_bytes=100 * MiB),))
    ids = [d.id for d in diagnose(log=HANDLE, report=without_framework_fault)]
    assert ids[:2] == ["cuda-driver-too-old", "gpu-out-of-memory"]


def test_framework_mismatch_fact_carries_both_versions():
    res = diagnose(log=HANDLE, report=Report(frameworks=(_tf("mismatch", used="8.6.0"),)))
    top = res[0]
    assert top.id == "cudnn-version-mismatch"
    assert top.versions["loaded"] == "8.6.0" and top.versions["compiled"] == "8.9"
    assert any(e.startswith("fact: TensorFlow 2.15.0 was built with cuDNN 8.9; cuDNN 8.6.0 is in use "
                            "(/site/nvidia/cudnn/lib/libcudnn.so.8)") for e in top.evidence)


@pytest.mark.parametrize("verdict", ["ok", "unknown", "no-cudnn"])
def test_a_framework_that_accepts_its_cudnn_is_no_mismatch(verdict):
    res = diagnose(log=HANDLE, report=Report(frameworks=(_tf(verdict),), gpus=(Gpu(0, "A100", total_bytes=40 * GiB,
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


@pytest.mark.parametrize("log, diag", [(HANDLE, "cudnn-init-failed"), (VERSION_LINE, "cudnn-version-mismatch"),
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


@pytest.mark.parametrize("mapped, reached, logged, disagree", LOGGED, ids=[f"{m}-{r}-{l}" for m, r, l, _ in LOGGED])
def test_the_log_and_the_live_facts_disagree(mapped, reached, logged, disagree):
    assert logged == "8.0.5"
    res = diagnose(log=VERSION_LINE, report=Report(cudnn_loaded=(_lib(mapped, path="/x/libcudnn.so.8", reached=reached),)))
    notes = [e for e in res[0].evidence if e.startswith("note: the log says cuDNN 8.0.5 was loaded")]
    if disagree:
        assert notes == [f"note: the log says cuDNN 8.0.5 was loaded, but this kernel's cuDNN calls reach {mapped}: the "
                         "message came from another process, or a library loaded another copy privately (check with "
                         "%cudnn_check)"]
    else:
        assert notes == []


# =================================================================================================
# issue 20, second round: diagnose._refine_by_call, _note_missing_driver, _refine_with_facts and
# _diagnosis (what a caller sees: ids in rank order, titles, facts, the fixes offered)
# =================================================================================================
def _ort(status, call):
    # ONNX Runtime core/providers/cuda/cuda_call.cc: "CUDNN failure <n>: <status> ; GPU=... ; expr=<call>(...);"
    return f"CUDNN failure 4: {status} ; GPU=0 ; hostname=h ; file=cudnn_common.cc ; line=52 ; expr={call}(h);"


# PyTorch c10::Error backtrace: "Exception raised from <function> at <file>:<line>" (knowledge/calls.py)
TORCH_STREAM = ("RuntimeError: cuDNN error: CUDNN_STATUS_INTERNAL_ERROR\nException raised from cudnnSetStream at "
                "../aten/src/ATen/cudnn/Handle.cpp:9 (most recent call first):")

CALL_AMONG_OTHERS = [
    # log, exception, ids in rank order, the top diagnosis's title (None: not checked)
    # cuDNN API reference, cudnnCreate: a bare INTERNAL_ERROR from it is a handle that could not be
    # created, whatever else the log said first (here TensorFlow's version line, ranked above it)
    (VERSION_LINE, _ort("CUDNN_STATUS_INTERNAL_ERROR", "cudnnCreate"),
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
    report = Report(frameworks=(_tf("mismatch", cuda="12.2", used="8.6.0"),), driver=Driver(driver))
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
    res = diagnose(log=log, report=Report(frameworks=(_tf("ok", cuda=cuda, used="8.9.4"),)))
    fix = next(f for f in res[0].fixes if f.id == "install-matching-cudnn")
    assert fix.action == f'python -m pip install "{req}"'
    assert fix.applicable is True


ADVICE_ONLY_FOR_A_REASON = [
    # log, fix id, its reason. A fix the registry could run from a button stays advice only when it
    # says why (model.Fix.reason): the version to install is unknown from the text (TensorFlow's rule
    # sentence alone, cuda_dnn.cc), or the library path is read at process start.
    ("E tensorflow/stream_executor/cuda/cuda_dnn.cc:359] CuDNN library needs to have matching major version and "
     "equal or higher minor version.", "install-matching-cudnn", "the needed version is not known from the text"),
    (VERSION_LINE, "remove-shadowing-dir", "the library path is read at process start"),
]


@pytest.mark.parametrize("log, fid, reason", ADVICE_ONLY_FOR_A_REASON, ids=["version-unknown", "library-path"])
def test_a_runnable_fix_with_a_reason_stays_advice_only(log, fid, reason):
    fix = next(f for f in diagnose(log=log)[0].fixes if f.id == fid)
    assert fix.applicable is False
    assert fix.reason == reason
