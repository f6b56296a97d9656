"""GPU memory sampling cost, side by side with nvitop, gpustat and nvidia-smi, on the same NVML.

Builds the C stand-in for ``libnvidia-ml.so.1`` (tests/native/fake_nvml.c) with gcc and
configures 8 GPUs with two processes each; every tool below loads it through
``LD_LIBRARY_PATH`` (pynvml loads ``libnvidia-ml.so.1`` by name). On a machine with a real
driver, ``--real`` measures the real NVML instead. Measured:

* one ``cudnn_magic.engines.memory.sample()`` of all GPUs, in-process (target: under 2 ms for 8 GPUs);
* the ``%gpu_memory`` panel's sampler thread at 1 Hz: process CPU time / wall time over
  ``--duration`` seconds, widgets included (ipywidgets DummyComm; target: under 1% of a core);
* nvitop's in-process API on the same devices (``Device.all()`` once, then per sample each
  device's ``memory_info()`` and ``processes()``: memory per GPU and per process, what one
  ``sample()`` reads), median per sample;
* gpustat's own query (``GPUStatCollection.new_query()``, in-process) and ``gpustat --json``
  as a whole process, for reference only: ``new_query()`` sleeps 0.1 s for every GPU with
  processes (``time.sleep(0.1)`` in gpustat/core.py, to measure their CPU use), so its time is
  mostly that sleep, not NVML work;
* ``nvidia-smi --query-gpu=memory.used --format=csv`` as a whole process, where installed;
* ``cudnn-magic memory --json`` as a whole process.

Run it with an interpreter that has gpustat and nvitop (``python -m venv benchmarks/.venv-bench &&
benchmarks/.venv-bench/bin/pip install -e '.[bench]'``); rows of tools that are missing say so.
All figures are medians.

Usage: python benchmarks/bench_memory.py [--gpus 8] [--duration 20] [--repeat 5] [--real]
Prints a markdown table and writes benchmarks/results/memory.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STANDIN = ROOT / "tests" / "native" / "fake_nvml.c"

SAMPLE_COST = r"""
import json, statistics, sys, time
from cudnn_magic.engines.memory import sample
s = sample()
assert not s.error, s.error
n = int(sys.argv[1])
times = []
for _ in range(n):
    t0 = time.perf_counter(); s = sample(); times.append(time.perf_counter() - t0)
times.sort()
print(json.dumps({"gpus": len(s.gpus), "median_ms": statistics.median(times) * 1e3,
                  "p95_ms": times[int(0.95 * (n - 1))] * 1e3}))
"""

SAMPLER_CPU = r"""
import json, sys, time
from cudnn_magic.ui.memory_panel import MemoryPanel
duration = float(sys.argv[1])
p = MemoryPanel(interval_s=1.0)
p.refresh()                      # widgets built, pynvml loaded: measure the steady state
c0, w0 = time.process_time(), time.perf_counter()
p.start()
time.sleep(duration)
c1, w1 = time.process_time(), time.perf_counter()
p.close()
print(json.dumps({"cpu_s": c1 - c0, "wall_s": w1 - w0, "samples": p.samples,
                  "percent_of_core": 100.0 * (c1 - c0) / (w1 - w0)}))
"""

IDLE_CPU = r"""
import json, sys, time
duration = float(sys.argv[1])
c0, w0 = time.process_time(), time.perf_counter()
time.sleep(duration)
c1, w1 = time.process_time(), time.perf_counter()
print(json.dumps({"percent_of_core": 100.0 * (c1 - c0) / (w1 - w0)}))
"""

NVITOP_QUERY = r"""
import json, statistics, sys, time
from nvitop import Device
devices = Device.all()
def one():
    return [(d.memory_info(), [(p.pid, p.gpu_memory()) for p in d.processes().values()]) for d in devices]
first = one()
n = int(sys.argv[1])
times = []
for _ in range(n):
    t0 = time.perf_counter(); one(); times.append(time.perf_counter() - t0)
print(json.dumps({"gpus": len(devices), "median_ms": statistics.median(times) * 1e3,
                  "processes": sum(len(p) for _, p in first)}))
"""

GPUSTAT_QUERY = r"""
import json, statistics, sys, time
from gpustat import GPUStatCollection
GPUStatCollection.new_query()
n = int(sys.argv[1])
times = []
for _ in range(n):
    t0 = time.perf_counter(); GPUStatCollection.new_query(); times.append(time.perf_counter() - t0)
