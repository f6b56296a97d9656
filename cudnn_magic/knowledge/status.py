"""Family "status": cuDNN status names and numbers, and the op-level wordings around them.

Status names come from ``cudnnGetErrorString`` (printed by every framework: PyTorch ``cuDNN
error: CUDNN_STATUS_BAD_PARAM``, CuPy/Chainer ``CuDNNError: CUDNN_STATUS_INTERNAL_ERROR``,
MXNet ``MXNetError ... CUDNN_STATUS_...``, cuDNN frontend ``cudnn_status: ...``). Bare numbers
(``cuDNN status 3000``, TensorFlow ``Check failed: status == CUDNN_STATUS_SUCCESS (7 vs. 0)``)
are decoded with :func:`decode_status` (cuDNN 8 ``0..14``, cuDNN 9
``1000-5xxx``). Which catalogue id each status means: :func:`diagnosis_for_status`.

Op-level wordings, quoted from their sources:

* PyTorch ``aten/src/ATen/native/cudnn/Conv_v7.cpp``: ``Unable to find a valid cuDNN algorithm
  to run convolution``; ``aten/src/ATen/cudnn/Exceptions.h``/``Conv_v8.cpp``: ``This error may
  appear if you passed in a non-contiguous input``, ``FIND was unable to find an engine to
  execute this computation``, ``GET was unable to find an engine ...``; cuDNN frontend
  (``cudnn_frontend``): ``cuDNN Frontend error: [cudnn_frontend] Error: No execution plans
  support the graph``.
* TensorFlow ``cuda_dnn.cc``: ``could not set cudnn filter descriptor: CUDNN_STATUS_BAD_PARAM``;
  ``cuDNN launch failure : input shape ([64,128,1,1])`` (fused batch norm/conv kernels).
* cuDNN's graph API and frontend (PyTorch v8 convolutions and cuDNN SDPA, TransformerEngine,
  cudnn-frontend's Python module, ONNX Runtime >= 1.20, llm.c): ``[cudnn_frontend] Error: No
  execution plans built successfully``, ``No valid execution plans built``, ``No valid engine
  configs for ConvFwd_``, ``cudnnGraphNotSupportedError``, ``Assertion
  `graph->check_support(cudnn_handle).is_good()' failed``, ONNX Runtime ``CUDNN_FE failure 8:
  HEURISTIC_QUERY_FAILED`` (cudnn_frontend ``error_code_t`` names, decoded by
  :data:`FRONTEND_CODES`), PyTorch ``Expected mha_graph->execute(...).is_good() to be true``.
* Convolution algorithm searches that found nothing that runs: PyTorch 0.x ``no valid convolution
  algorithms available in CuDNN``, TensorFlow ``No algorithm worked!``, XLA ``All algorithms tried
  for %cudnn-conv ... failed`` and ``None of the algorithms provided by cuDNN heuristics worked``:
  the problem (grouped/transposed/3-D convolution, layout, size) has no algorithm in this cuDNN,
  or none could get its workspace (memory, the alternative the evidence decides).

The status codes, their names and numbers, are :mod:`.status_codes`.
"""

from __future__ import annotations

from .signature import sig
from .status_codes import decode_status, diagnosis_for_status

# --------------------------------------------------------------------------- the status wordings

# weight of a status name by the diagnosis it points to (specific names are stronger)
_STATUS_WEIGHT = {
    "cudnn-sublibrary-load-failed": 90.0,
    "cuda-driver-too-old": 88.0,
    "gpu-arch-unsupported": 86.0,
    "gpu-out-of-memory": 84.0,
    "tensors-on-different-devices": 76.0,
    "cudnn-version-mismatch": 80.0,
    "cudnn-unsupported-config": 70.0,
    "cudnn-bad-param": 70.0,
    "cudnn-execution-failed": 70.0,
    "cudnn-internal-error": 68.0,
    "cudnn-init-failed": 55.0,
}


