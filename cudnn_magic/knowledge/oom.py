"""Family "oom": GPU memory ran out (often taken by a framework's preallocation).

Catalogue id ``gpu-out-of-memory``. Plain allocator OOM (no cuDNN involved) may get this id but
never a ``cudnn-*`` one (docs/ids.md). Wordings:

* TensorFlow ``cuda_dnn.cc`` after a failed handle creation: ``Memory usage: 1234 bytes free,
  8589934592 bytes total.``; ``bfc_allocator.cc``: ``Allocator (GPU_0_bfc) ran out of memory``;
  ``cuda_driver.cc``: ``failed to allocate 3.2G (3435973836 bytes) from device:
  CUDA_ERROR_OUT_OF_MEMORY``; status ``RESOURCE_EXHAUSTED`` / ``ResourceExhaustedError`` /
  ``OOM when allocating tensor``.
* XLA ``gpu_conv_algorithm_picker.cc``: ``Failed to determine best cudnn convolution
  algorithm``.
* PyTorch ``c10/cuda/CUDACachingAllocator.cpp``: ``CUDA out of memory. Tried to allocate ...``
  (``torch.cuda.OutOfMemoryError``).
"""

from __future__ import annotations

from .signature import sig

SUMMARY = (
    "The GPU had no free memory left for cuDNN's handle or workspace. TensorFlow and JAX "
    "reserve most of the GPU up front, so a second framework or process on the same GPU (or a "
    "large model) leaves cuDNN nothing; large batches do the same."
)
FIXES = ("allow-memory-growth", "free-gpu-memory", "restart-kernel")

#: free memory below this fraction of the total (or below 256 MiB) counts as "nearly full"
NEARLY_FULL_FRACTION = 0.05
NEARLY_FULL_BYTES = 256 * 1024 * 1024


def _memory_usage(groups: dict[str, str], line: str) -> tuple[str | None, float] | None:
    try:
        free, total = int(groups["free"]), int(groups["total"])
    except (KeyError, ValueError):
        return (None, 0.0)
    if total <= 0:
        return (None, 0.0)
    if free < NEARLY_FULL_BYTES or free < total * NEARLY_FULL_FRACTION:
        return None
    return (None, 0.0)  # plenty free: not a memory problem


SIGNATURES = (
    sig(
        "tf-memory-usage", "gpu-out-of-memory", "oom",
        ["memory usage:"],
        [r"Memory usage:\s{0,3}(?P<free>\d{1,20}) bytes free,\s{0,3}(?P<total>\d{1,20}) bytes total"],
        86.0, refine=_memory_usage,
        title_plain="The GPU was nearly full when cuDNN started",
        summary=SUMMARY, fixes=FIXES,
        source="TensorFlow/XLA cuda_dnn.cc CudnnSupport::Init (memory report after a failed handle)",
    ),
    sig(
        "xla-best-conv-algorithm", "gpu-out-of-memory", "oom",
        ["failed to determine best cudnn convolution algorithm"],
        [r"Failed to determine best cudnn convolution algorithm"],
        74.0,
        also=(("cudnn-unsupported-config", 55.0),),
        title_plain="XLA could not profile any cuDNN convolution algorithm (usually no GPU memory left)",
        summary=SUMMARY, fixes=FIXES,
        source="XLA service/gpu/gpu_conv_algorithm_picker.cc",
    ),
    sig(
        "cuda-error-out-of-memory", "gpu-out-of-memory", "oom",
        ["cuda_error_out_of_memory", "cudaerrormemoryallocation"],
        [r"(?P<cuda_error>CUDA_ERROR_OUT_OF_MEMORY|cudaErrorMemoryAllocation)"],
        70.0,
        title_plain="The GPU ran out of memory",
        summary=SUMMARY, fixes=FIXES,
        source="CUDA driver/runtime error names (cuda_driver.cc 'failed to allocate ... from device')",
    ),
    sig(
        "tf-resource-exhausted", "gpu-out-of-memory", "oom",
        ["resource_exhausted", "resourceexhausted", "ran out of memory"],
        [r"RESOURCE_?EXHAUSTED|ResourceExhaustedError", r"OOM when allocating tensor",
         r"Allocator \(GPU_\d{1,3}_bfc\) ran out of memory"],
        66.0,
        title_plain="The GPU ran out of memory (RESOURCE_EXHAUSTED)",
        summary=SUMMARY, fixes=FIXES,
        source="TensorFlow/XLA status RESOURCE_EXHAUSTED, bfc_allocator.cc",
    ),
    sig(
        "torch-cuda-oom", "gpu-out-of-memory", "oom",
        ["cuda out of memory", "outofmemoryerror"],
        [r"CUDA out of memory", r"OutOfMemoryError"],
        60.0,
        title_plain="The GPU ran out of memory",
        summary="PyTorch's caching allocator could not get more GPU memory for a tensor. This is "
        "not a cuDNN fault: free memory or reduce the batch size.",
        fixes=("free-gpu-memory", "restart-kernel"), framework="PyTorch",
        source="PyTorch c10/cuda/CUDACachingAllocator.cpp",
    ),
)
