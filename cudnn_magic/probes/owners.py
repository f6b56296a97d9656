"""Which package owns a library file: a pip distribution, a conda package, a Debian package,
or "system".

* pip: the ``RECORD`` of ``*.dist-info`` directories beside the file's site-packages
  (PEP 376/627), read directly (faster than scanning ``importlib.metadata.distributions()``).
* conda: ``<prefix>/conda-meta/*.json`` ``files`` lists (conda's package metadata format).
* Debian/Ubuntu: ``/var/lib/dpkg/info/*.list`` (dpkg's file lists), cuDNN packages only.
"""

from __future__ import annotations

import glob
import json
import os
from functools import lru_cache

_RELEVANT = ("cudnn", "torch", "tensorflow", "tf_nightly", "jax", "cupy", "onnxruntime", "paddle", "mxnet", "ctranslate2")


def _site_root(path: str) -> tuple[str, str] | None:
    """Split ``/x/site-packages/nvidia/cudnn/lib/f`` into (``/x/site-packages``, ``nvidia/cudnn/lib/f``)."""
    parts = path.split(os.sep)
    for i in range(len(parts) - 1, 0, -1):
        if parts[i] in ("site-packages", "dist-packages"):
            return os.sep.join(parts[: i + 1]), "/".join(parts[i + 1 :])
    return None


@lru_cache(maxsize=64)
def _records(site: str) -> tuple[tuple[str, str, frozenset[str]], ...]:
    """(name, version, files) for relevant dists in ``site``; cached per process."""
    out = []
    for dist in glob.glob(os.path.join(site, "*.dist-info")):
        base = os.path.basename(dist)[: -len(".dist-info")]
        name, _, version = base.partition("-")
        if not any(k in name.lower() for k in _RELEVANT):
            continue
        files: set[str] = set()
        try:
            with open(os.path.join(dist, "RECORD"), encoding="utf-8", errors="replace") as fh:
                for line in fh:
                    files.add(line.split(",", 1)[0])
        except OSError:
            continue
        out.append((name.replace("_", "-"), version, frozenset(files)))
    return tuple(out)


@lru_cache(maxsize=8)
def _conda_files(prefix: str) -> tuple[tuple[str, str, frozenset[str]], ...]:
    out = []
    for meta in glob.glob(os.path.join(prefix, "conda-meta", "*.json")):
        base = os.path.basename(meta)
        if not any(k in base.lower() for k in _RELEVANT):
            continue
        try:
            with open(meta, encoding="utf-8") as fh:
                data = json.load(fh)
        except (OSError, ValueError):
            continue
        out.append((str(data.get("name", base)), str(data.get("version", "")), frozenset(data.get("files", ()))))
    return tuple(out)


@lru_cache(maxsize=1)
def _dpkg_lists() -> tuple[tuple[str, frozenset[str]], ...]:
    out = []
    for lst in glob.glob("/var/lib/dpkg/info/*cudnn*.list"):
        try:
            with open(lst, encoding="utf-8", errors="replace") as fh:
                files = frozenset(line.rstrip("\n") for line in fh)
        except OSError:
            continue
        out.append((os.path.basename(lst)[: -len(".list")].split(":")[0], files))
    return tuple(out)


def _conda_prefix_of(path: str) -> str | None:
    d = os.path.dirname(path)
    for _ in range(4):
        if os.path.isdir(os.path.join(d, "conda-meta")):
            return d
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
    return None


def _wheel_root(path: str, levels: int = 5) -> tuple[str, str] | None:
    """The nearest directory above ``path`` (at most ``levels`` up) that holds ``*.dist-info``
    directories, split like :func:`_site_root`: a ``pip install --target`` folder or an
    unzipped wheel, outside any site-packages."""
    d = os.path.dirname(path)
    for _ in range(levels):
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent
        if _has_dist_info(d):
            return d, os.path.relpath(path, d).replace(os.sep, "/")
    return None


@lru_cache(maxsize=256)
def _has_dist_info(d: str) -> bool:
    try:
        return any(n.endswith(".dist-info") for n in os.listdir(d))
    except OSError:
        return False


def owner_of(path: str) -> str:
    """Describe the package owning ``path`` ("pip: nvidia-cudnn-cu12 9.3.0.75", "conda: cudnn
    8.9.7", "deb: libcudnn9-cuda-12"; "wheel: nvidia-cudnn-jit-cu12 9.12.0.46" for the files of
    a wheel installed with ``pip install --target`` or unzipped outside any site-packages, by
    the wheel's own ``RECORD``), or "system" when none claims it. Never raises."""
    try:
        candidates = [path]
        real = os.path.realpath(path)
        if real != path:
            candidates.append(real)
        for p in candidates:
            split = _site_root(p)
            if split:
                site, rel = split
                for name, version, files in _records(site):
                    if rel in files:
                        return f"pip: {name} {version}"
        for p in candidates:
            if _site_root(p):
                continue
            split = _wheel_root(p)
            if split:
                root, rel = split
                for name, version, files in _records(root):
                    if rel in files:
                        return f"wheel: {name} {version}"
        for p in candidates:
            prefix = _conda_prefix_of(p)
            if prefix:
                rel = os.path.relpath(p, prefix)
                for name, version, files in _conda_files(prefix):
                    if rel in files:
                        return f"conda: {name} {version}"
        for p in candidates:
            for name, files in _dpkg_lists():
                if p in files:
                    return f"deb: {name}"
    except Exception:  # noqa: BLE001 - a probe never raises
        pass
    return "system"


def pip_version_of(owner: str) -> str | None:
    """The version part of a "pip: name version" or "wheel: name version" owner string, else
    None."""
    if owner.startswith(("pip: ", "wheel: ")):
        bits = owner.split()
        return bits[-1] if len(bits) >= 3 else None
    return None
