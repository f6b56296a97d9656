"""The knowledge base: every catalogue id is covered, each wording family of every era and
log format matches with its versions, and matching stays linear on hostile input."""

from __future__ import annotations

import re
import time

import pytest

from cudnn_magic.engines.diagnose import CATALOGUE, diagnose
from cudnn_magic.knowledge import FAMILIES, FIX_IDS, scan, signatures

SPEC_IDS = set(CATALOGUE)


def test_every_catalogue_id_has_signatures():
    covered = {s.diagnosis for s in signatures()} | {i for s in signatures() for i, _ in s.also}
    assert SPEC_IDS <= covered, SPEC_IDS - covered


def test_signatures_are_well_formed():
    names = set()
    for s in signatures():
        assert s.name not in names, s.name
        names.add(s.name)
        assert s.family in FAMILIES
        assert s.diagnosis in SPEC_IDS
        assert s.keywords and all(k == k.lower() for k in s.keywords)
        assert s.patterns and s.source
        assert all(f in FIX_IDS for f in s.fixes), s.name
        for p in s.patterns + s.extras:
            # no nested unbounded quantifiers: linear-time patterns only
            assert not re.search(r"\)[*+]\)?[*+]", p.pattern), p.pattern
            assert ".*" not in p.pattern and ".+" not in p.pattern, p.pattern


def test_fix_ids_documented():
    for fid, desc in FIX_IDS.items():
        assert re.fullmatch(r"[a-z][a-z0-9-]+", fid) and desc


