"""Fixtures for the real-browser tests: one JupyterLab server and one headless Chromium per session.

Real parts only (docs/facts.md "IPython and Jupyter behaviour", the real browser): JupyterLab on
127.0.0.1 with a random free port and a random token, started as ``python -m jupyterlab`` from this
interpreter with ``--allow-root``; temporary ``HOME``, ``JUPYTER_*``, ``JUPYTERLAB_*`` and
``IPYTHONDIR`` so nothing is written into the real home; kernelspecs created in the temporary
``JUPYTER_DATA_DIR`` (``argv[0]`` is ``sys.executable``, ``env`` carries what each test needs:
the NVML stand-in on ``LD_LIBRARY_PATH``, a cuDNN stand-in directory shadowing the real wheel);
Debian's ``chromium`` driven by the ``playwright`` package (never ``playwright install``) through
``launch_persistent_context`` with a fresh profile.

The server, its kernels and the browser are always stopped, also when a test fails. Without
``chromium``, ``playwright`` or ``jupyterlab`` every browser test is skipped with the reason.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from helpers.support import REPO, kernel_env, real_cudnn_lib_dir

try:  # the NVML stand-in helpers (tests/helpers/nvml_standin.py)
    from helpers.nvml_standin import build_nvml_standin, spec_string
except ImportError:  # pragma: no cover
    build_nvml_standin = None  # type: ignore[assignment]
    spec_string = None  # type: ignore[assignment]

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
VIEWPORT = {"width": 1100, "height": 900}
SERVER_START_TIMEOUT_S = 90
KERNEL_IDLE_TIMEOUT_MS = 90_000
CELL_TIMEOUT_MS = 120_000

# Kernelspecs the tests use (names in the temporary JUPYTER_DATA_DIR).
KERNEL_PLAIN = "cm-plain"
KERNEL_SHADOW = "cm-shadow"
KERNEL_NVML = "cm-nvml"

# The stand-in GPU whose used memory grows by STEP on every NVML memory query.
# The kernel itself holds 1.2 GiB of it ("self" = the calling process).
NVML_SPEC = {"gpus": 1, "name.0": "NVIDIA Stand-in GPU 0", "total.0": 80 << 30, "used.0": 3 << 30,
             "step.0": 700 << 20, "procs.0": f"self:{int(1.2 * (1 << 30))}"}


def _chromium() -> str | None:
    for cand in (os.environ.get("CUDNN_MAGIC_CHROMIUM"), shutil.which("chromium"), "/usr/bin/chromium",
                 shutil.which("chromium-browser")):
        if cand and os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    return None


def _missing() -> str | None:
    """Why the browser tests cannot run here, or None."""
    import importlib.util

    if importlib.util.find_spec("playwright") is None:
        return "the playwright package is not installed (pip install playwright; never `playwright install`)"
    if importlib.util.find_spec("jupyterlab") is None:
        return "jupyterlab is not installed (pip install jupyterlab)"
    if _chromium() is None:
        return "no chromium executable (apt-get install -y chromium)"
    if importlib.util.find_spec("ipykernel") is None:
        return "ipykernel is not installed"
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _write_kernelspec(data_dir: Path, name: str, display: str, env: dict[str, str]) -> Path:
    d = data_dir / "kernels" / name
    d.mkdir(parents=True, exist_ok=True)
    spec = {"argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            "display_name": display, "language": "python", "env": env}
    path = d / "kernel.json"
    path.write_text(json.dumps(spec, indent=1) + "\n")
    return path


class Lab:
    """A running JupyterLab server (see :func:`lab`)."""

    def __init__(self, root: Path, tmp: Path, port: int, token: str, env: dict[str, str]) -> None:
        self.root = root
        self.tmp = tmp
        self.port = port
        self.token = token
        self.env = env
        self.base = f"http://127.0.0.1:{port}"
        self.proc: subprocess.Popen | None = None
        self.log_path = tmp / "jupyterlab.log"
        self.kernelspecs: dict[str, Path] = {}
        self.paths: dict[str, Path] = {}

    # -- REST -------------------------------------------------------------------------------------
    def api(self, method: str, path: str, body: Any = None, timeout: float = 10) -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Authorization": f"token {self.token}",
                                              "Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            raw = resp.read()
        return json.loads(raw) if raw else None

    def delete_kernels(self) -> None:
        """Shut down every kernel (and session) so none of a test's threads live into the next."""
        try:
            for s in self.api("GET", "/api/sessions") or []:
                try:
                    self.api("DELETE", f"/api/sessions/{s['id']}", timeout=30)
                except Exception:  # noqa: BLE001
                    pass
            for k in self.api("GET", "/api/kernels") or []:
                try:
                    self.api("DELETE", f"/api/kernels/{k['id']}", timeout=30)
                except Exception:  # noqa: BLE001
                    pass
        except Exception:  # noqa: BLE001 - server already gone
            pass

    def url(self, name: str) -> str:
        """A notebook opened in its own, reset workspace (research notes §5)."""
        return f"{self.base}/lab/workspaces/w_{name}/tree/{name}.ipynb?reset&token={self.token}"

    def write_notebook(self, name: str, cells: list[str], kernel: str) -> Path:
        import nbformat

        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell(src) for src in cells]
        spec = json.loads(self.kernelspecs[kernel].read_text())
        nb.metadata["kernelspec"] = {"name": kernel, "display_name": spec["display_name"], "language": "python"}
        path = self.root / f"{name}.ipynb"
        nbformat.write(nb, str(path))
        return path

    def log_tail(self, n: int = 4000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-n:]
        except OSError:
            return ""

    # -- lifecycle --------------------------------------------------------------------------------
    def start(self) -> None:
        cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={self.port}",
               "--port-retries=0", f"--IdentityProvider.token={self.token}", f"--ServerApp.root_dir={self.root}",
               "--allow-root", "--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
               "--LabApp.extension_manager=readonly", "--ServerApp.shutdown_no_activity_timeout=0"]
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - the server's log while it runs; closed in stop()
        self.proc = subprocess.Popen(cmd, cwd=str(self.root), env=self.env, stdout=self._log,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + SERVER_START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"jupyter lab exited with {self.proc.returncode}:\n{self.log_tail()}")
            try:
                self.api("GET", "/api/status", timeout=2)
                return
            except (urllib.error.URLError, ConnectionError, OSError):
                time.sleep(0.2)
        raise RuntimeError(f"jupyter lab not ready after {SERVER_START_TIMEOUT_S} s:\n{self.log_tail()}")

    def stop(self) -> None:
        proc = self.proc
        if proc is None:
            return
        if proc.poll() is None:
            self.delete_kernels()
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait(timeout=10)
        self._log.close()
        self.proc = None


