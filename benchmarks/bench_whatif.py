"""The what-if's cost on top of pip's own dry run.

In one venv holding the real ``nvidia-cudnn-jit-cu13==9.24.0.43`` (built once under
``benchmarks/.venv-whatif`` with ``python -m venv``, the wheel, ``packaging``, ``nvidia-ml-py``
and a ``.pth`` to this checkout), alternating, ``--repeat`` times each, medians reported:

* ``plain``: ``python -m pip install --dry-run --quiet --report - REQ`` (what pip alone costs);
* ``whatif``: ``python -m cudnn_magic check --json --what-if REQ`` as a whole process (pip's dry
  run, the installed distributions read in-process, our rules, and, when an error is predicted,
  one more dry run that verifies the safer requirement);
* ``whatif-no-safer``: the same in-process with ``what_if(REQ, safer=False)``, with the seconds
  in pip and in our rules that the result records.

Two requirements: one of another CUDA family (predicts ``cudnn-wheel-overwritten``, so the
safer-requirement search runs) and a later release of the same family (no error).
``--no-deps`` keeps pip's network work to one package's metadata. pip's HTTP cache is warm
after the first run (the first run of each is dropped).

Usage: python benchmarks/bench_whatif.py [--repeat N] [--venv DIR]
Prints a markdown table (seconds) and writes benchmarks/results/whatif.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REQS = ("nvidia-cudnn-jit-cu12==9.27.0.42 --no-deps", "nvidia-cudnn-jit-cu13==9.25.0.15 --no-deps")

IN_PROCESS = r"""
import json, sys, time
from cudnn_magic.engines.whatif import what_if
t0 = time.perf_counter(); r = what_if(sys.argv[1], safer=False); total = time.perf_counter() - t0
print(json.dumps({"total": total, "pip": r.pip_s, "rules": r.rules_s, "error": r.error}))
"""


def build(venv: Path) -> Path:
    py = venv / "bin" / "python"
    if py.exists():
        return py
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps", "nvidia-cudnn-jit-cu13==9.24.0.43", "packaging",
                    "nvidia-ml-py"], check=True)
    site = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    Path(site, "cudnn_magic_checkout.pth").write_text(str(ROOT) + "\n")
    return py


def timed(cmd: list[str]) -> tuple[float, str]:
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, cwd="/", check=False)
    return time.perf_counter() - t0, p.stdout


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--venv", type=Path, default=ROOT / "benchmarks" / ".venv-whatif")
    a = ap.parse_args()
    py = str(build(a.venv))
    results = {}
    for req in REQS:
        words = req.split()
        rows: dict[str, list[float]] = {"plain": [], "whatif": [], "whatif-no-safer": [], "pip-in-whatif": [], "rules": []}
        for i in range(a.repeat + 1):
            plain, _ = timed([py, "-m", "pip", "install", "--dry-run", "--quiet", "--report", "-",
                              "--disable-pip-version-check", *words])
            full, out = timed([py, "-m", "cudnn_magic", "check", "--json", "--what-if", req])
            _, inner = timed([py, "-c", IN_PROCESS, req])
            d = json.loads(inner)
            if i == 0:
                continue  # warm pip's cache
            rows["plain"].append(plain)
            rows["whatif"].append(full)
            rows["whatif-no-safer"].append(d["total"])
            rows["pip-in-whatif"].append(d["pip"])
            rows["rules"].append(d["rules"])
        results[req] = {k: statistics.median(v) for k, v in rows.items()}
        results[req]["runs"] = a.repeat
        results[req]["error_predicted"] = json.loads(out)["error"]
    print("| requirement | plain pip dry run | `check --what-if` (process) | what-if in-process, no safer search "
          "| of which pip's dry run | our rules |")
    print("|---|---:|---:|---:|---:|---:|")
    for req, r in results.items():
        print(f"| `{req}` | {r['plain']:.2f} s | {r['whatif']:.2f} s | {r['whatif-no-safer']:.2f} s | "
              f"{r['pip-in-whatif']:.2f} s | {r['rules'] * 1000:.0f} ms |")
    out_dir = ROOT / "benchmarks" / "results"
    out_dir.mkdir(exist_ok=True)
    (out_dir / "whatif.json").write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
