"""TensorFlow: its build facts from ``tensorflow/python/platform/build_info.py`` (read as
source, never imported unless asked), its pins, and its CUDA/cuDNN table."""

from __future__ import annotations

import os
import re
from typing import Any

from ...model import FrameworkBuild
from ...rules.build_tables import tf_tested_build
from ...rules.compat import checker_for_tensorflow
from ...rules.consumer_table import by_name
from ...rules.cudnn_version import CudnnVersion, try_parse
from .common import (
    _cudnn_pins,
    _Finder,
    _first_existing,
    _import,
    _imported_module,
    _leftover,
    _pin_name,
    _pin_version,
    _soname,
    read_tf_build_info,
)

_TF_DISTS = by_name("TensorFlow").distributions  # type: ignore[union-attr]


# Which TF library calls dlopen("libcudnn.so.N"): tsl's dso_loader (tsl/platform/default/
# dso_loader.cc) is linked into libtensorflow_framework.so.2 (seen in the tensorflow-cpu 2.21.0
# wheel: its "dso_loader" strings are there, none in python/_pywrap_tensorflow_internal.so or
# libtensorflow_cc.so.2), and dlopen searches the RUNPATH of the calling object, which in CUDA
# wheels holds $ORIGIN/../nvidia/cudnn/lib. Fallbacks for other layouts follow.
_TF_CONSUMERS = (
    "libtensorflow_framework.so.2", "libtensorflow_framework.so.1", "libtensorflow_framework.so",
    "python/_pywrap_tensorflow_internal.so", "libtensorflow_cc.so.2",
)


def _tf_build_value(raw: Any) -> tuple[str, bool] | None:
    """A build_info value as text, without the ``64_`` prefix of Windows builds (and whether it
    had one); None when absent."""
    if raw is None or raw == "":
        return None
    s = str(raw).strip()
    m = re.fullmatch(r"64_(\d+)", s)
    return (m.group(1), True) if m else (s, False)


def _tf_cuda(raw: Any) -> str | None:
    """``'12.5.1'`` as is; Windows builds write ``'64_112'`` (-> ``'11.2'``)."""
    v = _tf_build_value(raw)
    if v is None:
        return None
    d, win = v
    return (f"{d[:-1]}.{d[-1]}" if len(d) >= 3 else d) if win else d


def _tf_cudnn(raw: Any) -> CudnnVersion | None:
    """``'9'``, ``'8'``, ``'64_8'`` (Windows), ``'8.1'`` -> CudnnVersion."""
    v = _tf_build_value(raw)
    if v is None:
        return None
    s = v[0]
    if s.isdigit() and len(s) <= 2:
        return CudnnVersion(int(s))
    return try_parse(s)


def _probe_tensorflow(f: _Finder, import_frameworks: bool, notes: list[str]) -> list[FrameworkBuild]:
    dirs = f.package_dirs("tensorflow")
    pkg = next((d for d in dirs if os.path.isdir(os.path.join(d, "python"))), dirs[0] if dirs else None)
    if pkg is None:
        return []
    dists = f.dists(_TF_DISTS, near=pkg)
    dist = dists[0] if dists else None
    if _leftover(pkg, dist, "TensorFlow", notes):
        return []
    if len(dists) > 1:
        notes.append(
            "TensorFlow: several distributions install tensorflow/ ("
            + ", ".join(f"{d.name} {d.version}" for d in dists)
            + "); the files on disk are from whichever was installed last"
        )
    version = dist.version if dist else "unknown"
    if dist is None:
        notes.append(f"TensorFlow: no *.dist-info found for {pkg}; version unknown")
    pins = _cudnn_pins(dist)
    mod = _imported_module("tensorflow", pkg)
    if mod is None and import_frameworks:
        mod = _import("tensorflow", pkg, notes, "TensorFlow")
    kw: dict[str, Any] = {
        "name": "TensorFlow", "distribution": dist.name if dist else "tensorflow", "version": version,
        "imported": mod is not None, "pins": pins, "checker": checker_for_tensorflow(version if dist else None),
    }
    bi_path = os.path.join(pkg, "python", "platform", "build_info.py")
    try:
        info = read_tf_build_info(bi_path)
    except FileNotFoundError:
        notes.append(f"TensorFlow: {bi_path} is missing; compiled-against cuDNN unknown")
        return [FrameworkBuild(**kw)]
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        notes.append(f"TensorFlow: could not read {bi_path}: {type(exc).__name__}: {exc}")
        return [FrameworkBuild(**kw)]
    caps = info.get("cuda_compute_capabilities") or ()
    if isinstance(caps, (list, tuple)):
        kw["cuda_compute_capabilities"] = tuple(str(c) for c in caps)
    if info.get("is_rocm_build") is True:
        kw["cudnn_compiled_source"] = "build_info.py: is_rocm_build True (ROCm build: MIOpen, no cuDNN)"
        return [FrameworkBuild(**kw)]
    raw_cudnn = info.get("cudnn_version")
    is_cuda = info.get("is_cuda_build")
    if is_cuda is False or (is_cuda is None and raw_cudnn is None and "cuda_version" not in info):
        kw["cudnn_compiled_source"] = "build_info.py: is_cuda_build False (CPU-only build, no cuDNN)"
        kw["cpu_build"] = True
        return [FrameworkBuild(**kw)]
    kw["cuda_compiled"] = _tf_cuda(info.get("cuda_version"))
    kw["consumer_library"] = _first_existing(pkg, _TF_CONSUMERS)
    build_v = _tf_cudnn(raw_cudnn)
    tested = tf_tested_build(version) if dist else None
    tested_v = try_parse(tested[0]) if tested else None
    tested_cudnn, tested_cuda = tested if tested else (None, None)
    pin = _pin_version(pins, (">=", "==", "~=", "==="))
    compiled: CudnnVersion | None = None
    where = f"build_info.py cudnn_version {raw_cudnn!r}"
    if build_v is None:
        if raw_cudnn not in (None, ""):
            notes.append(f"TensorFlow: build_info.py cudnn_version {raw_cudnn!r} is not a cuDNN version")
        if tested_v is not None:
            compiled = tested_v
            source = (
                f"TensorFlow tested build table (cuDNN {tested_cudnn}, CUDA {tested_cuda} for TF {version}); "
                "build_info.py gives no cuDNN version"
            )
            kw["cuda_compiled"] = kw["cuda_compiled"] or tested_cuda
        else:
            source = "build_info.py says a CUDA build but gives no cuDNN version"
    elif build_v.minor is not None:
        compiled, source = build_v, where
    elif tested_v is not None and tested_v.major == build_v.major:
        compiled = tested_v
        source = f"{where} + TensorFlow tested build table (cuDNN {tested_cudnn}, CUDA {tested_cuda} for TF {version})"
    elif pin is not None and pin[0].major == build_v.major:
        compiled = CudnnVersion(pin[0].major, pin[0].minor)
        source = f"{where} + tensorflow[and-cuda] pin {_pin_name(pin[1])} (lower bound)"
    else:
        compiled = build_v
        source = f"{where} (major only)"
    kw["cudnn_compiled"] = str(compiled) if compiled is not None else None
    kw["cudnn_compiled_source"] = source
    kw["cudnn_soname"] = _soname(compiled)
    return [FrameworkBuild(**kw)]
