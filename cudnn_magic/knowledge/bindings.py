"""Family "bindings": programs outside the Python frameworks that load or build against cuDNN.

Each loads cuDNN by name with its own loader and words the failure its own way; the library that
could not be opened decides, as in family "loading". Wordings, quoted from the source that prints
them:

* Rust, cudarc ``src/lib.rs`` (candle, mistral.rs, ...): ``Unable to dynamically load the
  "cudnn" shared library - searched for library names: ["libcudnn.so", "libcudnn64.so", ...].
  Ensure that `LD_LIBRARY_PATH` has the correct path to the installed library.`` (since 0.11.6,
  June 2024); ``Unable to find cudnn lib under the names [...]. Please open GitHub issue.``
  (0.11.0-0.11.5); before that ``Lib::new(...).unwrap()`` panicked with ``DlOpen { desc:
  "libcudnn.so: cannot open shared object file: ..." }`` (family "loading"). A symbol the loaded
  cuDNN lacks: ``Expected symbol in library: DlSym { desc: "...libcudnn.so.8: undefined symbol:
  cudnnX" }`` (family "versions").
* Julia, cuDNN.jl ``__init__``: ``cuDNN is not available on your system (looked in ...)`` (local
  toolkit) and ``cuDNN is not available for your platform (x86_64-linux-gnu-...-cuda+none-...)``
  (artifacts); CUDA.jl 3.x ``deps/bindeps.jl``: ``This functionality is unavailabe as CUDNN is
  missing.``; Libdl's ``could not load library "C:\\...\\cudnn64_8.dll"`` followed by the
  system's reason (``The specified module could not be found.``, ``Access is denied.``, or
  dlerror on Linux).
* Java, JavaCPP's cuDNN preset (Deeplearning4j, JavaCV): ``java.lang.UnsatisfiedLinkError: no
  jnicudnn in java.library.path`` and ``...\\jnicudnn.dll: Can't find dependent libraries``;
  Deeplearning4j's layers: ``cuDNN not found: use cuDNN for better GPU performance by including
  the deeplearning4j-cuda module`` (it falls back to its own kernels).
* C/C++/Go builds (Caffe, Darknet, dlib, OpenCV's DNN module, Go's gorgonia via cgo): the linker's
  ``/usr/bin/ld: cannot find -lcudnn`` and MSVC's ``LNK1181: cannot open input file
  'cudnn.lib'``; the compiler's ``fatal error: cudnn.h: No such file or directory`` (MSVC
  ``C1083: Cannot open include file: 'cudnn.h'``); CMake's ``Could NOT find CUDNN``,
  ``CUDNN_LIBRARY-NOTFOUND``, MegEngine's ``Can not find CuDNN Library``, dlib's ``DID NOT FIND
  CUDNN`` / ``*** cuDNN V5.0 OR GREATER NOT FOUND. ***``. Source written for another cuDNN major
  fails to compile against the cudnn.h found: gcc ``'CUDNN_CONVOLUTION_FWD_SPECIFY_WORKSPACE_LIMIT'
  was not declared in this scope``, nvcc ``identifier "cudnnGetConvolutionForwardAlgorithm" is
  undefined``, ``'cudnnConvolutionBwdFilterAlgo_t' does not name a type``, cgo ``could not
  determine kind of name for C.cudnnSetRNNDescriptor`` (cuDNN 8 removed the v7 algorithm
  queries and workspace-limit preferences, cuDNN 9 the v6/v7 RNN API: cuDNN API deprecation
  notes).
* dlib at run time ``dlib/cuda/cudnn_dlibapi.cpp``: ``Error while calling cudnnCreate(&handles[...])
  in file .../cudnn_dlibapi.cpp:104. code: 1, reason: CUDA Runtime API initialization failed.``
  (its own reason strings per status; the code is the cuDNN status number).
"""

from __future__ import annotations

import re

from ..rules.cudnn_version import try_parse
from .signature import sig
from .status_codes import decode_status

NOT_FOUND_FIXES = ("install-matching-cudnn", "remove-shadowing-dir")

BUILD_SUMMARY = (
    "The build could not find cuDNN's development files: the linker searches LIBRARY_PATH and its -L "
    "directories (not LD_LIBRARY_PATH) for libcudnn.so (cudnn.lib on Windows), the compiler its include "
    "path for cudnn.h. cuDNN is not installed, or it is installed where this build does not look (a pip "
    "wheel's nvidia/cudnn folder, a tarball outside /usr/local/cuda, a versioned libcudnn.so.9 with no "
    "unversioned libcudnn.so link, which the cuDNN development package adds)."
)

