"""What a person sees in JupyterLab, driven in headless Chromium (real server, real kernels).

Tests 1-3 run the demo's scenario (``notebooks/quickstart.ipynb``, ``scripts/demo.sh``): a kernel
whose kernelspec puts the real cuDNN 9.12 wheel (``nvidia-cudnn-jit-cu12`` 9.12.0.46) first on
``LD_LIBRARY_PATH``, shadowing this environment's 9.27 wheel; their cells are the quickstart's own.

1. ``%load_ext cudnn_magic``, cuDNN loaded by its soname as XLA does, ``%cudnn_check``: the report
   names the 9.12 library the loader picked, its version (read from the mapped copy) and its owner.
2. The quickstart's failing cell (XLA's version check, logged to fd 2, then its error): the
   traceback, then the annotation (9.12.0 vs 9.27.0, the quoted log line, the live facts) and fix
   buttons; a fix button shows what to do.
3. The annotation's "remove-shadowing-dir" button shows the preview (the kernel.json diff), Apply
   shows what was done and how to undo it, and kernel.json really changed.
4. ``%gpu_memory`` on the NVML stand-in (used memory grows on every query) visibly updates while
   another cell runs a 5 s busy loop.
5. A cell that writes TensorFlow's "Check failed ... Failed to set cuDNN stream." line and aborts
   the kernel; after JupyterLab's auto-restart the crash explanation appears.

Screenshots of 1-5 go to ``out/screenshots/`` on every run; ``CUDNN_MAGIC_SCREENSHOTS=docs``
re-takes the README's tour in ``docs/``. Run: ``.venv/bin/python -m pytest -m browser tests/browser``.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

# Kernelspecs made by the ``lab`` fixture (conftest.py); not imported from there, since every
# conftest.py in this tree is a module named "conftest".
KERNEL_SHADOW, KERNEL_NVML = "cm-shadow", "cm-nvml"

pytestmark = pytest.mark.browser

CHECK_FAILED = ("F0000 00:00:1700000000.000000    4242 cuda_dnn.cc:1234] Check failed: status == "
                "CUDNN_STATUS_SUCCESS (7 vs. 0)Failed to set cuDNN stream.")


def _wait(locator, context, timeout: float = 60_000, state: str = "visible") -> None:
    """Wait for ``locator``; on timeout fail with the text ``context`` (an output area) shows."""
    from playwright.sync_api import TimeoutError as PwTimeout

    try:
        locator.wait_for(timeout=timeout, state=state)
    except PwTimeout:
        try:
            shown = context.inner_text(timeout=5_000)
        except Exception as exc:  # noqa: BLE001
            shown = f"<could not read: {exc}>"
        pytest.fail(f"timed out waiting for {locator} ({state}); the output shows:\n{shown}")


def _shot(page, locator, path: Path, bottom=None, pad: int = 6) -> None:
    """Screenshot ``locator`` (or, with ``bottom``, the region from ``locator``'s top to
    ``bottom``'s bottom, as wide as ``locator``) into ``path``. The viewport is made tall enough
    for the whole region first: JupyterLab scrolls inside its notebook panel and renders only
    what is in view, so a taller element would come out cut or garbled."""
    size = page.viewport_size
    page.mouse.move(0, 0)  # no hover highlight in the picture
    try:
        top_box = locator.bounding_box()
        end_box = (bottom or locator).bounding_box()
        height = end_box["y"] + end_box["height"] - top_box["y"]
        page.set_viewport_size({"width": size["width"], "height": int(min(8000, max(size["height"], height + 300)))})
        locator.evaluate("e => e.scrollIntoView({block: 'start'})")
        page.wait_for_timeout(300)  # let the notebook re-render what came into view
        if bottom is None:
            locator.screenshot(path=str(path), animations="disabled")
            return
        top_box = locator.bounding_box()
        end_box = bottom.bounding_box()
        clip = {"x": max(0, top_box["x"] - pad), "y": max(0, top_box["y"] - pad), "width": top_box["width"] + 2 * pad,
                "height": end_box["y"] + end_box["height"] - top_box["y"] + 2 * pad}
        page.screenshot(path=str(path), clip=clip, animations="disabled")
    finally:
        page.set_viewport_size(size)


def _error_output(nb, i: int):
    """The cell's error output (the rendered traceback)."""
    return nb.output(i).locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']",
                                has_text="Traceback")


def _before(page, first, second) -> bool:
    """``first`` comes before ``second`` in the page (document order)."""
    a, b = first.element_handle(), second.element_handle()
    return bool(page.evaluate("([a, b]) => !!(a.compareDocumentPosition(b) & Node.DOCUMENT_POSITION_FOLLOWING)", [a, b]))


