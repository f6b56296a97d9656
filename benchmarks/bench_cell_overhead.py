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

Cells: ``x = 1``; a cell writing one 80-byte line to fd 2 (the bytes are checked for
GPU-unused warnings); cells writing 64 KiB and 1 MiB of realistic native log lines to fd 2 in
one ``os.write`` (TensorFlow's C++ logging: the start-up lines once, ``dso_loader.cc``,
``gpu_device.cc`` and ``cuda_dnn.cc``, which name CUDA, cuDNN, GPUs and libraries, then
per-step XLA, ``gpu_timer.cc`` and ``cuda_executor.cc`` lines; none of them a warning), and the same megabyte written a line at a
time, one ``os.write`` per line, as glog and most native loggers write (the capture then sees
the start-up lines in a chunk of their own); a cell raising
``ValueError`` (the exception handler: sync, traceback, diagnose, nothing to show). Output is
thrown away (stdout to /dev/null in the child).

``--code DIR`` runs another checkout of cudnn-magic (e.g. the commit before a change, from
``git archive``) so before and after are measured side by side on the same machine.

Usage: python benchmarks/bench_cell_overhead.py [--cells N] [--blocks B] [--code DIR] [--kinds K,...]
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

NATIVE_LOG = r"""
STARTUP = [  # what TensorFlow's C++ logging prints once, when the GPU is set up
    b"2023-12-12 16:48:38.112233: I tensorflow/core/util/port.cc:113] oneDNN custom operations are on. You may see slightly different numerical results due to floating-point round-off errors from different computation orders.",
    b"2021-06-02 13:10:30.111111: I tensorflow/stream_executor/platform/default/dso_loader.cc:53] Successfully opened dynamic library libcudart.so.11.0",
    b"2021-06-02 13:10:30.222222: I tensorflow/stream_executor/platform/default/dso_loader.cc:53] Successfully opened dynamic library libcublas.so.11",
    b"2021-06-02 13:10:30.333333: I tensorflow/stream_executor/platform/default/dso_loader.cc:53] Successfully opened dynamic library libcudnn.so.8",
    b"2023-12-12 16:48:40.100000: I external/local_xla/xla/stream_executor/cuda/cuda_executor.cc:901] successful NUMA node read from SysFS had negative value (-1), but there must be at least one NUMA node, so returning NUMA node zero.",
    b"2023-12-12 16:48:40.200000: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1929] Created device /job:localhost/replica:0/task:0/device:GPU:0 with 22290 MB memory:  -> device: 0, name: NVIDIA A10G, pci bus id: 0000:00:1e.0, compute capability: 8.6",
    b"2023-12-12 16:48:41.000000: I external/local_xla/xla/stream_executor/cuda/cuda_dnn.cc:531] Loaded cuDNN version 8906",
]
LINES = [  # then, per training step (the step number makes each line distinct)
    b"I0000 00:00:1700000000.000000   4242 device_compiler.h:186] Compiled cluster using XLA!  This line is logged at most once for the lifetime of the process.",
    b"W0000 00:00:1700000000.100000   4242 gpu_timer.cc:114] Skipping the delay kernel, measurement accuracy will be reduced",
    b"2023-12-12 16:49:40.100000: I external/local_xla/xla/stream_executor/cuda/cuda_executor.cc:901] successful NUMA node read from SysFS had negative value (-1), but there must be at least one NUMA node, so returning NUMA node zero.",
    b"I0000 00:00:1700000000.200000   4242 some_native.cc:12] step 4400: loss 1.2345, 51234 tokens/s",
]
def native_log(size):
    out = [x + b"\n" for x in STARTUP]
    n, i = sum(map(len, out)), 0
    while n < size:
        line = LINES[i % len(LINES)].replace(b"4242", b"%04d" % (i % 10000)) + b"\n"
        out.append(line); n += len(line); i += 1
    return b"".join(out)[:size - 1] + b"\n"
"""