API_SUMMARY = (
    "The source uses cuDNN API that the cudnn.h it compiles against does not declare: it was written for "
    "another cuDNN major. cuDNN 8 removed cudnnGetConvolution*Algorithm and the *_SPECIFY_WORKSPACE_LIMIT "
    "preferences, cuDNN 9 the v6/v7 RNN API (cudnnSetRNNDescriptor); an old project fails against a newer "
    "cuDNN, a new one against an older header. Build against the cuDNN release the project supports (its "
    "CUDNN include and library paths), or use a release of the project written for this cuDNN."
)

_SUB = re.compile(r"cudnn_(?:ops|cnn|adv|graph|engines|heuristic)", re.IGNORECASE)


def _main_or_sub(groups: dict[str, str], line: str) -> tuple[str | None, float] | None:
    """The file named decides: a ``cudnn_*`` sub-library (``cudnn_cnn_infer64_8.dll``) or the main one."""
    if _SUB.search(groups.get("soname", "")):
        return "cudnn-sublibrary-load-failed", 92.0
    return None


def _javacpp_trial(groups: dict[str, str], line: str) -> tuple[str | None, float] | None:
    """JavaCPP's debug log tries every name in turn ("Debug: Failed to load for cudnn@.8: ..."):
    one failed try is no failure."""
    if "failed to load for" in line.lower():
        return (None, 0.0)
    return _main_or_sub(groups, line)


_DLIB_WEIGHT = {
    "gpu-out-of-memory": 84.0, "gpu-arch-unsupported": 86.0, "cudnn-sublibrary-load-failed": 90.0,
    "cuda-driver-too-old": 88.0, "cudnn-version-mismatch": 80.0, "tensors-on-different-devices": 76.0,
}


def _dlib_status(groups: dict[str, str], line: str) -> tuple[str | None, float] | None:
    """dlib prints the status number beside its own reason string: the number decides
    (cuDNN 8 numbering below 1000, cuDNN 9's above)."""
    try:
        st = decode_status(int(groups.get("status_code", "")))
    except ValueError:
        return None
    if st.diagnosis is None:
        return None
    groups["status"] = st.name
    return st.diagnosis, _DLIB_WEIGHT.get(st.diagnosis, 66.0)


def _opencv_versions(groups: dict[str, str], line: str) -> tuple[str | None, float] | None:
    """OpenCV's checkVersions: 4.4-4.5.0 compare the encoded numbers exactly (a newer patch warns
    too); later releases print major.minor and warn when incompatible, but until opencv#25841 (4.11)
    they decoded cuDNN 9's encoding as "90.1" against a build's "9.1": the same release, no mismatch."""

    loaded, built = groups.get("loaded", ""), groups.get("compiled", "")
    if "." in loaded:
        major, minor = loaded.split(".", 1)
        if int(major) >= 10:  # cuDNN 9's version formula read with cuDNN 8's divisors
            loaded = f"{int(major) // 10}.{minor}"
            groups["loaded"] = loaded
    rt, src = try_parse(loaded), try_parse(built)
    if rt is None or src is None:
        return None
    if (rt.major, rt.minor or 0, rt.patch or 0) == (src.major, src.minor or 0, src.patch or 0):
        return (None, 0.0)
    older = rt.major != src.major or (rt.minor or 0, rt.patch or 0) < (src.minor or 0, src.patch or 0)
    return "cudnn-version-mismatch", 90.0 if older else 72.0


#: what a failing call's role may refine (the call markers of family "calls")
_REFINED = ("cudnn-init-failed", "cudnn-stream-set-failed", "cudnn-unsupported-config", "gpu-out-of-memory")

