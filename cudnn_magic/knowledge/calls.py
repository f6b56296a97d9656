"""Family "calls": which cuDNN function failed, and whether the failing code runs inside cuDNN.

A status name is not the whole message: the same ``CUDNN_STATUS_INTERNAL_ERROR`` means "cuDNN
could not create its handle" when ``cudnnCreate`` returned it (``cudnn-init-failed``, usually
memory or a broken install) and "an internal error in a kernel" when a convolution returned it.
These markers (weight 0, never a diagnosis of their own) read the called function wherever a
framework prints it; :func:`cudnn_magic.engines.diagnose.diagnose` then refines a bare status with
:data:`REFINES` (the call's role decides the id, the status's own id stays "also possible").

Where frameworks print the call, quoted from their sources:

* ONNX Runtime ``core/providers/cuda/cuda_call.cc``: ``CUDNN failure 4: CUDNN_STATUS_INTERNAL_ERROR
  ; GPU=0 ; hostname=... ; file=... ; line=52 ; expr=cudnnCreate(&cudnn_handle_);``, its cuDNN
  frontend twin ``cudnn_fe_call.cc``: ``CUDNN_FE failure 8: HEURISTIC_QUERY_FAILED ; ... ;
  expr=s_.cudnn_fe_graph->create_execution_plans({heur_mode});`` and ORT <= 1.10 ``CUDNN error
  executing cudnnConvolutionForward(...)``.
* PyTorch ``c10::Error`` backtraces: ``Exception raised from createCuDNNHandle at
  ../aten/src/ATen/cudnn/Handle.cpp:9``; 0.x Python frames ``torch/backends/cudnn/__init__.py ...
  check_error(lib.cudnnCreate(ctypes.byref(ptr)))``; ``torch._cudnn_rnn_flatten_weight`` /
  ``_cudnn_rnn`` frames of ``nn.RNN.flatten_parameters``.
* TensorFlow 1.x ``cuda_dnn.cc``: ``in tensorflow/stream_executor/cuda/cuda_dnn.cc(1921):
  'cudnnRNNBackwardData( cudnn.handle(), ...'``; op names ``{{node CudnnRNN}}``; XLA custom calls
  ``__cudnn$convForward``.
* CuPy/Chainer Cython frames: ``File "cupy/cuda/cudnn.pyx", line 174, in cupy.cuda.cudnn.create``,
  ``cupy_backends.cuda.libs.cudnn.create``, ``cupy.cudnn.get_handle``, Chainer ``_forward_cudnn``.
* cuDNN backend API (PyTorch v8 API, cudnn-frontend, apex): ``CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR:
  cudnnFinalize Descriptor Failed cudnn_status: ...``.
"""

from __future__ import annotations

import re

from .signature import sig

#: Role of a called function, by name (first match wins). Roles: ``handle`` (creating the cuDNN
#: handle), ``stream`` (attaching it to a CUDA stream), ``plan`` (building an execution plan /
#: finalizing a graph), ``algo-search`` (finding/choosing a convolution algorithm). Other calls
#: (descriptors, kernels) have no role: their status keeps its own meaning.
ROLES: tuple[tuple[re.Pattern[str], str], ...] = tuple((re.compile(p, re.IGNORECASE), r) for p, r in (
    (r"^(?:cudnnCreate|createCuDNNHandle|getCudnnHandle|CuDNNHandle|get_handle|create|cudnn_handle)$", "handle"),
    (r"^(?:cudnnSetStream|setStream|set_stream)$", "stream"),
    ((r"^(?:create_execution_plans?|check_support|build_plans|build_operation_graph|get_heuristics|"
      r"cudnnBackendFinalize|finalize:(?:EXECUTION_PLAN|ENGINECFG|ENGINE|ENGINEHEUR|OPERATIONGRAPH|OPERATION\w*))$"), "plan"),
    ((r"^(?:cudnnFind\w{0,40}Algorithm\w{0,10}|cudnnGet\w{0,40}Algorithm(?:_v7)?|find\w{0,40}Algorithm\w{0,10}|"
      r"get\w{0,40}Algorithm(?:_v7)?)$"), "algo-search"),
))

