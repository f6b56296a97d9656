"""Family "cpu_builds": a framework build without CUDA (and so without cuDNN) was asked for the GPU.

Catalogue id ``framework-cpu-build``, the same id as ``%cudnn_check``'s finding for a CPU build on
a machine with an NVIDIA GPU: installing cuDNN changes nothing, the framework's CUDA build does
(fix ``install-cudnn-build``, worded per framework and CUDA major by
:mod:`cudnn_magic.rules.gpu_builds`). Wordings, quoted from the source that prints them:

* PyTorch ``torch/cuda/__init__.py`` ``_lazy_init``: ``AssertionError: Torch not compiled with CUDA
  enabled`` (1.x: ``_check_driver``); ``torch/serialization.py``: ``Attempting to deserialize object
  on a CUDA device but torch.cuda.is_available() is False`` (a CPU build, or no GPU and driver: the
  ``+cpu`` version or ``CUDA used to build PyTorch: None`` of ``collect_env`` says which); C++ ops of
  extensions built without CUDA (torchvision, detectron2): ``Not compiled with GPU support``.
* TensorFlow placer: ``Could not satisfy explicit device specification '/device:GPU:0' because no
  devices matching that specification are registered in this process; available devices:
  /job:localhost/replica:0/task:0/device:CPU:0`` and ``was explicitly assigned to /device:GPU:0 but
  available devices are [ /job:localhost/replica:0/task:0/device:CPU:0 ]`` (an ``XLA_GPU`` device in
  the list means a CUDA build whose GPU libraries did not load: no claim here, the loader lines decide).
* JAX ``jax/_src/xla_bridge.py``: ``Unknown backend: 'gpu' requested, but no platforms that are
  instances of gpu are present. Platforms present are: cpu`` (the CUDA plugin, jax-cuda12-plugin,
  is not installed; family "warnings" reads its ``a CUDA-enabled jaxlib is not installed``).
* ONNX Runtime ``onnxruntime_inference_collection.py``: ``Specified provider 'CUDAExecutionProvider' is
  not in available provider names.Available providers: 'AzureExecutionProvider, CPUExecutionProvider'``
  (the CPU ``onnxruntime`` wheel; Hugging Face optimum: ``Asked to use CUDAExecutionProvider as an ONNX
  Runtime execution provider, but the available execution providers are [...]``).
* PaddlePaddle ``pybind.cc``/``place.cc``: ``Cannot use GPU because you have installed CPU version
  PaddlePaddle. If you want to use GPU, please try to install GPU version PaddlePaddle by: pip install
  paddlepaddle-gpu``; PaddleClas: ``You are using paddlepaddle cpu version! Please try to install
  paddlepaddle-gpu to run model on GPU.``; PaddleDetection: ``Config use_gpu cannot be set as true while
  you are using paddlepaddle cpu version !``.
* MXNet ``src/common/cuda_utils.h``/``base.h``: ``Compile with USE_CUDA=1 to enable GPU usage``.
* CTranslate2 ``python/cpp/module.cc``: ``This CTranslate2 package was not compiled with CUDA support``.

Not a CPU build, though worded alike: PaddlePaddle's ``You are using GPU version Paddle, but your CUDA
device is not set properly``, TensorFlow's ``no supported kernel for GPU devices is available`` (an op
without a GPU kernel), PyTorch's ``Found no NVIDIA driver on your system``, TensorFlow's ``Your CPU
supports instructions that this TensorFlow binary was not compiled to use``.
"""

from __future__ import annotations

from .signature import sig

FIXES = ("install-cudnn-build",)

SUMMARY = (
    "This framework build has no CUDA support at all (a CPU-only wheel: PyTorch's +cpu wheels, PyTorch "
    "from PyPI on Windows, tensorflow-cpu or TensorFlow >= 2.11 on native Windows, JAX without its CUDA "
    "plugin, the onnxruntime wheel instead of onnxruntime-gpu, paddlepaddle instead of paddlepaddle-gpu), "
    "so it has no cuDNN either and cannot use the GPU. Installing CUDA or cuDNN does not change a CPU "
    "build: install the framework's CUDA build for the CUDA major your NVIDIA driver supports."
)


def _tf_devices(groups: dict[str, str], line: str) -> tuple[str | None, float] | None:
    """An ``XLA_GPU`` device is a CUDA build whose GPU device was skipped (its libraries did not
    load), not a CPU build; a ``GPU`` device listed means the placement failed for another reason."""
    devices = groups.get("devices", "").upper()
    if "GPU" in devices:
        return (None, 0.0)
    return None


def _providers(groups: dict[str, str], line: str) -> tuple[str | None, float] | None:
    """A provider list that holds CUDA is a CUDA build (ORT's message for other reasons)."""
    if "CUDAEXECUTIONPROVIDER" in groups.get("providers", "").upper().replace(" ", ""):
        return (None, 0.0)
    return None