SIGNATURES = (
    # ---- Rust: cudarc's dynamic loader
    sig(
        "cudarc-unable-to-load-cudnn", "cudnn-library-not-found", "bindings",
        ['" shared library - searched for library names', "cudnn lib under the names"],
        [r"Unable to dynamically load the \\?\"(?P<library>cudnn)\\?\" shared library",
         r"Unable to find (?P<library>cudnn) lib under the names"],
        90.0, framework="cudarc (Rust)", names_missing="cudnn",
        extras=[r"searched for library names:\s{0,2}\[(?P<searched>[^\]\n]{1,600})\]",
                r"under the names\s{0,2}\[(?P<searched>[^\]\n]{1,600})\]"],
        title="cudarc (Rust) found cuDNN under none of the names it tries",
        title_plain="cudarc (Rust) found cuDNN under none of the names it tries",
        summary="cudarc dlopens cuDNN by a fixed list of file names built from the CUDA version it was "
        "compiled for (libcudnn.so, libcudnn.so.<CUDA major>, cudnn64_<n>.dll, ...) and panics when none "
        "opens. A cuDNN present only as libcudnn.so.9 (no unversioned libcudnn.so, which cuDNN's development "
        "package adds) is not among the names of older cudarc releases; otherwise cuDNN is not on the "
        "loader's path (LD_LIBRARY_PATH, the ld.so cache, PATH on Windows).",
        fixes=NOT_FOUND_FIXES,
        source="cudarc src/lib.rs panic_no_lib_found (0.11.6+) and 0.11.0-0.11.5 'Unable to find {lib} lib under the names'",
    ),
    sig(
        "cudarc-other-library", "cudnn-library-not-found", "bindings",
        ['" shared library - searched for library names'],
        [r"Unable to dynamically load the \\?\"(?P<other_library>(?!cudnn\b)\w{1,30})\\?\" shared library"],
        0.0, names_missing="other",
        source="cudarc src/lib.rs (a library other than cuDNN: cublas, nvrtc, curand, ...)",
    ),
    # ---- Julia: cuDNN.jl / CUDA.jl / Libdl
    sig(
        "julia-cudnn-not-available", "cudnn-library-not-found", "bindings",
        ["cudnn is not available", "cudnn is missing"],
        [r"cuDNN is not available on your system(?:\s{0,2}\(looked in (?P<searched>[^)\n]{1,400})\))?",
         r"cuDNN is not available for your platform(?:\s{0,2}\((?P<platform>[^)\n]{1,200})\))?",
         r"This functionality is unavailabl?e as CUDNN is missing"],
        88.0, framework="CUDA.jl (Julia)", names_missing="cudnn", gate="dnn",
        title_plain="CUDA.jl found no cuDNN (cuDNN is not available)",
        summary="cuDNN.jl (CUDA.jl 3.x: its CUDNN module) looked for cuDNN when the package loaded and found "
        "none: with a local CUDA toolkit (CUDA.set_runtime_version!(local_toolkit=true)) it searches the "
        "toolkit's directories, otherwise the CUDNN_jll artifact, which exists only for a detected CUDA "
        "runtime ('cuda+none' in the platform means no CUDA driver or runtime was detected).",
        fixes=NOT_FOUND_FIXES,
        source="cuDNN.jl lib/cudnn/src/cuDNN.jl __init__; CUDA.jl 3.x deps/bindeps.jl libcudnn()",
    ),
    sig(
        "julia-libdl-could-not-load-cudnn", "cudnn-library-not-found", "bindings",
        ["could not load library"],
        [r"could not load library \"(?:[^\"\n]{0,400}[/\\])?(?P<soname>(?:lib)?cudnn[\w.\-]{0,60})\""],
        90.0, framework="Julia (Libdl)", names_missing="cudnn", refine=_main_or_sub, gate="librar",
        extras=[(r"^\s{0,6}(?P<error>The specified module could not be found\.|Access is denied\.|"
                 r"[\w.\-]{1,80}: cannot open shared object file[^\n]{0,80})")],
        window=2,
        title="Julia could not load {soname}",
        title_plain="Julia could not load a cuDNN library",
        summary="Libdl.dlopen of a cuDNN file failed (the reason follows the path: the file or a DLL it needs "
        "is missing, of the wrong architecture, or unreadable). CUDA.jl and CuArrays.jl open cuDNN's "
        "sub-libraries eagerly from their artifact directory, so a missing sub-library or a missing "
        "dependency (zlibwapi.dll, the CUDA runtime) shows here.",
        fixes=("reinstall-cudnn", "install-cudnn-deps", "remove-shadowing-dir"),
        source="Julia Base.Libc.Libdl.dlopen ('could not load library \"<path>\"' + the system's reason)",
    ),
    sig(
        "julia-libdl-other-library", "cudnn-library-not-found", "bindings",
        ["could not load library"],
        [r"could not load library \"(?:[^\"\n]{0,400}[/\\])?(?P<other_library>(?!(?:lib)?cudnn)[A-Za-z][\w.\-]{0,60})\""],
        0.0, names_missing="other", gate="librar",
        source="Julia Libdl.dlopen naming a library other than cuDNN",
    ),
    # ---- Java: JavaCPP's cuDNN preset, Deeplearning4j
    sig(
        "javacpp-no-jnicudnn", "cudnn-library-not-found", "bindings",
        ["jnicudnn", "cudnn64_"],
        [r"no (?P<soname>jnicudnn) in java\.library\.path",
         r"(?P<soname>jnicudnn)\.(?:dll|so)[^\n]{0,40}Can't find dependent libraries",
         r"UnsatisfiedLinkError: no (?P<soname>cudnn\w{0,40}) in java\.library\.path"],
        88.0, framework="JavaCPP (Java)", names_missing="cudnn", refine=_javacpp_trial,
        title="Java could not load cuDNN through JavaCPP ({soname})",
        title_plain="Java could not load cuDNN through JavaCPP",
        summary="JavaCPP's cuDNN preset loads its JNI library (jnicudnn), which needs the cuDNN library of the "
        "release the preset was built for (cudnn64_<major>.dll / libcudnn.so.<major>) on PATH or "
        "java.library.path; it is missing, or of another major, or the cuda-redist artifact "
        "(org.bytedeco:cuda with the -redist classifier) that bundles it is not on the classpath.",
        fixes=NOT_FOUND_FIXES,
        source="JavaCPP Loader.load (org.bytedeco.cuda cudnn preset): UnsatisfiedLinkError",
    ),
    sig(
        "dl4j-cudnn-not-found", "cudnn-library-not-found", "bindings",
        ["cudnn not found"],
        [r"cuDNN not found: use cuDNN for better GPU performance by including the deeplearning4j-cuda module"],
        55.0, warning=True, framework="Deeplearning4j",
        title_plain="Deeplearning4j runs without cuDNN: the deeplearning4j-cuda module (its cuDNN helpers) is not on the classpath",
        summary="Deeplearning4j's layers look for their cuDNN helper classes (CudnnConvolutionHelper, "
        "CudnnLSTMHelper, ...) from the deeplearning4j-cuda-<CUDA version> module; without it they run on "
        "ND4J's own CUDA kernels, slower, and cuDNN is never used.",
        fixes=("install-cudnn-build",),
        source="Deeplearning4j ConvolutionLayer/LSTM helper initialization (deeplearning4j-nn)",
    ),
    # ---- native builds: link, include, CMake, API of another cuDNN major
    sig(
        "build-cannot-find-lcudnn", "cudnn-library-not-found", "bindings",
        ["-lcudnn", "input file 'cudnn"],
        [r"cannot find -l(?P<soname>cudnn)\b",
         r"LNK1181:\s{0,2}cannot open input file '(?P<soname>cudnn(?:64_\d{1,2})?\.lib)'"],
        88.0, framework="a native build", names_missing="cudnn",
        title="The linker found no cuDNN library to link ({soname})",
        title_plain="The linker found no cuDNN library to link",
        summary=BUILD_SUMMARY, fixes=("install-matching-cudnn",),
        source="GNU ld ('cannot find -lcudnn') and MSVC link ('LNK1181: cannot open input file cudnn.lib')",
    ),
    sig(
        "build-no-cudnn-header", "cudnn-library-not-found", "bindings",
        ["error: cudnn", "'cudnn"],
        [r"fatal error:\s{0,2}(?P<header>cudnn(?:_version)?\.h):\s{0,2}No such file or directory",
         r"C1083:\s{0,2}Cannot open include file:\s{0,2}'(?P<header>cudnn(?:_version)?\.h)'"],
        86.0, framework="a native build",
        title="The compiler found no {header} (cuDNN's development files are not where the build looks)",
        title_plain="The compiler found no cudnn.h (cuDNN's development files are not where the build looks)",
        summary=BUILD_SUMMARY, fixes=("install-matching-cudnn",),
        source="gcc/nvcc ('fatal error: cudnn.h: No such file or directory'), MSVC C1083",
    ),
    sig(
        "cmake-cudnn-not-found", "cudnn-library-not-found", "bindings",
        ["find cudnn", "cudnn_"],
        [r"Could NOT find CUDNN",
         r"Can not find CuDNN Library",
         r"(?P<variable>CUDNN_(?:LIBRARY|INCLUDE_DIR|LIBRARY_PATH|INCLUDE_PATH)\w{0,20})-NOTFOUND",
         r"DID NOT FIND CUDNN"],
        84.0, framework="a native build",
        title_plain="The build configuration found no cuDNN (CMake)",
        summary=BUILD_SUMMARY + " CMake's FindCUDNN modules take a hint (CUDNN_ROOT, CUDNN_ROOT_DIR, "
        "CUDNN_LIBRARY/CUDNN_INCLUDE_DIR, or the project's own variables); without cuDNN, dlib builds "
        "without CUDA at all.",
        fixes=("install-matching-cudnn",),
        source="CMake find modules (FindCUDNN.cmake: 'Could NOT find CUDNN', '<VAR>-NOTFOUND'); MegEngine "
               "cmake/cudnn.cmake; dlib dlib/CMakeLists.txt",
    ),
    sig(
        "build-cudnn-api-of-another-major", "cudnn-version-mismatch", "bindings",
        ["‘cudnn", "'cudnn", '"cudnn', "c.cudnn"],
        [r"[‘'`\"](?P<symbol>(?:cudnn|CUDNN_)\w{1,80})[’'`\"] was not declared in this scope",
         r"identifier \"(?P<symbol>(?:cudnn|CUDNN_)\w{1,80})\" is undefined",
         r"[‘'`\"](?P<symbol>cudnn\w{1,80})[’'`\"] does not name a type",
         r"too (?:few|many) arguments to function [‘'`\"](?:cudnnStatus_t )?(?P<symbol>cudnn\w{1,80})\(",
         r"could not determine kind of name for C\.(?P<symbol>(?:cudnn|CUDNN_)\w{1,80})",
         r"use of undeclared identifier '(?P<symbol>(?:cudnn|CUDNN_)\w{1,80})'"],
        88.0, framework="a native build", gate="dnn",
        title="The source uses {symbol}, which the cudnn.h it compiles against does not declare (written for another cuDNN major)",
        title_plain="The source uses cuDNN API that the cudnn.h it compiles against does not declare",
        summary=API_SUMMARY, fixes=("install-matching-cudnn",),
        source="gcc/nvcc/clang/cgo compile errors on cuDNN API removed or added between majors (cuDNN 8 and 9 "
               "API deprecation notes)",
    ),
    # ---- OpenCV's DNN module (C++ and its Python/Rust bindings)
    sig(
        "opencv-cudnn-reports-version", "cudnn-version-mismatch", "bindings",
        ["cudnn reports version"],
        [(r"cuDNN reports version (?P<loaded>\d{1,6}(?:\.\d{1,3})?) which (?:does not match with|is not compatible with) "
          r"the version (?P<compiled>\d{1,6}(?:\.\d{1,3})?) with which OpenCV was built")],
        90.0, framework="OpenCV", refine=_opencv_versions,
        title="OpenCV's DNN module loaded cuDNN {loaded}, {age} the {compiled} it was built with",
        title_plain="OpenCV's DNN module loaded another cuDNN than the one it was built with",
        summary="OpenCV's CUDA backend compares the cuDNN it loaded with the one it was built against and logs a "
        "warning; an older minor or another major can then fail in cuDNN calls (CUDNN_STATUS_* from cuda4dnn). "
        "OpenCV links cuDNN at build time, so the fix is the cuDNN it was built with on the loader's path, or "
        "rebuilding OpenCV against the cuDNN installed.",
        fixes=("install-matching-cudnn", "remove-shadowing-dir"),
        source="OpenCV modules/dnn/src/cuda4dnn/init.hpp checkVersions (4.4: 'does not match with'; 4.5+: 'is not "
               "compatible with')",
    ),
    # ---- dlib at run time
    sig(
        "dlib-cudnn-call-failed", "cudnn-internal-error", "bindings",
        ["cudnn_"],
        [(r"Error while calling (?P<call>cudnn\w{1,60})\([^\n]{0,300}?\) in file [^\n]{0,300}?cudnn_dlibapi\.cpp:\d{1,6}\.?"
          r"\s{0,3}code:\s{0,2}(?P<status_code>\d{1,5}),\s{0,2}reason:\s{0,2}(?P<reason>[^\n]{0,120})")],
        66.0, generic=True, refine=_dlib_status, framework="dlib",
        title_plain="dlib's cuDNN call failed",
        summary="dlib's CUDA build checks every cuDNN call and throws dlib::cudnn_error with the status number "
        "and its own reason string; the number is cuDNN's status code (see the title for its name).",
        source="dlib dlib/cuda/cudnn_dlibapi.cpp CHECK_CUDNN ('Error while calling ... code: N, reason: ...')",
    ),
    sig(
        "dlib-cudnn-call-marker", "cudnn-internal-error", "bindings",
        ["cudnn_"],
        [r"Error while calling (?P<call>cudnn\w{1,60})\([^\n]{0,400}?cudnn_dlibapi"],
        0.0, supports=_REFINED, cudnn_path=True,
        source="dlib dlib/cuda/cudnn_dlibapi.cpp (the cuDNN function that failed)",
    ),
)
