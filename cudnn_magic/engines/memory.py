"""GPU memory per visible GPU and process: the engine behind ``%gpu_memory``,
``cudnn-magic memory`` and :func:`cudnn_magic.gpu_memory`.

All NVML calls go through :mod:`cudnn_magic.probes.nvml`. Values are bytes; human formatting
lives in :mod:`cudnn_magic.render.memory`. Nothing here raises: with no driver,
``MemorySnapshot.error`` says why.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from dataclasses import dataclass
from typing import Any

from ..model import GpuMemory, MemorySnapshot, ProcessMemory
from ..probes import nvml
from ..util.options import MAX_INTERVAL_S, MIN_INTERVAL_S, interval_seconds

__all__ = ["MAX_INTERVAL_S", "MIN_INTERVAL_S", "framework_usage", "interval_seconds", "parse_visible_devices", "sample",
           "snapshot_json"]


@dataclass
class _Device:
    """One NVML device (GPU or MIG instance) with its identity, before memory is read."""

    handle: Any
    index: int  # NVML index of the physical GPU
    name: str
    uuid: str | None
    mig: bool = False
    mig_index: int | None = None
    gi: int | None = None
    ci: int | None = None
    parent_uuid: str | None = None
    error: str | None = None  # the device cannot be queried at all (no handle)
    notes: tuple[str, ...] = ()  # fields it could not read (name, UUID): said, the rest is read


def _enumerate() -> tuple[list[tuple[_Device, list[_Device]]], str | None]:
    """Every physical GPU (NVML index order) with its MIG instances (empty when MIG is off)."""
    count, err = nvml.nvml_try("nvmlDeviceGetCount")
    if err is not None:
        return [], err
    out: list[tuple[_Device, list[_Device]]] = []
    for i in range(int(count or 0)):
        handle, err = nvml.nvml_try("nvmlDeviceGetHandleByIndex", i)
        if err is not None:
            out.append((_Device(None, i, f"GPU {i}", None, error=err), []))
            continue
        name, e1 = nvml.nvml_try("nvmlDeviceGetName", handle)
        uuid, e2 = nvml.nvml_try("nvmlDeviceGetUUID", handle)
        # per field: a missing name or UUID (an old driver answers Function Not Found) does not
        # stop the memory and process queries
        gpu = _Device(handle, i, str(name) if name else f"GPU {i}", str(uuid) if uuid else None,
                      notes=tuple(e for e in (e1, e2) if e))
        migs: list[_Device] = []
        if gpu.error is None:
            handles, _merr = nvml.mig_devices(handle)
            for k, mh in enumerate(handles):
                mname, _ = nvml.nvml_try("nvmlDeviceGetName", mh)
                muuid, _ = nvml.nvml_try("nvmlDeviceGetUUID", mh)
                gi = nvml.nvml_query("nvmlDeviceGetGpuInstanceId", mh, default=None)
                ci = nvml.nvml_query("nvmlDeviceGetComputeInstanceId", mh, default=None)
                migs.append(_Device(mh, i, str(mname) if mname else f"{gpu.name} MIG {k}",
                                    str(muuid) if muuid else None, mig=True, mig_index=k,
                                    gi=gi, ci=ci, parent_uuid=gpu.uuid))
        out.append((gpu, migs))
    return out, None


def parse_visible_devices(value: str | None) -> list[str] | None:
    """Split ``CUDA_VISIBLE_DEVICES`` into entries; None when unset (every device visible).

    ``""`` gives ``[]`` (no device visible, as CUDA does).
    """
    if value is None:
        return None
    return [t.strip() for t in value.split(",")]


def _match(token: str, physical: list[tuple[_Device, list[_Device]]]) -> list[_Device] | None:
    """The devices one ``CUDA_VISIBLE_DEVICES`` entry names, or None when it is invalid.

    Integers are NVML (PCI bus) indices, which is CUDA's order when
    ``CUDA_DEVICE_ORDER=PCI_BUS_ID`` (CUDA's default order puts the fastest GPU first).
    ``GPU-...`` matches a unique UUID prefix; ``MIG-...`` a MIG UUID (prefix), or the older
    ``MIG-GPU-<uuid>/<gi>/<ci>`` form.
    """
    if not token:
        return None
    if token.lstrip("+").isdigit():
        i = int(token)
        for gpu, migs in physical:
            if gpu.index == i:
                return migs or [gpu]
        return None
    if token.startswith("GPU-"):
        hits = [(g, m) for g, m in physical if g.uuid and g.uuid.startswith(token)]
        return (hits[0][1] or [hits[0][0]]) if len(hits) == 1 else None
    if token.startswith("MIG-GPU-"):  # MIG-GPU-<gpu uuid>/<gi>/<ci> (R450-R465 drivers)
        parts = token[len("MIG-"):].split("/")
        if len(parts) != 3 or not parts[1].isdigit() or not parts[2].isdigit():
            return None
        for g, migs in physical:
            if g.uuid == parts[0]:
                hit = [m for m in migs if m.gi == int(parts[1]) and m.ci == int(parts[2])]
                return hit or None
        return None
    if token.startswith("MIG-"):
        found = [m for _, migs in physical for m in migs if m.uuid and m.uuid.startswith(token)]
        return found if len(found) == 1 else None
    return None


def _visible(physical: list[tuple[_Device, list[_Device]]], cvd: str | None) -> tuple[list[_Device], str | None]:
    """Devices visible to CUDA in this process, in ``CUDA_VISIBLE_DEVICES`` order.

    Like the CUDA runtime, parsing stops at the first entry that names no device (``-1``,
    an index out of range, an unknown or ambiguous UUID); a device named twice also ends the
    list. MIG-enabled GPUs show each MIG instance as its own device.
    """
    tokens = parse_visible_devices(cvd)
    if tokens is None:
        return [d for g, migs in physical for d in (migs or [g])], None
    out: list[_Device] = []
    seen: set[int] = set()
    for tok in tokens:
        devs = _match(tok, physical)
        if devs is None or any(id(d) in seen for d in devs):
            break
        seen.update(id(d) for d in devs)
        out.extend(devs)
    if not out:
        return [], f"no GPU is visible to this process: CUDA_VISIBLE_DEVICES={cvd!r}"
    return out, None


def framework_usage(visible_index: int) -> tuple[int | None, str | None]:
    """This process's GPU memory (bytes) on CUDA device ``visible_index`` as frameworks it
    ALREADY imported report it; never imports or initialises a framework.

    Used when NVML lists processes but none has our pid (a container: NVML reports host
    pids). Tried in order: PyTorch ``torch.cuda.memory_reserved`` (when CUDA is initialised),
    TensorFlow ``tf.config.experimental.get_memory_info`` (when its context exists), JAX
    ``Device.memory_stats()['bytes_in_use']`` (when a GPU backend exists), CuPy's default
    memory pool ``total_bytes()``.

    Returns:
        ``(bytes, source)`` or ``(None, None)``.
    """
    mods = sys.modules
    torch = mods.get("torch")
    if torch is not None:
        try:
            cuda = torch.cuda
            if cuda.is_initialized() and visible_index < cuda.device_count():
                reserved = int(cuda.memory_reserved(visible_index))
                allocated = int(cuda.memory_allocated(visible_index))
                return reserved, f"PyTorch memory_reserved (allocated {allocated} bytes)"
        except Exception:  # noqa: BLE001
            pass
    tf = mods.get("tensorflow")
    if tf is not None:
        try:
            from tensorflow.python.eager import context  # already imported by the user: TensorFlow is loaded

            if getattr(context.context(), "_context_handle", None) is not None:
                info = tf.config.experimental.get_memory_info(f"GPU:{visible_index}")
                return int(info["current"]), f"TensorFlow get_memory_info (peak {int(info['peak'])} bytes)"
        except Exception:  # noqa: BLE001
            pass
    jax = mods.get("jax")
    if jax is not None:
        try:
            xb = mods.get("jax._src.xla_bridge")
            if xb is not None and getattr(xb, "_backends", None):
                devs = [d for d in jax.local_devices() if d.platform == "gpu"]
                if visible_index < len(devs):
                    stats = devs[visible_index].memory_stats() or {}
                    if "bytes_in_use" in stats:
                        return int(stats["bytes_in_use"]), "JAX memory_stats bytes_in_use"
        except Exception:  # noqa: BLE001
            pass
    cupy = mods.get("cupy")
    if cupy is not None:
        try:
            pool = cupy.get_default_memory_pool()
            total = int(pool.total_bytes())
            if total > 0 and int(cupy.cuda.Device().id) == visible_index:
                return total, "CuPy default memory pool total_bytes"
        except Exception:  # noqa: BLE001
            pass
    return None, None


def _read(dev: _Device, visible_index: int, pid: int) -> GpuMemory:
    """Memory and processes of one visible device."""
    if dev.error is not None or dev.handle is None:
        return GpuMemory(index=dev.index, name=dev.name, uuid=dev.uuid, error=dev.error,
                         visible_index=visible_index, mig=dev.mig)
    mem = nvml.memory_info(dev.handle)
    procs, perr = nvml.running_processes(dev.handle)
    rows = tuple(ProcessMemory(pid=p.pid, used_bytes=p.used_bytes, this_kernel=p.pid == pid) for p in procs)
    mine = [p for p in rows if p.this_kernel]
    this_bytes: int | None = None
    source: str | None = None
    if mine:
        known = [p.used_bytes for p in mine if p.used_bytes is not None]
        this_bytes = sum(known) if known else None
        source = "NVML process list (pid match)" if known else "NVML process list (pid match; memory N/A)"
    errors: list[str] = []
    seen: set[object] = set()
    for e in (*dev.notes, mem.error, perr):
        key = nvml._code_of(e) or e
        if e and key not in seen:  # a lost GPU fails every query with one code: say it once
            seen.add(key)
            errors.append(e)
    return GpuMemory(
        index=dev.index,
        name=dev.name,
        uuid=dev.uuid,
        total_bytes=mem.total_bytes,
        used_bytes=mem.used_bytes,
        free_bytes=mem.free_bytes,
        processes=rows,
        this_kernel_bytes=this_bytes,
        this_kernel_source=source,
        error="; ".join(errors) or None,
        visible_index=visible_index,
        mig=dev.mig,
    )


def sample(cuda_visible_devices: str | object | None = ..., pid: int | None = None) -> MemorySnapshot:
    """One sample of every GPU (and MIG instance) this process can see, in bytes.

    Args:
        cuda_visible_devices: the ``CUDA_VISIBLE_DEVICES`` value to apply (default: this
            process's environment; None = unset, all devices).
        pid: whose memory is "this kernel" (default ``os.getpid()``).

    Returns:
        A :class:`~cudnn_magic.model.MemorySnapshot`; ``error`` is set (and ``gpus`` empty)
        when NVML cannot be used. A device whose queries fail keeps its row with ``error``.
        When NVML lists processes but none with our pid (a container seeing host pids),
        ``this_kernel_bytes`` comes from frameworks already imported (:func:`framework_usage`).
        Never raises.
    """
    now = time.time()
    try:
        err = nvml.init_error()
        if err is not None:
            return MemorySnapshot(gpus=(), error=err, timestamp=now)
        cvd = os.environ.get("CUDA_VISIBLE_DEVICES") if cuda_visible_devices is ... else cuda_visible_devices
        physical, err = _enumerate()
        if err is not None:
            return MemorySnapshot(gpus=(), error=err, timestamp=now)
        devices, verr = _visible(physical, cvd)  # type: ignore[arg-type]
        me = os.getpid() if pid is None else pid
        rows: list[GpuMemory] = []
        for vi, dev in enumerate(devices):
            rows.append(_read(dev, vi, me))
        if not any(p.this_kernel for r in rows for p in r.processes):
            # No process has our pid: none on the GPU, or NVML shows host pids (container).
            rows = [_with_framework_usage(r) for r in rows]
        return MemorySnapshot(gpus=tuple(rows), error=verr, timestamp=now)
    except Exception as exc:  # noqa: BLE001 - never raise into a cell
        return MemorySnapshot(gpus=(), error=f"GPU memory sample failed: {type(exc).__name__}: {exc}", timestamp=now)


NVML_DEADLINE_S = nvml.NVML_DEADLINE_S
NOT_ANSWERING = nvml.NOT_ANSWERING


def sample_within(timeout_s: float = NVML_DEADLINE_S, **kwargs: Any) -> MemorySnapshot:
    """:func:`sample` with a deadline of ``timeout_s`` seconds
    (:func:`cudnn_magic.probes.nvml.within_deadline`): no caller (the kernel's main thread, the
    panel's sampler) blocks inside a hung NVML call. Returns a snapshot whose ``error`` starts with
    :data:`NOT_ANSWERING` when the deadline passes. Never raises (``KeyboardInterrupt`` aside)."""
    answered, value, started = nvml.within_deadline("memory", lambda: sample(**kwargs), timeout_s)
    if answered and value is not None:
        return value  # type: ignore[no-any-return]
    return MemorySnapshot(gpus=(), error=nvml.not_answering(timeout_s, started) if not answered else
                          "GPU memory sample failed", timestamp=time.time())


def _with_framework_usage(row: GpuMemory) -> GpuMemory:
    if row.visible_index is None or row.error:
        return row
    value, source = framework_usage(row.visible_index)
    if value is None:
        return row

    return dataclasses.replace(row, this_kernel_bytes=value, this_kernel_source=source)


def snapshot_json(s: MemorySnapshot) -> dict[str, Any]:
    """docs/json.md's ``memory`` contract, plus added keys (``visible_index``, ``mig``,
    ``this_kernel_bytes``, ``this_kernel_source``, ``error`` per GPU, ``timestamp``).
    Bytes are integers; values NVML cannot report are null."""
    return {
        "gpus": [
            {
                "index": g.index,
                "uuid": g.uuid,
                "name": g.name,
                "total_bytes": g.total_bytes,
                "used_bytes": g.used_bytes,
                "free_bytes": g.free_bytes,
                "processes": [
                    {"pid": p.pid, "used_bytes": p.used_bytes, "this_kernel": p.this_kernel} for p in g.processes
                ],
                "visible_index": g.visible_index,
                "mig": g.mig,
                "this_kernel_bytes": g.this_kernel_bytes,
                "this_kernel_source": g.this_kernel_source,
                "error": g.error,
            }
            for g in s.gpus
        ],
        "error": s.error,
        "timestamp": s.timestamp,
    }


def _no_gpu_line(s: MemorySnapshot) -> str:
    return f"No GPU memory to show: {s.error}"


