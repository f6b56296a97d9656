"""Family "stream": ``cudnnSetStream`` failed, usually on an already broken CUDA context.

Catalogue id ``cudnn-stream-set-failed``. Wordings:

* TensorFlow ``stream_executor/cuda/cuda_dnn.cc`` (``CudnnHandle``/``ScopedCudnnHandle``):
  ``Check failed: status == CUDNN_STATUS_SUCCESS (7 vs. 0)Failed to set cuDNN stream.`` (fatal:
  the process aborts).
* Earlier lines that broke the context (``cuda_driver.cc``/``cuda_timer.cc``/``cuda_event.cc``):
  ``CUDA_ERROR_LAUNCH_FAILED: unspecified launch failure``, ``CUDA_ERROR_ILLEGAL_ADDRESS: an
  illegal memory access was encountered`` - they only add evidence.
"""

from __future__ import annotations

from .signature import sig

SIGNATURES = (
    sig(
        "tf-failed-set-cudnn-stream", "cudnn-stream-set-failed", "stream",
        ["set cudnn stream", "set stream for cudnn handle", "set cudnn to use current stream"],
        [r"(?:\((?P<status_code>\d{1,4}) vs\.? 0\)\s{0,3})?(?:Failed to|could not|Unable to) set cuDNN stream",
         r"failed to set stream for cudnn handle:?\s{0,3}(?P<status>CUDNN_STATUS_[A-Z_]{2,60})?",
         r"Could not set cuDNN to use current stream"],
        92.0,
        title_plain="cudnnSetStream failed: the CUDA context was already broken by an earlier error",
        summary="cuDNN could not attach to the CUDA stream, which happens when an earlier CUDA "
        "error (a failed or illegal kernel launch, out of memory, a lost GPU) already broke the "
        "context; TensorFlow then aborts the process. The first CUDA error in the log is the "
        "real cause.",
        fixes=("restart-kernel", "free-gpu-memory"), framework="TensorFlow",
        source="TensorFlow stream_executor/cuda/cuda_dnn.cc ('Failed to set cuDNN stream.')",
    ),
    sig(
        "cuda-context-broken", "cudnn-stream-set-failed", "stream",
        ["cuda_error_launch_failed", "cuda_error_illegal_address", "cuda_error_illegal_instruction",
         "illegal memory access was encountered", "cuda_error_launch_timeout"],
        [r"(?P<cuda_error>CUDA_ERROR_(?:LAUNCH_FAILED|ILLEGAL_ADDRESS|ILLEGAL_INSTRUCTION|LAUNCH_TIMEOUT))",
         r"an illegal memory access was encountered", r"unspecified launch failure"],
        0.0, supports=("cudnn-stream-set-failed", "cudnn-execution-failed", "cudnn-internal-error"),
        source="CUDA driver error names (cuda_driver.cc, cuda_timer.cc)",
    ),
)