def _quickstart_cell(marker: str) -> str:
    """The source of the quickstart notebook's code cell that contains ``marker``."""
    nb = json.loads((Path(__file__).resolve().parents[2] / "notebooks" / "quickstart.ipynb").read_text())
    for cell in nb["cells"]:
        src = "".join(cell["source"])
        if cell["cell_type"] == "code" and marker in src:
            return src
    raise AssertionError(f"no quickstart cell with {marker!r}")


LOAD_CELL = _quickstart_cell('ctypes.CDLL("libcudnn.so.9"')
FAILING_CELL = _quickstart_cell("DNN library initialization failed")
FIX_BUTTONS = "button.widget-button"  # ipywidgets Buttons (not the "details" ToggleButton)


def _demo_kernel(lab):
    if KERNEL_SHADOW not in lab.kernelspecs:
        pytest.skip("needs the real cuDNN wheels (nvidia-cudnn-jit-cu12 9.27 installed, 9.12.0.46 from PyPI)")
    return lab.paths["old_cudnn"], lab.paths["real_cudnn"]


# --------------------------------------------------------------------------------------------- 1
def test_cudnn_check_report(notebook, lab, shots_dir):
    old, _real = _demo_kernel(lab)
    nb = notebook("check", ["%load_ext cudnn_magic", LOAD_CELL, "%cudnn_check"], kernel=KERNEL_SHADOW)
    nb.run(0)
    assert "Error" not in nb.output(0).inner_text()
    out1 = nb.run(1).inner_text()
    assert "91200" in out1, out1
    report = nb.run(2).locator(".cm-report")
    report.wait_for()
    table = report.locator("table").first
    table.wait_for()
    # the mapped library's row: the 9.12 copy the loader took from LD_LIBRARY_PATH, its version
    # read from the mapped copy, and the wheel it belongs to
    row = report.locator("tr", has_text="libcudnn.so.9").first
    cells = [c.strip() for c in row.locator("td").all_inner_texts()]
    assert any(str(old) in c.replace("\u200b", "") for c in cells), (old, cells)
    assert "9.12.0" in cells and "wheel: nvidia-cudnn-jit-cu12 9.12.0.46" in cells, cells
    # the environment's own 9.27 is on disk, not loaded
    assert "9.27.0" in report.inner_text() or "9.27.0" in report.inner_html()
    assert report.is_visible()
    # the legend of short path names reads as words: JupyterLab typesets the text between two "$"
    # of an HTML output as LaTeX, so "$VENV" must not be left to it
    assert "Paths: $VENV is " in report.inner_text(), report.inner_text()[-600:]
    assert report.locator("mjx-container, .MathJax, .MathJax_Preview").count() == 0
    _shot(nb.page, nb.cell(2), shots_dir / "cudnn_check.png")


# --------------------------------------------------------------------------------------------- 2
def test_error_annotation(notebook, lab, shots_dir):
    _demo_kernel(lab)
    nb = notebook("annotate", ["%load_ext cudnn_magic", LOAD_CELL, FAILING_CELL], kernel=KERNEL_SHADOW)
    nb.run(0)
    nb.run(1)
    out = nb.run(2)
    err = _error_output(nb, 2)
    _wait(err, out)
    assert "RuntimeError" in err.inner_text()
    ann = out.locator(".cudnn-magic-diagnosis")
    _wait(ann, out)
    title = ann.locator(".cm-diag b").first.inner_text().strip()
    assert "9.12.0" in title and "9.27.0" in title, title
    text = ann.inner_text()
    assert "Loaded runtime CuDNN library: 9.12.0 but source was compiled with: 9.27.0" in text
    assert "conda install" not in text, text
    buttons = out.locator(FIX_BUTTONS)
    _wait(buttons.first, out)
    # what a person reads: the traceback first, then the annotation, then its fix buttons
    assert _before(nb.page, err, ann), "the annotation came before the traceback"
    assert _before(nb.page, ann, buttons.first)
    _shot(nb.page, nb.cell(2), shots_dir / "annotation.png")
    # a fix button that can be clicked here shows its preview
    enabled = out.locator(f"{FIX_BUTTONS}:not([disabled])").first
    _wait(enabled, out)
    enabled.click()
    preview = out.locator(".cudnn-fix-plan").filter(visible=True)
    _wait(preview.first, out)
    assert preview.first.inner_text().strip()


