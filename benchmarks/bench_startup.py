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
* ``cudnn-magic check --json`` (the console script of the installed copy) and ``python -m cudnn_magic
  check --json`` for each ``--code`` checkout (``PYTHONPATH``), each twice: ``cold`` with an empty
  ``XDG_CACHE_HOME`` (the first check after an install: nothing on disk) and ``warm`` with what that
  run left there (a second check in a new process);
* ``python -c "import tensorflow as tf; tf.sysconfig.get_build_info()"``, what users run to
  learn TensorFlow's cuDNN.

Run it with the interpreter of an environment that has TensorFlow (``benchmarks/.venv-tf``:
``python -m venv benchmarks/.venv-tf && benchmarks/.venv-tf/bin/pip install "tensorflow[and-cuda]" .``, the GPU
install TensorFlow documents: about 6 GB with the CUDA wheels);
without TensorFlow that row is left out. ``--code DIR`` (repeatable) measures checkouts through
``PYTHONPATH`` beside each other. Wall and CPU (user + system of the child) are printed.

Every command runs as installed code does, with its bytecode cached (``PYTHONDONTWRITEBYTECODE``
is removed; an untimed first run writes the ``__pycache__``).

Usage: .../python benchmarks/bench_startup.py [--repeat N] [--code DIR ...]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
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


TIMED = r"""
import resource, subprocess, sys, time
t0 = time.perf_counter()
p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
wall = time.perf_counter() - t0
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
if p.returncode not in (0, 1):
    sys.stderr.write(p.stderr.decode()[-3000:]); sys.exit(3)
print(wall, ru.ru_utime + ru.ru_stime)
"""


def timed(cmd: list[str], env: dict[str, str], cwd: str) -> tuple[float, float]:
    """(wall, CPU of the child) in seconds, measured by a small parent of its own."""
    out = subprocess.run([sys.executable, "-c", TIMED, *cmd], capture_output=True, text=True, env=env, cwd=cwd, check=False)
    if out.returncode:
        raise SystemExit(f"{cmd[:3]} failed: {out.stderr[-2000:]}")
    wall, cpu = out.stdout.split()
    return float(wall), float(cpu)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--code", action="append", default=[],
                    help="a checkout to run as python -m cudnn_magic (PYTHONPATH); repeat for several")
    args = ap.parse_args()
    py = sys.executable
    # as installed packages run: with their bytecode cached (the first, untimed run writes it)
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTEST_CURRENT_TEST", "PYTHONDONTWRITEBYTECODE", "XDG_CACHE_HOME")}
    cwd = "/"
    scratch = tempfile.mkdtemp(prefix="bench-startup-")
    rows: list[tuple[str, list[str], dict[str, str], str | None]] = [
        ("`python -c pass` (interpreter and site)", [py, "-c", "pass"], env, None),
        ("floor: a script reading the same facts (below)", [py, "-c", FLOOR], env, None),
    ]
    script = shutil.which("cudnn-magic", path=os.path.dirname(py))
    if script:
        rows.append(("`cudnn-magic check --json` (installed), cold", [script, "check", "--json"], env, "cold"))
        rows.append(("`cudnn-magic check --json` (installed), warm", [script, "check", "--json"], env, "warm"))
    for code in args.code:
        e = dict(env, PYTHONPATH=code)
        rows.append((f"`python -m cudnn_magic check --json` ({code}), cold", [py, "-m", "cudnn_magic", "check", "--json"],
                     e, "cold"))
        rows.append((f"`python -m cudnn_magic check --json` ({code}), warm", [py, "-m", "cudnn_magic", "check", "--json"],
                     e, "warm"))
    has_tf = subprocess.run([py, "-c", "import importlib.util as u; raise SystemExit(u.find_spec('tensorflow') is None)"],
                            env=env, check=False).returncode == 0
    tf_row = "`python -c \"import tensorflow as tf; tf.sysconfig.get_build_info()\"`"
    if has_tf:
        rows.append((tf_row, [py, "-c", "import tensorflow as tf; tf.sysconfig.get_build_info()"], env, None))
    times: dict[str, list[tuple[float, float]]] = {name: [] for name, _, _, _ in rows}
    loads = []
    for rnd in range(args.repeat + 1):  # the first round is untimed: bytecode and page cache
        caches: dict[str, str] = {}
        for name, cmd, e, cache in rows:
            e = dict(e)
            key = name.rsplit(",", 1)[0]
            if cache == "cold":  # nothing on disk: the first check after an install
                caches[key] = os.path.join(scratch, f"{rnd}-{len(caches)}")
                e["XDG_CACHE_HOME"] = caches[key]
            elif cache == "warm":  # what the cold run left: a second check in a new process
                e["XDG_CACHE_HOME"] = caches[key]
            t = timed(cmd, e, cwd)
            if rnd:
                times[name].append(t)
        loads.append(os.getloadavg()[0])
    shutil.rmtree(scratch, ignore_errors=True)
    med = {k: statistics.median(w for w, _ in v) for k, v in times.items()}
    floor = med["floor: a script reading the same facts (below)"]
    tf = med.get(tf_row)
    print(f"Python {sys.version.split()[0]} ({py}), {os.cpu_count()} CPUs, load average {statistics.median(loads):.1f} "
          f"(median of the rounds); median (min..max) of {args.repeat} runs each, alternating; ms\n")
    print("| command | wall | CPU | vs the floor | TensorFlow's answer / this |")
    print("|---|---:|---:|---:|---:|")
    for name, _, _, _ in rows:
        ws = [w * 1e3 for w, _ in times[name]]
        cs = [c * 1e3 for _, c in times[name]]
        ratio = f"{tf / med[name]:.1f}x" if tf else ""
        print(f"| {name} | {statistics.median(ws):,.0f} ({min(ws):,.0f}..{max(ws):,.0f}) | {statistics.median(cs):,.0f} "
              f"({min(cs):,.0f}..{max(cs):,.0f}) | {med[name] / floor:.2f}x | {ratio} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
