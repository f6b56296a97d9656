"""Real-kernel tests of crash forensics, the deep probe and install-startup.

Kernels run through nbclient with ``AsyncKernelManager`` (the blocking manager hangs on a dead
kernel: docs/facts.md "IPython and Jupyter behaviour", kernel death). One kernel manager per variant; each variant runs
:data:`RUNS` times (``CUDNN_MAGIC_CRASH_RUNS``, default 5): crash -> ``restart_kernel(now=True)``
-> ``%load_ext cudnn_magic`` shows the report -> ``%reload_ext`` shows nothing ->
``restart_kernel(now=False)`` (graceful, as JupyterLab's "Restart Kernel") -> ``%load_ext``
shows nothing. The fatal paths are real: a gcc-built stand-in that writes TensorFlow's line and
calls ``abort()``, the real wheel's ``libcudnn.so.9`` without ``libcudnn_graph.so.9``, and a real
segfault.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

import pytest

from helpers.kernel_session import restart_and_wait, run_cells
from helpers.support import build_c_library, kernel_env, outputs_text, require_real_cudnn, run_coroutine

pytestmark = pytest.mark.kernel

RUNS = int(os.environ.get("CUDNN_MAGIC_CRASH_RUNS", "5"))

TF_LINE = ("F0000 00:00:1700000000.000000   4242 cuda_dnn.cc:1234] Check failed: status == "
           "CUDNN_STATUS_SUCCESS (7 vs. 0)Failed to set cuDNN stream.")

TF_ABORT_C = r"""
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
/* Stand-in for TensorFlow's fatal check in cuda_dnn.cc: the log line, then abort(). */
void standin_tf_check_failed(void) {
  const char *l = "%s\n*** Check failure stack trace: ***\n";
  ssize_t r = write(2, l, strlen(l));
  (void)r;
  abort();
}
""" % TF_LINE

GRAPH_MISMATCH_C = r"""
#include <stddef.h>
/* Stand-in libcudnn_graph.so.9 of another release: cuDNN 9.1.0 answering the 9.27 shim. */
size_t cudnnGetVersion(void) { return 90100; }
int cudnnGraphVersionCheck(void) { return 1002; /* CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH */ }
"""


async def _crash_cycles(tmp: Path, crash_cell: str, env_extra: dict | None = None) -> list[dict]:
    """RUNS times: crash, restart now, load (report), reload (nothing), graceful restart, load
    (nothing). Returns what each cycle saw."""
    from jupyter_client.manager import AsyncKernelManager

    km = AsyncKernelManager(kernel_name="python3")
    await km.start_kernel(env=kernel_env(tmp, env_extra), cwd=str(tmp))
    conn0 = km.connection_file
    seen = []
    try:
        for i in range(RUNS):
            t0 = time.monotonic()
            nb, died = await run_cells(km, ["%load_ext cudnn_magic", f"x = {40 + i}", crash_cell, "print('after crash')"])
            tries = await restart_and_wait(km, now=True)
            t1 = time.monotonic()
            nb2, died2 = await run_cells(km, [
                "%load_ext cudnn_magic",
                "import cudnn_magic.shell.crash_notice as _c, json\nr = _c.shown_record()\n"
                "print(json.dumps(None if r is None else {'key': r.key, 'ids': [d.id for d in r.diagnoses], "
                "'python_version': r.python_version, 'raw_faulthandler': r.faulthandler[-4000:]}))",
                "%reload_ext cudnn_magic",
                "import cudnn_magic.engines.crash as _c\nprint(f'last-{_c.last_crash() is not None}')",
            ])
            tries += await restart_and_wait(km, now=False)
            nb3, died3 = await run_cells(km, ["%load_ext cudnn_magic", "print('quiet')"])
            seen.append({
                "died": died, "crash_outputs": nb.cells[2].get("outputs"), "after_ran": nb.cells[3].get("execution_count"),
                "report": outputs_text(nb2.cells[0]), "shown": outputs_text(nb2.cells[1]),
                "reload": outputs_text(nb2.cells[2]), "last": outputs_text(nb2.cells[3]),
                "graceful": outputs_text(nb3.cells[0]), "quiet": outputs_text(nb3.cells[1]),
                "died2": died2 or died3, "cycle_s": round(t1 - t0, 2), "ready_tries": tries, "conn_same": km.connection_file == conn0,
            })
    finally:
        await km.shutdown_kernel(now=True)
    return seen


CUT_SHORT = "faulthandler's dump was cut short by a second fault"


def _check_cycles(seen: list[dict], *, source_snippet: str, must: list[str], diag_id: str | None,
                  stack: bool = True) -> None:
    """Every cycle must show the report once and only once. With ``stack``, the report must show
    the crashing thread's Python stack down to the cell (``in <module>`` of an ``ipykernel_``
    file), or say that faulthandler's dump was cut short: with ``all_threads=True`` CPython reads
    the other threads' frames while they run (ctypes released the GIL), and a second fault while
    reading them ends the dump before the crashing thread (seen 1 run in 10-25 here)."""
    ok = 0
    cut_short = 0
    problems = []
    for i, s in enumerate(seen):
        rep = s["report"]
        why = []
        if stack:
            if CUT_SHORT in rep:
                cut_short += 1
                if "newest frame each" not in rep and "most recent call first" not in rep:
                    why.append("cut-short dump shows no thread at all")
            elif not ("most recent call first" in rep and "/ipykernel_" in rep and "in <module>" in rep):
                why.append("the crashing thread's stack down to the cell is missing")
        if not s["died"]:
            why.append("the crash cell did not kill the kernel")
        if s["died2"]:
            why.append("the restarted kernel died")
        if not s["conn_same"]:
            why.append("connection file changed")
        if "the previous kernel died" not in rep:
            why.append("no crash report")
        if source_snippet not in rep:
            why.append("cell source missing")
        for m in must:
            if m not in rep:
                why.append(f"{m!r} missing")
        if diag_id is not None and diag_id not in rep:
            why.append(f"diagnosis {diag_id} missing")
        if "restart-kernel" in rep:  # never offered: this kernel is the restart
            why.append("the notice offered restart-kernel")
        if diag_id is None and "No cuDNN-related cause found" not in rep:
            why.append("unexpected diagnosis")
        if s["reload"].strip():
            why.append(f"%reload_ext showed something: {s['reload'][:200]!r}")
        if s["graceful"].strip():
            why.append(f"graceful restart showed something: {s['graceful'][:200]!r}")
        if "quiet" not in s["quiet"]:
            why.append(f"kernel after the graceful restart did not answer: {s['quiet'][:300]!r}")
        if "last-True" not in s["last"].replace("\n", ""):  # a stream may arrive in pieces
            why.append(f"last_crash() wrong: {s['last'][:300]!r}")
        if why:
            problems.append(f"run {i}: {'; '.join(why)}\n{rep[:3000]}\nthe record as the kernel read it: {s['shown'][:5000]}")
        else:
            ok += 1
    times = [s["cycle_s"] for s in seen]
    print(f"{ok}/{len(seen)} runs correct ({cut_short} with faulthandler's dump cut short); "
          f"crash->restart cycle {min(times)}-{max(times)} s")
    assert ok == len(seen), "\n\n".join(problems)


@pytest.fixture(scope="module")
def tf_abort_lib(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("standin")
    return build_c_library(TF_ABORT_C, d / "libstandin_tf_abort.so")


def test_tensorflow_check_failed_abort_is_explained_after_restart(tmp_path, tf_abort_lib):
    cell = f"import ctypes\nprint('about to crash')\nctypes.CDLL({str(tf_abort_lib)!r}).standin_tf_check_failed()"
    seen = run_coroutine(_crash_cycles(tmp_path, cell))
    # the crash cell itself gets nothing in the notebook (docs/facts.md), the next cell never runs
    assert all(s["after_ran"] is None for s in seen)
    _check_cycles(seen, source_snippet="standin_tf_check_failed()",
                  must=["Failed to set cuDNN stream", "Fatal Python error: Aborted"],
                  diag_id="cudnn-stream-set-failed")
    assert '"ids": ["cudnn-stream-set-failed"' in seen[0]["shown"]


def test_missing_graph_sublibrary_abort_is_explained_after_restart(tmp_path):
    real = require_real_cudnn()
    d = tmp_path / "cudnn_without_graph"
    d.mkdir()
    shutil.copy2(real / "libcudnn.so.9", d / "libcudnn.so.9")
    cell = f"import ctypes\nlib = ctypes.CDLL({str(d / 'libcudnn.so.9')!r})\nlib.cudnnGetVersion()"
    seen = run_coroutine(_crash_cycles(tmp_path, cell, {"LD_LIBRARY_PATH": ""}))
    _check_cycles(seen, source_snippet="lib.cudnnGetVersion()",
                  must=["Invalid handle. Cannot load symbol cudnnGetVersion", "Fatal Python error: Aborted"],
                  diag_id="cudnn-sublibrary-load-failed")


def test_segfault_is_reported_with_cell_and_stack(tmp_path):
    cell = "import ctypes\nprint('reading address 0')\nctypes.string_at(0)"
    seen = run_coroutine(_crash_cycles(tmp_path, cell))
    _check_cycles(seen, source_snippet="ctypes.string_at(0)",
                  must=["Fatal Python error: Segmentation fault"], diag_id=None)


# --------------------------------------------------------------------------- --deep


def _deep_dirs(tmp: Path) -> tuple[Path, Path]:
    real = require_real_cudnn()
    miss = tmp / "missing_graph"
    mix = tmp / "mixed_graph"
    for d in (miss, mix):
        d.mkdir()
        shutil.copy2(real / "libcudnn.so.9", d / "libcudnn.so.9")
    build_c_library(GRAPH_MISMATCH_C, mix / "libcudnn_graph.so.9", soname="libcudnn_graph.so.9")
    return miss, mix


@pytest.mark.parametrize("case", ["missing", "mismatched"])
def test_deep_check_reports_missing_or_mismatched_sublibrary_while_kernel_lives(tmp_path, case):
    from helpers.support import run_notebook

    miss, mix = _deep_dirs(tmp_path)
    d = miss if case == "missing" else mix
    nb = run_notebook([
        "%load_ext cudnn_magic",
        "r = %cudnn_check --deep --json\n"
        "for f in r['findings']:\n"
        "    if f['id'] == 'cudnn-sublibrary-load-failed' and f['title'].startswith('Loading'):\n"
        "        print('DEEP', f['title'], '::', f['detail'])",
        "import os; print('alive', os.getpid())",
    ], tmp_path, env={"LD_LIBRARY_PATH": str(d)})
    out = outputs_text(nb.cells[1])
    assert "alive" in outputs_text(nb.cells[2])
    line = next((ln for ln in out.splitlines() if ln.startswith("DEEP") and str(d) in ln), "")
    if case == "missing":
        assert "libcudnn_graph.so.9: not in" in line, out
        assert "SIGABRT" in line and "Invalid handle. Cannot load symbol cudnnGetVersion" in line, out
    else:
        assert "libcudnn_graph.so.9" in line and "CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH" in line, out


# --------------------------------------------------------------------------- install-startup


def test_install_startup_loads_extension_in_every_new_kernel_and_undo_removes_it(tmp_path):
    from helpers.support import run_notebook

    ipdir = tmp_path / "home" / "ipython"  # kernel_env's IPYTHONDIR
    probe = "print('loaded' if 'cudnn_magic' in get_ipython().extension_manager.loaded else 'not loaded')"
    cli = [sys.executable, "-m", "cudnn_magic", "install-startup", "--ipython-dir", str(ipdir)]
    import subprocess

    env = kernel_env(tmp_path)
    r = subprocess.run(cli, capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    cfg = ipdir / "profile_default" / "ipython_kernel_config.py"
    assert str(cfg) in r.stdout and cfg.exists()
    nb = run_notebook([probe, "import faulthandler; print('fh', faulthandler.is_enabled())"], tmp_path)
    assert "loaded" in outputs_text(nb.cells[0]) and "not loaded" not in outputs_text(nb.cells[0])
    assert "fh True" in outputs_text(nb.cells[1])
    r = subprocess.run([*cli, "--undo"], capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 0 and "Removed" in r.stdout, r.stdout + r.stderr
    assert not cfg.exists()
    nb = run_notebook([probe], tmp_path)
    assert "not loaded" in outputs_text(nb.cells[0])


def test_install_startup_then_crash_report_appears_in_first_cell_without_load_ext(tmp_path, tf_abort_lib):
    """Loaded from the startup config (no %load_ext anywhere): the restarted kernel shows the
    report at the top of its first cell's output."""
    from jupyter_client.manager import AsyncKernelManager

    from cudnn_magic.engines.startup import install_startup

    install_startup(profile_dir=tmp_path / "home" / "ipython" / "profile_default")

    async def go() -> str:
        km = AsyncKernelManager(kernel_name="python3")
        await km.start_kernel(env=kernel_env(tmp_path), cwd=str(tmp_path))
        try:
            _, died = await run_cells(km, ["print('start')",
                                      f"import ctypes\nctypes.CDLL({str(tf_abort_lib)!r}).standin_tf_check_failed()"])
            assert died
            await restart_and_wait(km, now=True)
            nb, _ = await run_cells(km, ["print('first cell')"])
            return outputs_text(nb.cells[0])
        finally:
            await km.shutdown_kernel(now=True)

    out = run_coroutine(go())
    assert "the previous kernel died" in out and "cudnn-stream-set-failed" in out, out
    assert out.index("the previous kernel died") < out.index("first cell"), out


