"""What the probes of the cuDNN consumers beyond TensorFlow, PyTorch, JAX, CuPy and ONNX Runtime
(CTranslate2, PaddlePaddle, MXNet, TensorRT, the libraries cuda-pathfinder loads for) find, and
the helpers they share: :class:`CudnnRequest` (one way a framework asks for cuDNN),
:class:`ConsumerFacts` (the unjudged row and its requests), the package and ``*.dist-info``
lookups without importing anything, and the loader chain of a library inside its distribution.

The registry that runs every such probe is :mod:`cudnn_magic.probes.frameworks.extra`; each
probe is one module of this package and imports only this module of it.
"""

from __future__ import annotations

import importlib.machinery
import os
import re
import sys
from dataclasses import dataclass, field
from typing import Callable

from ...model import FrameworkBuild
from ...util import pyenv
from .common import read_dist_metadata
from .generic import Distribution, EnvironmentScan

__all__ = ["ConsumerFacts", "CudnnRequest", "Probe", "chain_within", "dist_info", "find_package", "norm", "scanned"]


@dataclass(frozen=True)
class CudnnRequest:
    """One way a framework asks for the cuDNN main library.

    ``soname`` is the name asked for (``libcudnn.so.9``, ``libcudnn-463fd6d5.so.8.9.7``,
    ``libcudnn.so``) or an absolute path (Paddle's ``FLAGS_cudnn_dir/libcudnn.so.9``);
    ``requester`` the ELF object that NEEDs or ``dlopen``s it and ``chain`` its loaders,
    nearest first; ``how`` says which (``"DT_NEEDED"``, ``"dlopen by libphi.so"``); ``loader``
    "pathfinder:SITE" when cuda-pathfinder (installed in SITE) finds it instead of glibc.
    """

    soname: str
    requester: str | None
    chain: tuple[str, ...] = ()
    how: str = "DT_NEEDED"
    loader: str = ""  # "" glibc's search; "pathfinder:SITE": cuda-pathfinder's order (SITE holds it)


@dataclass
class ConsumerFacts:
    """What one framework probe found.

    ``row``: the unjudged row (``checker`` a key of ``rules.consumers.CONSUMER_RULES``).
    ``alternatives``: the requests the framework tries in order; the first that resolves wins
    (Paddle tries ``FLAGS_cudnn_dir``, the plain name, ``/usr/local/cuda/lib64``). Empty when it
    uses no cuDNN. ``distribution``: the scanned distribution whose NEEDED entries are this
    framework's (its generic consumers belong to this row). ``legacy_api``: it calls cuDNN 9's
    legacy API (needs ``libcudnn_ops``/``libcudnn_cnn``). ``optional``: only some features need
    cuDNN. ``upgrade``: (title, action) of the release that agrees with a cuDNN 9 environment.
    ``unknown``: the probe could not tell whether it uses cuDNN at all.
    """

    row: FrameworkBuild
    alternatives: list[CudnnRequest] = field(default_factory=list)
    distribution: str | None = None
    legacy_api: bool = False
    optional: bool = False
    upgrade: tuple[str, str] | None = None
    unknown: bool = False


_SEP = re.compile(r"[-_.]+")


def norm(name: str) -> str:
    return _SEP.sub("-", name).lower()


def find_package(name: str, paths: list[str] | None) -> str | None:
    """Directory of top-level package ``name`` on ``paths`` (or ``sys.path``), without importing."""
    mod = sys.modules.get(name) if paths is None and pyenv.target() is None else None
    if mod is not None and getattr(mod, "__path__", None):
        return str(next(iter(mod.__path__)))
    search = [os.path.abspath(p or os.curdir) for p in (paths if paths is not None else pyenv.search_path())
              if isinstance(p, str)]
    try:
        spec = importlib.machinery.PathFinder.find_spec(name, search)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return str(next(iter(spec.submodule_search_locations)))


def dist_info(site: str, names: tuple[str, ...]) -> tuple[str, str, list[str]] | None:
    """(name, version, Requires-Dist) of the first ``*.dist-info`` in ``site`` whose normalised
    name is among ``names`` (in the order of ``names``)."""
    try:
        entries = os.listdir(site)
    except OSError:
        return None
    found: dict[str, str] = {}
    for e in entries:
        if e.endswith(".dist-info"):
            found.setdefault(norm(e[: -len(".dist-info")].split("-", 1)[0]), e)
    for n in names:
        info = found.get(norm(n))
        if info:
            try:
                d = read_dist_metadata(os.path.join(site, info))
            except (OSError, ValueError):
                continue
            return d.name, d.version, list(d.requires)
    return None


def chain_within(dist: Distribution | None, path: str, top: list[str]) -> tuple[str, ...]:
    """The loaders of ``path`` inside its distribution (the library that NEEDs it, and so on up),
    then ``top`` (libpython and the executable)."""
    chain: list[str] = []
    if dist is not None:
        cur = next((lib for lib in dist.libraries if lib.path == path), None)
        seen = {path}
        while cur is not None and len(chain) < 8:
            parents = [p for p in dist.parents_of(cur) if p.path not in seen]
            if not parents:
                break
            cur = parents[0]
            seen.add(cur.path)
            chain.append(cur.path)
    return tuple(chain + [t for t in top if t not in chain])


def scanned(scan: EnvironmentScan, name: str) -> Distribution | None:
    n = norm(name)
    return next((d for d in scan.distributions if norm(d.name) == n), None)


Probe = Callable[[EnvironmentScan, "list[str] | None", list[str], list[str]], "list[ConsumerFacts]"]
