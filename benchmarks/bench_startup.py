"""Start-up of ``cudnn-magic check --json`` side by side with the floor and with TensorFlow.

Times whole processes, alternating them run by run (so machine load hits all alike), median
of ``--repeat`` runs each:

* ``python -c pass``: the interpreter with its ``site`` (every command pays it);
* the floor: a stand-alone script (:data:`FLOOR`, below) that reads the same facts as
  ``check`` in the plainest way: the ``libcudnn`` lines of ``/proc/self/maps``, the
  ``libcudnn*`` files of the same directories (wheels' ``nvidia/*/lib``, ``LD_LIBRARY_PATH``,
  the ``ld.so`` cache, ``CUDA_HOME``, ``/usr/local/cuda*``, the system directories) with their
  ELF header and any ``cudnn_version.h`` beside them, the installed frameworks' metadata (and
  TensorFlow's ``build_info.py``), whether ``libnvidia-ml.so.1`` loads; then one JSON line;
* ``cudnn-magic check --json`` (the console script) and ``python -m cudnn_magic check --json``;
* ``python -c "import tensorflow as tf; tf.sysconfig.get_build_info()"``, what users run to
  learn TensorFlow's cuDNN.

Run it with the interpreter of an environment that has TensorFlow (``benchmarks/.venv-tf``:
``python -m venv benchmarks/.venv-tf && benchmarks/.venv-tf/bin/pip install tensorflow -e .``);
without TensorFlow that row is left out. ``--code DIR`` measures another checkout through
``PYTHONPATH`` (``python -m cudnn_magic`` only).

Every command runs as installed code does, with its bytecode cached (``PYTHONDONTWRITEBYTECODE``
is removed; an untimed first run writes the ``__pycache__``).

Usage: .../python benchmarks/bench_startup.py [--repeat N] [--code DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

FLOOR = r"""
import ctypes, glob, json, os, re, sys
facts = {}
with open("/proc/self/maps") as fh:
    facts["mapped"] = sorted({l.split()[-1] for l in fh if "libcudnn" in l})
dirs = []
for p in sys.path:
    if p.endswith(("site-packages", "dist-packages")):
        dirs += glob.glob(os.path.join(p, "nvidia", "*", "lib")) + glob.glob(os.path.join(p, "*", "lib"))
dirs += [d for d in os.environ.get("LD_LIBRARY_PATH", "").split(":") if d]
for var in ("CUDA_HOME", "CUDA_PATH", "CONDA_PREFIX"):
    if os.environ.get(var):
        dirs += [os.path.join(os.environ[var], "lib64"), os.path.join(os.environ[var], "lib")]
dirs += glob.glob("/usr/local/cuda*/lib64") + ["/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib", "/lib", "/usr/local/lib"]
try:
    with open("/etc/ld.so.cache", "rb") as fh:
        cache = fh.read()
    facts["ldcache"] = sorted({m.decode() for m in re.findall(rb"libcudnn[^\0]*", cache)})
except OSError:
    facts["ldcache"] = []
files = []
for d in dict.fromkeys(dirs):
    for f in glob.glob(os.path.join(d, "libcudnn*")):
        try:
            with open(f, "rb") as fh:
                head = fh.read(64)
        except OSError:
            continue
        h = os.path.join(os.path.dirname(d), "include", "cudnn_version.h")
        ver = open(h).read() if os.path.exists(h) else None
        files.append({"path": os.path.realpath(f), "elf": head[:4] == b"\x7fELF", "header": ver is not None})
facts["files"] = files
fw = {}
for p in sys.path:
    for meta in glob.glob(os.path.join(p, "*.dist-info", "METADATA")):
        name = os.path.basename(os.path.dirname(meta)).split("-")[0].lower()
        if name.startswith(("tensorflow", "torch", "jax", "cupy", "onnxruntime", "paddle", "ctranslate2")):
            with open(meta, encoding="utf-8", errors="replace") as fh:
                fw[name] = [l.strip() for l in fh if l.startswith(("Version:", "Requires-Dist: nvidia"))]
            bi = os.path.join(p, "tensorflow", "python", "platform", "build_info.py")
            if name == "tensorflow" and os.path.exists(bi):
                fw["tensorflow_build_info"] = open(bi).read()[:2000]
facts["frameworks"] = fw
try:
    ctypes.CDLL("libnvidia-ml.so.1")
    facts["nvml"] = True
except OSError as exc:
    facts["nvml"] = str(exc)
print(json.dumps(facts))
"""


def timed(cmd: list[str], env: dict[str, str], cwd: str) -> float:
    t0 = time.perf_counter()
    p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=cwd)
    dt = time.perf_counter() - t0
    if p.returncode not in (0, 1):
        raise SystemExit(f"{cmd} failed ({p.returncode}): {p.stderr.decode()[-2000:]}")
    return dt


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--code", default=None, help="another checkout to run as python -m cudnn_magic (PYTHONPATH)")
    args = ap.parse_args()
    py = sys.executable
    # as installed packages run: with their bytecode cached (the first, untimed run writes it)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTEST_CURRENT_TEST", "PYTHONDONTWRITEBYTECODE")}
    cwd = "/"
    rows: list[tuple[str, list[str], dict[str, str]]] = [
        ("`python -c pass` (interpreter and site)", [py, "-c", "pass"], env),
        ("floor: a script reading the same facts (below)", [py, "-c", FLOOR], env),
    ]
    script = shutil.which("cudnn-magic", path=os.path.dirname(py))
    if script:
        rows.append(("`cudnn-magic check --json`", [script, "check", "--json"], env))
    rows.append(("`python -m cudnn_magic check --json`", [py, "-m", "cudnn_magic", "check", "--json"], env))
    if args.code:
        rows.append((f"`python -m cudnn_magic check --json` ({args.code})", [py, "-m", "cudnn_magic", "check", "--json"],
                     dict(env, PYTHONPATH=args.code)))
    has_tf = subprocess.run([py, "-c", "import importlib.util as u; raise SystemExit(u.find_spec('tensorflow') is None)"],
                            env=env).returncode == 0
    if has_tf:
        rows.append(("`python -c \"import tensorflow as tf; tf.sysconfig.get_build_info()\"`",
                     [py, "-c", "import tensorflow as tf; tf.sysconfig.get_build_info()"], env))
    times: dict[str, list[float]] = {name: [] for name, _, _ in rows}
    for name, cmd, e in rows:  # warm the page cache once
        timed(cmd, e, cwd)
    for _ in range(args.repeat):
        for name, cmd, e in rows:
            times[name].append(timed(cmd, e, cwd))
    med = {k: statistics.median(v) for k, v in times.items()}
    floor = med["floor: a script reading the same facts (below)"]
    ours = med.get("`cudnn-magic check --json`") or med["`python -m cudnn_magic check --json`"]
    print(f"Python {sys.version.split()[0]} ({py}), {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; "
          f"median of {args.repeat} runs each, alternating\n")
    print("| command | ms | vs the floor | vs `cudnn-magic check --json` |")
    print("|---|---:|---:|---:|")
    for name, _, _ in rows:
        print(f"| {name} | {med[name] * 1000:.0f} | {med[name] / floor:.2f}x | {med[name] / ours:.1f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