TF = "tensorflow/stream_executor/cuda/cuda_dnn.cc:359]"
CASES = [
    # --- TensorFlow / XLA version lines, every era and path
    ("E tensorflow/stream_executor/cuda/cuda_dnn.cc:347] Loaded runtime CuDNN library: 6021 (compatibility version 6000) "
     "but source was compiled with 5110 (compatibility version 5100).  If using a binary install, upgrade your CuDNN library to match.",
     "cudnn-version-mismatch", {"loaded": "6.0.21", "compiled": "5.1.10", "compiled_compat": "5.1"}),
    ("2018-06-01 10:00:00.000000: E tensorflow/stream_executor/cuda/cuda_dnn.cc:455] Loaded runtime CuDNN library: 7103 "
     "(compatibility version 7100) but source was compiled with 7005 (compatibility version 7000).",
     "cudnn-version-mismatch", {"loaded": "7.1.3", "compiled": "7.0.5"}),
    ("E1103 12:00:00.000000 139 cuda_dnn.cc:396] Loaded runtime CuDNN library: 7.1.4 but source was compiled with: 7.2.1.  "
     "CuDNN library major and minor version needs to match or have higher minor version in case of CuDNN 7.0 or later version.",
     "cudnn-version-mismatch", {"loaded": "7.1.4", "compiled": "7.2.1"}),
    ("2023-03-01 10:00:00.000: E tensorflow/compiler/xla/stream_executor/cuda/cuda_dnn.cc:417] Loaded runtime CuDNN library: "
     "8.1.0 but source was compiled with: 8.6.0.  CuDNN library needs to have matching major version and equal or higher minor version.",
     "cudnn-version-mismatch", {"loaded": "8.1.0", "compiled": "8.6.0"}),
    ("E0000 00:00:1700000000.000000   4242 cuda_dnn.cc:535] Loaded runtime CuDNN library: 9.1.0 but source was compiled "
     "with: 9.3.0.  CuDNN library needs to have matching major version and equal or higher minor version.",
     "cudnn-version-mismatch", {"loaded": "9.1.0", "compiled": "9.3.0"}),
    ("E external/xla/xla/stream_executor/cuda/cuda_dnn.cc:439] Loaded runtime CuDNN library: 8.9.2 but source was compiled with: 9.1.1.",
     "cudnn-version-mismatch", {"loaded": "8.9.2", "compiled": "9.1.1"}),
    # --- PyTorch
    ("RuntimeError: cuDNN version incompatibility: PyTorch was compiled  against (9, 1, 0) but found runtime version (8, 9, 2). "
     "PyTorch already comes bundled with cuDNN. One option to resolving this error is to ensure PyTorch can find the bundled cuDNN.",
     "cudnn-version-mismatch", {"loaded": "8.9.2", "compiled": "9.1.0"}),
    ("RuntimeError: cuDNN version mismatch: PyTorch was compiled against 7102 but linked against 7005",
     "cudnn-version-mismatch", {"loaded": "7.0.5", "compiled": "7.1.2"}),
    # --- JAX
    ("CUDA backend failed to initialize: Found cuDNN version 8600, but JAX was built against version 8700, which is newer. "
     "The copy of cuDNN that is installed must be at least as new as the version against which JAX was built.",
     "cudnn-version-mismatch", {"loaded": "8.6.0", "compiled": "8.7.0"}),
    ("Outdated cuDNN installation found. Version JAX was built against: 8600, Minimum supported: 8600, Installed version: 8500. "
     "The local installation version must be no lower than 8600.",
     "cudnn-version-mismatch", {"loaded": "8.5.0", "minimum": "8.6.0"}),
    # --- MXNet / Paddle / symbols
    ("[12:00:00] src/common/cuda/utils.cc:xx: cuDNN lib mismatch: linked-against version 7605 != compiled-against version 7501.  "
     "Set MXNET_CUDNN_LIB_CHECKING=0 to quiet this warning.",
     "cudnn-version-mismatch", {"loaded": "7.6.5", "compiled": "7.5.1"}),
    ("W0101 gpu_resources.cc:119] The installed Paddle is compiled with CUDNN 8.2, but CUDNN version in your machine is 7.6, "
     "which may cause serious incompatible bug.", "cudnn-version-mismatch", {"loaded": "7.6", "compiled": "8.2"}),
    ("ImportError: /usr/lib/python3/dist-packages/caffe2/libcaffe2_gpu.so: undefined symbol: cudnnSetRNNDescriptor_v6",
     "cudnn-version-mismatch", {"symbol": "cudnnSetRNNDescriptor_v6"}),
    # --- library not found
    ("2021-01-01 W tensorflow/stream_executor/platform/default/dso_loader.cc:60] Could not load dynamic library 'libcudnn.so.8'; "
     "dlerror: libcudnn.so.8: cannot open shared object file: No such file or directory", "cudnn-library-not-found",
     {"soname": "libcudnn.so.8"}),
    ("I tensorflow/stream_executor/dso_loader.cc:99] Couldn't open CUDA library libcudnn.so.5. LD_LIBRARY_PATH: /usr/local/cuda/lib64",
     "cudnn-library-not-found", {"soname": "libcudnn.so.5"}),
    ("I c:\\tf_jenkins\\tensorflow\\stream_executor\\cuda\\cuda_dnn.cc:3517] Unable to load cuDNN DSO", "cudnn-library-not-found", {}),
    ("W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic library 'cudnn64_8.dll'; "
     "dlerror: cudnn64_8.dll not found", "cudnn-library-not-found", {"soname": "cudnn64_8.dll"}),
    ("[E:onnxruntime:Default, provider_bridge_ort.cc:1548 TryGetProviderInfo_CUDA] Failed to load library "
     "libonnxruntime_providers_cuda.so with error: libcudnn.so.9: cannot open shared object file: No such file or directory",
     "cudnn-library-not-found", {"soname": "libcudnn.so.9"}),
    ("ImportError: libcudnn.so.8: cannot open shared object file: No such file or directory", "cudnn-library-not-found",
     {"soname": "libcudnn.so.8"}),
    ("RuntimeError: (PreconditionNotMet) The third-party dynamic library (libcudnn.so) that Paddle depends on is not "
     "configured correctly. (error code is libcudnn.so: cannot open shared object file: No such file or directory)",
     "cudnn-library-not-found", {}),
    ("RuntimeError: Unable to load cuDNN. Is it installed?", "cudnn-library-not-found", {}),
    # --- sub-libraries
    ("Could not load library libcudnn_cnn_infer.so.8. Error: libnvrtc.so: cannot open shared object file: No such file or directory",
     "cudnn-sublibrary-load-failed", {"library": "libcudnn_cnn_infer.so.8", "dependency": "libnvrtc.so"}),
    ("Could not locate cudnn_ops_infer64_8.dll. Please make sure it is in your library path!", "cudnn-sublibrary-load-failed",
     {"library": "cudnn_ops_infer64_8.dll"}),
    ("Could not load library cudnn_cnn_infer64_8.dll. Error code 193", "cudnn-sublibrary-load-failed",
     {"library": "cudnn_cnn_infer64_8.dll"}),
    ("Could not locate zlibwapi.dll. Please make sure it is in your library path!", "cudnn-sublibrary-load-failed", {}),
    ("Unable to load any of {libcudnn_cnn.so.9.1.0, libcudnn_cnn.so.9.1, libcudnn_cnn.so.9, libcudnn_cnn.so}",
     "cudnn-sublibrary-load-failed", {"library": "libcudnn_cnn.so.9.1.0"}),
    ("Invalid handle. Cannot load symbol cudnnGetVersion", "cudnn-sublibrary-load-failed", {"symbol": "cudnnGetVersion"}),
    ("RuntimeError: cuDNN error: CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED", "cudnn-sublibrary-load-failed", {"status_code": "1008"}),
    ("OSError: /opt/cudnn/lib/libcudnn_ops.so.9: undefined symbol: cudnnGetLastErrorString, version libcudnn_graph.so.9",
     "cudnn-sublibrary-load-failed", {}),
    # --- init / handle
    (f"E {TF[:-1]}] Could not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR", "cudnn-init-failed", {"status": "CUDNN_STATUS_INTERNAL_ERROR"}),
    ("E tensorflow/stream_executor/cuda/cuda_dnn.cc:332] could not create cudnn handle: CUDNN_STATUS_NOT_INITIALIZED",
     "cudnn-init-failed", {}),
    ("Could not create cudnn handle: CUDNN_STATUS_ALLOC_FAILED", "gpu-out-of-memory", {}),
    ("jaxlib.xla_extension.XlaRuntimeError: FAILED_PRECONDITION: DNN library initialization failed. Look at the errors above for more details.",
     "cudnn-init-failed", {}),
    ("tensorflow.python.framework.errors_impl.UnknownError: Failed to get convolution algorithm. This is probably because cuDNN "
     "failed to initialize, so try looking to see if a warning log message was printed above.", "cudnn-init-failed", {}),
    ("tensorflow.python.framework.errors_impl.UnimplementedError: DNN library is not found.", "cudnn-init-failed", {}),
    ("RuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED", "cudnn-init-failed", {}),
    ("cupy.cuda.cudnn.CuDNNError: CUDNN_STATUS_NOT_INITIALIZED: b'CUDNN_STATUS_NOT_INITIALIZED'", "cudnn-init-failed", {}),
    # --- memory
    ("E cuda_dnn.cc:329] Could not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR\nE cuda_dnn.cc:333] Memory usage: 1234 bytes free, 8589934592 bytes total.",
     "gpu-out-of-memory", {"free_bytes": "1234"}),
    ("2024-01-01 E external/xla/xla/service/gpu/conv_algorithm_picker.cc] Failed to determine best cudnn convolution algorithm for: "
     "%cudnn-conv = ... Original error: RESOURCE_EXHAUSTED: Out of memory while trying to allocate", "gpu-out-of-memory", {}),
    ("RuntimeError: cuDNN error: CUDNN_STATUS_ALLOC_FAILED", "gpu-out-of-memory", {}),
    # --- driver
    ("E cuda_dnn.cc:385] could not create cudnn handle: CUDNN_STATUS_NOT_INITIALIZED\nE cuda_dnn.cc:393] possibly insufficient driver version: 384.69.0",
     "cuda-driver-too-old", {"driver": "384.69.0"}),
    ("cuDNN error: CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER", "cuda-driver-too-old", {}),
    # --- stream
    ("F tensorflow/stream_executor/cuda/cuda_dnn.cc:194] Check failed: status == CUDNN_STATUS_SUCCESS (7 vs. 0)Failed to set cuDNN stream.",
     "cudnn-stream-set-failed", {"status_code": "7"}),
    # --- execution / unsupported / params / devices / internal / arch
    ("RuntimeError: cuDNN error: CUDNN_STATUS_EXECUTION_FAILED", "cudnn-execution-failed", {}),
    ("tensorflow.python.framework.errors_impl.InternalError: cuDNN launch failure : input shape ([1,64,64,3]) [Op:Conv2D]",
     "cudnn-execution-failed", {}),
    ("RuntimeError: Unable to find a valid cuDNN algorithm to run convolution", "cudnn-unsupported-config", {}),
    ("RuntimeError: GET was unable to find an engine to execute this computation", "cudnn-unsupported-config", {"mode": "GET"}),
    ("RuntimeError: cuDNN error: CUDNN_STATUS_NOT_SUPPORTED. This error may appear if you passed in a non-contiguous input.",
     "cudnn-unsupported-config", {}),
    ("RuntimeError: cuDNN Frontend error: [cudnn_frontend] Error: No execution plans support the graph.", "cudnn-unsupported-config", {}),
    ("RuntimeError: cuDNN status 3000", "cudnn-unsupported-config", {"status": "CUDNN_STATUS_NOT_SUPPORTED"}),
    ("cudnn_status: CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH", "cudnn-bad-param", {}),
    ("RuntimeError: cuDNN error: CUDNN_STATUS_MAPPING_ERROR", "tensors-on-different-devices", {}),
    ("mxnet.base.MXNetError: [10:00:00] src/operator/nn/./cudnn/cudnn_convolution-inl.h:123: Check failed: e == CUDNN_STATUS_SUCCESS (4 vs. 0) cuDNN: CUDNN_STATUS_INTERNAL_ERROR",
     "cudnn-internal-error", {}),
    ("cupy_backends.cuda.libs.cudnn.CuDNNError: CUDNN_STATUS_INTERNAL_ERROR: b'CUDNN_STATUS_INTERNAL_ERROR'", "cudnn-internal-error", {}),
    ("RuntimeError: cuDNN error: CUDNN_STATUS_ARCH_MISMATCH", "gpu-arch-unsupported", {}),
    ("运行时错误: cuDNN 错误: CUDNN_STATUS_BAD_PARAM（参数错误）", "cudnn-bad-param", {}),
]


