"""The CUDA toolkit installed on the machine (``CUDA_HOME``, ``/usr/local/cuda``, ``nvcc``), as
context: what a build from source or a JIT compiler would use, NOT the CUDA runtime each framework
runs (pip wheels bring their own ``libcudart``; the Frameworks rows say which). ``torch``'s
``collect_env`` reports the same facts.

Where a toolkit is found, in order: ``CUDA_HOME``, ``CUDA_PATH``, ``CUDA_ROOT``; ``/usr/local/cuda``
(usually a link to ``/usr/local/cuda-X.Y``); the folder of the ``nvcc`` on ``PATH`` (a link, or a
small ``exec /path/bin/nvcc`` wrapper, is followed by reading it, never by running it); every other
``/usr/local/cuda-*``. Its version comes from ``version.json`` (CUDA 11.1 and later), ``version.txt``
(older), else ``CUDART_VERSION`` in ``include/cuda_runtime_api.h``. Nothing is executed. Never raises.
"""

from __future__ import annotations

import glob
import os
import re

from ..model import CudaToolkit
from ..util.files import load_json_regular, read_regular

__all__ = ["probe_toolkits"]

_WRAPPER = re.compile(rb"exec\s+[\"']?(/[^\s\"']+/bin/nvcc)\b")


def _version(root: str) -> tuple[str | None, str | None]:
    try:
        data = load_json_regular(os.path.join(root, "version.json"), 1 << 20)
        v = (data.get("cuda") or {}).get("version")
        if v:
            return str(v), "version.json"
    except (OSError, ValueError, AttributeError):
        pass
    try:
        m = re.search(rb"CUDA Version\s+([0-9.]+)", read_regular(os.path.join(root, "version.txt"), 4096))
        if m:
            return m.group(1).decode(), "version.txt"
    except OSError:
        pass
    for inc in ("include", os.path.join("targets", "x86_64-linux", "include"), os.path.join("targets", "sbsa-linux", "include")):
        try:
            header = read_regular(os.path.join(root, inc, "cuda_runtime_api.h"), 1 << 20)
            m = re.search(rb"#define\s+CUDART_VERSION\s+(\d+)", header)
            if m:
                n = int(m.group(1))
                return f"{n // 1000}.{n % 1000 // 10}", f"CUDART_VERSION {n} in {inc}/cuda_runtime_api.h"
        except OSError:
            continue
    return None, None


def _nvcc_root(nvcc: str) -> str | None:
    real = os.path.realpath(nvcc)
    try:
        if os.path.getsize(real) < 4096:  # a wrapper script: read where it execs, never run it
            m = _WRAPPER.search(read_regular(real, 4096))
            if m:
                real = os.path.realpath(os.fsdecode(m.group(1)))
    except OSError:
        return None
    root = os.path.dirname(os.path.dirname(real))
    return root if os.path.isdir(os.path.join(root, "bin")) else None


def probe_toolkits(environ: dict[str, str] | None = None) -> tuple[CudaToolkit, ...]:
    """Every CUDA toolkit found (module docstring), the one ``CUDA_HOME``/``/usr/local/cuda``/``nvcc``
    point to first. Never raises."""
    env = os.environ if environ is None else environ
    found: dict[str, list[str]] = {}
    nvcc_of: dict[str, str] = {}

    def add(root: str | None, via: str) -> None:
        if root and os.path.isdir(root):
            real = os.path.realpath(root)
            found.setdefault(real, [])
            if via not in found[real]:
                found[real].append(via)

    try:
        for var in ("CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"):
            if env.get(var):
                add(env[var], var)
        if os.path.islink("/usr/local/cuda") or os.path.isdir("/usr/local/cuda"):
            add("/usr/local/cuda", "/usr/local/cuda" + (f" -> {os.readlink('/usr/local/cuda')}"
                                                        if os.path.islink("/usr/local/cuda") else ""))
        nvcc = _which("nvcc", env.get("PATH", os.defpath))
        if nvcc:
            root = _nvcc_root(nvcc)
            add(root, f"nvcc on PATH ({nvcc})")
            if root:
                nvcc_of[os.path.realpath(root)] = nvcc
        for d in sorted(glob.glob("/usr/local/cuda-*")):
            add(d, "installed in /usr/local")
        out = []
        for root, via in found.items():
            v, src = _version(root)
            nv = os.path.join(root, "bin", "nvcc")
            out.append(CudaToolkit(root, v, src, tuple(via), nvcc_of.get(root) or (nv if os.path.exists(nv) else None)))
        return tuple(out)
    except Exception:  # noqa: BLE001 - a probe never raises
        return ()


def _which(name: str, path: str) -> str | None:
    """The first ``name`` on ``path`` that exists, may be executed and is no folder, as
    ``shutil.which`` finds it on POSIX (an empty entry is the working directory; a FIFO counts,
    and is then named as skipped when read); without importing ``shutil`` (3-5 ms of every check)."""
    for d in path.split(os.pathsep):
        p = os.path.join(d or os.curdir, name)
        if os.path.exists(p) and os.access(p, os.X_OK) and not os.path.isdir(p):
            return p
    return None
