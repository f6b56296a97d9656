"""%cudnn_check against what users otherwise run, side by side, in one environment.

Builds (once) ``benchmarks/.venv-frameworks`` with TensorFlow (CUDA build), PyTorch (the CPU
wheel on disk, or whatever ``--torch`` names), the cuDNN wheel and cudnn-magic, then times in
that environment, each the median of ``--repeat`` runs:

* ``%cudnn_check`` inside a running IPython shell (what a notebook user waits for), and the
  ``%load_ext cudnn_magic`` that precedes it;
* ``cudnn-magic check`` as a whole process (Python start-up included);
* ``python -c "import tensorflow as tf; tf.sysconfig.get_build_info()"``;
* ``python -m torch.utils.collect_env``.

Usage: python benchmarks/bench_check.py [--repeat N] [--venv DIR] [--torch SPEC]
Prints a markdown table (seconds) and writes benchmarks/results/check.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

IN_SHELL = r"""
import json, time, sys
from IPython.core.interactiveshell import InteractiveShell
ip = InteractiveShell.instance()
t0 = time.perf_counter(); ip.run_line_magic("load_ext", "cudnn_magic"); load = time.perf_counter() - t0
times = []
for _ in range(int(sys.argv[1])):
    t0 = time.perf_counter(); r = ip.run_line_magic("cudnn_check", "--json"); times.append(time.perf_counter() - t0)
heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("tensorflow", "torch", "jax", "cupy", "pynvml", "ipywidgets"))
fws = [(f["name"], f["version"], f["cudnn_compiled"], f["verdict"]) for f in r["frameworks"]]
print(json.dumps({"load_ext": load, "check": times, "frameworks": fws, "imported": heavy}))
"""


def sh(cmd: list[str], **kw) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, **kw, check=False)


def ensure_venv(venv: Path, torch_spec: str) -> Path:
    py = venv / "bin" / "python"
    if not py.exists():
        sh([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    have = sh([str(py), "-c", "import tensorflow, torch, cudnn_magic"]).returncode == 0
    if not have:
        print(f"installing tensorflow, {torch_spec}, cudnn-magic into {venv} (once; a few minutes)...", flush=True)
        sh([*pip, "tensorflow", torch_spec], check=True)
        sh([*pip, "--no-deps", "nvidia-cudnn-jit-cu12"], check=True)
        sh([*pip, "-e", str(ROOT)], check=True)
    return py


def timed(cmd: list[str], repeat: int, env: dict[str, str]) -> tuple[float, list[float]]:
    runs = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
        runs.append(time.perf_counter() - t0)
        if p.returncode not in (0, 1):
            raise SystemExit(f"{cmd} failed: {p.stderr[-2000:]}")
    return statistics.median(runs), runs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--venv", default=str(ROOT / "benchmarks" / ".venv-frameworks"))
    ap.add_argument("--torch", default="torch==2.13.0")
    args = ap.parse_args()
    py = ensure_venv(Path(args.venv), args.torch)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    query = "import importlib.metadata as m; print(m.version('tensorflow'), m.version('torch'))"
    versions = sh([str(py), "-c", query]).stdout.split()
    shell = sh([str(py), "-c", IN_SHELL, str(args.repeat)], env=env)
    if shell.returncode:
        raise SystemExit(shell.stderr)
    inshell = json.loads(shell.stdout.strip().splitlines()[-1])
    check_med = statistics.median(inshell["check"])
    cli_med, _ = timed([str(py), "-m", "cudnn_magic", "check", "--json"], args.repeat, env)
    tf_med, _ = timed([str(py), "-c", "import tensorflow as tf; tf.sysconfig.get_build_info()"], args.repeat, env)
    tc_med, _ = timed([str(py), "-m", "torch.utils.collect_env"], args.repeat, env)
    rows = [
        ("`%load_ext cudnn_magic` (in a running shell)", inshell["load_ext"]),
        ("`%cudnn_check` (in a running shell; frameworks installed, not imported)", check_med),
        ("`cudnn-magic check --json` (whole process)", cli_med),
        ("`python -c \"import tensorflow as tf; tf.sysconfig.get_build_info()\"`", tf_med),
        ("`python -m torch.utils.collect_env`", tc_med),
    ]
    print(f"\nEnvironment: tensorflow {versions[0]}, torch {versions[1]}, {os.cpu_count()} CPUs; median of {args.repeat} runs\n")
    print("| what | seconds | vs `%cudnn_check` |")
    print("|---|---:|---:|")
    for name, s in rows:
        print(f"| {name} | {s:.4f} | {s / check_med:.1f}x |")
    print(f"\nFrameworks seen by %cudnn_check: {inshell['frameworks']}")
    print(f"Heavy modules imported by %load_ext + %cudnn_check: {inshell['imported'] or 'none'}")
    res_dir = ROOT / "benchmarks" / "results"
    res_dir.mkdir(exist_ok=True)
    (res_dir / "check.json").write_text(json.dumps({"rows": rows, "inshell": inshell, "versions": versions}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
