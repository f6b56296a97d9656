"""A real virtual environment for the prevention tests (what-if, manifest): ``python -m venv`` in a
temporary folder, with the real ``nvidia-cudnn-jit-cu13==9.24.0.43`` wheel installed by its own
pip (``--no-deps``: its CUDA library dependencies are 100s of MB and play no part here),
``packaging`` and ``nvidia-ml-py`` (cudnn-magic's needs for the CLI), and a ``.pth`` file that
puts this checkout on its ``sys.path``. The CLI then runs as ``VENV/bin/python -m cudnn_magic``,
so the environment it checks and resolves with pip is that venv's own. pip's cache makes a
second build quick. Skipped (with the reason) only when PyPI cannot be reached.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.real_wheels import _pypi_reachable

REPO = Path(__file__).resolve().parents[2]


def make_venv(root: Path, *wheels: str) -> Path:
    """Create the venv under ``root`` with ``wheels`` installed; returns its python."""
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True, timeout=300)
    py = venv / "bin" / "python"
    proc = subprocess.run([str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps",
                           *wheels, "packaging", "nvidia-ml-py"], capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        if not _pypi_reachable():
            pytest.skip("PyPI cannot be reached: the prevention tests need real pip resolutions")
        pytest.fail(f"pip could not build the test venv:\n{(proc.stdout + proc.stderr)[-3000:]}")
    site = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    Path(site, "cudnn_magic_checkout.pth").write_text(str(REPO) + "\n")
    return py


def run_cli(py: Path, *args: str, timeout: float = 600, isolate_pip_config: bool = False,
            env_extra: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``VENV/bin/python -m cudnn_magic ARGS`` with text output. ``isolate_pip_config``: pip reads
    no configuration file (``PIP_CONFIG_FILE=/dev/null``: pip's docs, "Configuration") and no
    ``PIP_*`` source variable, so the index given on the command line is its only source (a
    machine's ``find-links``/``extra-index-url`` would otherwise resolve what it cannot). ``env_extra``:
    variables set on top (``XDG_CACHE_HOME``)."""
    env = dict(os.environ)
    env.update(env_extra or {})
    env.pop("PYTHONPATH", None)
    if isolate_pip_config:
        env["PIP_CONFIG_FILE"] = os.devnull
        for var in ("PIP_FIND_LINKS", "PIP_EXTRA_INDEX_URL", "PIP_INDEX_URL", "PIP_NO_INDEX"):
            env.pop(var, None)
    return subprocess.run([str(py), "-m", "cudnn_magic", *args], capture_output=True, text=True, timeout=timeout,
                          env=env, cwd=str(py.parent.parent))


def freeze(py: Path) -> str:
    """``pip freeze`` of the venv, all distributions included."""
    return subprocess.run([str(py), "-m", "pip", "freeze", "--all", "--disable-pip-version-check"],
                          capture_output=True, text=True, check=True).stdout


def closed_port() -> int:
    """A local TCP port nothing listens on (bound, then closed)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port
