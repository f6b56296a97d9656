"""A plain IPython ``InteractiveShell`` in a child process, driven cell by cell: the annotation
hook's tests and the ones that reuse its cells (the capture takes over fd 2, and IPython's shell is a
singleton, so each scenario gets a fresh interpreter).

:func:`run` writes :data:`PRELUDE` plus the scenario's body to a script and runs it with this
checkout on ``PYTHONPATH``; the body prints ``@@name`` markers (``mark``) and :func:`section` cuts
stdout between them.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

MISMATCH = ("2021-03-01 12:00:00.000000: E tensorflow/stream_executor/cuda/cuda_dnn.cc:336] "
            "Loaded runtime CuDNN library: 8.0.5 but source was compiled with: 8.1.0.  CuDNN library needs "
            "to have matching major version and equal or higher minor version.")

PRELUDE = f"""
import ctypes, os, sys
from IPython.core.interactiveshell import InteractiveShell
ip = InteractiveShell.instance(colors="nocolor")
MISMATCH = {MISMATCH!r}
ip.user_ns["MISMATCH"] = MISMATCH
def mark(name):
    sys.stdout.flush(); print("@@" + name, flush=True)
def cell(src):
    return ip.run_cell(src, store_history=True)
"""

CUDNN_CELL = """
import ctypes
line = (MISMATCH + "\\n").encode()
ctypes.CDLL(None).write(2, line, len(line))
raise RuntimeError("Failed to get convolution algorithm. DNN library is not found.")
"""


def run(tmp: Path, body: str, env: dict | None = None) -> tuple[str, bytes, int]:
    script = tmp / "child.py"
    script.write_text(PRELUDE + textwrap.dedent(body))
    errp = tmp / "stderr.bin"
    e = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}
    e["PYTHONPATH"] = os.pathsep.join([str(REPO)] + [p for p in e.get("PYTHONPATH", "").split(os.pathsep) if p])
    e.update(HOME=str(tmp), IPYTHONDIR=str(tmp / "ipython"), JUPYTER_RUNTIME_DIR=str(tmp / "runtime"))
    e.update(env or {})
    with open(errp, "wb") as err:
        p = subprocess.run([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=err, env=e, timeout=120)
    return p.stdout.decode("utf-8", "replace"), errp.read_bytes(), p.returncode


def section(out: str, name: str) -> str:
    """The stdout between ``@@name`` and the next ``@@`` marker."""
    after = out.split("@@" + name + "\n", 1)[1]
    return after.split("@@", 1)[0]


TF_SKIP = ("2023-01-01 00:00:00.000000: W tensorflow/core/common_runtime/gpu/gpu_device.cc:1934] Cannot dlopen "
           "some GPU libraries. Please make sure the missing libraries mentioned above are installed properly if "
           "you would like to use GPU. Follow the guide at https://www.tensorflow.org/install/gpu for how to "
           "download and setup the required libraries for your platform.\nSkipping registering GPU devices...\n")
