"""Family "versions": the loaded cuDNN is not the one a framework or binary was built against.

Catalogue id ``cudnn-version-mismatch``. Each wording is quoted from the source that prints it:

* TensorFlow / XLA ``cuda_dnn.cc`` (``CudnnSupport::Init``), every era and path
  (``tensorflow/stream_executor/cuda``, ``tensorflow/compiler/xla/stream_executor``,
  ``external/xla/xla/stream_executor``, ``external/local_xla/...``, absl ``E0000 ... cuda_dnn.cc``):
  ``Loaded runtime CuDNN library: 5005 (compatibility version 5000) but source was compiled with
  5103 (compatibility version 5100)`` (TF 0.x-1.x), ``Loaded runtime CuDNN library: 7.3.1 but
  source was compiled with: 7.4.2.  CuDNN library major and minor version needs to match or have
  higher minor version in case of CuDNN 7.0 or later version`` (TF 1.x-2.1),
  ``... CuDNN library needs to have matching major version and equal or higher minor version``
  (TF 2.2+ and XLA).
* PyTorch ``torch/backends/cudnn/__init__.py`` ``_init()``: ``cuDNN version incompatibility:
  PyTorch was compiled  against (8, 3, 2) but found runtime version (8, 0, 3)`` (also ``linked
  against``), and 0.x's ``cuDNN version mismatch: PyTorch was compiled against 7102 but linked
  against 7005``.
* JAX ``jax_plugins/cuda/__init__.py`` ``_check_cuda_versions``: ``Outdated cuDNN installation
  found. Version JAX was built against: 8600 / Minimum supported: 8600 / Installed version:
  8500``; older jaxlib: ``Found cuDNN version 8600, but JAX was built against version 8700,
  which is newer``.
* MXNet ``src/common/cuda/utils.cc``: ``cuDNN lib mismatch: linked-against version 7605 !=
  compiled-against version 7501``.
* PaddlePaddle ``platform/device/gpu/gpu_info.cc``: ``The installed Paddle is compiled with
  CUDNN 8.2, but CUDNN version in your machine is 7.6``.
* The dynamic loader: ``undefined symbol: cudnnXxx`` in a framework library (a binary asking
  for API this cuDNN lacks), raised when its extension is imported (``torch/_C*.so``,
  ``libtorch_cuda.so``, ``jaxlib/xla_extension.so``, ``_pywrap_tensorflow_internal.so``, a
  ``pyyolo.so``); glibc's symbol-versioning form ``symbol cudnnBatchNormalizationForwardTrainingEx
  version libcudnn.so.7 not defined in file libcudnn.so.7 with link time reference``; macOS dyld
  ``Symbol not found: _cudnnBatchNormalizationBackward``. The same inside a ``libcudnn_*`` file is
  a sub-library mix (family "loading").
"""

from __future__ import annotations

import re

from .signature import sig

_V = r"\d{1,6}(?:\.\d{1,4}){0,3}"
_T = r"\(\s?\d{1,3},\s?\d{1,3}(?:,\s?\d{1,3})?\)"

SUMMARY = (
    "The framework checks the cuDNN it finds at runtime against the version it was compiled "
    "with, and refuses (or fails later) when the runtime copy is older within the same major, "
    "a different major, or, for old releases, a different minor. Usually another cuDNN on the "
    "library path (LD_LIBRARY_PATH, a system or conda copy) was loaded instead of the one the "
    "framework ships or expects."
)
FIXES = ("install-matching-cudnn", "remove-shadowing-dir", "import-order")


_UNDEFINED_IN = re.compile(r"(?P<file>[^\s:'\"()]{1,300}?\.(?:so|dylib)[\w.]{0,20}):\s{0,2}undefined symbol:", re.IGNORECASE)


def _undefined_symbol(groups: dict[str, str], line: str) -> tuple[str | None, float] | None:
    """The file that lacks the symbol decides: a ``libcudnn_*`` sub-library resolved against a
    different release (``libcudnn_cnn_train.so.8: undefined symbol``) is a sub-library mix; a
    framework's own extension (``libtorch_cuda.so: undefined symbol: cudnnGetLibConfig, version
    libcudnn_graph.so.9``) was built against a newer cuDNN than the one loaded."""
    m = _UNDEFINED_IN.search(line)
    name = m.group("file").replace("\\", "/").rsplit("/", 1)[-1].lower() if m else ""
    if name.startswith("libcudnn_"):
        return "cudnn-sublibrary-load-failed", 95.0
    if not m and ("libcudnn_" in line.lower() or "cudnn_ops" in line.lower() or "cudnn_cnn" in line.lower()):
        return "cudnn-sublibrary-load-failed", 95.0
    return None


