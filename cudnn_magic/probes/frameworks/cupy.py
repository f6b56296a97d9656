"""CuPy: the cuDNN its ``cupy_backends.cuda.libs.cudnn`` extension was built for."""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import json
import os
import re
from typing import Any

from ...model import FrameworkBuild
from ...rules.cudnn_version import CudnnVersion, try_parse
from ...util import pyenv
from ..loaded import safe_to_call_mapped_cudnn
from .common import (
    _MAX_META_BYTES,
    _call,
    _cudnn_pins,
    _decode_int_cudnn,
    _Finder,
    _imported_module,
    _leftover,
    _norm,
    _pin_name,
    _pin_version,
    _read_text,
    _release,
    _soname,
    module_constants,
)

_CUPY_DIST = re.compile(r"^cupy(-cuda\d+x?|-rocm-[\d-]+)?$")


def _probe_cupy(f: _Finder, import_frameworks: bool, notes: list[str]) -> list[FrameworkBuild]:
    dirs = f.package_dirs("cupy")
    if not dirs:
        return []
    pkg = dirs[0]
    site = os.path.dirname(os.path.abspath(pkg))
    names = [
        _norm(e.rsplit(".", 1)[0].split("-", 1)[0])
        for e in f.listdir(site) if e.endswith((".dist-info", ".egg-info"))
    ]
    cands = [n for n in names if _CUPY_DIST.match(n)] or ["cupy"]
    dists = f.dists(cands, near=pkg)
    dist = dists[0] if dists else None
    if _leftover(pkg, dist, "CuPy", notes):
        return []
    if len(dists) > 1:
        notes.append("CuPy: several distributions install cupy/ (" + ", ".join(f"{d.name} {d.version}" for d in dists) + ")")
    version = dist.version if dist else "unknown"
    if dist is None:
        try:
            version = str(module_constants(os.path.join(pkg, "_version.py"))[0].get("__version__") or "unknown")
        except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
            pass
    mod = _imported_module("cupy", pkg)
    kw: dict[str, Any] = {
        "name": "CuPy", "distribution": dist.name if dist else "cupy", "version": version,
        "imported": mod is not None, "pins": _cudnn_pins(dist), "checker": "cupy",
    }
    if dist is not None and "rocm" in dist.name:
        kw["cudnn_compiled_source"] = "ROCm build of CuPy (no cuDNN)"
        return [FrameworkBuild(**kw)]
    wheel: dict[str, Any] = {}
    wpath = os.path.join(pkg, ".data", "_wheel.json")
    if os.path.exists(wpath):
        try:
            loaded = json.loads(_read_text(wpath, _MAX_META_BYTES))
            wheel = loaded if isinstance(loaded, dict) else {}
        except (OSError, ValueError) as exc:
            notes.append(f"CuPy: could not read {wpath}: {exc}")
    cuda = wheel.get("cuda")
    if not cuda and dist is not None:
        m = re.match(r"cupy-cuda(\d+)(x?)$", dist.name.lower())
        if m:
            d = m.group(1)
            cuda = f"{d}.x" if m.group(2) else (f"{d[:-1]}.{d[-1]}" if len(d) >= 3 else d)
    kw["cuda_compiled"] = str(cuda) if cuda else None
    rel = _release(version)
    cupy_major = rel[0] if rel else None
    cudnn_lib = _first_cudnn_module(pkg, f)
    if (cupy_major is not None and cupy_major >= 14) or (cupy_major is None and cudnn_lib is None):
        kw["cudnn_compiled_source"] = (
            f"CuPy {version} has no cuDNN support (removed in CuPy 14, docs/source/upgrade.rst)"
            if cupy_major is not None else "no cupy_backends/cuda/libs/cudnn module (no cuDNN support)"
        )
        return [FrameworkBuild(**kw)]
    kw["consumer_library"] = cudnn_lib
    compiled: CudnnVersion | None = None
    source: str | None = None
    wc = wheel.get("cudnn")
    if isinstance(wc, dict) and wc.get("version"):
        compiled = try_parse(str(wc["version"]))
        source = f"cupy/.data/_wheel.json cudnn version {wc['version']!r} (the cuDNN the wheel was built for)"
    if compiled is None:
        pin = _pin_version(kw["pins"], ("==", ">=", "~="))
        if pin is not None:
            compiled, source = pin[0], f"pin {_pin_name(pin[1])}"
    if cupy_major is not None and cupy_major >= 11 and cudnn_lib is not None:
        # CuPy 11-13 cudnn module NEEDs libcudnn.so.8 (docs/facts.md "Where each framework's
        # compiled-against versions come from")
        kw["cudnn_soname"] = "libcudnn.so.8"
    cudnn_mod = pyenv.imported("cupy_backends.cuda.libs.cudnn")
    if cudnn_mod is None and import_frameworks:
        try:
            importlib.import_module("cupy")
            cudnn_mod = importlib.import_module("cupy_backends.cuda.libs.cudnn")
            kw["imported"] = True
        except Exception as exc:  # noqa: BLE001
            notes.append(f"CuPy: import cupy_backends.cuda.libs.cudnn failed: {type(exc).__name__}: {exc}")
    if cudnn_mod is not None:
        bv, err = _call(cudnn_mod.get_build_version) if hasattr(cudnn_mod, "get_build_version") else (None, None)
        v = _decode_int_cudnn(bv) if bv is not None else None
        if v is not None:
            compiled, source = v, f"cupy_backends.cuda.libs.cudnn.get_build_version() = {bv}"
        elif err:
            notes.append(f"CuPy: get_build_version() failed: {err}")

        safe, why = safe_to_call_mapped_cudnn()
        rv, err = (_call(cudnn_mod.getVersion) if hasattr(cudnn_mod, "getVersion") else (None, None)) if safe else (None, None)
        if not safe:
            notes.append(f"CuPy: cudnn.getVersion() not asked: {why}")
        v = _decode_int_cudnn(rv) if rv is not None else None
        if v is not None:
            kw["cudnn_runtime"] = str(v)
        elif err:
            notes.append(f"CuPy: cudnn.getVersion() failed: {err}")
    if compiled is not None:
        kw["cudnn_soname"] = _soname(compiled)
    kw["cudnn_compiled"] = str(compiled) if compiled is not None else None
    kw["cudnn_compiled_source"] = source
    if compiled is None:
        notes.append(f"CuPy {version}: compiled-against cuDNN unknown without importing its cudnn module "
                     "(that would load libcudnn; use --import-frameworks)")
    return [FrameworkBuild(**kw)]


def _first_cudnn_module(pkg: str, f: _Finder) -> str | None:
    """``cupy_backends/cuda/libs/cudnn*.so`` (CuPy 13 and older), next to ``cupy/``."""
    libs = os.path.join(os.path.dirname(os.path.abspath(pkg)), "cupy_backends", "cuda", "libs")
    for n in sorted(f.listdir(libs)):
        if n.startswith("cudnn") and (n.endswith((".so", ".pyd")) or ".so." in n):
            return os.path.join(libs, n)
    return None