#: How a call's role refines the id a bare status gave: ``{role: {status id: (id, how)}}``.
#: ``how`` is "first" (the call's id ranks above the status's, which stays also possible) or
#: "also" (the call only adds an alternative). A status with a meaning of its own
#: (ALLOC_FAILED, ARCH_MISMATCH, a driver or sub-library status) is never overridden.
REFINES: dict[str, dict[str, tuple[str, str]]] = {
    # cudnnCreate fails with INTERNAL_ERROR/NOT_INITIALIZED/... when the handle cannot be made:
    # memory already taken, a cuDNN/driver mismatch (cuDNN API reference, cudnnCreate).
    "handle": {
        "cudnn-internal-error": ("cudnn-init-failed", "first"),
        "cudnn-execution-failed": ("cudnn-init-failed", "first"),
        "cudnn-bad-param": ("cudnn-init-failed", "first"),
        "cudnn-unsupported-config": ("cudnn-init-failed", "first"),
    },
    # cudnnSetStream fails on a context an earlier CUDA error broke.
    "stream": {
        "cudnn-internal-error": ("cudnn-stream-set-failed", "first"),
        "cudnn-execution-failed": ("cudnn-stream-set-failed", "first"),
        "cudnn-bad-param": ("cudnn-stream-set-failed", "first"),
        "cudnn-init-failed": ("cudnn-stream-set-failed", "first"),
    },
    # Finalizing a plan/engine config fails when no engine supports the graph (cuDNN backend
    # API: BAD_PARAM/NOT_SUPPORTED from cudnnBackendFinalize of an execution plan).
    "plan": {
        "cudnn-bad-param": ("cudnn-unsupported-config", "first"),
        "cudnn-internal-error": ("cudnn-unsupported-config", "first"),
    },
    # Find*/Get*Algorithm allocate every candidate's workspace: a failure there is often memory.
    "algo-search": {
        "cudnn-internal-error": ("gpu-out-of-memory", "also"),
        "cudnn-execution-failed": ("gpu-out-of-memory", "also"),
    },
}


#: Title of a diagnosis refined by the failing call (``str.format`` with the versions: ``call``,
#: ``status``); a missing field falls back to the catalogue title.
TITLES: dict[str, str] = {
    "handle": "cuDNN could not create its handle ({call} returned {status})",
    "stream": "cuDNN could not attach to the CUDA stream ({call} returned {status})",
    "plan": "cuDNN has no execution plan for this operation ({call} returned {status})",
    "algo-search": "The cuDNN algorithm search ran out of GPU memory ({call} returned {status})",
}


def call_role(name: str) -> str | None:
    """The role (:data:`ROLES`) of a called cuDNN function, or None."""
    name = name.strip()
    for pat, role in ROLES:
        if pat.match(name):
            return role
    return None


def _finalize(groups: dict[str, str], line: str) -> None:
    desc = groups.get("descriptor", "").upper()
    groups["call"] = f"finalize:{desc}" if desc else "cudnnBackendFinalize"


def _caffe_setup(groups: dict[str, str], line: str) -> None:
    groups["call"] = "cudnnCreate"  # a CuDNN layer's LayerSetUp is where Caffe creates its handles


_REFINED = ("cudnn-init-failed", "cudnn-stream-set-failed", "cudnn-unsupported-config", "gpu-out-of-memory")

