"""``%cudnn_check`` on a machine with many cuDNN copies whose version only a child process can
tell, side by side: this checkout against another (``--code``, e.g. the commit before a change).

Makes ``--copies`` directories (default 40), each holding a copy of the real cuDNN 9.12 wheel's
``libcudnn.so.9`` and ``libcudnn_graph.so.9`` (no header, no wheel metadata, a file name without
the full version), puts them all on ``LD_LIBRARY_PATH``, and runs ``run_check()`` three times in
one fresh process. For each run: wall time, CPU of the child processes (``RUSAGE_CHILDREN``),
the most children alive at once and their summed RSS at that moment (sampled from ``/proc``
every 2 ms). The first run asks every copy; later runs ask only what changed.

Usage: python benchmarks/bench_version_queries.py [--copies N] [--code DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

CHILD = r"""
import json, os, resource, sys, threading, time
from cudnn_magic.engines.check import run_check
me = os.getpid()

def children():
    out = []
    for task in os.listdir(f"/proc/{me}/task"):
        try:
            with open(f"/proc/{me}/task/{task}/children") as fh:
                out += [int(x) for x in fh.read().split()]
        except OSError:
            pass
    return out

def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0

peak = {"n": 0, "rss": 0}
stop = False
def sample():
    while not stop:
        kids = children()
        if len(kids) >= peak["n"]:
            rss = sum(rss_kib(k) for k in kids)
            if len(kids) > peak["n"] or rss > peak["rss"]:
                peak.update(n=len(kids), rss=max(rss, peak["rss"] if len(kids) == peak["n"] else 0))
        time.sleep(0.002)
runs = []
for i in range(3):
    peak.update(n=0, rss=0); stop = False
    t = threading.Thread(target=sample, daemon=True); t.start()
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    rep = run_check()
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    stop = True; t.join()
    known = sum(1 for c in rep.cudnn_installed if c.is_main and c.version and "child" in (c.version_source or ""))
    runs.append({"wall_s": wall, "child_cpu_s": (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime),
                 "peak_children": peak["n"], "peak_rss_mib": peak["rss"] / 1024, "versions_from_children": known})
print(json.dumps(runs))
"""


def make_copies(n: int, where: Path) -> list[str]:
    from helpers.real_wheels import install_wheel

    lib = install_wheel("nvidia-cudnn-jit-cu12", "9.12.0.46") / "nvidia" / "cudnn_jit" / "lib"
    dirs = []
    for i in range(n):
        d = where / f"cudnn-copy-{i:02d}"
        d.mkdir(parents=True)
        for name in ("libcudnn.so.9", "libcudnn_graph.so.9"):
            shutil.copy2(lib / name, d / name)
        dirs.append(str(d))
    return dirs


def run(code: Path, dirs: list[str]) -> list[dict]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTEST_CURRENT_TEST")}
    env["PYTHONPATH"] = str(code)
    env["LD_LIBRARY_PATH"] = os.pathsep.join(dirs)
    p = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, env=env, cwd=str(code),
                       timeout=900, check=False)
    if p.returncode:
        raise SystemExit(p.stderr[-3000:])
    return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--copies", type=int, default=40)
    ap.add_argument("--code", action="append", default=[],
                    help="checkout(s) of cudnn-magic to measure (repeatable; default: this one)")
    args = ap.parse_args()
    codes = [Path(c) for c in (args.code or [str(ROOT)])]
    with tempfile.TemporaryDirectory(prefix="cudnn-copies-") as tmp:
        dirs = make_copies(args.copies, Path(tmp))
        print(f"{args.copies} cuDNN 9.12 copies without headers on LD_LIBRARY_PATH; {os.cpu_count()} CPUs; "
              f"run_check() three times in one process\n")
        print("| code | run | wall, s | CPU of child processes, s | children at once (peak) "
              "| their RSS at the peak, MiB | versions from children |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for code in codes:
            for i, r in enumerate(run(code, dirs), 1):
                print(f"| {code} | {i} | {r['wall_s']:.2f} | {r['child_cpu_s']:.2f} | {r['peak_children']} | "
                      f"{r['peak_rss_mib']:.0f} | {r['versions_from_children']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
