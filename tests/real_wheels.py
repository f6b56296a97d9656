"""Real wheels for tests, installed by the test session itself and cached.

``install_wheel("ctranslate2", "4.4.0")`` runs ``pip install --no-deps --target`` into
``<repo>/.cache/wheels/<dist>-<version>/`` (``.cache/`` is git-ignored) once, and returns that
folder on every later call. Parallel test processes wait for each other on an ``fcntl`` lock;
a half-finished install is never seen (pip writes into a scratch folder that is renamed into
place only when it succeeded).

When PyPI cannot be reached the calling test is skipped with the reason and pip's own words;
any other pip failure fails the test (a wrong name or version must not pass silently).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
CACHE = REPO / ".cache" / "wheels"
_MARKER = ".cudnn-magic-complete"
_NETWORK_WORDS = (
    "Failed to establish a new connection", "Temporary failure in name resolution", "Name or service not known",
    "Network is unreachable", "Connection refused", "ConnectTimeoutError", "ReadTimeoutError", "timed out",
    "No route to host", "ProxyError", "SSLError", "Could not fetch URL", "connection broken",
)


def install_wheel(dist: str, version: str) -> Path:
    """Install ``dist==version`` (binary wheels only, no dependencies) into the cache and return
    the target folder (put it on ``sys.path``/``PYTHONPATH`` to use it).

    Idempotent and safe across parallel processes. Skips the calling test when PyPI is
    unreachable; raises ``RuntimeError`` with pip's output for any other failure.
    """
    target = CACHE / f"{dist}-{version}"
    if (target / _MARKER).exists():
        return target
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / f".{dist}-{version}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if (target / _MARKER).exists():
                return target
            scratch = Path(tempfile.mkdtemp(prefix=f".{dist}-{version}-", dir=CACHE))
            cmd = [sys.executable, "-m", "pip", "install", "--no-deps", "--only-binary=:all:", "--no-compile",
                   "--disable-pip-version-check", "--target", str(scratch), f"{dist}=={version}"]
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
            if proc.returncode != 0:
                shutil.rmtree(scratch, ignore_errors=True)
                out = (proc.stdout + proc.stderr)[-3000:]
                if any(w.lower() in out.lower() for w in _NETWORK_WORDS):
                    pytest.skip(f"PyPI cannot be reached to install {dist}=={version}: {out.strip().splitlines()[-1]}")
                raise RuntimeError(f"pip could not install {dist}=={version}:\n{out}")
            (scratch / _MARKER).write_text(f"{dist}=={version}\n")
            if target.exists():
                shutil.rmtree(target)
            os.replace(scratch, target)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return target
