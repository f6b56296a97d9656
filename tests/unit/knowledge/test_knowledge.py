"""The knowledge base: every catalogue id is covered, each wording family of every era and
log format matches with its versions, and matching stays linear on hostile input."""

from __future__ import annotations

import re
import time

import pytest

from cudnn_magic import knowledge
from cudnn_magic.engines.diagnose import CATALOGUE, diagnose
from cudnn_magic.knowledge import FAMILIES, FIX_IDS, matcher, signatures
from cudnn_magic.knowledge.matcher import EVIDENCE_CHARS, scan
from cudnn_magic.knowledge.signature import Signature, sig

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


# --------------------------------------------------------------------------------------------------
# The scan at its edges.
#
# The scan at its edges: status names, CamelCase names and bare numbers (the 1000 boundary between
# cuDNN 8 and 9 numbering), cudnn_frontend error codes, SUCCESS that is and is not an error,
# evidence quoting (controls, bounds) and hard-wrapped pastes.
# Sources: docs/facts.md "Status codes" (cuDNN 8 numbers 0..14, cuDNN 9 the thousands); cuDNN's
# ``cudnnStatus_t`` names; cudnn_frontend ``graph_properties.h`` error_code_t; TensorFlow
# cuda_dnn.cc "Check failed: status == CUDNN_STATUS_SUCCESS (N vs. 0)"; old PyTorch's
# "CuDNN error: CUDNN_STATUS_SUCCESS" for an unset status; TensorFlow's
# "Loaded runtime CuDNN library: X but source was compiled with: Y" (XLA cuda_dnn.cc).
# --------------------------------------------------------------------------------------------------


def _hits(text, source="exception", **kw):
    return [(h.diagnosis, h.groups.get("status")) for h in scan(text, source, **kw)]


STATUS_TEXTS = [
    # text, (diagnosis, decoded status name) or [] for no hit
    ("Check failed: status == CUDNN_STATUS_SUCCESS (3 vs. 0)", [("cudnn-bad-param", "CUDNN_STATUS_BAD_PARAM")]),
    ("Check failed: status == CUDNN_STATUS_SUCCESS (3000 vs. 0)",
     [("cudnn-unsupported-config", "CUDNN_STATUS_NOT_SUPPORTED")]),
    ("Check failed: status == CUDNN_STATUS_SUCCESS (0 vs. 0)", []),  # 0 is success
    ("cuDNN error: 14", [("cudnn-sublibrary-load-failed", "CUDNN_STATUS_VERSION_MISMATCH")]),
    ("cuDNN error: 1001", [("cudnn-init-failed", "CUDNN_STATUS_NOT_INITIALIZED")]),  # cuDNN 9 numbering from 1000
    ("cuDNN status 4003", [("gpu-out-of-memory", "CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED")]),
    ("cuDNN status 5999", [("cudnn-execution-failed", "CUDNN_STATUS_EXECUTION_FAILED family (unknown code 5999)")]),
    ("cudnn error code 999", []), ("cudnn error code 15", []),  # no status of either numbering
    ("cudnnStatusArchMismatch", [("gpu-arch-unsupported", "CUDNN_STATUS_ARCH_MISMATCH")]),
    ("cudnnStatusBadParam raised", [("cudnn-bad-param", "CUDNN_STATUS_BAD_PARAM")]),
    ("cudnnStatusNotInitialized", [("cudnn-init-failed", "CUDNN_STATUS_NOT_INITIALIZED")]),
    ("CuDNN error: CUDNN_STATUS_SUCCESS", [("cudnn-init-failed", "CUDNN_STATUS_SUCCESS")]),  # old PyTorch
    ("cudnn call failed: CUDNN_STATUS_SUCCESS", [("cudnn-init-failed", "CUDNN_STATUS_SUCCESS")]),
    ("error: status != CUDNN_STATUS_SUCCESS", []),  # a comparison, not a status
    ("status == CUDNN_STATUS_SUCCESS failed", []),
    ("CUDNN_STATUS_SUCCESS", []),  # success without error words
    ("cuDNN error: CUDNN_STATUS_MADE_UP_NAME", []),
    ("cuDNN error: CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH",
     [("gpu-arch-unsupported", "CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH")]),
    ("CUDNN_FE failure 8: GRAPH_NOT_SUPPORTED", [("cudnn-unsupported-config", None)]),
    ("CUDNN_FE failure 3: HANDLE_ERROR", [("cudnn-init-failed", None)]),
    ("CUDNN_FE failure 11: CUDNN_BACKEND_API_FAILED", []),  # defers to the status printed with it
]


@pytest.mark.parametrize("text, expected", STATUS_TEXTS, ids=[t for t, _ in STATUS_TEXTS])
def test_status_wordings(text, expected):
    assert _hits(text) == expected


def test_a_bare_number_weighs_less_than_the_name_and_a_frontend_code_more():
    name = scan("cuDNN error: CUDNN_STATUS_BAD_PARAM", "exception")[0]
    number = scan("cuDNN error: 3", "exception")[0]
    camel = scan("cudnnStatusBadParam", "exception")[0]
    frontend = scan("CUDNN_FE failure 5: ATTRIBUTE_NOT_SET", "exception")[0]
    assert name.diagnosis == number.diagnosis == camel.diagnosis == frontend.diagnosis == "cudnn-bad-param"
    assert number.weight < name.weight == camel.weight < frontend.weight
    succ = scan("CuDNN error: CUDNN_STATUS_SUCCESS", "exception")[0]
    init = scan("cuDNN error: CUDNN_STATUS_NOT_INITIALIZED", "exception")[0]
    assert succ.weight < init.weight  # an unset status is weaker evidence than the status itself


@pytest.mark.parametrize("raw, quoted", [
    ("\x1b[31mCould not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR\x1b[0m\r",
     "[31mCould not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR [0m"),  # no leading space, no ESC
    ("   Could not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR\t ",
     "Could not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR"),
    ("\u202eCould not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR",
     "Could not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR"),  # a bidi control at the start
])
def test_evidence_is_quoted_without_controls_or_edge_spaces(raw, quoted):
    lines = [h.line for h in scan(raw, "log")]
    assert lines and all(line == quoted for line in lines)


@pytest.mark.parametrize("pad", [EVIDENCE_CHARS - 60, EVIDENCE_CHARS, 5000])
def test_evidence_is_bounded(pad):
    text = "x" * pad + " Could not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR"
    for h in scan(text, "log"):
        assert len(h.line) <= EVIDENCE_CHARS
        if len(text) <= EVIDENCE_CHARS:
            assert h.line == text
        else:
            assert h.line.endswith("…") or h.line.endswith("CUDNN_STATUS_INTERNAL_ERROR")


TF_MISMATCH = ("E tensorflow/stream_executor/cuda/cuda_dnn.cc:359] Loaded runtime CuDNN library: 8.0.5 but source was compiled "
      "with: 8.1.0.  CuDNN library needs to have matching major version and equal or higher minor version.")


@pytest.mark.parametrize("cut", [TF_MISMATCH.index("sour") + 4, TF_MISMATCH.index(" compiled"), TF_MISMATCH.index("8.1.0") + 2])
def test_a_hard_wrapped_paste_is_read_whole(cut):
    wrapped = TF_MISMATCH[:cut] + "\n" + TF_MISMATCH[cut:].lstrip(" ") if TF_MISMATCH[cut] == " " else TF_MISMATCH[:cut] + "\n" + TF_MISMATCH[cut:]
    versions = [h.groups for h in scan(wrapped, "log") if h.signature.name == "tf-loaded-runtime"]
    assert {"loaded": "8.0.5", "compiled": "8.1.0"} in versions
    # a cell's own output is not a paste: only whole lines are matched
    alone = [h.groups for h in scan(wrapped, "log", joined=False) if h.signature.name == "tf-loaded-runtime"]
    assert {"loaded": "8.0.5", "compiled": "8.1.0"} not in alone


def test_unwrapped_lines_are_not_glued():
    text = "cuDNN error: CUDNN_STATUS_BAD_PARAM\nsomething else entirely: CUDNN_STATUS_MAPPING_ERROR"
    lines = {h.line for h in scan(text, "log")}
    assert lines == {"cuDNN error: CUDNN_STATUS_BAD_PARAM", "something else entirely: CUDNN_STATUS_MAPPING_ERROR"}


@pytest.mark.parametrize("source", ["log", "exception", "traceback"])
def test_bytes_and_text_read_alike(source):
    text = TF_MISMATCH + "\nCould not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR\n"
    a = [(h.signature.name, h.line, h.groups, h.position) for h in scan(text, source)]
    b = [(h.signature.name, h.line, h.groups, h.position) for h in scan(text.encode(), source)]
    assert a == b and a
    assert all(h.source == source for h in scan(text, source))


# TensorFlow's "Memory usage: N bytes free, M bytes total" next to a handle failure: the GPU was
# nearly full when free < 256 MiB or free < 5% of total (knowledge/memory.py's thresholds, the
# cudnn handle needs workspace; TF_MISMATCH cuda_dnn.cc logs the line).
MIB = 1 << 20


@pytest.mark.parametrize("free, total, full", [
    (256 * MIB - 1, 2048 * MIB, True), (256 * MIB, 2048 * MIB, False),  # the absolute floor (5 % of 2 GiB is less)
    (256 * MIB + 1, 2048 * MIB, False),
    (858_993_459, 16 * 1024 * MIB, True),  # 5 % of 16 GiB is 858,993,459.2 bytes: just below
    (858_993_460, 16 * 1024 * MIB, False),  # just above
    (0, 0, False), (5, 0, False),  # no total: nothing to judge
])
def test_memory_usage_line_at_the_nearly_full_edge(free, total, full):
    text = f"Memory usage: {free} bytes free, {total} bytes total"
    got = [(h.diagnosis, h.groups) for h in scan(text, "log") if h.signature.name == "tf-memory-usage"]
    assert got == ([("gpu-out-of-memory", {"free": str(free), "total": str(total)})] if full else [])


@pytest.mark.parametrize("suffix, diagnosis", [
    ("(35): CUDA_ERROR_INSUFFICIENT_DRIVER", "cuda-driver-too-old"),  # by the CUDA error number
    (": cudaErrorInsufficientDriver", "cuda-driver-too-old"),
    (": CUDA driver version is insufficient for CUDA runtime version", "cuda-driver-too-old"),
    ("(2): CUDA_ERROR_OUT_OF_MEMORY", "gpu-out-of-memory"),
    (": cudaErrorMemoryAllocation", "gpu-out-of-memory"),
    (": out of memory", "gpu-out-of-memory"),
    ("(1): CUDA_ERROR_INVALID_VALUE", "cudnn-init-failed"),  # any other pending error
])
def test_xla_error_before_the_handle_names_the_pending_cuda_error(suffix, diagnosis):
    text = "There was an error before creating cudnn handle" + suffix
    hits = [h.diagnosis for h in scan(text, "log") if h.signature.name == "xla-error-before-cudnn-handle"]
    assert hits == [diagnosis]


# =========================================================================================
# knowledge.matcher: scan, _scan_chunked, _match_line, _trigger_groups, _evidence, _maybe_wrapped
# (the rules from the matcher's module docstring and the docstrings of scan / _scan_chunked /
# _maybe_wrapped / TRIGGERS, each stated at its edge). A small SCAN_CHUNK stands in for the 4 MiB
# one, as in the section "each rule of the knowledge base at its edge" below.
import logging  # noqa: E402
import tracemalloc  # noqa: E402
from dataclasses import replace  # noqa: E402

HANDLE_MSG = "Could not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR"  # TF_MISMATCH/XLA cuda_dnn.cc
LOADED = "Loaded runtime CuDNN library: 8.0.5 but source was compiled with: 8.1.0"  # XLA cuda_dnn.cc
LOADED_GROUPS = {"loaded": "8.0.5", "compiled": "8.1.0"}
SMALL_CHUNK = 4096


def _noise(n):
    return [f"noise line {i:05d} " + "z" * 40 for i in range(n)]


# _evidence: a quoted line of up to EVIDENCE_CHARS (400) characters is kept whole; a longer one is
# cut to exactly EVIDENCE_CHARS characters, the last of them "…" (matcher.EVIDENCE_CHARS).
@pytest.mark.parametrize("length", [EVIDENCE_CHARS - 1, EVIDENCE_CHARS, EVIDENCE_CHARS + 1, EVIDENCE_CHARS + 2])
def test_evidence_is_whole_up_to_400_characters_and_exactly_400_above(length):
    line = "x" * (length - len(HANDLE_MSG) - 1) + " " + HANDLE_MSG
    assert len(line) == length
    quoted = [h.line for h in scan(line, "log") if h.signature.name == "cudnn-create-handle"]
    if length <= EVIDENCE_CHARS:
        assert quoted == [line]
    else:
        assert quoted == [line[: EVIDENCE_CHARS - 1] + "…"] and len(quoted[0]) == EVIDENCE_CHARS


