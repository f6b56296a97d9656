"""Family "builds": a framework's own check finds its build or install has no usable cuDNN.

These are not loader errors: the framework was compiled (or installed) without cuDNN support,
or its own start-up check rejected the cuDNN it found. Catalogue id ``cudnn-library-not-found``
(cuDNN is not available to the framework; it runs without it or fails), refined titles say
which, and the fix is a build with cuDNN (``install-cudnn-build``). Wordings, quoted from their
sources:

* Chainer ``chainer/backends/cuda.py``: ``UserWarning: cuDNN is not enabled. Please reinstall
  CuPy after you install cudnn`` (``chainer`` before 4: ``Please reinstall chainer after you
  install cudnn``).
* PyTorch ``torch/backends/cudnn/__init__.py`` ``is_acceptable``: ``PyTorch was compiled without
  cuDNN support`` (``cuDNN/MIOpen`` since 1.x).
* MXNet ``src/operator/rnn*.cu``/``rnn-inl.h``: ``RNN is only available for cuDNN at the
  moment.`` / ``RNN on GPU is only available for cuDNN at the moment.``; ``operator.cc``:
  ``Cannot find Operator CuDNNBatchNorm in registry`` (a build without the cuDNN operators).
* TensorFlow: ``No OpKernel was registered to support Op 'CudnnRNN' ... Registered devices:
  [CPU]`` (a CPU-only wheel, or a GPU wheel that skipped the GPU because CUDA/cuDNN did not load).
* flashinfer ``gemm_base.py``: ``cuDNN is not available. Please install cuDNN``.
* Theano ``gpuarray/dnn.py``: ``Can not use cuDNN on context None: cannot compile with cuDNN``
  (cudnn.h or libcudnn not found by its compiler), ``... : Device not supported`` (compute
  capability too low), ``cuDNN version is too old. Update to v5, was 3007`` and ``Mixed dnn
  version. The header is version 5005 while the library is version 5110``.
"""

from __future__ import annotations

from .signature import sig


def _tf_no_kernel(groups: dict[str, str], line: str) -> tuple[str | None, float] | None:
    """'Registered devices: [CPU, GPU]' with no GPU kernel for a Cudnn* op: the GPU device is a
    non-CUDA plugin (DirectML, Metal), which has no cuDNN at all - not a cuDNN fault."""
    devices = groups.get("devices", "")
    if "GPU" in devices.replace("XLA_GPU", "").upper():
        return (None, 0.0)
    return None

SUMMARY = (
    "The framework reports that it has no cuDNN support: it was built or installed without cuDNN "
    "(a CPU-only or no-cuDNN build, a source build that did not find cudnn.h/libcudnn), so every "
    "cuDNN op is unavailable and it either fails or runs without cuDNN. Installing cuDNN alone "
    "does not change a build compiled without it: install the framework's GPU build with cuDNN, "
    "or rebuild it with cuDNN visible to the build."
)
FIXES = ("install-cudnn-build", "install-matching-cudnn")


