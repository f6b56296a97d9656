"""ONNX Runtime: the cuDNN major of its CUDA execution provider, from its release table."""

from __future__ import annotations

import os
from typing import Any

from ...model import Finding, Fix, FrameworkBuild
from ...rules.consumer_table import by_name
from ...rules.cudnn_version import CudnnVersion, try_parse
from ..elf import ElfDynamic
from ..loader import elf_facts
from ..owners import ownership
from .common import (
    _cudnn_pins,
    _Finder,
    _first_existing,
    _import,
    _imported_module,
    _leftover,
    _norm,
    _release,
    _soname,
    module_constants,
)

_ORT_DISTS = by_name("ONNX Runtime").distributions  # type: ignore[union-attr]


_ORT_TABLE = "ONNX Runtime CUDA EP requirements (onnxruntime.ai/docs/execution-providers/CUDA-ExecutionProvider.html)"


def _ort_cudnn_major(version: str, cuda: str | None) -> tuple[int | None, str]:
    """cuDNN major an onnxruntime-gpu release was built with, by the CUDA EP requirements table."""
    r = _release(version)
    if r is None or len(r) < 2:
        return None, f"ONNX Runtime version {version!r} not understood"
    rel = (r[0], r[1], r[2] if len(r) > 2 else 0)
    cv = try_parse(cuda) if cuda else None
    cuda_major = cv.major if cv is not None else None
    if rel >= (1, 19, 0):
        return 9, f"{_ORT_TABLE}: 1.19 and later are built with cuDNN 9"
    if rel[:2] == (1, 18) and rel >= (1, 18, 1):
        if cuda_major == 12:
            return 9, f"{_ORT_TABLE}: 1.18.1 CUDA 12 packages are built with cuDNN 9"
        if cuda_major == 11:
            return 8, f"{_ORT_TABLE}: 1.18.1 CUDA 11.8 packages are built with cuDNN 8"
        return None, (f"{_ORT_TABLE}: 1.18.1 shipped CUDA 11.8 + cuDNN 8 and CUDA 12 + cuDNN 9 packages, "
                      "and this one does not say its CUDA version")
    if rel >= (1, 5, 0):
        return 8, f"{_ORT_TABLE}: 1.5 to 1.18.0 are built with cuDNN 8"
    return 7, f"{_ORT_TABLE}: 1.0 to 1.4 are built with cuDNN 7.6"


def _probe_onnxruntime(f: _Finder, import_frameworks: bool, notes: list[str]) -> list[FrameworkBuild]:
    dirs = f.package_dirs("onnxruntime")
    if not dirs:
        return []
    pkg = dirs[0]
    dists = f.dists(_ORT_DISTS, near=pkg)
    consts: dict[str, Any] = {}
    bpath = os.path.join(pkg, "capi", "build_and_package_info.py")
    if os.path.exists(bpath):
        try:
            consts, _ = module_constants(bpath)
        except (OSError, SyntaxError, ValueError, RecursionError, MemoryError) as exc:
            notes.append(f"ONNX Runtime: could not read {bpath}: {type(exc).__name__}: {exc}")
    pkg_name = consts.get("package_name")
    if _leftover(pkg, dists[0] if dists else None, "ONNX Runtime", notes):
        return []
    dist = next((d for d in dists if pkg_name and _norm(d.name) == _norm(str(pkg_name))), dists[0] if dists else None)
    if len(dists) > 1:
        notes.append(
            "ONNX Runtime: several distributions install onnxruntime/ ("
            + ", ".join(f"{d.name} {d.version}" for d in dists)
            + (f"); the files on disk are from {pkg_name}" if pkg_name else "); the files on disk are from the last installed")
        )
    version = dist.version if dist else str(consts.get("__version__") or "unknown")
    mod = _imported_module("onnxruntime", pkg)
    if mod is None and import_frameworks:
        mod = _import("onnxruntime", pkg, notes, "ONNX Runtime")
    kw: dict[str, Any] = {
        "name": "ONNX Runtime", "distribution": dist.name if dist else str(pkg_name or "onnxruntime"), "version": version,
        "imported": mod is not None, "pins": _cudnn_pins(dist), "checker": "onnxruntime",
    }
    provider = _first_existing(pkg, ("capi/libonnxruntime_providers_cuda.so",))
    cuda = consts.get("cuda_version")
    over = _cpu_over_gpu(pkg, dists, pkg_name, cuda)
    if over is not None:
        kw["cudnn_compiled_source"] = over.title
        kw["detail"] = over.detail
        kw["problems"] = (over,)
        kw["cpu_build"] = True
        return [FrameworkBuild(**kw)]
    if provider is None and not cuda:
        kw["cudnn_compiled_source"] = "no CUDA execution provider (capi/libonnxruntime_providers_cuda.so) in this package"
        kw["cpu_build"] = _norm(kw["distribution"]) in ("onnxruntime", "ort-nightly")
        return [FrameworkBuild(**kw)]
    kw["consumer_library"] = provider
    if provider is not None:
        kw["loading"] = _loading(provider, pkg, version)
    else:  # a CUDA build whose provider library is gone (a partial install, a file removed by hand)
        notes.append(f"ONNX Runtime {version}: a CUDA build (cuda_version {cuda!r}) without "
                     "capi/libonnxruntime_providers_cuda.so: its CUDA execution provider cannot load")
    kw["cuda_compiled"] = str(cuda) if cuda else None
    compiled: CudnnVersion | None = None
    source: str | None = None
    raw = consts.get("cudnn_version")
    if raw:
        compiled = try_parse(str(raw))
        source = f"capi/build_and_package_info.py cudnn_version {raw!r}"
    if compiled is None:
        major, source = _ort_cudnn_major(version, str(cuda) if cuda else None)
        compiled = CudnnVersion(major) if major is not None else None
        if compiled is None:
            notes.append(f"ONNX Runtime {version}: {source}")
            source = None
    kw["cudnn_compiled"] = str(compiled) if compiled is not None else None
    kw["cudnn_compiled_source"] = source
    kw["cudnn_soname"] = _soname(compiled)
    return [FrameworkBuild(**kw)]