# _match_line: a line longer than MAX_LINE is quoted from 120 characters before the match (or from
# the line's first character when the match is nearer to it) to 200 after.
@pytest.mark.parametrize("before", [0, 1, 119, 120, 121])
def test_a_long_line_is_quoted_from_its_first_character_when_the_match_is_near_it(before):
    text = "a" * before + LOADED + "b" * 5000
    got = [(h.line, h.position) for h in scan(text, "log") if h.signature.name == "tf-loaded-runtime"]
    assert got == [("a" * min(before, 120) + LOADED + "b" * 200, before)]


# _match_line: a warning_only wording (TensorFlow gpu_device.cc "Ignoring visible gpu device", JAX
# xla_bridge.py "CUDA-enabled jaxlib is not installed") that is not asked for is skipped alone; the
# other wordings on the same line still count (a log flattened onto one line, "\n" escaped, as a
# JSON logger writes it); asked for, it is a specific wording and claims its line from the generic
# status name (Signature.generic). A cuDNN status name: cudnn_graph.h / docs/facts.md "Status codes".
TF_IGNORING = ("W Ignoring visible gpu device (device: 0, name: Tesla K80, pci bus id: 0000:01:00.0) with Cuda "
               "compute capability 3.5. The minimum required Cuda capability is 3.7.")
JAX_NO_CUDA = "An NVIDIA GPU may be present on this machine, but a CUDA-enabled jaxlib is not installed."
FLAT_STATUS = "\\nRuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED"


@pytest.mark.parametrize("text, warnings, names", [
    (TF_IGNORING + FLAT_STATUS, False, ["status-name"]),
    (TF_IGNORING + FLAT_STATUS, True, ["tf-ignoring-gpu-capability"]),  # asked for, it claims the line
    (JAX_NO_CUDA + FLAT_STATUS, False, ["status-name"]),
    (JAX_NO_CUDA + FLAT_STATUS, True, ["jax-no-cuda-jaxlib"]),
])
def test_a_warning_only_wording_not_asked_for_hides_nothing_else_on_its_line(text, warnings, names):
    assert [h.signature.name for h in scan(text, "log", warnings=warnings, joined=False)] == names


# _match_line: cudnn_frontend's error_code_t 11, CUDNN_BACKEND_API_FAILED, names no cause of its own
# and defers to the cuDNN status (knowledge/status.py FRONTEND_CODES); a status name on the same
# line is still read (cudnn_frontend graph_properties.h; cudnn_graph.h status names).
@pytest.mark.parametrize("text, expected", [
    ("CUDNN_FE failure 11: CUDNN_BACKEND_API_FAILED ; cudnn_status: CUDNN_STATUS_BAD_PARAM",
     [("status-name", "cudnn-bad-param")]),
    ("CUDNN_FE failure 11: CUDNN_BACKEND_API_FAILED ; cudnn_status: CUDNN_STATUS_NOT_SUPPORTED",
     [("status-name", "cudnn-unsupported-config")]),
    ("CUDNN_FE failure 11: CUDNN_BACKEND_API_FAILED", []),
])
def test_a_deferring_frontend_code_leaves_the_status_on_its_line(text, expected):
    assert [(h.signature.name, h.diagnosis) for h in scan(text, "exception")] == expected


# _match_line: a signature without a window (Signature.window = 0) reads its extra fields from its
# own line only: ONNX Runtime's older "Failed to create CUDAExecutionProvider. Please reference ..."
# has no requirement, and a newer one printed after it keeps its own (onnxruntime
# provider_bridge_ort.cc; knowledge/warnings.py ort-failed-cuda-ep).
def test_fields_of_a_signature_without_a_window_come_from_its_own_line():
    text = ("Failed to create CUDAExecutionProvider. Please reference https://onnxruntime.ai/docs/execution-providers/"
            "CUDA-ExecutionProvider.html#requirements to ensure all dependencies are met.\n"
            "Failed to create CUDAExecutionProvider. Require cuDNN 9.* and CUDA 12.*, and the latest MSVC runtime.\n")
    got = [h.groups for h in scan(text, "log", joined=False) if h.signature.name == "ort-failed-cuda-ep"]
    assert got == [{}, {"required": "9", "cuda": "12"}]


# _match_line: "a knowledge entry never breaks the scan" - a refinement that raises leaves the entry
# with its own diagnosis and weight, and the rest of the text is still matched.
def test_a_refinement_that_raises_keeps_the_entry_and_the_scan(monkeypatch):
    sigs = matcher.signatures()
    i = next(k for k, s in enumerate(sigs) if s.name == "cudnn-create-handle")

    def boom(groups, line):
        raise RuntimeError("a broken knowledge entry")

    monkeypatch.setitem(matcher._CACHE, "sigs", (*sigs[:i], replace(sigs[i], refine=boom), *sigs[i + 1:]))
    got = [(h.signature.name, h.diagnosis, h.weight) for h in scan(HANDLE_MSG + "\n" + LOADED, "log", joined=False)]
    assert got == [("cudnn-create-handle", sigs[i].diagnosis, sigs[i].weight),
                   ("tf-loaded-runtime", "cudnn-version-mismatch", sigs[next(
                       k for k, s in enumerate(sigs) if s.name == "tf-loaded-runtime")].weight)]


# scan: the default source label is "log" (scan's signature; Hit.source).
def test_the_default_source_is_log():
    assert [h.source for h in scan(LOADED)] == ["log"]
    assert [h.source for h in scan(LOADED.encode())] == ["log"]


# scan "Never raises": a failure inside the matcher gives no hits and one DEBUG record on the
# "cudnn_magic" logger, "knowledge scan failed", with the traceback (as diagnose.py logs its own).
def test_a_failure_inside_the_scan_is_logged_at_debug_and_gives_no_hits(monkeypatch, caplog):
    def broken(data, source, warnings):
        raise RuntimeError("matcher bug")

    monkeypatch.setattr(matcher, "_scan_data", broken)
    with caplog.at_level(logging.DEBUG, logger="cudnn_magic"):
        assert scan(LOADED, "log") == []
    got = [(r.name, r.levelno, r.getMessage(), bool(r.exc_info) and r.exc_info[0]) for r in caplog.records]
    assert got == [("cudnn_magic", logging.DEBUG, "knowledge scan failed", RuntimeError)]


# scan: a hard-wrapped paste of up to MAX_JOIN_BYTES is joined (matcher docstring, step 3), whether
# its line pass is one chunk or several (SCAN_CHUNK); one byte more is matched line by line only.
# Observable: a TensorFlow line cut after "but sour" gets its compiled version back. The limits are
# 4 MiB and 256 KiB in the product; 4 KiB and 1 KiB stand in for them.
def _wrapped_paste(size):
    head = "Loaded runtime CuDNN library: 8.0.5 but sour\nce was compiled with: 8.1.0\n"
    lines, n = [head.rstrip("\n")], len(head) - 1
    i = 0
    while n < size:
        lines.append(f"filler {i:05d} " + "z" * (i % 23))
        n, i = n + len(lines[-1]) + 1, i + 1
    data = "\n".join(lines).encode()[:size]
    assert len(data) == size
    return data


