"""Family "hints": install notes a framework prints only because loading cuDNN failed.

The failure that follows is often vaguer than the note (a PreconditionNotMet, a hang, a crash in an
unrelated-looking op), so the note is decisive evidence and ranks above it. Wordings, quoted from
the source that prints them:

* PaddlePaddle ``paddle/phi/backends/dynload/dynamic_loader.cc`` (``fluid/platform/dynload`` before
  2.3), logged as a warning when no cuDNN library opened: Windows ``Note: [Recommend] copy cudnn
  into CUDA installation directory. For instance, download cudnn-10.0-windows10-x64-v7.6.5.32.zip
  from NVIDIA's official website, then, unzip it and copy it into C:\\Program Files\\NVIDIA GPU
  Computing Toolkit\\CUDA\\v10.0``; macOS ``Note: [Recommend] copy cudnn into /usr/local/cuda/``;
  1.x-2.0 ``Can not find library: libcudnn.so. The process maybe hang. Please try to add the lib path
  to LD_LIBRARY_PATH.``
* TensorFlow 1.x ``python/platform/self_check.py`` (Windows) prints ``Could not find
  'cudnn64_7.dll'. TensorFlow requires that this DLL be installed in a directory that is named in
  your %PATH% environment variable.`` before the bare ``ImportError: DLL load failed`` (family
  "loading" reads the DLL's name).
* PyTorch ``aten/src/ATen/native/cudnn/Conv_v8.cpp``: ``UserWarning: Applied workaround for CuDNN
  issue, install nvrtc.so``: cuDNN's convolution sub-library could not load ``libnvrtc.so`` (the
  unversioned name cuDNN 8.7+ asks for), so its runtime-compiled engines are unavailable and PyTorch
  swallowed the loader error that would otherwise abort (https://github.com/pytorch/pytorch/pull/98644).
"""

from __future__ import annotations

from .loading import NOT_FOUND_FIXES, NOT_FOUND_SUMMARY
from .signature import sig

SIGNATURES = (
    sig(
        "paddle-recommend-copy-cudnn", "cudnn-library-not-found", "hints",
        ["copy cudnn"],
        [r"\[Recommend\] copy cudnn into (?P<where>CUDA installation directory|/usr/local/cuda/?)"],
        91.0, framework="PaddlePaddle", names_missing="cudnn",
        title_plain="PaddlePaddle could not load cuDNN (it printed its 'copy cudnn into the CUDA directory' note)",
        summary=NOT_FOUND_SUMMARY + " PaddlePaddle prints this note only after no cuDNN library opened "
        "(cudnn64_<major>.dll on Windows, libcudnn.dylib on macOS), so the error that follows comes from the "
        "missing cuDNN. On Windows it looks in PATH and the CUDA toolkit's bin directory.",
        fixes=NOT_FOUND_FIXES,
        source="PaddlePaddle paddle/phi/backends/dynload/dynamic_loader.cc GetCUDNNDsoHandle (win_warn_meg, mac_warn_meg)",
    ),
    sig(
        "paddle-can-not-find-library", "cudnn-library-not-found", "hints",
        ["can not find library"],
        [r"Can not find library:\s{0,2}(?P<soname>(?:lib)?cudnn[\w.]{0,40})\.?\s{0,3}The process maybe hang"],
        90.0, framework="PaddlePaddle", names_missing="cudnn",
        title="PaddlePaddle could not find {soname}",
        title_plain="PaddlePaddle could not find the cuDNN library",
        summary=NOT_FOUND_SUMMARY, fixes=NOT_FOUND_FIXES,
        source="PaddlePaddle 1.x-2.0 platform/dynload/dynamic_loader.cc GetDsoHandleFromDefaultPath",
    ),
    sig(
        "paddle-can-not-find-other-library", "cudnn-library-not-found", "hints",
        ["can not find library"],
        [r"Can not find library:\s{0,2}(?P<other_library>(?!(?:lib)?cudnn)[\w.]{1,40})\.?\s{0,3}The process maybe hang"],
        0.0, names_missing="other",
        source="PaddlePaddle dynamic_loader.cc naming a library other than cuDNN",
    ),
    sig(
        "torch-nvrtc-workaround", "cudnn-sublibrary-load-failed", "hints",
        ["workaround for cudnn"],
        [r"Applied workaround for CuDNN issue,?\s{0,2}install (?P<dependency>nvrtc\.so|libnvrtc[\w.]{0,20})"],
        84.0, framework="PyTorch",
        title="cuDNN could not load {dependency}: its runtime-compiled engines are off (PyTorch worked around the loader error)",
        title_plain="cuDNN could not load libnvrtc.so: its runtime-compiled engines are off",
        summary="cuDNN's convolution sub-library asks for the unversioned libnvrtc.so (cuDNN 8.7+), which only "
        "the CUDA toolkit's development files (or a symbolic link to libnvrtc.so.<version>) provide. PyTorch "
        "preloads the sub-library and clears the loader error so the process does not abort, but the "
        "engines cuDNN compiles at run time (fused and some convolution kernels) are unavailable: a "
        "configuration only they support then fails with 'GET was unable to find an engine' or runs slower.",
        fixes=("install-cudnn-deps",),
        source="PyTorch aten/src/ATen/native/cudnn/Conv_v8.cpp (TORCH_WARN_ONCE, pytorch/pytorch#98644)",
    ),
)
