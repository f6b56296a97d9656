"""JAX: jaxlib's (or its CUDA plugin's) compiled-against cuDNN, from its version module."""

from __future__ import annotations

import os
import re
from typing import Any

from ...model import FrameworkBuild
from ...rules.build_tables import cuda_from_int
from ...rules.cudnn_version import CudnnVersion
from ...util import pyenv
from .common import (
    DistInfo,
    _call,
    _cudnn_pins,
    _decode_int_cudnn,
    _extension_path,
    _Finder,
    _first_existing,
    _import,
    _imported_module,
    _load_extension,
    _pin_name,
    _pin_version,
    _soname,
)
from .jax_plugin import jax_preload, read_plugin


def _jax_versions_module(path: str, fullname: str) -> tuple[dict[str, Any], str | None]:
    """Load the plugin's ``_versions`` extension by path and read the build versions."""
    try:
        mod = _load_extension(fullname, path)
    except Exception as exc:  # noqa: BLE001 - ImportError, OSError, anything a loader raises
        return {}, f"loading {path} failed: {type(exc).__name__}: {exc}"
    out: dict[str, Any] = {}
    for fn in ("cudnn_build_version", "cuda_runtime_build_version"):
        if hasattr(mod, fn):
            val, err = _call(getattr(mod, fn))
            if err is None:
                out[fn] = val
    out["_module"] = mod
    return out, None


def _probe_jax(f: _Finder, import_frameworks: bool, notes: list[str]) -> list[FrameworkBuild]:
    builds: list[FrameworkBuild] = []
    jax_dirs = f.package_dirs("jax")
    jax_dist = next(iter(f.dists(("jax",), near=jax_dirs[0])), None) if jax_dirs else None
    jax_mod = _imported_module("jax", jax_dirs[0]) if jax_dirs else None
    if jax_mod is None and import_frameworks and jax_dirs:
        jax_mod = _import("jax", jax_dirs[0], notes, "JAX")
    plugin_dirs = f.package_dirs("jax_plugins")
    for cu in ("13", "12"):
        pdirs = f.package_dirs(f"jax_cuda{cu}_plugin")
        if not pdirs:
            continue
        pdir = pdirs[0]
        pdist = next(iter(f.dists((f"jax-cuda{cu}-plugin",), near=pdir)), None)
        version = jax_dist.version if jax_dist else (pdist.version if pdist else "unknown")
        if jax_dist and pdist and jax_dist.version != pdist.version:
            notes.append(f"JAX: jax {jax_dist.version} with jax-cuda{cu}-plugin {pdist.version} (versions differ)")
        pins = _cudnn_pins(pdist)
        kw: dict[str, Any] = {
            "name": "JAX", "distribution": pdist.name if pdist else f"jax-cuda{cu}-plugin", "version": version,
            "imported": jax_mod is not None, "pins": pins, "checker": "jax",
        }
        fullname = f"jax_cuda{cu}_plugin._versions"
        vpath = _extension_path(pdir, "_versions")
        compiled: CudnnVersion | None = None
        source: str | None = None
        if vpath is None:
            notes.append(f"JAX: no _versions extension in {pdir}")
        else:
            got, err = _jax_versions_module(vpath, fullname)
            if err:
                notes.append(f"JAX: {err}")
            raw = got.get("cudnn_build_version")
            if raw is not None:
                compiled = _decode_int_cudnn(raw)
                source = f"{fullname}.cudnn_build_version() = {raw}"
            rt_cuda = got.get("cuda_runtime_build_version")
            if isinstance(rt_cuda, int) and rt_cuda > 0:
                kw["cuda_compiled"] = cuda_from_int(rt_cuda)
            mod = got.get("_module")
            if import_frameworks and mod is not None and hasattr(mod, "cudnn_get_version"):
                rt, err = _call(mod.cudnn_get_version)
                v = _decode_int_cudnn(rt) if rt is not None else None
                if v is not None:
                    kw["cudnn_runtime"] = str(v)
                elif err:
                    notes.append(f"JAX: {fullname}.cudnn_get_version() failed: {err}")
        if compiled is None:
            pin = _pin_version(pins, (">=", "==", "~="))
            if pin is not None:
                compiled = CudnnVersion(pin[0].major, pin[0].minor)
                source = f"plugin pin {_pin_name(pin[1])} (lower bound; JAX pins its build version)"
        kw["cudnn_compiled"] = str(compiled) if compiled is not None else None
        kw["cudnn_compiled_source"] = source
        kw["cudnn_soname"] = _soname(compiled)
        consumer = None
        for d in plugin_dirs:
            consumer = _first_existing(d, (f"xla_cuda{cu}/xla_cuda_plugin.so",))
            if consumer:
                _plugin_facts(kw, os.path.join(os.path.dirname(consumer), "__init__.py"), f, cu, notes)
                break
        kw["consumer_library"] = consumer
        builds.append(FrameworkBuild(**kw))
    if not builds:
        builds.extend(_probe_old_jaxlib(f, import_frameworks, jax_dist, jax_mod, notes))
    if not builds and jax_dist is not None:
        jaxlib = next(iter(f.dists(("jaxlib",), near=jax_dirs[0])), None) if jax_dirs else None
        builds.append(FrameworkBuild(
            name="JAX", distribution="jax", version=jax_dist.version, imported=jax_mod is not None, checker="jax",
            cpu_build=True, cudnn_compiled_source=(f"CPU build: jaxlib {jaxlib.version if jaxlib else '?'} without a CUDA "
                                                   "plugin (no jax-cuda12-plugin / jax-cuda13-plugin installed)")))
    return builds


