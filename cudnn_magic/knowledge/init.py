"""Family "init": cuDNN or the framework's DNN support failed to initialize.

Catalogue id ``cudnn-init-failed`` (refined by facts to ``cudnn-version-mismatch``,
``gpu-out-of-memory`` or ``cuda-driver-too-old`` in :mod:`cudnn_magic.engines.diagnose`). Wordings:

* TensorFlow/XLA ``cuda_dnn.cc`` ``CudnnSupport::Init``: ``Could not create cudnn handle:
  CUDNN_STATUS_INTERNAL_ERROR`` (``NOT_INITIALIZED``, ``ALLOC_FAILED``; lower-case ``could not``
  in TF 1.x) and ``could not destroy cudnn handle``; XLA: ``DNN library initialization failed``.
* TensorFlow ``conv_ops.cc``: ``Failed to get convolution algorithm. This is probably because
  cuDNN failed to initialize, so try looking to see if a warning log message was printed
  above.``; ``DNN library is not found.``; ``cudnn_rnn_ops.cc``: ``Fail to find the dnn
  implementation.``; ``stream.h``: ``attempting to perform DNN operation using StreamExecutor
  without DNN support``.
"""

from __future__ import annotations

from .signature import sig

SUMMARY = (
    "cuDNN could not create its handle (or the framework's DNN support never came up), so every "
    "cuDNN op fails. The usual causes are a cuDNN that does not match the framework's build, "
    "GPU memory already taken (TensorFlow and JAX preallocate most of it), or a driver too old "
    "for the CUDA/cuDNN release; the log lines and live facts below decide which."
)
FIXES = ("allow-memory-growth", "install-matching-cudnn", "upgrade-driver", "restart-kernel")


def _handle(groups: dict[str, str], line: str) -> tuple[str | None, float] | None:
    """Status of handle creation decides the diagnosis (ALLOC_FAILED is memory)."""
    status = groups.get("status", "").upper()
    if groups.get("op", "").lower() == "destroy":
        return "cudnn-init-failed", 35.0
    if "ALLOC_FAILED" in status or "ALLOCATION_FAILED" in status:
        return "gpu-out-of-memory", 88.0
    if "INCOMPATIBLE_CUDA_DRIVER" in status:
        return "cuda-driver-too-old", 90.0
    if "ARCH_MISMATCH" in status:
        return "gpu-arch-unsupported", 88.0
    return None


def _before_handle(groups: dict[str, str], line: str) -> tuple[str | None, float] | None:
    err = groups.get("cuda_error", "").lower()
    if "insufficientdriver" in err or "driver version is insufficient" in err or groups.get("code") == "35":
        return "cuda-driver-too-old", 84.0
    if "memoryallocation" in err or "out of memory" in err or groups.get("code") == "2":
        return "gpu-out-of-memory", 84.0
    return None


