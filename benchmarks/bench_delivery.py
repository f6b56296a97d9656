"""Time until the front end has every byte a cell wrote to fd 2: a bare kernel against one with
``%load_ext cudnn_magic``, side by side.

Two real IPython kernels are started by ``jupyter_client`` (the same interpreter, the same
``ipykernel``), one bare and one that ran ``%load_ext cudnn_magic`` (the fd-2 capture on). Each
then runs cells that write ``SIZE`` bytes of TensorFlow-style native log lines to fd 2 with one
``os.write`` (the lines of ``bench_cell_overhead.py``: they name CUDA, cuDNN, GPUs and libraries
but hold no warning), the two kernels alternating cell by cell so machine load hits both alike.
The client (this process, a ``BlockingKernelClient`` reading the IOPub channel as a front end
does) times from sending ``execute_request`` to

* ``idle``: the kernel's ``status: idle`` for that request (the cell is done), and
* ``last byte``: the moment the ``stream`` messages of that request hold all ``SIZE`` bytes.

Throughput is ``SIZE`` over the last-byte time. Each size runs quiet and again with a CPU-bound
process beside it (``python -c "while True: pass"``, niced like nothing else: it competes for a
core as a second notebook's training loop would). ``--kernel-stderr`` says where the kernels' own
stderr goes (the server's terminal or log file in real use; ipykernel copies every captured byte
there too): ``file`` (a log file, as ``jupyter lab > log 2>&1``) or ``null`` (``/dev/null``).

Usage: .venv/bin/python benchmarks/bench_delivery.py [--sizes 64K,1M,64M] [--repeat N]
    [--kernel-stderr file|null] [--code DIR] [--load quiet,cpu]

Prints one markdown table: per size and load, the medians (min..max) of both sides in ms, the
median of the per-pair differences (ours minus bare, paired by alternation) and the ratio of the
medians, and MiB/s.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_cell_overhead import NATIVE_LOG  # noqa: E402 - the same TensorFlow-style lines

SETUP = NATIVE_LOG + "import os\nLOGS = {}\n"

UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def parse_size(text: str) -> int:
    text = text.strip().upper().removesuffix("IB").removesuffix("B")
    if text and text[-1] in UNITS:
        return int(float(text[:-1]) * UNITS[text[-1]])
    return int(text)


def label(size: int) -> str:
    return f"{size >> 20} MiB" if size >= 1 << 20 else f"{size >> 10} KiB"


class Kernel:
    """A kernel started by jupyter_client with its stderr sent to ``stderr`` (a file object)."""

    def __init__(self, name: str, ours: bool, code: Path, stderr) -> None:  # type: ignore[no-untyped-def]
        from jupyter_client.manager import KernelManager

        self.name, self.ours = name, ours
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTEST_CURRENT_TEST")}
        env["PYTHONPATH"] = str(code)
        self.km = KernelManager(kernel_name="python3")
        self.km.kernel_spec.argv[0] = sys.executable  # this environment's ipykernel, for both sides
        self.km.start_kernel(env=env, stderr=stderr, stdout=stderr, cwd=str(code))
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=120)
        self.run(SETUP)
        if ours:
            self.run("%load_ext cudnn_magic")
            loaded = self.run("from cudnn_magic.shell.annotate import annotator as _a; "
                              "print(_a() is not None and _a().tee is not None and _a().tee.active)")
            if "True" not in loaded:
                raise SystemExit(f"the capture did not start in the {name} kernel: {loaded!r}")

    def run(self, code: str, timeout: float = 600) -> str:
        """Run ``code``; return its stdout text (raises on an error reply)."""
        msg_id = self.kc.execute(code)
        out: list[str] = []
        while True:
            msg = self.kc.get_iopub_msg(timeout=timeout)
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            t = msg["msg_type"]
            if t == "stream" and msg["content"]["name"] == "stdout":
                out.append(msg["content"]["text"])
            elif t == "error":
                raise SystemExit(f"{self.name}: {msg['content']['ename']}: {msg['content']['evalue']}")
            elif t == "status" and msg["content"]["execution_state"] == "idle":
                return "".join(out)

    def timed_write(self, size: int, timeout: float = 600) -> tuple[float, float]:
        """Run ``os.write(2, LOGS[size])``; return (seconds to idle, seconds to the last byte)."""
        msg_id = self.kc.execute(f"os.write(2, LOGS[{size}])", silent=False, store_history=False)
        t0 = time.perf_counter()
        got = 0
        idle = last = None
        while idle is None or last is None:
            msg = self.kc.get_iopub_msg(timeout=timeout)
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            t = msg["msg_type"]
            if t == "stream" and msg["content"]["name"] == "stderr":
                got += len(msg["content"]["text"])  # ASCII lines: one character per byte
                if got >= size and last is None:
                    last = time.perf_counter() - t0
            elif t == "status" and msg["content"]["execution_state"] == "idle":
                idle = time.perf_counter() - t0
            elif t == "error":
                raise SystemExit(f"{self.name}: {msg['content']['ename']}: {msg['content']['evalue']}")
        if got < size:  # more is a notice of ours after the bytes (the 64 MiB cell waited in the spool file)
            raise SystemExit(f"{self.name}: got {got} bytes of {size}")
        return idle, last

    def stop(self) -> None:
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)


def spinner() -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="64K,1M,64M")
    ap.add_argument("--repeat", type=int, default=15, help="cells per kernel, size and load (64 MiB: a third)")
    ap.add_argument("--kernel-stderr", choices=("file", "null"), default="file")
    ap.add_argument("--code", default=str(ROOT), help="checkout of cudnn-magic the kernel with the extension runs")
    ap.add_argument("--load", default="quiet,cpu", help="quiet, cpu (a CPU-bound process beside it), or both")
    args = ap.parse_args()
    sizes = [parse_size(s) for s in args.sizes.split(",") if s]
    loads = [x for x in args.load.split(",") if x]
    tmp = tempfile.mkdtemp(prefix="bench-delivery-")
    # closed in the finally below, once the kernels that write to them have stopped
    sinks = [open(os.path.join(tmp, f"kernel-{i}.log"), "wb") if args.kernel_stderr == "file" else  # noqa: SIM115
             open(os.devnull, "wb") for i in range(2)]  # noqa: SIM115
    code = Path(args.code).resolve()
    kernels = [Kernel("bare", False, code, sinks[0]), Kernel("cudnn-magic", True, code, sinks[1])]
    rows = []
    try:
        for k in kernels:
            k.run(f"for s in {sizes!r}: LOGS[s] = native_log(s)")
            for s in sizes:  # one untimed cell each: warms the pipes, the buffers and the client
                k.timed_write(s)
        for load in loads:
            spin = spinner() if load == "cpu" else None
            try:
                for s in sizes:
                    n = max(3, args.repeat // 3) if s >= 16 << 20 else args.repeat
                    res: dict[str, list[tuple[float, float]]] = {"bare": [], "cudnn-magic": []}
                    la = []
                    for i in range(n):
                        order = kernels if i % 2 == 0 else kernels[::-1]
                        for k in order:
                            res[k.name].append(k.timed_write(s))
                        la.append(os.getloadavg()[0])
                    rows.append((load, s, n, res, statistics.median(la)))
            finally:
                if spin is not None:
                    spin.kill()
                    spin.wait()
    finally:
        for k in kernels:
            k.stop()
        for f in sinks:
            f.close()

    def ms(xs: list[float]) -> str:
        return f"{statistics.median(xs) * 1e3:.1f} ({min(xs) * 1e3:.1f}..{max(xs) * 1e3:.1f})"

    print(f"Time from execute_request to the last stderr byte at the client, ms: median (min..max); kernels' own "
          f"stderr to {'a file' if args.kernel_stderr == 'file' else '/dev/null'}; Python {sys.version.split()[0]}, "
          f"{os.cpu_count()} CPUs; code: {code}\n")
    print("| load | size | cells each | bare: last byte | cudnn-magic: last byte | difference (median of pairs) | ratio | "
          "bare: idle | cudnn-magic: idle | bare MiB/s | cudnn-magic MiB/s | load average |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for load, s, n, res, la in rows:
        bare_last = [x[1] for x in res["bare"]]
        ours_last = [x[1] for x in res["cudnn-magic"]]
        diff = statistics.median(o - b for o, b in zip(ours_last, bare_last))
        ratio = statistics.median(ours_last) / statistics.median(bare_last)
        mibs = [s / (1 << 20) / statistics.median(v) for v in (bare_last, ours_last)]
        print(f"| {'quiet' if load == 'quiet' else 'a CPU-bound process beside it'} | {label(s)} | {n} | {ms(bare_last)} | "
              f"{ms(ours_last)} | {diff * 1e3:+.1f} | {ratio:.2f}x | {ms([x[0] for x in res['bare']])} | "
              f"{ms([x[0] for x in res['cudnn-magic']])} | {mibs[0]:,.0f} | {mibs[1]:,.0f} | {la:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