CHILD = r"""
import json, os, sys, time
kind, n, blocks = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
real_stdout = os.dup(1)
devnull = os.open(os.devnull, os.O_WRONLY); os.dup2(devnull, 1)
from IPython.core.interactiveshell import InteractiveShell
ip = InteractiveShell.instance(colors="nocolor")
""" + NATIVE_LOG + r"""import builtins
builtins.LOG_64K, builtins.LOG_1M = native_log(64 << 10), native_log(1 << 20)
builtins.LOG_1M_LINES = LOG_1M.splitlines(keepends=True)
src = {"trivial": "x = 1",
       "fd2": "import os; os.write(2, b'I0000 00:00:1700000000.000000   4242 some_native.cc:12] an info line\\n')",
       "fd2_64k": "import os; os.write(2, LOG_64K)",
       "fd2_1m": "import os; os.write(2, LOG_1M)",
       "fd2_1m_lines": "import os\nfor line in LOG_1M_LINES: os.write(2, line)",
       "error": "raise ValueError('not cuDNN')"}[kind]
def block():
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(n):
        ip.run_cell(src)
    return (time.perf_counter() - t0) / n * 1e6, (time.process_time() - c0) / n * 1e6
for _ in range(min(300, n)):
    ip.run_cell(src)
t0 = time.perf_counter(); ip.run_line_magic("load_ext", "cudnn_magic"); load_ms = (time.perf_counter() - t0) * 1e3
from cudnn_magic.shell.annotate import annotator
capture = annotator().tee is not None and annotator().tee.active
ip.run_line_magic("unload_ext", "cudnn_magic")
without, with_ = [], []
for _ in range(blocks):  # alternate, so load on the machine hits both sides alike
    without.append(block())
    ip.run_line_magic("load_ext", "cudnn_magic")
    annotator().tee.sync()  # the helper has started (a one-time cost of %load_ext, measured above)
    if os.environ.get("BENCH_ANNOTATE_OFF") == "1":
        ip.run_line_magic("cudnn_annotate", "off")  # the capture alone: no warning scan
    with_.append(block())
    ip.run_line_magic("unload_ext", "cudnn_magic")
import cudnn_magic
res = {"without": without, "with": with_, "capture": capture, "load_ms": load_ms, "code": cudnn_magic.__file__}
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

KINDS = [("trivial", "`x = 1`"), ("fd2", "writes one 80 B line to fd 2"),
         ("fd2_64k", "writes 64 KiB of native log lines to fd 2"), ("fd2_1m", "writes 1 MiB of native log lines to fd 2"),
         ("fd2_1m_lines", "writes the same 1 MiB a line at a time (one `write` per line, as glog does)"),
         ("error", "raises ValueError")]
CELLS_DIVISOR = {"trivial": 1, "fd2": 10, "fd2_64k": 10, "fd2_1m": 50, "fd2_1m_lines": 100, "error": 10}


def run(kind: str, n: int, blocks: int, code: Path = ROOT) -> dict:
    env = dict(os.environ, PYTHONPATH=str(code))
    env.pop("PYTEST_CURRENT_TEST", None)
    with open(os.devnull, "wb") as dn:
        # cwd=code: ``python -c`` puts the current directory first on sys.path
        p = subprocess.run([sys.executable, "-c", CHILD, kind, str(n), str(blocks)], stdout=subprocess.PIPE,
                           stderr=dn, env=env, timeout=1800, check=True, cwd=str(code))
    return json.loads(p.stdout.decode().strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cells", type=int, default=10_000)
    ap.add_argument("--blocks", type=int, default=20)
    ap.add_argument("--code", default=str(ROOT), help="checkout of cudnn-magic to measure (default: this one)")
    ap.add_argument("--kinds", default=",".join(k for k, _ in KINDS), help="cells to run (default: all)")
    ap.add_argument("--annotate-off", action="store_true",
                    help="with %%cudnn_annotate off: what the fd-2 capture alone costs (no warning scan)")
    args = ap.parse_args()
    if args.annotate_off:
        os.environ["BENCH_ANNOTATE_OFF"] = "1"
    rows = []
    hooks = load_ms = 0.0
    wanted = set(args.kinds.split(","))
    for kind, label in KINDS:
        if kind not in wanted:
            continue
        n = max(args.blocks, args.cells // CELLS_DIVISOR[kind])
        r = run(kind, max(1, n // args.blocks), args.blocks, Path(args.code))
        assert r["capture"], "the capture did not start"
        b = statistics.median(w for w, _ in r["without"])
        e = statistics.median(w for w, _ in r["with"])
        dw = statistics.median(x[0] - y[0] for x, y in zip(r["with"], r["without"]))
        dc = statistics.median(x[1] - y[1] for x, y in zip(r["with"], r["without"]))
        rows.append((label, n, b, e, dw, dc))
        if "hooks_us" in r:
            hooks, load_ms = r["hooks_us"], r["load_ms"]
    print(f"Per-cell time in a real InteractiveShell, µs: {args.blocks} alternating blocks with and without the "
          f"extension in one process{' (annotation off: capture only)' if args.annotate_off else ''}, medians "
          f"(code: {args.code}; Python {sys.version.split()[0]}, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.1f})\n")
    print("| cell | cells (each side) | without extension | with `%load_ext cudnn_magic` | overhead, wall "
          "| overhead, CPU of the shell process |")
    print("|---|---:|---:|---:|---:|---:|")
    for label, n, b, e, dw, dc in rows:
        print(f"| {label} | {n:,} | {b:,.1f} | {e:,.1f} | {dw:+,.1f} | {dc:+,.1f} |")
    print(f"\nOur callbacks alone (pre_run_cell + post_run_cell on a quiet successful cell, 100,000 calls): "
          f"{hooks:.1f} µs per cell. `%load_ext cudnn_magic`: {load_ms:.0f} ms.")


if __name__ == "__main__":
    main()
