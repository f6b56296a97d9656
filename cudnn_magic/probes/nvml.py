"""The NVIDIA driver, GPUs and GPU memory through NVML (nvidia-ml-py), behind one chokepoint.

Every NVML call in cudnn_magic goes through :func:`nvml_try` (or its thin twin
:func:`nvml_query`): NVML is initialised lazily, once per process, under one lock; an NVML
error becomes a plain-words reason instead of an exception; a function that an old driver
lacks falls back to its older version (per field, as nvitop's ``nvmlQuery`` and gpustat's
``safenvml`` do). Nothing here raises into a user's cell.

``pynvml`` is imported inside functions only, so importing this module (and ``%load_ext
cudnn_magic``) stays cheap.

Sources: NVML API reference (``nvmlDeviceGetMemoryInfo_v2``, ``nvmlDeviceGetComputeRunningProcesses_v3``,
``nvmlSystemGetCudaDriverVersion_v2``, ``nvmlDeviceGetMigMode``, ``nvmlDeviceGetMigDeviceHandleByIndex``);
nvidia-ml-py's ``pynvml.py`` (13.x), which loads ``libnvidia-ml.so.1`` by name (docs/facts.md "NVML").
"""

from __future__ import annotations

import sys
import threading
from dataclasses import dataclass
from typing import Any, Callable, NamedTuple

from ..model import Driver, Gpu, Unavailable
from .loader import dlopen_blocker, environ_at_start, read_ldcache

__all__ = [
    "NA",
    "MemoryInfo",
    "ProcessInfo",
    "decode_cuda_driver_version",
    "driver_and_gpus",
    "init_error",
    "memory_info",
    "mig_devices",
    "nvml_query",
    "nvml_try",
    "running_processes",
]

_lock = threading.RLock()
_initialized = False
_init_failure: str | None = None  # cached only for failures that cannot heal (library absent)
_fallbacks: dict[str, str] = {}  # e.g. {"memory": "v1"} once the v2 entry point proved missing

# NVML return codes (nvml.h nvmlReturn_t), named here so this module needs no pynvml import.
_NOT_SUPPORTED = 3
_NO_PERMISSION = 4
_NOT_FOUND = 6
_DRIVER_NOT_LOADED = 9
_LIBRARY_NOT_FOUND = 12
_FUNCTION_NOT_FOUND = 13
_GPU_IS_LOST = 15
_LIB_RM_VERSION_MISMATCH = 18
_ARGUMENT_VERSION_MISMATCH = 25

# What an NVML error usually means on a real machine (nvitop's _lazy_init docstring style).
_HINTS = {
    _LIBRARY_NOT_FOUND: "no NVIDIA driver is installed on this machine (libnvidia-ml.so.1 is not on the loader path)",
    _DRIVER_NOT_LOADED: "the NVIDIA kernel module is not loaded (no GPU here, or the driver is installed but not running)",
    _LIB_RM_VERSION_MISMATCH: "the driver was upgraded without reloading its kernel module; reboot the machine",
    _NO_PERMISSION: "this user may not query the GPU (container or permission settings)",
    _GPU_IS_LOST: "the GPU stopped responding or fell off the bus",
    _NOT_SUPPORTED: "NVML cannot report this on this GPU or driver (e.g. MIG, WDDM or vGPU)",
    _FUNCTION_NOT_FOUND: "the installed driver is older than this NVML function",
}


class _NaType(str):
    """``N/A``: a value NVML cannot report (the singleton :data:`NA`)."""

    def __bool__(self) -> bool:
        return False


#: Default returned by :func:`nvml_query` for a value NVML could not give.
NA = _NaType("N/A")


