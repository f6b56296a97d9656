"""Would ``pip install REQ`` change the finding it is offered for? (A fix is offered as
applicable only when it would change something.)

Two ways a cuDNN wheel install changes nothing, or harms, found here without running pip (the
full prediction is ``cudnn-magic check --what-if``, :mod:`cudnn_magic.engines.whatif`, which uses the same
folder table):

* **It overwrites another family's files.** ``nvidia-cudnn-cu12`` and ``nvidia-cudnn-cu13`` both
  write ``site-packages/nvidia/cudnn`` (:mod:`cudnn_magic.rules.wheel_folders`): installing one
  where the other is installed writes its files over the other's (PyTorch for CUDA 13 then runs
  the CUDA 12 files). The what-if predicts ``cudnn-wheel-overwritten`` for it.
* **The consumer never looks in the wheel's folder.** The loader replayed with the folder added:
  a library that ``dlopen``\\ s ``libcudnn.so.N`` by name (ONNX Runtime's CUDA provider) searches
  only ``LD_LIBRARY_PATH``, its ``RUNPATH``, the ld.so cache and the default directories
  (glibc ``dl-load.c``; :func:`cudnn_magic.probes.loader.search_steps`); ``site-packages/nvidia/
  cudnn/lib`` is none of them, so the installed wheel is found by nothing (measured:
  ``onnxruntime-gpu`` 1.18 with ``nvidia-cudnn-cu11`` really installed still "will find no
  libcudnn.so.8"). Consumers that load cuDNN by path from ``sys.path`` (PyTorch's
  ``_preload_cuda_deps``, JAX's plugin, CuPy's cuda-pathfinder) are not judged here.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from packaging.version import InvalidVersion, Version

from ..rules.requirement import parse_requirement
from ..rules.wheel_folders import canonical, cudnn_folder

#: ONNX Runtime's ``preload_dlls()`` (loads the CUDA and cuDNN wheels' libraries by path) exists
#: since 1.21 (onnxruntime/__init__.py, "preload_dlls"); earlier releases only search by name.
ORT_PRELOAD_DLLS = Version("1.21")


def _dist(owner: str) -> tuple[str, str] | None:
    bits = owner.split()
    if owner.startswith("pip: ") and len(bits) == 3:
        return canonical(bits[1]), bits[2]
    return None


def _real(path: str) -> str:
    return os.path.realpath(path)


def pip_fix_blocker(fw: Any, requirement: str, installed: Iterable[Any], *, purelib: str,
                    search_dirs: Iterable[str] | None) -> str | None:
    """Why ``pip install requirement`` would not fix ``fw``'s cuDNN finding, or None when nothing
    here says it would not.

    Args:
        fw: the :class:`~cudnn_magic.model.FrameworkBuild` the fix is for (``name``, ``version``,
            ``preloads``, ``cuda_compiled``).
        requirement: the cuDNN wheel requirement (``"nvidia-cudnn-cu12>=9,<10"``).
        installed: the cuDNN copies on disk (:class:`~cudnn_magic.model.LibraryCopy`: ``owner``
            "pip: NAME VERSION", ``directory``, ``is_main``).
        purelib: the site-packages pip installs into (``sysconfig.get_paths()["purelib"]``).
        search_dirs: every directory ``fw``'s library searches for the soname, in order
            (``LD_LIBRARY_PATH``, RPATH/RUNPATH, the ld.so cache's, the default ones); None
            when its library is not known (then only the overwrite is judged).

    Returns:
        One sentence, or None. Never raises.
    """
    r = parse_requirement(requirement)
    if r is None:
        return None
    folder = cudnn_folder(r.name)
    if folder is None:
        return None
    lib = os.path.join(purelib, *folder.split("/"), "lib")
    for c in installed:
        d = _dist(getattr(c, "owner", "") or "")
        if d and c.is_main and d[0] != canonical(r.name) and cudnn_folder(d[0]) == folder \
                and _real(c.directory) == _real(lib):
            return (f"{canonical(r.name)} writes {folder}, where {d[0]} {d[1]} is installed: pip would write its files "
                    f"over {d[0]}'s, and whatever loads them gets the other CUDA family's cuDNN "
                    f"(cudnn-magic check --what-if \"{requirement}\" predicts cudnn-wheel-overwritten)")
    if search_dirs is None or getattr(fw, "preloads", None) or fw.name in ("PyTorch", "JAX", "CuPy"):
        return None  # loads cuDNN by path from sys.path: a wheel in site-packages is found
    if _real(lib) in {_real(d) for d in search_dirs if d}:
        return None
    return (f"pip would put it in {lib}, which {fw.name}'s loader search (LD_LIBRARY_PATH, its RUNPATH, the ld.so "
            "cache, the default directories) never reads: installing it changes nothing for it")


def wheel_lib_dir(requirement: str, purelib: str) -> str | None:
    """Where ``pip install requirement`` puts the cuDNN libraries (``<purelib>/<folder>/lib``),
    or None when it is not a cuDNN wheel of a known family."""
    r = parse_requirement(requirement)
    folder = cudnn_folder(r.name) if r is not None else None
    return os.path.join(purelib, *folder.split("/"), "lib") if folder else None


def found_by_name_advice(fw: Any, requirement: str, purelib: str) -> tuple[str, str] | None:
    """(title, action) of the advice that makes a consumer which searches by name find the
    wheel ``requirement`` installs (``add-library-path``), or None for another requirement."""
    lib = wheel_lib_dir(requirement, purelib)
    if lib is None:
        return None
    if fw.name == "ONNX Runtime":
        return (f"Install {requirement} and make ONNX Runtime load it",
                f"python -m pip install '{requirement}'; then {onnxruntime_ways(fw, lib)}")
    return (f"Install {requirement} and put its folder on LD_LIBRARY_PATH",
            (f"python -m pip install '{requirement}', then add {lib} to LD_LIBRARY_PATH in the kernelspec \"env\" "
             "(kernel.json) or the shell that starts Jupyter, and start the kernel fresh"))


def onnxruntime_ways(fw: Any, lib: str) -> str:
    """What makes ONNX Runtime load the wheel in ``lib``, by its release and CUDA build."""
    ways = []
    try:
        v = Version(str(fw.version))
    except InvalidVersion:
        v = None
    if v is not None and v >= ORT_PRELOAD_DLLS:
        # preload_dlls() looks in the site folder onnxruntime itself is in (os.path.dirname(__file__)/..,
        # onnxruntime/__init__.py), not along sys.path
        lib_path = getattr(fw, "consumer_library", None) or ""
        ort_site = os.path.dirname(os.path.dirname(os.path.dirname(lib_path))) if lib_path else ""
        if ort_site and _real(os.path.join(ort_site, "nvidia")) == _real(os.path.dirname(os.path.dirname(lib))):
            ways.append("call onnxruntime.preload_dlls() before the first session (it loads the CUDA and cuDNN "
                        f"wheels' libraries by path from {ort_site}, where onnxruntime is installed)")
        else:
            ways.append(f"call onnxruntime.preload_dlls(cuda=False, directory=\"{lib}\") before the first session "
                        "(with no directory it looks only beside onnxruntime"
                        + (f", in {ort_site}" if ort_site else "") + ")")
    ways.append(f"put {lib} on LD_LIBRARY_PATH where the kernel starts (the kernelspec \"env\"), then start the "
                "kernel fresh")
    out = "; or ".join(ways)
    cuda = str(getattr(fw, "cuda_compiled", "") or "").split(".")[0]
    if cuda.isdigit():
        out += (f". ONNX Runtime {fw.version} is a CUDA {cuda} build: it needs the CUDA {cuda} runtime libraries "
                f"(libcudart, libcublas, libcublasLt, libcufft of CUDA {cuda}) found the same way")
    return out


__all__ = ["ORT_PRELOAD_DLLS", "found_by_name_advice", "onnxruntime_ways", "pip_fix_blocker", "wheel_lib_dir"]