SIGNATURES = (
    sig(
        "xla-error-before-cudnn-handle", "cudnn-init-failed", "init",
        ["error before creating cudnn handle"],
        [r"There was an error before creating cudnn handle\s{0,2}(?:\((?P<code>\d{1,4})\))?:?\s{0,3}(?P<cuda_error>[^\n]{0,160})"],
        70.0, refine=_before_handle,
        also=(("cuda-driver-too-old", 52.0),),
        title_plain="cuDNN could not create its handle: a CUDA error was already pending",
        summary="XLA checks for a pending CUDA error before creating the cuDNN handle and found one, so "
        "cuDNN never initialized. Usual causes: a CUDA runtime that does not match the driver or the "
        "jaxlib/TensorFlow build (a symbol the runtime lacks), or an earlier failure in this process.",
        fixes=("install-matching-cudnn", "upgrade-driver", "restart-kernel"),
        source="XLA stream_executor/cuda/cuda_dnn.cc CudnnSupport::Init ('There was an error before creating cudnn handle')",
    ),
    sig(
        "cudnn-create-handle", "cudnn-init-failed", "init",
        ["cudnn handle"],
        [r"could not (?P<op>create|destroy) cudnn handle:?\s{0,3}(?P<status>CUDNN_STATUS_[A-Z0-9_]{2,60}|\d{1,4})?"],
        66.0,
        also=(("gpu-out-of-memory", 50.0),),
        title="cuDNN could not create its handle ({status})",
        title_plain="cuDNN could not create its handle",
        summary=SUMMARY, fixes=FIXES,
        refine=_handle,
        source="TensorFlow/XLA stream_executor/cuda/cuda_dnn.cc CudnnSupport::Init",
    ),
    sig(
        "dnn-library-init-failed", "cudnn-init-failed", "init",
        ["dnn library initialization failed"],
        [r"DNN library initialization failed"],
        56.0,
        also=(("gpu-out-of-memory", 45.0),),
        title_plain="cuDNN failed to initialize (DNN library initialization failed)",
        summary=SUMMARY, fixes=FIXES,
        source="XLA stream_executor cuda_dnn.cc (FAILED_PRECONDITION: DNN library initialization failed)",
    ),
    sig(
        "tf-failed-get-conv-algorithm", "cudnn-init-failed", "init",
        ["failed to get convolution algorithm", "cudnn failed to initialize"],
        [r"Failed to get convolution algorithm\.?\s{0,3}This is probably because cuDNN failed to initialize",
         r"Failed to get convolution algorithm"],
        52.0,
        also=(("gpu-out-of-memory", 45.0),),
        title_plain="cuDNN failed to initialize, so TensorFlow found no convolution algorithm", gate="dnn",
        summary=SUMMARY, fixes=FIXES, framework="TensorFlow",
        source="TensorFlow core/kernels/conv_ops*.cc",
    ),
    sig(
        "dnn-library-not-found", "cudnn-init-failed", "init",
        ["dnn library is not found"],
        [r"DNN library is not found"],
        50.0,
        also=(("gpu-out-of-memory", 44.0),),
        title_plain="TensorFlow/XLA has no working cuDNN (DNN library is not found)",
        summary=SUMMARY, fixes=FIXES,
        source="TensorFlow/XLA stream_executor (UNIMPLEMENTED: DNN library is not found)",
    ),
    sig(
        "tf-fail-find-dnn-implementation", "cudnn-init-failed", "init",
        ["fail to find the dnn implementation"],
        [r"Fail to find the dnn implementation"],
        52.0,
        title_plain="TensorFlow found no working cuDNN for this op (Fail to find the dnn implementation)",
        summary=SUMMARY, fixes=FIXES, framework="TensorFlow",
        source="TensorFlow core/kernels/cudnn_rnn_ops.cc",
    ),
    sig(
        "tf-without-dnn-support", "cudnn-init-failed", "init",
        ["without dnn support"],
        [r"DNN operation using StreamExecutor without DNN support"],
        45.0,
        title_plain="TensorFlow has no working cuDNN (StreamExecutor without DNN support)",
        summary=SUMMARY, fixes=FIXES, framework="TensorFlow",
        source="TensorFlow stream_executor/stream.h",
    ),
    sig(
        "tf-cudnn-op-without-device", "cudnn-init-failed", "init",
        ["could not find device for node"],
        [r"Could not find device for node:?\s{0,3}\{\{node (?P<op>Cudnn\w{1,40})\}\}"],
        48.0,
        also=(("cudnn-library-not-found", 45.0),),
        title_plain="TensorFlow has no GPU with cuDNN for the {op} op (it runs on the CPU)",
        summary="A cuDNN-only op (CudnnRNN and friends) was placed with no GPU device registered: "
        "TensorFlow skipped the GPU, usually because libcudnn could not be loaded or does not "
        "match (look for 'Could not load dynamic library' lines).",
        fixes=FIXES, framework="TensorFlow",
        source="TensorFlow common_runtime placer (NotFoundError: Could not find device for node)",
    ),
)