@pytest.mark.parametrize("text,expected,versions", CASES, ids=[f"{i:03d}-{c[1]}" for i, c in enumerate(CASES)])
def test_wording_family(text, expected, versions):
    res = diagnose(log=text)
    assert res, "nothing matched"
    assert res[0].id == expected, [(d.id, d.score) for d in res]
    for k, v in versions.items():
        assert res[0].versions.get(k) == v, res[0].versions
    # the same text given as the exception, too
    res2 = diagnose(exception=text)
    assert res2 and res2[0].id == expected


@pytest.mark.parametrize("width", [60, 80, 100])
@pytest.mark.parametrize("text,expected,versions", [c for c in CASES if len(c[0]) > 110][:12])
def test_hard_wrapped(width, text, expected, versions):
    wrapped = "\n".join(text[i:i + width] for i in range(0, len(text), width))
    res = diagnose(log=wrapped)
    assert res and res[0].id == expected
    for k, v in versions.items():
        assert res[0].versions.get(k) == v


def test_hard_wrapped_status_name_split():
    res = diagnose(log="RuntimeError: cuDNN error: CUDNN_STAT\nUS_INTERNAL_ERROR\nmore text here that is not wrapped")
    assert res and res[0].id == "cudnn-internal-error"
    assert "CUDNN_STAT" in res[0].evidence[0]


