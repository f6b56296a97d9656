"""PyTorch: the cuDNN it bundles or pins (``torch/lib/libcudnn*``, ``nvidia-cudnn-cu*`` pins) and,
when imported, ``torch.backends.cudnn.version()``."""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import os
import re
from typing import Any

from ...model import FrameworkBuild, Preload
from ...rules.cudnn_version import CudnnVersion, try_parse
from ..elf import NotElf, read_dynamic
from ..installed import resolve
from ..loaded import safe_to_call_mapped_cudnn
from ..loader import environ_at_start, read_ldcache
from .common import (
    _call,
    _cudnn_pins,
    _Finder,
    _first_existing,
    _import,
    _imported_module,
    _leftover,
    _pin_name,
    _pin_version,
    _soname,
    _v3,
    module_constants,
)
from .torch_preload import read_preload_rule, torch_preload

_TORCH_CONSUMERS = ("lib/libtorch_cuda.so", "lib/libtorch_cuda_cpp.so", "lib/libtorch_cuda_cu.so", "lib/libtorch.so")


_BUNDLED = re.compile(r"^libcudnn(?:-[0-9a-f]{8})?\.so\.(\d+(?:\.\d+){0,3})$")


def _bundled_cudnn(pkg: str) -> tuple[CudnnVersion, str] | None:
    """A ``libcudnn.so.N[.x.y]`` shipped inside ``torch/lib`` (wheels before torch 1.13 bundled
    it; auditwheel names look like ``libcudnn-<hash>.so.8.0.5``): (version, file name)."""
    lib = os.path.join(pkg, "lib")
    try:
        names = sorted(os.listdir(lib), key=len, reverse=True)
    except OSError:
        return None
    for n in names:
        m = _BUNDLED.match(n)
        if m:
            v = try_parse(m.group(1)) if "." in m.group(1) else CudnnVersion(int(m.group(1)))
            if v is not None:
                return v, n
    return None


