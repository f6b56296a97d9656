"""Every output of the extension reads where people read notebooks: nbconvert's HTML of an
executed notebook with no network, a front end without a widget manager (VS Code before its
widget renderer loads), text exports, and a terminal IPython.

The notebook (``tests/helpers/exported_notebook.py``) is executed for real by ``jupyter nbconvert
--execute`` in a kernel with the NVML stand-in, and exported by ``jupyter nbconvert --to html /
markdown / asciidoc``. Its outputs: ``%cudnn_fix restart-kernel`` (a preview with Apply),
``%cudnn_fix free-gpu-memory`` (advice), ``%gpu_memory`` (the live panel) and a failing cell's
annotation with its fix buttons. Each has the words a person needs (what will run, the advice,
the GPU's memory, the diagnosis and the ``%cudnn_fix`` line that acts without the buttons); each
must be readable in every one of them. The same page in a real browser, offline, is
``tests/browser/test_exported_html.py``.
"""

from __future__ import annotations

import html as html_lib
import re
import subprocess
import sys

import pytest

from helpers.exported_notebook import (
    CELLS,
    GPU_NAME,
    WIDGET_VIEW,
    cell_outputs,
    execute,
    export,
    without_widget_manager,
)
from helpers.nvml_standin import build_nvml_standin, spec_string
from helpers.support import kernel_env

pytestmark = [pytest.mark.kernel, pytest.mark.native]

#: What each cell must say wherever it is read (index into CELLS).
MUST_READ = {
    1: ["Restart the kernel", "%cudnn_fix restart-kernel --yes"],
    2: ["Free GPU memory", "torch.cuda.empty_cache()"],
    3: [GPU_NAME, "3.0 GiB of 80.0 GiB used"],
    4: ["cudnn-version-mismatch", "%cudnn_fix remove-shadowing-dir"],
}
REPR_WALL = re.compile(r"\b(?:Report|Diagnosis|Fix|FixPlan|MemoryPanel)\(\w+=|VBox\(|HBox\(|children=\(")


def _visible_text(page: str) -> str:
    """The text an HTML page shows without running any script: scripts, styles and tags removed,
    entities decoded, white space folded."""
    page = re.sub(r"(?is)<(script|style)\b.*?</\1>", " ", page)
    page = re.sub(r"(?s)<[^>]+>", " ", page)
    return re.sub(r"\s+", " ", html_lib.unescape(page))


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    return execute(tmp_path_factory.mktemp("exported"))


def test_the_notebook_really_has_widget_views_and_saved_widget_state(executed):
    """The premise: ``--execute`` saved the widgets' state, and the button rows and the memory panel
    are widget views (a front end with a widget manager draws them)."""
    path, _ = executed
    outs = cell_outputs(path)
    text = path.read_text(encoding="utf-8")
    assert "application/vnd.jupyter.widget-state+json" in text
    for i in (1, 3, 4):
        assert any(WIDGET_VIEW in (o.get("data") or {}) for o in outs[i]), (CELLS[i], outs[i])


def test_nbconvert_html_reads_offline(executed):
    """nbconvert draws each widget output as a script only the widget manager from unpkg.com can
    fill; what a person must read is in the outputs beside them, which it draws as HTML."""
    path, env = executed
    page = export(path, "html", env).read_text(encoding="utf-8")
    assert "unpkg.com" in page and 'type="application/vnd.jupyter.widget-view+json"' in page  # the premise
    visible = _visible_text(page)
    for i, words in MUST_READ.items():
        for w in words:
            assert w in visible, (CELLS[i], w)
    assert not REPR_WALL.search(visible), REPR_WALL.search(visible)


def test_a_front_end_without_a_widget_manager_reads_every_output(executed):
    path, _ = executed
    for i, outs in enumerate(cell_outputs(path)):
        shown = _visible_text(" ".join(without_widget_manager(o) for o in outs))
        for w in MUST_READ.get(i, []):
            assert w in shown, (CELLS[i], w, shown[:800])
        assert not REPR_WALL.search(shown), (CELLS[i], shown[:800])
    # the widget outputs' own fallback says where the controls went (no repr, not empty)
    for outs in cell_outputs(path):
        for o in outs:
            data = o.get("data") or {}
            if WIDGET_VIEW in data:
                assert "widget manager" in "".join(data["text/plain"]) and "widget manager" in "".join(data["text/html"])


@pytest.mark.parametrize("fmt", ["markdown"])  # asciidoc and rst need pandoc
def test_text_exports_read(executed, fmt):
    path, env = executed
    text = _visible_text(export(path, fmt, env).read_text(encoding="utf-8"))
    for i, words in MUST_READ.items():
        for w in words:
            assert w in text, (fmt, CELLS[i], w)


def test_a_terminal_ipython_reads_the_same(tmp_path):
    """Terminal IPython has no kernel and no widgets: the same cells print text (``restart-kernel``
    says there is no kernel to restart; the annotation names the ``%cudnn_fix`` line)."""
    nvml = build_nvml_standin(tmp_path / "nvml")
    env = kernel_env(tmp_path)
    env.update(LD_LIBRARY_PATH=str(nvml), FAKE_NVML_SPEC=spec_string(
        {"gpus": 1, "name.0": GPU_NAME, "total.0": 80 << 30, "used.0": 3 << 30}))
    p = subprocess.run([sys.executable, "-m", "IPython", "--simple-prompt", "--no-banner", "--colors=NoColor"],
                       input="\n".join(CELLS) + "\nexit\n", capture_output=True, text=True, env=env, timeout=180,
                       cwd=tmp_path)
    out = p.stdout
    assert "restart-kernel: Restart the kernel" in out and "not running in a Jupyter kernel" in out, out[-3000:]
    assert "torch.cuda.empty_cache()" in out and GPU_NAME in out
    assert "cudnn-version-mismatch" in out and "%cudnn_fix remove-shadowing-dir" in out, out[-3000:]
    assert not REPR_WALL.search(out)
