"""Attacks on the capture, the exception hook and the fix journal in real kernels, rerun with
figures (not pass/fail: the tests do that).

Each attack runs in a real ipykernel through jupyter_client (tests/helpers/kernel_session.py), with the
extension loaded, using the same C stand-in writer as tests/kernel/test_capture_kernel.py (called
through ``ctypes.PyDLL``, so it holds the GIL):

* A1  a lone surrogate in an exception message: seconds until the ``execute_reply``;
* A3  a cell that writes ``--interrupt-mb`` MiB while holding the GIL, then sleeps, is
      interrupted as soon as its first output arrives, and the next cell runs at once: bytes of
      the interrupted cell under the next cell, bytes shown, seconds from interrupt to reply;
* A4  the helper SIGKILLed (by PID, from a shell) while sh, a Python subprocess, a fork child
      and 3,000 GIL-holding native writes go to fd 2: exit statuses and failed writes;
* A5  the helper's memory (VmRSS/VmHWM, MiB) before and after a ``--big-mb`` MiB cell, and a
      ``--gil-mb`` MiB GIL-holding write (seconds, or "hung" after the timeout);
* A12 two processes applying a fix to one kernel.json at once, ``--trials`` times: how often
      both said "done", edits lost, journal entries lost, corrupt JSON.

Usage: .venv/bin/python benchmarks/attacks_kernel.py [--interrupt-mb 200] [--big-mb 200]
       [--gil-mb 300] [--trials 10]
Prints a markdown table. Takes a few minutes (most of it is the notebook side receiving the
output: hundreds of MB of stream messages).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# the tests' helpers, and the two test modules whose C sources and cells the attacks reuse
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "kernel"), str(ROOT / "tests" / "unit" / "fixes")]

from test_capture_kernel import CUDNN_LINE, WRITER_C, _rss_kib, _setup  # noqa: E402
from test_fix_journal import RACER  # noqa: E402

from helpers.kernel_session import Cell, KernelSession  # noqa: E402
from helpers.support import build_c_library  # noqa: E402


def a1(tmp: Path, lib: Path) -> str:
    ks = KernelSession(tmp / "a1")
    try:
        _setup(ks, lib)
        t0 = time.monotonic()
        try:
            c = ks.run("import json\nraise RuntimeError('x' + json.loads('\"\\\\ud800\"'))", timeout=60)
            return f"reply after {time.monotonic() - t0:.2f} s (status {c.reply['status']}, {c.reply.get('ename')})"
        except TimeoutError:
            return "no reply in 60 s (hung)"
    finally:
        ks.close()


def a3(tmp: Path, lib: Path, mb: int) -> str:
    ks = KernelSession(tmp / "a3")
    try:
        _setup(ks, lib)
        first = ks.send(f"lib.standin_spam({mb} << 20)\nlib.standin_log({CUDNN_LINE.encode()!r})\n"
                        "for i in range(60000):\n    time.sleep(0.01)")
        while not any(m["msg_type"] == "stream" for m in ks.outputs.get(first, [])):
            ks._pump(0.05)
        t0 = time.monotonic()
        ks.km.interrupt_kernel()
        reply = ks.wait(first, timeout=600, idle=False)
        dt = time.monotonic() - t0
        second = ks.send("print('NEXT CELL')")
        nxt = Cell(ks, second, ks.wait(second, timeout=600))
        ks.settle(2.0)
        shown = len(Cell(ks, first, reply).stream())
        leaked = len(nxt.stream())
        return (f"{leaked / 1e6:.1f} MB under the next cell; {shown / 1e6:.1f} MB shown in the interrupted cell; "
                f"reply {dt:.2f} s after the interrupt")
    finally:
        ks.close()


def a4(tmp: Path, lib: Path) -> str:
    ks = KernelSession(tmp / "a4")
    try:
        helper = _setup(ks, lib)
        c = ks.run(
            f"killer = subprocess.Popen(['sh', '-c', 'sleep 0.5; kill -KILL {helper}'])\n"
            "shp = subprocess.Popen(['sh', '-c', 'i=0; while [ $i -lt 150 ]; do echo \"sh-line $i\" >&2; "
            "i=$((i+1)); sleep 0.01; done'])\n"
            "pyp = subprocess.Popen([sys.executable, '-c', 'import sys, time\\nfor i in range(1500):\\n"
            "    print(\"py-line\", i, file=sys.stderr, flush=True)\\n    time.sleep(0.001)'])\n"
            "pid = os.fork()\n"
            "if pid == 0:\n"
            "    try:\n"
            "        for i in range(1500):\n"
            "            os.write(2, b'fork-line %d\\n' % i)\n"
            "            time.sleep(0.001)\n"
            "    finally:\n"
            "        os._exit(0)\n"
            "failed = lib.standin_lines(3000, 500)\nkiller.wait()\n"
            "print(json.dumps({'sh': shp.wait(), 'py': pyp.wait(), 'fork': os.waitstatus_to_exitcode("
            "os.waitpid(pid, 0)[1]), 'native_failed': failed}))", timeout=300)
        ks.run("pass")
        st = json.loads(c.stream("stdout").strip().splitlines()[-1])
        told = sum(1 for m in ks.outputs.values() for x in m if x["msg_type"] == "stream"
                   and "capture helper" in x["content"]["text"])
        return (f"sh exit {st['sh']}, Python subprocess exit {st['py']}, fork child exit {st['fork']}, "
                f"{st['native_failed']} of 3,000 native writes failed; told {told}x")
    finally:
        ks.close()


def a5(tmp: Path, lib: Path, big: int, gil: int) -> str:
    ks = KernelSession(tmp / "a5")
    try:
        helper = _setup(ks, lib)
        before = _rss_kib(helper)
        t0 = time.monotonic()
        c = ks.run(f"lib.standin_spam({big} << 20)", timeout=900)
        t_big = time.monotonic() - t0
        after = _rss_kib(helper)
        t0 = time.monotonic()
        try:
            c2 = ks.run(f"print('failed', lib.standin_spam({gil} << 20))", timeout=900)
            gil_s = f"{time.monotonic() - t0:.1f} s, {len(c2.stream()) / 1e6:.0f} MB shown"
        except TimeoutError:
            gil_s = "hung (no reply in 900 s)"
        end = _rss_kib(helper)
        return (f"RSS {before['VmRSS'] / 1024:.0f} MiB before; after the {big} MiB cell ({t_big:.1f} s, "
                f"{len(c.stream()) / 1e6:.0f} MB shown) RSS {after['VmRSS'] / 1024:.0f} MiB, peak "
                f"{after['VmHWM'] / 1024:.0f} MiB; {gil} MiB holding the GIL: {gil_s}; peak {end['VmHWM'] / 1024:.0f} MiB")
    finally:
        ks.close()


def a12(tmp: Path, trials: int) -> str:
    t = tmp / "a12"
    for sub in ("jp/kernels/k", "data", "runtime", "state", "config"):
        (t / sub).mkdir(parents=True)
    spec = {"argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            "display_name": "k", "language": "python", "env": {"KEEP": "1"}}
    kj = t / "jp/kernels/k/kernel.json"
    pristine = (json.dumps(spec, indent=1) + "\n").encode()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "JUPYTER_PATH": str(t / "jp"), "JUPYTER_DATA_DIR": str(t / "data"),
           "JUPYTER_RUNTIME_DIR": str(t / "runtime"), "JUPYTER_CONFIG_DIR": str(t / "config"),
           "CUDNN_MAGIC_STATE_DIR": str(t / "state")}
    env.pop("JUPYTER_PREFER_ENV_PATH", None)
    (t / "racer.py").write_text(RACER)
    both = lost_edit = lost_entry = corrupt = 0
    entries_before = 0
    for i in range(trials):
        kj.write_bytes(pristine)
        go = t / f"go-{i}"
        ps = [subprocess.Popen([sys.executable, str(t / "racer.py"), w, str(go)], env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True) for w in ("tensorflow", "jax")]
        for p in ps:
            p.stdout.readline()
        go.touch()
        res = [json.loads(p.communicate(timeout=120)[0].strip().splitlines()[-1]) for p in ps]
        oks = sum(r["ok"] for r in res)
        both += oks == 2
        try:
            env_now = json.loads(kj.read_text())["env"]
        except ValueError:
            corrupt += 1
            continue
        lost_edit += oks - len({"TF_FORCE_GPU_ALLOW_GROWTH", "XLA_PYTHON_CLIENT_PREALLOCATE"} & set(env_now))
        journal = json.loads((t / "state/undo.json").read_text()) if (t / "state/undo.json").exists() else {}
        entries = len(journal.get("allow-memory-growth", []))
        lost_entry += oks - (entries - entries_before)
        entries_before = entries
    return (f"{trials} trials: both said done {both}, edits lost {lost_edit}, journal entries lost {lost_entry}, "
            f"corrupt JSON {corrupt}")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--interrupt-mb", type=int, default=200)
    ap.add_argument("--big-mb", type=int, default=200)
    ap.add_argument("--gil-mb", type=int, default=300)
    ap.add_argument("--trials", type=int, default=10)
    ap.add_argument("--only", default="a1,a3,a4,a5,a12")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="cudnn-magic-attacks-") as d:
        tmp = Path(d)
        lib = build_c_library(WRITER_C, tmp / "libstandin_writer.so")
        rows = []
        only = set(args.only.split(","))
        if "a1" in only:
            rows.append(("A1 lone surrogate in the message", a1(tmp, lib)))
        if "a3" in only:
            rows.append((f"A3 interrupt a {args.interrupt_mb} MiB cell", a3(tmp, lib, args.interrupt_mb)))
        if "a4" in only:
            rows.append(("A4 helper SIGKILLed under 4 writers", a4(tmp, lib)))
        if "a5" in only:
            rows.append(("A5 helper memory / GIL-held volume", a5(tmp, lib, args.big_mb, args.gil_mb)))
        if "a12" in only:
            rows.append(("A12 two kernels, one kernel.json", a12(tmp, args.trials)))
    print("| attack | result |\n|---|---|")
    for name, res in rows:
        print(f"| {name} | {res} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
