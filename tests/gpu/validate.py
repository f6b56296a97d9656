"""Prove cudnn-magic on a real NVIDIA GPU: one script, one call, under 8 minutes.

Run on any Linux machine with an NVIDIA GPU and whatever PyTorch/JAX/CuPy it has::

    python tests/gpu/validate.py [--out DIR]        # writes DIR/gpu_validation.json

Each check prints one row of a table (PASS / FAIL / SKIP with the reason) and lands in the
JSON. Exit 0 when nothing FAILed. Every check has a CPU-side twin in the normal tests (named in
``twin``) so the GPU run confirms rather than discovers.

Checks:
  nvml-vs-nvidia-smi   NVML values (driver, names, total/used memory) match ``nvidia-smi``
  torch-mapped-cudnn   the libcudnn mapped after a real convolution is the version
                       ``torch.backends.cudnn.version()`` reports
  cudnn-create         ``cudnnCreate`` succeeds on the mapped copy (a real handle)
  check-in-kernel      ``%cudnn_check --json`` in a real ipykernel gives each framework present
                       a verdict that agrees with the framework's own runtime answer
  memory-follows-4gib  ``cudnn_magic.gpu_memory()`` sees a 4 GiB allocation and its release
                       within two samples
  real-status-error    a real cuDNN status provoked on purpose (bad tensor descriptor ->
                       CUDNN_STATUS_BAD_PARAM) is diagnosed with the right id
  crash-record         the crash record survives a real ``abort()`` in a kernel that had cuDNN
                       loaded, and the restarted kernel explains it
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

RESULTS: list[dict[str, Any]] = []


def check(name: str, twin: str) -> Callable[[Callable[[], tuple[str, str]]], Callable[[], None]]:
    def deco(fn: Callable[[], tuple[str, str]]) -> Callable[[], None]:
        def run() -> None:
            t0 = time.perf_counter()
            try:
                status, detail = fn()
            except Exception as exc:  # noqa: BLE001
                status, detail = "FAIL", f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=3)}"
            row = {"check": name, "status": status, "detail": detail, "seconds": round(time.perf_counter() - t0, 2),
                   "twin": twin}
            RESULTS.append(row)
            print(f"{status:4}  {name:22} {row['seconds']:6.1f}s  {detail.splitlines()[0] if detail else ''}", flush=True)
        return run
    return deco


@contextlib.contextmanager
def _scratch():
    """A scratch directory for a kernel's HOME and runtime dir, removed afterwards without
    failing: a dead kernel's capture helper may still write its record there for a moment
    (``TemporaryDirectory`` then failed with ENOTEMPTY on a loaded machine)."""
    d = Path(tempfile.mkdtemp(prefix="cudnn-magic-validate-"))
    try:
        yield d
    finally:
        for _ in range(10):
            shutil.rmtree(d, ignore_errors=True)
            if not d.exists():
                break
            time.sleep(0.2)


def _torch():
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


@check("nvml-vs-nvidia-smi", "tests/unit/probes/test_nvml_probe.py (C stand-in for libnvidia-ml.so.1)")
def nvml_vs_smi() -> tuple[str, str]:
    from cudnn_magic.probes.nvml import driver_and_gpus

    smi = shutil.which("nvidia-smi")
    if not smi:
        return "SKIP", "nvidia-smi not found"
    q = subprocess.run([smi, "--query-gpu=index,name,driver_version,memory.total,memory.used",
                        "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=60)
    driver, gpus = driver_and_gpus()
    rows = [r.split(", ") for r in q.stdout.strip().splitlines()]
    problems = []
    if getattr(driver, "version", None) != rows[0][2]:
        problems.append(f"driver {getattr(driver, 'version', driver)} != {rows[0][2]}")
    for g, r in zip(gpus, rows):
        if g.name != r[1]:
            problems.append(f"GPU {g.index} name {g.name!r} != {r[1]!r}")
        if g.total_bytes is None or abs(g.total_bytes / 2**20 - float(r[3])) > 1:
            problems.append(f"GPU {g.index} total {g.total_bytes} B vs {r[3]} MiB")
        if g.used_bytes is None or abs(g.used_bytes / 2**20 - float(r[4])) > 256:  # both sample a moving value
            problems.append(f"GPU {g.index} used {g.used_bytes} B vs {r[4]} MiB")
    if len(gpus) != len(rows):
        problems.append(f"{len(gpus)} GPUs vs {len(rows)} in nvidia-smi")
    return ("FAIL", "; ".join(problems)) if problems else ("PASS", f"{len(gpus)} GPU(s), driver {rows[0][2]}")


@check("torch-mapped-cudnn", "tests/unit/probes/test_probes.py::test_real_cudnn_mapped_like_a_framework_reports_path_version_owner")
def torch_mapped() -> tuple[str, str]:
    torch = _torch()
    if torch is None:
        return "SKIP", "PyTorch with CUDA not available"
    x = torch.randn(8, 3, 64, 64, device="cuda")
    torch.nn.functional.conv2d(x, torch.randn(16, 3, 3, 3, device="cuda"))
    torch.cuda.synchronize()
    from cudnn_magic.probes.loaded import probe_loaded
    from cudnn_magic.rules.cudnn_version import parse_cudnn_version

    copies, _ = probe_loaded()
    mains = [c for c in copies if c.is_main]
    want = str(parse_cudnn_version(torch.backends.cudnn.version()))
    got = [c.version for c in mains]
    if want in got:
        return "PASS", f"mapped {mains[0].path} = {want}"
    return "FAIL", f"torch says {want}, mapped copies say {got}"


@check("cudnn-create", "tests/unit/probes/test_probes.py (cudnnCreate returns NOT_INITIALIZED without a GPU)")
def cudnn_create() -> tuple[str, str]:
    from cudnn_magic.probes.loaded import mapped_cudnn_paths

    paths = [p for p in mapped_cudnn_paths()[0] if os.path.basename(p).startswith("libcudnn.so")]
    if not paths:
        return "SKIP", "no cuDNN mapped (PyTorch with CUDA absent)"
    lib = ctypes.CDLL(paths[0], mode=getattr(os, "RTLD_NOLOAD", 4) | os.RTLD_LAZY)
    handle = ctypes.c_void_p()
    st = lib.cudnnCreate(ctypes.byref(handle))
    if st != 0:
        lib.cudnnGetErrorString.restype = ctypes.c_char_p
        return "FAIL", f"cudnnCreate -> {st} {lib.cudnnGetErrorString(st).decode()}"
    lib.cudnnDestroy(handle)
    return "PASS", f"handle created on {paths[0]}"


@check("real-status-error", "tests/unit/diagnose/test_diagnose.py (status names and numbers)")
def real_status() -> tuple[str, str]:
    from cudnn_magic.engines.diagnose import diagnose
    from cudnn_magic.probes.loaded import mapped_cudnn_paths

    paths = [p for p in mapped_cudnn_paths()[0] if os.path.basename(p).startswith("libcudnn.so")]
    if not paths:
        return "SKIP", "no cuDNN mapped"
    d = os.path.dirname(paths[0])
    if not any(f.startswith(("libcudnn_ops.so", "libcudnn_ops_infer.so")) for f in os.listdir(d)):
        return "SKIP", f"{d} has no libcudnn_ops sub-library (descriptor calls would abort)"
    lib = ctypes.CDLL(paths[0], mode=getattr(os, "RTLD_NOLOAD", 4) | os.RTLD_LAZY)
    desc = ctypes.c_void_p()
    assert lib.cudnnCreateTensorDescriptor(ctypes.byref(desc)) == 0
    # NCHW float with a negative size: cuDNN answers BAD_PARAM (2000 in cuDNN 9, 3 in cuDNN 8).
    st = lib.cudnnSetTensor4dDescriptor(desc, 0, 0, 1, 3, -5, 5)
    lib.cudnnGetErrorString.restype = ctypes.c_char_p
    name = lib.cudnnGetErrorString(st).decode()
    lib.cudnnDestroyTensorDescriptor(desc)
    diags = diagnose(exception=f"RuntimeError: cuDNN error: {name}")
    ids = [d.id for d in diags]
    ok = bool(ids) and ids[0] == "cudnn-bad-param"
    return ("PASS" if ok else "FAIL"), f"status {st} {name} -> {ids}"


@check("memory-follows-4gib", "tests/kernel/test_memory_kernel.py (stand-in memory changes)")
def memory_follows() -> tuple[str, str]:
    torch = _torch()
    if torch is None:
        return "SKIP", "PyTorch with CUDA not available"
    from cudnn_magic.engines.memory import sample

    def used() -> int:
        return sample().gpus[0].used_bytes or 0

    base = used()
    x = torch.empty(4 * 2**30, dtype=torch.uint8, device="cuda")
    x.fill_(1)
    torch.cuda.synchronize()
    seen_up = [used() for _ in range(2)]
    del x
    torch.cuda.empty_cache()
    torch.cuda.synchronize()
    seen_down = [used() for _ in range(2)]
    up = max(seen_up) - base
    down = max(seen_up) - min(seen_down)
    ok = up >= 3.9 * 2**30 and down >= 3.9 * 2**30
    return ("PASS" if ok else "FAIL"), f"+{up / 2**30:.2f} GiB then -{down / 2**30:.2f} GiB"


def _kernel_cells(cells: list[str], tmp: Path, timeout: int = 240):
    from helpers.support import run_notebook

    return run_notebook(cells, tmp, timeout=timeout)


@check("check-in-kernel", "tests/kernel/test_check_kernel.py::test_cudnn_check_in_a_real_kernel_shows_the_mapped_cudnn")
def check_in_kernel() -> tuple[str, str]:
    cells = ["%load_ext cudnn_magic"]
    probes = []
    if _torch() is not None:
        cells.append("import torch, json\nx=torch.randn(2,3,16,16,device='cuda')\n"
                     "torch.nn.functional.conv2d(x, torch.randn(4,3,3,3,device='cuda'))\n"
                     "print('TORCH', torch.backends.cudnn.version())")
        probes.append("PyTorch")
    cells.append("import json\nr = %cudnn_check --json\nprint('REPORT', json.dumps(r))")
    with _scratch() as tmp:
        nb = _kernel_cells(cells, tmp)
    from helpers.support import outputs_text

    text = "\n".join(outputs_text(c) for c in nb.cells)
    report = json.loads(text.split("REPORT ", 1)[1].splitlines()[0])
    verdicts = {f["name"]: f["verdict"] for f in report["frameworks"]}
    bad = {k: v for k, v in verdicts.items() if v not in ("ok", "not-applicable")}
    if "PyTorch" in probes and verdicts.get("PyTorch") != "ok":
        return "FAIL", f"PyTorch verdict {verdicts.get('PyTorch')}: {report['frameworks']}"
    return ("FAIL" if bad else "PASS"), f"verdicts {verdicts}"


@check("crash-record", "tests/kernel/test_crash_kernel.py (C stand-in abort)")
def crash_record() -> tuple[str, str]:
    try:
        import cudnn_magic.engines.crash  # noqa: F401
    except ImportError:
        return "SKIP", "crash forensics not in this build"
    import asyncio

    import nbformat
    from jupyter_client.manager import AsyncKernelManager
    from nbclient import NotebookClient
    from nbclient.exceptions import DeadKernelError

    from helpers.support import kernel_env

    async def go(tmp: Path) -> str:
        km = AsyncKernelManager(kernel_name="python3")
        await km.start_kernel(env=kernel_env(tmp))
        nb = nbformat.v4.new_notebook()
        load = "import torch\nx=torch.randn(2,3,16,16,device='cuda')\ntorch.nn.functional.conv2d(x, torch.randn(4,3,3,3,device='cuda'))" \
            if _torch() is not None else "pass"
        nb.cells = [nbformat.v4.new_code_cell(s) for s in (
            "%load_ext cudnn_magic", load,
            "import ctypes\nl=b'F0000 00:00:1700000000.000000 1 cuda_dnn.cc:1234] Check failed: status == CUDNN_STATUS_SUCCESS (7 vs. 0)Failed to set cuDNN stream.\\n'\n"
            "ctypes.CDLL(None).write(2, l, len(l)); ctypes.CDLL(None).abort()")]
        try:
            await NotebookClient(nb, km=km, timeout=120).async_execute()
        except DeadKernelError:
            pass
        await km.restart_kernel(now=True)
        await asyncio.sleep(1.0)  # a client connecting at once after a restart can miss the first reply
        nb2 = nbformat.v4.new_notebook()
        nb2.cells = [nbformat.v4.new_code_cell("%load_ext cudnn_magic")]
        await NotebookClient(nb2, km=km, timeout=120).async_execute()
        await km.shutdown_kernel(now=True)
        from helpers.support import outputs_text

        return outputs_text(nb2.cells[0])

    with _scratch() as tmp:
        from helpers.support import run_coroutine

        out = run_coroutine(go(tmp))
    ok = "cudnn-stream-set-failed" in out and "Failed to set cuDNN stream" in out
    return ("PASS" if ok else "FAIL"), out[:300].replace("\n", " ")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "out"), help="directory for gpu_validation.json")
    args = ap.parse_args()
    print(f"{'':4}  {'check':22} {'time':>7}  detail")
    t0 = time.perf_counter()
    for fn in (nvml_vs_smi, torch_mapped, cudnn_create, real_status, memory_follows, check_in_kernel, crash_record):
        fn()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    summary = {"results": RESULTS, "seconds": round(time.perf_counter() - t0, 1),
               "python": sys.version.split()[0], "host": os.uname().nodename}
    (out / "gpu_validation.json").write_text(json.dumps(summary, indent=2))
    print("\n| check | status | seconds | detail |\n|---|---|---:|---|")
    for r in RESULTS:
        print(f"| {r['check']} | {r['status']} | {r['seconds']} | {r['detail'].splitlines()[0][:120] if r['detail'] else ''} |")
    return 1 if any(r["status"] == "FAIL" for r in RESULTS) else 0


if __name__ == "__main__":
    sys.exit(main())
