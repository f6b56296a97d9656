"""Benchmark ``diagnose`` (what ``cudnn-magic explain`` runs) on 1, 10 and 50 MB logs.

The logs are built from real TensorFlow/PyTorch/JAX log lines (startup, dso_loader, device
creation, Keras progress bars, PyTorch warnings) plus noise, with the decisive cuDNN line near
the end, as in a long training run that fails late. For comparison it times what a user would
otherwise run: ``grep -E -i`` over the same file with a comparable pattern set (subprocess).

Memory (``--memory``): the peak resident memory of ``cudnn-magic explain FILE`` as a whole
process (``ru_maxrss`` of the child), minus the peak of the same command on a one-line log (the
interpreter and the package), divided by the log's size; ``--code DIR`` measures another
checkout beside this one (e.g. the commit before a change). Target: at most 2x the input.

One line (``--oneline``): ``cudnn-magic explain`` of a one-line log as a whole process, wall and CPU,
each checkout in turn.

Run: ``.venv/bin/python benchmarks/bench_explain.py [--sizes 1,10,50] [--repeat 3] [--memory | --oneline] [--code DIR]``.
Prints markdown tables (median of the repeats). Target: 1 MB under 20 ms, linear in size.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from cudnn_magic.engines.diagnose import diagnose

REAL_LINES = [
    "2023-12-12 16:48:38.112233: I tensorflow/core/util/port.cc:113] oneDNN custom operations are on. You may see slightly different numerical results due to floating-point round-off errors from different computation orders. To turn them off, set the environment variable `TF_ENABLE_ONEDNN_OPTS=0`.",
    "2023-12-12 16:48:39.001122: I tensorflow/core/platform/cpu_feature_guard.cc:182] This TensorFlow binary is optimized to use available CPU instructions in performance-critical operations.",
    "2023-12-12 16:48:40.100000: I external/local_xla/xla/stream_executor/cuda/cuda_executor.cc:901] successful NUMA node read from SysFS had negative value (-1), but there must be at least one NUMA node, so returning NUMA node zero.",
    "2023-12-12 16:48:40.200000: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1929] Created device /job:localhost/replica:0/task:0/device:GPU:0 with 22290 MB memory:  -> device: 0, name: NVIDIA A10G, pci bus id: 0000:00:1e.0, compute capability: 8.6",
    "2021-06-02 13:10:30.111111: I tensorflow/stream_executor/platform/default/dso_loader.cc:53] Successfully opened dynamic library libcublas.so.11",
    "2021-06-02 13:10:30.222222: I tensorflow/stream_executor/platform/default/dso_loader.cc:53] Successfully opened dynamic library libcudnn.so.8",
    "I0000 00:00:1700000000.000000   4242 device_compiler.h:186] Compiled cluster using XLA!  This line is logged at most once for the lifetime of the process.",
    "W0000 00:00:1700000000.100000   4242 gpu_timer.cc:114] Skipping the delay kernel, measurement accuracy will be reduced",
    "Epoch 3/50",
    "1875/1875 [==============================] - 12s 6ms/step - loss: 0.2931 - accuracy: 0.9154 - val_loss: 0.2710 - val_accuracy: 0.9226",
    "  64/1875 [>.............................] - ETA: 9s - loss: 0.3120 - accuracy: 0.9062",
    "/usr/lib/python3/dist-packages/torch/utils/data/dataloader.py:557: UserWarning: This DataLoader will create 8 worker processes in total.",
    "[W reducer.cpp:1300] Warning: find_unused_parameters=True was specified in DDP constructor, but did not find any unused parameters in the forward pass.",
    "train: epoch 12 step 4400 loss 1.2345 lr 3.0e-04 grad_norm 0.87 tokens/s 51234",
    "INFO:root:Saving checkpoint to /checkpoints/run-42/step-4400",
]
DECISIVE = ("2023-12-12 16:58:40.306928: E external/local_xla/xla/stream_executor/cuda/cuda_dnn.cc:447] "
            "Loaded runtime CuDNN library: 8.8.0 but source was compiled with: 8.9.4. CuDNN library needs to "
            "have matching major version and equal or higher minor version. If using a binary install, upgrade "
            "your CuDNN library.")
GREP_PATTERNS = [
    r"Loaded runtime CuDNN library", r"CUDNN_STATUS_[A-Z_]+", r"Could not (create|destroy) cudnn handle",
    r"Could not load (dynamic )?library", r"cannot open shared object file", r"DNN library",
    r"Failed to get convolution algorithm", r"cuDNN version incompatibility", r"Outdated cuDNN",
    r"Unable to load any of", r"Invalid handle", r"undefined symbol", r"insufficient driver",
    r"set cuDNN stream", r"cuDNN launch failure", r"unable to find an engine", r"execution plans",
    r"non-contiguous input", r"valid cuDNN algorithm", r"Cannot dlopen", r"CUDAExecutionProvider",
    r"out of memory", r"RESOURCE_EXHAUSTED", r"no kernel image", r"cudnn64_[0-9]+\.dll",
]


def build_log(size: int, seed: int = 0) -> str:
    """A log of about ``size`` bytes: real lines and noise, the decisive line near the end."""
    rnd = random.Random(seed)
    out: list[str] = []
    total = 0
    while total < size:
        if rnd.random() < 0.15:
            line = "".join(rnd.choice("abcdefghijklmnopqrstuvwxyz0123456789 .,:=/_-") for _ in range(rnd.randint(20, 160)))
        else:
            line = rnd.choice(REAL_LINES)
        out.append(line)
        total += len(line) + 1
    out.insert(max(0, len(out) - 20), DECISIVE)
    return "\n".join(out) + "\n"


def time_diagnose(text: str, repeat: int) -> tuple[float, str]:
    times = []
    first = ""
    for _ in range(repeat):
        t = time.perf_counter()
        res = diagnose(log=text)
        times.append(time.perf_counter() - t)
        first = res[0].id if res else "-"
    return statistics.median(times), first


def time_grep(path: str, repeat: int) -> float | None:
    grep = shutil.which("grep")
    if grep is None:
        return None
    args = [grep, "-E", "-i", "-n", "|".join(GREP_PATTERNS), path]
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


PEAK = r"""
import resource, subprocess, sys
p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def peak_kib(cmd: list[str], env: dict[str, str], cwd: str) -> int:
    """Peak RSS (KiB) of ``cmd`` run as the only child of a fresh process."""
    out = subprocess.run([sys.executable, "-c", PEAK, *cmd], capture_output=True, text=True, env=env, cwd=cwd, check=False)
    rc, kib = out.stdout.split()
    if int(rc) not in (0, 2):
        raise SystemExit(f"{cmd} failed: {rc}")
    return int(kib)


