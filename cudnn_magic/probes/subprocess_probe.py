"""Query a cuDNN library that is NOT mapped into this process, in a child process.

Loading an unmapped ``libcudnn`` into the kernel is never safe: a copy without its
``libcudnn_graph`` (cuDNN 9) or ``libcudnn_ops_infer`` (cuDNN 8) sub-library aborts the whole
process on the first call ("Invalid handle. Cannot load symbol cudnnGetVersion", exit 134;
FACTS.md "Native behaviour"). The child runs ``python -I -S`` (no site, ~20 ms), loads the
file with ``RTLD_LOCAL|RTLD_NOW``, asks ``cudnnGetVersion``/``cudnnGetProperty``/
``cudnnGetCudartVersion`` and prints one JSON line. If it dies, the signal and its stderr say
why. The script below is a constant of this module; no text from outside is ever executed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass

_CHILD = r"""
import ctypes, json, os, sys
path = sys.argv[1]
out = {"path": path}
try:
    lib = ctypes.CDLL(path, mode=os.RTLD_LOCAL | getattr(os, "RTLD_NOW", 2))
except OSError as exc:
    out["load_error"] = str(exc)
    print(json.dumps(out)); sys.stdout.flush(); sys.exit(0)
print(json.dumps({"stage": "loaded"})); sys.stdout.flush()
def call(name, restype=ctypes.c_size_t):
    fn = getattr(lib, name, None)
    if fn is None:
        return None
    fn.restype = restype
    fn.argtypes = []
    return int(fn())
out["version"] = call("cudnnGetVersion")
prop = getattr(lib, "cudnnGetProperty", None)
if prop is not None:
    parts = []
    for t in (0, 1, 2):
        v = ctypes.c_int(-1)
        prop.restype = ctypes.c_int
        st = prop(ctypes.c_int(t), ctypes.byref(v))
        parts.append(v.value if st == 0 else None)
    out["property"] = parts
out["cudart"] = call("cudnnGetCudartVersion")
maps = []
try:
    with open("/proc/self/maps") as fh:
        for line in fh:
            p = line.split(None, 5)
            if len(p) == 6 and "libcudnn" in p[5]:
                q = p[5].strip()
                if q not in maps:
                    maps.append(q)
except OSError:
    pass
out["mapped"] = maps
print(json.dumps(out)); sys.stdout.flush()
"""


@dataclass(frozen=True)
class ChildResult:
    """What the child saw for one library.

    ``version`` is the raw ``cudnnGetVersion()`` integer, ``prop`` the (major, minor, patch)
    from ``cudnnGetProperty``, ``cudart`` the ``cudnnGetCudartVersion()`` integer. ``error`` is
    set when it could not load or died (e.g. "aborted (SIGABRT): Invalid handle. Cannot load
    symbol cudnnGetVersion"). ``mapped`` lists every libcudnn* the child had mapped after the
    calls (shows which sub-libraries were pulled in).
    """

    path: str
    version: int | None = None
    prop: tuple[int | None, ...] | None = None
    cudart: int | None = None
    error: str | None = None
    mapped: tuple[str, ...] = ()


def _parse(path: str, proc_rc: int | None, stdout: str, stderr: str) -> ChildResult:
    lines = [ln for ln in stdout.splitlines() if ln.startswith("{")]
    final = None
    for ln in lines:
        try:
            obj = json.loads(ln)
        except ValueError:
            continue
        if "path" in obj:
            final = obj
    tail = " ".join(stderr.strip().splitlines()[-3:])[:400]
    if final is None:
        if proc_rc is None:
            return ChildResult(path, error="timed out")
        if proc_rc < 0:
            try:
                sig = signal.Signals(-proc_rc).name
            except ValueError:
                sig = str(-proc_rc)
            return ChildResult(path, error=f"the process died ({sig}) while loading or calling it: {tail or 'no message'}")
        return ChildResult(path, error=f"child exited {proc_rc}: {tail or 'no message'}")
    if "load_error" in final:
        return ChildResult(path, error=final["load_error"])
    prop = final.get("property")
    return ChildResult(
        path,
        version=final.get("version"),
        prop=tuple(prop) if prop else None,
        cudart=final.get("cudart"),
        mapped=tuple(final.get("mapped") or ()),
    )


def query_versions(paths: list[str], timeout_s: float = 10.0, env: dict[str, str] | None = None) -> dict[str, ChildResult]:
    """Query each library in its own child process, all children running at once.

    Args:
        paths: absolute paths of ``libcudnn.so*`` main libraries.
        timeout_s: per-batch wall-clock limit in seconds; a child still running is killed and
            reported as "timed out".
        env: environment for the children (default: this process's).

    Returns:
        ``{path: ChildResult}``. Never raises.
    """
    procs: dict[str, subprocess.Popen[str] | ChildResult] = {}
    for p in dict.fromkeys(paths):
        try:
            procs[p] = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _CHILD, p],
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                text=True, errors="replace", env=env if env is not None else os.environ.copy(),
            )
        except OSError as exc:
            procs[p] = ChildResult(p, error=f"could not start a child process: {exc}")
    out: dict[str, ChildResult] = {}
    for p, proc in procs.items():
        if isinstance(proc, ChildResult):
            out[p] = proc
            continue
        try:
            so, se = proc.communicate(timeout=timeout_s)
            out[p] = _parse(p, proc.returncode, so, se)
        except subprocess.TimeoutExpired:
            proc.kill()
            so, se = proc.communicate()
            out[p] = _parse(p, None, so, se)
    return out