SIGNATURES = (
    sig(
        "torch-not-compiled-with-cuda", "framework-cpu-build", "cpu_builds",
        ["not compiled with cuda"],
        [r"Torch not compiled with CUDA enabled"],
        90.0, framework="PyTorch",
        title_plain="This PyTorch is a CPU-only build (Torch not compiled with CUDA enabled)",
        summary=SUMMARY + " PyTorch raises this at the first CUDA call (.cuda(), .to('cuda'), "
        "torch.cuda.*) of a build without CUDA.",
        fixes=FIXES,
        source="PyTorch torch/cuda/__init__.py _lazy_init / _check_driver",
    ),
    sig(
        "torch-extension-not-compiled-with-gpu", "framework-cpu-build", "cpu_builds",
        ["not compiled with gpu"],
        [r"Not compiled with GPU support"],
        80.0, framework="a PyTorch extension",
        title_plain="A PyTorch extension (torchvision, detectron2, ...) was built without CUDA (Not compiled with GPU support)",
        summary="A C++/CUDA extension of PyTorch was compiled without CUDA (no CUDA toolkit when it was built, "
        "or a CPU wheel of it), so its GPU ops are missing even when PyTorch itself has CUDA. Install the "
        "extension's CUDA build matching PyTorch's CUDA (torchvision from the same PyTorch index), or rebuild "
        "it with the CUDA toolkit visible (FORCE_CUDA=1).",
        fixes=FIXES,
        source="torchvision csrc ops and detectron2 layers (AT_ERROR/TORCH_CHECK 'Not compiled with GPU support')",
    ),
    sig(
        "torch-deserialize-cuda-unavailable", "framework-cpu-build", "cpu_builds",
        ["torch.cuda.is_available() is false"],
        [r"Attempting to deserialize object on (?:a )?CUDA device(?: \d{1,2})? but torch\.cuda\.is_available\(\) is False"],
        50.0, framework="PyTorch",
        title_plain="PyTorch cannot use CUDA here (torch.cuda.is_available() is False): a CPU-only build, "
                    "or no NVIDIA GPU and driver",
        summary="torch.load met tensors saved on a GPU and this PyTorch reports no CUDA: either it is a CPU-only "
        "build (a +cpu version; collect_env's 'CUDA used to build PyTorch: None'), or it is a CUDA build on a "
        "machine without an NVIDIA GPU or driver. With a GPU here, install PyTorch's CUDA build; without one, "
        "load with map_location=torch.device('cpu').",
        fixes=FIXES,
        source="PyTorch torch/serialization.py validate_cuda_device",
    ),
    sig(
        "torch-cpu-version", "framework-cpu-build", "cpu_builds",
        ["+cpu"],
        [r"\b(?P<version>\d\.\d{1,2}\.\d{1,2}\+cpu)\b"],
        0.0, supports=("framework-cpu-build",), gate="version",
        source="PyTorch version strings of CPU wheels ('2.1.0+cpu'); torch/utils/collect_env.py",
    ),
    sig(
        "nvidia-smi-cuda-version", "framework-cpu-build", "cpu_builds",
        ["driver version:"],
        [r"Driver Version:\s{0,3}(?P<driver>\d{2,4}(?:\.\d{1,3}){1,2})\s{1,12}CUDA Version:\s{0,3}(?P<cuda>\d{1,2}\.\d{1,2})"],
        0.0, supports=("framework-cpu-build",),
        source="nvidia-smi header ('Driver Version: 535.104.05   CUDA Version: 12.2'): the CUDA major the driver supports",
    ),
    sig(
        "tf-no-gpu-device-registered", "framework-cpu-build", "cpu_builds",
        ["explicit"],
        [(r"Could not satisfy explicit device specification '/(?:job:localhost/replica:0/task:0/)?device:GPU:\d{1,2}' "
          r"because no devices matching that specification are registered in this process"
          r"(?:;\s{0,2}available devices:\s{0,2}(?P<devices>[^\n\]]{1,400}))?"),
         (r"explicitly assigned to /(?:job:localhost/replica:0/task:0/)?device:GPU:\d{1,2} "
          r"but available devices are \[(?P<devices>[^\]\n]{1,400})\]")],
        72.0, framework="TensorFlow", refine=_tf_devices, gate="gpu",
        title_plain="TensorFlow registered no GPU device: a CPU-only build, or its GPU libraries did not load",
        summary=SUMMARY + " TensorFlow also registers no GPU when its CUDA build cannot load the CUDA or cuDNN "
        "libraries (then 'Could not load dynamic library' / 'Cannot dlopen some GPU libraries' lines above say "
        "which, and they are the cause), or when there is no NVIDIA GPU and driver.",
        fixes=FIXES,
        source="TensorFlow core/common_runtime/placer (InvalidArgumentError: Cannot assign a device ...)",
    ),
    sig(
        "jax-no-gpu-platform", "framework-cpu-build", "cpu_builds",
        ["instances of gpu"],
        [r"Unknown backend:? '?(?:gpu|cuda)'? requested, but no platforms that are instances of (?:gpu|cuda) are present"],
        74.0, framework="JAX",
        title_plain="JAX has no CUDA backend: its CUDA plugin is not installed (JAX without CUDA)",
        summary=SUMMARY + " JAX's GPU support is a separate plugin (jax-cuda12-plugin, installed by "
        "pip install \"jax[cuda12]\"); when it is present but fails, JAX prints 'CUDA backend failed to "
        "initialize' with the reason instead.",
        fixes=FIXES,
        source="JAX jax/_src/xla_bridge.py backends() ('Unknown backend ... no platforms that are instances of gpu')",
    ),
    sig(
        "ort-cuda-provider-not-available", "framework-cpu-build", "cpu_builds",
        ["executionprovider"],
        [(r"Specified provider 'CUDAExecutionProvider' is not in available provider names\.?\s{0,3}"
          r"Available providers:\s{0,2}'(?P<providers>[^'\n]{1,300})'"),
         (r"Asked to use CUDAExecutionProvider as an ONNX Runtime execution provider, "
          r"but the available execution providers are \[(?P<providers>[^\]\n]{1,300})\]"),
         r"This ORT build has \[(?P<providers>[^\]\n]{1,300})\] enabled"],
        74.0, framework="ONNX Runtime", refine=_providers, warning=True,
        title_plain="ONNX Runtime is the CPU build (the onnxruntime wheel, not onnxruntime-gpu): no CUDA provider",
        summary=SUMMARY + " The CPU onnxruntime wheel and onnxruntime-gpu install the same onnxruntime module; "
        "when both are installed, the one installed last wins (often the CPU one, pulled in by another "
        "package), and sessions run on the CPU.",
        fixes=FIXES,
        source="ONNX Runtime onnxruntime/capi/onnxruntime_inference_collection.py (_create_inference_session); "
               "Hugging Face optimum onnxruntime/utils.py",
    ),
    sig(
        "paddle-cpu-version", "framework-cpu-build", "cpu_builds",
        ["cpu version paddlepaddle", "paddlepaddle cpu version", "not compiled with cuda"],
        [r"Cannot use GPU because you have installed CPU version PaddlePaddle",
         r"(?:You are using|while you are using) paddlepaddle cpu version",
         r"(?:PaddlePaddle|Paddle) is not compiled with CUDA"],
        90.0, framework="PaddlePaddle",
        title_plain="This PaddlePaddle is the CPU build (paddlepaddle, not paddlepaddle-gpu)",
        summary=SUMMARY, fixes=FIXES,
        source="PaddlePaddle paddle/fluid/pybind/pybind.cc, paddle/phi/common/place.cc (CUDAPlace on a CPU build); "
               "PaddleClas/PaddleDetection check_gpu",
    ),
    sig(
        "opencv-dnn-not-built-with-cuda", "framework-cpu-build", "cpu_builds",
        ["not built with cuda"],
        [r"DNN module was not built with CUDA backend;?\s{0,2}switching to CPU"],
        80.0, framework="OpenCV", warning=True,
        title_plain="This OpenCV was built without its CUDA backend: the DNN module runs on the CPU",
        summary="OpenCV's DNN module has its CUDA backend (with cuDNN) only when OpenCV is built with WITH_CUDA, "
        "WITH_CUDNN and OPENCV_DNN_CUDA; the opencv-python wheels on PyPI are built without it, so "
        "setPreferableBackend(DNN_BACKEND_CUDA) falls back to the CPU.",
        fixes=FIXES,
        source="OpenCV modules/dnn/src/net_impl.cpp setUpNet ('DNN module was not built with CUDA backend; switching to CPU')",
    ),
    sig(
        "mxnet-compile-with-use-cuda", "framework-cpu-build", "cpu_builds",
        ["use_cuda=1"],
        [r"Compile with USE_CUDA=1 to enable GPU usage"],
        86.0, framework="MXNet",
        title_plain="This MXNet is a CPU build (Compile with USE_CUDA=1 to enable GPU usage)",
        summary=SUMMARY, fixes=FIXES,
        source="MXNet include/mxnet/base.h / src/common/cuda/utils.h (LOG(FATAL) on a GPU context without CUDA)",
    ),
    sig(
        "ctranslate2-not-compiled-with-cuda", "framework-cpu-build", "cpu_builds",
        ["not compiled with cuda"],
        [r"This CTranslate2 package was not compiled with CUDA support"],
        88.0, framework="CTranslate2",
        title_plain="This CTranslate2 has no CUDA support (its macOS and source builds are CPU-only)",
        summary=SUMMARY, fixes=FIXES,
        source="CTranslate2 python/cpp/module.cc / src/devices.cc ('This CTranslate2 package was not compiled with CUDA support')",
    ),
)
