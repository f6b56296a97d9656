"""Family "loading": cuDNN (or one of its sub-libraries or their dependencies) could not be loaded.

Catalogue ids ``cudnn-library-not-found`` (the main library) and ``cudnn-sublibrary-load-failed``
(``libcudnn_ops*``, ``libcudnn_cnn*``, ``libcudnn_adv*``, ``libcudnn_engines_*``,
``libcudnn_graph``, or what they need: ``libnvrtc``, ``libcublas*``, ``libz``/``zlibwapi.dll``,
``libcuda``). Wordings, by who prints them:

* TensorFlow ``stream_executor/platform/default/dso_loader.cc``: ``Could not load dynamic library
  'libcudnn.so.8'; dlerror: ...`` (Windows: ``'cudnn64_8.dll'; dlerror: cudnn64_8.dll not
  found``); TF 0.x-1.x ``dso_loader.cc``: ``Couldn't open CUDA library libcudnn.so.5`` and
  ``cuda_dnn.cc``: ``Unable to load cuDNN DSO``.
* cuDNN 8's own loader (``libcudnn.so.8`` shim): ``Could not load library
  libcudnn_cnn_infer.so.8. Error: libnvrtc.so: cannot open shared object file``, Windows
  ``Could not locate cudnn_ops_infer64_8.dll. Please make sure it is in your library path!`` and
  ``Could not load library cudnn_cnn_infer64_8.dll. Error code 193``; cuDNN 9's: ``Unable to
  load any of {libcudnn_ops.so.9.1.0, libcudnn_ops.so.9.1, libcudnn_ops.so.9,
  libcudnn_ops.so}`` and ``Invalid handle. Cannot load symbol cudnnCreateTensorDescriptor``
  (docs/facts.md "cuDNN on a machine without a GPU": the shim prints this, then aborts).
* ONNX Runtime ``provider_bridge_ort.cc``: ``Failed to load library
  libonnxruntime_providers_cuda.so with error: libcudnn.so.9: cannot open shared object file``.
* CuPy: ``ImportError: libcudnn.so.8: cannot open shared object file``.
* PaddlePaddle ``platform/dynload/cudnn.cc``: ``Cannot load cudnn shared library. Cannot invoke
  method cudnnGetVersion`` / ``cudnn_dso_handle should not be null`` and ``dynamic_loader.cc``:
  ``The third-party dynamic library (libcudnn.so) that Paddle depends on is not configured
  correctly``.
* JAX/jaxlib: ``Unable to load cuDNN. Is it installed?`` and ``RuntimeError: cuDNN not found.``.
* PyTorch 0.x ``torch/backends/cudnn/__init__.py``: ``cuDNN library not found. Check your
  LD_LIBRARY_PATH``.
* CTranslate2 (faster-whisper, whisperX) ``src/cuda/utils.cc``-era loader: ``RuntimeError: Library
  cudnn_ops_infer64_8.dll is not found or cannot be loaded`` (and the same for cuBLAS).

Which library is missing decides: markers (weight 0, ``names_missing="other"``) record a loader
that could not open a non-cuDNN library (libcudart, libcublas*, libcufft, libcurand, libnvinfer,
libcuda, ...; ONNX Runtime ``Failed to load library libonnxruntime_providers_cuda.so with error:
libcublasLt.so.11: cannot open shared object file``, CTranslate2 ``Library libcublas.so.12 is not
found or cannot be loaded``). With only such a library named, the generic "the GPU provider did not
load" wordings (``unnamed_load``) make no cuDNN claim: the fault is that library's, not cuDNN's.
"""

from __future__ import annotations

import re

from .signature import sig

NOT_FOUND_SUMMARY = (
    "The dynamic loader could not find or open the cuDNN library the framework asks for, so "
    "the GPU path cannot use cuDNN (some frameworks then quietly run on the CPU). Either no "
    "cuDNN of that major version is installed, or it is installed where the loader does not "
    "look (a pip wheel's lib directory, a conda env, a directory missing from LD_LIBRARY_PATH)."
)
NOT_FOUND_FIXES = ("install-matching-cudnn", "remove-shadowing-dir")

