"""Per-cell overhead of ``%load_ext cudnn_magic`` in a real ``InteractiveShell``, side by side.

For each kind of cell, one child process runs it ``--cells`` times with ``ip.run_cell`` (10,000
by default for the trivial cell, a tenth for the others) without the extension and as many
times with it loaded (capture on), in ``--blocks`` alternating blocks so machine load hits
both sides alike; the table shows medians of the per-block µs per cell (wall clock) and of the
per-pair differences, in wall time and in CPU time of the shell process (``process_time``: far
less noisy on a shared machine, and what a quiet succeeding cell pays, since it involves no
other process). A second table times only our two callbacks (``pre_run_cell`` + ``post_run_cell``)
called directly, which is what the extension adds to a succeeding cell that wrote nothing to
fd 2 (noise-free, unlike the difference of two totals).

Cells: ``x = 1``; a cell writing one 80-byte line to fd 2 (the capture is synced and the bytes
checked for GPU-unused warnings); a cell raising ``ValueError`` (the exception handler: sync,
traceback, diagnose, nothing to show). Output is thrown away (stdout to /dev/null in the child).

Usage: python benchmarks/bench_cell_overhead.py [--cells N] [--blocks B]
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

CHILD = r"""
import json, os, sys, time
kind, n, blocks = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
real_stdout = os.dup(1)
devnull = os.open(os.devnull, os.O_WRONLY); os.dup2(devnull, 1)
from IPython.core.interactiveshell import InteractiveShell
ip = InteractiveShell.instance(colors="nocolor")
src = {"trivial": "x = 1",
       "fd2": "import os; os.write(2, b'I0000 00:00:1700000000.000000   4242 some_native.cc:12] an info line\\n')",
       "error": "raise ValueError('not cuDNN')"}[kind]
def block():
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(n):
        ip.run_cell(src)
    return (time.perf_counter() - t0) / n * 1e6, (time.process_time() - c0) / n * 1e6
for _ in range(min(300, n)):
    ip.run_cell(src)
t0 = time.perf_counter(); ip.run_line_magic("load_ext", "cudnn_magic"); load_ms = (time.perf_counter() - t0) * 1e3
from cudnn_magic.annotate import annotator
capture = annotator().tee is not None and annotator().tee.active
ip.run_line_magic("unload_ext", "cudnn_magic")
without, with_ = [], []
for _ in range(blocks):  # alternate, so load on the machine hits both sides alike
    without.append(block())
    ip.run_line_magic("load_ext", "cudnn_magic")
    with_.append(block())
    ip.run_line_magic("unload_ext", "cudnn_magic")
res = {"without": without, "with": with_, "capture": capture, "load_ms": load_ms}
if kind == "trivial":
    ip.run_line_magic("load_ext", "cudnn_magic")
    a = annotator()
    class Info: raw_cell = "x = 1"
    class Result: error_in_exec = None; error_before_exec = None
    info, result = Info(), Result()
    m = 100000
    t0 = time.perf_counter()
    for _ in range(m):
        a.pre_run_cell(info); a.post_run_cell(result)
    res["hooks_us"] = (time.perf_counter() - t0) / m * 1e6
    ip.run_line_magic("unload_ext", "cudnn_magic")
os.write(real_stdout, (json.dumps(res) + "\n").encode())
"""

KINDS = [("trivial", "`x = 1`"), ("fd2", "writes one 80 B line to fd 2"), ("error", "raises ValueError")]


def run(kind: str, n: int, blocks: int) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("PYTEST_CURRENT_TEST", None)
    with open(os.devnull, "wb") as dn:
        p = subprocess.run([sys.executable, "-c", CHILD, kind, str(n), str(blocks)], stdout=subprocess.PIPE,
                           stderr=dn, env=env, timeout=1800, check=True)
    return json.loads(p.stdout.decode().strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cells", type=int, default=10_000)
    ap.add_argument("--blocks", type=int, default=20)
    args = ap.parse_args()
    rows = []
    hooks = load_ms = 0.0
    for kind, label in KINDS:
        n = args.cells if kind == "trivial" else max(100, args.cells // 10)
        r = run(kind, max(1, n // args.blocks), args.blocks)
        assert r["capture"], "the capture did not start"
        b = statistics.median(w for w, _ in r["without"])
        e = statistics.median(w for w, _ in r["with"])
        dw = statistics.median(x[0] - y[0] for x, y in zip(r["with"], r["without"]))
        dc = statistics.median(x[1] - y[1] for x, y in zip(r["with"], r["without"]))
        rows.append((label, n, b, e, dw, dc))
        if "hooks_us" in r:
            hooks, load_ms = r["hooks_us"], r["load_ms"]
    print(f"Per-cell time in a real InteractiveShell, µs: {args.blocks} alternating blocks with and without the "
          f"extension in one process, medians (Python {sys.version.split()[0]}, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.1f})\n")
    print("| cell | cells (each side) | without extension | with `%load_ext cudnn_magic` | overhead, wall | overhead, CPU of the shell process |")
    print("|---|---:|---:|---:|---:|---:|")
    for label, n, b, e, dw, dc in rows:
        print(f"| {label} | {n:,} | {b:,.1f} | {e:,.1f} | {dw:+,.1f} | {dc:+,.1f} |")
    print(f"\nOur callbacks alone (pre_run_cell + post_run_cell on a quiet successful cell, 100,000 calls): "
          f"{hooks:.1f} µs per cell. `%load_ext cudnn_magic`: {load_ms:.0f} ms.")


if __name__ == "__main__":
    main()
