"""CTranslate2 (the engine of faster-whisper and whisperX).

What the wheel itself says, read without importing it:

* its native library ``ctranslate2.libs/libctranslate2-*.so`` NEEDs the cuDNN main library the
  wheel vendors (4.4.0: ``libcudnn-463fd6d5.so.8.9.7``; 4.5.0: ``libcudnn-74a4c495.so.9.1.0``,
  auditwheel names) and finds it through the RPATH ``$ORIGIN/../ctranslate2.libs`` of
  ``ctranslate2/_ext.*.so``, which loads it (``readelf -d`` on the real wheels);
* 4.6.3 and later NEED no cuDNN (built with ``WITH_CUDNN=OFF``; conv1d has its own CUDA kernel).

The vendored file's name gives the cuDNN it was built with; the CUDA version comes from the
build table (:data:`cudnn_magic.rules.consumers.CTRANSLATE2_BUILDS`). Its convolution calls the
legacy API (``cudnnConvolutionForward``, ``cudnnConvolutionBiasActivationForward`` in
``src/ops/conv1d_gpu.cu``, 4.5.0), which cuDNN 9 serves from ``libcudnn_cnn.so.9``/``libcudnn_ops.so.9``.
"""

from __future__ import annotations

import dataclasses
import os

from ...model import FrameworkBuild
from ...rules.consumers import ctranslate2_build
from ...util import pyenv
from .. import libnames
from .consumer_facts import ConsumerFacts, CudnnRequest, chain_within, dist_info, find_package, scanned
from .generic import EnvironmentScan


def probe(scan: EnvironmentScan, paths: list[str] | None, top: list[str], notes: list[str]) -> list[ConsumerFacts]:
    pkg = find_package("ctranslate2", paths)
    if pkg is None:
        return []
    site = os.path.dirname(os.path.abspath(pkg))
    meta = dist_info(site, ("ctranslate2",))
    version = meta[1] if meta else "unknown"
    if meta is None:
        notes.append(f"CTranslate2: no ctranslate2 *.dist-info beside {pkg}; version unknown")
    mod = pyenv.imported("ctranslate2")
    imported = mod is not None and os.path.realpath(os.path.dirname(getattr(mod, "__file__", "") or "")) == os.path.realpath(pkg)
    table = ctranslate2_build(version)
    dist = scanned(scan, "ctranslate2")
    upgrade = ("Upgrade CTranslate2 to 4.6.3 or later (its convolutions need no cuDNN)",
               (f"{pyenv.executable()} -m pip install -U 'ctranslate2>=4.6.3'   # 4.5.0-4.6.2 need cuDNN 9, 4.0-4.4 cuDNN 8; "
                "check what faster-whisper / whisperX pin"))
    row = FrameworkBuild(name="CTranslate2", distribution="ctranslate2", version=version, imported=imported,
                         cuda_compiled=table[0] if table else None, checker="ctranslate2", pip_solvable=False)
    requests: list[CudnnRequest] = []
    compiled = None
    source = None
    for lib in (dist.consumers if dist else ()):
        for soname in lib.cudnn_needed:
            requests.append(CudnnRequest(soname, lib.path, chain_within(dist, lib.path, top),
                                         f"DT_NEEDED of {os.path.basename(lib.path)}"))
            parsed = libnames.parse_name(soname)
            vendored = next((v for v in (dist.vendored if dist else ())
                             if (v.soname or os.path.basename(v.path)) == soname), None)
            if parsed and parsed[2] and compiled is None:
                compiled = parsed[2]
                source = (f"the cuDNN main library its wheel vendors ({os.path.relpath(vendored.path, site)})"
                          if vendored else f"the soname its native library NEEDs ({soname})")
            elif parsed and parsed[1] and compiled is None:
                compiled = str(parsed[1])
                source = f"the soname its native library NEEDs ({soname})"
    if not requests:
        if table and table[1] is None:
            why = (f"CTranslate2 {version} is built without cuDNN (WITH_CUDNN=OFF from 4.6.3: its conv1d runs on its own "
                   "CUDA kernel; CHANGELOG v4.6.3): it needs no cuDNN")
        else:
            why = f"CTranslate2 {version}'s native library NEEDs no cuDNN (a CPU-only or cuDNN-less build)"
        row = dataclasses.replace(row, cudnn_compiled_source=why, detail=why)
        return [ConsumerFacts(row=row, distribution="ctranslate2", upgrade=upgrade)]
    if compiled is None and table and table[1]:
        compiled, source = table[1], "CTranslate2 build table (python/tools/prepare_build_environment_linux.sh)"
    if table and table[1] and compiled and table[1] != compiled:
        notes.append(f"CTranslate2 {version}: the wheel's cuDNN {compiled} differs from the {table[1]} its release "
                     "script installs (a custom build?)")
    row = dataclasses.replace(row, cudnn_compiled=compiled, cudnn_compiled_source=source)
    return [ConsumerFacts(row=row, alternatives=requests, distribution="ctranslate2", legacy_api=True, upgrade=upgrade)]
