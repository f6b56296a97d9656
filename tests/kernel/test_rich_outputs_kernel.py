"""Every result and every widget output of cudnn-magic renders where there is no widget
manager: ``text/plain`` and ``text/html`` fallbacks that read like the report, never a wall
of dataclass reprs or ``VBox(children=(HBox(...``. A real ipykernel through nbclient (with
the NVML stand-in for ``%gpu_memory``), then nbconvert's HTML of the executed notebook, as a
person opening it without the widget state (or in VS Code without the widget manager) sees it.
"""

from __future__ import annotations

import re

import pytest

from helpers.nvml_standin import nvml_standin, spec_string  # noqa: F401
from helpers.support import run_notebook

pytestmark = [pytest.mark.kernel, pytest.mark.native]

WIDGET = "application/vnd.jupyter.widget-view+json"
REPR_WALL = re.compile(r"\b(?:Report|Diagnosis|LibraryCopy|Fix|FixPlan|FixResult)\(\w+=|VBox\(|HBox\(|children=\(")

CUDNN_CELL = (
    "import ctypes\n"
    "line = b\"E0000 00:00:1700000000.000000   4242 cuda_dnn.cc:535] Loaded runtime CuDNN library: 9.1.0 but source "
    "was compiled with: 9.3.0.  CuDNN library needs to have matching major version and equal or higher minor "
    "version.\\n\"\n"
    "ctypes.CDLL(None).write(2, line, len(line))\n"
    "raise RuntimeError('DNN library initialization failed.')"
)


def _bundles(cell) -> list[dict]:
    return [o.get("data", {}) for o in cell.get("outputs", []) if o.get("output_type") in ("display_data", "execute_result")]


def test_results_and_widgets_have_text_and_html_fallbacks(tmp_path, nvml_standin):
    spec = {"gpus": 1, "total_mib": 16384, "used_mib": 1024}
    nb = run_notebook([
        "%load_ext cudnn_magic",
        "import cudnn_magic\ncudnn_magic.check()",
        "cudnn_magic.explain('Could not create cudnn handle: CUDNN_STATUS_NOT_INITIALIZED')",
        "cudnn_magic.explain('all good here')",
        "%cudnn_fix restart-kernel",
        CUDNN_CELL,
        "%gpu_memory",
        "%gpu_memory --stop",
    ], tmp_path, env={"LD_LIBRARY_PATH": str(nvml_standin), "FAKE_NVML_SPEC": spec_string(spec)},
        save_as=tmp_path / "executed.ipynb")
    cells = nb.cells
    for i in (1, 2, 3):
        data = _bundles(cells[i])
        assert data and "text/html" in data[-1] and "text/plain" in data[-1], (i, cells[i].outputs)
        assert not REPR_WALL.search(data[-1]["text/plain"]), data[-1]["text/plain"][:500]
    assert "cuDNN" in _bundles(cells[1])[-1]["text/plain"]
    assert "cudnn-init-failed" in _bundles(cells[2])[-1]["text/plain"]
    assert "nothing cuDNN-related" in _bundles(cells[3])[-1]["text/plain"]
    # every widget output carries a one-line fallback saying where its controls went
    widget_outputs = [(i, d) for i in (4, 5, 6) for d in _bundles(cells[i]) if WIDGET in d]
    assert {i for i, _ in widget_outputs} == {4, 5, 6}, [c.outputs for c in cells[4:7]]
    for i, d in widget_outputs:
        assert "text/html" in d and d["text/html"].strip(), (i, d.keys())
        assert not REPR_WALL.search(d.get("text/plain", "")), (i, d.get("text/plain"))
        assert not REPR_WALL.search(d["text/html"]), (i, d["text/html"][:300])
    # what the widget offered is said in a plain output of its own, just above it
    for i in (4, 5, 6):
        outs = _bundles(cells[i])
        w = next(k for k, d in enumerate(outs) if WIDGET in d)
        assert w > 0 and WIDGET not in outs[w - 1] and outs[w - 1]["text/html"].strip(), (i, outs)
    fix_html = _bundles(cells[4])[0]["text/html"]
    assert "restart-kernel" in fix_html and "Restart" in fix_html
    assert "GPU 0" in _bundles(cells[6])[0]["text/plain"]
    # nbconvert's HTML of the saved notebook (no widget state): the fallbacks, not reprs
    from nbconvert import HTMLExporter

    body, _ = HTMLExporter().from_filename(str(tmp_path / "executed.ipynb"))
    assert "VBox(" not in body and "HBox(" not in body and "Diagnosis(id=" not in body
    assert "restart-kernel" in body and "cudnn-init-failed" in body