class MemoryInfo(NamedTuple):
    """Device memory in bytes (None where NVML could not say), and how it was read.

    Attributes:
        total_bytes: total installed memory visible to this device / MIG instance.
        used_bytes: allocated memory. From ``nvmlDeviceGetMemoryInfo_v2`` this excludes
            driver-reserved memory (as ``nvidia-smi`` shows on 510+ drivers); from v1 it
            includes it.
        free_bytes: memory free for allocations.
        reserved_bytes: memory the driver reserves (v2 only), else None.
        source: "nvmlDeviceGetMemoryInfo_v2" or "nvmlDeviceGetMemoryInfo".
        error: why nothing could be read, or None.
    """

    total_bytes: int | None
    used_bytes: int | None
    free_bytes: int | None
    reserved_bytes: int | None
    source: str | None
    error: str | None = None


class ProcessInfo(NamedTuple):
    """One compute process on a device: pid and memory in bytes (None = N/A on MIG/WDDM)."""

    pid: int
    used_bytes: int | None


def _error_code(exc: BaseException) -> int | None:
    value = getattr(exc, "value", None)
    return value if isinstance(value, int) else None


def _reason(exc: BaseException, fn_name: str | None = None) -> str:
    """Plain-words reason for an NVML exception: NVML's own text, the code, and what it usually means."""
    code = _error_code(exc)
    try:
        text = str(exc)
    except Exception:  # noqa: BLE001 - pynvml's __str__ calls back into the library
        text = type(exc).__name__
    parts = [text or type(exc).__name__]
    hint = _HINTS.get(code) if code is not None else None
    if hint:
        parts[0] = f"{parts[0]}: {hint}"
    where = f"{fn_name}, " if fn_name else ""
    if code is not None:
        parts.append(f"({where}NVML error {code})")
    elif fn_name:
        parts.append(f"({fn_name})")
    return " ".join(parts)


def _library_loadable() -> bool:
    """``libnvidia-ml.so.1`` can be loaded (the soname pynvml's ``_LoadNvmlLibrary`` opens on
    Linux, found the same way: ``LD_LIBRARY_PATH``, the ``ld.so`` cache, the default dirs)."""
    import ctypes  # start-up cost: ctypes only when a native library is loaded

    try:
        ctypes.CDLL("libnvidia-ml.so.1")
    except OSError:
        return False
    return True


def _nvml_blocked() -> tuple[str, str] | None:
    """(path, what it is) of a FIFO or a device named ``libnvidia-ml.so.1`` on the loader's search
    path before the real library, when none is mapped yet: ``dlopen`` would block in its ``open``
    for ever, so NVML is not loaded (the file is noted as skipped). None otherwise. Never raises."""
    try:
        with open("/proc/self/maps", "rb") as fh:  # an object already mapped is reused: no file is opened
            if b"/libnvidia-ml.so" in fh.read(16 << 20):
                return None
    except OSError:
        pass
    try:
        return dlopen_blocker("libnvidia-ml.so.1", environ=environ_at_start(), ldcache=read_ldcache()[0])
    except Exception:  # noqa: BLE001 - a guard never raises
        return None


def _import_pynvml() -> Any:
    import pynvml  # imported lazily on purpose (keep %load_ext light)

    return pynvml