def _by_name(groups: dict[str, str], line: str) -> tuple[str | None, float] | None:
    name = groups.get("status", "").upper()
    if name == "CUDNN_STATUS_SUCCESS":
        # "CuDNN error: CUDNN_STATUS_SUCCESS" (old PyTorch) is a failure reported with an
        # unset status; anywhere else SUCCESS is not an error.
        low = line.lower()
        if "error" not in low and "fail" not in low:
            return (None, 0.0)
        if "== cudnn_status_success" in low or "!= cudnn_status_success" in low:
            return (None, 0.0)
        return "cudnn-init-failed", 48.0
    diag = diagnosis_for_status(name)
    if diag is None:
        return (None, 0.0)
    return diag, _STATUS_WEIGHT.get(diag, 60.0)


def _by_camel(groups: dict[str, str], line: str) -> tuple[str | None, float] | None:
    """``cudnnStatusArchMismatch`` (Python/Julia wrappers) -> ``CUDNN_STATUS_ARCH_MISMATCH``."""
    camel = groups.get("camel", "")
    name = "CUDNN_STATUS_" + "".join("_" + c if c.isupper() and i else c for i, c in enumerate(camel)).upper()
    groups["status"] = name
    return _by_name(groups, line)


def _by_number(groups: dict[str, str], line: str) -> tuple[str | None, float] | None:
    try:
        code = int(groups.get("status_code", ""))
    except ValueError:
        return (None, 0.0)
    if code == 0:
        return (None, 0.0)
    st = decode_status(code)
    groups["status"] = st.name
    if st.diagnosis is None:
        return (None, 0.0)
    return st.diagnosis, _STATUS_WEIGHT.get(st.diagnosis, 60.0) - 4.0


#: cudnn_frontend ``error_code_t`` names (cudnn_frontend/graph_properties.h) -> catalogue id.
FRONTEND_CODES: dict[str, str] = {
    "GRAPH_NOT_SUPPORTED": "cudnn-unsupported-config",
    "HEURISTIC_QUERY_FAILED": "cudnn-unsupported-config",
    "GRAPH_EXECUTION_PLAN_CREATION_FAILED": "cudnn-unsupported-config",
    "UNSUPPORTED_GRAPH_FORMAT": "cudnn-unsupported-config",
    "GRAPH_EXECUTION_FAILED": "cudnn-execution-failed",
    "ATTRIBUTE_NOT_SET": "cudnn-bad-param",
    "SHAPE_DEDUCTION_FAILED": "cudnn-bad-param",
    "INVALID_TENSOR_NAME": "cudnn-bad-param",
    "INVALID_VARIANT_PACK": "cudnn-bad-param",
    "INVALID_VALUE": "cudnn-bad-param",
    "HANDLE_ERROR": "cudnn-init-failed",
    "INVALID_CUDA_DEVICE": "tensors-on-different-devices",
}


def _frontend_code(groups: dict[str, str], line: str) -> tuple[str | None, float] | None:
    """An error_code_t name decides; CUDNN_BACKEND_API_FAILED / CUDA_API_FAILED defer to the
    cuDNN or CUDA status printed with them (the status-name signature)."""
    diag = FRONTEND_CODES.get(groups.get("fe_code", "").upper())
    if diag is None:
        return (None, 0.0)
    return diag, _STATUS_WEIGHT.get(diag, 60.0) + 6.0


