"""PaddlePaddle (PaddleOCR, PaddleDetection, PaddleNLP...).

Read without importing: ``paddle/version/__init__.py`` (``paddle/version.py`` before 2.5),
written by Paddle's ``setup.py`` ``write_version_py``: ``cuda_version`` ('11.8', or 'False' for
CPU builds), ``cudnn_version`` ('8.6.0'), ``full_version`` and, from the builds that take CUDA
from pip wheels, ``with_pip_cuda_libraries`` ('ON'). Parsed with :mod:`ast`, never executed.

Paddle has no cuDNN in its NEEDED entries: ``GetCUDNNDsoHandle``
(``paddle/phi/backends/dynload/dynamic_loader.cc``) ``dlopen``s, in order,
``FLAGS_cudnn_dir/<name>``, ``<name>`` through the loader's search from the library that holds
the dynload code, and ``/usr/local/cuda/lib64/<name>``; ``<name>`` is ``libcudnn.so.9`` (CUDA 12.3
and later) or ``libcudnn.so.8`` in pip-CUDA builds, else the unversioned ``libcudnn.so``, which
only cuDNN's development packages and tarballs provide (no pip wheel does). Pip-CUDA builds set
``FLAGS_cudnn_dir`` to ``site-packages/nvidia/cudnn/lib`` at import (``paddle/__init__.py``);
other builds take ``FLAGS_cudnn_dir`` from the environment.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

from ...model import FrameworkBuild
from ...rules.cudnn_version import try_parse
from ...util import pyenv
from ..elf import ElfDynamic
from ..loader import elf_facts
from .common import module_constants
from .consumer_facts import ConsumerFacts, CudnnRequest, dist_info, find_package
from .generic import EnvironmentScan

#: Libraries that may hold Paddle's dynload code, most specific first (paddle/libs in 2.5+
#: wheels, the pybind module otherwise).
_REQUESTERS = ("libs/libphi_gpu.so", "libs/libphi.so", "libs/libphi_core.so", "base/libpaddle.so",
               "fluid/libpaddle.so", "fluid/core_avx.so", "fluid/core_noavx.so")
_DISTS = ("paddlepaddle-gpu", "paddlepaddle", "paddlepaddle-cuda", "paddle-gpu")


def read_version_file(pkg: str) -> tuple[dict[str, Any], str] | None:
    """The constants of ``paddle/version/__init__.py`` (or ``paddle/version.py``) and its path."""

    for rel in (os.path.join("version", "__init__.py"), "version.py"):
        p = os.path.join(pkg, rel)
        if os.path.exists(p):
            return module_constants(p)[0], p
    return None


def _false(v: Any) -> bool:
    return v in (None, False, "", "False", "None", "OFF", "0")


def probe(scan: EnvironmentScan, paths: list[str] | None, top: list[str], notes: list[str],
          environ: dict[str, str] | None = None) -> list[ConsumerFacts]:
    pkg = find_package("paddle", paths)
    if pkg is None or not os.path.isdir(pkg):
        return []
    site = os.path.dirname(os.path.abspath(pkg))
    meta = dist_info(site, _DISTS)
    try:
        got = read_version_file(pkg)
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        notes.append(f"PaddlePaddle: could not read its version file: {type(exc).__name__}: {exc}")
        got = None
    if got is None and meta is None:
        return []  # a "paddle" package that is not PaddlePaddle
    consts, vpath = got if got else ({}, "")
    version = meta[1] if meta else str(consts.get("full_version") or "unknown")
    dist_name = meta[0] if meta else "paddlepaddle"
    pins = tuple(r for r in (meta[2] if meta else []) if r.lower().replace("_", "-").startswith("nvidia-cudnn"))
    mod = pyenv.imported("paddle")
    imported = mod is not None and os.path.realpath(os.path.dirname(getattr(mod, "__file__", "") or "")) == os.path.realpath(pkg)
    cuda = consts.get("cuda_version")
    cudnn = consts.get("cudnn_version")
    rel = os.path.relpath(vpath, site) if vpath else "paddle/version/__init__.py"
    row = FrameworkBuild(name="PaddlePaddle", distribution=dist_name, version=version, imported=imported,
                         checker="paddle", pins=pins)
    if not got:
        why = f"PaddlePaddle {version}: no paddle/version/__init__.py, so whether it is a CUDA build is unknown"
        notes.append(why)
        return [ConsumerFacts(row=dataclasses.replace(row, detail=why), distribution=dist_name, unknown=True)]
    if _false(cuda) or _false(cudnn):
        why = f"{rel}: cuda_version {cuda!r}, cudnn_version {cudnn!r} (a CPU, ROCm or XPU build: no cuDNN)"
        return [ConsumerFacts(row=dataclasses.replace(row, cudnn_compiled_source=why, detail=why),
                              distribution=dist_name)]
    v = try_parse(str(cudnn)) if cudnn else None
    pip_cuda = str(consts.get("with_pip_cuda_libraries", "")).upper() == "ON"
    name = f"libcudnn.so.{v.major}" if (pip_cuda and v is not None) else "libcudnn.so"
    requester = next((os.path.join(pkg, r) for r in _REQUESTERS if os.path.exists(os.path.join(pkg, r))), None)
    libs = [os.path.join(pkg, r) for r in _REQUESTERS if os.path.exists(os.path.join(pkg, r))]
    chain = _chain(requester, libs, top)
    env = os.environ if environ is None else environ
    alternatives: list[CudnnRequest] = []
    if pip_cuda:
        alternatives.append(CudnnRequest(os.path.join(site, "nvidia", "cudnn", "lib", name), requester, chain,
                                         "dlopen of FLAGS_cudnn_dir (site-packages/nvidia/cudnn/lib, set by paddle/__init__.py)"))
    elif env.get("FLAGS_cudnn_dir"):
        alternatives.append(CudnnRequest(os.path.join(env["FLAGS_cudnn_dir"], name), requester, chain,
                                         f"dlopen of FLAGS_cudnn_dir={env['FLAGS_cudnn_dir']}"))
    who = os.path.relpath(requester, site) if requester else "Paddle"
    alternatives.append(CudnnRequest(name, requester, chain, f"dlopen(\"{name}\") by {who}"))
    alternatives.append(CudnnRequest(os.path.join("/usr/local/cuda/lib64", name), requester, chain,
                                     "dlopen of /usr/local/cuda/lib64 (Paddle's last resort)"))
    row = dataclasses.replace(
        row, cudnn_compiled=str(v) if v else None, cuda_compiled=str(cuda) if cuda else None,
        cudnn_compiled_source=f"{rel} cudnn_version {cudnn!r}", consumer_library=requester,
        cudnn_soname=name, pip_solvable=pip_cuda,
    )
    return [ConsumerFacts(row=row, alternatives=alternatives, distribution=dist_name)]


def _chain(requester: str | None, libs: list[str], top: list[str]) -> tuple[str, ...]:
    """The Paddle libraries that load ``requester`` (by NEEDED), nearest first, then ``top``."""

    chain: list[str] = []
    cur = requester
    while cur and len(chain) < 6:
        facts = elf_facts(cur)
        names = {os.path.basename(cur)} | ({facts.soname} if isinstance(facts, ElfDynamic) and facts.soname else set())
        parent = None
        for other in libs:
            if other == cur or other in chain:
                continue
            of = elf_facts(other)
            if isinstance(of, ElfDynamic) and names & set(of.needed):
                parent = other
                break
        if parent is None:
            break
        chain.append(parent)
        cur = parent
    return tuple(chain + [t for t in top if t not in chain])
