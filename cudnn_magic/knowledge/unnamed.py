"""Family "unnamed": a native library failed to load and the message does not say which one.

Windows reports a missing dependency of an extension module without naming it: Python's
``ImportError: DLL load failed: The specified module could not be found.`` (3.8+: ``DLL load
failed while importing _pywrap_tensorflow_internal: ...``, the reason in the system's language:
``找不到指定的模块。``), ``OSError: [WinError 126] The specified module could not be found`` and
PyTorch's ``Error loading "...\\torch\\lib\\torch_cuda.dll" or one of its dependencies.``, ctypes'
``Could not find module '...\\x.dll' (or one of its dependencies)``, .NET's ``System.DllNotFoundException:
Unable to load DLL 'DlibDotNetNativeDnn' or one of its dependencies: The specified module could not be
found. (Exception from HRESULT: 0x8007007E)`` (a cuDNN file named there is cuDNN's: ``Unable to load
DLL 'cudnn64_6.dll'``). The module that failed is
named; the dependency that is missing is not: cuDNN (cudnn64_8.dll is a dependency of
_pywrap_tensorflow_internal.pyd, torch_cuda.dll, dlib's _dlib_pybind11.pyd, onnxruntime's CUDA
provider), the CUDA runtime, the MSVC runtime, zlib, or anything else.

The text alone never makes this a cuDNN diagnosis: the id is ``unnamed-library-load-failed``, whose
summary says what to check; with the live facts of this environment (``cudnn-magic explain --facts``,
or the kernel's own report) :mod:`cudnn_magic.engines.diagnose` joins it with the loader search of every
cuDNN consumer and says whether cuDNN is what is missing. A cuDNN file named anywhere in the text
(``Error loading "...\\cudnn_cnn_infer64_8.dll" or one of its dependencies``, TensorFlow 1.x's
``Could not find 'cudnn64_7.dll'``) is read by family "loading" and outranks this one; a text that
names only other libraries as missing drops it (``unnamed_load``).
"""

from __future__ import annotations

import re

from .signature import sig

_CUDNN_FILE = re.compile(r"[/\\\"']cudnn\w{0,40}\.dll|^cudnn\w{0,40}\.dll", re.IGNORECASE)


def _dotnet_sub(groups: dict[str, str], line: str) -> tuple[str | None, float] | None:
    """.NET names the cuDNN file it was asked to load: a ``cudnn_*`` one is a sub-library."""
    name = groups.get("soname", "").replace("\\", "/").rsplit("/", 1)[-1].lower()
    return ("cudnn-sublibrary-load-failed", 92.0) if name.startswith(("cudnn_", "libcudnn_")) else None


def _not_cudnn(groups: dict[str, str], line: str) -> tuple[str | None, float] | None:
    """A named cuDNN DLL is family "loading"'s: this one stays for other modules only."""
    if _CUDNN_FILE.search(groups.get("module", "")):
        return (None, 0.0)
    return None


SUMMARY = (
    "Windows could not load a DLL that this module needs, and the message names none: the module that "
    "failed is named, the missing dependency is not. It may be cuDNN (cudnn64_<major>.dll, needed by "
    "TensorFlow's, PyTorch's, dlib's and ONNX Runtime's CUDA builds), the CUDA runtime, the Microsoft "
    "Visual C++ runtime (vcruntime140_1.dll), zlibwapi.dll, or another. Since Python 3.8 the folders on "
    "PATH are no longer searched for an extension's dependencies: a cuDNN that is on PATH is still not "
    "found unless its folder is added with os.add_dll_directory() (or copied beside the module). What to "
    "check: run `cudnn-magic explain --facts` (or %cudnn_check in the kernel) in the same environment, "
    "which resolves every cuDNN consumer's library search and says whether cuDNN is the one missing; or "
    "list the module's dependencies (dumpbin /dependents, the Dependencies tool) and find which is absent."
)

SIGNATURES = (
    sig(
        "dotnet-unable-to-load-cudnn", "cudnn-library-not-found", "unnamed",
        ["dll"],
        [r"Unable to load (?:DLL|shared library) '(?:[^'\n]{0,160}[/\\])?(?P<soname>(?:lib)?cudnn[\w.\-]{0,60})'"],
        90.0, refine=_dotnet_sub, framework=".NET", names_missing="cudnn",
        title=".NET could not load {soname}",
        title_plain=".NET could not load a cuDNN library",
        summary="The .NET runtime could not load a cuDNN library (System.DllNotFoundException): it or a library it "
        "needs is not in the application's folder or on PATH (LD_LIBRARY_PATH on Linux).",
        fixes=("install-matching-cudnn", "remove-shadowing-dir"),
        source=".NET System.DllNotFoundException ('Unable to load DLL 'cudnn64_8.dll'', 'Unable to load shared library')",
    ),
    sig(
        "dotnet-unable-to-load-dll", "unnamed-library-load-failed", "unnamed",
        ["dll"],
        [(r"Unable to load (?:DLL|shared library) '(?!(?:[^'\n]{0,160}[/\\])?(?:lib)?cudnn)(?P<module>[^'\n]{1,160})'"
          r"(?: or one of its dependencies)?:?\s{0,3}(?P<reason>[^\n]{0,160})")],
        40.0, unnamed_load=True, framework=".NET",
        title=".NET could not load {module} or a library it needs (the message does not say which)",
        title_plain=".NET could not load a native library or one of its dependencies (the message does not say which)",
        summary=SUMMARY,
        source=".NET System.DllNotFoundException ('Unable to load DLL 'X' or one of its dependencies: ... "
               "(0x8007007E)'; 'Unable to load shared library' on Linux)",
    ),
    sig(
        "python-dll-load-failed", "unnamed-library-load-failed", "unnamed",
        ["dll"],
        [r"(?:DLL load failed|Failed to load DLL)(?: while importing (?P<module>[\w.]{1,80}))?:\s{0,3}(?P<reason>[^\n]{0,160})"],
        40.0, unnamed_load=True, refine=_not_cudnn,
        title="Windows could not load a DLL that {module} needs (the message does not say which)",
        title_plain="Windows could not load a DLL that an extension module needs (the message does not say which)",
        summary=SUMMARY,
        source="CPython Python/dynload_win.c ('DLL load failed[ while importing X]: <FormatMessage text>')",
    ),
    sig(
        "winerror-126-or-dependencies", "unnamed-library-load-failed", "unnamed",
        ["dll"],
        [r"Error loading \"(?:[^\"\n]{0,400}[/\\])?(?P<module>[\w.\-]{1,80}\.dll)\" or one of its dependencies",
         r"Could not find module '(?:[^'\n]{0,400}[/\\])?(?P<module>[\w.\-]{1,80})' \(or one of its dependencies\)"],
        42.0, unnamed_load=True, refine=_not_cudnn,
        title="Windows could not load {module} or a DLL it needs (the message does not say which)",
        title_plain="Windows could not load a DLL or one of its dependencies (the message does not say which)",
        summary=SUMMARY,
        source="PyTorch torch/__init__.py _load_dll_libraries ('Error loading \"X\" or one of its dependencies', "
               "WinError 126); CPython Lib/ctypes ('Could not find module ... (or one of its dependencies)')",
    ),
)
