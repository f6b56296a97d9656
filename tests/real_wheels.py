"""Real cuDNN wheels for tests, downloaded by the test session itself and cached.

``install_wheel("nvidia-cudnn-jit-cu12", "9.12.0.46")`` returns
``<repo>/.cache/wheels/nvidia-cudnn-jit-cu12-9.12.0.46/``: a ``pip install --no-deps --target``
folder (``nvidia/cudnn_jit/lib/libcudnn.so.9`` and the wheel's ``*.dist-info`` beside
``nvidia/``). The first call downloads (pip's own cache and index settings apply); later calls,
and other test processes running at the same time, reuse the folder (an ``fcntl`` lock
serialises them; a ``.complete`` marker is written last, so a download cut short is redone).

Known real versions: nvidia-cudnn-jit-cu12 9.12.0.46 and 9.27.0.42, nvidia-cudnn-jit-cu13
9.24.0.43 and 9.25.0.15; their version queries work without a GPU.

When PyPI (or the configured index) cannot be reached, the calling test is skipped with that
reason (outside pytest: ``RuntimeError``); any other failure of pip raises with pip's output.
"""

from __future__ import annotations

import fcntl
import os
import socket
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlparse

REPO = Path(__file__).resolve().parent.parent
CACHE = REPO / ".cache" / "wheels"


def _index_host() -> tuple[str, int]:
    url = os.environ.get("PIP_INDEX_URL") or "https://pypi.org/simple"
    u = urlparse(url)
    return u.hostname or "pypi.org", u.port or (443 if u.scheme == "https" else 80)


def _unreachable() -> str | None:
    """Why the package index cannot be reached, or None when a TCP connection opens."""
    host, port = _index_host()
    try:
        with socket.create_connection((host, port), timeout=10):
            return None
    except OSError as exc:
        return f"the package index {host}:{port} cannot be reached ({exc})"


def _skip(reason: str) -> None:
    if "pytest" in sys.modules:
        import pytest

        pytest.skip(reason)
    raise RuntimeError(reason)


def install_wheel(dist: str, version: str) -> Path:
    """The ``pip install --no-deps --target`` folder of ``dist==version`` under
    ``.cache/wheels/<dist>-<version>/``, installed on first use (idempotent, safe across
    parallel processes). Skips the calling test only when the index cannot be reached.

    Raises:
        RuntimeError: pip failed for another reason (its output is in the message).
    """
    target = CACHE / f"{dist}-{version}"
    done = target / ".complete"
    if done.exists():
        return target
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / f".lock-{dist}-{version}", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if done.exists():
            return target
        why = _unreachable()
        if why:
            _skip(f"real wheel {dist}=={version} not cached and {why}")
        if target.exists():
            import shutil

            shutil.rmtree(target)
        p = subprocess.run(
            [sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps",
             "--target", str(target), f"{dist}=={version}"],
            capture_output=True, text=True,
        )
        if p.returncode != 0:
            out = (p.stdout + p.stderr)[-3000:]
            if any(s in out for s in ("Failed to establish a new connection", "Temporary failure in name resolution",
                                      "Network is unreachable", "Read timed out")):
                _skip(f"real wheel {dist}=={version}: the package index cannot be reached: {out.strip()[-300:]}")
            raise RuntimeError(f"pip could not install {dist}=={version} into {target}:\n{out}")
        done.write_text(f"{dist}=={version}\n")
    return target