def init_error() -> str | None:
    """Initialise NVML once per process; return None when it is usable, else the reason.

    Raises:
        Nothing. The usual reasons, in the returned text:
        ``NVML Shared Library Not Found`` (error 12): no NVIDIA driver is installed;
        ``Driver Not Loaded`` (9): no GPU, or the kernel module is not running;
        ``RM has detected an NVML/RM version mismatch`` (18): driver upgraded without a reboot.

    A missing library is remembered for the life of the process (the loader will not find it
    later: ``LD_LIBRARY_PATH`` is read only at process start); other failures are retried on
    the next call.
    """
    global _initialized, _init_failure
    if _initialized:
        return None
    with _lock:
        if _initialized:
            return None
        if _init_failure is not None:
            return _init_failure
        if not (sys.platform.startswith("linux") or sys.platform.startswith("win")):
            _init_failure = f"NVML is unavailable on this platform ({sys.platform})"
            return _init_failure
        blocker = _nvml_blocked() if sys.platform.startswith("linux") else None
        if blocker is not None:
            _init_failure = (f"NVML was not loaded: {blocker[0]} is {blocker[1]}, not a library, and lies on the "
                             "loader's search path for libnvidia-ml.so.1 (dlopen would block opening it)")
            return _init_failure
        if sys.platform.startswith("linux") and not _library_loadable():
            # What pynvml's nvmlInit would say (it loads exactly this soname on Linux), without
            # importing pynvml for nothing (11 ms of every `cudnn-magic check` on a machine
            # without a driver; benchmarks/bench_startup.py).
            _init_failure = (f"NVML Shared Library Not Found: {_HINTS[_LIBRARY_NOT_FOUND]} "
                             f"(nvmlInit, NVML error {_LIBRARY_NOT_FOUND})")
            return _init_failure
        try:
            pynvml = _import_pynvml()
        except ImportError as exc:
            _init_failure = f"nvidia-ml-py is not installed ({exc}): pip install nvidia-ml-py"
            return _init_failure
        try:
            pynvml.nvmlInit()
        except Exception as exc:  # noqa: BLE001 - pynvml.NVMLError and anything odd from ctypes
            reason = _reason(exc, "nvmlInit")
            if _error_code(exc) == _LIBRARY_NOT_FOUND:
                _init_failure = reason
            return reason
        _initialized = True
        return None


def nvml_try(fn_name: str, *args: Any, **kwargs: Any) -> tuple[Any, str | None]:
    """Call ``pynvml.<fn_name>(*args, **kwargs)``; return ``(value, None)`` or ``(None, reason)``.

    The one chokepoint: NVML is initialised on first use; calls are serialised by a lock
    (pynvml's refcounts and cached function pointers are shared by the sampler thread and the
    kernel's main thread). Never raises.
    """
    err = init_error()
    if err is not None:
        return None, err
    with _lock:
        try:
            fn: Callable[..., Any] = getattr(_import_pynvml(), fn_name)
        except AttributeError:
            return None, f"Function Not Found: this nvidia-ml-py has no {fn_name}"
        try:
            return fn(*args, **kwargs), None
        except Exception as exc:  # noqa: BLE001 - NVMLError, NVMLLibraryMismatchError, ctypes errors
            return None, _reason(exc, fn_name)


def nvml_query(fn_name: str, *args: Any, default: Any = NA, **kwargs: Any) -> Any:
    """Like :func:`nvml_try`, but return only the value, or ``default`` (``NA``) on any failure."""
    value, err = nvml_try(fn_name, *args, **kwargs)
    return default if err is not None else value


def _code_of(reason: str | None) -> int | None:
    """The NVML error code embedded in a reason produced by :func:`_reason`."""
    if not reason or "NVML error " not in reason:
        return None
    tail = reason.rsplit("NVML error ", 1)[1].rstrip(")")
    return int(tail) if tail.isdigit() else None


def _is_missing_function(reason: str | None) -> bool:
    return bool(reason) and (
        _code_of(reason) in (_FUNCTION_NOT_FOUND, _ARGUMENT_VERSION_MISMATCH)
        or "Function Not Found" in reason  # type: ignore[operator]
        or "NVMLLibraryMismatchError" in reason  # type: ignore[operator]
        or "pyNVML version does not match" in reason  # type: ignore[operator]
    )


def decode_cuda_driver_version(value: int | None) -> str | None:
    """``12040`` -> ``"12.4"``: NVML encodes the CUDA driver version as ``major*1000 + minor*10``
    (NVML API reference, ``nvmlSystemGetCudaDriverVersion``)."""
    if not isinstance(value, int) or value <= 0:
        return None
    return f"{value // 1000}.{(value % 1000) // 10}"


