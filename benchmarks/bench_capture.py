"""fd-2 throughput with and without the capture, side by side.

Each mode runs in a child process (so this process's fd 2 is never touched) that writes
``--megabytes`` MB to fd 2 with ``os.write`` in chunks of 80 B (a log line), 4 KiB and 64 KiB,
to ``/dev/null`` at the end of the chain, and times it until every byte has left the chain:

* ``none``: fd 2 is ``/dev/null`` itself (the Python write loop's own limit);
* ``ipykernel-style thread``: fd 2 -> pipe -> a Python thread in the same process reading 1,000
  bytes at a time (ipykernel 7.4's ``OutStream._watch_pipe_fd`` loop, without the zmq part) ->
  ``/dev/null``;
* ``bare pipe``: fd 2 -> pipe -> ``cat > /dev/null`` (what any pipe-based capture costs the
  writer: one pipe write per ``os.write``, the ceiling for the two below);
* ``cudnn-magic capture``: fd 2 -> pipe -> helper process (log on disk + writer thread) ->
  ``/dev/null``; the time includes the final ``sync()``.

Usage: python benchmarks/bench_capture.py [--megabytes N] [--repeat R]
Prints a markdown table of MB/s (1 MB = 10^6 bytes; the median of R runs).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import json, os, sys, threading, time
from pathlib import Path
mode, chunk, total, root = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
devnull = os.open(os.devnull, os.O_WRONLY)
os.dup2(devnull, 2)
buf = (b"x" * (chunk - 1)) + b"\n"
n = total // chunk
done = None
if mode == "thread":
    r, w = os.pipe(); os.dup2(w, 2); os.close(w)
    def watch():
        b = os.read(r, 1000)
        while b:
            b.decode(errors="replace"); os.write(devnull, b); b = os.read(r, 1000)
    th = threading.Thread(target=watch, daemon=True); th.start()
    def done():
        import array, fcntl, termios
        a = array.array("i", [0])
        while True:
            fcntl.ioctl(r, termios.FIONREAD, a, True)
            if not a[0]: break
            time.sleep(0.0005)
elif mode == "pipe":
    import subprocess
    r, w = os.pipe()
    cat = subprocess.Popen(["cat"], stdin=r, stdout=devnull)
    os.close(r); os.dup2(w, 2); os.close(w)
    def done():
        os.dup2(devnull, 2); cat.wait()
elif mode == "capture":
    from cudnn_magic.capture.tee import Tee
    tee = Tee.install("bench", root=Path(root))
    tee.sync()  # helper started
    done = tee.sync
w = os.write
t0 = time.perf_counter()
for _ in range(n):
    w(2, buf)
if done: done()
dt = time.perf_counter() - t0
if mode == "capture": tee.uninstall()
print(json.dumps({"mb_s": n * chunk / dt / 1e6, "seconds": dt}))
"""

MODES = [("none", "no capture (fd 2 = /dev/null)"), ("pipe", "bare pipe to `cat` (any pipe's ceiling)"),
         ("thread", "ipykernel-style thread (1,000 B reads)"),
         ("capture", "cudnn-magic capture (helper process)")]
CHUNKS = [(80, "80 B"), (4096, "4 KiB"), (65536, "64 KiB")]


def run(mode: str, chunk: int, total: int, root: str) -> float:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.run([sys.executable, "-c", CHILD, mode, str(chunk), str(total), root],
                       capture_output=True, env=env, timeout=600, check=True)
    return json.loads(p.stdout.decode().strip().splitlines()[-1])["mb_s"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--megabytes", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    root = tempfile.mkdtemp(prefix="bench-capture-")
    results: dict = {}
    for chunk, _label in CHUNKS:
        total = args.megabytes * 1_000_000 if chunk > 80 else min(args.megabytes, 20) * 1_000_000
        for mode, _ in MODES:
            results[(mode, chunk)] = statistics.median(run(mode, chunk, total, root) for _ in range(args.repeat))
    print(f"fd-2 throughput, MB/s (median of {args.repeat}; {args.megabytes} MB per run, 20 MB at 80 B; "
          f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs)\n")
    print("| write size | " + " | ".join(label for _, label in MODES) + " |")
    print("|---|" + "---:|" * len(MODES))
    for chunk, label in CHUNKS:
        print(f"| {label} | " + " | ".join(f"{results[(m, chunk)]:,.0f}" for m, _ in MODES) + " |")


if __name__ == "__main__":
    main()
