"""A repeated ``%cudnn_check`` in a running shell against the floor, side by side.

In one IPython ``InteractiveShell`` (what a notebook's kernel runs) with ``%load_ext cudnn_magic``
and one untimed ``%cudnn_check`` behind it (the first check of a session pays for its imports and
reads; ``bench_check_floor.py`` measures that), the child times, alternating call by call:

* ``%cudnn_check --json`` (its output captured, not printed);
* the floor: the body of :data:`bench_startup.FLOOR` run in the same process (its output
  captured): the same facts read the plainest way, every time (``/proc/self/maps``, the
  ``libcudnn*`` files of every folder ``check`` looks in, the ld.so cache, the frameworks'
  metadata, whether NVML loads).

Wall (``perf_counter``) and CPU of the process (``process_time``), medians and min..max, the load
average noted. ``--code DIR`` (repeatable) runs each checkout in its own child, children in
turns, so before and after meet the same load.

Usage: .venv/bin/python benchmarks/bench_repeat_check.py [--calls N] [--rounds R] [--code DIR ...]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_startup import FLOOR  # noqa: E402

CHILD = r"""
import contextlib, io, json, os, sys, time
n, floor_src = int(sys.argv[1]), sys.argv[2]
from IPython.core.interactiveshell import InteractiveShell
ip = InteractiveShell.instance(colors="nocolor")
ip.run_line_magic("load_ext", "cudnn_magic")
floor = compile(floor_src, "floor", "exec")
def run_floor():
    with contextlib.redirect_stdout(io.StringIO()):
        exec(floor, {"__name__": "__main__"})
def run_check():
    with contextlib.redirect_stdout(io.StringIO()):
        ip.run_line_magic("cudnn_check", "--json")
run_check(); run_floor()  # the first of each: imports, first reads
out = {"check": [], "floor": []}
for i in range(n):
    for name, fn in ((("check", run_check), ("floor", run_floor)) if i % 2 == 0 else (("floor", run_floor), ("check", run_check))):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        out[name].append((time.perf_counter() - t0, time.process_time() - c0))
import cudnn_magic
out["code"] = os.path.dirname(os.path.dirname(cudnn_magic.__file__))
print("RESULT" + json.dumps(out))
"""


def child(code: Path, calls: int) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTEST_CURRENT_TEST")}
    env["PYTHONPATH"] = str(code)
    p = subprocess.run([sys.executable, "-c", CHILD, str(calls), FLOOR], capture_output=True, text=True, env=env,
                       cwd="/", timeout=1800, check=False)
    if p.returncode:
        raise SystemExit(p.stderr[-3000:])
    return json.loads([x for x in p.stdout.splitlines() if x.startswith("RESULT")][-1][6:])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=40, help="calls of each per child")
    ap.add_argument("--rounds", type=int, default=3, help="children per checkout, in turns")
    ap.add_argument("--code", action="append", default=[], help="a checkout (default: this one)")
    args = ap.parse_args()
    codes = [Path(c).resolve() for c in (args.code or [str(ROOT)])]
    res: dict[Path, dict[str, list]] = {c: {"check": [], "floor": []} for c in codes}
    loads = []
    for _ in range(args.rounds):
        for c in codes:
            r = child(c, args.calls)
            assert Path(r["code"]) == c, (r["code"], c)
            for k in ("check", "floor"):
                res[c][k] += r[k]
            loads.append(os.getloadavg()[0])

    def ms(xs: list[float]) -> str:
        xs = [x * 1e3 for x in xs]
        return f"{statistics.median(xs):.2f} ({min(xs):.2f}..{max(xs):.2f})"

    print(f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {statistics.median(loads):.1f}; "
          f"{args.rounds} children x {args.calls} calls of each, alternating; ms, median (min..max)\n")
    print("| code | what | wall | CPU | wall vs the floor |")
    print("|---|---|---:|---:|---:|")
    for c in codes:
        floor = statistics.median(w for w, _ in res[c]["floor"])
        for k, label in (("floor", "floor (same process)"), ("check", "`%cudnn_check --json`, repeated")):
            w = [x for x, _ in res[c][k]]
            cpu = [y for _, y in res[c][k]]
            print(f"| {c} | {label} | {ms(w)} | {ms(cpu)} | {statistics.median(w) / floor:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