def cuda_driver_version() -> tuple[str | None, str | None]:
    """The CUDA version the driver supports (``"12.4"``), or ``(None, reason)``.

    Tries ``nvmlSystemGetCudaDriverVersion_v2`` then ``nvmlSystemGetCudaDriverVersion``.
    """
    value, err = nvml_try("nvmlSystemGetCudaDriverVersion_v2")
    if err is not None:
        value, err = nvml_try("nvmlSystemGetCudaDriverVersion")
    return (decode_cuda_driver_version(value), None) if err is None else (None, err)


def memory_info(handle: Any) -> MemoryInfo:
    """Memory of one device or MIG instance, in bytes.

    Per field fallback: ``nvmlDeviceGetMemoryInfo_v2`` (version ``nvmlMemory_v2``, gives
    reserved memory and "used" without it) where the driver and pynvml have it, else
    ``nvmlDeviceGetMemoryInfo`` (v1). A missing v2 entry point is remembered for the process.
    """
    if _fallbacks.get("memory") != "v1":
        pynvml_version = getattr(_safe_pynvml(), "nvmlMemory_v2", None)
        if pynvml_version is not None:
            m, err = nvml_try("nvmlDeviceGetMemoryInfo", handle, version=pynvml_version)
            if err is None:
                return MemoryInfo(int(m.total), int(m.used), int(m.free), int(m.reserved), "nvmlDeviceGetMemoryInfo_v2")
            if not (_is_missing_function(err) or _code_of(err) == _NOT_SUPPORTED):
                return MemoryInfo(None, None, None, None, None, err)
            if _is_missing_function(err):
                _fallbacks["memory"] = "v1"
        else:
            _fallbacks["memory"] = "v1"
    m, err = nvml_try("nvmlDeviceGetMemoryInfo", handle)
    if err is not None:
        return MemoryInfo(None, None, None, None, None, err)
    return MemoryInfo(int(m.total), int(m.used), int(m.free), None, "nvmlDeviceGetMemoryInfo")


_PROCESS_FUNCTIONS = (
    "nvmlDeviceGetComputeRunningProcesses_v3",
    "nvmlDeviceGetComputeRunningProcesses_v2",
    "nvmlDeviceGetComputeRunningProcesses",
)


def running_processes(handle: Any) -> tuple[tuple[ProcessInfo, ...], str | None]:
    """Compute processes on a device (or MIG instance), with their memory in bytes.

    Tries ``nvmlDeviceGetComputeRunningProcesses_v3``, then ``_v2``, then the unversioned
    call; the first that exists on this driver is remembered. ``used_bytes`` is None where
    NVML reports ``NVML_VALUE_NOT_AVAILABLE`` (Windows WDDM, MIG without privileges).
    Pids are as NVML sees them: host pids when the caller runs in a container.

    Returns:
        ``(processes, None)``, or ``((), reason)`` when NVML could not list them.
    """
    start = _fallbacks.get("processes")
    names = _PROCESS_FUNCTIONS[_PROCESS_FUNCTIONS.index(start):] if start else _PROCESS_FUNCTIONS
    err: str | None = "no process query function"
    for name in names:
        procs, err = nvml_try(name, handle)
        if err is None:
            _fallbacks["processes"] = name
            out = []
            for p in procs or ():
                used = getattr(p, "usedGpuMemory", None)
                # pynvml maps NVML_VALUE_NOT_AVAILABLE to None; be safe with raw 2**64-1 too.
                if used is not None and (used < 0 or used >= 2**64 - 1):
                    used = None
                out.append(ProcessInfo(int(p.pid), None if used is None else int(used)))
            return tuple(out), None
        if not _is_missing_function(err):
            return (), err
    return (), err