def memory_table(sizes: list[float], codes: list[str], repeat: int) -> None:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with tempfile.TemporaryDirectory() as tmp:
        small = os.path.join(tmp, "one-line.log")
        with open(small, "w") as fh:
            fh.write(DECISIVE + "\n")
        print("| code | log size | peak RSS, MiB | one-line log, MiB | above it, MiB | above it / log size |")
        print("|---|---:|---:|---:|---:|---:|")
        for mb in sizes:
            path = os.path.join(tmp, f"log-{mb}.txt")
            with open(path, "w") as fh:
                fh.write(build_log(int(mb * 2**20)))
            size = os.path.getsize(path)
            for code in codes:
                env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
                env["PYTHONPATH"] = code
                cmd = [sys.executable, "-m", "cudnn_magic", "explain", path]
                base = statistics.median(peak_kib([sys.executable, "-m", "cudnn_magic", "explain", small], env, code)
                                         for _ in range(repeat))
                peak = statistics.median(peak_kib(cmd, env, code) for _ in range(repeat))
                above = (peak - base) * 1024
                label = "this checkout" if os.path.samefile(code, root) else code
                print(f"| {label} | {size / 2**20:.0f} MiB | {peak / 1024:.0f} | {base / 1024:.0f} | {above / 2**20:.0f} | "
                      f"{above / size:.2f}x |")


def oneline_table(codes: list[str], repeat: int) -> None:
    """``cudnn-magic explain`` of a one-line log as a whole process (what a user pastes one error
    line into), each checkout in turn, run by run: wall and CPU medians (min..max)."""
    import resource

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with tempfile.TemporaryDirectory() as tmp:
        one = os.path.join(tmp, "one-line.log")
        with open(one, "w") as fh:
            fh.write(DECISIVE + "\n")
        times: dict[str, list[tuple[float, float]]] = {c: [] for c in codes}
        for rnd in range(repeat + 1):  # the first round is untimed: bytecode, page cache
            for code in codes:
                env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
                env["PYTHONPATH"] = code
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                t = time.perf_counter()
                subprocess.run([sys.executable, "-m", "cudnn_magic", "explain", one], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, env=env, cwd="/", check=False)
                wall = time.perf_counter() - t
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
                if rnd:
                    times[code].append((wall, cpu))
        print(f"`cudnn-magic explain` of a one-line log, whole process; median (min..max) of {repeat}, ms; "
              f"load average {os.getloadavg()[0]:.1f}\n")
        print("| code | wall | CPU |")
        print("|---|---:|---:|")
        for code in codes:
            w = [x * 1e3 for x, _ in times[code]]
            c = [y * 1e3 for _, y in times[code]]
            label = "this checkout" if os.path.samefile(code, root) else code
            print(f"| {label} | {statistics.median(w):.0f} ({min(w):.0f}..{max(w):.0f}) | "
                  f"{statistics.median(c):.0f} ({min(c):.0f}..{max(c):.0f}) |")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1,10,50", help="log sizes in MB, comma-separated")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--memory", action="store_true", help="measure the peak memory of `cudnn-magic explain FILE`")
    ap.add_argument("--code", action="append", default=[], help="another checkout to measure beside this one")
    ap.add_argument("--oneline", action="store_true", help="time `cudnn-magic explain` of a one-line log (whole process)")
    args = ap.parse_args(argv)
    if args.oneline:
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        oneline_table([*args.code, root], args.repeat)
        return 0
    if args.memory:
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        memory_table([float(x) for x in args.sizes.split(",") if x], [*args.code, root], args.repeat)
        return 0
    sizes = [float(x) for x in args.sizes.split(",") if x]
    diagnose(log="warm up")  # load the knowledge base once (lazy imports)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for mb in sizes:
            text = build_log(int(mb * 2**20))
            path = os.path.join(tmp, f"log-{mb}.txt")
            with open(path, "w") as fh:
                fh.write(text)
            t, first = time_diagnose(text, args.repeat)
            g = time_grep(path, args.repeat)
            rows.append((mb, t, g, first))
    base = rows[0][1] / rows[0][0] if rows else 0
    print("| log size | diagnose (ms) | ms per MB | grep -E -i (ms) | first diagnosis |")
    print("|---:|---:|---:|---:|---|")
    for mb, t, g, first in rows:
        gs = f"{g * 1000:.1f}" if g is not None else "n/a"
        print(f"| {mb:g} MB | {t * 1000:.1f} | {t * 1000 / mb:.1f} | {gs} | {first} |")
    if len(rows) > 1 and base:
        worst = max(r[1] / r[0] for r in rows) / base
        print(f"\nLinearity: the worst per-MB time is {worst:.2f}x the 1 MB per-MB time.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
