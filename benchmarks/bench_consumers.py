"""What the cuDNN consumer scan costs: ``%cudnn_check`` with and without it, side by side.

Uses the same environment as ``bench_check.py`` (``benchmarks/.venv-frameworks``: TensorFlow with
its CUDA build info and PyTorch 2.13.0; built once by ``bench_check.py``), and times, in fresh
processes (median of ``--repeat``):

* the first ``%cudnn_check`` of a process (cold: every RECORD and ELF dynamic section is read)
  and the second (warm: RECORDs and ELF facts come from the (inode, size, mtime) cache);
* the same two calls with the consumer scan switched off (``consumer_check.check_consumers``
  replaced by an empty report), i.e. the check as it was before the scan existed;
* the scan alone (``scan_environment``), cold and warm, with how many RECORDs, distributions with
  native libraries, and native libraries it looked at, and how many ELF files it read.

The page cache is warm in every run (the files were read before); "cold" is about this tool's
own caches: each process starts with an empty ``XDG_CACHE_HOME`` (the on-disk scan cache's effect
on a new process is in ``bench_check_floor.py``, "warm"). Usage: python benchmarks/bench_consumers.py [--repeat N] [--venv DIR]
Prints a markdown table (milliseconds) and writes benchmarks/results/consumers.json.
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

RUN = r"""
import json, sys, time
with_scan = sys.argv[1] == "1"
import cudnn_magic.engines.check as check
if not with_scan:
    import cudnn_magic.engines.consumer_check as cc
    cc.check_consumers = lambda **kw: cc.ConsumerReport()
from cudnn_magic.probes import loader
from cudnn_magic.probes.frameworks.generic import scan_environment
t0 = time.perf_counter(); r1 = check.run_check(); cold = time.perf_counter() - t0
t0 = time.perf_counter(); r2 = check.run_check(); warm = time.perf_counter() - t0
out = {"cold": cold, "warm": warm, "consumers": len(r2.consumers),
       "rows": [(f.name, f.version, f.verdict) for f in r2.frameworks]}
if with_scan:
    import cudnn_magic.probes.frameworks.generic as pc, cudnn_magic.probes.loader as pl, cudnn_magic.probes.filefacts as ff
    pc._list_cache.clear(); pl._elf_cache.clear(); pc._docs.clear(); ff._docs.clear()  # nothing remembered
    os.environ["XDG_CACHE_HOME"] = os.path.join(os.environ["XDG_CACHE_HOME"], "empty")  # nothing on disk
    reads0 = loader.cache_stats()["elf_reads"]
    t0 = time.perf_counter(); s = scan_environment(); out["scan_cold"] = time.perf_counter() - t0
    out["elf_reads_cold"] = loader.cache_stats()["elf_reads"] - reads0
    reads0 = loader.cache_stats()["elf_reads"]
    t0 = time.perf_counter(); s = scan_environment(); out["scan_warm"] = time.perf_counter() - t0
    out["elf_reads_warm"] = loader.cache_stats()["elf_reads"] - reads0
    out["stats"] = s.stats
    out["dists"] = [d.label for d in s.distributions]
print("RESULT" + json.dumps(out))
"""


def run(py: Path, with_scan: bool) -> dict:
    import tempfile

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LD_LIBRARY_PATH")}
    with tempfile.TemporaryDirectory() as cache:
        env["XDG_CACHE_HOME"] = cache  # nothing on disk: "cold" is the first check after an install
        p = subprocess.run([str(py), "-c", "import os\n" + RUN, "1" if with_scan else "0"], capture_output=True,
                           text=True, env=env, timeout=600, check=False)
    if p.returncode:
        raise SystemExit(p.stderr[-3000:])
    return json.loads([ln for ln in p.stdout.splitlines() if ln.startswith("RESULT")][-1][6:])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--venv", default=str(ROOT / "benchmarks" / ".venv-frameworks"))
    args = ap.parse_args()
    py = Path(args.venv) / "bin" / "python"
    if not py.exists():
        raise SystemExit(f"{py} is missing: run benchmarks/bench_check.py once to build it")
    versions = subprocess.run([str(py), "-c", "import importlib.metadata as m; print(m.version('tensorflow'), m.version('torch'))"],
                              capture_output=True, text=True, check=False).stdout.split()
    runs = {True: [run(py, True) for _ in range(args.repeat)], False: [run(py, False) for _ in range(args.repeat)]}

    def med(flag: bool, key: str) -> float:
        return statistics.median(r[key] for r in runs[flag]) * 1000

    last = runs[True][-1]
    rows = [
        ("`%cudnn_check`, first call in a process (cold cache)", med(False, "cold"), med(True, "cold")),
        ("`%cudnn_check`, second call (warm cache)", med(False, "warm"), med(True, "warm")),
    ]
    print(f"\nEnvironment: tensorflow {versions[0] if versions else '?'}, torch {versions[1] if len(versions) > 1 else '?'}, "
          f"{os.cpu_count()} CPUs; median of {args.repeat} fresh processes\n")
    print("| what | without the consumer scan, ms | with it, ms | cost of the scan, ms |")
    print("|---|---:|---:|---:|")
    for name, a, b in rows:
        print(f"| {name} | {a:.1f} | {b:.1f} | {b - a:+.1f} |")
    st = last["stats"]
    print(f"\nThe scan alone: {med(True, 'scan_cold'):.1f} ms cold ({last['elf_reads_cold']} ELF files read), "
          f"{med(True, 'scan_warm'):.1f} ms warm ({last['elf_reads_warm']} read); it looked at {int(st['records'])} RECORDs, "
          f"{int(st['native_dists'])} distributions with native libraries, {int(st['native_libraries'])} native libraries.")
    print(f"Consumers found: {last['consumers']}; distributions kept: {last['dists']}")
    res = ROOT / "benchmarks" / "results"
    res.mkdir(exist_ok=True)
    (res / "consumers.json").write_text(json.dumps({"versions": versions, "runs": {str(k): v for k, v in runs.items()}}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
