"""nbconvert's HTML of executed notebooks, opened in headless Chromium with no network: every
request that does not go to this machine is blocked (the page then cannot fetch the widget manager
from unpkg.com, as on a laptop offline or behind a firewall). What a person must read is visible;
the widget views simply stay empty.

Two pages: the export test's notebook (``tests/helpers/exported_notebook.py``: ``%cudnn_fix
restart-kernel``, ``%cudnn_fix free-gpu-memory``, ``%gpu_memory``'s live panel, an annotated failing
cell with its fix buttons), and the project's own ``out/quickstart.html`` written by
``scripts/demo.sh`` (``scripts/run_quickstart.py``).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest

from helpers.exported_notebook import GPU_NAME, execute, export
from helpers.support import REPO

pytestmark = pytest.mark.browser

LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1", ""}
SHOTS = REPO / "out" / "screenshots"  # for a person to look at; never the README's pictures


def _open_offline(browser: Any, page_path: Path) -> tuple[Any, list[str]]:
    """Open ``page_path`` with every non-local request aborted; returns the page and the blocked URLs."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    blocked: list[str] = []
    page = browser.new_page()

    def route(r: Any) -> None:
        url = urlparse(r.request.url)
        if url.scheme in ("file", "data", "about", "blob") or (url.hostname or "") in LOCAL_HOSTS:
            r.continue_()
        else:
            blocked.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    page.goto(page_path.as_uri())
    page.wait_for_load_state("load")
    page.wait_for_timeout(1500)  # give the page's own scripts the time to try (and fail) to load more
    return page, blocked


def _assert_visible(page: Any, words: list[str]) -> None:
    body = page.inner_text("body")  # only what is rendered: no script, nothing hidden
    for w in words:
        assert w in body, (w, body[-3000:])
        assert page.get_by_text(w, exact=False).first.is_visible(), w


def test_the_exported_notebook_reads_offline(browser, tmp_path):
    executed, env = execute(tmp_path / "nb")
    page_path = export(executed, "html", env)
    page, blocked = _open_offline(browser, page_path)
    try:
        assert any("unpkg.com" in u for u in blocked), blocked  # it tried to fetch the widget manager
        _assert_visible(page, ["Restart the kernel", "%cudnn_fix restart-kernel --yes", "Free GPU memory",
                               "torch.cuda.empty_cache()", GPU_NAME, "3.0 GiB of 80.0 GiB used",
                               "cudnn-version-mismatch", "%cudnn_fix remove-shadowing-dir"])
        body = page.inner_text("body")
        assert "VBox(" not in body and "HBox(" not in body
        page.screenshot(path=str(SHOTS / "exported_offline.png"), full_page=True)
    finally:
        page.close()


def test_the_demos_own_html_reads_offline(browser, tmp_path):
    out = tmp_path / "demo"
    p = subprocess.run([sys.executable, str(REPO / "scripts" / "run_quickstart.py"), "--out", str(out)],
                       capture_output=True, text=True, timeout=600, cwd=REPO)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    page_path = out / "quickstart.html"
    assert 'type="application/vnd.jupyter.widget-view+json"' in page_path.read_text(encoding="utf-8")  # the premise
    page, blocked = _open_offline(browser, page_path)
    try:
        assert any("unpkg.com" in u for u in blocked), blocked
        _assert_visible(page, ["cudnn-shadowed", "cudnn-version-mismatch", "%cudnn_fix remove-shadowing-dir"])
        page.screenshot(path=str(SHOTS / "quickstart_offline.png"), full_page=True)
    finally:
        page.close()