SIGNATURES = (
    sig(
        "tf-loaded-runtime", "cudnn-version-mismatch", "versions",
        ["loaded runtime cudnn library"],
        [(rf"Loaded runtime CuDNN library:?\s{{0,4}}(?P<loaded>{_V})"
          rf"(?:\s{{0,4}}\(compatibility version (?P<loaded_compat>\d{{1,6}})\))?"
          rf"\s{{0,4}}but source was compiled with:?\s{{0,4}}(?P<compiled>{_V})"
          rf"(?:\s{{0,4}}\(compatibility version (?P<compiled_compat>\d{{1,6}})\))?"),
         rf"Loaded runtime CuDNN library:?\s{{0,4}}(?P<loaded>{_V})"],
        100.0,
        title="The cuDNN loaded at runtime ({loaded}) {relation} the {compiled} {framework} was built with",
        title_plain="The cuDNN loaded at runtime is not compatible with the one {framework} was built with",
        summary=SUMMARY, fixes=FIXES, framework="TensorFlow/XLA",
        source="TensorFlow/XLA stream_executor/cuda/cuda_dnn.cc CudnnSupport::Init",
    ),
    sig(
        "tf-cudnn-rule-sentence", "cudnn-version-mismatch", "versions",
        ["needs to have matching major version", "major and minor version needs to match",
         "library loaded at runtime matches a compatible version"],
        [r"CuDNN library needs to have matching major version and equal or higher minor version",
         r"CuDNN library major and minor version needs to match",
         r"make sure the library loaded at runtime matches a compatible version"],
        96.0,
        title_plain="The cuDNN loaded at runtime is not compatible with the one {framework} was built with",
        summary=SUMMARY, fixes=FIXES, framework="TensorFlow/XLA",
        source="TensorFlow/XLA cuda_dnn.cc (the rule sentence, alone when the versions are on another line)",
    ),
    sig(
        "pytorch-incompatibility", "cudnn-version-mismatch", "versions",
        ["cudnn version incompatibility", "cudnn version mismatch: pytorch"],
        [(rf"cuDNN version (?:incompatibility|mismatch):\s{{0,3}}PyTorch was compiled"
          rf"\s{{1,4}}against\s{{1,3}}(?P<compiled>{_T}|{_V})"
          rf"\s{{1,3}}but\s{{1,3}}(?:found runtime version|linked against)\s{{1,3}}(?P<loaded>{_T}|{_V})"),
         r"cuDNN version (?:incompatibility|mismatch):\s{0,3}PyTorch"],
        100.0,
        title="The cuDNN loaded at runtime ({loaded}) {relation} the {compiled} PyTorch was built with",
        title_plain="The cuDNN loaded at runtime is not the one PyTorch was built with",
        summary=SUMMARY + " PyTorch wheels bundle their own cuDNN: a cuDNN directory on "
        "LD_LIBRARY_PATH is loaded before it.",
        fixes=("remove-shadowing-dir", "install-matching-cudnn", "import-order"), framework="PyTorch",
        source="PyTorch torch/backends/cudnn/__init__.py _init()",
    ),
    sig(
        "jax-outdated-cudnn", "cudnn-version-mismatch", "versions",
        ["outdated cudnn installation found", "version jax was built against"],
        [r"Outdated cuDNN installation found", r"Version JAX was built against:\s{0,3}(?P<compiled>\d{1,6})"],
        100.0,
        extras=[r"Version JAX was built against:\s{0,3}(?P<compiled>\d{1,6})",
                r"Minimum supported:\s{0,3}(?P<minimum>\d{1,6})",
                r"Installed version:\s{0,3}(?P<loaded>\d{1,6})"],
        window=6,
        title="The cuDNN installed ({loaded}) is older than the {minimum} {framework} needs",
        title_plain="The cuDNN installed is older than the one JAX needs",
        summary="JAX checks the installed cuDNN against the version it was built with and "
        "refuses older ones; it then falls back to the CPU (or fails on the first GPU op).",
        fixes=("install-matching-cudnn", "remove-shadowing-dir"), framework="JAX",
        source="JAX jax_plugins/cuda/__init__.py _check_cuda_versions",
    ),
    sig(
        "jax-must-be-no-lower", "cudnn-version-mismatch", "versions",
        ["version must be no lower than"],
        [r"(?:cuDNN|local installation)[^\n]{0,80}must be no lower than\s{0,3}(?P<minimum>\d{1,6})"],
        95.0,
        title_plain="The cuDNN installed is older than the one JAX needs",
        summary="JAX checks the installed cuDNN against the version it was built with and refuses older ones.",
        fixes=("install-matching-cudnn", "remove-shadowing-dir"), framework="JAX",
        source="JAX jax_plugins/cuda/__init__.py _check_cuda_versions",
    ),
    sig(
        "jax-found-cudnn-older", "cudnn-version-mismatch", "versions",
        ["but jax was built against version"],
        [r"Found cuDNN version (?P<loaded>\d{1,6}),? but JAX was built against version (?P<compiled>\d{1,6})"],
        100.0,
        title="The cuDNN found ({loaded}) is older than the {compiled} JAX was built with",
        title_plain="The cuDNN found is older than the one JAX was built with",
        summary="jaxlib checks the cuDNN it loads against the one it was built with and refuses "
        "an older copy; JAX then falls back to the CPU.",
        fixes=("install-matching-cudnn", "remove-shadowing-dir"), framework="JAX",
        source="jaxlib cuda plugin _check_cuda_versions (jax 0.4.x wording)",
    ),
    sig(
        "mxnet-lib-mismatch", "cudnn-version-mismatch", "versions",
        ["cudnn lib mismatch"],
        [(r"cuDNN lib mismatch:\s{0,3}linked-against version (?P<loaded>\d{1,6})"
          r"\s{0,3}!=\s{0,3}compiled-against version (?P<compiled>\d{1,6})")],
        98.0,
        title="The cuDNN linked at runtime ({loaded}) differs from the {compiled} MXNet was built with",
        title_plain="The cuDNN loaded is not the one MXNet was built with",
        summary=SUMMARY, fixes=FIXES, framework="MXNet",
        source="MXNet src/common/cuda/utils.cc CuDNN lib check",
    ),
    sig(
        "paddle-compiled-with", "cudnn-version-mismatch", "versions",
        ["but cudnn version in your machine is"],
        [rf"compiled with CUDNN (?P<compiled>{_V}),? but CUDNN version in your machine is (?P<loaded>{_V})"],
        97.0,
        title="The cuDNN on this machine ({loaded}) {relation} the {compiled} PaddlePaddle was built with",
        title_plain="The cuDNN on this machine is not the one PaddlePaddle was built with",
        summary=SUMMARY, fixes=FIXES, framework="PaddlePaddle",
        source="PaddlePaddle gpu_info.cc device compatibility warning",
    ),
    sig(
        "undefined-symbol-cudnn", "cudnn-version-mismatch", "versions",
        ["undefined symbol: cudnn", "undefined symbol: _zn5cudnn"],
        [r"undefined symbol:\s{0,2}(?P<symbol>(?:cudnn|_ZN5cudnn)\w{1,200})"],
        92.0,
        title_plain="A library asks for cuDNN functions the loaded cuDNN does not have",
        summary="A framework or extension was built against a different cuDNN release than the "
        "one the loader found, so a cuDNN function it calls is missing (undefined symbol).",
        fixes=FIXES, refine=_undefined_symbol,
        source="glibc dynamic loader ('undefined symbol'), cuDNN API changes between releases",
    ),
    sig(
        "symbol-not-defined-in-libcudnn", "cudnn-version-mismatch", "versions",
        ["with link time reference"],
        [r"symbol (?P<symbol>cudnn\w{1,120}),? version (?P<soname>libcudnn[\w.]{0,20}) not defined in file libcudnn"],
        94.0, gate="dnn",
        title="The cuDNN found lacks {symbol}, which this binary was linked against",
        title_plain="A library asks for cuDNN functions the loaded cuDNN does not have",
        summary="The binary was linked against a newer cuDNN of the same major than the one the loader "
        "found first (glibc symbol versioning): another, older libcudnn is on the library path.",
        fixes=FIXES, source="glibc dynamic loader (symbol versioning: 'not defined in file ... with link time reference')",
    ),
    sig(
        "macos-symbol-not-found-cudnn", "cudnn-version-mismatch", "versions",
        ["symbol not found: _cudnn"],
        [r"Symbol not found:\s{0,2}(?P<symbol>_cudnn\w{1,120})"],
        90.0,
        title_plain="A library asks for cuDNN functions the loaded cuDNN does not have",
        summary="The binary was built against a different cuDNN release than the one dyld found, so a "
        "cuDNN function it calls is missing.",
        fixes=FIXES, source="macOS dyld ('Symbol not found: _cudnn...')",
    ),
)