SIGNATURES = (
    sig(
        "ort-cudnn-call", "cudnn-internal-error", "calls",
        ["expr=", "cudnn error executing"],
        [r"CUDNN(?:_FE)? failure [^\n]{0,600}?expr=\s{0,2}(?:[\w.]{1,60}->)?(?P<call>[A-Za-z_]\w{1,80})\s{0,2}\(",
         r"CUDNN error executing (?P<call>cudnn\w{1,80})\s{0,2}\("],
        0.0, supports=_REFINED, cudnn_path=True, gate="dnn", framework="ONNX Runtime",
        source="ONNX Runtime core/providers/cuda/cuda_call.cc and cudnn_fe_call.cc (CudaCall: '; expr=<call>')",
    ),
    sig(
        "check-failed-cudnn-call", "cudnn-internal-error", "calls",
        ["check failed: cudnn", "check failed: (cudnn"],
        [r"Check failed:\s{0,2}\(?(?P<call>cudnn\w{2,80})\s{0,2}\("],
        0.0, supports=_REFINED, cudnn_path=True,
        source="glog CHECK macros naming the cuDNN call (MXNet cudnn_convolution-inl.h, TensorFlow cuda_dnn.cc: "
        "'Check failed: cudnnSetTensorNdDescriptor(...) == CUDNN_STATUS_SUCCESS (3 vs. 0)')",
    ),
    sig(
        "tf-cuda-dnn-call", "cudnn-internal-error", "calls",
        ["cuda_dnn.cc("],
        [r"cuda_dnn\.cc\(\d{1,6}\):\s{0,3}'(?P<call>cudnn\w{1,80})\s{0,2}\("],
        0.0, supports=_REFINED, cudnn_path=True, framework="TensorFlow",
        source="TensorFlow stream_executor/cuda/cuda_dnn.cc (RETURN_IF_CUDNN_ERROR: \"in <file>(<line>): '<call>'\")",
    ),
    sig(
        "torch-exception-raised-from-cudnn", "cudnn-internal-error", "calls",
        ["exception raised from", "getcudnnhandle", "createcudnnhandle"],
        [r"Exception raised from (?P<call>\w{1,80}) at [^\n]{0,300}?(?:ATen[/\\]+(?:native[/\\]+)?cudnn[/\\]|[/\\]cudnn[/\\])",
         r"\bat::native::(?:\(anonymous namespace\)::)?(?P<call>getCudnnHandle|createCuDNNHandle)\b"],
        0.0, supports=_REFINED, cudnn_path=True, framework="PyTorch", gate="dnn",
        source="PyTorch c10::Error backtraces ('Exception raised from createCuDNNHandle at .../ATen/cudnn/Handle.cpp:9')",
    ),
    sig(
        "torch-python-cudnn-frame", "cudnn-internal-error", "calls",
        ["cudnncreate(", "cudnn.get_handle()", "_cudnn_rnn", "cudnnsetstream returned"],
        [r"lib\.(?P<call>cudnnCreate)\s{0,2}\(", r"cudnn\.(?P<call>get_handle)\(\)",
         r"\b(?P<call>cudnnSetStream) returned",
         r"torch\.(?P<call>_cudnn_rnn\w{0,30})", r"\b(?P<call>_cudnn_rnn\w{0,30})\b"],
        0.0, supports=_REFINED, cudnn_path=True, framework="PyTorch",
        source="PyTorch torch/backends/cudnn/__init__.py (0.x CuDNNHandle), torch._cudnn_rnn* frames",
    ),
    sig(
        "torch-rnn-flatten-frame", "cudnn-internal-error", "calls",
        ["flatten_parameters"],
        [r"\bin (?P<call>flatten_parameters)\b", r"\.(?P<call>flatten_parameters)\(\)"],
        0.0, supports=_REFINED, cudnn_path=True, framework="PyTorch",
        source="PyTorch torch/backends/cudnn/__init__.py (0.x CuDNNHandle), torch/nn/modules/rnn.py flatten_parameters",
    ),
    sig(
        "cupy-cudnn-frame", "cudnn-internal-error", "calls",
        ["cudnn.pyx", "cupy.cudnn.", ".libs.cudnn.", "cupy.cuda.cudnn.", "_forward_cudnn", "_backward_cudnn"],
        [r"\bin (?:cupy_backends|cupy)\.(?:cuda\.)?(?:libs\.)?cudnn\.(?P<call>\w{1,60})",
         r"cupy\.cudnn\.(?P<call>\w{1,60})", r"\b(?P<call>_(?:forward|backward)_cudnn)\b"],
        0.0, supports=_REFINED, cudnn_path=True, framework="CuPy",
        source="CuPy cupy/cuda/cudnn.pyx and cupy_backends/cuda/libs/cudnn.pyx (Cython frames); Chainer _forward_cudnn",
    ),
    sig(
        "caffe-cudnn-layer-setup", "cudnn-internal-error", "calls",
        ["layersetup()"],
        [r"caffe::(?P<layer>CuDNN\w{1,40}Layer)<[^>\n]{0,20}>::(?P<call>LayerSetUp)\(\)"],
        0.0, supports=_REFINED, cudnn_path=True, refine=_caffe_setup, framework="Caffe", gate="dnn",
        source="Caffe src/caffe/layers/cudnn_*_layer.cpp (LayerSetUp creates the cuDNN handles: CUDNN_CHECK(cudnnCreate(...)))",
    ),
    sig(
        "julia-cudnn-frame", "cudnn-internal-error", "calls",
        ["cudnn.jl"],
        [r"\bin (?P<call>\w{1,40}) at [^\n]{0,200}?[/\\]cudnn\.jl"],
        0.0, supports=_REFINED, cudnn_path=True,
        source="Julia stack frames of cuDNN wrappers (Mocha.jl src/cuda/cudnn.jl: 'in create at ...cudnn.jl')",
    ),
    sig(
        "cudnn-backend-finalize", "cudnn-internal-error", "calls",
        ["cudnnfinalize"],
        [r"CUDNN_BACKEND_(?P<descriptor>[A-Z_]{2,60}?)(?:_DESCRIPTOR)?:?\s{0,3}cudnnFinalize"],
        0.0, supports=_REFINED, cudnn_path=True, refine=_finalize, flags=0,
        source="cuDNN backend API cudnnBackendFinalize as reported by cudnn-frontend ('<DESCRIPTOR>: cudnnFinalize Failed')",
    ),
    sig(
        "cudnn-op-path", "cudnn-internal-error", "calls",
        ["cudnn_convolution", "cudnn_batch_norm", "{{node cudnn", "/cudnnrnn", "__cudnn$", "cudnn_conv_layer", "cudnnrnn"],
        [r"\b(?P<call>cudnn_convolution\w{0,40}|cudnn_batch_norm\w{0,20}|cudnn_conv_layer)\b",
         r"\{\{node (?:[\w\-]{1,60}/){0,8}(?P<call>Cudnn\w{1,40})\}\}", r"\b(?P<call>CudnnRNN\w{0,20})\b",
         r"__cudnn\$(?P<call>\w{1,40})"],
        0.0, supports=(), cudnn_path=True,
        source="op and kernel names of cuDNN code paths (PyTorch cudnn_convolution, TensorFlow CudnnRNN, "
               "XLA __cudnn$conv, Caffe CuDNN layers)",
    ),
)
