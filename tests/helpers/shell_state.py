"""The README demo's state as a terminal meets it, for tests of the command line run from a shell:
this environment's own ``nvidia-cudnn-jit-cu12`` (the pip wheel scripts/bootstrap.sh installs)
and the real ``nvidia-cudnn-jit-cu12`` 9.12.0.46 (``.cache/wheels``, :func:`real_wheels.install_wheel`)
that hides it when first on ``LD_LIBRARY_PATH``: in the shell (``dict(env, LD_LIBRARY_PATH=...)``)
or in the kernelspec ``demo`` (the demo's ``cudnn-magic-demo``), found through ``JUPYTER_PATH``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from helpers.real_wheels import REPO, install_wheel
from helpers.support import require_real_cudnn

__all__ = ["cli", "demo_shell", "old_cudnn_dir"]


def old_cudnn_dir() -> Path:
    """The real cuDNN 9.12 wheel's library folder."""
    return install_wheel("nvidia-cudnn-jit-cu12", "9.12.0.46") / "nvidia" / "cudnn_jit" / "lib"


def demo_shell(tmp_path: Path) -> dict[str, str]:
    """A terminal's environment (no LD_LIBRARY_PATH), with its own Jupyter dirs and undo journal
    under ``tmp_path``, and the kernelspec ``demo`` (this interpreter, the 9.12 folder as its
    LD_LIBRARY_PATH) at ``tmp_path/jp/kernels/demo/kernel.json``."""
    require_real_cudnn()
    kj = tmp_path / "jp" / "kernels" / "demo" / "kernel.json"
    kj.parent.mkdir(parents=True)
    kj.write_text(json.dumps({"argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                              "display_name": "demo", "language": "python",
                              "env": {"LD_LIBRARY_PATH": str(old_cudnn_dir())}}, indent=1) + "\n")
    env = {k: v for k, v in os.environ.items()
           if k not in ("LD_LIBRARY_PATH", "LD_PRELOAD", "PYTHONPATH", "CUDNN_MAGIC_STATE_DIR", "XDG_STATE_HOME",
                        "JUPYTER_PREFER_ENV_PATH", "PYTEST_CURRENT_TEST") and not k.startswith("JUPYTER_")}
    env.update(PYTHONPATH=str(REPO), JUPYTER_PATH=str(tmp_path / "jp"), JUPYTER_DATA_DIR=str(tmp_path / "data"),
               JUPYTER_RUNTIME_DIR=str(tmp_path / "data" / "runtime"), JUPYTER_CONFIG_DIR=str(tmp_path / "config"),
               CUDNN_MAGIC_STATE_DIR=str(tmp_path / "state"))
    return env


def cli(env: dict[str, str], *args: str, stdin: str = "") -> subprocess.CompletedProcess:
    """``python -m cudnn_magic ARGS`` in a child process with ``env`` (text output)."""
    return subprocess.run([sys.executable, "-m", "cudnn_magic", *args], capture_output=True, text=True, env=env,
                          input=stdin, timeout=300, cwd=str(REPO))
