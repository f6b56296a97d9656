"""ONNX Runtime: the cuDNN major of its CUDA execution provider, from its release table."""

from __future__ import annotations

import os
from typing import Any


from ...model import FrameworkBuild
from ...rules.cudnn_version import CudnnVersion, try_parse
from .common import (_cudnn_pins, _Finder, _first_existing, _import, _imported_module, _leftover, _norm, _release,
                     _soname, module_constants)


_ORT_DISTS = (
    "onnxruntime-gpu", "ort-nightly-gpu", "onnxruntime-training", "onnxruntime", "ort-nightly",
    "onnxruntime-directml", "onnxruntime-openvino", "onnxruntime-rocm", "onnxruntime-qnn",
)


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
    kw: dict[str, Any] = dict(
        name="ONNX Runtime", distribution=dist.name if dist else str(pkg_name or "onnxruntime"), version=version,
        imported=mod is not None, pins=_cudnn_pins(dist), checker="onnxruntime",
    )
    provider = _first_existing(pkg, ("capi/libonnxruntime_providers_cuda.so",))
    cuda = consts.get("cuda_version")
    if provider is None and not cuda:
        kw["cudnn_compiled_source"] = "no CUDA execution provider (capi/libonnxruntime_providers_cuda.so) in this package"
        return [FrameworkBuild(**kw)]
    kw["consumer_library"] = provider
    kw["cuda_compiled"] = str(cuda) if cuda else None
    compiled: CudnnVersion | None = None
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
