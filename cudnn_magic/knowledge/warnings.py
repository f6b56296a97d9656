"""Family "warnings": a cell succeeded but the framework will silently skip the GPU.

Used by :func:`cudnn_magic.engines.diagnose.gpu_unused_warnings` (and as weaker evidence by
``diagnose``). Wordings:

* TensorFlow ``core/common_runtime/gpu/gpu_device.cc``: ``Cannot dlopen some GPU libraries.
  Please make sure the missing libraries mentioned above are installed properly if you would
  like to use GPU. ... Skipping registering GPU devices...``
* ONNX Runtime ``onnxruntime_pybind_state.cc``: ``Failed to create CUDAExecutionProvider.
  Require cuDNN 9.* and CUDA 12.*``.
* JAX ``xla_bridge.py``: ``CUDA backend failed to initialize: <reason>`` (only a cuDNN matter
  when the reason is, e.g. ``Found cuDNN version ...`` / ``Unable to load cuDNN``) and ``An
  NVIDIA GPU may be present on this machine, but a CUDA-enabled jaxlib is not installed.
  Falling back to cpu.``
"""

from __future__ import annotations

from .signature import sig

SIGNATURES = (
    sig(
        "tf-cannot-dlopen-gpu-libraries", "cudnn-library-not-found", "warnings",
        ["cannot dlopen some gpu libraries", "skipping registering gpu devices"],
        [r"Cannot dlopen some GPU libraries", r"Skipping registering GPU devices"],
        58.0, warning=True, unnamed_load=True,
        title_plain="TensorFlow could not load its GPU libraries and will run on the CPU",
        summary="TensorFlow could not dlopen some CUDA/cuDNN libraries, so it skipped the GPU: "
        "everything runs on the CPU without an error. The 'Could not load dynamic library' lines "
        "name what is missing.",
        fixes=("install-matching-cudnn", "remove-shadowing-dir"), framework="TensorFlow",
        source="TensorFlow core/common_runtime/gpu/gpu_device.cc",
    ),
    sig(
        "tf-dlerror-other-library", "cudnn-library-not-found", "warnings",
        ["could not load dynamic library"],
        [r"Could not load dynamic library '(?P<other_library>(?!(?:lib)?cudnn)[\w.\-]{1,60})'"],
        0.0, supports=("cudnn-library-not-found",), names_missing="other",
        source="TensorFlow dso_loader.cc (a non-cuDNN library; decides whether cuDNN is the one missing)",
    ),
    sig(
        "ort-failed-cuda-ep", "cudnn-library-not-found", "warnings",
        ["failed to create cudaexecutionprovider", "require cudnn"],
        [r"Failed to create CUDAExecutionProvider", r"Require cuDNN (?P<required>\d{1,2})\.\*"],
        56.0, warning=True, unnamed_load=True,
        extras=[r"Require cuDNN (?P<required>\d{1,2})\.\*(?: and CUDA (?P<cuda>\d{1,2})\.\*)?"],
        title="ONNX Runtime could not create its CUDA provider (it needs cuDNN {required}.x) and falls back to the CPU",
        title_plain="ONNX Runtime could not create its CUDA provider and falls back to the CPU",
        summary="ONNX Runtime's CUDA execution provider could not load (usually libcudnn or "
        "libcublas of the required major is not on the loader path), so sessions run on the CPU.",
        fixes=("install-matching-cudnn", "remove-shadowing-dir"), framework="ONNX Runtime",
        source="ONNX Runtime onnxruntime_pybind_state.cc CreateExecutionProviderInstance",
    ),
    sig(
        "jax-cuda-backend-failed", "cudnn-init-failed", "warnings",
        ["cuda backend failed to initialize"],
        [r"CUDA backend failed to initialize"],
        0.0, supports=("cudnn-version-mismatch", "cudnn-library-not-found", "cudnn-init-failed"), warning=True,
        refutes=("framework-cpu-build",),
        framework="JAX", source="JAX jax/_src/xla_bridge.py (the CUDA plugin is installed and failed)",
    ),
    sig(
        "jax-no-cuda-jaxlib", "framework-cpu-build", "warnings",
        ["cuda-enabled jaxlib is not installed"],
        [r"CUDA-enabled jaxlib is not installed"],
        60.0, warning_only=True, warning=True,
        title_plain="JAX has no CUDA backend (no CUDA plugin installed) and runs on the CPU",
        summary="An NVIDIA GPU is present but JAX has no CUDA backend: its CUDA plugin (jax-cuda12-plugin, "
        "which also brings the matching cuDNN) is not installed, so JAX falls back to the CPU. JAX prints "
        "the same words when the plugin is installed but failed; then 'CUDA backend failed to initialize' "
        "follows with the reason, and that reason is the diagnosis.",
        fixes=("install-cudnn-build",), framework="JAX",
        source="JAX jax/_src/xla_bridge.py _suggest_missing_backends",
    ),
)