def mig_devices(handle: Any) -> tuple[list[Any], str | None]:
    """MIG device handles of a GPU, in index order; ``([], None)`` when MIG is off or unsupported.

    Uses ``nvmlDeviceGetMigMode`` (current mode), ``nvmlDeviceGetMaxMigDeviceCount`` and
    ``nvmlDeviceGetMigDeviceHandleByIndex`` (indexes without an instance answer NOT_FOUND
    and are skipped), per the NVML API reference "MIG Management".
    """
    mode, err = nvml_try("nvmlDeviceGetMigMode", handle)
    if err is not None:
        code = _code_of(err)
        if code in (_NOT_SUPPORTED, _FUNCTION_NOT_FOUND) or _is_missing_function(err):
            return [], None
        return [], err
    if not mode or int(mode[0]) != 1:  # NVML_DEVICE_MIG_ENABLE == 1
        return [], None
    count, err = nvml_try("nvmlDeviceGetMaxMigDeviceCount", handle)
    if err is not None:
        return [], err
    out = []
    for i in range(int(count or 0)):
        mig, err = nvml_try("nvmlDeviceGetMigDeviceHandleByIndex", handle, i)
        if err is None:
            out.append(mig)
        elif _code_of(err) not in (_NOT_FOUND, 2):  # 2 = INVALID_ARGUMENT past the last slot
            return out, err
    return out, None


def _safe_pynvml() -> Any:
    try:
        return _import_pynvml()
    except ImportError:
        return None


def _str_or_none(value: Any) -> str | None:
    if value is None or value is NA:
        return None
    return value.decode() if isinstance(value, bytes) else str(value)


@dataclass
class _GpuFields:
    name: str | None = None
    uuid: str | None = None
    cc: tuple[int, int] | None = None
    mem: MemoryInfo | None = None
    error: str | None = None


def driver_and_gpus() -> tuple[Driver | Unavailable | None, tuple[Gpu, ...]]:
    """Driver and GPUs for ``%cudnn_check``: driver version, CUDA driver version, and per GPU
    its name, UUID, compute capability and memory (bytes).

    Returns:
        ``(Driver, gpus)``; ``(Unavailable(reason), ())`` when NVML cannot be used, e.g.
        ``Unavailable("NVML Shared Library Not Found: no NVIDIA driver is installed on this
        machine ...")``. A GPU whose queries fail keeps its row with ``error`` set and the
        fields it could read. Never raises.
    """
    try:
        err = init_error()
        if err is not None:
            return Unavailable(err), ()
        version = _str_or_none(nvml_query("nvmlSystemGetDriverVersion", default=None))
        cuda, _ = cuda_driver_version()
        driver = Driver(version=version, cuda_driver_version=cuda)
        count, err = nvml_try("nvmlDeviceGetCount")
        if err is not None:
            return driver, (Gpu(index=-1, name="?", error=err),)
        gpus = []
        for i in range(int(count or 0)):
            gpus.append(_gpu(i))
        return driver, tuple(gpus)
    except Exception as exc:  # noqa: BLE001 - a probe never raises into a cell
        return Unavailable(f"NVML probe failed: {type(exc).__name__}: {exc}"), ()


def _gpu(index: int) -> Gpu:
    handle, err = nvml_try("nvmlDeviceGetHandleByIndex", index)
    if err is not None:
        return Gpu(index=index, name=f"GPU {index}", error=err)
    f = _GpuFields()
    errors = []
    name, e = nvml_try("nvmlDeviceGetName", handle)
    f.name = _str_or_none(name)
    uuid, e2 = nvml_try("nvmlDeviceGetUUID", handle)
    f.uuid = _str_or_none(uuid)
    cc, e3 = nvml_try("nvmlDeviceGetCudaComputeCapability", handle)
    if e3 is None and cc:
        f.cc = (int(cc[0]), int(cc[1]))
    f.mem = memory_info(handle)
    seen: set[object] = set()
    for x in (e, e2, e3, f.mem.error):
        key = _code_of(x) or x
        if x and key not in seen:  # a lost GPU fails every query with the same code: say it once
            seen.add(key)
            errors.append(x)
    return Gpu(
        index=index,
        name=f.name or f"GPU {index}",
        uuid=f.uuid,
        compute_capability=f.cc,
        total_bytes=f.mem.total_bytes,
        used_bytes=f.mem.used_bytes,
        free_bytes=f.mem.free_bytes,
        error="; ".join(errors) or None,
    )