print(json.dumps({"median_ms": statistics.median(times) * 1e3}))
"""


def build_standin(directory: Path) -> Path:
    out = directory / "libnvidia-ml.so.1"
    subprocess.run(["gcc", "-shared", "-fPIC", "-O2", "-Wl,-soname,libnvidia-ml.so.1", "-o", str(out), str(STANDIN)],
                   check=True, capture_output=True)
    return directory


def child_env(libdir: Path | None, gpus: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}
    if libdir is not None:
        env["LD_LIBRARY_PATH"] = os.pathsep.join([str(libdir)] + [p for p in env.get("LD_LIBRARY_PATH", "").split(os.pathsep) if p])
        spec = [f"gpus={gpus}"] + [f"procs.{i}=self:{(i + 1) << 28},{4000 + i}:{1 << 30}" for i in range(gpus)]
        spec += [f"step.{i}=1048576" for i in range(gpus)]
        env["FAKE_NVML_SPEC"] = ";".join(spec)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env


def run_json(code: str, env: dict[str, str], *args: str) -> dict:
    p = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, cwd=ROOT, check=False)
    if p.returncode != 0:
        raise RuntimeError(p.stderr[-2000:])
    return json.loads(p.stdout.strip().splitlines()[-1])


def time_process(cmd: list[str], env: dict[str, str], repeat: int) -> float | None:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        p = subprocess.run(cmd, env=env, capture_output=True, cwd=ROOT, check=False)
        times.append(time.perf_counter() - t0)
        if p.returncode != 0:
            return None
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--duration", type=float, default=20.0, help="seconds the 1 Hz sampler runs")
    ap.add_argument("--repeat", type=int, default=5, help="runs per whole-process timing (median)")
    ap.add_argument("--samples", type=int, default=500, help="in-process samples (median)")
    ap.add_argument("--real", action="store_true", help="use this machine's real NVML, not the stand-in")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        libdir = None if args.real else build_standin(Path(tmp))
        env = child_env(libdir, args.gpus)
        rows: list[tuple[str, str, str]] = []
        results: dict[str, object] = {"nvml": "real" if args.real else "C stand-in (tests/native/fake_nvml.c)"}

        s = run_json(SAMPLE_COST, env, str(args.samples))
        results["sample"] = s
        rows.append((f"cudnn_magic sample(), {s['gpus']} GPUs, in-process", f"{s['median_ms']:.3f} ms (p95 {s['p95_ms']:.3f})",
                     "target < 2 ms"))

        c = run_json(SAMPLER_CPU, env, str(args.duration))
        idle = run_json(IDLE_CPU, env, str(args.duration))
        results["sampler"] = c
        results["idle"] = idle
        rows.append((f"%gpu_memory sampler at 1 Hz ({c['samples']} samples in {c['wall_s']:.0f} s, widgets included)",
                     f"{c['percent_of_core']:.3f}% of a core (idle process: {idle['percent_of_core']:.3f}%)",
                     "target < 1%"))

        try:
            import nvitop  # noqa: F401

            nv = run_json(NVITOP_QUERY, env, str(args.samples))
            results["nvitop_query"] = nv
            rows.append((f"nvitop `Device.memory_info()` + `processes()` of {nv['gpus']} GPUs, in-process",
                         f"{nv['median_ms']:.3f} ms", "same NVML, same facts"))
        except ImportError:
            rows.append(("nvitop", "not available (pip install nvitop)", ""))
        try:
            import gpustat  # noqa: F401

            g = run_json(GPUSTAT_QUERY, env, str(min(args.samples, 100)))
            results["gpustat_query"] = g
            rows.append(("gpustat GPUStatCollection.new_query(), in-process", f"{g['median_ms']:.3f} ms", "same NVML"))
            gp = time_process([sys.executable, "-m", "gpustat", "--json"], env, args.repeat)
            results["gpustat_process_s"] = gp
            rows.append(("`gpustat --json`, whole process", f"{gp * 1e3:.0f} ms" if gp else "failed", "same NVML"))
        except ImportError:
            rows.append(("gpustat", "not available (pip install gpustat)", ""))

        smi = shutil.which("nvidia-smi")
        if smi:
            t = time_process([smi, "--query-gpu=memory.used", "--format=csv"], env, args.repeat)
            results["nvidia_smi_process_s"] = t
            rows.append(("`nvidia-smi --query-gpu=memory.used --format=csv`, whole process",
                         f"{t * 1e3:.0f} ms" if t else "failed (it does not use the stand-in's NVML)", ""))
        else:
            results["nvidia_smi_process_s"] = None
            rows.append(("`nvidia-smi --query-gpu=memory.used --format=csv`", "not available (not installed here)", ""))

        cm = time_process([sys.executable, "-m", "cudnn_magic", "memory", "--json"], env, args.repeat)
        results["cli_process_s"] = cm
        rows.append(("`cudnn-magic memory --json`, whole process", f"{cm * 1e3:.0f} ms" if cm else "failed", ""))

    print(f"NVML: {results['nvml']}; {args.gpus} GPUs, 2 processes each\n")
    print("| measurement | result | note |\n|---|---|---|")
    for r in rows:
        print(f"| {r[0]} | {r[1]} | {r[2]} |")
    out = ROOT / "benchmarks" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "memory.json").write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
