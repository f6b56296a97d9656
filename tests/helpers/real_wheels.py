"""Real wheels for tests, downloaded by the test session and cached in the repository.

``install_wheel("nvidia-cudnn-jit-cu12", "9.12.0.46")`` runs
``pip install --no-deps --target .cache/wheels/<dist>-<version>/ <dist>==<version>`` once and
returns that folder (``.cache/`` is git-ignored). The folder appears only complete: pip installs
into a scratch folder beside it, which is renamed into place when pip succeeded, so a killed run
never leaves half a wheel behind. An ``fcntl`` lock per wheel keeps parallel test processes
(pytest-xdist, two suites at once) from installing the same wheel twice.

A test is skipped -- with the reason -- only when PyPI cannot be reached (CI without network);
any other pip failure fails the test with pip's output.

Known real versions (68 MB each; their version queries need no GPU): nvidia-cudnn-jit-cu12
9.12.0.46 and 9.27.0.42, nvidia-cudnn-jit-cu13 9.24.0.43 and 9.25.0.15.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CACHE = (REPO / ".cache").resolve() / "wheels"  # resolved: a checkout may link .cache to a shared copy

_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$")
_VERSION = re.compile(r"^[0-9]+(?:\.[0-9]+)*$")


def _normalized(dist: str) -> str:
    return re.sub(r"[-_.]+", "_", dist).lower()


def _complete(target: Path, dist: str, version: str) -> bool:
    """A wheel is in place when its ``.dist-info`` (with RECORD) is in the folder."""
    want = f"{_normalized(dist)}-{version}.dist-info"
    try:
        return any(p.name.lower() == want and (p / "RECORD").is_file() for p in target.iterdir())
    except OSError:
        return False


def _pypi_reachable(timeout_s: float = 5.0) -> bool:
    try:
        with socket.create_connection(("pypi.org", 443), timeout=timeout_s):
            return True
    except OSError:
        return False


def installed_dist_info(dist: str, version: str) -> Path:
    """The ``*.dist-info`` folder of ``dist==version`` in its :func:`install_wheel` folder (the only
    one there: each wheel has a ``--target`` folder of its own, installed with ``--no-deps``)."""
    target = install_wheel(dist, version)
    (info,) = (p for p in target.iterdir() if p.name.endswith(".dist-info"))
    return info


def install_wheel(dist: str, version: str, on_install: Callable[[], object] | None = None) -> Path:
    """The ``--target`` folder holding ``dist==version`` installed with ``--no-deps``.

    Idempotent and safe across processes (one ``fcntl`` lock per wheel). ``on_install`` is called
    just before pip runs, never when the wheel is already in place (a caller's "installing..." line). The first call
    downloads the wheel (about 68 MB for the cuDNN jit wheels, a few seconds); later calls return
    at once.

    Raises:
        ValueError: ``dist`` or ``version`` is not a plain distribution name / release number.
        pytest.skip.Exception: PyPI cannot be reached (the reason says so).
        pytest.fail.Exception: pip failed for another reason (its output is in the message).
    """
    if not _NAME.match(dist) or not _VERSION.match(version):
        raise ValueError(f"not a distribution name and release: {dist!r} {version!r}")
    target = CACHE / f"{dist}-{version}"
    if _complete(target, dist, version):
        return target
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / f".{dist}-{version}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _complete(target, dist, version):
            return target
        if on_install is not None:  # only when pip runs: a cached wheel says nothing
            on_install()
        scratch = CACHE / f".{dist}-{version}.partial-{os.getpid()}"
        shutil.rmtree(scratch, ignore_errors=True)
        cmd = [sys.executable, "-m", "pip", "install", "--no-deps", "--disable-pip-version-check", "--no-input",
               "--no-compile", "--target", str(scratch), f"{dist}=={version}"]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        if proc.returncode != 0 or not _complete(scratch, dist, version):
            shutil.rmtree(scratch, ignore_errors=True)
            out = (proc.stdout + proc.stderr)[-3000:]
            if not _pypi_reachable():
                pytest.skip(f"PyPI cannot be reached, so the real wheel {dist}=={version} cannot be installed "
                            f"(pip said: {out.strip().splitlines()[-1] if out.strip() else 'nothing'})")
            pytest.fail(f"pip could not install {dist}=={version} (exit {proc.returncode}):\n{out}")
        if target.exists():  # an incomplete folder left by something else
            shutil.rmtree(target, ignore_errors=True)
        os.replace(scratch, target)
    return target


def wheel_file(dist: str, version: str) -> Path:
    """The real wheel file of ``dist==version`` (``pip download --no-deps``), kept under
    ``.cache/wheelfiles/<dist>-<version>/`` (pip's own HTTP cache makes it a copy when the wheel was
    installed before). Same locking, skipping and failure rules as :func:`install_wheel`."""
    if not _NAME.match(dist) or not _VERSION.match(version):
        raise ValueError(f"not a distribution name and release: {dist!r} {version!r}")
    folder = (REPO / ".cache").resolve() / "wheelfiles" / f"{dist}-{version}"

    def found() -> Path | None:
        try:
            hits = [p for p in folder.iterdir() if p.suffix == ".whl" and p.name.lower().startswith(_normalized(dist) + "-")]
        except OSError:
            return None
        return hits[0] if len(hits) == 1 else None

    if found():
        return found()  # type: ignore[return-value]
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / f".{dist}-{version}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if found():
            return found()  # type: ignore[return-value]
        scratch = folder.parent / f".{dist}-{version}.partial-{os.getpid()}"
        shutil.rmtree(scratch, ignore_errors=True)
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check", "--no-input",
               "--only-binary", ":all:", "-d", str(scratch), f"{dist}=={version}"]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        if proc.returncode != 0 or not any(p.suffix == ".whl" for p in scratch.iterdir() if scratch.exists()):
            shutil.rmtree(scratch, ignore_errors=True)
            out = (proc.stdout + proc.stderr)[-3000:]
            if not _pypi_reachable():
                pytest.skip(f"PyPI cannot be reached, so the real wheel {dist}=={version} cannot be downloaded")
            pytest.fail(f"pip could not download {dist}=={version} (exit {proc.returncode}):\n{out}")
        shutil.rmtree(folder, ignore_errors=True)
        os.replace(scratch, folder)
    return found()  # type: ignore[return-value]