SUB_SUMMARY = (
    "cuDNN is split into sub-libraries that the main library loads on first use. One of them, "
    "or a library it needs itself (libnvrtc, libcublas, zlib, libcuda), could not be loaded, "
    "or sub-libraries of different cuDNN releases were mixed (a second cuDNN on the library "
    "path). cuDNN then aborts the process or returns a loading error."
)
SUB_FIXES = ("reinstall-cudnn", "remove-shadowing-dir", "install-cudnn-deps")

_SUBLIB = re.compile(r"cudnn_(?:ops|cnn|adv|graph|engines|heuristic|ext)", re.IGNORECASE)
_DEP = re.compile(r"(?P<dep>libnvrtc[\w.\-]{0,40}|libcublas(?:Lt)?[\w.\-]{0,30}|libz\.so[\w.]{0,10}|zlibwapi\.dll|"
                  r"libcuda\.so[\w.]{0,10}|nvcuda\.dll|nvrtc[\w\-]{0,20}\.dll|cublas(?:Lt)?64[\w]{0,10}\.dll)", re.IGNORECASE)


def _dso(groups: dict[str, str], line: str) -> tuple[str | None, float] | None:
    """A dlerror/cannot-open line names either the main library or a sub-library."""
    name = groups.get("soname", "")
    if _SUBLIB.search(name):
        return "cudnn-sublibrary-load-failed", 93.0
    return None


def _cudnn_loader(groups: dict[str, str], line: str) -> None:
    """cuDNN's own loader: which file failed and why (missing itself, a dependency, a symbol)."""
    err = groups.get("error", "")
    dep = _DEP.search(err)
    if dep:
        groups["dependency"] = dep.group("dep")


def _paddle_third_party(groups: dict[str, str], line: str) -> tuple[str | None, float] | None:
    if "cudnn" not in groups.get("soname", "").lower():
        return (None, 0.0)
    return None


_NOT_CUDNN = r"(?!(?:lib)?cudnn)"  # a library name that is not cuDNN's


