"""Site-packages trees from real framework files: written file by file (:func:`helpers.builders.write`), or copied
member by member from a real wheel found on this machine (:func:`local_wheel`, :func:`unpack`),
then read by the framework probe (:func:`probe_one`).

Local wheels are looked up in ``CUDNN_MAGIC_WHEEL_DIRS`` (``os.pathsep``-separated), then in the
machine's wheel folders; a test whose wheel is not there is skipped with the pattern it wanted.
"""

from __future__ import annotations

import glob
import os
import re
import zipfile
from pathlib import Path

import pytest

from cudnn_magic.model import FrameworkBuild
from cudnn_magic.probes.frameworks import probe_frameworks
from helpers.builders import write


def by_name(builds: list[FrameworkBuild]) -> dict[str, FrameworkBuild]:
    return {b.name: b for b in builds}


def probe_one(site: Path, name: str, **kw) -> tuple[FrameworkBuild, list[str]]:
    builds, notes = probe_frameworks(paths=[str(site)], **kw)
    got = by_name(builds)
    assert name in got, (builds, notes)
    assert len([b for b in builds if b.name == name]) == 1
    return got[name], notes


WHEEL_DIRS = [d for d in os.environ.get("CUDNN_MAGIC_WHEEL_DIRS", "").split(os.pathsep) if d] + [
    "/opt/wheels", "/opt/pypi/files", "/opt/pypi-more/files"]


def local_wheel(pattern: str, exclude: str = "\0") -> str:
    for d in WHEEL_DIRS:
        hits = sorted(h for h in glob.glob(os.path.join(d, pattern)) if exclude not in os.path.basename(h))
        if hits:
            return hits[-1]
    pytest.skip(f"no local wheel {pattern} (set CUDNN_MAGIC_WHEEL_DIRS)")


def unpack(whl: str, site: Path, members: list[str]) -> None:
    """Copy the named members (regexes) and the dist-info METADATA of a real wheel into ``site``."""
    with zipfile.ZipFile(whl) as z:
        for n in z.namelist():
            if n.endswith(".dist-info/METADATA") or any(re.fullmatch(m, n) for m in members):
                write(site / n, z.read(n))