#: Seconds a caller waits for NVML before it is told NVML is not answering (a lost GPU, a driver
#: stuck in the kernel: NVML calls can block for minutes).
NVML_DEADLINE_S = 5.0
#: The start of the reason given when NVML did not answer in time.
NOT_ANSWERING = "NVML is not answering"
_inflight: dict[str, _Answer] = {}
_inflight_lock = threading.Lock()


class _Answer:
    """One NVML query's outcome, filled in by its worker thread (what ``concurrent.futures.Future``
    does here, without importing it: that and ``logging`` cost about 5 ms of every check)."""

    __slots__ = ("_event", "error", "value")

    def __init__(self) -> None:
        self._event = threading.Event()
        self.value: Any = None
        self.error: BaseException | None = None

    def done(self) -> bool:
        return self._event.is_set()

    def settle(self, value: Any = None, error: BaseException | None = None) -> None:
        self.value, self.error = value, error
        self._event.set()

    def result(self, timeout: float) -> Any:
        """The value; raises TimeoutError after ``timeout`` seconds, or what the query raised."""
        if not self._event.wait(timeout):
            raise TimeoutError
        if self.error is not None:
            raise self.error
        return self.value


def within_deadline(key: str, fn: Callable[[], Any], timeout_s: float = NVML_DEADLINE_S) -> tuple[bool, Any, bool]:
    """Run ``fn`` (an NVML query) in a worker thread and wait at most ``timeout_s`` seconds, so no
    caller (the kernel's main thread, a sampler) blocks inside a hung NVML call. While an earlier
    call of the same ``key`` is still stuck, no second one starts (a hung driver would take every
    thread): the caller waits on that one again. ``KeyboardInterrupt`` raised in ``fn`` reaches
    the caller. Returns ``(answered, value, started)``: ``value`` is ``fn()``'s result when
    answered, None otherwise; ``started`` whether this call started the query. Never raises
    anything else."""
    with _inflight_lock:
        fut = _inflight.get(key)
        started = fut is None or fut.done()
        if started:
            fut = _inflight[key] = _Answer()

            def work(f: _Answer = fut) -> None:
                try:
                    f.settle(fn())
                except BaseException as exc:  # noqa: BLE001 - handed to the caller, who decides
                    f.settle(error=exc)

            threading.Thread(target=work, name=f"cudnn-magic-nvml-{key}", daemon=True).start()
    assert fut is not None
    try:
        return True, fut.result(timeout_s), started
    except TimeoutError:
        return False, None, started
    except KeyboardInterrupt:
        raise
    except Exception:  # noqa: BLE001 - fn never raises; belt and braces
        return True, None, started


def not_answering(timeout_s: float, started: bool) -> str:
    """The reason shown when NVML did not answer within ``timeout_s`` seconds."""
    what = "no reply" if started else "still no reply to the previous call"
    return (f"{NOT_ANSWERING} ({what} within {timeout_s:g} s; a GPU or its driver may be hung): nothing else is "
            "asked until it answers")


def driver_and_gpus_within(timeout_s: float = NVML_DEADLINE_S) -> tuple[Driver | Unavailable | None, tuple[Gpu, ...]]:
    """:func:`driver_and_gpus` with a deadline (:func:`within_deadline`): ``(Unavailable(NVML is not
    answering ...), ())`` when it passes. Once NVML is known not to load in this process (no
    driver library: :func:`init_error`'s lasting failures), the reason is given at once, without
    a worker thread. Never raises."""
    failure = _init_failure
    if failure is not None:  # NVML is not loaded in this process and never will be: no call can hang
        return Unavailable(failure), ()
    answered, value, started = within_deadline("driver", driver_and_gpus, timeout_s)
    if not answered or value is None:
        return Unavailable(not_answering(timeout_s, started) if not answered else "NVML probe failed"), ()
    return value  # type: ignore[no-any-return]
