"""Shared test helpers: C stand-ins built with gcc, the real cuDNN wheel, and real kernels.

Everything named ``standin`` here is a stand-in at the native boundary only (a tiny C library
that answers like the real one); nothing above the C ABI is faked.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
import time
from collections.abc import Iterable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
NATIVE_SRC = Path(__file__).resolve().parents[1] / "native"


def corpus_dir() -> Path:
    """``tests/fixtures/corpus``: the real error reports the diagnosis is judged on, each with the
    public thread it comes from (``SOURCES.md`` there). Inside the repository, so a clone with
    nothing beside it runs every test."""
    return Path(__file__).resolve().parents[1] / "fixtures" / "corpus"


def run_coroutine(coro):
    """``asyncio.run(coro)`` in a thread of its own: works even when this thread already runs
    an event loop (Playwright's sync API keeps one running for the browser tests' session)."""
    import asyncio
    import threading

    box: dict = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(coro)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller
            box["error"] = exc

    t = threading.Thread(target=target, name="test-asyncio")
    t.start()
    t.join()
    if "error" in box:
        raise box["error"]
    return box.get("value")


def have_gcc() -> bool:
    return shutil.which("gcc") is not None


def build_c_library(source: str, out: Path, soname: str | None = None, extra: Iterable[str] = ()) -> Path:
    """Compile C ``source`` into the shared library ``out`` (with ``soname``) using gcc.

    Skips the calling test when gcc is missing.
    """
    if not have_gcc():
        pytest.skip("gcc is needed to build the C stand-in")
    out.parent.mkdir(parents=True, exist_ok=True)
    src = out.parent / (out.name.replace(".", "_") + ".c")
    src.write_text(textwrap.dedent(source))
    cmd = ["gcc", "-shared", "-fPIC", "-O2", "-o", str(out), str(src)]
    if soname:
        cmd.insert(1, f"-Wl,-soname,{soname}")
    cmd.extend(extra)
    subprocess.run(cmd, check=True, capture_output=True)
    return out


CUDNN_STANDIN_C = r"""
/* Stand-in for libcudnn: answers the version queries like the real library.
   Built by the tests; CUDNN_STANDIN_{MAJOR,MINOR,PATCH} set at compile time. */
