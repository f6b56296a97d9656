"""Family "driver": the NVIDIA driver is older than the CUDA runtime or cuDNN release needs.

Catalogue id ``cuda-driver-too-old``. Wordings:

* TensorFlow ``cuda_dnn.cc`` (printed only after cuDNN handle creation failed, so it needs no
  other context): ``possibly insufficient driver version: 384.69.0``.
* CUDA runtime ``cudaErrorInsufficientDriver`` (35): ``CUDA driver version is insufficient for
  CUDA runtime version``; PyTorch ``The NVIDIA driver on your system is too old``. Alone these
  are CUDA faults, not cuDNN ones (tests/fixtures/corpus/negatives.jsonl): they count only next to a
  cuDNN failure.
* cuDNN 9 status ``CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER`` (family "status").
"""

from __future__ import annotations

from .signature import sig

SUMMARY = (
    "The NVIDIA driver is older than the CUDA runtime (and the cuDNN built for it) requires, so "
    "cuDNN cannot initialize. NVIDIA's minimums: CUDA 11.x needs driver >= 450.80.02, 12.x >= "
    "525.60.13, 13.x >= 580 (Linux)."
)
FIXES = ("upgrade-driver",)

SIGNATURES = (
    sig(
        "tf-possibly-insufficient-driver", "cuda-driver-too-old", "driver",
        ["possibly insufficient driver version"],
        [r"possibly insufficient driver version:?\s{0,3}(?P<driver>\d{2,4}(?:\.\d{1,3}){1,3})"],
        85.0,
        also=(("cudnn-init-failed", 55.0),),
        title="The NVIDIA driver ({driver}) is likely too old for this CUDA/cuDNN build",
        title_plain="The NVIDIA driver is likely too old for this CUDA/cuDNN build",
        summary=SUMMARY, fixes=FIXES, framework="TensorFlow",
        source="TensorFlow stream_executor/cuda/cuda_dnn.cc (after a failed cudnnCreate)",
    ),
    sig(
        "cuda-driver-insufficient", "cuda-driver-too-old", "driver",
        ["driver version is insufficient", "cudaerrorinsufficientdriver", "too old (found version"],
        [r"CUDA driver version is insufficient for CUDA runtime version",
         r"cudaErrorInsufficientDriver",
         r"NVIDIA driver on your system is too old(?: \(found version (?P<driver_cuda>\d{1,6})\))?"],
        82.0, needs_context=True,
        title_plain="The NVIDIA driver is older than this CUDA runtime needs", gate="driver",
        summary=SUMMARY, fixes=FIXES,
        source="CUDA runtime cudaErrorInsufficientDriver; PyTorch c10/cuda",
    ),
    sig(
        "tf-driver-file-contents", "cuda-driver-too-old", "driver",
        ["kernel module"],
        [r"NVIDIA UNIX[^\n]{0,40}Kernel Module\s{1,4}(?P<driver>\d{2,4}(?:\.\d{1,3}){1,2})"],
        0.0, supports=("cuda-driver-too-old", "cudnn-init-failed"),
        source="TensorFlow cuda_diagnostics.cc (driver version file contents)",
    ),
)
