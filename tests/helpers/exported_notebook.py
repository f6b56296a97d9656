"""A notebook whose outputs include every widget the extension shows, executed for real by
``jupyter nbconvert --execute`` and exported the ways people share notebooks.

The kernel runs with the NVML stand-in (``tests/native/fake_nvml.c``, a stand-in for
``libnvidia-ml.so.1`` on a machine without a GPU) first on ``LD_LIBRARY_PATH``, so ``%gpu_memory``
draws its live panel. Cells: ``%load_ext``, ``%cudnn_fix restart-kernel`` (a preview with Apply),
``%cudnn_fix free-gpu-memory`` (advice), ``%gpu_memory`` (the live panel), and a failing cell whose
annotation gets fix buttons.

nbconvert's ``--execute`` runs the notebook through nbclient, which saves the widgets' state in the
notebook's metadata (``ExecutePreprocessor.store_widget_state``, on by default); its HTML exporter
then renders every output whose widget model is in that state as a widget view, a
``<script type="application/vnd.jupyter.widget-view+json">`` that only the widget manager loaded
from the internet (unpkg.com) can draw, and ignores the other types of that output
(``nbconvert/filters/widgetsdatatypefilter.py``). ``--to html --execute`` is the same two steps in
one command: the execute preprocessor, then the exporter.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import nbformat

from helpers.nvml_standin import build_nvml_standin, spec_string
from helpers.support import REPO, kernel_env

KERNEL = "cm-export"
GPU_NAME = "NVIDIA Stand-in GPU 0"
NVML_SPEC = {"gpus": 1, "name.0": GPU_NAME, "total.0": 80 << 30, "used.0": 3 << 30, "procs.0": f"self:{1 << 30}"}
FAILING = ('raise RuntimeError("cuDNN version incompatibility: PyTorch was compiled against (9, 24, 0) '
           'but found runtime version (9, 1, 0)")')
CELLS = ["%load_ext cudnn_magic", "%cudnn_fix restart-kernel", "%cudnn_fix free-gpu-memory",
         "%gpu_memory --interval 0.5", FAILING]
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def nbconvert(args: list[str], env: dict[str, str], cwd: Path, timeout: int = 600) -> subprocess.CompletedProcess:
    """``jupyter nbconvert ARGS`` from this interpreter (raises with its output when it fails)."""
    p = subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", *args], capture_output=True, text=True,
                       env=env, cwd=cwd, timeout=timeout)
    if p.returncode != 0:
        raise AssertionError(f"nbconvert {args} failed ({p.returncode}):\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    return p


def execute(tmp: Path) -> tuple[Path, dict[str, str]]:
    """Write the notebook, execute it with ``jupyter nbconvert --to notebook --execute`` in a kernel
    whose kernelspec puts the NVML stand-in first; return the executed notebook and the environment."""
    tmp.mkdir(parents=True, exist_ok=True)
    nvml = build_nvml_standin(tmp / "nvml-standin")
    env = kernel_env(tmp)
    for k in ("LD_LIBRARY_PATH", "FAKE_NVML_SPEC", "FAKE_NVML_CONFIG", "CUDA_VISIBLE_DEVICES"):
        env.pop(k, None)
    jupyter = tmp / "jupyter"
    spec_dir = jupyter / "kernels" / KERNEL
    spec_dir.mkdir(parents=True, exist_ok=True)
    (spec_dir / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python (cudnn-magic export test, NVML stand-in)", "language": "python",
        "env": {"LD_LIBRARY_PATH": str(nvml), "FAKE_NVML_SPEC": spec_string(NVML_SPEC)}}))
    env["JUPYTER_PATH"] = str(jupyter)
    env["CUDNN_MAGIC_STATE_DIR"] = str(tmp / "state")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src) for src in CELLS]
    nb.metadata["kernelspec"] = {"name": KERNEL, "display_name": KERNEL, "language": "python"}
    src = tmp / "exported.ipynb"
    nbformat.write(nb, src)
    nbconvert(["--to", "notebook", "--execute", "--allow-errors", f"--ExecutePreprocessor.kernel_name={KERNEL}",
               "--ExecutePreprocessor.timeout=300", "--output", "executed.ipynb", str(src)], env, tmp)
    return tmp / "executed.ipynb", env


def export(executed: Path, fmt: str, env: dict[str, str]) -> Path:
    """``jupyter nbconvert --to FMT`` of the executed notebook; the path of the file written."""
    ext = {"html": ".html", "markdown": ".md", "asciidoc": ".asciidoc", "rst": ".rst"}[fmt]
    nbconvert(["--to", fmt, str(executed)], env, executed.parent)
    return executed.with_suffix(ext)


def without_widget_manager(output: dict[str, Any]) -> str:
    """What a front end without a widget manager shows for one output: it drops the widget view
    and takes the richest type it can draw (HTML, else plain text), as VS Code does when its
    widget renderer is not loaded. Streams and errors are shown as their text."""
    kind = output.get("output_type")
    if kind == "stream":
        return output.get("text", "")
    if kind == "error":
        return f"{output.get('ename')}: {output.get('evalue')}"
    data = {k: v for k, v in (output.get("data") or {}).items() if k != WIDGET_VIEW}
    for mime in ("text/html", "text/plain"):
        if mime in data:
            value = data[mime]
            return "".join(value) if isinstance(value, list) else str(value)
    return ""


def cell_outputs(executed: Path) -> list[list[dict[str, Any]]]:
    nb = json.loads(executed.read_text(encoding="utf-8"))
    return [c.get("outputs", []) for c in nb["cells"] if c["cell_type"] == "code"]


__all__ = [
    "CELLS",
    "GPU_NAME",
    "KERNEL",
    "REPO",
    "WIDGET_VIEW",
    "cell_outputs",
    "execute",
    "export",
    "nbconvert",
    "os",
    "without_widget_manager",
]
