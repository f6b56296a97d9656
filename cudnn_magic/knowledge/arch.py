"""Family "arch": this GPU's compute capability is not supported by the cuDNN or framework build.

Catalogue id ``gpu-arch-unsupported``. Wordings:

* cuDNN statuses ``CUDNN_STATUS_ARCH_MISMATCH`` (8) / ``NOT_SUPPORTED_ARCH_MISMATCH`` (9)
  (family "status").
* PyTorch ``torch/backends/cudnn/__init__.py`` (cuDNN >= 9.11 refuses compute capability < 7.5,
  docs/facts.md): ``cuDNN version ... is not compatible with devices with SM < 7.5``.
* CUDA ``cudaErrorNoKernelImageForDevice``: ``no kernel image is available for execution on the
  device`` - a framework build without kernels for this GPU; counted only next to cuDNN.
"""

from __future__ import annotations

from .signature import sig

SUMMARY = (
    "This GPU's compute capability is outside what the cuDNN release or the framework build "
    "supports (too old for cuDNN >= 9.11, or newer than the build's kernels)."
)

SIGNATURES = (
    sig(
        "torch-sm-too-old", "gpu-arch-unsupported", "arch",
        ["not compatible with devices with sm", "not compatible with devices with compute capability"],
        [r"not compatible with devices with (?:SM|compute capability)\s{0,2}<\s{0,2}(?P<min_sm>\d{1,3}(?:\.\d{1,2})?)"],
        92.0,
        title="This GPU is older than compute capability {min_sm}, the minimum of the cuDNN in use", gate="dnn",
        title_plain="This GPU is too old for the cuDNN in use",
        summary=SUMMARY, fixes=("install-matching-cudnn", "cudnn-fallback"), framework="PyTorch",
        source="PyTorch torch/backends/cudnn/__init__.py (cuDNN 9.11+ compute capability check)",
    ),
    sig(
        "no-kernel-image", "gpu-arch-unsupported", "arch",
        ["no kernel image is available"],
        [r"no kernel image is available for execution on the device"],
        80.0, needs_context=True,
        title_plain="The framework build has no GPU kernels for this GPU",
        summary=SUMMARY, fixes=("install-cuda-build",),
        source="CUDA runtime cudaErrorNoKernelImageForDevice",
    ),
    sig(
        "tf-ignoring-gpu-capability", "gpu-arch-unsupported", "arch",
        ["ignoring visible gpu device"],
        [(r"Ignoring visible gpu device[^\n]{0,200}compute capability (?P<compute_capability>\d{1,2}\.\d)"
          r"[^\n]{0,40}minimum required Cuda capability is (?P<min_sm>\d{1,2}\.\d)")],
        70.0, warning_only=True, warning=True,
        title="TensorFlow ignores this GPU: compute capability {compute_capability} is below its minimum {min_sm}",
        title_plain="TensorFlow ignores this GPU (compute capability too low)",
        summary=SUMMARY + " TensorFlow then runs on the CPU.", fixes=("install-cuda-build",),
        framework="TensorFlow", source="TensorFlow core/common_runtime/gpu/gpu_device.cc",
    ),
    sig(
        "paddle-arch-not-in-build", "gpu-arch-unsupported", "arch",
        ["which is not compatible with paddle installation with arch"],
        [(r"The GPU architecture in your current machine is (?P<gpu_arch>\w{2,20}), which is not compatible with Paddle "
          r"installation with arch:\s{0,2}(?P<build_archs>[\d ]{2,60})")],
        86.0, needs_context=True, framework="PaddlePaddle", gate="gpu",
        title="This GPU ({gpu_arch}) is not among the architectures this PaddlePaddle build has kernels for",
        title_plain="This GPU is not among the architectures this PaddlePaddle build has kernels for",
        summary=SUMMARY + " PaddlePaddle warns about it at start-up; cuDNN calls then fail (often as "
        "CUDNN_STATUS_NOT_INITIALIZED or EXECUTION_FAILED).",
        fixes=("install-cuda-build",),
        source="PaddlePaddle paddle/phi/backends/gpu/gpu_resources.cc (GPU architecture check)",
    ),
)