def _probe_old_jaxlib(f: _Finder, import_frameworks: bool, jax_dist: DistInfo | None, jax_mod: Any,
                      notes: list[str]) -> list[FrameworkBuild]:
    """jaxlib wheels with CUDA inside (``0.4.28+cuda12.cudnn89``), before the plugin split."""
    dirs = f.package_dirs("jaxlib")
    if not dirs:
        return []
    pkg = dirs[0]
    dist = next(iter(f.dists(("jaxlib",), near=pkg)), None)
    cuda_dir = os.path.join(pkg, "cuda")
    tag = re.search(r"\+cuda(\d+)(?:\.cudnn(\d)(\d+))?", dist.version) if dist else None
    if not tag and not os.path.isdir(cuda_dir):
        return []  # CPU jaxlib: JAX has no CUDA plugin installed
    version = jax_dist.version if jax_dist else (dist.version if dist else "unknown")
    kw: dict[str, Any] = {
        "name": "JAX", "distribution": dist.name if dist else "jaxlib", "version": version,
        "imported": jax_mod is not None, "pins": _cudnn_pins(dist), "checker": "jax",
    }
    compiled: CudnnVersion | None = None
    source: str | None = None
    if tag:
        cu = tag.group(1)
        kw["cuda_compiled"] = f"{cu[:-1]}.{cu[-1]}" if len(cu) >= 3 else cu
        if tag.group(2):
            compiled = CudnnVersion(int(tag.group(2)), int(tag.group(3)))
            source = f"jaxlib local version tag {tag.string!r}"
    vpath = _extension_path(cuda_dir, "_versions") if os.path.isdir(cuda_dir) else None
    if vpath and (import_frameworks or pyenv.imported("jaxlib") is not None):
        got, err = _jax_versions_module(vpath, "jaxlib.cuda._versions")
        if err:
            notes.append(f"JAX: {err}")
        raw = got.get("cudnn_build_version")
        v = _decode_int_cudnn(raw) if raw is not None else None
        if v is not None:
            compiled, source = v, f"jaxlib.cuda._versions.cudnn_build_version() = {raw}"
    kw["cudnn_compiled"] = str(compiled) if compiled is not None else None
    kw["cudnn_compiled_source"] = source
    kw["cudnn_soname"] = _soname(compiled)
    kw["consumer_library"] = _first_existing(pkg, ("xla_extension.so",))
    return [FrameworkBuild(**kw)]


def _plugin_facts(kw: dict[str, Any], init_path: str, f: _Finder, cu: str, notes: list[str]) -> None:
    """Read the installed plugin's ``__init__.py`` (:mod:`.jax_plugin`): its preload of cuDNN from
    ``nvidia.cudnn`` against this ``sys.path``, its rule as the file states it, and the cuBLAS
    wheel its multi-GPU rule looks at."""

    facts = read_plugin(init_path)
    if isinstance(facts, str):
        notes.append(f"JAX: {facts}")
        return
    kw["own_rule"] = facts.rule
    pre = jax_preload(facts.preload, f.search_dirs()) if facts.preload else None
    if pre is not None:
        kw["preloads"] = (pre,)
    kw["loading"] = (f"when the CUDA plugin initializes (first use of a GPU), jax_plugins/xla_cuda{cu}/__init__.py loads "
                     f"nvidia.cudnn.__path__[0]/lib/{facts.preload or 'libcudnn.so.9'} by path (the nvidia/cudnn folder of "
                     "the first sys.path entry that has one; a failure is ignored), then xla_cuda_plugin.so dlopens "
                     "libcudnn.so.9 (its RPATH $ORIGIN/../../nvidia/cudnn/lib before LD_LIBRARY_PATH)"
                     if facts.preload else "xla_cuda_plugin.so dlopens libcudnn.so.9 (its RPATH before LD_LIBRARY_PATH)")
    extra: list[tuple[str, str]] = []
    if facts.multi_gpu:
        extra.append(("multi_gpu_rule", " ".join(str(x) for x in facts.multi_gpu)))
    cublas = next(iter(f.dists((f"nvidia-cublas-cu{cu}", "nvidia-cublas"))), None)
    if cublas is not None:
        extra.append(("cublas", ".".join(cublas.version.split(".")[:3])))
    kw["facts"] = tuple(extra)