SIGNATURES = (
    sig(
        "cudnn-could-not-load-library", "cudnn-sublibrary-load-failed", "loading",
        ["could not load library", "could not locate cudnn"],
        [(r"Could not load library (?P<library>(?:lib)?cudnn_?\w{0,40}(?:\.so(?:\.\d{1,4}){0,3}|\.dll)?)\.?\s{0,3}"
          r"(?:Error code (?P<error_code>\d{1,6})|Error:?\s{0,3}(?P<error>[^\n]{0,300}))?"),
         r"Could not locate (?P<library>cudnn\w{0,40}\.dll)"],
        97.0,
        also=(("cudnn-library-not-found", 70.0),),
        title="cuDNN could not load its sub-library {library}",
        title_plain="cuDNN could not load one of its sub-libraries",
        summary=SUB_SUMMARY, fixes=SUB_FIXES, refine=_cudnn_loader,
        names_missing="cudnn",
        source="cuDNN 8 loader messages (libcudnn.so.8 / cudnn64_8.dll shim)",
    ),
    sig(
        "cudnn9-unable-to-load-any-of", "cudnn-sublibrary-load-failed", "loading",
        ["unable to load any of {libcudnn", "unable to load any of {cudnn"],
        [r"Unable to load any of \{(?P<library>(?:lib)?cudnn[\w.]{0,40})"],
        96.0,
        also=(("cudnn-library-not-found", 70.0),),
        title="cuDNN could not load its sub-library {library}",
        title_plain="cuDNN could not load one of its sub-libraries",
        summary=SUB_SUMMARY, fixes=SUB_FIXES,
        names_missing="cudnn",
        source="cuDNN 9 loader message (libcudnn.so.9 shim)",
    ),
    sig(
        "cudnn-invalid-handle-symbol", "cudnn-sublibrary-load-failed", "loading",
        ["invalid handle. cannot load symbol"],
        [r"Invalid handle\.\s{0,3}Cannot load symbol (?P<symbol>\w{1,80})"],
        94.0,
        title="cuDNN could not load the sub-library that provides {symbol}", gate="dnn",
        title_plain="cuDNN could not load one of its sub-libraries",
        summary=SUB_SUMMARY, fixes=SUB_FIXES,
        source="cuDNN 8/9 shim ('Invalid handle. Cannot load symbol cudnnGetVersion', then abort: docs/facts.md)",
    ),
    sig(
        "cudnn-sublibrary-version-words", "cudnn-sublibrary-load-failed", "loading",
        ["versioncheck", "sub-library version", "sublibrary version", "sub-libraries"],
        [r"cudnn(?:Ops|Cnn|Adv|Graph)(?:Infer|Train)?VersionCheck[^\n]{0,80}(?:fail|mismatch|error)",
         r"sub-?librar(?:y|ies)[^\n]{0,80}version mismatch",
         r"version mismatch[^\n]{0,80}sub-?librar"],
        90.0,
        title_plain="cuDNN sub-libraries of different releases were mixed", gate="librar",
        summary=SUB_SUMMARY, fixes=("reinstall-cudnn", "remove-shadowing-dir"),
        source="cuDNN 8/9 sub-library version checks",
    ),
    sig(
        "tf-dlerror-cudnn", "cudnn-library-not-found", "loading",
        ["could not load dynamic library"],
        [r"Could not load dynamic library '(?P<soname>(?:lib)?cudnn[\w.]{0,40})'"],
        92.0,
        title="{framework} could not load {soname}",
        title_plain="The cuDNN library could not be loaded",
        summary=NOT_FOUND_SUMMARY, fixes=NOT_FOUND_FIXES, framework="TensorFlow", refine=_dso,
        names_missing="cudnn",
        source="TensorFlow stream_executor/platform/default/dso_loader.cc",
    ),
    sig(
        "tf-dso-couldnt-open", "cudnn-library-not-found", "loading",
        ["couldn't open cuda library", "unable to load cudnn dso"],
        [r"Couldn't open CUDA library (?P<soname>(?:lib)?cudnn[\w.]{0,40})",
         r"Unable to load cuDNN DSO"],
        90.0,
        title="{framework} could not open {soname}",
        title_plain="TensorFlow could not load the cuDNN library",
        summary=NOT_FOUND_SUMMARY, fixes=NOT_FOUND_FIXES, framework="TensorFlow", refine=_dso,
        names_missing="cudnn",
        source="TensorFlow 0.x-1.x stream_executor/dso_loader.cc and cuda_dnn.cc",
    ),
    sig(
        "cannot-open-libcudnn", "cudnn-library-not-found", "loading",
        ["cannot open shared object file"],
        [r"(?P<soname>libcudnn(?:_\w{1,40})?\.so(?:\.\d{1,4}){0,3}):\s{0,3}cannot open shared object file"],
        90.0,
        title="{soname} could not be found by the dynamic loader", gate="dnn",
        title_plain="The cuDNN library could not be found by the dynamic loader",
        summary=NOT_FOUND_SUMMARY, fixes=NOT_FOUND_FIXES, refine=_dso,
        names_missing="cudnn",
        source="glibc dlopen error (ONNX Runtime provider_bridge_ort.cc, CuPy, CTranslate2 ...)",
    ),
    sig(
        "windows-cudnn-dll-not-found", "cudnn-library-not-found", "loading",
        ["cudnn64_", ".dll not found", "cudnn64"],
        [r"(?P<soname>cudnn64_\d{1,2}\.dll)(?:'?;?\s{0,3}dlerror:[^\n]{0,40})?\s{0,3}not found",
         r"(?:cannot|could not|failed to|unable to) (?:find|load|open)[^\n]{0,40}(?P<soname>cudnn64_\d{1,2}\.dll)"],
        90.0,
        title="{soname} was not found", gate="dnn",
        title_plain="The cuDNN DLL was not found",
        summary=NOT_FOUND_SUMMARY + " On Windows the cuDNN bin directory must be on PATH.",
        fixes=NOT_FOUND_FIXES,
        names_missing="cudnn",
        source="TensorFlow dso_loader.cc on Windows; Windows LoadLibrary errors",
    ),
    sig(
        "sublibrary-undefined-symbol", "cudnn-sublibrary-load-failed", "loading",
        ["cudnn_"],
        [r"(?P<library>libcudnn_[a-z_]{2,40}\.so(?:\.\d{1,3}){0,3}):\s{0,2}undefined symbol:\s{0,2}(?P<symbol>[\w@.]{1,300})"],
        93.0, gate="dnn",
        title="{library} was built for another cuDNN release than the sub-libraries beside it",
        title_plain="A cuDNN sub-library does not match the other sub-libraries it was loaded with",
        summary="A cuDNN sub-library could not resolve a symbol of its sibling (often the missing one "
        "is C++-mangled): the libcudnn_* files that were loaded come from different cuDNN releases, "
        "e.g. a system cuDNN on LD_LIBRARY_PATH mixed with a pip wheel's.",
        fixes=("reinstall-cudnn", "remove-shadowing-dir", "import-order"),
        source="glibc dynamic loader ('<library>: undefined symbol: <symbol>, version <lib>')",
    ),
    sig(
        "windows-dll-or-dependencies", "cudnn-sublibrary-load-failed", "loading",
        ["or one of its dependencies"],
        [r"Error loading \S{0,400}?(?P<soname>cudnn[a-z_]{0,30}64_\d{1,2}\.dll)\S{0,3} or one of its dependencies"],
        90.0, gate="dnn", refine=lambda g, line: (
            ("cudnn-library-not-found", 88.0) if g.get("soname", "").lower().startswith("cudnn64_") else None),
        title="Windows could not load {soname} or one of its dependencies",
        title_plain="Windows could not load a cuDNN DLL or one of its dependencies",
        summary="LoadLibrary failed for a cuDNN DLL (WinError 126): the DLL or one it needs (another "
        "cuDNN sub-library, zlibwapi.dll, the CUDA runtime) is missing from PATH or of another release.",
        fixes=("reinstall-cudnn", "install-cudnn-deps"),
        names_missing="cudnn",
        source="Windows LoadLibrary error 126 as reported by PyTorch's DLL loader (torch/__init__.py)",
    ),
    sig(
        "zlibwapi-missing", "cudnn-sublibrary-load-failed", "loading",
        ["zlibwapi.dll"],
        [r"zlibwapi\.dll"],
        88.0,
        title_plain="cuDNN could not load zlibwapi.dll, which its Windows sub-libraries need",
        summary="cuDNN 8.3-8.9 on Windows needs zlibwapi.dll next to its DLLs (NVIDIA cuDNN "
        "installation guide); without it the convolution sub-library fails to load.",
        fixes=("install-cudnn-deps", "reinstall-cudnn"),
        source="NVIDIA cuDNN 8 Windows installation guide (zlib dependency)",
    ),
    sig(
        "paddle-cannot-load-cudnn", "cudnn-library-not-found", "loading",
        ["cannot load cudnn shared library", "cudnn_dso_handle"],
        [r"Cannot load cudnn shared library", r"cudnn_dso_handle should not be null"],
        90.0,
        title_plain="PaddlePaddle could not load the cuDNN library",
        summary=NOT_FOUND_SUMMARY, fixes=NOT_FOUND_FIXES, framework="PaddlePaddle",
        names_missing="cudnn",
        source="PaddlePaddle paddle/fluid/platform/dynload/cudnn.cc",
    ),
    sig(
        "paddle-third-party-lib", "cudnn-library-not-found", "loading",
        ["that paddle depends on is not configured correctly"],
        [r"dynamic library \((?P<soname>[\w.]{1,40})\) that Paddle depends on is not configured correctly"],
        88.0,
        title="PaddlePaddle could not load {soname}", gate="librar",
        title_plain="PaddlePaddle could not load the cuDNN library",
        summary=NOT_FOUND_SUMMARY, fixes=NOT_FOUND_FIXES, framework="PaddlePaddle",
        refine=_paddle_third_party,
        names_missing="cudnn",
        source="PaddlePaddle paddle/phi/backends/dynload/dynamic_loader.cc",
    ),
    sig(
        "jax-unable-to-load-cudnn", "cudnn-library-not-found", "loading",
        ["unable to load cudnn", "cudnn not found"],
        [r"Unable to load cuDNN\.?\s{0,3}Is it installed", r"RuntimeError:\s{0,3}cuDNN not found"],
        86.0,
        title_plain="JAX could not load the cuDNN library",
        summary=NOT_FOUND_SUMMARY, fixes=NOT_FOUND_FIXES, framework="JAX",
        names_missing="cudnn",
        source="jaxlib cuda plugin (versions_helpers / _load)",
    ),
    sig(
        "torch-cudnn-library-not-found", "cudnn-library-not-found", "loading",
        ["cudnn library not found", "miopen library not found"],
        [r"cuDNN(?:/MIOpen)? library not found\.?\s{0,3}Check your (?P<libpath>[A-Z_]{4,30})"],
        88.0, framework="PyTorch", names_missing="cudnn",
        title_plain="PyTorch could not find the cuDNN library",
        summary=NOT_FOUND_SUMMARY, fixes=NOT_FOUND_FIXES,
        source="PyTorch torch/backends/cudnn/__init__.py (0.x-1.x _libcudnn)",
    ),
    sig(
        "ctranslate2-cudnn-not-found", "cudnn-library-not-found", "loading",
        ["is not found or cannot be loaded"],
        [r"Library (?P<soname>(?:lib)?cudnn[\w.\-]{0,50}) is not found or cannot be loaded"],
        88.0, framework="CTranslate2", refine=_dso, names_missing="cudnn", gate="librar",
        title="CTranslate2 could not load {soname}",
        title_plain="CTranslate2 could not load a cuDNN library",
        summary=NOT_FOUND_SUMMARY, fixes=NOT_FOUND_FIXES,
        source="CTranslate2 dynamic loader (faster-whisper/whisperX: 'Library X is not found or cannot be loaded')",
    ),
    # ---- markers: a loader could not open a library that is NOT cuDNN (weight 0, no diagnosis)
    sig(
        "other-library-cannot-open", "cudnn-library-not-found", "loading",
        ["cannot open shared object", "is not found or cannot be loaded", "could not load library",
         "could not locate"],
        [(rf"(?P<other_library>lib{_NOT_CUDNN}[A-Za-z][\w\-]{{0,40}}\.so(?:\.\d{{1,4}}){{0,3}}):"
          r"\s{0,3}cannot open shared object file"),
         rf"Library (?P<other_library>{_NOT_CUDNN}[\w.\-]{{1,60}}) is not found or cannot be loaded",
         (rf"Could not (?:load library|locate) "
          rf"(?P<other_library>{_NOT_CUDNN}[A-Za-z][\w\-]{{0,40}}(?:\.so(?:\.\d{{1,4}}){{0,3}}|\.dll))")],
        0.0, names_missing="other", gate="librar",
        source="glibc dlopen errors, CTranslate2 and cuDNN-style loaders naming a non-cuDNN library",
    ),
    sig(
        "tf-could-not-find-in-cudnn-dso", "cudnn-library-not-found", "loading",
        ["in cudnn dso"],
        [r"could not find (?P<symbol>cudnn\w{1,80}) in cudnn DSO"],
        95.0, also=(("cudnn-version-mismatch", 70.0),), framework="TensorFlow", names_missing="cudnn",
        title="TensorFlow found no cuDNN to take {symbol} from (the cuDNN DSO did not load)",
        title_plain="TensorFlow found no cuDNN library to take its functions from",
        summary="TensorFlow 0.x-1.x opens libcudnn itself and looks its functions up in it; when the "
        "library could not be opened (see 'Couldn't open CUDA library libcudnn...' above) the lookup "
        "falls back to the process and fails with 'undefined symbol'. Install the cuDNN this "
        "TensorFlow was built for, where its loader looks.",
        fixes=NOT_FOUND_FIXES,
        source="TensorFlow stream_executor/cuda/cuda_dnn.cc (dynload: 'could not find <fn> in cudnn DSO; dlerror: ...')",
    ),
)
