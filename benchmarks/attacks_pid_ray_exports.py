"""Attacks on ``check --pid``, ``check --ray`` / ``%cudnn_check --ray`` and the exported outputs, each
beside the bare reference where there is one (what one would do by hand, or the process's own
answer). Figures, not pass/fail (the tests do that: tests/cluster/test_process_check.py,
tests/cluster/test_ray_cluster.py): for each attack, what the reference does, what cudnn-magic does, whether
it held.

--pid (real processes; the hostile program and library are built here with gcc):

* P1  a module of the process's working directory and of its PYTHONPATH (``json.py``...): reference,
      its interpreter asked by hand (``python -c 'import sys, json'`` there); ours: no line but the
      process's own in the marker.
* P2  a program that is not Python but is named ``python3``: reference, running it to ask; ours: not run.
* P3  root checks a process of ``nobody`` whose ``pyvenv.cfg`` ``home`` points at a standard library of
      that user's, with a ``libcudnn.so.9`` whose constructor writes the marker on its
      ``LD_LIBRARY_PATH``: reference, root running that venv's python with ``-I -S``; ours: nothing as uid 0.
* P4  a FIFO ``.pth`` in its site-packages: reference, that interpreter starting (it reads .pth files).
* P5  a venv of Debian's ``/usr/bin/python3``: its own ``sys.path`` against the rebuilt one.
* P6  a link map entry the process wrote itself (a FIFO named ``libcudnn.so.9``): reference, ``/proc/PID/maps``.
* P7  another mount namespace where the folder holds 9.12 (9.27 here): reference, the process's own
      ``cudnnGetVersion``.
* P8  the cuDNN files replaced on disk after the load (as a reinstall does): reference, its own call.
* P9  a process that re-executes itself every 2 ms (odd images load cuDNN), 10 checks: each report
      one program (an odd image read before its dlopen has none yet; an even one never has one).
* P10 a kernel thread, P11 a process root may not read (process 1 of this VM), P12 128 KiB
      variables and command line, P13 3,000 libraries mapped (beside ``grep libcudnn /proc/PID/maps``),
      P14 an ``LD_LIBRARY_PATH`` folder whose name is not UTF-8, P15 processes that exit while read.

--ray (tests/helpers/ray_scenario.py in a private network namespace with only loopback, plus a bare
``ray.init`` to a port that accepts and never answers):

* R1  the CLI to that port: stderr; R2 the magic to it, then a 12 s cell: Ray's lines in that cell;
  R3/R4 the kernel interrupted mid-check (not connected / connected): next cell, probes after;
  R5 a node killed mid-check: ``--json`` stdout; R6 a runtime environment Ray refuses; R7 a hung node;
  R8 address typos (a port above 65535, spaces around it, empty).

Exports (real kernels): E1 a 3 MB error message, a 3 MB log line, 200,000 log lines: the size of
the outputs the extension adds, beside the user's own; E2 a notebook executed with a live memory
panel sampling every 0.1 s (the fastest allowed) and exported to HTML: the words a person needs, offline.

Usage: .venv/bin/python benchmarks/attacks_pid_ray_exports.py [--only P|R|E]
Prints a markdown table; about ten minutes (the Ray scenario takes four). Needs root for P3, P7, P11
and the Ray namespace, gcc for P2/P3/P9.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "tests" / "cluster")]

import test_process_check as H  # noqa: E402  (the tests' hostile programs and helpers)

from helpers.real_wheels import install_wheel  # noqa: E402
from helpers.support import NOBODY, world_readable_dir  # noqa: E402

PY = sys.executable
Row = tuple[str, str, bool]


def _marker_others(marker: Path, pids: set[int]) -> list[tuple[int, int]]:
    return [x for x in H._lines(marker) if x[0] not in pids]


def p1(tmp: Path) -> Row:
    marker = tmp / "m"
    work, extra = tmp / "work", tmp / "extra"
    for d in (work, extra):
        d.mkdir()
        (d / "json.py").write_text(H.MARK.format(path=str(marker)))
    env = H._plain_env(PYTHONPATH=str(extra))
    subprocess.run([PY, "-c", "import sys, json; print(sys.path)"], cwd=work, env=env, capture_output=True)
    bare = f"asked by hand: json.py ran: {bool(H._lines(marker))}"
    marker.unlink(missing_ok=True)
    t = H.Target([PY, "-c", "import sys; print(repr(sys.path), flush=True); sys.stdin.readline()"], env, work)
    try:
        rc, doc, _err, _ = H._check_cli(t.pid)
    finally:
        t.stop()
    others = _marker_others(marker, {t.pid})
    ok = not others and doc is not None and str(extra) in doc["process"]["python"]["sys_path"]
    return bare, f"exit {rc}, code run by the check: {len(others)}, PYTHONPATH on sys.path: {ok or not others}", ok


def p2(tmp: Path) -> Row:
    marker = tmp / "m"
    (tmp / "f.c").write_text(f'#define MARKER "{marker}"\n' + H.FAKE_PYTHON_C)
    (tmp / "bin").mkdir()
    exe = tmp / "bin" / "python3"
    subprocess.run(["gcc", "-O1", "-o", str(exe), str(tmp / "f.c")], check=True, capture_output=True)
    subprocess.run([str(exe), "-c", "import sys"], capture_output=True)
    bare = f"run to ask: it ran: {bool(H._lines(marker))}"
    marker.unlink(missing_ok=True)
    t = H.Target([str(exe), "train.py"], H._plain_env(), tmp)
    try:
        rc, doc, _err, _ = H._check_cli(t.pid)
    finally:
        t.stop()
    ran = bool(H._lines(marker))
    why = (doc or {}).get("process", {}).get("python_unavailable") or ""
    return bare, f"exit {rc}, it ran: {ran}, says 'not a CPython interpreter': {'not a CPython' in why}", not ran


def p3(tmp: Path) -> Row:
    if os.geteuid() != 0:
        return "-", "skipped: needs root", True
    python = next((os.path.realpath(c) for c in ("/usr/bin/python3", "/usr/local/bin/python3") if os.access(c, os.X_OK)), None)
    if python is None:
        return "-", "skipped: no system python3", True
    base = world_readable_dir()
    try:
        marker, _home, venv, lib = H.hostile_venv(base, python)
        subprocess.run([str(venv / "bin" / "python"), "-I", "-S", "-c", "pass"], capture_output=True)
        bare = f"root runs that venv's python -I -S: code ran as uid 0: {any(u == 0 for _, u in H._lines(marker))}"
        marker.write_text("")
        code = "import ctypes, sys; ctypes.CDLL('libcudnn.so.9'); print('ready', flush=True); sys.stdin.readline()"
        t = H.Target([str(venv / "bin" / "python"), "-c", code], H._plain_env(LD_LIBRARY_PATH=str(lib)), base,
                     prefix=["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"])
        try:
            rc, doc, _err, _ = H._check_cli(t.pid)
        finally:
            t.stop()
        as_root = [x for x in H._lines(marker) if x[1] == 0]
        read = doc is not None and doc["process"]["python"] is not None
        return bare, f"exit {rc}, code run as uid 0: {len(as_root)}, sys.path read (as nobody): {read}", not as_root
    finally:
        shutil.rmtree(base, ignore_errors=True)


def p4(tmp: Path) -> Row:
    venv = tmp / "venv"
    subprocess.run([PY, "-m", "venv", "--without-pip", str(venv)], check=True, capture_output=True)
    t = H.Target([str(venv / "bin" / "python"), "-c", "import sys; print('ready', flush=True); sys.stdin.readline()"],
                 H._plain_env(), tmp)
    try:
        site = next((venv / "lib").glob("python3*/site-packages"))
        os.mkfifo(site / "zz.pth")
        try:
            subprocess.run([str(venv / "bin" / "python"), "-c", "pass"], timeout=10, capture_output=True)
            bare = "that interpreter starting: answered"
        except subprocess.TimeoutExpired:
            bare = "that interpreter starting: hung (killed after 10 s)"
        rc, doc, _err, took = H._check_cli(t.pid)
    finally:
        t.stop()
    return bare, f"exit {rc} after {took:.1f} s, the FIFO named in the notes: {doc is not None and any('zz.pth' in n for n in doc['notes'])}", doc is not None


def p5(tmp: Path) -> Row:
    python = "/usr/bin/python3"
    if not os.access(python, os.X_OK):
        return "-", "skipped: no /usr/bin/python3", True
    venv = tmp / "venv"
    if subprocess.run([python, "-m", "venv", "--without-pip", str(venv)], capture_output=True).returncode != 0:
        return "-", "skipped: no venv module", True
    t = H.Target([str(venv / "bin" / "python"), "-c", "import sys; print(repr(sys.path), flush=True); sys.stdin.readline()"],
                 H._plain_env(), tmp)
    try:
        own = [p or str(tmp) for p in ast.literal_eval(t.first)]
        _rc, doc, _err, _ = H._check_cli(t.pid)
    finally:
        t.stop()
    site = next(p for p in own if p.endswith("site-packages"))
    got = doc["process"]["python"]["sys_path"] if doc else []
    return f"its own sys.path has {site.split('/')[-3:]}: True", f"rebuilt has it: {site in got}, same order: {got[:len(own)] == own}", got[:len(own)] == own


def p6(tmp: Path) -> Row:
    t = H.Target([PY, "-c", H.FORGE, str(tmp / "libcudnn.so.9")], H._plain_env(), tmp)
    try:
        maps = "libcudnn" in Path(f"/proc/{t.pid}/maps").read_text()
        rc, doc, _err, _took = H._check_cli(t.pid)
    finally:
        t.stop()
    n = len(doc["cudnn_loaded"]) if doc else -1
    return f"/proc/PID/maps shows a cuDNN: {maps}", f"exit {rc}, cuDNN reported mapped: {n}", n == 0


def _two_versions() -> tuple[Path, Path]:
    return (install_wheel("nvidia-cudnn-jit-cu12", "9.12.0.46") / "nvidia" / "cudnn_jit" / "lib",
            install_wheel("nvidia-cudnn-jit-cu12", "9.27.0.42") / "nvidia" / "cudnn_jit" / "lib")


def _load_code(path: str) -> str:
    return (f"import ctypes, sys; l = ctypes.CDLL({path!r}); l.cudnnGetVersion.restype = ctypes.c_size_t; "
            "print(l.cudnnGetVersion(), flush=True); sys.stdin.readline()")


def p7(tmp: Path) -> Row:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return "-", "skipped: needs root and unshare", True
    old, new = _two_versions()
    here = tmp / "lib"
    shutil.copytree(new, here)
    script = f"mount --bind {old} {here} && exec {PY} -c \"$0\""
    t = H.Target(["unshare", "--mount", "--propagation", "private", "sh", "-c", script, _load_code(str(here / "libcudnn.so.9"))],
                 H._plain_env(), tmp)
    try:
        rc, doc, _err, _ = H._check_cli(t.pid)
    finally:
        t.stop()
    v = [c["version"] for c in (doc or {}).get("cudnn_loaded", []) if c["main"]]
    return f"its own cudnnGetVersion: {t.first.strip()}", f"exit {rc}, reported {v}", v == ["9.12.0"]


def p8(tmp: Path) -> Row:
    old, new = _two_versions()
    lib = tmp / "lib"
    shutil.copytree(old, lib)
    t = H.Target([PY, "-c", _load_code(str(lib / "libcudnn.so.9"))], H._plain_env(), tmp)
    try:
        for f in lib.iterdir():
            f.unlink()
        for f in new.iterdir():
            shutil.copy2(f, lib / f.name)
        rc, doc, _err, _ = H._check_cli(t.pid)
    finally:
        t.stop()
    v = [c["version"] for c in (doc or {}).get("cudnn_loaded", []) if c["main"]]
    return (f"its own call: {t.first.strip()}; the file at the path now: 9.27", f"exit {rc}, reported {v} (unknown, "
            "with a note)" if v == [None] else f"exit {rc}, reported {v}", v == [None])


REEXEC_C = r"""
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 0;
    char buf[32];
    snprintf(buf, sizeof buf, "%d", n + 1);
    if (n % 2) dlopen(LIB, RTLD_NOW);
    if (n == 0) { write(1, "ready\n", 6); }
    usleep(2000);
    char *args[] = {argv[0], buf, NULL};
    execv("/proc/self/exe", args);
    return 1;
}
"""


def p9(tmp: Path) -> Row:
    old, _ = _two_versions()
    (tmp / "r.c").write_text(f'#define LIB "{old / "libcudnn.so.9"}"\n' + REEXEC_C)
    exe = tmp / "reexec"
    subprocess.run(["gcc", "-o", str(exe), str(tmp / "r.c"), "-ldl"], check=True, capture_output=True)
    t = H.Target([str(exe)], H._plain_env(), tmp)
    consistent = replaced = mixed = 0
    try:
        for _ in range(10):
            _rc, doc, err, _ = H._check_cli(t.pid)
            if doc is None:
                replaced += "replaced its program" in err
                mixed += "replaced its program" not in err
                continue
            argv = doc["process"]["argv"]
            odd = len(argv) > 1 and argv[1].isdigit() and int(argv[1]) % 2 == 1
            # an odd image loads cuDNN right after it starts: read before that, it has none yet
            if argv and (odd or not doc["cudnn_loaded"]):
                consistent += 1
            else:
                mixed += 1
                print(f"P9 mixed: argv {argv[:2]}, mapped {[c['path'] for c in doc['cudnn_loaded']]}", file=sys.stderr)
    finally:
        t.stop()
    return "-", f"one program per report: {consistent}, 'replaced its program' (exit 2): {replaced}, mixed: {mixed}", mixed == 0


def p10(tmp: Path) -> Row:
    pid = H._kthread()
    if pid is None:
        return "-", "skipped: no kernel thread visible", True
    r = subprocess.run(["cat", f"/proc/{pid}/environ"], capture_output=True, text=True)
    rc, _doc, err, _ = H._check_cli(pid)
    lines = err.strip().splitlines()
    return f"cat /proc/{pid}/environ: {r.stderr.strip().split(': ')[-1]}", f"exit {rc}: {lines[0][:90] if lines else ''}", \
        rc == 2 and len(lines) == 1 and "kernel thread" in lines[0]


def p11(tmp: Path) -> Row:
    try:
        Path("/proc/1/maps").read_bytes()
        return "-", "skipped: process 1 is readable here", True
    except PermissionError:
        pass
    rc, _doc, err, _ = H._check_cli(1)
    line = (err.strip().splitlines() or [""])[0]
    ok = rc == 2 and ("or as root" not in line if os.geteuid() == 0 else True)
    return "cat /proc/1/maps: Permission denied", f"exit {rc}: {line[:90]}...", ok


def p12(tmp: Path) -> Row:
    ldp = ":".join(["/"] * 10000 + [f"/nonexistent{i}" for i in range(5000)])
    t = H.Target([PY, "-c", "import sys; print('ready', flush=True); sys.stdin.readline()", "y" * 100000],
                 H._plain_env(LD_LIBRARY_PATH=ldp, PYTHONPATH=ldp), tmp)
    try:
        t0 = time.monotonic()
        text = subprocess.run([PY, "-m", "cudnn_magic", "check", "--pid", str(t.pid)], capture_output=True, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300).stdout
        took = time.monotonic() - t0
    finally:
        t.stop()
    longest = max(len(x) for x in text.splitlines())
    return f"tr '\\0' '\\n' < /proc/PID/environ: a {len(ldp)}-character line", f"{took:.1f} s, longest line {longest}", longest < 1000


def p13(tmp: Path) -> Row:
    (tmp / "a.c").write_text("int f(void) { return 1; }\n")
    base = tmp / "base.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(base), str(tmp / "a.c")], check=True, capture_output=True)
    libs = tmp / "many"
    libs.mkdir()
    for i in range(3000):
        shutil.copy(base, libs / f"lib{i}.so")
    old, _ = _two_versions()
    code = (f"import ctypes, sys; hs = [ctypes.CDLL('{libs}/lib%d.so' % i) for i in range(3000)]; "
            f"ctypes.CDLL({str(old / 'libcudnn.so.9')!r}); print('ready', flush=True); sys.stdin.readline()")
    t = H.Target([PY, "-c", code], H._plain_env(), tmp)
    try:
        t0 = time.monotonic()
        subprocess.run(f"grep libcudnn /proc/{t.pid}/maps", shell=True, capture_output=True)
        bare = time.monotonic() - t0
        _rc, doc, _err, took = H._check_cli(t.pid)
    finally:
        t.stop()
    v = [c["version"] for c in (doc or {}).get("cudnn_loaded", []) if c["main"]]
    return f"grep libcudnn /proc/PID/maps: {bare * 1000:.0f} ms", f"{took:.1f} s (the CLI's start included), found {v}", v == ["9.12.0"]


def p14(tmp: Path) -> Row:
    old, _ = _two_versions()
    odd = os.path.join(os.fsencode(tmp), b"lib\xff")
    os.symlink(os.fsencode(old), odd)
    t = H.Target([PY, "-c", "import ctypes, sys; ctypes.CDLL('libcudnn.so.9'); print('ready', flush=True); sys.stdin.readline()"],
                 {b"PATH": b"/usr/bin:/bin", b"LD_LIBRARY_PATH": odd}, tmp)
    try:
        rc, doc, _err, _ = H._check_cli(t.pid)
    finally:
        t.stop()
    entry = ((doc or {}).get("cudnn_in_use") or {}).get("ld_library_path_entry")
    return "-", f"exit {rc}, the entry named as written: {entry == os.fsdecode(odd)}", entry == os.fsdecode(odd)


def p15(tmp: Path) -> Row:
    import random

    full = gone = other = 0
    for _i in range(10):
        child = subprocess.Popen([PY, "-c", f"import time; time.sleep({random.uniform(0.2, 0.9):.2f})"])
        time.sleep(0.15)
        rc, doc, err, _ = H._check_cli(child.pid)
        child.wait()
        if doc is not None:
            full += 1
        elif rc == 2 and len(err.strip().splitlines()) == 1 and ("not running" in err or "exited" in err):
            gone += 1
        else:
            other += 1
    return "-", f"whole reports: {full}, one line 'exited'/'not running' (exit 2): {gone}, anything else: {other}", other == 0


# --------------------------------------------------------------------------------------------
# --ray: the scenario of tests/cluster/test_ray_cluster.py, and a bare ray.init, in a private namespace
# --------------------------------------------------------------------------------------------

BARE_RAY = r"""
import json, logging, os, socket, subprocess, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(8)
code = "import logging, ray; ray.init(address=%r, logging_level=logging.ERROR, log_to_driver=False)" % ("127.0.0.1:%d" % s.getsockname()[1])
p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
try:
    out, _ = p.communicate(timeout=20)
    res = {"returned": True, "lines": len(out.splitlines())}