@pytest.fixture(scope="session")
def browser_ready() -> None:
    why = _missing()
    if why:
        pytest.skip(why)


@pytest.fixture(scope="session")
def lab(browser_ready: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """JupyterLab on 127.0.0.1 (random port and token) with three kernelspecs:

    * ``cm-plain``: this interpreter, nothing extra (test 5);
    * ``cm-shadow``: the demo's kernel (``scripts/run_quickstart.py``): ``LD_LIBRARY_PATH`` = the lib
      dir of the real ``nvidia-cudnn-jit-cu12`` 9.12.0.46 wheel (``tests/helpers/real_wheels.py``), which
      shadows this environment's 9.27 wheel (tests 1-3; the remove-shadowing-dir fix edits this
      kernel.json);
    * ``cm-nvml``: the NVML stand-in first on ``LD_LIBRARY_PATH`` at process start, one GPU whose
      used memory grows on every query (test 4).
    """
    tmp = tmp_path_factory.mktemp("browser")
    root = tmp / "notebooks"
    root.mkdir()
    env = kernel_env(tmp)  # temp HOME/JUPYTER_*/IPYTHONDIR, repo on PYTHONPATH, no PYTEST_CURRENT_TEST
    for k in ("LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES", "FAKE_NVML_SPEC", "FAKE_NVML_CONFIG", "JUPYTER_PATH"):
        env.pop(k, None)
    home = Path(env["HOME"])
    settings = home / "lab-settings"
    (settings / "@jupyterlab" / "apputils-extension").mkdir(parents=True)
    # No "get notified about Jupyter news?" toast over the screenshots.
    (settings / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False}))
    # No build check on page load (it hashes the app dir for ~15 s of CPU on 2 cores).
    labconfig = Path(env["JUPYTER_CONFIG_DIR"]) / "labconfig"
    labconfig.mkdir(parents=True, exist_ok=True)
    (labconfig / "page_config.json").write_text(json.dumps({"buildCheck": False, "buildAvailable": False}))
    env.update(JUPYTERLAB_SETTINGS_DIR=str(settings), JUPYTERLAB_WORKSPACES_DIR=str(home / "lab-workspaces"),
               JUPYTER_PATH=str(home / "data"), CUDNN_MAGIC_STATE_DIR=str(home / "cudnn-magic-state"),
               PYTHONUNBUFFERED="1")

    lab = Lab(root, tmp, _free_port(), secrets.token_hex(16), env)
    data = Path(env["JUPYTER_DATA_DIR"])
    lab.kernelspecs[KERNEL_PLAIN] = _write_kernelspec(data, KERNEL_PLAIN, "Python (cudnn-magic test)", {})
    real = real_cudnn_lib_dir()
    if real is not None:
        lab.paths["real_cudnn"] = real
        try:
            from helpers.real_wheels import install_wheel

            old = install_wheel("nvidia-cudnn-jit-cu12", "9.12.0.46") / "nvidia" / "cudnn_jit" / "lib"
            lab.paths["old_cudnn"] = old
            lab.kernelspecs[KERNEL_SHADOW] = _write_kernelspec(
                data, KERNEL_SHADOW, "Python 3 (cudnn-magic demo: cuDNN 9.12 on LD_LIBRARY_PATH)",
                {"LD_LIBRARY_PATH": str(old)})
        except pytest.skip.Exception:
            pass
    if build_nvml_standin is not None:
        try:
            nvml = build_nvml_standin(tmp / "nvml-standin")
            lab.paths["nvml_standin"] = nvml
            lab.kernelspecs[KERNEL_NVML] = _write_kernelspec(
                data, KERNEL_NVML, "Python (NVML stand-in)",
                {"LD_LIBRARY_PATH": str(nvml), "FAKE_NVML_SPEC": spec_string(NVML_SPEC)})
        except (pytest.skip.Exception, subprocess.CalledProcessError):
            pass
    try:
        lab.start()
        yield lab
    finally:
        lab.stop()


