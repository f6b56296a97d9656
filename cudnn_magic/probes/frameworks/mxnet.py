"""Apache MXNet (the ``mxnet-cuXXX`` builds: ``mxnet-cu112``, ``mxnet-cu102mkl``...).

The wheels ship one native library, ``mxnet/libmxnet.so``, which NEEDs the cuDNN soname of its
build (``libcudnn.so.8`` in ``mxnet-cu112`` 1.9.1: the name sits in its dynamic string table next
to ``libcudart.so.11.0``, no RPATH; MXNet's ``tools/pip/setup.py`` copies no cuDNN into the
wheel, users install it). The generic scan finds that NEEDED entry; this probe names the row
MXNet, takes the CUDA version from the distribution name (``cu112`` -> 11.2) and applies MXNet's
own rule. The compiled-against minor is not in any file MXNet ships; the soname fixes the major.
"""

from __future__ import annotations

import dataclasses
import os
import re

from ...model import FrameworkBuild
from ...util import pyenv
from .. import libnames
from .consumer_facts import ConsumerFacts, CudnnRequest, chain_within, find_package, norm
from .generic import EnvironmentScan

_DIST = re.compile(r"^mxnet(-cu(\d+)[a-z]*|-native|-mkl)?$")


def probe(scan: EnvironmentScan, paths: list[str] | None, top: list[str], notes: list[str]) -> list[ConsumerFacts]:
    pkg = find_package("mxnet", paths)
    if pkg is None:
        return []
    site = os.path.dirname(os.path.abspath(pkg))
    dist = next((d for d in scan.distributions if _DIST.match(norm(d.name)) and d.location == site), None)
    name, version = (dist.name, dist.version) if dist else _dist_from_site(site)
    if name is None:
        return []
    m = _DIST.match(name)
    cuda = None
    if m and m.group(2):
        digits = m.group(2)
        cuda = f"{digits[:-1]}.{digits[-1]}" if len(digits) >= 2 else digits
    mod = pyenv.imported("mxnet")
    imported = mod is not None and os.path.realpath(os.path.dirname(getattr(mod, "__file__", "") or "")) == os.path.realpath(pkg)
    row = FrameworkBuild(name="MXNet", distribution=name, version=version or "unknown", imported=imported,
                         cuda_compiled=cuda, checker="mxnet", pip_solvable=False,
                         consumer_library=so if os.path.exists(so := os.path.join(pkg, "libmxnet.so")) else None)
    requests: list[CudnnRequest] = []
    compiled = None
    for lib in (dist.consumers if dist else ()):
        for soname in lib.cudnn_needed:
            requests.append(CudnnRequest(soname, lib.path, chain_within(dist, lib.path, top),
                                         f"DT_NEEDED of {os.path.basename(lib.path)}"))
            parsed = libnames.parse_name(soname)
            if parsed and parsed[1] is not None and compiled is None:
                compiled = parsed[2] or str(parsed[1])
    if not requests:
        why = (f"{name} {version}: libmxnet.so NEEDs no cuDNN (a CPU build)" if cuda is None else
               f"{name} {version}: libmxnet.so NEEDs no cuDNN (built without USE_CUDNN)")
        return [ConsumerFacts(row=dataclasses.replace(row, cudnn_compiled_source=why, detail=why), distribution=name)]
    row = dataclasses.replace(row, cudnn_compiled=compiled,
                              cudnn_compiled_source=f"the soname libmxnet.so NEEDs ({requests[0].soname}); "
                                                    "the minor it was built with is not recorded in the wheel")
    return [ConsumerFacts(row=row, alternatives=requests, distribution=name)]


def _dist_from_site(site: str) -> tuple[str | None, str]:
    try:
        entries = os.listdir(site)
    except OSError:
        return None, ""
    for e in sorted(entries):
        if e.endswith(".dist-info"):
            n, _, v = e[: -len(".dist-info")].partition("-")
            if _DIST.match(norm(n)):
                return norm(n), v
    return None, ""
