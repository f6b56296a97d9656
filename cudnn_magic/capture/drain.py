"""ipykernel's side of the delivery: wait until its own fd-capture reader has handed every byte
of its pipe to ``sys.stderr``, so that ipykernel's flush at the end of the request (or ours)
sends it (``benchmarks/bench_delivery.py``)."""

from __future__ import annotations

import os
import sys
import time
from typing import ClassVar

from .tee import fionread

__all__ = ["drain_ipykernel"]


def drain_ipykernel(timeout: float = 1.0, flush: bool = True) -> None:
    """Wait until ipykernel's own fd-capture reader has taken every byte out of its pipe and
    handed it to ``sys.stderr`` (so the end-of-cell flush, or the ``flush`` here, sends it),
    then flush ``sys.stderr`` when ``flush`` is set.

    ipykernel's reader thread (``OutStream._watch_pipe_fd``) reads that pipe 1,000 bytes at a
    time and needs the GIL to turn them into stream output. Done means: the pipe is empty and
    the thread is blocked outside the interpreter (back in ``read`` on it, or copying to the original
    stderr what it has already handed on: :class:`_ReaderState`, Linux). Where that cannot be
    told, the pipe must stay empty for a further 2 ms.
    The wait releases the GIL (sleeps of 50 µs, growing to 1 ms) and lasts at most ``timeout``
    seconds (a thread that never stops writing cannot hold the cell). A no-op outside ipykernel
    or when its capture is off.
    """
    err = sys.stderr
    fid = getattr(err, "_fid", None)
    if isinstance(fid, int) and fid >= 0:
        reader = _ReaderState.of(getattr(err, "watch_fd_thread", None))
        deadline = time.monotonic() + timeout
        quiet = 0
        nap = 0.00005
        while time.monotonic() < deadline:
            if fionread(fid):
                quiet = 0
            else:
                idle = reader.idle() if reader is not None else None
                if idle:
                    break
                if idle is None:  # running, or no wchan to read: the 2 ms rule
                    quiet += 1
                    time.sleep(0.001)
                    if quiet >= 2:
                        break
                    continue
            time.sleep(nap)
            nap = min(nap * 2, 0.001)
    if flush:
        try:
            err.flush()
        except Exception:  # noqa: BLE001
            pass


class _ReaderState:
    """Where ipykernel's pipe-reader thread sleeps, read from ``/proc/self/task/<tid>/wchan`` (the
    kernel function it is blocked in: ``pipe_read``/``anon_pipe_read`` while it waits for bytes,
    a ``futex`` wait while it waits for the GIL or a lock, ``0`` while it runs or where the kernel
    hides it). The file is opened once per thread and re-read with ``pread`` (about 4 µs)."""

    _cache: ClassVar[dict[tuple[int, int], _ReaderState]] = {}  # one per thread, shared by the class

    def __init__(self, tid: int) -> None:
        self.fd = os.open(f"/proc/self/task/{tid}/wchan", os.O_RDONLY | os.O_CLOEXEC)

    @classmethod
    def of(cls, thread: object) -> _ReaderState | None:
        tid, ident = getattr(thread, "native_id", None), getattr(thread, "ident", None)
        if not isinstance(tid, int) or not isinstance(ident, int) or not getattr(thread, "is_alive", lambda: False)():
            return None
        hit = cls._cache.get((tid, ident))
        if hit is None:
            try:
                hit = cls._cache[(tid, ident)] = cls(tid)
            except OSError:
                return None
        return hit

    def idle(self) -> bool | None:
        """True while the thread is blocked outside the interpreter (waiting on its pipe, or
        copying bytes it has already handed on to the original stderr), False while it waits
        for the GIL or a lock, None when this cannot tell (running, or wchan hidden)."""
        try:
            where = os.pread(self.fd, 64, 0)
        except OSError:
            return None
        if not where or where == b"0":
            return None
        return b"futex" not in where