#include <stddef.h>
size_t cudnnGetVersion(void) {
#if STANDIN_MAJOR >= 9
  return STANDIN_MAJOR * 10000 + STANDIN_MINOR * 100 + STANDIN_PATCH;
#else
  return STANDIN_MAJOR * 1000 + STANDIN_MINOR * 100 + STANDIN_PATCH;
#endif
}
int cudnnGetProperty(int type, int *value) {
  if (!value) return 3;
  if (type == 0) *value = STANDIN_MAJOR; else if (type == 1) *value = STANDIN_MINOR;
  else if (type == 2) *value = STANDIN_PATCH; else return 3;
  return 0;
}
size_t cudnnGetCudartVersion(void) { return 12040; }
const char *cudnnGetErrorString(int status) { return status == 0 ? "CUDNN_STATUS_SUCCESS" : "CUDNN_STATUS_STANDIN"; }
"""


def build_cudnn_standin(directory: Path, version: str, soname: str | None = None) -> Path:
    """Build ``libcudnn.so.<major>`` (a stand-in) answering ``version`` ("9.1.0") in ``directory``."""
    major, minor, patch = (int(x) for x in version.split("."))
    soname = soname or f"libcudnn.so.{major}"
    return build_c_library(
        CUDNN_STANDIN_C,
        directory / soname,
        soname=soname,
        extra=[f"-DSTANDIN_MAJOR={major}", f"-DSTANDIN_MINOR={minor}", f"-DSTANDIN_PATCH={patch}"],
    )


def real_cudnn_lib_dir() -> Path | None:
    """The real cuDNN 9 from the ``nvidia-cudnn-jit-cu12`` (or ``nvidia-cudnn-cu12``) wheel."""
    for sub in ("nvidia/cudnn_jit/lib", "nvidia/cudnn/lib"):
        for base in {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}:
            d = Path(base) / sub
            if (d / "libcudnn.so.9").exists() and (d / "libcudnn_graph.so.9").exists():
                return d
    return None


def require_real_cudnn() -> Path:
    d = real_cudnn_lib_dir()
    if d is None:
        pytest.skip("real cuDNN wheel not installed: pip install --no-deps nvidia-cudnn-jit-cu12")
    return d


def kernel_env(tmp: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """Environment for a test kernel: temp HOME/JUPYTER_*/IPYTHONDIR, no PYTEST_CURRENT_TEST
    (ipykernel turns its fd capture off when it sees it), repo on PYTHONPATH."""
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}
    home = tmp / "home"
    for sub in ("runtime", "data", "config", "ipython"):
        (home / sub).mkdir(parents=True, exist_ok=True)
    env.update(
        HOME=str(home),
        JUPYTER_RUNTIME_DIR=str(home / "runtime"),
        JUPYTER_DATA_DIR=str(home / "data"),
        JUPYTER_CONFIG_DIR=str(home / "config"),
        IPYTHONDIR=str(home / "ipython"),
        PYTHONPATH=os.pathsep.join([str(REPO)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]),
        PYDEVD_DISABLE_FILE_VALIDATION="1",
    )
    if extra:
        env.update(extra)
    return env


def run_notebook(cells: list[str], tmp: Path, env: dict[str, str] | None = None, timeout: int = 120,
                 allow_errors: bool = True, save_as: Path | None = None, replies: dict | None = None):
    """Execute ``cells`` in a real ipykernel through nbclient and return the executed notebook.

    The kernel runs this interpreter (``sys.executable``) with :func:`kernel_env`. ``replies``,
    when given, receives each cell's ``execute_reply`` content by cell index (``status`` "ok" or
    "error", with ``ename``/``evalue``: what a front end's Run All stops on; a ``UsageError``
    leaves only a stderr line among the outputs).
    """
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src) for src in cells]
    hooks = {} if replies is None else {
        "on_cell_executed": lambda cell, cell_index, execute_reply: replies.__setitem__(cell_index,
                                                                                       execute_reply["content"])}
    client = NotebookClient(
        nb, timeout=timeout, kernel_name="python3", allow_errors=allow_errors,
        resources={"metadata": {"path": str(tmp)}}, **hooks,
    )
    # nbclient hands extra execute() kwargs to KernelManager.start_kernel (Popen env).
    client.execute(env=kernel_env(tmp, env))
    if save_as is not None:
        nbformat.write(nb, str(save_as))
    return nb


def outputs_text(cell) -> str:
    """All text of a cell's outputs (stream text, text/plain, text/html, error traceback)."""
    parts: list[str] = []
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream":
            parts.append(out.get("text", ""))
        elif out.get("output_type") == "error":
            parts.append("\n".join(out.get("traceback", [])))
            parts.append(f"{out.get('ename')}: {out.get('evalue')}")
        else:
            data = out.get("data", {})
            for mime in ("text/plain", "text/html", "application/json"):
                if mime in data:
                    parts.append(str(data[mime]))
    return "\n".join(parts)


def ended_meta(record: Path, timeout_s: float = 10.0) -> dict:
    """The capture helper's ``meta.json`` in the crash-record folder ``record`` once it says
    ``ended`` (the helper outlives the process it watched by a moment), or as it last read after
    ``timeout_s`` seconds ({} when it never parsed)."""
    meta: dict = {}
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            meta = json.loads((record / "meta.json").read_text())
        except (OSError, ValueError):
            meta = {}
        if meta.get("ended"):
            break
        time.sleep(0.02)
    return meta


