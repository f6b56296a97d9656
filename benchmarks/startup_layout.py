"""Start-up of the two entry points the layout must keep fast, for one or two checkouts.

Times whole processes, alternating checkouts run by run (so machine load hits all alike),
median of ``--repeat`` runs each (seconds shown in ms):

* ``%load_ext cudnn_magic`` in a fresh IPython: a child that builds an ``InteractiveShell``
  (untimed) and then times ``shell.run_line_magic("load_ext", "cudnn_magic")`` alone with
  ``time.perf_counter`` (printed by the child);
* ``python -m cudnn_magic check --json``: the whole process, wall time.

Each checkout is put first on ``PYTHONPATH``; bytecode is cached by an untimed first run.

Usage: .venv/bin/python benchmarks/startup_layout.py [--repeat N] [--code DIR ...]
(default: this checkout only). To measure a change to the layout, give the checkout before it and
the one after it: ``--code /tmp/before DIR/after``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

LOAD_EXT = r"""
import time
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
t0 = time.perf_counter()
shell.run_line_magic("load_ext", "cudnn_magic")
t1 = time.perf_counter()
shell.run_line_magic("unload_ext", "cudnn_magic")
print(t1 - t0)
"""


def _env(code: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPATH"] = str(code) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def load_ext_s(code: Path) -> float:
    """Seconds ``%load_ext cudnn_magic`` takes in a fresh IPython using ``code``."""
    r = subprocess.run([sys.executable, "-c", LOAD_EXT], env=_env(code), cwd="/tmp",
                       capture_output=True, text=True, check=True)
    return float(r.stdout.strip().splitlines()[-1])


def check_json_s(code: Path) -> float:
    """Wall seconds of ``python -m cudnn_magic check --json`` using ``code``."""
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "cudnn_magic", "check", "--json"], env=_env(code), cwd="/tmp",
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--code", nargs="+", type=Path, default=[ROOT])
    a = ap.parse_args()
    codes = [c.resolve() for c in a.code]
    results: dict[tuple[str, Path], list[float]] = {}
    for c in codes:  # untimed: writes __pycache__
        load_ext_s(c)
        check_json_s(c)
    for _ in range(a.repeat):
        for c in codes:
            results.setdefault(("load_ext", c), []).append(load_ext_s(c))
            results.setdefault(("check --json", c), []).append(check_json_s(c))
    print(f"median of {a.repeat} runs, ms (min..max)")
    for (what, c), xs in results.items():
        print(f"{what:14s} {c!s:40s} {statistics.median(xs) * 1e3:7.1f}  ({min(xs) * 1e3:.1f}..{max(xs) * 1e3:.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