@pytest.mark.parametrize("child", ["sleep", "python-ignoring-sigterm"])
def test_a_graceful_restart_with_a_child_process_running_is_no_crash(tmp_path, child):
    """A restart (``restart_kernel(now=False)``, JupyterLab's "Restart Kernel")
    while a ``subprocess.Popen`` child runs is no crash; it was once reported by the next kernel as
    "the previous kernel died": the kernel ended by a signal during the shutdown, after the request, and ``atexit``
    never ran. The request is the proof of a clean exit: the record is marked clean when it arrives."""
    cmd = (["sleep", "600"] if child == "sleep" else
           [sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"])

    async def go():
        from jupyter_client.manager import AsyncKernelManager

        km = AsyncKernelManager(kernel_name="python3")
        await km.start_kernel(env=kernel_env(tmp_path), cwd=str(tmp_path))
        try:
            nb, died = await run_cells(km, ["%load_ext cudnn_magic",
                                       f"import subprocess\np = subprocess.Popen({cmd!r})\nprint('child', p.pid)"])
            assert not died and "child" in outputs_text(nb.cells[1])
            await restart_and_wait(km, now=False)
            nb2, died2 = await run_cells(km, ["%load_ext cudnn_magic",
                                         "import cudnn_magic.engines.crash as _c\nprint(f'last-{_c.last_crash() is not None}')"])
            return outputs_text(nb2.cells[0]), outputs_text(nb2.cells[1]), died2
        finally:
            await km.shutdown_kernel(now=True)

    notice, last, died = run_coroutine(go())
    assert not died
    assert "the previous kernel died" not in notice, notice
    assert "last-False" in last.replace("\n", ""), last