def python_has_module(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


def kernelspec_python() -> str:
    return sys.executable


def glob_one(pattern: str) -> str | None:
    hits = glob.glob(pattern)
    return hits[0] if hits else None


# --------------------------------------------------------------------------- an unprivileged child

NOBODY = 65534  # uid and gid of ``nobody``/``nogroup`` on Debian and most Linux systems

_unprivileged_ok: str | None = None  # "" when a child as nobody imports this checkout, else why not

# What the child says first: its uid, its effective capabilities and the package it imported.
_PROBE = ("import os, cudnn_magic\n"
          "cap = [l.split()[1] for l in open('/proc/self/status') if l.startswith('CapEff:')]\n"
          "print(os.getuid(), int(cap[0], 16) if cap else 0, cudnn_magic.__file__)")


def world_readable_dir(prefix: str = "cudnn-magic-nobody-") -> Path:
    """A fresh folder under the system temp dir that ``nobody`` may enter and list (mode 0755;
    pytest's own ``tmp_path`` lies under a 0700 ``pytest-of-root``). The caller removes it."""
    import tempfile

    d = Path(tempfile.mkdtemp(prefix=prefix))
    d.chmod(0o755)
    return d


def _drop() -> list[str]:
    """The command prefix that runs a program as ``nobody`` with no supplementary groups and no
    capabilities: ``setpriv`` (util-linux), which keeps its capabilities until the ``execve``, so an
    interpreter that only root may reach (this venv's links into a 0700 ``/root``) still starts;
    the program then runs with none (the child checks: ``CapEff`` 0). Empty when this process is
    not root: it is unprivileged already."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("dropping to nobody needs setpriv (util-linux), which is not installed")
    return [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]


def unprivileged_env(home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_CURRENT_TEST", "LD_LIBRARY_PATH")}
    env.update(HOME=str(home), PYTHONPATH=str(REPO), PYTHONDONTWRITEBYTECODE="1")
    env.update(extra or {})
    return env


def require_unprivileged_child() -> None:
    """Skip the calling test, with the precise reason, unless a child dropped to ``nobody`` (when
    this process is root) starts this interpreter, holds no capability, and imports this
    checkout's ``cudnn_magic`` (its files must be readable by others). Checked once per session."""
    global _unprivileged_ok
    if _unprivileged_ok is None:
        home = world_readable_dir()
        want_uid = NOBODY if os.geteuid() == 0 else os.getuid()
        want = str(REPO / "cudnn_magic" / "__init__.py")
        try:
            r = subprocess.run([*_drop(), sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=60,
                               env=unprivileged_env(home), cwd=str(home), stdin=subprocess.DEVNULL)
            got = r.stdout.split()
            if r.returncode != 0:
                _unprivileged_ok = (f"a child as uid {want_uid} cannot import cudnn_magic from {REPO} with "
                                    f"{sys.executable} (exit {r.returncode}: "
                                    f"{(r.stderr.strip().splitlines() or ['no message'])[-1]})")
            elif got != [str(want_uid), "0", want]:
                _unprivileged_ok = (f"a child meant to run as uid {want_uid} without capabilities said "
                                    f"{r.stdout.strip()!r} (uid, CapEff, package), not {want_uid} 0 {want}")
            else:
                _unprivileged_ok = ""
        except (OSError, subprocess.SubprocessError) as exc:  # setuid refused (no CAP_SETUID), a timeout...
            _unprivileged_ok = f"cannot start a child as uid {want_uid} here: {type(exc).__name__}: {exc}"
        finally:
            shutil.rmtree(home, ignore_errors=True)
    if _unprivileged_ok:
        pytest.skip(_unprivileged_ok)


def run_unprivileged(argv: list[str], home: Path, env: dict[str, str] | None = None,
                     timeout: int = 120) -> subprocess.CompletedProcess:
    """Run ``argv`` (text output) as ``nobody`` without capabilities when this process is root,
    else as this user, in ``home`` with :func:`unprivileged_env`. Skips as
    :func:`require_unprivileged_child` does."""
    require_unprivileged_child()
    return subprocess.run(_drop() + list(argv), capture_output=True, text=True, timeout=timeout, cwd=str(home),
                          env=unprivileged_env(home, env), stdin=subprocess.DEVNULL)


def paragraph(text: str, start: str) -> str:
    """The line of ``text`` that starts with ``start`` and its wrapped continuation lines (the next
    lines indented by two spaces, up to a ``why:`` line), joined into one line as before the text
    was fitted to the terminal (a path cut after a ``/`` is joined without a space)."""
    lines = text.splitlines()
    i = next(n for n, ln in enumerate(lines) if ln.startswith(start))
    out = lines[i]
    for ln in lines[i + 1:]:
        if not ln.startswith("  ") or ln.strip().startswith("why:") or not ln.strip():
            break
        out += ("" if out.endswith("/") else " ") + ln.strip()
    return out