except subprocess.TimeoutExpired:
    p.kill(); out, _ = p.communicate()
    res = {"returned": False, "lines": len(out.splitlines())}
open(sys.argv[1], "w").write(json.dumps(res))
"""


def r8() -> tuple[str, str, str, bool, float]:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t0 = time.monotonic()
    ok = 0
    typos = ("127.0.0.1:99999", f" 127.0.0.1:{port} ", "")  # answered before Ray starts: outside the namespace
    for a in typos:
        r = subprocess.run([PY, "-m", "cudnn_magic", "check", "--ray", a, "--timeout", "5"], capture_output=True,
                           text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
        ok += r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and r.stdout == ""
    took = time.monotonic() - t0
    return ("R8 address typos (3)", "-", f"one line, exit 2: {ok} of {len(typos)}, {took / len(typos):.1f} s each",
            ok == len(typos), took)


def ray_rows(tmp: Path) -> list[tuple[str, str, str, bool, float]]:
    try:
        import ray  # noqa: F401
    except ImportError:
        return [("R ray", "-", "skipped: Ray is not installed", True, 0.0)]
    from helpers.ray_scenario import kill_namespace, netns_command

    old, _ = _two_versions()
    out, bare_out = tmp / "scenario.json", tmp / "bare.json"
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "RAY_ADDRESS")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "tests")])
    env["RAY_raylet_start_wait_time_s"] = "180"
    ns = tmp / "ns"
    env["CUDNN_MAGIC_NETNS_FILE"] = str(ns)
    t0 = time.monotonic()
    try:
        bare_script = tmp / "bare_ray.py"
        bare_script.write_text(BARE_RAY)
        subprocess.run(netns_command(str(bare_script), str(bare_out)), env=env, capture_output=True, timeout=120)
        p = subprocess.run(netns_command(str(ROOT / "tests" / "helpers" / "ray_scenario.py"), str(out), str(old)), env=env,
                           capture_output=True, text=True, timeout=1200)
    finally:
        if ns.exists() and ns.read_text() != os.readlink("/proc/self/ns/net"):
            kill_namespace(ns.read_text())
    took = time.monotonic() - t0
    if p.returncode != 0 or not out.exists():
        return [("R ray scenario", "-", f"the scenario failed: {p.stderr.strip().splitlines()[-1:]}", False, took)]
    d = json.loads(out.read_text())
    bare = json.loads(bare_out.read_text()) if bare_out.exists() else {}
    bare_txt = (f"plain ray.init: returned within 20 s: {bare.get('returned')}, {bare.get('lines')} log lines"
                if bare else "-")
    rows = []
    nr = d["no_ray"]["not_ray"]
    err = nr["stderr"].strip().splitlines()
    rows.append(("R1 CLI to a port that accepts and never answers", bare_txt,
                 f"exit {nr['rc']} after {nr['elapsed_s']:.1f} s, stderr lines: {len(err)}", nr["rc"] == 2 and len(err) == 1, 0.0))
    k = d["kernel_silent"]
    import re

    ray_log = re.compile(r"^\[\d{4}-\d\d-\d\d [\d:,]+ [DIWEF] \d+ \d+\]")
    leaked = [ln for ln in k["later"].splitlines() if ray_log.search(ln)]
    rows.append(("R2 the magic to that port, then a 12 s cell", bare_txt,
                 f"answered in {k['silent_s']:.1f} s; Ray lines in the later cell: {len(leaked)}; thread left: "
                 f"{'cudnn-magic-ray' in k['later']}", not leaked and "cudnn-magic-ray" not in k["later"], 0.0))
    for mode, label in (("child", "R3 interrupt mid-check, kernel not connected"), ("connected", "R4 interrupt mid-check, kernel connected")):
        s = d["kernel_interrupt"][mode]
        ok = s["ename"] == "KeyboardInterrupt" and "alive 2" in s["next"] and not s["children"] and not s["probes_after"]
        rows.append((label, "-", f"{s['ename']} in {s['interrupt_s']:.1f} s, next cell in {s['next_s']:.1f} s, "
                     f"child processes left: {len(s['children'])}, probes after resume: {len(s['probes_after'])}", ok, 0.0))
    nd = d["node_died"]
    rows.append(("R5 a node killed mid-check (--json)", "-",
                 f"exit {nd['rc']} after {nd['elapsed_s']:.1f} s, stdout is JSON: {nd['doc'] is not None}",
                 nd["doc"] is not None and nd["rc"] == 1, 0.0))
    re_ = d["refused_env"]
    line = (re_["stderr"].strip().splitlines() or [""])
    rows.append(("R6 a runtime environment Ray refuses", "-", f"exit {re_['rc']}, {len(line)} line: {line[0][:70]}...",
                 re_["rc"] == 2 and len(line) == 1 and "runtime environment" in line[0], 0.0))
    rows.append(r8())
    to = d["timeout"]
    hung = {n["address"]: n for n in to["json"]["nodes"]}[d["hung_node"]]
    rows.append(("R7 a hung node", "-", f"{hung['status']} row after {to['elapsed_s']:.1f} s, probes left: {len(d['probes_left'])}",
                 hung["status"] == "timeout" and not d["probes_left"], 0.0))
    rows[0] = (*rows[0][:4], took)
    return rows


# --------------------------------------------------------------------------------------------
# exported outputs
# --------------------------------------------------------------------------------------------

def e1(tmp: Path) -> Row:
    from helpers.kernel_session import KernelSession

    cells = {"3 MB error message": 'raise RuntimeError("cuDNN error: CUDNN_STATUS_NOT_INITIALIZED " + "x" * 3_000_000)',
             "3 MB log line": 'import os\nos.write(2, b"Could not load library libcudnn_cnn_infer.so.8. Error: " + b"y" * 3_000_000 + b"\\n")\n'
                              'raise RuntimeError("cuDNN error: CUDNN_STATUS_NOT_INITIALIZED")',
             "200,000 log lines": 'import os\nfor i in range(200000): os.write(2, b"W0000 cudnn warning line %d\\n" % i)\n'
                                  'raise RuntimeError("cuDNN error: CUDNN_STATUS_NOT_INITIALIZED")'}
    ks = KernelSession(tmp / "k", {})
    worst, users = 0, 0
    try:
        ks.run("%load_ext cudnn_magic")
        for code in cells.values():
            c = ks.run(code, timeout=300)
            for m in c.messages:
                content = m["content"]
                if m["msg_type"] == "display_data":
                    worst = max(worst, sum(len(v) for v in content["data"].values() if isinstance(v, str)))
                elif m["msg_type"] in ("stream", "error"):
                    users = max(users, len(json.dumps(content)))
    finally:
        ks.close()
    return f"the cell's own output: up to {users / 1e6:.1f} MB", f"the largest output the extension adds: {worst / 1024:.0f} KiB", worst < 128 * 1024


def e2(tmp: Path) -> Row:
    import helpers.exported_notebook as X

    cells = list(X.CELLS)
    X.CELLS[:] = [c.replace("%gpu_memory --interval 0.5", "%gpu_memory --interval 0.1") for c in cells] + \
        ["import time; time.sleep(3)"]
    try:
        executed, env = X.execute(tmp)
        page = X.export(executed, "html", env).read_text()
    finally:
        X.CELLS[:] = cells
    need = ["%cudnn_fix restart-kernel --yes", "torch.cuda.empty_cache()", X.GPU_NAME, "%cudnn_fix remove-shadowing-dir"]
    import html as html_lib

    text = html_lib.unescape(page)
    missing = [w for w in need if w not in text]
    return "-", f"HTML {len(page) / 1024:.0f} KiB; words a person needs missing offline: {missing or 'none'}", not missing


PID_ATTACKS: list[tuple[str, Callable[[Path], Row]]] = [
    ("P1 a module in its working directory / PYTHONPATH", p1), ("P2 a program only named python3", p2),
    ("P3 root checks nobody's process (pyvenv home, library constructor)", p3), ("P4 a FIFO .pth", p4),
    ("P5 a venv of Debian's python3", p5), ("P6 a link map entry it wrote itself", p6),
    ("P7 another mount namespace", p7), ("P8 cuDNN replaced on disk since the load", p8),
    ("P9 a process that execs every 2 ms (10 checks)", p9), ("P10 a kernel thread", p10),
    ("P11 a process root may not read", p11), ("P12 128 KiB variables and command line", p12),
    ("P13 3,000 libraries mapped", p13), ("P14 a non-UTF-8 LD_LIBRARY_PATH folder", p14),
    ("P15 processes that exit while they are read (10)", p15),
]
EXPORT_ATTACKS: list[tuple[str, Callable[[Path], Row]]] = [
    ("E1 very long outputs of a failing cell", e1), ("E2 exported while a fast panel was live", e2)]


def main() -> int:
    only = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv else "PRE"
    rows: list[tuple[str, str, str, bool, float]] = []
    with tempfile.TemporaryDirectory(prefix="cm-attacks-") as td:
        tmp = Path(td)
        for group, attacks in (("P", PID_ATTACKS), ("E", EXPORT_ATTACKS)):
            if group not in only:
                continue
            for name, fn in attacks:
                t0 = time.monotonic()
                sub = tmp / name.split()[0]
                sub.mkdir()
                try:
                    bare, ours, held = fn(sub)
                except Exception as exc:  # noqa: BLE001 - an attack that breaks the script is a row too
                    bare, ours, held = "-", f"the attack failed: {type(exc).__name__}: {exc}"[:200], False
                rows.append((name, bare, ours, held, time.monotonic() - t0))
                print(f"{name}: {'held' if held else 'NOT HELD'}", file=sys.stderr, flush=True)
        if "R" in only:
            (tmp / "ray").mkdir()
            rows += ray_rows(tmp / "ray")
    print("| attack | reference (bare) | cudnn-magic | held | s |")
    print("|---|---|---|---|---|")
    for name, bare, ours, held, s in rows:
        print(f"| {name} | {bare} | {ours} | {'yes' if held else 'NO'} | {s:.0f} |")
    print(f"\nheld {sum(r[3] for r in rows)} of {len(rows)}")
    return 0 if all(r[3] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