SIGNATURES = (
    sig(
        "non-contiguous-input", "cudnn-unsupported-config", "status",
        ["non-contiguous input"],
        [r"This error may appear if you passed in a non-contiguous input"],
        84.0,
        title_plain="cuDNN does not support this input layout (a non-contiguous tensor)", gate="dnn",
        summary="cuDNN returned NOT_SUPPORTED for this call; PyTorch adds that a non-contiguous "
        "input (after permute/transpose/expand) is a common cause.",
        fixes=("make-contiguous", "cudnn-fallback"), framework="PyTorch",
        source="PyTorch aten/src/ATen/cudnn/Exceptions.h",
    ),
    sig(
        "find-get-unable-engine", "cudnn-unsupported-config", "status",
        ["was unable to find an engine"],
        [r"(?P<mode>FIND|GET) was unable to find an engine"],
        82.0,
        also=(("cudnn-version-mismatch", 50.0),),
        title_plain="cuDNN has no engine for this computation ({mode} found none)",
        summary="PyTorch's cuDNN v8 API asked cuDNN for an engine for this convolution and got "
        "none: the layout, data type or size is not supported by the cuDNN in use, which is "
        "often older than the one PyTorch was built with.",
        fixes=("make-contiguous", "install-matching-cudnn", "disable-cudnn-benchmark", "cudnn-fallback"),
        framework="PyTorch", source="PyTorch aten/src/ATen/native/cudnn/Conv_v8.cpp",
    ),
    sig(
        "frontend-no-execution-plans", "cudnn-unsupported-config", "status",
        ["no execution plans support the graph", "cudnn frontend error", "no valid execution plans",
         "execution plans built", "no valid engine configs", "cudnngraphnotsupportederror"],
        [r"No (?:valid )?execution plans (?:support the graph|built)", r"No valid engine configs for",
         r"cudnnGraphNotSupportedError", r"cuDNN Frontend error"],
        82.0,
        title_plain="cuDNN has no execution plan for this graph (cuDNN frontend)",
        summary="The cuDNN frontend could not build an execution plan for this operation graph "
        "(e.g. PyTorch's cuDNN scaled-dot-product attention): this cuDNN does not support the "
        "shapes, data types or GPU for it.",
        fixes=("cudnn-fallback", "install-matching-cudnn"),
        source="NVIDIA cudnn-frontend error messages",
    ),
    sig(
        "frontend-error-code", "cudnn-unsupported-config", "status",
        ["cudnn_fe failure"],
        [r"CUDNN_FE failure \d{1,4}:\s{0,2}(?P<fe_code>[A-Z_]{3,60})"],
        80.0, refine=_frontend_code, flags=0,
        title_plain="The cuDNN frontend failed ({fe_code})",
        summary="The cuDNN frontend (graph API) reported this error code for the operation graph: "
        "unsupported graphs and failed heuristics mean this cuDNN has no engine for the problem; an "
        "execution failure happened while running the chosen plan.",
        fixes=("cudnn-fallback", "install-matching-cudnn"), framework="ONNX Runtime",
        source="cudnn_frontend error_code_t (graph_properties.h) as printed by ONNX Runtime cudnn_fe_call.cc",
    ),
    sig(
        "frontend-check-support-failed", "cudnn-unsupported-config", "status",
        ["check_support("],
        [r"check_support\(\s{0,2}\w{0,40}\s{0,2}\)\.is_good\(\)'? failed"],
        80.0, gate="is_good()",
        title_plain="cuDNN has no execution plan for this graph (check_support failed)",
        summary="The cuDNN frontend found no engine that supports this operation graph on this GPU and "
        "cuDNN (a failed check_support is what 'No execution plans support the graph' reports).",
        fixes=("cudnn-fallback", "install-matching-cudnn"),
        source="cudnn-frontend graph API (graph->check_support(handle).is_good()) asserted by llm.c and others",
    ),
    sig(
        "frontend-execute-failed", "cudnn-execution-failed", "status",
        ["graph->execute(", "graph.execute("],
        [r"Expected (?P<graph>\w{0,20}graph)\s{0,2}(?:->|\.)\s{0,2}execute\([^\n]{0,200}?is_good\(\) to be true"],
        72.0, also=(("cudnn-unsupported-config", 68.0),), framework="PyTorch", gate="is_good()",
        title_plain="cuDNN failed to run the plan it built for this graph (e.g. cuDNN attention)",
        summary="cuDNN built an execution plan for this operation graph (PyTorch's cuDNN scaled-dot-product "
        "attention, a fused convolution) but running it failed: some shape/mask combinations hit cuDNN "
        "or framework bugs; another attention/convolution backend avoids it.",
        fixes=("cudnn-fallback", "install-matching-cudnn"),
        source="PyTorch aten/src/ATen/native/cudnn/MHA.cpp (TORCH_CHECK(mha_graph->execute(...).is_good()))",
    ),
    sig(
        "no-valid-conv-algorithms", "cudnn-unsupported-config", "status",
        ["no valid convolution algorithms", "no algorithm worked", "all algorithms tried for",
         "none of the algorithms provided by cudnn heuristics worked"],
        [r"no valid convolution algorithms available in CuDNN", r"No algorithm worked",
         r"All algorithms tried for [^\n]{0,2000}? failed", r"All algorithms tried for",
         r"None of the algorithms provided by cuDNN heuristics worked"],
        76.0, gate="algorithm",
        also=(("gpu-out-of-memory", 66.0),),
        title_plain="No cuDNN convolution algorithm could run this problem",
        summary="The framework tried every convolution algorithm cuDNN offered and none ran: this cuDNN "
        "has no algorithm for the problem (grouped, transposed or 3-D convolutions, unusual layouts or "
        "sizes), or none could get its workspace because GPU memory was exhausted (the errors listed "
        "per algorithm say which).",
        fixes=("free-gpu-memory", "allow-memory-growth", "disable-cudnn-benchmark", "cudnn-fallback"),
        source="PyTorch 0.x Conv.cpp; TensorFlow conv_ops.cc ('No algorithm worked!'); XLA gpu_conv_algorithm_picker.cc",
    ),
    sig(
        "no-valid-cudnn-algorithm", "cudnn-unsupported-config", "status",
        ["unable to find a valid cudnn algorithm"],
        [r"Unable to find a valid cuDNN algorithm to run convolution"],
        78.0,
        also=(("gpu-out-of-memory", 66.0),),
        title_plain="cuDNN found no algorithm that can run this convolution",
        summary="No cuDNN convolution algorithm could run this problem. Most often the GPU had "
        "no memory left for any algorithm's workspace; otherwise the configuration is not "
        "supported by this cuDNN.",
        fixes=("free-gpu-memory", "disable-cudnn-benchmark", "cudnn-fallback"), framework="PyTorch",
        source="PyTorch aten/src/ATen/native/cudnn/Conv_v7.cpp",
    ),
    sig(
        "tf-set-descriptor", "cudnn-bad-param", "status",
        ["could not set cudnn"],
        [r"could not set cudnn (?P<descriptor>\w{1,40}) descriptor:?\s{0,3}(?P<status>CUDNN_STATUS_[A-Z_]{2,60})?"],
        72.0,
        also=(("cudnn-version-mismatch", 60.0),),
        title_plain="cuDNN rejected the {descriptor} descriptor",
        summary="cuDNN refused a tensor/filter descriptor. Either the shapes are invalid, or "
        "the binary was built for another cuDNN major version than the one loaded (the "
        "descriptor API changed between majors).",
        fixes=("install-matching-cudnn", "check-shapes"), framework="TensorFlow",
        source="TensorFlow stream_executor/cuda/cuda_dnn.cc (ScopedFilterDescriptor)",
    ),
    sig(
        "cudnn-launch-failure", "cudnn-execution-failed", "status",
        ["cudnn launch failure"],
        [r"cuDNN launch failure(?:\s{0,3}:\s{0,3}input shape\s{0,3}\((?P<shape>\[[\d, ]{1,60}\])\))?"],
        66.0,
        title_plain="A cuDNN kernel failed to launch (cuDNN launch failure)",
        summary="cuDNN could not launch or finish its kernel. Causes seen: cuDNN never got a "
        "working handle (see the log above), GPU memory exhausted, a CUDA/cuDNN combination "
        "the framework was not built and tested with, or a build without kernels for this GPU.",
        fixes=("allow-memory-growth", "install-matching-cudnn", "restart-kernel"), framework="TensorFlow",
        source="TensorFlow core/kernels (fused batch norm / conv 'cuDNN launch failure')",
    ),
    sig(
        "tf-cudnn-op-launch-failed", "cudnn-execution-failed", "status",
        ["launch failed"],
        [r"cudnn (?P<op>\w{2,40}) launch failed"],
        64.0, gate="dnn",
        also=(("gpu-out-of-memory", 56.0), ("cudnn-version-mismatch", 50.0)),
        title_plain="A cuDNN kernel failed to launch (cudnn {op} launch failed)",
        summary="TensorFlow's cuDNN kernel for this op (pooling, LRN, batch norm) could not run. Causes "
        "seen: cuDNN never got a working handle (see the log above: a cuDNN other than the one "
        "TensorFlow was built with, a driver too old), GPU memory exhausted, or a GPU newer than the "
        "CUDA/cuDNN the build supports.",
        fixes=("allow-memory-growth", "install-matching-cudnn", "restart-kernel"), framework="TensorFlow",
        source="TensorFlow core/kernels/pooling_ops_common.cc ('cudnn PoolForward launch failed')",
    ),
    sig(
        "tf-cudnn-rnn-call-failed", "cudnn-execution-failed", "status",
        ["failed to call thenrnn"],
        [r"Failed to call ThenRnn(?P<direction>Forward|Backward)"],
        64.0,
        also=(("gpu-out-of-memory", 58.0),),
        title_plain="TensorFlow's cuDNN RNN kernel failed ({direction} pass)",
        summary="The cuDNN implementation of an LSTM/GRU layer failed to run. Seen causes: GPU "
        "memory exhausted, sequence masks that are not right-padded (cuDNN RNNs need right "
        "padding), and a cuDNN other than the one TensorFlow was built with.",
        fixes=("free-gpu-memory", "allow-memory-growth", "cudnn-fallback", "install-matching-cudnn"),
        framework="TensorFlow",
        source="TensorFlow core/kernels/rnn/cudnn_rnn_ops.cc ('Failed to call ThenRnnForward/Backward')",
    ),
    sig(
        "mapping-error", "tensors-on-different-devices", "status",
        ["cudnn_status_mapping_error"],
        [r"CUDNN_STATUS_MAPPING_ERROR"],
        76.0,
        title_plain="The operands of this cuDNN call live on different GPUs (MAPPING_ERROR)",
        summary="cuDNN returned MAPPING_ERROR: in PyTorch this means the tensors of one call are "
        "on different GPUs, or the current device (torch.cuda.current_device()) is not theirs.",
        fixes=("same-device",), source="cuDNN CUDNN_STATUS_MAPPING_ERROR; PyTorch multi-GPU reports",
    ),
    sig(
        "check-failed-status", "cudnn-internal-error", "status",
        ["== cudnn_status_success ("],
        [r"==\s{0,2}CUDNN_STATUS_SUCCESS \((?P<status_code>\d{1,4}) vs\.? 0\)"],
        60.0, generic=True, refine=_by_number,
        title_plain="A cuDNN call failed ({status})",
        source="TensorFlow CHECK macros in stream_executor/cuda/cuda_dnn.cc",
    ),
    sig(
        "status-number", "cudnn-internal-error", "status",
        ["cudnn status", "cudnn_status:", "cudnn_status =", "cudnn error", "cudnnstatus", "cudnn_status "],
        [r"cuDNN[ _]?(?:status|error)(?: code)?\s{0,2}[:=(#]?\s{0,2}(?P<status_code>\d{1,4})\b",
         r"cudnnStatus(?:_t)?\s{0,2}[:=(]?\s{0,2}(?P<status_code>\d{1,4})\b"],
        58.0, generic=True, refine=_by_number,
        title_plain="A cuDNN call failed ({status})",
        source="cuDNN cudnnStatus_t numbers (cudnn_graph.h / cuDNN 8 cudnn_ops_infer.h)",
    ),
    sig(
        "status-camel-case", "cudnn-internal-error", "status",
        ["cudnnstatus"],
        [(r"\bcudnnStatus(?P<camel>NotInitialized|AllocFailed|BadParam|InternalError|InvalidValue|ArchMismatch|"
          r"MappingError|ExecutionFailed|NotSupported|LicenseError|RuntimePrerequisiteMissing|VersionMismatch)\b")],
        60.0, generic=True, refine=_by_camel, flags=0,
        title_plain="A cuDNN call failed with {status}",
        source="cuDNN Python/Julia wrappers naming cudnnStatus_t values in CamelCase (libcudnn.cudnnStatusArchMismatch)",
    ),
    sig(
        "status-name", "cudnn-internal-error", "status",
        ["cudnn_status_"],
        [r"\b(?P<status>CUDNN_STATUS_(?!SUCCESS)[A-Z0-9_]{2,60})", r"\b(?P<status>CUDNN_STATUS_SUCCESS)"],
        60.0, generic=True, refine=_by_name, flags=0,
        title_plain="A cuDNN call failed with {status}",
        source="cudnnGetErrorString names (cuDNN API reference cudnnStatus_t)",
    ),
)