def test_word_wrapped_sentence():
    import textwrap

    line = CASES[3][0]
    res = diagnose(log=textwrap.fill(line, 72))
    assert res and res[0].id == "cudnn-version-mismatch"
    assert res[0].versions["compiled"] == "8.6.0"


@pytest.mark.parametrize("text", [
    "E tensorflow/compiler/xla/stream_executor/cuda/cuda_dnn.cc:9342] Unable to register cuDNN factory: Attempting to register "
    "factory for plugin cuDNN when one has already been registered",
    "if env_cfg.get('cudnn_benchmark'):\nAttributeError: 'NoneType' object has no attribute 'get'",
    "torch.backends.cudnn.benchmark = True",
    "I tensorflow/stream_executor/platform/default/dso_loader.cc:53] Successfully opened dynamic library libcudnn.so.8",
    "RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasSgemm(...)`",
    "RuntimeError: cuda runtime error (35) : CUDA driver version is insufficient for CUDA runtime version",
    "RuntimeError: CUDA error: no kernel image is available for execution on the device",
    "Check failed: status == CUDNN_STATUS_SUCCESS",
    "cudnn status is fine, CUDNN_STATUS_SUCCESS",
])
def test_not_cudnn_faults(text):
    assert not [d.id for d in diagnose(exception=text, log=text) if d.id.startswith("cudnn-")]