# --------------------------------------------------------------------------------------------- 3
def test_fix_preview_and_apply(notebook, lab, shots_dir):
    """The annotated error offers "remove-shadowing-dir"; its button shows the preview (the
    kernel.json change), Apply makes it and shows what was done; kernel.json really changed."""
    old, _real = _demo_kernel(lab)
    kjson = lab.kernelspecs[KERNEL_SHADOW]
    before = json.loads(kjson.read_text())
    assert before["env"]["LD_LIBRARY_PATH"] == str(old)
    nb = notebook("fix", ["%load_ext cudnn_magic", LOAD_CELL, FAILING_CELL], kernel=KERNEL_SHADOW)
    nb.run(0)
    assert "91200" in nb.run(1).inner_text()
    out = nb.run(2)
    fix_button = out.locator(f"{FIX_BUTTONS}[title^='remove-shadowing-dir']")
    _wait(fix_button, out)
    assert fix_button.is_enabled(), fix_button.get_attribute("title")
    apply = out.locator(FIX_BUTTONS, has_text=re.compile(r"^\s*Apply\s*$")).filter(visible=True)
    assert apply.count() == 0, "a preview was open before any click"
    fix_button.click()
    preview = out.locator(".cudnn-fix-plan").filter(visible=True)
    _wait(preview, out)
    text = preview.inner_text()
    assert "remove-shadowing-dir" in text and "kernel.json" in text, text
    assert str(old) in text, text
    _wait(apply, out)
    assert apply.is_enabled()
    assert json.loads(kjson.read_text()) == before, "the preview changed kernel.json"
    # the picture: the fix buttons, the preview, Apply and Cancel
    _shot(nb.page, fix_button.locator("xpath=.."), shots_dir / "fix_preview.png", bottom=apply)
    apply.click()
    done = out.locator(".cudnn-fix-result")
    _wait(done, out)
    assert "Done: remove-shadowing-dir" in done.inner_text(), done.inner_text()
    assert "--undo remove-shadowing-dir" in done.inner_text()
    after = json.loads(kjson.read_text())
    assert after != before
    assert str(old) not in after.get("env", {}).get("LD_LIBRARY_PATH", ""), after.get("env")


# --------------------------------------------------------------------------------------------- 4
def test_gpu_memory_updates_during_busy_cell(notebook, shots_dir):
    nb = notebook("memory", [
        "%load_ext cudnn_magic",
        "%gpu_memory",
        "import time\nt0 = time.time()\nwhile time.time() - t0 < 5:  # busy for 5 s\n    pass\nprint('busy done')",
    ], kernel=KERNEL_NVML)
    nb.run(0)
    out = nb.run(1)
    label = out.locator(".widget-html-content", has_text="NVIDIA Stand-in GPU 0").first
    label.wait_for()
    nb.start(2)
    nb.page.wait_for_function(
        """(i) => { const c = document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell')[i];
                    return c && c.querySelector('.jp-InputPrompt').textContent.includes('*'); }""", arg=2)
    samples: list[str] = []
    shot_taken = False
    while "*" in nb.prompt(2):
        samples.append(label.inner_text().strip())
        if len(samples) == 6 and not shot_taken:  # the panel, and below it the cell still running [*]
            _shot(nb.page, nb.cell(1), shots_dir / "gpu_memory.png", bottom=nb.cell(2).locator(".jp-InputArea"))
            shot_taken = True
        time.sleep(0.5)
    nb.wait_done(2)
    assert "busy done" in nb.output(2).inner_text()
    distinct = list(dict.fromkeys(samples))
    assert len(distinct) >= 3, f"panel did not update while the cell ran: {samples}"
    assert shot_taken, f"the busy cell ended after {len(samples)} samples"


# --------------------------------------------------------------------------------------------- 5
def _crash_feature_present() -> bool:
    import importlib.util

    return any(importlib.util.find_spec(m) is not None for m in ("cudnn_magic.engines.crash", "cudnn_magic.forensics"))


def test_crash_explained_after_auto_restart(notebook, shots_dir):
    if not _crash_feature_present():
        pytest.skip("this checkout has no crash forensics")
    nb = notebook("crash", [
        "%load_ext cudnn_magic",
        "import ctypes\n"
        "libc = ctypes.CDLL(None)\n"
        f"line = {(CHECK_FAILED + chr(10)).encode()!r}\n"
        "libc.write(2, line, len(line))\n"
        "libc.abort()  # what TensorFlow's CHECK does",
        "%load_ext cudnn_magic",
    ])
    nb.run(0)
    nb.start(1)
    dialog = nb.page.locator(".jp-Dialog", has_text="Kernel Restarting")
    dialog.wait_for(timeout=60_000)
    dialog.locator("button", has_text="Ok").click()
    nb.wait_idle()
    out = nb.run(2)
    text = out.inner_text()
    assert "died" in text, text                                   # what happened
    assert "libc.abort()" in text, text                            # in which cell (its source)
    assert "Failed to set cuDNN stream" in text, text              # the native line it printed last
    assert "cudnn-stream-set-failed" in text, text                 # the diagnosis
    _shot(nb.page, nb.cell(2), shots_dir / "crash.png")