def _probe_torch(f: _Finder, import_frameworks: bool, notes: list[str]) -> list[FrameworkBuild]:
    dirs = f.package_dirs("torch")
    if not dirs:
        return []
    pkg = dirs[0]
    dists = f.dists(("torch", "pytorch", "torch-nightly"), near=pkg)
    dist = dists[0] if dists else None
    if _leftover(pkg, dist, "PyTorch", notes):
        return []
    consts: dict[str, Any] = {}
    vpath = os.path.join(pkg, "version.py")
    try:
        consts, _ = module_constants(vpath)
    except FileNotFoundError:
        notes.append(f"PyTorch: {vpath} is missing")
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        notes.append(f"PyTorch: could not read {vpath}: {type(exc).__name__}: {exc}")
    version = dist.version if dist else str(consts.get("__version__") or "unknown")
    pins = _cudnn_pins(dist)
    mod = _imported_module("torch", pkg)
    if mod is None and import_frameworks:
        mod = _import("torch", pkg, notes, "PyTorch")
    kw: dict[str, Any] = {
        "name": "PyTorch", "distribution": dist.name if dist else "torch", "version": version,
        "imported": mod is not None, "pins": pins, "checker": "pytorch",
    }
    cuda = consts.get("cuda")
    hip = consts.get("hip")
    kw["cuda_compiled"] = str(cuda) if cuda else None
    compiled: CudnnVersion | None = None
    source: str | None = None
    pin = _pin_version(pins, ("==", "==="))
    bundled = _bundled_cudnn(pkg)
    if pin is not None:
        compiled, source = pin[0], f"wheel pin {_pin_name(pin[1])} (torch METADATA)"
    elif bundled is not None:
        compiled, source = bundled[0], f"cuDNN bundled in torch/lib ({bundled[1]})"
    if mod is not None:
        safe, why = safe_to_call_mapped_cudnn()
        if not safe:  # never make the kernel's cuDNN open a sub-library: a missing one aborts the process
            notes.append(f"PyTorch: torch.backends.cudnn.version() not asked: {why}")
        else:
            rt, err = _call(lambda: importlib.import_module("torch.backends.cudnn").version())
            if err:
                notes.append(f"PyTorch: torch.backends.cudnn.version() failed: {err}")
            elif rt is not None:
                v = try_parse(rt)
                kw["cudnn_runtime"] = str(v) if v else str(rt)
        cc = getattr(getattr(mod, "_C", None), "_cudnn", None)
        if cc is not None and hasattr(cc, "getCompileVersion"):
            got, err = _call(cc.getCompileVersion)
            v = try_parse(tuple(got)) if isinstance(got, (tuple, list)) else try_parse(got) if got is not None else None
            if err:
                notes.append(f"PyTorch: torch._C._cudnn.getCompileVersion() failed: {err}")
            elif v is not None:
                compiled, source = v, "torch._C._cudnn.getCompileVersion() (torch is imported)"
        if not kw["cuda_compiled"]:
            c = getattr(getattr(mod, "version", None), "cuda", None)
            kw["cuda_compiled"] = str(c) if c else None
            cuda = cuda or c
    if compiled is None:
        if hip:
            source = f"ROCm build (torch/version.py hip {hip!r}: MIOpen, no cuDNN)"
        elif not cuda and ("+cpu" in version or "cuda" in consts):
            source = "CPU-only build (torch/version.py cuda is None)"
            kw["cpu_build"] = True
        elif cuda:
            source = None
            notes.append(
                f"PyTorch {version}: CUDA {cuda} build without a cuDNN wheel pin or bundled copy "
                "(conda or source build, or cuDNN linked statically); import torch "
                "(--import-frameworks) for torch._C._cudnn.getCompileVersion()"
            )
    kw["cudnn_compiled"] = _v3(compiled) if compiled is not None else None
    kw["cudnn_compiled_source"] = source
    if compiled is not None or cuda:
        kw["cudnn_soname"] = _soname(compiled)
        kw["consumer_library"] = _first_existing(pkg, _TORCH_CONSUMERS[:3])
        kw["preloads"], kw["loading"] = _preload(pkg, version, str(cuda) if cuda else None, f, notes)
    return [FrameworkBuild(**kw)]


def _global_deps_load(pkg: str) -> bool:
    """``torch/lib/libtorch_global_deps.so`` would load: each CUDA library it NEEDs is found by
    the loader model (its RPATH, ``LD_LIBRARY_PATH``, the cache, the default directories)."""

    lib = os.path.join(pkg, "lib", "libtorch_global_deps.so")
    try:
        needed = [n for n in read_dynamic(lib).needed if n.startswith("libcuda")]
    except (OSError, NotElf):
        return True
    env = environ_at_start() or dict(os.environ)
    cache, _ = read_ldcache()
    return all(resolve(n, "PyTorch", lib, environ=env, ldcache=cache).picked for n in needed)


def _preload(pkg: str, version: str, cuda: str | None, f: _Finder, notes: list[str]) -> tuple[tuple[Preload, ...], str]:
    """(the files ``import torch`` preloads of cuDNN, how torch loads cuDNN in words), read from
    the installed ``torch/__init__.py`` (:mod:`.torch_preload`) against this ``sys.path``."""

    rule = read_preload_rule(os.path.join(pkg, "__init__.py"), version)
    deps_load = True if isinstance(rule, str) or rule.when != "on-error" else _global_deps_load(pkg)

    pre, used, note = torch_preload(pkg, version, cuda, f.search_dirs(), global_deps_loads=deps_load,
                                    environ=environ_at_start() or dict(os.environ))
    if note and not note.startswith("a CPU build"):
        notes.append(f"PyTorch: {note}")
    if used is None:
        return (), ""
    how = ("libtorch_cuda.so NEEDs libcudnn.so.N (found by its RPATH $ORIGIN/../../nvidia/cudnn/lib unless already "
           f"loaded); before that, {used.source}")
    return ((pre,) if pre else ()), how