def test_context_signals_count_next_to_cudnn():
    txt = ("RuntimeError: cuDNN error: CUDNN_STATUS_EXECUTION_FAILED\n"
           "RuntimeError: CUDA error: no kernel image is available for execution on the device")
    ids = [d.id for d in diagnose(log=txt)]
    assert "gpu-arch-unsupported" in ids


def test_evidence_is_quoted_from_the_input():
    text = "noise\n" + CASES[0][0] + "\nmore noise"
    res = diagnose(log=text)
    assert res[0].evidence[0] == CASES[0][0].strip()


def test_repeated_lines_and_long_lines_are_bounded():
    line = "E cuda_dnn.cc:1] Could not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR\n"
    hits = scan(line * 200_000)
    assert 1 <= len(hits) <= 300
    long_line = ("x" * 3_000_000) + " Loaded runtime CuDNN library: 8.0.5 but source was compiled with: 8.1.0. " + ("y" * 3_000_000)
    t = time.perf_counter()
    res = diagnose(log=long_line)
    assert time.perf_counter() - t < 5
    assert res[0].versions == {"loaded": "8.0.5", "compiled": "8.1.0"}


@pytest.mark.parametrize("evil", [
    "CUDNN_STATUS_" + "A" * 200_000,
    "Loaded runtime CuDNN library: " + "1." * 100_000,
    "Could not load library libcudnn_" + "a" * 100_000,
    "cuDNN version incompatibility: PyTorch was compiled  against (" + "1, " * 50_000,
    ("undefined symbol: cudnn" + "x" * 1000 + "\n") * 2000,
    "\x00\xff\ufffd" * 300_000,
])
def test_no_catastrophic_backtracking(evil):
    t = time.perf_counter()
    diagnose(exception=evil[:100_000], log=evil, traceback=evil[:10_000])
    assert time.perf_counter() - t < 10


def test_scan_never_raises_on_odd_strings():
    for s in ["", "\n", "\r\n" * 10, "\udcff\udc80 CUDNN_STATUS_BAD_PARAM", "\ud800", "é" * 1000 + " CUDNN_STATUS_BAD_PARAM"]:
        scan(s)
    res = diagnose(exception="\udcff\udc80 cuDNN error: CUDNN_STATUS_BAD_PARAM \ud800")
    assert res and res[0].id == "cudnn-bad-param"


def test_joined_pass_does_not_glue_unwrapped_lines():
    log = ("2019-01-01 E tensorflow/stream_executor/cuda/cuda_dnn.cc:373] Could not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR\n"
           "2019-01-01 E tensorflow/stream_executor/cuda/cuda_driver.cc:806] failed to allocate 3.77G (4046258176 bytes) from "
           "device: CUDA_ERROR_OUT_OF_MEMORY: out of memory")
    for d in diagnose(log=log):
        assert d.versions.get("status", "CUDNN_STATUS_INTERNAL_ERROR") == "CUDNN_STATUS_INTERNAL_ERROR"


def test_status_code_only_when_unambiguous():
    d = diagnose(exception="cudnn_status: CUDNN_STATUS_NOT_SUPPORTED")[0]
    assert "status_code" not in d.versions  # 9 in cuDNN 8, 3000 in cuDNN 9
    d = diagnose(exception="cudnn_status: CUDNN_STATUS_NOT_SUPPORTED_SHAPE")[0]
    assert d.versions["status_code"] == "3002"