SIGNATURES = (
    sig(
        "chainer-cudnn-not-enabled", "cudnn-library-not-found", "builds",
        ["cudnn is not enabled"],
        [r"cuDNN is not enabled"],
        55.0, warning=True, framework="Chainer/CuPy",
        extras=[r"reinstall (?P<reinstall>CuPy|chainer) after you install cudnn"], window=3,
        title_plain="Chainer has no cuDNN: CuPy was built or installed without it (cuDNN is not enabled)",
        summary=SUMMARY + " Chainer checks cupy.cuda.cudnn_enabled: CuPy could not import its cuDNN module "
        "(built before cuDNN was installed, or libcudnn not found for a wheel).",
        fixes=FIXES, source="Chainer chainer/backends/cuda.py ('cuDNN is not enabled.')",
    ),
    sig(
        "torch-compiled-without-cudnn", "cudnn-library-not-found", "builds",
        ["compiled without cudnn"],
        [r"PyTorch was compiled without cuDNN(?:/MIOpen)? support"],
        62.0, warning=True, framework="PyTorch",
        title_plain="This PyTorch build was compiled without cuDNN support",
        summary=SUMMARY, fixes=FIXES,
        source="PyTorch torch/backends/cudnn/__init__.py is_acceptable",
    ),
    sig(
        "mxnet-rnn-only-cudnn", "cudnn-library-not-found", "builds",
        ["is only available for cudnn at the moment"],
        [r"RNN (?:on GPU )?is only available for cuDNN at the moment"],
        90.0, framework="MXNet",
        title_plain="This MXNet build has no cuDNN, which its GPU RNN operator needs",
        summary=SUMMARY, fixes=FIXES,
        source="MXNet src/operator/rnn.cu / rnn-inl.h (built with MXNET_USE_CUDNN=0)",
    ),
    sig(
        "mxnet-no-cudnn-operator", "cudnn-library-not-found", "builds",
        ["cannot find operator cudnn"],
        [r"Cannot find Operator (?P<op>CuDNN\w{1,40}) in registry"],
        84.0, framework="MXNet",
        title="This MXNet build has no cuDNN operators ({op} is not registered)",
        title_plain="This MXNet build has no cuDNN operators",
        summary=SUMMARY, fixes=FIXES,
        source="MXNet src/operator/operator.cc (operator registry of a build without cuDNN)",
    ),
    sig(
        "tf-no-cudnn-opkernel", "cudnn-library-not-found", "builds",
        ["no opkernel was registered to support op 'cudnn"],
        [r"No OpKernel was registered to support Op '(?P<op>Cudnn\w{1,40})'"],
        80.0, also=(("cudnn-init-failed", 62.0),), framework="TensorFlow", refine=_tf_no_kernel,
        extras=[r"Registered devices:\s{0,2}\[(?P<devices>[\w, ]{1,60})\]"], window=3,
        title="TensorFlow has no GPU kernel for the cuDNN op {op}: no GPU device with cuDNN is registered",
        title_plain="TensorFlow has no GPU device with cuDNN for this cuDNN-only op",
        summary="The op exists only as a GPU (cuDNN) kernel and no GPU device was registered: the "
        "installed TensorFlow is a CPU-only build, or its GPU build skipped the GPU because the CUDA/"
        "cuDNN libraries failed to load (look for 'Could not load dynamic library' lines). Install the "
        "GPU build with its CUDA/cuDNN libraries, or use the generic (non-cuDNN) layer on the CPU.",
        fixes=("install-cudnn-build", "install-matching-cudnn", "cudnn-fallback"),
        source="TensorFlow core/framework/op_kernel.cc (NotFound/InvalidArgument: No OpKernel was registered)",
    ),
    sig(
        "flashinfer-cudnn-not-available", "cudnn-library-not-found", "builds",
        ["cudnn is not available. please install cudnn"],
        [r"cuDNN is not available\.\s{0,3}Please install cuDNN"],
        86.0,
        title_plain="cuDNN is not installed for this library (cuDNN is not available)",
        summary="The library checked for cuDNN at run time and found none: the nvidia-cudnn wheel (or "
        "a system cuDNN) is not installed in this environment.",
        fixes=("install-matching-cudnn", "remove-shadowing-dir"),
        source="flashinfer gemm/gemm_base.py _check_cudnn_availability",
    ),
    sig(
        "theano-cannot-compile-with-cudnn", "cudnn-library-not-found", "builds",
        ["cannot compile with cudnn", "aren't able to use it"],
        [r"Can not use cuDNN on context \S{1,40}:\s{0,3}cannot compile with cuDNN",
         r"You enabled cuDNN, but we aren't able to use it:\s{0,3}cannot compile with cuDNN"],
        86.0, framework="Theano", gate="dnn",
        extras=[r"fatal error:\s{0,3}(?P<header>[\w.]{1,40}\.h): No such file"], window=4,
        title_plain="Theano cannot compile against cuDNN (its headers or library were not found)",
        summary="Theano compiles a small program against cudnn.h/libcudnn at start-up; it failed, so "
        "cuDNN is not used: cudnn.h (or CUDA's driver_types.h it includes) is not on the include path, "
        "or libcudnn is not on the library path ([dnn] include_path/library_path in .theanorc).",
        fixes=("install-matching-cudnn", "remove-shadowing-dir"),
        source="Theano theano/gpuarray/dnn.py _dnn_check_compile",
    ),
    sig(
        "theano-device-not-supported", "gpu-arch-unsupported", "builds",
        ["device not supported"],
        [r"Can not use cuDNN on context \S{1,40}:\s{0,3}Device not supported"],
        86.0, framework="Theano", gate="dnn",
        title_plain="This GPU is too old for cuDNN (Theano: Device not supported)",
        summary="cuDNN needs a GPU of compute capability 3.0 or newer (later releases more); Theano "
        "found this GPU below that and does not use cuDNN.",
        fixes=("cudnn-fallback",),
        source="Theano theano/gpuarray/dnn.py dnn_available (compute capability check)",
    ),
    sig(
        "theano-cudnn-too-old", "cudnn-version-mismatch", "builds",
        ["cudnn version is too old"],
        [r"cuDNN version is too old\.?\s{0,3}Update to v(?P<minimum>\d{1,2}),? was (?P<loaded>\d{3,5})"],
        94.0, framework="Theano",
        title="The cuDNN found ({loaded}) is older than Theano supports (at least {minimum})",
        title_plain="The cuDNN found is older than Theano supports",
        summary="Theano checks the cuDNN version at start-up and does not use one older than it supports.",
        fixes=("install-matching-cudnn", "remove-shadowing-dir"),
        source="Theano theano/gpuarray/dnn.py _dnn_check_version",
    ),
    sig(
        "theano-mixed-dnn-version", "cudnn-version-mismatch", "builds",
        ["mixed dnn version"],
        [(r"Mixed dnn version\.?\s{0,3}The header is version (?P<compiled>\d{3,5}) "
          r"while the library is version (?P<loaded>\d{3,5})")],
        97.0, framework="Theano",
        title="The cuDNN library loaded ({loaded}) is not the release of the cudnn.h Theano compiled with ({compiled})",
        title_plain="The cuDNN library and header Theano found are different releases",
        summary="Theano compiles against cudnn.h and loads libcudnn separately; they come from two "
        "cuDNN installs (a system copy and a conda/other copy on the library path).",
        fixes=("remove-shadowing-dir", "install-matching-cudnn"),
        source="Theano theano/gpuarray/dnn.py version()",
    ),
    sig(
        "mxnet-option-needs-cudnn-version", "cudnn-version-mismatch", "builds",
        ["is only available for cudnn version"],
        [r"is only available for cuDNN version\s{0,2}>=\s{0,2}(?P<minimum>\d{1,2}\.\d{1,2})"],
        88.0, framework="MXNet",
        title="This option needs cuDNN {minimum} or newer than the one MXNet was built with",
        title_plain="This option needs a newer cuDNN than the one MXNet was built with",
        summary="The operator option is compiled in only for newer cuDNN releases than this build used.",
        fixes=("install-cudnn-build", "install-matching-cudnn"),
        source="MXNet src/operator/cudnn_rnn-inl.h ('... is only available for cuDNN version >= 7.2')",
    ),
)