def _loading(provider: str, pkg: str, version: str) -> str:
    """How this build's CUDA provider gets cuDNN, read from the provider file: ``DT_NEEDED``
    (1.27 and older: resolved when the first CUDA session loads the provider, and the provider
    fails to load without it) or a ``dlopen`` by name at session creation (1.28 and later: the
    provider NEEDs no cuDNN; without one, sessions are created and cuDNN operations fail). Either
    way the provider is the requester (no RPATH/RUNPATH in its file: ``LD_LIBRARY_PATH``, the
    ld.so cache, the default directories), a copy already mapped (PyTorch's) is reused, and
    ``onnxruntime.preload_dlls()`` (1.21 and later) loads ``nvidia/cudnn/lib/libcudnn.so.9`` of the
    site-packages holding ``onnxruntime/`` by path. Sources: readelf of the provider;
    onnxruntime ``core/providers/cuda/cudnn_loader.cc``, ``core/session/provider_bridge_ort.cc``,
    ``onnxruntime/__init__.py`` ``preload_dlls``."""

    facts = elf_facts(provider)
    needed = [n for n in facts.needed if n.startswith("libcudnn")] if isinstance(facts, ElfDynamic) else []
    paths = ""
    if isinstance(facts, ElfDynamic) and (facts.rpath or facts.runpath):
        paths = f" (its {'RUNPATH' if facts.runpath else 'RPATH'} {':'.join(facts.runpath or facts.rpath)})"
    pre = os.path.join(os.path.dirname(pkg), "nvidia", "cudnn", "lib", "libcudnn.so.9")
    r = _release(version)
    preload = ("; onnxruntime.preload_dlls() would load " + pre + (" (present)" if os.path.exists(pre) else " (absent here)")
               if r and r[:2] >= (1, 21) else "")
    if needed:
        return (f"libonnxruntime_providers_cuda.so NEEDs {needed[0]}; it is resolved when the first CUDA session loads "
                f"the provider{paths}, and the provider fails to load without it (ORT then runs on the CPU){preload}")
    return ("libonnxruntime_providers_cuda.so NEEDs no cuDNN: it dlopens libcudnn.so.9 (then libcudnn.so) by name when a "
            f"CUDA session is created{paths}; without one the session is still created and cuDNN operations (Conv, ...) "
            "fail with \"cuDNN is unavailable or disabled for CUDA Execution Provider\"" + preload)


def _cpu_over_gpu(pkg: str, dists: list, pkg_name: Any, cuda: Any):  # type: ignore[no-untyped-def]
    """A CPU ``onnxruntime`` wheel installed over ``onnxruntime-gpu`` (faster-whisper and others
    pull it in): pip removes nothing (another distribution name) and writes the CPU wheel's
    ``onnxruntime/capi`` over the GPU one's, so ``import onnxruntime`` is the CPU build and the CUDA
    provider file left behind is never loaded. Decided by whose ``RECORD`` the pybind module's
    hash (size, for a large file) matches. Returns the finding, or None."""

    gpu = [d for d in dists if _norm(d.name) in ("onnxruntime-gpu", "ort-nightly-gpu")]
    cpu = [d for d in dists if _norm(d.name) in ("onnxruntime", "ort-nightly")]
    if not gpu or not cpu:
        return None
    capi = os.path.join(pkg, "capi")
    try:
        pybind = next((os.path.join(capi, n) for n in sorted(os.listdir(capi)) if n.startswith("onnxruntime_pybind11_state")), None)
    except OSError:
        return None
    own = ownership(pybind) if pybind else None
    live = own.dist.name if own is not None and own.dist is not None and own.confirmed else None
    if live is None and not cuda and str(pkg_name or "") in ("onnxruntime", "ort-nightly"):
        live = cpu[0].name
    if live is None or _norm(live) not in ("onnxruntime", "ort-nightly"):
        return None
    g, c = gpu[0], next((d for d in cpu if _norm(d.name) == _norm(live)), cpu[0])
    evidence = own.evidence if own is not None and own.evidence else "capi/build_and_package_info.py names the CPU package"
    return Finding(
        "onnxruntime-cpu-over-gpu", "error",
        f"The CPU onnxruntime {c.version} was installed over onnxruntime-gpu {g.version}: ONNX Runtime has no CUDA provider",
        f"Both distributions install onnxruntime/; pip removed nothing (their names differ) and the CPU wheel wrote its "
        f"files over the GPU one's (the pybind module here is {c.name} {c.version}'s: {evidence}). import onnxruntime now "
        f"loads the CPU build, whose providers are CPU (and Azure) only; onnxruntime-gpu's "
        "capi/libonnxruntime_providers_cuda.so is left on disk but never loaded, so no cuDNN is used. Packages such as "
        "faster-whisper depend on onnxruntime and pull the CPU wheel in.",
        (Fix("install-cudnn-build", f"Reinstall onnxruntime-gpu {g.version} over it",
             f"pip uninstall -y onnxruntime && pip install --force-reinstall --no-deps onnxruntime-gpu=={g.version}   "
             "# the CPU wheel's uninstall deletes the files both list, so reinstall the GPU wheel after it",
             True, False, "advice only: review, then run it"),))