@pytest.mark.parametrize("size, whole", [(SMALL_CHUNK - 1, True), (SMALL_CHUNK, True), (SMALL_CHUNK + 1, False)])
def test_a_wrapped_paste_is_joined_up_to_the_join_size_and_not_above(monkeypatch, size, whole):
    assert matcher.SCAN_CHUNK < matcher.MAX_JOIN_BYTES
    monkeypatch.setattr(matcher, "SCAN_CHUNK", SMALL_CHUNK // 4)  # chunked line pass: the join does not depend on it
    monkeypatch.setattr(matcher, "MAX_JOIN_BYTES", SMALL_CHUNK)
    got = [h.groups for h in scan(_wrapped_paste(size), "log") if h.signature.name == "tf-loaded-runtime"]
    assert got == ([LOADED_GROUPS] if whole else [{"loaded": "8.0.5"}])


# scan: the source label and `warnings` reach every hit of every path: line by line, a chunked input
# (above SCAN_CHUNK) and a hard-wrapped paste (joined); Hit.position / Hit.span are byte offsets of
# the whole input (Hit docstring).
def test_source_and_warnings_reach_the_hits_of_a_chunked_input(monkeypatch):
    monkeypatch.setattr(matcher, "SCAN_CHUNK", SMALL_CHUNK)
    lines = _noise(300)
    lines[40], lines[250] = TF_IGNORING, LOADED
    data = ("\n".join(lines) + "\n").encode()
    assert len(data) > 3 * SMALL_CHUNK
    got = [(h.signature.name, h.source, h.span) for h in scan(data, "exception", warnings=True)]
    p, q = data.find(b"Ignoring"), data.find(b"Loaded")
    assert [(n, s, sp[0]) for n, s, sp in got] == [("tf-ignoring-gpu-capability", "exception", p),
                                                  ("tf-loaded-runtime", "exception", q)]
    assert got[1][2] == (q, q + len(LOADED))
    assert [h.signature.name for h in scan(data, "exception")] == ["tf-loaded-runtime"]


def test_source_and_warnings_reach_the_hits_of_a_joined_paste():
    wrapped = "Loaded runtime CuDNN library: 8.0.5 but sour\nce was compiled with: 8.1.0\n"
    assert [(h.groups, h.source) for h in scan(wrapped, "traceback")] == [(LOADED_GROUPS, "traceback")]
    cut = TF_IGNORING.index("gpu device") + 4
    ignoring = TF_IGNORING[:cut] + "\n" + TF_IGNORING[cut:] + "\n"
    got = [h.groups for h in scan(ignoring, "log", warnings=True) if h.signature.name == "tf-ignoring-gpu-capability"]
    assert got == [{"compute_capability": "3.5", "min_sm": "3.7"}]


# scan: a wrapped match supersedes the cut match of the same signature on the lines it spans
# (covered = [first line, next line)); a hit of the same signature on the very next line is another
# message and stays.
def test_a_joined_match_supersedes_only_the_lines_it_spans():
    nxt = "Loaded runtime CuDNN library: 7.6.5 but source was compiled with: 8.0.0"
    text = "Loaded runtime CuDNN library: 8.0.5 but sour\nce was compiled with: 8.1.0\n" + nxt + "\n"
    got = sorted(((h.position, h.groups) for h in scan(text, "log") if h.signature.name == "tf-loaded-runtime"),
                 key=lambda x: x[0])  # scan appends a joined hit after the line-by-line ones
    assert got == [(0, LOADED_GROUPS), (text.index(nxt), {"loaded": "7.6.5", "compiled": "8.0.0"})]


# _scan_chunked: a line longer than a chunk is cut with an overlap of MAX_LINE bytes, also when
# shorter lines come before it (its chunks then hold no line end at all after the first).
@pytest.mark.parametrize("offset", [SMALL_CHUNK - 1500, SMALL_CHUNK - 30, SMALL_CHUNK + 2500])
@pytest.mark.parametrize("before", ["short line\n", "one\ntwo\nthree\n"])
def test_a_line_longer_than_a_chunk_after_short_lines_is_read(monkeypatch, offset, before):
    monkeypatch.setattr(matcher, "SCAN_CHUNK", SMALL_CHUNK)
    data = before.encode() + b"x" * offset + LOADED.encode() + b" " + b"y" * 6000
    got = [(h.signature.name, h.position, h.groups) for h in scan(data, "log")]
    assert got == [("tf-loaded-runtime", len(before) + offset, LOADED_GROUPS)]


# _scan_chunked: "a 50 MB log needs about one lower-cased chunk of memory beside itself, not a
# lower-cased copy of the whole" (its docstring; benchmarks/bench_explain.py measures the peak).
def test_a_chunked_scan_holds_about_one_chunk_beside_the_input(monkeypatch):
    monkeypatch.setattr(matcher, "SCAN_CHUNK", SMALL_CHUNK)
    monkeypatch.setattr(matcher, "MAX_JOIN_BYTES", SMALL_CHUNK)  # these equal-width lines would look hard-wrapped
    lines = _noise(4000)
    lines[2000] = LOADED
    data = ("\n".join(lines) + "\n").encode()
    assert len(data) > 50 * SMALL_CHUNK
    scan(data[:100], "log")  # the tables are built before measuring
    tracemalloc.start()
    try:
        hits = scan(data, "log")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [h.signature.name for h in hits] == ["tf-loaded-runtime"]
    assert peak < 10 * SMALL_CHUNK < len(data) // 5


# _scan_chunked reads like one scan of the whole: lines compared as the line-by-line scan compares
# them (a line's bytes, ASCII case folded), so two lines that differ in more than ASCII case ("ß"
# and "SS") are two lines; and the cap of HEAD + TAIL hits is per signature, so two signatures of
# 200 hits each keep all of theirs (matcher docstring, step 1).
def test_a_chunked_scan_keeps_lines_that_differ_beyond_ascii_case(monkeypatch):
    lines = _noise(200)
    lines[10], lines[190] = HANDLE_MSG + " on host straße", HANDLE_MSG + " on host STRASSE"
    data = ("\n".join(lines) + "\n").encode()
    whole = [(h.signature.name, h.position, h.line) for h in scan(data, "log", joined=False)]
    monkeypatch.setattr(matcher, "SCAN_CHUNK", SMALL_CHUNK)
    chunked = [(h.signature.name, h.position, h.line) for h in scan(data, "log")]
    assert chunked == whole and len(whole) == 2


def test_the_cap_over_chunks_is_per_signature(monkeypatch):
    monkeypatch.setattr(matcher, "SCAN_CHUNK", SMALL_CHUNK)
    n = 200
    assert n < HEAD + TAIL < 2 * n
    lines = [HANDLE_MSG + f" (case {k})" for k in range(n)]
    lines += [f"Loaded runtime CuDNN library: 8.0.{k} but source was compiled with: 8.1.0" for k in range(n)]
    data = ("\n".join(lines) + "\n").encode()
    names = [h.signature.name for h in scan(data, "log")]
    assert names.count("cudnn-create-handle") == n and names.count("tf-loaded-runtime") == n


# _maybe_wrapped: the fixed column of 40-400 bytes is measured without the line ends, so a Windows
# paste (CRLF) is judged like the same paste with LF ends (the LF table is in the section "each
# rule of the knowledge base at its edge" below; TensorFlow's line cut after "but sour").
def _crlf_paste(width, size=70 * 1024):
    parts = ("Loaded runtime CuDNN library: 8.0.5 but sour", "ce was compiled with: 8.1.0")
    if width < len(parts[0]):
        parts = (parts[0][:width], parts[0][width:] + parts[1])
    lines = [(f"{0:07d} noise " + "z" * width)[:width], *parts]
    i = 1
    while sum(len(x) + 2 for x in lines) < size:
        lines.append((f"{i:07d} noise " + "z" * width)[:width])
        i += 1
    return "\r\n".join(lines).encode()


@pytest.mark.parametrize("width, whole", [(39, False), (40, True), (400, True), (401, False)])
def test_a_crlf_paste_cut_at_a_fixed_column_is_judged_without_its_line_ends(width, whole):
    data = _crlf_paste(width)
    assert 64 * 1024 < len(data) <= matcher.MAX_JOIN_BYTES
    got = [sorted(h.groups) for h in scan(data, "log") if h.signature.name == "tf-loaded-runtime"]
    assert got == ([["compiled", "loaded"]] if whole else [["loaded"]])


# _trigger_groups (built once per process, so with cold tables here, as in a new kernel): a keyword
# is gathered around its trigger literal (TRIGGERS), else around the one gate literal its signatures
# share (Signature.gate), else around itself. When that literal is on more than GATHER_LIMIT (4096)
# lines, each keyword keeps its first HEAD (32) and last TAIL (256) lines; a rarer one keeps every
# line (matcher docstring, step 1). "dnn" gates XLA's "Loaded runtime CuDNN library" line,
# "algorithm" PyTorch's "no valid convolution algorithms available in CuDNN" (knowledge/status.py),
# and TensorFlow's "Could not find device for node: {{node CudnnRNN}}" (knowledge/init.py) is its own.
HEAD, TAIL = matcher.HITS_PER_KEYWORD_HEAD, matcher.HITS_PER_KEYWORD_TAIL
GATED = [
    ("tf-loaded-runtime", "Loaded runtime CuDNN library: 8.0.5 but source was compiled with: 8.1.0 (case {})",
     "cudnn ok {}", True),
    ("tf-loaded-runtime", "Loaded runtime CuDNN library: 8.0.5 but source was compiled with: 8.1.0 (case {})",
     "fine {}", False),
    ("no-valid-conv-algorithms", "RuntimeError: no valid convolution algorithms available in CuDNN (case {})",
     "algorithm ok {}", True),
    ("no-valid-conv-algorithms", "RuntimeError: no valid convolution algorithms available in CuDNN (case {})",
     "fine {}", False),
    ("tf-cudnn-op-without-device", "Could not find device for node: {{{{node CudnnRNN}}}} (case {})",
     "cudnn ok {}", False),
]


@pytest.mark.parametrize("name, line, filler, capped", GATED, ids=[f"{g[0]}-{g[2].split()[0]}" for g in GATED])
def test_each_keyword_is_gathered_around_its_trigger_gate_or_itself(monkeypatch, name, line, filler, capped):
    monkeypatch.setattr(matcher, "_CACHE", {})
    n = HEAD + TAIL + 12
    text = "\n".join([filler.format(i) for i in range(5000)] + [line.format(k) for k in range(n)])
    got = sorted(int(h.line.rsplit("case ", 1)[1].rstrip(")")) for h in scan(text, "log", joined=False)
                 if h.signature.name == name)
    assert got == (list(range(HEAD)) + list(range(n - TAIL, n)) if capped else list(range(n)))


# _scan_data: a trigger literal is gathered line by line while it is on at most GATHER_LIMIT (4096)
# lines (or one line per GATHER_PER_BYTES = 100 bytes of a larger input), counted once per line however
# often the line holds it; past them each keyword keeps its first HEAD and last TAIL lines (matcher
# docstring, step 1; TRIGGERS / GATHER_LIMIT comments). The handle line holds "dnn" twice ("cudnn",
# "CUDNN_STATUS_"); a line of exactly MAX_LINE bytes is still one line, a longer one is read in windows
# and each occurrence on it counts.
def _handle_cases(hits):
    return sorted(int(h.line.rsplit("case ", 1)[1].split(")")[0]) for h in hits if h.signature.name == "cudnn-create-handle")


@pytest.mark.parametrize("gathered", [HEAD - 1, HEAD, 40, 44, 45])
def test_the_first_gather_limit_lines_holding_a_trigger_are_always_gathered(gathered):
    # filler lines hold "dnn" once, then n handle lines: the first GATHER_LIMIT lines with the trigger are
    # gathered, so `gathered` handle lines are; past them each keyword keeps its first HEAD and last TAIL
    n = HEAD + TAIL + 12
    filler = [f"cudnn ok {i}" for i in range(matcher.GATHER_LIMIT - gathered)]
    text = "\n".join(filler + [HANDLE_MSG + f" (case {k})" for k in range(n)])
    assert len(text) // matcher.GATHER_PER_BYTES < matcher.GATHER_LIMIT
    expected = sorted(set(range(gathered)) | set(range(HEAD)) | set(range(n - TAIL, n)))
    assert _handle_cases(scan(text, "log", joined=False)) == expected


@pytest.mark.parametrize("width, capped", [(matcher.MAX_LINE - 1, False), (matcher.MAX_LINE, False),
                                           (matcher.MAX_LINE + 1, True)])
def test_a_line_of_up_to_max_line_bytes_counts_its_trigger_once(width, capped):
    # 30 lines of `width` bytes holding "cudnn" 300 times each, then n handle lines: 30 + n lines hold the
    # trigger (under GATHER_LIMIT), but 9000 occurrences on lines read in windows are more than it
    n = HEAD + TAIL + 12
    filler = [(f"{i:04d} " + "cudnn " * 300 + "z" * width)[:width] for i in range(30)]
    assert all(len(x) == width and x.count("dnn") == 300 for x in filler)
    text = "\n".join(filler + [HANDLE_MSG + f" (case {k})" for k in range(n)])
    assert 30 + n < matcher.GATHER_LIMIT < 30 * 300 and len(text) // matcher.GATHER_PER_BYTES < matcher.GATHER_LIMIT
    got = _handle_cases(scan(text, "log", joined=False))
    assert got == (list(range(HEAD)) + list(range(n - TAIL, n)) if capped else list(range(n)))


def test_every_occurrence_on_a_line_longer_than_max_line_is_gathered(monkeypatch):
    monkeypatch.setattr(matcher, "SCAN_CHUNK", 1 << 20)  # one pass (a chunked scan caps each signature's hits)
    n = HEAD + TAIL + 12
    text = "".join(HANDLE_MSG + f" (case {k}) " + " " * 1000 for k in range(n))  # one line, ~320 KB
    assert "\n" not in text and len(text) // matcher.GATHER_PER_BYTES < matcher.GATHER_LIMIT
    assert _handle_cases(scan(text, "log", joined=False)) == list(range(n))


# _scan_data: a line of up to MAX_LINE bytes repeated is matched once, at its latest place, and the
# lines before it are still read (matcher docstring, step 1: "a log that repeats one line a million
# times costs the same as one that prints it a few times").
@pytest.mark.parametrize("width", [len(HANDLE_MSG), matcher.MAX_LINE - 1, matcher.MAX_LINE])
def test_a_repeated_line_of_up_to_max_line_bytes_is_matched_once_and_earlier_lines_still(width):
    line = HANDLE_MSG + " " + "z" * (width - len(HANDLE_MSG) - 1) if width > len(HANDLE_MSG) else HANDLE_MSG
    text = f"{LOADED}\n{line}\nnoise\n{line}\n"
    got = [(h.signature.name, h.position) for h in scan(text, "log", joined=False)]
    assert got == [("tf-loaded-runtime", 0), ("cudnn-create-handle", text.rindex(line))]


# _scan_data: on a line longer than MAX_LINE each keyword is matched in a window of 300 bytes before
# and 700 after it; a keyword within 400 bytes of the previous window's keyword is matched in that
# window, a farther one in its own; every message on the line is found once.
@pytest.mark.parametrize("gap", [300, 400, 401, 900])
def test_each_message_on_a_long_line_is_found_once_whatever_the_gap(gap):
    buf = [" "] * 7000
    third = "Loaded runtime CuDNN library: 7.6.5 but source was compiled with: 8.0.0"
    algo = "RuntimeError: no valid convolution algorithms available in CuDNN"  # PyTorch 0.x; knowledge/status.py
    algo_at = 1000 + gap - algo.index("no valid")  # its keyword `gap` bytes after the first one
    for at, msg in ((1000, LOADED), (algo_at, algo), (3000, third)):
        buf[at: at + len(msg)] = msg
    text = "".join(buf)
    got = [(h.signature.name, h.position) for h in scan(text, "log", joined=False)]
    assert got == [("tf-loaded-runtime", 1000), ("no-valid-conv-algorithms", algo_at + algo.index("no valid")),
                   ("tf-loaded-runtime", 3000)]


# _scan_data: a window signature reads the 6 lines after its keyword's line, empty ones counted (JAX
# jax_plugins/cuda/__init__.py prints its versions on the lines after "Outdated cuDNN installation found.").
@pytest.mark.parametrize("empty, loaded", [(5, "8500"), (6, None)])
def test_a_window_counts_empty_lines(empty, loaded):
    text = "Outdated cuDNN installation found.\n" + "\n" * empty + "Installed version: 8500"
    hits = [h.groups for h in scan(text, "log", joined=False) if h.signature.name == "jax-outdated-cudnn"]
    assert [g.get("loaded") for g in hits] == [loaded]


# --------------------------------------------------------------------------------------------------
# Each rule of the knowledge base at its edge.
#
# Each rule of the knowledge base at its edge, as a caller sees it: the diagnosis and fields a
# :func:`scan` hit carries, the diagnosis :func:`cudnn_magic.engines.diagnose.diagnose` ranks first
# and its title, the Signature :func:`sig` builds (chunked scans, line bounds, gates, version
# captures). The source of each fact is named beside its table; what no test can tell apart is in
# tests/mutation_survivors.md.
# --------------------------------------------------------------------------------------------------


def _slug(text):
    """A test id of plain characters (mutmut passes node ids back to pytest on its command line)."""
    return re.sub(r"[^A-Za-z0-9_.]+", "-", text).strip("-")[:60]


def _family(text, family, source="log"):
    """(signature name, diagnosis) of the hits of one family, in text order."""
    return [(h.signature.name, h.diagnosis) for h in scan(text, source) if h.signature.family == family]


# --------------------------------------------------------------------------- calls: the failing call

# cuDNN backend API: cudnn-frontend and PyTorch's v8 API print "<DESCRIPTOR>: cudnnFinalize Failed
# cudnn_status: <status>" (reports in tests/unit/diagnose/test_real_reports.py: pytorch#128348, apex#1140). The
# descriptor names the call ("finalize:<DESCRIPTOR>", calls.ROLES): an execution plan, an engine
# config or an operation graph being finalized is the "plan" role, whose BAD_PARAM / INTERNAL_ERROR
# means no engine supports the graph (cuDNN backend API, cudnnBackendFinalize); a tensor descriptor
# has no role, so its status keeps its own meaning.
FINALIZE = [
    # text, call group, top diagnosis, its title (None: the status's own catalogue title)
    ("CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR: cudnnFinalize Descriptor Failed cudnn_status: CUDNN_STATUS_BAD_PARAM",
     "finalize:EXECUTION_PLAN", "cudnn-unsupported-config",
     "cuDNN has no execution plan for this operation (finalize:EXECUTION_PLAN returned CUDNN_STATUS_BAD_PARAM)"),
    ("CUDNN_BACKEND_OPERATION: cudnnFinalize Failed cudnn_status: CUDNN_STATUS_INTERNAL_ERROR",
     "finalize:OPERATION", "cudnn-unsupported-config",
     "cuDNN has no execution plan for this operation (finalize:OPERATION returned CUDNN_STATUS_INTERNAL_ERROR)"),
    ("CUDNN_BACKEND_ENGINECFG_DESCRIPTOR: cudnnFinalize Failed cudnn_status: CUDNN_STATUS_BAD_PARAM",
     "finalize:ENGINECFG", "cudnn-unsupported-config",
     "cuDNN has no execution plan for this operation (finalize:ENGINECFG returned CUDNN_STATUS_BAD_PARAM)"),
    ("CUDNN_BACKEND_TENSOR_DESCRIPTOR: cudnnFinalize Failed cudnn_status: CUDNN_STATUS_BAD_PARAM",
     "finalize:TENSOR", "cudnn-bad-param", None),
]


@pytest.mark.parametrize("text, call, top, title", FINALIZE, ids=[_slug(f[1]) for f in FINALIZE])
def test_a_finalized_descriptor_names_the_call_and_its_role_decides(text, call, top, title):
    marker = [h for h in scan(text, "exception") if h.signature.name == "cudnn-backend-finalize"]
    assert [h.groups["call"] for h in marker] == [call]
    assert [h.weight for h in marker] == [0.0]  # a marker, never a diagnosis of its own
    first = diagnose(text)[0]
    assert first.id == top
    if title is not None:
        assert first.title == title
    else:
        assert "finalize" not in first.title


# Caffe's CuDNN layers create their cuDNN handles in LayerSetUp (Caffe src/caffe/layers/cudnn_*_layer.cpp:
# CUDNN_CHECK(cudnnCreate(...))): a status raised there is the handle's ("handle" role, calls.REFINES).
def test_a_caffe_cudnn_layer_setup_is_the_handle_creation():
    text = ("F0101 00:00:00.000 cudnn_conv_layer.cpp:53] Check failed: status == CUDNN_STATUS_SUCCESS (4 vs. 0)"
            "  CUDNN_STATUS_INTERNAL_ERROR\n"
            "    @     0x7f caffe::CuDNNConvolutionLayer<>::LayerSetUp()")
    marker = [h for h in scan(text, "log") if h.signature.name == "caffe-cudnn-layer-setup"]
    assert [h.groups.get("call") for h in marker] == ["cudnnCreate"]
    first = diagnose(log=text)[0]
    assert first.id == "cudnn-init-failed"
    assert "cudnnCreate returned" in first.title


# --------------------------------------------------------------------------- versions: undefined symbols

# The file that lacks the symbol decides (knowledge/versions.py, _undefined_symbol): inside a
# libcudnn_* sub-library it is a sub-library mix (cuDNN 8/9 sub-libraries of two releases,
# docs/facts.md "cuDNN on a machine without a GPU"), in a framework's own extension the framework was built against a newer
# cuDNN (glibc "undefined symbol"; PyTorch "libtorch_cuda.so: undefined symbol: cudnnGetLibConfig,
# version libcudnn_graph.so.9").
UNDEFINED = [
    ("ImportError: /x/torch/lib/libtorch_cuda.so: undefined symbol: cudnnGetLibConfig, version libcudnn_graph.so.9",
     "cudnn-version-mismatch"),  # a framework file; "libcudnn_" further on names only the version
    ("OSError: /usr/lib/libcudnn_cnn_train.so.8: undefined symbol: _ZN5cudnn3cnn5infer22queryClusterPropertiesERPhS3_",
     "cudnn-sublibrary-load-failed"),
    (r"OSError: C:\env\lib\libcudnn_ops.so.9: undefined symbol: cudnnFoo", "cudnn-sublibrary-load-failed"),  # a \ path
    ("OSError: /opt/LIBCUDNN_ADV.so.9: undefined symbol: cudnnFoo", "cudnn-sublibrary-load-failed"),  # any case
    ("OSError: libcudnn_cnn_infer.so.8: undefined symbol: cudnnFoo", "cudnn-sublibrary-load-failed"),  # no directory
    ("OSError: /a/libcudnn.so.8: undefined symbol: cudnnFoo", "cudnn-version-mismatch"),  # the main library
    ("libtorch.dylib: undefined symbol: cudnnFoo", "cudnn-version-mismatch"),
    # no file named: the sub-library's name anywhere on the line decides
    ("undefined symbol: cudnnFoo in LIBCUDNN_OPS", "cudnn-sublibrary-load-failed"),
    ("undefined symbol: cudnnFoo (libcudnn_adv)", "cudnn-sublibrary-load-failed"),
    ("undefined symbol: cudnnFoo (CUDNN_OPS)", "cudnn-sublibrary-load-failed"),
    ("undefined symbol: cudnnFoo (Cudnn_Cnn)", "cudnn-sublibrary-load-failed"),
    ("undefined symbol: cudnnFoo", "cudnn-version-mismatch"),
]


@pytest.mark.parametrize("text, diagnosis", UNDEFINED, ids=[_slug(u[0][-50:]) for u in UNDEFINED])
def test_the_file_lacking_a_cudnn_symbol_decides(text, diagnosis):
    hits = [h for h in scan(text, "exception") if h.signature.name == "undefined-symbol-cudnn"]
    assert [h.diagnosis for h in hits] == [diagnosis]
    # the sub-library mix outweighs every version-mismatch wording (tf-loaded-runtime is 100 only
    # with both versions; the refined weight is above the signature's own 92)
    assert hits[0].weight > 92.0 if diagnosis == "cudnn-sublibrary-load-failed" else hits[0].weight == 92.0


# --------------------------------------------------------------------------- init: the handle

# TensorFlow/XLA cuda_dnn.cc CudnnSupport::Init prints "Could not create cudnn handle: <status>":
# the status decides (ALLOC_FAILED and cuDNN 9's *_ALLOCATION_FAILED are memory, the cuDNN 9
# INCOMPATIBLE_CUDA_DRIVER a driver too old, ARCH_MISMATCH a GPU the build lacks); "could not
# destroy" is a weak sign only. Statuses per cuDNN 8 cudnn_ops_infer.h / cuDNN 9 cudnn_graph.h.
HANDLE = [
    ("Could not create cudnn handle: CUDNN_STATUS_ALLOC_FAILED", "gpu-out-of-memory"),
    ("could not create cudnn handle: cudnn_status_alloc_failed", "gpu-out-of-memory"),  # TF 1.x lower case
    ("Could not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED", "gpu-out-of-memory"),
    ("Could not create cudnn handle: CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER", "cuda-driver-too-old"),
    ("could not create cudnn handle: cudnn_status_not_supported_incompatible_cuda_driver", "cuda-driver-too-old"),
    ("Could not create cudnn handle: CUDNN_STATUS_ARCH_MISMATCH", "gpu-arch-unsupported"),
    ("could not create cudnn handle: cudnn_status_arch_mismatch", "gpu-arch-unsupported"),
    ("Could not create cudnn handle: CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH", "gpu-arch-unsupported"),
    ("Could not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR", "cudnn-init-failed"),
    ("Could not create cudnn handle: CUDNN_STATUS_NOT_INITIALIZED", "cudnn-init-failed"),
    ("Could not create cudnn handle: 4", "cudnn-init-failed"),  # a number: the signature's own id
    ("Could not create cudnn handle", "cudnn-init-failed"),
    ("could not destroy cudnn handle: CUDNN_STATUS_ALLOC_FAILED", "cudnn-init-failed"),  # destroy: never memory
    ("Could not DESTROY cudnn handle: CUDNN_STATUS_ARCH_MISMATCH", "cudnn-init-failed"),
]


@pytest.mark.parametrize("text, diagnosis", HANDLE, ids=[_slug(h[0]) for h in HANDLE])
def test_the_handle_status_decides(text, diagnosis):
    assert _family(text, "init") == [("cudnn-create-handle", diagnosis)]


def test_a_failed_destroy_weighs_less_than_a_failed_create():
    create = scan("Could not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR", "log")[0]
    destroy = scan("could not destroy cudnn handle: CUDNN_STATUS_INTERNAL_ERROR", "log")[0]
    assert destroy.weight < create.weight
    # also when no status is printed after it
    assert scan("could not destroy cudnn handle", "log")[0].weight < scan("Could not create cudnn handle", "log")[0].weight
    # the statuses that name a cause weigh more than the bare handle failure
    for status in ("ALLOC_FAILED", "NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER", "ARCH_MISMATCH"):
        h = scan(f"Could not create cudnn handle: CUDNN_STATUS_{status}", "log")[0]
        assert h.weight > create.weight, status


# --------------------------------------------------------------------------- signature: sig()

# sig() builds a Signature from plain data: keywords lower-cased (the matcher looks them up in the
# lower-cased text), patterns and extras compiled case-insensitive unless flags say otherwise.
def test_sig_builds_a_case_insensitive_signature_with_lower_case_keywords():
    s = sig("x-name", "cudnn-bad-param", "status", ["Could Not SET", "abc"], [r"Could not (?P<w>set) it", r"b+"],
            70.0, extras=[r"Size: (?P<size>\d+)"], window=2, gate="dnn")
    assert isinstance(s, Signature)
    assert (s.name, s.diagnosis, s.family, s.weight, s.window, s.gate) == (
        "x-name", "cudnn-bad-param", "status", 70.0, 2, "dnn")
    assert s.keywords == ("could not set", "abc")
    assert [p.pattern for p in s.patterns] == [r"Could not (?P<w>set) it", r"b+"]
    assert s.patterns[0].search("COULD NOT SET IT").group("w") == "SET"
    assert [p.pattern for p in s.extras] == [r"Size: (?P<size>\d+)"]
    assert s.extras[0].search("size: 12").group("size") == "12"


def test_sig_flags_zero_keeps_patterns_and_extras_case_sensitive():
    s = sig("y", "cudnn-bad-param", "status", ["k"], [r"CUDNN_X"], 1.0, extras=[r"Size"], flags=0)
    assert s.patterns[0].search("cudnn_x") is None and s.patterns[0].search("CUDNN_X")
    assert s.extras[0].search("size") is None and s.extras[0].search("Size")
    assert s.keywords == ("k",) and s.extras and s.refine is None


# --------------------------------------------------------------------------- the package's names

@pytest.mark.parametrize("name, home", [
    ("scan", "matcher"), ("keyword_lines", "matcher"), ("signatures", "matcher"), ("MAX_LINE", "matcher"),
    ("Signature", "signature"), ("Hit", "signature"), ("sig", "signature"),
])
def test_the_package_re_exports_each_name_from_its_module(name, home):
    mod = __import__(f"cudnn_magic.knowledge.{home}", fromlist=[name])
    assert getattr(knowledge, name) is getattr(mod, name)


def test_an_unknown_name_of_the_package_is_an_attribute_error_naming_it():
    with pytest.raises(AttributeError, match=r"cudnn_magic\.knowledge.*no attribute 'no_such_name'"):
        knowledge.no_such_name  # noqa: B018
    assert not hasattr(knowledge, "matcher_of_nothing")
    assert sorted(knowledge.__all__) == knowledge.__all__ and "scan" in knowledge.__all__


# --------------------------------------------------------------------------- loading: which library

# A loader line that names a cuDNN sub-library (libcudnn_ops/cnn/adv/graph/engines/heuristic/ext,
# cuDNN 8/9 layout, docs/facts.md "cuDNN on a machine without a GPU") is a sub-library that failed; the main libcudnn is "not
# found" (TensorFlow dso_loader.cc dlerror, CTranslate2's loader, Paddle's dynamic_loader.cc, PyTorch's
# Windows DLL loader in torch/__init__.py).
LOADERS = [
    ("Could not load dynamic library 'libcudnn.so.8'; dlerror: libcudnn.so.8: cannot open shared object file",
     "tf-dlerror-cudnn", "cudnn-library-not-found"),
    ("Could not load dynamic library 'libcudnn_ops_infer.so.8'; dlerror: x", "tf-dlerror-cudnn",
     "cudnn-sublibrary-load-failed"),
    ("Could not load dynamic library 'libcudnn_adv.so.9'; dlerror: x", "tf-dlerror-cudnn",
     "cudnn-sublibrary-load-failed"),
    ("Could not load dynamic library 'libcudnn_engines_precompiled.so.9'; dlerror: x", "tf-dlerror-cudnn",
     "cudnn-sublibrary-load-failed"),
    ("Could not load dynamic library 'libcudnn_heuristic.so.9'; dlerror: x", "tf-dlerror-cudnn",
     "cudnn-sublibrary-load-failed"),
    ("Library libcudnn_ops.so.9.1.0 is not found or cannot be loaded", "ctranslate2-cudnn-not-found",
     "cudnn-sublibrary-load-failed"),
    ("Library LIBCUDNN_CNN.so.9 is not found or cannot be loaded", "ctranslate2-cudnn-not-found",
     "cudnn-sublibrary-load-failed"),  # the sub-library test ignores case
    ("Library libcudnn.so.9 is not found or cannot be loaded", "ctranslate2-cudnn-not-found",
     "cudnn-library-not-found"),
    ("The third-party dynamic library (libcudnn.so) that Paddle depends on is not configured correctly.",
     "paddle-third-party-lib", "cudnn-library-not-found"),
    ("The third-party dynamic library (LIBCUDNN.so) that Paddle depends on is not configured correctly.",
     "paddle-third-party-lib", "cudnn-library-not-found"),
    # Windows: cudnn64_N.dll itself is the main library; cudnn_<sub>64_N.dll a sub-library
    ('OSError: Error loading "C:\\env\\cudnn64_9.dll" or one of its dependencies.', "windows-dll-or-dependencies",
     "cudnn-library-not-found"),
    ('OSError: Error loading "C:\\env\\CUDNN64_9.dll" or one of its dependencies.', "windows-dll-or-dependencies",
     "cudnn-library-not-found"),
    ('OSError: Error loading "C:\\env\\cudnn_ops64_9.dll" or one of its dependencies.', "windows-dll-or-dependencies",
     "cudnn-sublibrary-load-failed"),
]


@pytest.mark.parametrize("text, name, diagnosis", LOADERS, ids=[_slug(t[0]) for t in LOADERS])
def test_the_library_a_loader_names_decides(text, name, diagnosis):
    assert (name, diagnosis) in _family(text, "loading")
    assert all(d == diagnosis for n, d in _family(text, "loading") if n == name)


# Paddle names every third-party library it cannot load the same way: only a cuDNN one is ours.
@pytest.mark.parametrize("lib", ["libcublas.so", "libcudart.so.12", "libnccl.so"])
def test_paddle_third_party_library_that_is_not_cudnn_is_not_a_cudnn_fault(lib):
    text = f"The third-party dynamic library ({lib}) that Paddle depends on is not configured correctly."
    assert [n for n, _ in _family(text, "loading") if n == "paddle-third-party-lib"] == []


# cuDNN 8's loader: "Could not load library libcudnn_cnn_infer.so.8. Error: <dlerror>"; the dlerror
# names the dependency that is missing (NVRTC for the runtime-compiled kernels, cuBLAS(Lt), zlib
# for cuDNN 8, libcuda), and the advice installs that one (fixes/advice.py install_cudnn_deps).
DEPENDENCIES = [
    ("libnvrtc.so: cannot open shared object file: No such file or directory", "libnvrtc.so"),
    ("libnvrtc-builtins.so.12.1: cannot open shared object file", "libnvrtc-builtins.so.12.1"),
    ("libcublasLt.so.11: cannot open shared object file", "libcublasLt.so.11"),
    ("libcublas.so.12: cannot open shared object file", "libcublas.so.12"),
    ("libz.so.1: cannot open shared object file", "libz.so.1"),
    ("libcuda.so.1: cannot open shared object file", "libcuda.so.1"),
    ("LIBNVRTC.SO: cannot open", "LIBNVRTC.SO"),  # dlerror case kept
    ("libcudnn_ops.so.9: undefined symbol: foo", None),  # not a dependency: a sub-library symbol
]


@pytest.mark.parametrize("error, dep", DEPENDENCIES, ids=[_slug(d[0][:30]) for d in DEPENDENCIES])
def test_the_dependency_cudnns_loader_could_not_open_is_named(error, dep):
    text = f"Could not load library libcudnn_cnn_infer.so.8. Error: {error}"
    hits = [h for h in scan(text, "log") if h.signature.name == "cudnn-could-not-load-library"]
    assert [h.diagnosis for h in hits] == ["cudnn-sublibrary-load-failed"]
    assert hits[0].groups.get("dependency") == dep


@pytest.mark.parametrize("missing, step", [
    # the unversioned name: no NVRTC wheel ships it (only libnvrtc.so.<major>), so a pip install would
    # change nothing; the step is the link (or the toolkit's development package that adds it)
    ("libnvrtc.so", "ln -s libnvrtc.so.<version> libnvrtc.so"),
    # a versioned name: the CUDA 11 wheel ships it; cuDNN 8's RUNPATH names nvidia/nvrtc/lib, which no
    # wheel installs, so its folder goes on LD_LIBRARY_PATH too (readelf -d of nvidia-cudnn-cu11 8.x)
    ("libnvrtc.so.11.2", "python -m pip install nvidia-cuda-nvrtc-cu11, then export LD_LIBRARY_PATH="),
], ids=["unversioned", "versioned"])
def test_the_missing_nvrtc_is_what_the_advice_names(missing, step):
    text = (f"Could not load library libcudnn_cnn_infer.so.8. Error: {missing}: cannot open shared object file: "
            "No such file or directory")
    first = diagnose(log=text)[0]
    assert first.id == "cudnn-sublibrary-load-failed"
    deps = next(f for f in first.fixes if f.id == "install-cudnn-deps")
    assert step in deps.action
    assert ("pip install" in deps.action) == missing.startswith("libnvrtc.so.")


# --------------------------------------------------------------------------- builds: no GPU kernel

# TensorFlow: "No OpKernel was registered to support Op 'CudnnRNN' ... Registered devices: [CPU]"
# is a build or a GPU skipped without cuDNN; with a "GPU" device registered (DirectML, Metal
# plugins), that GPU has no cuDNN at all and it is not a cuDNN fault. XLA_GPU is XLA's device,
# not a plugin GPU (TensorFlow 1.x device names).
DEVICES = [
    ("CPU", True), ("CPU, XLA_CPU", True), ("CPU, XLA_GPU", True), ("XLA_CPU, XLA_GPU", True),
    ("CPU, GPU", False), ("CPU, gpu", False), ("XLA_CPU, XLA_GPU, GPU", False), ("GPU", False),
]


@pytest.mark.parametrize("devices, cudnn_fault", DEVICES, ids=[_slug(d) for d, _ in DEVICES])
def test_a_cudnn_op_without_kernel_is_a_build_fault_only_without_a_plugin_gpu(devices, cudnn_fault):
    text = f"No OpKernel was registered to support Op 'CudnnRNN' used by node x\nRegistered devices: [{devices}]"
    expected = [("tf-no-cudnn-opkernel", "cudnn-library-not-found")] if cudnn_fault else []
    assert _family(text, "builds") == expected


# --------------------------------------------------------------------------- the matcher's tables, cold

# The matcher builds its tables (every family's signatures, generic ones last; the keyword index;
# the trigger groups; the windowed keywords) on first use, in each new kernel. A scan with a cold
# cache finds what the docstrings promise: the bare CUDNN_STATUS_* name inside "Could not create
# cudnn handle: ..." belongs to the handle signature (Signature.generic), keywords without a
# trigger literal of their own (zlibwapi.dll; check_support( gated by is_good()) are still found,
# and JAX's window reads the versions printed on the lines after its keyword (jax_plugins/cuda
# __init__.py _check_cuda_versions).
COLD_TEXT = """Could not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR
Loaded runtime CuDNN library: 8.0.5 but source was compiled with: 8.1.0
Could not locate zlibwapi.dll. Please make sure it is in your library path!
Assertion `graph->check_support(handle).is_good()' failed.
Outdated cuDNN installation found.
Version JAX was built against: 8600
Minimum supported: 8600
Installed version: 8500"""

COLD_HITS = [
    ("cudnn-create-handle", "cudnn-init-failed", {"op": "create", "status": "CUDNN_STATUS_INTERNAL_ERROR"}),
    ("tf-loaded-runtime", "cudnn-version-mismatch", {"loaded": "8.0.5", "compiled": "8.1.0"}),
    ("other-library-cannot-open", "cudnn-library-not-found", {"other_library": "zlibwapi.dll"}),
    ("zlibwapi-missing", "cudnn-sublibrary-load-failed", {}),
    ("frontend-check-support-failed", "cudnn-unsupported-config", {}),
    ("jax-outdated-cudnn", "cudnn-version-mismatch", {"compiled": "8600", "minimum": "8600", "loaded": "8500"}),
    ("jax-outdated-cudnn", "cudnn-version-mismatch", {"compiled": "8600", "minimum": "8600", "loaded": "8500"}),
]


def test_a_scan_with_cold_tables_finds_every_family(monkeypatch):
    monkeypatch.setattr(matcher, "_CACHE", {})
    got = [(h.signature.name, h.diagnosis, h.groups) for h in scan(COLD_TEXT, "log", joined=False)]
    assert got == COLD_HITS
    names = [s.name for s in matcher.signatures()]
    assert len(names) == len(set(names))  # every family once
    assert {s.family for s in matcher.signatures()} == set(matcher.FAMILIES)
    generic = [s.generic for s in matcher.signatures()]
    assert generic == sorted(generic)  # specific ones first, generic ones last


def test_keyword_lines_with_cold_tables_keeps_a_window_after_its_keyword(monkeypatch):
    # jax-outdated-cudnn reads up to 6 lines after its keyword (window=6, knowledge/versions.py)
    monkeypatch.setattr(matcher, "_CACHE", {})
    data = (b"x\nOutdated cuDNN installation found.\nVersion JAX was built against: 8600\n"
            b"Minimum supported: 8600\nInstalled version: 8500\na\nb\nc\nd\ne")
    assert matcher.keyword_lines(data, tail=0) == (
        b"Outdated cuDNN installation found.\nVersion JAX was built against: 8600\n"
        b"Minimum supported: 8600\nInstalled version: 8500\na\nb\nc")


# --------------------------------------------------------------------------- the scan's caps and chunks

# Each keyword keeps its first HITS_PER_KEYWORD_HEAD (32) and last HITS_PER_KEYWORD_TAIL (256)
# occurrences when its trigger is too common to gather line by line (more than GATHER_LIMIT = 4096
# occurrences; matcher docstring, step 1). Below the cap every line counts.
HEAD, TAIL = matcher.HITS_PER_KEYWORD_HEAD, matcher.HITS_PER_KEYWORD_TAIL
HANDLE_LINE = "Could not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR (case {})"


def _cases(hits, name="cudnn-create-handle"):
    return sorted(int(h.line.rsplit("case ", 1)[1].rstrip(")")) for h in hits if h.signature.name == name)


@pytest.mark.parametrize("n, filler", [
    (HEAD + TAIL, 5000), (HEAD + TAIL + 1, 5000), (HEAD + TAIL + 12, 5000),  # "dnn" too common: the caps
    (HEAD + TAIL + 12, 0),  # the trigger is rare: every line is gathered
    (HEAD + 1, 5000), (100, 5000),  # fewer than HEAD + TAIL: the tail ends at the head, all kept
])
def test_a_keyword_keeps_its_first_and_last_occurrences(n, filler):
    lines = [f"cudnn ok {i}" for i in range(filler)] + [HANDLE_LINE.format(k) for k in range(n)]
    got = _cases(scan("\n".join(lines), "log", joined=False))
    if filler and n > HEAD + TAIL:
        assert got == list(range(HEAD)) + list(range(n - TAIL, n))
    else:
        assert got == list(range(n))


# Inputs above SCAN_CHUNK are scanned in line-aligned chunks (matcher._scan_chunked): a line cut by a
# chunk's end is read whole in the next chunk, positions are those of the whole input, a line
# repeated in several chunks counts once at its latest place, and a line longer than a chunk is cut
# with an overlap of MAX_LINE bytes. A small chunk stands in for the 4 MiB one.
CHUNK = 4096
DECISIVE = "Loaded runtime CuDNN library: 8.0.5 but source was compiled with: 8.1.0"


def _log(n, inserts):
    lines = [f"noise line {i:05d} " + "z" * 40 for i in range(n)]
    for at, text in sorted(inserts.items(), reverse=True):
        lines.insert(at, text)
    return ("\n".join(lines) + "\n").encode()


def _hits_at(data):
    return [(h.signature.name, h.position, h.groups) for h in scan(data, "log")]


@pytest.mark.parametrize("at", [10, 69, 70, 71, 199])  # 70: the line holds byte CHUNK (4060..4131)
def test_a_chunked_log_reads_each_line_once_at_its_place(monkeypatch, at):
    monkeypatch.setattr(matcher, "SCAN_CHUNK", CHUNK)
    data = _log(200, {at: DECISIVE})
    assert len(data) > 2 * CHUNK
    if at == 70:
        p = data.find(b"Loaded")
        assert p < CHUNK < p + len(DECISIVE)  # the first chunk ends inside the decisive line
    assert _hits_at(data) == [("tf-loaded-runtime", data.find(b"Loaded"), {"loaded": "8.0.5", "compiled": "8.1.0"})]


def test_a_line_repeated_in_several_chunks_counts_once_at_its_latest_place(monkeypatch):
    monkeypatch.setattr(matcher, "SCAN_CHUNK", CHUNK)
    data = _log(300, {10: DECISIVE, 150: DECISIVE, 290: DECISIVE})
    assert _hits_at(data) == [("tf-loaded-runtime", data.rfind(b"Loaded"), {"loaded": "8.0.5", "compiled": "8.1.0"})]


def test_one_signature_keeps_its_first_and_last_hits_over_all_chunks(monkeypatch):
    monkeypatch.setattr(matcher, "SCAN_CHUNK", CHUNK)
    n = HEAD + TAIL + 5
    data = ("\n".join(HANDLE_LINE.format(k) for k in range(n)) + "\n").encode()
    assert len(data) > 4 * CHUNK
    assert _cases(scan(data, "log")) == list(range(HEAD)) + list(range(n - TAIL, n))
    n = HEAD + TAIL  # at the cap: all of them
    data = ("\n".join(HANDLE_LINE.format(k) for k in range(n)) + "\n").encode()
    assert _cases(scan(data, "log")) == list(range(n))


@pytest.mark.parametrize("offset", [CHUNK - 1500, CHUNK - 30, CHUNK + 5, CHUNK + 2500])
def test_a_line_longer_than_a_chunk_is_read_across_the_cut(monkeypatch, offset):
    monkeypatch.setattr(matcher, "SCAN_CHUNK", CHUNK)
    data = b"x" * offset + DECISIVE.encode() + b" " + b"y" * 6000
    assert _hits_at(data) == [("tf-loaded-runtime", offset, {"loaded": "8.0.5", "compiled": "8.1.0"})]


# A match inside the MAX_LINE-byte overlap of a line longer than a chunk is seen by both chunks;
# it is one occurrence, so one hit and one piece of evidence (found writing the table above: it
# was reported twice, with two evidence lines, before the chunked scan merged the same span).
@pytest.mark.parametrize("offset", [4300, 6000, 6100])  # chunks [2096, 6192) and [4192, 8288) overlap
def test_a_match_in_the_overlap_of_two_chunks_is_one_occurrence(monkeypatch, offset):
    monkeypatch.setattr(matcher, "SCAN_CHUNK", CHUNK)
    data = b"x" * offset + DECISIVE.encode() + b" " + b"y" * 6000
    assert _hits_at(data) == [("tf-loaded-runtime", offset, {"loaded": "8.0.5", "compiled": "8.1.0"})]
    first = diagnose(log=data)[0]
    assert first.id == "cudnn-version-mismatch"
    assert sum("Loaded runtime CuDNN library" in e for e in first.evidence) == 1


# --------------------------------------------------------------------------- status: bare numbers

# A bare status number (TensorFlow "Check failed: status == CUDNN_STATUS_SUCCESS (N vs. 0)", "cuDNN
# status N") is decoded with docs/facts.md "Status codes" (cuDNN 8 0..14, cuDNN 9 the thousands): 0 is
# success and no hit, 1 is the first failure (NOT_INITIALIZED in cuDNN 8's cudnn_ops_infer.h).
BARE = [
    ("cuDNN status 0", []),
    ("cuDNN status 1", [("cudnn-init-failed", "CUDNN_STATUS_NOT_INITIALIZED")]),
    ("Check failed: status == CUDNN_STATUS_SUCCESS (1 vs. 0)", [("cudnn-init-failed", "CUDNN_STATUS_NOT_INITIALIZED")]),
    ("cuDNN status 2", [("gpu-out-of-memory", "CUDNN_STATUS_ALLOC_FAILED")]),
]


@pytest.mark.parametrize("text, expected", BARE, ids=[_slug(b[0]) for b in BARE])
def test_a_bare_status_number_from_one(text, expected):
    got = [(h.diagnosis, h.groups.get("status")) for h in scan(text, "log") if h.signature.family == "status"]
    assert got == expected


# A bare number keeps the weight of the diagnosis it decodes to (a little below the name): ALLOC_FAILED
# is memory and outranks TensorFlow's generic "cuDNN launch failure" (knowledge/status.py weights;
# TensorFlow core/kernels "cuDNN launch failure").
@pytest.mark.parametrize("text", [
    "cuDNN launch failure : input shape ([1,2])\ncuDNN status 2",
    "cudnn_status: 2\ncuDNN launch failure",
], ids=["launch-then-number", "number-then-launch"])
def test_a_bare_number_that_names_a_cause_outranks_a_launch_failure(text):
    assert [d.id for d in diagnose(log=text)][:2] == ["gpu-out-of-memory", "cudnn-execution-failed"]


# --------------------------------------------------------------------------- oom: the memory line

# TensorFlow's "Memory usage: N bytes free, M bytes total" (cuda_dnn.cc) counts as memory evidence
# when free < 256 MiB or free < 5 % of the total (knowledge/oom.py NEARLY_FULL_*); a total of 0 is
# no reading. The edges not already in tests/unit/knowledge/test_knowledge.py: a total of one byte, and free
# exactly at 5 % of the total (not below it).


@pytest.mark.parametrize("free, total, full", [
    (0, 1, True),  # a total of one byte is a reading: nothing free
    (300 * MIB, 6000 * MIB, False),  # exactly 5 %: not below it
    (300 * MIB - 1, 6000 * MIB, True),  # one byte below 5 % (and above 256 MiB)
])
def test_the_memory_line_at_five_percent_and_at_a_one_byte_total(free, total, full):
    text = f"Memory usage: {free} bytes free, {total} bytes total"
    got = [h.diagnosis for h in scan(text, "log") if h.signature.name == "tf-memory-usage"]
    assert got == (["gpu-out-of-memory"] if full else [])


# --------------------------------------------------------------------------- hard-wrapped pastes

# Logs pasted hard-wrapped are matched again with their line breaks joined (matcher docstring,
# step 3; _maybe_wrapped): always up to 64 KiB; above, when lines are cut at one fixed column
# (two or more distinct lines of exactly the longest length, 40-400 bytes, and at least half of the
# lines of 80 % of that length or more at it); or, up to 256 KiB, when line by line found nothing
# specific. Observable: a TensorFlow line cut after "but sour" gets its compiled version back, a
# handle failure cut after "cudnn" is found at all. Wordings from TensorFlow/XLA cuda_dnn.cc.
WRAPPED_TF = ("Loaded runtime CuDNN library: 8.0.5 but sour", "ce was compiled with: 8.1.0")
WRAPPED_HANDLE = ("E0101 conv_ops.cc:10] Could not create cudnn", "handle: CUDNN_STATUS_ALLOC_FAILED")


def _filler(i, width=None):
    if width:
        return (f"{i:07d} noise " + "z" * width)[:width]
    return f"{i:07d} noise " + "z" * (i % 23)  # 14..36 bytes: no fixed column


def _paste(size, parts, width=None):
    """``parts`` (a message cut in two lines) among filler lines, exactly ``size`` bytes."""
    lines = [_filler(0, width), parts[0], parts[1]]
    n, i = sum(len(x) + 1 for x in lines), 1
    while n < size:
        lines.append(_filler(i, width))
        n, i = n + len(lines[-1]) + 1, i + 1
    over = n - 1 - size
    if over > 0:
        lines[-1] = lines[-1][: len(lines[-1]) - over]
    data = "\n".join(lines).encode()
    assert len(data) == size
    return data


def _found(data):
    return [(h.signature.name, sorted(h.groups)) for h in scan(data, "log") if h.signature.family in ("versions", "init")]


TF_WHOLE = [("tf-loaded-runtime", ["compiled", "loaded"])]
TF_CUT = [("tf-loaded-runtime", ["loaded"])]


@pytest.mark.parametrize("size, parts, expected", [
    (64 * 1024, WRAPPED_TF, TF_WHOLE),  # a small paste: always a second look
    (64 * 1024 + 1, WRAPPED_TF, TF_CUT),  # above, no fixed column, a specific hit: no second look
    (256 * 1024, WRAPPED_HANDLE, [("cudnn-create-handle", ["op", "status"])]),  # nothing specific found
    (256 * 1024 + 1, WRAPPED_HANDLE, []),
], ids=["64KiB", "64KiB+1", "256KiB-no-hit", "256KiB+1-no-hit"])
def test_a_wrapped_paste_is_joined_up_to_its_size_limits(size, parts, expected):
    assert _found(_paste(size, parts)) == expected


@pytest.mark.parametrize("width, expected", [(39, TF_CUT), (40, TF_WHOLE), (80, TF_WHOLE), (400, TF_WHOLE),
                                             (401, TF_CUT)])
def test_a_paste_cut_at_a_fixed_column_of_40_to_400_bytes_is_joined(width, expected):
    parts = (WRAPPED_TF[0][:width], WRAPPED_TF[0][width:] + WRAPPED_TF[1]) if width < len(WRAPPED_TF[0]) else WRAPPED_TF
    assert _found(_paste(300 * 1024, parts, width)) == expected


@pytest.mark.parametrize("at_width, near, near_width, expected", [
    (2000, 2000, 70, TF_WHOLE),  # half of the long lines at the column: a fixed column
    (1999, 2000, 70, TF_CUT),  # fewer than half
    (1999, 2000, 64, TF_CUT),  # 64 = 80 % of 80 counts as long
    (1999, 2000, 63, TF_WHOLE),  # 63 does not
    (2, 0, 0, TF_WHOLE),  # two distinct lines at the longest length are enough
    (1, 0, 0, TF_CUT),  # one is only the longest line
], ids=["half", "less-than-half", "80%", "below-80%", "two-at-width", "one-at-width"])
def test_a_fixed_column_needs_half_of_the_long_lines_at_it(at_width, near, near_width, expected):
    lines = ([(f"{i:07d} w " + "z" * 80)[:80] for i in range(at_width)]
             + [(f"{i:07d} n " + "z" * 80)[:near_width] for i in range(near)]
             + [_filler(i) for i in range(9000)])
    data = "\n".join(lines[:1] + list(WRAPPED_TF) + lines[1:]).encode()
    assert 64 * 1024 < len(data) <= matcher.MAX_JOIN_BYTES
    assert _found(data) == expected


# --------------------------------------------------------------------------- one line, many signatures

# Hit.position and Hit.span are byte offsets in the UTF-8 text (Hit docstring): characters of two and
# three bytes before the match move it by their bytes, not by one.
def test_positions_are_utf8_byte_offsets():
    text = "é€ " + DECISIVE
    h = scan(text, "log")[0]
    p = text.encode().find(b"Loaded")
    assert (h.position, h.span) == (p, (p, p + len(DECISIVE))) and p == 6


# A line longer than MAX_LINE is matched in a window and quoted 120 characters before the match and
# 200 after it (matcher._match_line; EVIDENCE_CHARS = 400 bounds it after).
def test_a_long_line_is_quoted_around_its_match():
    h = [x for x in scan("a" * 5000 + DECISIVE + "b" * 5000, "log") if x.signature.name == "tf-loaded-runtime"]
    assert [(x.line, x.position) for x in h] == [("a" * 120 + DECISIVE + "b" * 200, 5000)]


# A marker (weight 0: which call failed, knowledge/calls.py) never hides the status name on its
# line; a specific wording does (Signature.generic). ONNX Runtime cuda_call.cc's line holds both.
def test_a_marker_never_hides_the_status_name_on_its_line():
    ort = ("CUDNN failure 4: CUDNN_STATUS_INTERNAL_ERROR ; GPU=0 ; hostname=x ; file=y ; line=52 ; "
           "expr=cudnnCreate(&cudnn_handle_);")
    got = [(h.signature.name, h.diagnosis, h.groups) for h in scan(ort, "exception")]
    assert got == [("ort-cudnn-call", "cudnn-internal-error", {"call": "cudnnCreate"}),
                   ("status-name", "cudnn-internal-error", {"status": "CUDNN_STATUS_INTERNAL_ERROR"})]
    assert diagnose(ort)[0].id == "cudnn-init-failed"  # the call decides (calls.REFINES "handle")


# A warning_only wording (TensorFlow "Ignoring visible gpu device ... compute capability") counts only
# when warnings are asked for (a cell that succeeded: gpu_unused_warnings).
def test_a_warning_only_wording_needs_warnings():
    text = ("W Ignoring visible gpu device (device: 0, name: GeForce GT 730, pci bus id: 0000:01:00.0) with Cuda "
            "compute capability 3.5. The minimum required Cuda capability is 3.7.")
    assert [h.signature.name for h in scan(text, "log")] == []
    assert [h.signature.name for h in scan(text, "log", warnings=True)] == ["tf-ignoring-gpu-capability"]


# JAX's "Outdated cuDNN installation found." prints its versions on the lines after it
# (jax_plugins/cuda/__init__.py); the signature reads 6 lines (window=6); a field on the keyword's
# own line wins over the same field further on.
@pytest.mark.parametrize("between, loaded", [(0, "8500"), (5, "8500"), (6, None)])
def test_jax_versions_are_read_from_the_six_lines_after_the_keyword(between, loaded):
    text = "Outdated cuDNN installation found.\n" + "".join(f"x{i}\n" for i in range(between)) + "Installed version: 8500"
    hits = [h.groups for h in scan(text, "log", joined=False) if h.signature.name == "jax-outdated-cudnn"]
    assert hits[0].get("loaded") == loaded


def test_a_field_on_the_keyword_line_wins_over_the_window():
    text = ("Outdated cuDNN installation found. Installed version: 8400\nVersion JAX was built against: 8600\n"
            "Minimum supported: 8700\nInstalled version: 8500")
    hits = [h.groups for h in scan(text, "log", joined=False) if h.signature.name == "jax-outdated-cudnn"]
    assert hits[0] == {"compiled": "8600", "minimum": "8700", "loaded": "8400"}


# A hard-wrapped paste with CRLF line ends (a Windows log) reads like the same paste with LF ends: one
# hit, whole, at the byte offset of its first line in the original text, the cut one superseded
# (found writing this table: the joined hit was placed by the LF offsets, one byte early per line
# before it, so after enough lines the cut hit stayed beside it as a second piece of evidence).
@pytest.mark.parametrize("before", [0, 1, 40, 200])
@pytest.mark.parametrize("nl", ["\n", "\r\n"], ids=["LF", "CRLF"])
def test_a_wrapped_crlf_paste_reads_like_an_lf_one(before, nl):
    text = ("".join(f"line {i} of noise{nl}" for i in range(before)) + WRAPPED_TF[0] + nl + WRAPPED_TF[1] + nl)
    p = text.encode().find(b"Loaded")
    got = [(h.signature.name, h.groups, h.position) for h in scan(text, "log")]
    assert got == [("tf-loaded-runtime", {"loaded": "8.0.5", "compiled": "8.1.0"}, p)]
    assert diagnose(log=text)[0].evidence == ("Loaded runtime CuDNN library: 8.0.5 but source was compiled with: 8.1.0",)


# The joined copy is made twice (matcher._scan_joined): without a separator (a wrap inside a word,
# "sour|ce") and with a space (a wrap that ate the space, "was|compiled"); the quote is the original
# lines the match spans, each stripped, at most 8 of them.
@pytest.mark.parametrize("text, quoted", [
    ("Loaded runtime CuDNN library: 8.0.5 but sour\nce was compiled with: 8.1.0\n", DECISIVE),
    ("Loaded runtime CuDNN library: 8.0.5 but source was\ncompiled with: 8.1.0\n", DECISIVE),
    ("\n".join(DECISIVE.split(" ")), "Loaded runtime CuDNN library: 8.0.5 but source was"),  # 11 lines: 8 quoted
], ids=["in-a-word", "at-a-space", "eleven-lines"])
def test_a_wrapped_line_is_joined_with_and_without_a_space(text, quoted):
    got = [(h.signature.name, h.groups, h.line) for h in scan(text, "log")]
    assert got == [("tf-loaded-runtime", {"loaded": "8.0.5", "compiled": "8.1.0"}, quoted)]


# Within one scan a line repeated many times is matched once, at its latest place (matcher docstring,
# step 1; a line compared lower-cased, as its keywords are), and the lines a window reads after its
# keyword are cut at MAX_LINE (2000) bytes like any line.
def test_a_repeated_line_is_matched_once_at_its_latest_place():
    handle = "Could not create cudnn handle: CUDNN_STATUS_ALLOC_FAILED"
    text = f"{handle}\nnoise\n{handle.lower()}\nmore\n"
    got = [(h.signature.name, h.position) for h in scan(text, "log", joined=False)]
    assert got == [("cudnn-create-handle", text.index(handle.lower()))]


@pytest.mark.parametrize("pad, loaded", [(matcher.MAX_LINE - 23, "8500"), (matcher.MAX_LINE - 19, None)])
def test_a_window_line_is_read_up_to_max_line_bytes(pad, loaded):
    text = "Outdated cuDNN installation found.\n" + "x" * pad + "Installed version: 8500\n"
    hits = [h.groups for h in scan(text, "log", joined=False) if h.signature.name == "jax-outdated-cudnn"]
    assert [g.get("loaded") for g in hits] == [loaded]


# --------------------------------------------------------------------------------------------
# A hard-wrapped paste is joined again only where a line really was cut (knowledge.matcher
# _scan_joined): never across an empty line (a wrap at a fixed column leaves none inside a wrapped
# line), and never onto a status name the line already holds whole (the CUDNN_STATUS_* names are an
# enumerated set, cudnn_graph.h / cudnn.h). Before, the title glued the next line's first word on:
# "cuDNN could not create its handle (CUDNN_STATUS_INTERNAL_ERRORHello)".
WIDEST_HANDLE_LINE = ("2024-01-01 12:00:00.000000: E tensorflow/stream_executor/cuda/cuda_dnn.cc:329] "
               "Could not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR")
GLUE = [
    WIDEST_HANDLE_LINE + "\n\nHello world",  # the handle line is the widest; a paragraph follows
    WIDEST_HANDLE_LINE + "\n \t\nHello world",  # a blank line of spaces is an empty line too
    WIDEST_HANDLE_LINE + "\r\n\r\nHello world",  # a Windows paste
    WIDEST_HANDLE_LINE + "\nnoise",  # the next line starts with a word
    WIDEST_HANDLE_LINE + "\nNOISE AND MORE",
]


@pytest.mark.parametrize("log", GLUE, ids=[f"glue{i}" for i in range(len(GLUE))])
def test_a_whole_status_line_is_not_glued_to_the_next(log):
    (top, *_) = diagnose(log=log)
    assert top.id == "cudnn-init-failed"
    assert top.title == "cuDNN could not create its handle (CUDNN_STATUS_INTERNAL_ERROR)"


def test_a_status_name_cut_by_the_wrap_is_still_joined():
    # the other side of the edge: the name itself was cut at the wrap column, so joining completes it
    log = "E cuda_dnn.cc:329] Could not create cudnn handle: CUDNN_STATUS_INTERN\nAL_ERROR"
    (top, *_) = diagnose(log=log)
    assert top.title == "cuDNN could not create its handle (CUDNN_STATUS_INTERNAL_ERROR)"


# The name cut at the wrap column ("..._INTERNAL_" / "ERROR") and the next message starting on the
# line after: the joined name ends where its line ends (the longest status name that does), it does
# not run on into "Traceback". Before: "CUDNN_STATUS_INTERNAL_ERRORTraceback", an unknown status.
CUT_AT_WRAP = "2024-01-01 12:00:00.000000: E tensorflow/stream_executor/cuda/cuda_dnn.cc:366] Could not create cudnn handle: "


@pytest.mark.parametrize("cut, tail, status", [
    ("CUDNN_STATUS_INTERNAL_", "ERROR\nTraceback (most recent call last):\n", "CUDNN_STATUS_INTERNAL_ERROR"),
    ("CUDNN_STATUS_INTERNAL_", "ERROR\r\nTraceback (most recent call last):\r\n", "CUDNN_STATUS_INTERNAL_ERROR"),
    ("CUDNN_STATUS_NOT_", "INITIALIZED\nnext\n", "CUDNN_STATUS_NOT_INITIALIZED"),
    ("CUDNN_STATUS_ALLOC", "_FAILED\nI0000 more log\n", "CUDNN_STATUS_ALLOC_FAILED"),
    # the longest name that ends at a line end: NOT_SUPPORTED then _ARCH_MISMATCH (cuDNN 9's)
    ("CUDNN_STATUS_NOT_SUPPORTED", "_ARCH_MISMATCH\nTraceback\n", "CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH"),
    ("CUDNN_STATUS_", "NOT_SUPPORTED\nTraceback\n", "CUDNN_STATUS_NOT_SUPPORTED"),
    # three lines: the name cut twice, then the next message
    ("CUDNN_STATUS_BAD", "_PA\nRAM\nTraceback\n", "CUDNN_STATUS_BAD_PARAM"),
], ids=["internal", "internal-crlf", "not-initialized", "alloc-failed", "longest-name", "not-supported", "two-cuts"])
def test_a_status_name_cut_at_the_wrap_ends_with_its_line(cut, tail, status):
    log = CUT_AT_WRAP + cut + "\n" + tail
    hits = [h for h in scan(log) if h.signature.name == "cudnn-create-handle"]
    assert [h.groups["status"] for h in hits] == [status]
    assert hits[0].line.endswith(status)
    # the same as the message unwrapped, one line: refinement, diagnosis and title
    whole = CUT_AT_WRAP + status + "\nTraceback (most recent call last):\n"
    (one,) = [h for h in scan(whole) if h.signature.name == "cudnn-create-handle"]
    assert (hits[0].diagnosis, hits[0].weight, hits[0].groups) == (one.diagnosis, one.weight, one.groups)
    assert diagnose(log=log)[0].title == diagnose(log=whole)[0].title


# A line that starts a message of its own is never the rest of a wrapped line: the shell's report
# of a process killed by a signal (glibc's strsignal texts) and Python's traceback header. Before,
# "undefined symbol: cudnnCreate" + "Aborted (core dumped)" gave the symbol "cudnnCreateAborted".
@pytest.mark.parametrize("next_line", [
    "Aborted (core dumped)", "Aborted", "Segmentation fault (core dumped)", "Killed", "Illegal instruction (core dumped)",
    "Bus error", "Floating point exception", "Fatal Python error: Aborted", "Traceback (most recent call last):",
])
@pytest.mark.parametrize("line, symbol", [
    ("ImportError: /x/torch/_C.cpython-36m-x86_64-linux-gnu.so: undefined symbol: cudnnSetConvolutionGroupCount",
     "cudnnSetConvolutionGroupCount"),
    ("F tensorflow/stream_executor/cuda/cuda_dnn.cc:1384] could not find cudnnCreate in cudnn DSO; dlerror: "
     "/usr/local/lib/python2.7/dist-packages/tensorflow/python/_pywrap_tensorflow.so: undefined symbol: cudnnCreate",
     "cudnnCreate"),
], ids=["torch", "tf-dso"])
def test_a_name_at_a_line_end_is_not_glued_to_a_new_message(line, symbol, next_line):
    ds = diagnose(log=f"{line}\n{next_line}\n")
    assert ds and {d.versions.get("symbol") for d in ds if "symbol" in d.versions} == {symbol}


@pytest.mark.parametrize("next_line, symbol", [
    ("scriptor_v6", "cudnnSetRNNDescriptor_v6"),  # the rest of the name: a real wrap, joined
    ("Abortedx", "cudnnSetRNNDeAbortedx"),  # not the shell's word: read as the rest of the name
])
def test_only_a_whole_new_message_word_stops_the_join(next_line, symbol):
    line = "ImportError: /usr/lib/python3/dist-packages/caffe2/libcaffe2_gpu.so: undefined symbol: cudnnSetRNNDe"
    (top, *_) = diagnose(log=f"{line}\n{next_line}\n")
    assert top.versions["symbol"] == symbol


def test_a_cut_name_that_is_no_status_name_up_to_any_line_end_is_left_as_read():
    """Only a known name ending exactly at a line end is a cut: "CUDNN_STATUS_INTERNAL_ERRO" +
    "RFOO" has no status name ending at the break, so the joined text is kept as the paste has it."""
    log = CUT_AT_WRAP + "CUDNN_STATUS_INTERNAL_ERRO\nRFOO\nTraceback\n"
    hits = [h for h in scan(log) if h.signature.name == "cudnn-create-handle"]
    assert [h.groups["status"] for h in hits] == ["CUDNN_STATUS_INTERNAL_ERRORFOOTraceback"]


@pytest.mark.parametrize("text, groups", [
    # Windows' LoadLibrary failure as cuDNN 8 prints it (real reports in tests/unit/diagnose/test_real_reports.py)
    ("Could not load library cudnn_ops_infer64_8.dll. Error code 126", {"error_code": "126"}),
    ("Could not load library cudnn_cnn_infer64_8.dll. Error code 193", {"error_code": "193"}),
    ("Could not load library libcudnn_ops_infer.so.8. Error: libcublasLt.so.11: cannot open shared object file",
     {"error": "libcublasLt.so.11: cannot open shared object file"}),
], ids=["126", "193", "error-text"])
def test_the_loader_error_code_is_its_own_field(text, groups):
    (hit,) = [h for h in scan(text) if h.signature.name == "cudnn-could-not-load-library"]
    for key, value in groups.items():
        assert hit.groups.get(key) == value
    assert ("error" in hit.groups) == ("error" in groups)


def test_scan_returns_hits_in_text_order_joined_ones_included():
    """scan's contract (its docstring): hits in text order. A match joined over a hard wrap
    comes at its first line, before a whole line's match further down."""
    log = ("Loaded runtime CuDNN library: 8.0.5 but source was compiled w\nith: 8.1.0\n"
           "noise\nCould not create cudnn handle: CUDNN_STATUS_ALLOC_FAILED\n")
    got = [(h.signature.name, h.position) for h in scan(log)]
    assert [name for name, _ in got] == ["tf-loaded-runtime", "cudnn-create-handle"]
    assert [p for _, p in got] == sorted(p for _, p in got)


# --------------------------------------------------------------------------------------------
# matcher._scan_joined, matcher._status_cut_at_wrap, matcher._named_status: the
# second look at a hard-wrapped paste. Status names: cuDNN's enumerated set (cudnn_graph.h / cudnn.h,
# knowledge/status.py); cuDNN 9 adds longer names that begin with an older one (NOT_SUPPORTED ->
# NOT_SUPPORTED_ARCH_MISMATCH, code 3007; BAD_PARAM -> BAD_PARAM_NULL_POINTER, code 2002).
HANDLE_AT_WRAP = "E0101 cuda_dnn.cc:329] Could not create cudnn handle: "


def _statuses(log, name="cudnn-create-handle"):
    return [h.groups.get("status") for h in scan(log) if h.signature.name == name]


# A whole name wrapped right after a shorter name it begins with is the longer name: the cut at the
# wrap is for a joined name that is NO status name; a known one is kept as joined.
@pytest.mark.parametrize("cut, rest, status", [
    ("CUDNN_STATUS_NOT_SUPPORTED", "_ARCH_MISMATCH", "CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH"),
    ("CUDNN_STATUS_BAD_PARAM", "_NULL_POINTER", "CUDNN_STATUS_BAD_PARAM_NULL_POINTER"),
], ids=["arch-mismatch", "null-pointer"])
def test_a_whole_name_wrapped_after_a_shorter_name_is_the_longer_name(cut, rest, status):
    log = HANDLE_AT_WRAP + cut + "\n" + rest + "\n"
    assert _statuses(log) == [status]
    # the diagnosis a user sees is the unwrapped message's (ARCH_MISMATCH: the GPU is not supported)
    whole = diagnose(log=HANDLE_AT_WRAP + status + "\n")[0]
    assert (diagnose(log=log)[0].id, diagnose(log=log)[0].title) == (whole.id, whole.title)


# A bare status name cut at the wrap, then the next message: the same at byte 0 of the paste as
# anywhere else (the name's place in the joined text is an offset, 0 included).
@pytest.mark.parametrize("lead", ["", " ", "x "], ids=["at-0", "at-1", "at-2"])
def test_a_bare_status_name_cut_at_the_wrap_is_whole_at_any_offset(lead):
    log = lead + "CUDNN_STATUS_INTERNAL_\nERROR\nTraceback\n"
    assert _statuses(log, "status-name") == ["CUDNN_STATUS_INTERNAL_ERROR"]


# A name cut one, two or more letters before its end is joined: the last line of a joined match is
# the line holding its last byte, even when that line holds only that byte; the quote spans both lines.
@pytest.mark.parametrize("k", [1, 2, 5])
def test_a_name_cut_a_few_letters_before_its_end_is_joined(k):
    name = "CUDNN_STATUS_INTERNAL_ERROR"
    log = HANDLE_AT_WRAP + name[:-k] + "\n" + name[-k:] + "\n"
    hits = [h for h in scan(log) if h.signature.name == "cudnn-create-handle"]
    assert [(h.groups["status"], h.line) for h in hits] == [(name, HANDLE_AT_WRAP.strip() + " " + name)]
    # the joined hit's span covers the original lines it was read from
    assert [h.span for h in hits] == [(0, len(log.encode()))]


# What comes BEFORE a wrapped message (an empty line, a traceback header, the shell's abort report)
# never stops its join: only the lines the match spans are checked (a hard wrap leaves no empty
# line, and starts no new message, INSIDE a wrapped line).
@pytest.mark.parametrize("before", ["", "noise\n\n", "\n", "Traceback (most recent call last):\n",
                                    "Aborted (core dumped)\n"], ids=["none", "paragraph", "empty", "traceback", "aborted"])
def test_what_precedes_a_wrapped_message_never_stops_its_join(before):
    log = before + "Loaded runtime CuDNN library: 8.0.5 but sour\nce was compiled with: 8.1.0\n"
    got = [h.groups for h in scan(log) if h.signature.name == "tf-loaded-runtime"]
    assert got == [{"loaded": "8.0.5", "compiled": "8.1.0"}]


# One paste, several messages: a joined candidate that is refused (it runs into a new message, it
# glues a short whole line onto the next, or it repeats one already found) never hides the wrapped
# messages after it; each is joined once, with its own fields.
TF_IN_A_WORD = "Loaded runtime CuDNN library: 8.0.5 but sour\nce was compiled with: 8.1.0\n"
HANDLE_IN_A_WORD = "E Could not create cudnn handle: CUDNN_STATUS_INTERN\nAL_ERROR\n"


@pytest.mark.parametrize("log, symbols, tf, statuses", [
    # refused: a new message on the next line (glibc's strsignal text)
    ("undefined symbol: cudnnCreate\nAborted (core dumped)\n" + TF_IN_A_WORD,
     ["cudnnCreate"], [{"loaded": "8.0.5", "compiled": "8.1.0"}], []),
    # refused: a whole line shorter than the wrap column glued onto the next one
    ("undefined symbol: cudnnCreate\nnoise\n" + TF_IN_A_WORD,
     ["cudnnCreate"], [{"loaded": "8.0.5", "compiled": "8.1.0"}], []),
    ("undefined symbol: cudnnCreate\nmore noise\n" + TF_IN_A_WORD,
     ["cudnnCreate"], [{"loaded": "8.0.5", "compiled": "8.1.0"}], []),
    # two different wrapped messages: both joined
    (TF_IN_A_WORD + HANDLE_IN_A_WORD, [], [{"loaded": "8.0.5", "compiled": "8.1.0"}], ["CUDNN_STATUS_INTERNAL_ERROR"]),
    # a message read alike by both joins (found twice), then one only the join with a space reads
    ("E Could not create cudnn handle:\nCUDNN_STATUS_ALLOC_FAILED\n"
     "Loaded runtime CuDNN library: 8.0.5 but source was\ncompiled with: 8.1.0\n",
     [], [{"loaded": "8.0.5", "compiled": "8.1.0"}], ["CUDNN_STATUS_ALLOC_FAILED"]),
], ids=["after-new-message", "after-short-whole-line", "after-short-two-line", "two-messages",
        "after-a-both-ways-message"])
def test_a_refused_join_never_hides_the_wrapped_messages_after_it(log, symbols, tf, statuses):
    hits = scan(log)
    assert [h.groups["symbol"] for h in hits if h.signature.name == "undefined-symbol-cudnn"] == symbols
    assert [h.groups for h in hits if h.signature.name == "tf-loaded-runtime"] == tf
    assert [h.groups["status"] for h in hits if h.signature.name == "cudnn-create-handle"] == statuses


# A wrapped message is one hit, whichever way it joins: a status alone on the line after its
# message reads the same without and with a space ("handle:CUDNN_..." / "handle: CUDNN_...").
def test_a_message_read_by_both_joins_is_one_hit():
    log = "E Could not create cudnn handle:\nCUDNN_STATUS_ALLOC_FAILED\n"
    assert _statuses(log) == ["CUDNN_STATUS_ALLOC_FAILED"]


# A message whose keyword itself was cut ("cudn" / "n handle") is joined whatever its first line's
# width: the line pass never read it. Another message of the same kind starting on the very next
# line is a message of its own, not a line of the wrapped one.
def test_a_cut_keyword_is_joined_beside_a_whole_message_on_the_next_line():
    log = ("Could not create cudn\nn handle: CUDNN_STATUS_ALLOC_FAILED\n"
           "Could not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR\n")
    assert _statuses(log) == ["CUDNN_STATUS_ALLOC_FAILED", "CUDNN_STATUS_INTERNAL_ERROR"]
    # TensorFlow's version message (cuda_dnn.cc), its keyword cut, then the same message whole
    log = ("Loaded runtime CuDNN libr\nary: 8.0.5 but source was compiled with: 8.1.0\n"
           "Loaded runtime CuDNN library: 8.0.4 but source was compiled with: 8.1.0\n")
    assert [h.groups for h in scan(log) if h.signature.name == "tf-loaded-runtime"] == [
        {"loaded": "8.0.5", "compiled": "8.1.0"}, {"loaded": "8.0.4", "compiled": "8.1.0"}]


# The wrap column is the paste's widest line; a whole line one byte shorter still counts as cut at
# it (the wrap ate a trailing space), two bytes shorter is a line of its own: the name at its end
# is whole, the next line is not glued on.
@pytest.mark.parametrize("short, symbol", [(0, "cudnnSetRNNDescriptor_v6"), (1, "cudnnSetRNNDescriptor_v6"),
                                           (2, "cudnnSetRNNDe"), (3, "cudnnSetRNNDe")])
def test_a_whole_line_is_joined_only_within_one_byte_of_the_wrap_column(short, symbol):
    line = "ImportError: /usr/lib/python3/dist-packages/caffe2/libcaffe2_gpu.so: undefined symbol: cudnnSetRNNDe"
    widest = "x" * (len(line) + short)
    log = f"{widest}\n{line}\nscriptor_v6 x\n"
    assert [h.groups["symbol"] for h in scan(log) if h.signature.name == "undefined-symbol-cudnn"] == [symbol]


# Only a line end AFTER the status name's start can cut it: a line that ends a few bytes before the
# name never does (here 12 bytes before it, where the glued text's first 27 bytes read a known name).
def test_a_line_end_before_the_status_name_never_cuts_it():
    log = "E cuda_dnn.cc:329] Could not create cu\ndnn handle: CUDNN_STATUS_INTERNAL_ERRO\nRFOO\nTraceback\n"
    assert _statuses(log) == ["CUDNN_STATUS_INTERNAL_ERRORFOOTraceback"]


# A status name cut at the wrap, then an empty line (a new paragraph): the name ends with its line
# all the same (an empty line ends where the line before it does; the cut stays before it).
@pytest.mark.parametrize("cut, rest, status", [
    ("CUDNN_STATUS_INTERNAL_", "ERROR", "CUDNN_STATUS_INTERNAL_ERROR"),
    ("CUDNN_STATUS_NOT_SUPPORTED", "_ARCH_MISMATCH", "CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH"),
], ids=["internal", "arch-mismatch"])
@pytest.mark.parametrize("after", ["\n\nHello\n", "\n\n\nHello\n", "\r\n\r\nHello\r\n"], ids=["one", "two", "crlf"])
def test_a_status_name_cut_at_the_wrap_before_an_empty_line_ends_with_its_line(cut, rest, status, after):
    assert _statuses(HANDLE_AT_WRAP + cut + "\n" + rest + after) == [status]
