"""Distributions that load cuDNN through NVIDIA's cuda-pathfinder
(``cuda.pathfinder.load_nvidia_dynamic_lib("cudnn")``): their row and how they ask
(:class:`~cudnn_magic.probes.frameworks.consumer_facts.CudnnRequest` with ``loader`` "pathfinder:SITE"), so the
consumer check resolves them with cuda-pathfinder's own order (:mod:`.pathfinder`), not glibc's.

Found without importing anything: where a cuda-pathfinder that knows cuDNN (1.7.0 and later) is
installed, every distribution of that folder whose ``METADATA`` requires ``cuda-pathfinder`` has its
``RECORD``-listed ``.py`` files searched for the call. cuDNN 9 only (its descriptor's only soname is
``libcudnn.so.9``); judged by the soname rule.
"""

from __future__ import annotations

import os
import re

from ...model import FrameworkBuild
from ...util.files import read_regular
from .consumer_facts import ConsumerFacts, CudnnRequest
from .generic import EnvironmentScan, site_dirs
from .pathfinder import calls_pathfinder_for_cudnn, read_pathfinder

_REQ = re.compile(r"^requires-dist:\s*cuda[-_.]pathfinder\b", re.IGNORECASE | re.MULTILINE)


def _requires_pathfinder(info: str) -> bool:
    try:
        head = read_regular(os.path.join(info, "METADATA"), 256 << 10).split(b"\n\n", 1)[0].decode("utf-8", "replace")
    except OSError:
        return False
    return bool(_REQ.search(head))


def _py_files(site: str, info: str) -> list[str]:
    try:
        rows = read_regular(os.path.join(info, "RECORD"), 16 << 20).decode("utf-8", "replace").splitlines()
    except OSError:
        return []
    out = []
    for r in rows:
        rel = r.rsplit(",", 2)[0].strip().strip('"')
        if rel.endswith(".py") and ".dist-info/" not in rel:
            out.append(os.path.normpath(os.path.join(site, rel)))
    return out


def probe(scan: EnvironmentScan, paths: list[str] | None, top: list[str], notes: list[str]) -> list[ConsumerFacts]:
    out: list[ConsumerFacts] = []
    for site in site_dirs(paths):
        spec = read_pathfinder(site)
        if isinstance(spec, str):
            continue
        try:
            infos = sorted(e for e in os.listdir(site) if e.endswith(".dist-info") and not e.startswith("cuda_pathfinder-"))
        except OSError:
            continue
        for e in infos:
            info = os.path.join(site, e)
            if not _requires_pathfinder(info):
                continue
            caller = calls_pathfinder_for_cudnn(_py_files(site, info))
            if caller is None:
                continue
            name, _, version = e[: -len(".dist-info")].partition("-")
            how = (f"cuda.pathfinder.load_nvidia_dynamic_lib(\"cudnn\") in {os.path.relpath(caller, site)} "
                   f"(cuda-pathfinder {spec.version})")
            row = FrameworkBuild(
                name=name.replace("_", "-"), distribution=name.replace("_", "-"), version=version, checker="soname",
                cudnn_compiled="9", cudnn_soname="libcudnn.so.9",
                cudnn_compiled_source=f"cuda-pathfinder's cuDNN descriptor knows only {', '.join(spec.sonames)} ({spec.source})",
                loading=(f"{how}: the NVIDIA wheels below site.getsitepackages() first, then $CONDA_PREFIX, a copy already "
                         "mapped wins over both, then the OS loader (LD_LIBRARY_PATH, ld.so cache), CUDNN_PATH, "
                         "CUDA_PATH/CUDA_HOME; it loads cuBLASLt first and fails without it"))
            out.append(ConsumerFacts(row=row, alternatives=[CudnnRequest("libcudnn.so.9", None, (), how, f"pathfinder:{site}")]))
    return out