@pytest.fixture(scope="session")
def browser(lab: Lab, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One headless Chromium (Playwright persistent context with a fresh profile)."""
    from playwright.sync_api import sync_playwright

    pw = sync_playwright().start()
    ctx = None
    try:
        ctx = pw.chromium.launch_persistent_context(
            user_data_dir=str(tmp_path_factory.mktemp("chrome-profile")), executable_path=_chromium(),
            headless=True, args=CHROMIUM_ARGS, viewport=VIEWPORT)
        ctx.set_default_timeout(60_000)
        yield ctx
    finally:
        try:
            if ctx is not None:
                ctx.close()
        finally:
            pw.stop()


class Notebook:
    """A notebook open in its own JupyterLab workspace, driven like a person would."""

    def __init__(self, page: Any, lab: Lab, name: str) -> None:
        self.page = page
        self.lab = lab
        self.name = name

    @property
    def panel(self) -> Any:
        return self.page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)")

    def cell(self, i: int) -> Any:
        return self.panel.locator(".jp-Notebook .jp-Cell").nth(i)

    def output(self, i: int) -> Any:
        return self.cell(i).locator(".jp-OutputArea")

    def wait_idle(self, timeout: int = KERNEL_IDLE_TIMEOUT_MS) -> None:
        self.page.locator("#jp-main-statusbar").get_by_text(re.compile(r"\bIdle\b")).wait_for(timeout=timeout)

    def open(self) -> None:
        self.page.goto(self.lab.url(self.name))
        self.cell(0).wait_for()
        self.wait_idle()
        # Collapse the file browser so outputs get the page's width (click its current tab).
        current = self.page.locator("#jp-left-stack:visible")
        if current.count():
            self.page.locator(".jp-SideBar.jp-mod-left .lm-TabBar-tab.lm-mod-current").first.click()
            current.wait_for(state="hidden")

    def prompt(self, i: int) -> str:
        return self.cell(i).locator(".jp-InputPrompt").inner_text().strip()

    def start(self, i: int) -> None:
        """Run cell ``i`` (click into its editor, Shift+Enter) without waiting for it."""
        self.cell(i).locator(".jp-InputArea-editor").click()
        self.page.keyboard.press("Shift+Enter")

    def wait_done(self, i: int, timeout: int = CELL_TIMEOUT_MS) -> None:
        """Wait until cell ``i`` shows an execution count (``[3]:``), i.e. it finished."""
        self.page.wait_for_function(
            """([sel, i]) => {
                const cells = document.querySelectorAll(sel);
                const p = cells[i] && cells[i].querySelector('.jp-InputPrompt');
                return p && /\\[\\d+\\]/.test(p.textContent);
            }""",
            arg=[".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell", i], timeout=timeout)

    def run(self, i: int, timeout: int = CELL_TIMEOUT_MS) -> Any:
        self.start(i)
        self.wait_done(i, timeout)
        return self.output(i)


@pytest.fixture
def notebook(lab: Lab, browser: Any) -> Iterator[Any]:
    """``open_nb(name, cells, kernel)``: writes the notebook, opens it in a new page in its own
    workspace and waits for the kernel to be idle. Afterwards the page is closed and every kernel
    is shut down."""
    pages: list[Any] = []

    def open_nb(name: str, cells: list[str], kernel: str = KERNEL_PLAIN) -> Notebook:
        if kernel not in lab.kernelspecs:
            pytest.skip(f"kernelspec {kernel} could not be built here (gcc or the real cuDNN wheel missing)")
        lab.write_notebook(name, cells, kernel)
        page = browser.new_page()
        page.cm_name = name
        pages.append(page)
        nb = Notebook(page, lab, name)
        nb.open()
        return nb

    try:
        yield open_nb
    finally:
        for p in pages:
            try:  # what the page looked like at the end, to look at when a test failed
                p.screenshot(path=str(lab.tmp / f"{p.cm_name}-last.png"), full_page=True)
            except Exception:  # noqa: BLE001
                pass
            try:
                p.close()
            except Exception:  # noqa: BLE001
                pass
        lab.delete_kernels()


@pytest.fixture(scope="session")
def shots_dir() -> Path:
    """Where the screenshots go: ``out/screenshots/``, so a test run leaves the checkout clean.

    ``CUDNN_MAGIC_SCREENSHOTS=docs`` (or any folder) writes them there instead: that is how the
    README's pictures in ``docs/`` are re-taken.
    """
    d = Path(os.environ.get("CUDNN_MAGIC_SCREENSHOTS") or (REPO / "out" / "screenshots"))
    if not d.is_absolute():
        d = REPO / d
    d.mkdir(parents=True, exist_ok=True)
    return d
