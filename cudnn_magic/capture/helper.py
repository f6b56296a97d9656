"""The fd-2 capture helper: a tiny process that owns the kernel's native stderr.

The kernel points its fd 2 at a pipe whose read end is this process's stdin. For every chunk
this process:

1. appends it to a bounded on-disk log (the crash record; written as bytes arrive, so it
   survives ``abort()`` of the kernel);
2. hands it to a writer thread that forwards it, with ordinary blocking writes, to the fd that
   was fd 2 before (ipykernel's own pipe in a kernel, the terminal in terminal IPython). The
   reading side never waits for the writer and never stops reading, so a native writer that
   holds the GIL while ipykernel's reader thread needs it cannot deadlock, at any volume
   (docs/facts.md "IPython and Jupyter behaviour"). No shared fd is ever switched to
   ``O_NONBLOCK``: that flag lives on the shared open file description and would leak into the
   terminal or into ipykernel after we are gone.

Bounds (a flood of native output never grows memory without bound or blocks a writer). Bytes
waiting for the previous fd 2 are kept in memory up to
``--memory-bytes`` (:data:`MEMORY_BYTES`, 16 MiB); beyond that they wait in a spool file on disk
(``spool`` in the instance directory, created ``O_EXCL | O_NOFOLLOW`` and unlinked at once, so
it never outlives the helper) up to ``--spool-bytes`` (:data:`SPOOL_BYTES`, 512 MiB); beyond
that they are dropped and counted, and one line ``[cudnn-magic: dropped N MiB of native stderr
here ...]`` is forwarded where they were cut. The helper's memory stays near its memory bound,
and freed memory goes back to the system when the writer runs dry (glibc's ``malloc_trim``).

Guardian. At start (before any thread) the helper forks a guardian process that holds the read
end of the pipe too and waits. When the helper dies, even by SIGKILL, the guardian takes over:
it reads the pipe, strips markers and forwards to the previous fd 2 (then to the fallback fd,
then nowhere) until every writer is gone. fd 2 therefore always has a reader: no writer (the
kernel, a shell, a subprocess, a fork child) ever gets SIGPIPE or EPIPE from the capture.

The markers, the shared state and the log layout are :mod:`cudnn_magic.capture.protocol`.

Standard library only; started with ``python -I -S helper.py ...`` (about 10 ms).
"""

from __future__ import annotations

import json
import os
import select
import signal
import struct
import sys
import threading
import time

TYPE_CHECKING = False  # typing itself is not imported: start-up cost of the helper process
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

try:  # imported as cudnn_magic.capture.helper
    from .protocol import (
        BATCH_BELOW,
        BATCH_WAIT_S,
        CELL_AT,
        CLEAN_EXIT_REMOVES,
        COUNTS,
        COUNTS_AT,
        CRASH_ECHO,
        FLAGGED_AT,
        FLUSH_CAP_S,
        MAGIC,
        MEMORY_BYTES,
        META_EVERY_S,
        QUEUED_AT,
        READ_SIZE,
        SKIP_KEEP,
        SPOOL_BYTES,
        STATE_SIZE,
        _create,
        _Log,
        _Parser,
        _pid_alive,
        _size,
        _write_json,
        mib,
        read_cell_record,
        read_clean_flag,
    )
except ImportError:  # run as a script, python -I -S helper.py: isolated mode puts no directory on sys.path
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from protocol import (  # type: ignore[import-not-found,no-redef]  # the sibling file, found by path
        BATCH_BELOW,
        BATCH_WAIT_S,
        CELL_AT,
        CLEAN_EXIT_REMOVES,
        COUNTS,
        COUNTS_AT,
        CRASH_ECHO,
        FLAGGED_AT,
        FLUSH_CAP_S,
        MAGIC,
        MEMORY_BYTES,
        META_EVERY_S,
        QUEUED_AT,
        READ_SIZE,
        SKIP_KEEP,
        SPOOL_BYTES,
        STATE_SIZE,
        _create,
        _Log,
        _Parser,
        _pid_alive,
        _size,
        _write_json,
        mib,
        read_cell_record,
        read_clean_flag,
    )


def _hex_literals(arg: str) -> tuple[bytes, ...]:
    out = []
    for h in arg.split(","):
        try:
            if h:
                out.append(bytes.fromhex(h))
        except ValueError:
            pass
    return tuple(out)


TRIM_AFTER = 8 << 20
"""After this many bytes forwarded (8 MiB), the writer gives freed memory back when it runs dry."""

_malloc_trim: Any = None  # glibc's malloc_trim once looked up; False where there is none


def _trim_malloc() -> None:
    """Give freed heap memory back to the system (glibc ``malloc_trim(0)``, all arenas; a no-op
    elsewhere). Without it the helper's RSS stays at its high-water mark after a burst."""
    global _malloc_trim
    if _malloc_trim is None:
        try:
            import ctypes  # start-up cost of the helper process (python -I -S, about 10 ms)

            _malloc_trim = ctypes.CDLL(None).malloc_trim
        except (ImportError, OSError, AttributeError):
            _malloc_trim = False
    if _malloc_trim:
        try:
            _malloc_trim(0)
        except Exception:  # noqa: BLE001
            pass


class _Forwarder(threading.Thread):
    """Forwards the stream to the previous fd 2 with blocking writes; on EPIPE/EBADF/EIO
    switches to the fallback fd once (ipykernel's copy of the real stderr), then drops.

    What waits is kept in memory up to ``memory_bytes``, then in the spool file up to
    ``spool_bytes``, then dropped (counted; a notice marks the cut). Counters (bytes):
    ``queued`` stream bytes accepted (data and notices), ``forwarded`` stream bytes done with
    (written, dropped or skipped), ``spilled``/``dropped``/``skipped`` data bytes.
    """

    def __init__(self, downstream: int, fallback: int, publish: Callable[[], None], memory_bytes: int = MEMORY_BYTES,
                 spool_bytes: int = SPOOL_BYTES, directory: str = "", ack_fd: int = -1) -> None:
        super().__init__(daemon=True, name="forward")
        import collections  # start-up cost of the helper process (python -I -S, about 10 ms)

        self.fds = [fd for fd in (downstream, fallback) if fd >= 0]
        self.cond = threading.Condition()
        self.queue: collections.deque[bytes] = collections.deque()
        self.in_memory = 0
        self.memory_bytes = max(READ_SIZE, memory_bytes)
        self.spool_bytes = max(0, spool_bytes)
        self.directory = directory
        self.spool_fd = -1
        self.spool_r = 0
        self.spool_w = 0
        self.spool_error = ""
        self.queued = 0
        self.forwarded = 0
        self.spilled = 0
        self.dropped = 0
        self.skipped = 0
        self.drop_run = 0
        self.closing = False
        self.acks: list = []
        self.ack_fd = ack_fd
        self.last_progress = time.monotonic()
        self.publish = publish
        self.since_trim = 0

    # -- the main thread's side ------------------------------------------------------------------

    def put(self, data: bytes) -> None:
        """Accept ``data`` (never blocks on the downstream fd)."""
        with self.cond:
            self.queued += len(data)
            if self.drop_run:
                if not self._fits(len(data)):
                    self._drop(len(data))
                    return
                self._notice_drop()
            if not self._store(data):
                self._drop(len(data))
                return
            self.cond.notify_all()

    def waiting(self) -> int:
        """Bytes stored and not yet written (memory + spool)."""
        return self.in_memory + self.spool_w - self.spool_r

    def skip(self) -> int:
        """Drop what waits except its newest :data:`SKIP_KEEP` bytes, which follow a notice.
        Returns the data bytes skipped."""
        with self.cond:
            waiting = self.waiting()
            if waiting <= SKIP_KEEP:
                return 0
            tail = self._newest(SKIP_KEEP)
            nl = tail.find(b"\n")
            if 0 <= nl < len(tail) - 1:
                tail = tail[nl + 1:]  # start at a line
            self.queue.clear()
            self.in_memory = 0
            self._spool_reset()
            self.forwarded += waiting
            n = waiting - len(tail)
            self.skipped += n
            dropped, self.drop_run = self.drop_run, 0
            extra = b" (and had dropped %s before that, beyond the bounds)" % mib(dropped) if dropped else b""
            note = (b"\n[cudnn-magic: skipped %s of native stderr that was still waiting to be shown when the cell "
                    b"was interrupted%s; the newest %s follow]\n" % (mib(n), extra, _size(len(tail))))
            chunk = note + tail
            self.queued += len(chunk)  # the tail was done with above; it is new again
            self.queue.append(chunk)
            self.in_memory += len(chunk)
            self.cond.notify_all()
            return n

    def add_ack(self, token: str, offset: int) -> None:
        """Ack ``token`` once everything accepted so far is written (or the writer stalls)."""
        with self.cond:
            if self.drop_run:
                self._notice_drop()
                self.cond.notify_all()
            self.acks.append((token, self.queued, offset))
            self._acks_due(False)

    def check_stall(self, now: float) -> None:
        with self.cond:
            if self.acks and now - self.last_progress > FLUSH_CAP_S:
                self._acks_due(True)

    def wait_flushed(self, target: int, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        with self.cond:
            while self.forwarded < target:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.cond.wait(left)
        return True

    # -- under the lock --------------------------------------------------------------------------

    def _fits(self, n: int) -> bool:
        if self.spool_w == self.spool_r and self.in_memory + n <= self.memory_bytes:
            return True
        return self.spool_w - self.spool_r + n <= self.spool_bytes

    def _store(self, chunk: bytes, force: bool = False) -> bool:
        n = len(chunk)
        if self.spool_w == self.spool_r and (force or self.in_memory + n <= self.memory_bytes):
            self.queue.append(chunk)
            self.in_memory += n
            return True
        if self.spool_w - self.spool_r + n <= self.spool_bytes and self._spool_write(chunk):
            self.spilled += n
            return True
        if force:  # a notice: small, always kept (in memory, after whatever waits)
            if self.spool_w == self.spool_r:
                self.queue.append(chunk)
                self.in_memory += n
                return True
            return self._spool_write(chunk)
        return False

    def _drop(self, n: int) -> None:
        self.forwarded += n
        self.dropped += n
        self.drop_run += n

    def _notice_drop(self) -> None:
        n, self.drop_run = self.drop_run, 0
        note = (b"\n[cudnn-magic: dropped %s of native stderr here: more than %s was waiting to be shown "
                b"(memory bound %s + spool bound %s); the capture record keeps the newest bytes]\n"
                % (mib(n), mib(self.memory_bytes + self.spool_bytes), mib(self.memory_bytes), mib(self.spool_bytes)))
        self.queued += len(note)
        if not self._store(note, force=True):
            self.forwarded += len(note)

    def _spool_open(self) -> bool:
        if self.spool_fd >= 0:
            return True
        if self.spool_error or not self.directory:
            return False
        path = os.path.join(self.directory, "spool")
        try:
            self.spool_fd = _create(path, os.O_RDWR)
            os.unlink(path)  # the space goes back with the last close, even after SIGKILL
        except OSError as exc:
            self.spool_error = f"spool: {exc}"
            return False
        return True

    def _spool_write(self, chunk: bytes) -> bool:
        if not self._spool_open():
            return False
        try:
            view = memoryview(chunk)
            at = self.spool_w
            while view:
                k = os.pwrite(self.spool_fd, view, at)
                view = view[k:]
                at += k
        except OSError as exc:  # disk full: what does not fit is dropped (counted)
            self.spool_error = f"spool: {exc}"
            return False
        self.spool_w += len(chunk)
        return True

    def _spool_reset(self) -> None:
        if self.spool_fd >= 0 and self.spool_w:
            try:
                os.ftruncate(self.spool_fd, 0)
            except OSError:
                pass
        self.spool_r = self.spool_w = 0

    def _spool_read(self) -> bytes:
        n = min(READ_SIZE, self.spool_w - self.spool_r)
        try:
            data = os.pread(self.spool_fd, n, self.spool_r)
        except OSError:
            data = b""
        if not data:  # unreadable spool: what it held is lost (counted as dropped)
            lost = self.spool_w - self.spool_r
            self.dropped += lost
            self.forwarded += lost
            self._spool_reset()
            return b""
        self.spool_r += len(data)
        if self.spool_r == self.spool_w:
            self._spool_reset()
        return data

    def _newest(self, n: int) -> bytes:
        """The newest ``n`` bytes of what waits (memory first, then the spool)."""
        parts: list = []
        if self.spool_w > self.spool_r:
            k = min(n, self.spool_w - self.spool_r)
            try:
                parts.append(os.pread(self.spool_fd, k, self.spool_w - k))
            except OSError:
                pass
            n -= k
        for chunk in reversed(self.queue):
            if n <= 0:
                break
            parts.insert(0, chunk[-n:])
            n -= len(parts[0])
        return b"".join(parts)

    def _acks_due(self, stalled: bool) -> None:
        keep = []
        for token, target, offset in self.acks:
            done = self.forwarded >= target
            if done or stalled:
                line = b"%s %d %d %d %d %d %d\n" % (token.encode(), offset, self.forwarded, int(done),
                                                     self.spilled, self.dropped, self.skipped)
                if self.ack_fd >= 0:
                    try:
                        os.write(self.ack_fd, line)
                    except OSError:
                        pass
            else:
                keep.append((token, target, offset))
        self.acks = keep

    # -- the writer thread -----------------------------------------------------------------------

    def run(self) -> None:
        while True:
            with self.cond:
                while not self.queue and self.spool_r == self.spool_w and not self.closing:
                    self.cond.wait()
                if self.queue:
                    data = self.queue.popleft()
                    if self.queue and len(data) < READ_SIZE:
                        # small chunks (log lines) go out together, up to 1 MiB per write
                        parts = [data]
                        size = len(data)
                        while self.queue and size + len(self.queue[0]) <= READ_SIZE:
                            nxt = self.queue.popleft()
                            parts.append(nxt)
                            size += len(nxt)
                        data = b"".join(parts)
                    self.in_memory -= len(data)
                elif self.spool_r < self.spool_w:
                    data = self._spool_read()
                else:
                    return
                self.last_progress = time.monotonic()
            if data:
                self._write(data)
            with self.cond:
                self.forwarded += len(data)
                self.last_progress = time.monotonic()
                self._acks_due(False)
                self.cond.notify_all()
                idle = not self.queue and self.spool_r == self.spool_w
                self.since_trim += len(data)
            self.publish()
            if idle and self.since_trim >= TRIM_AFTER:
                self.since_trim = 0
                _trim_malloc()

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            if not self.fds:
                return
            try:
                k = os.write(self.fds[0], view)
                view = view[k:]
            except InterruptedError:
                continue
            except OSError:
                self.fds.pop(0)  # EPIPE (reader gone), EBADF, EIO: try the fallback


def _guardian(life_r: int, downstream: int, fallback: int) -> None:
    """The guardian's whole life (in a forked child, no threads): wait until the helper is gone
    (EOF on ``life_r``), then read the pipe (fd 0) and forward it, markers stripped, until every
    writer has closed it. So fd 2 keeps a reader: no writer ever sees EPIPE."""
    while True:
        try:
            if not os.read(life_r, 1):
                break
        except InterruptedError:
            continue
        except OSError:
            break
    parser = _Parser()
    fds = [fd for fd in (downstream, fallback) if fd >= 0]
    while True:
        try:
            chunk = os.read(0, READ_SIZE)
        except InterruptedError:
            continue
        except OSError:
            break
        items = parser.feed(chunk) if chunk else [parser.flush()]
        for item in items:
            if not isinstance(item, bytes) or not item:
                continue
            view = memoryview(item)
            while view and fds:
                try:
                    view = view[os.write(fds[0], view):]
                except InterruptedError:
                    continue
                except OSError:
                    fds.pop(0)
        if not chunk:
            break


def main(argv: list) -> int:
    import argparse  # start-up cost of the helper process (python -I -S, about 10 ms)

    p = argparse.ArgumentParser(prog="cudnn_magic.capture.helper")
    p.add_argument("--dir", required=True, help="instance directory (log segments, meta.json)")
    p.add_argument("--state", required=True, help="shared state file (STATE_SIZE bytes)")
    p.add_argument("--downstream", type=int, required=True, help="fd that was fd 2 before")
    p.add_argument("--fallback", type=int, default=-1, help="fd to use if downstream breaks")
    p.add_argument("--ack", type=int, required=True)
    p.add_argument("--ctl", type=int, required=True)
    p.add_argument("--kernel-pid", type=int, required=True)
    p.add_argument("--max-bytes", type=int, default=4 << 20)
    p.add_argument("--memory-bytes", type=int, default=MEMORY_BYTES)
    p.add_argument("--spool-bytes", type=int, default=SPOOL_BYTES)
    p.add_argument("--meta", default="{}", help="JSON object merged into meta.json")
    p.add_argument("--flag", default="", help="comma-separated hex of lower-case literals to flag chunks by")
    args = p.parse_args(argv)

    for sig in ("SIGINT", "SIGPIPE", "SIGHUP", "SIGTSTP", "SIGTTOU"):
        if hasattr(signal, sig):
            signal.signal(getattr(signal, sig), signal.SIG_IGN)

    # The guardian: forked now, while this process has no thread. It keeps a reader on the pipe
    # if this process dies (see the module docstring).
    life_r, life_w = os.pipe()
    guardian = -1
    try:
        guardian = os.fork()
    except OSError:
        os.close(life_r)
    if guardian == 0:
        try:
            os.close(life_w)
            for fd in (args.ack, args.ctl):
                try:
                    os.close(fd)
                except OSError:
                    pass
            _guardian(life_r, args.downstream, args.fallback)
        finally:
            os._exit(0)
    if guardian > 0:
        os.close(life_r)
    os.set_inheritable(life_w, False)

    import mmap  # start-up cost of the helper process (python -I -S, about 10 ms)

    sfd = os.open(args.state, os.O_RDWR | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0))
    state = mmap.mmap(sfd, STATE_SIZE)
    os.close(sfd)
    try:
        os.set_blocking(args.ack, False)  # our own pipe: an ack never blocks the reader
    except OSError:
        pass
    gen = 0
    offset = 0

    fwd: _Forwarder

    def publish() -> None:
        struct.pack_into("<Q", state, 16, fwd.forwarded)

    def publish_counts() -> None:
        COUNTS.pack_into(state, COUNTS_AT, fwd.spilled, fwd.dropped, fwd.skipped)

    fwd = _Forwarder(args.downstream, args.fallback, publish, args.memory_bytes, args.spool_bytes,
                     args.dir, args.ack)
    fwd.start()
    log = _Log(args.dir, args.max_bytes)
    meta_path = os.path.join(args.dir, "meta.json")
    meta = {
        "version": 1,
        "kernel_pid": args.kernel_pid,
        "helper_pid": os.getpid(),
        "guardian_pid": guardian if guardian > 0 else None,
        "started": time.time(),
        "clean_exit": False,
        "kernel_exited": None,
        "ended": None,
        "last_cell": None,
        "max_bytes": args.max_bytes,
        "segment_bytes": log.seg_bytes,
        "memory_bytes": fwd.memory_bytes,
        "spool_bytes": fwd.spool_bytes,
    }
    try:
        meta.update(json.loads(args.meta))
    except ValueError:
        pass

    def save_meta() -> None:
        rec = None if meta.get("forgotten") else read_cell_record(state)
        if rec is not None:
            meta["last_cell"] = rec
        flag = read_clean_flag(state)
        if flag and not meta["clean_exit"]:
            meta["clean_exit"] = True
            meta["exit_kind"] = "uninstall" if flag == 2 else "exit"
        meta["offset"] = offset
        meta["forwarded"] = fwd.forwarded
        meta["dropped"] = fwd.dropped
        meta["spilled"] = fwd.spilled
        meta["skipped"] = fwd.skipped
        meta["log_error"] = log.error or None
        meta["spool_error"] = fwd.spool_error or None
        meta["meta_error"] = None if _write_json(meta_path, meta) else "meta.json could not be written"

    save_meta()
    meta_seq, meta_time = 0, 0.0
    parser = _Parser()
    data_fd, ctl_fd = 0, args.ctl
    ctl_buf = b""
    kernel_gone = False
    last_alive_check = time.monotonic()

    try:
        # start-up cost of the helper process: ctypes for memmem, only in the helper
        from .fastfind import ChunkFlagger
    except ImportError:  # run as a script: from its own folder, as protocol above
        from fastfind import ChunkFlagger  # type: ignore[import-not-found,no-redef]  # the sibling file
    flagger = ChunkFlagger(_hex_literals(args.flag))

    def handle(items: list) -> None:
        # called while gen is odd: the kernel sees the new offset only once the chunk is logged,
        # queued and flagged (protocol: a settled offset is in the log, ``queued`` covers it, and
        # ``flagged`` says whether a warning literal was in it)
        nonlocal offset
        for item in items:
            if isinstance(item, bytes):
                if item:
                    offset += len(item)
                    fwd.put(item)  # forwarding starts while the chunk is logged
                    log.write(item, offset)
                    if flagger.literals and flagger.holds(item):
                        struct.pack_into("<Q", state, FLAGGED_AT, offset)
            elif item.startswith("D"):
                fwd.skip()
                fwd.add_ack(item, offset)
            else:
                fwd.add_ack(item, offset)
        publish_counts()
        struct.pack_into("<Q", state, QUEUED_AT, fwd.queued)
        struct.pack_into("<Q", state, 8, offset)

    def bump() -> None:
        nonlocal gen
        gen += 1
        struct.pack_into("<Q", state, 0, gen)

    def on_kernel_gone(clean: bool) -> None:
        nonlocal kernel_gone
        if kernel_gone:
            return
        kernel_gone = True
        meta["kernel_exited"] = time.time()
        save_meta()
        clean = clean or bool(meta["clean_exit"])
        if not clean and args.fallback >= 0 and offset:
            # ipykernel's pipe dies with the kernel and may have swallowed the last bytes:
            # repeat the tail in the server log, marked as a repeat.
            fwd.wait_flushed(fwd.queued, 1.0)
            tail = log.tail(CRASH_ECHO)
            if tail:
                head = b"[cudnn-magic] kernel pid %d ended without a clean exit; last native stderr:\n" % args.kernel_pid
                try:
                    os.write(args.fallback, head + tail + (b"" if tail.endswith(b"\n") else b"\n"))
                except OSError:
                    pass

    while data_fd >= 0:
        poller = select.poll()
        poller.register(data_fd, select.POLLIN)
        if ctl_fd >= 0:
            poller.register(ctl_fd, select.POLLIN)
        timeout_ms = 50 if parser.pending else 200 if fwd.acks else 1000
        events = poller.poll(timeout_ms)
        now = time.monotonic()
        if fwd.acks:
            fwd.check_stall(now)
        if not kernel_gone:
            seq = struct.unpack_from("<Q", state, CELL_AT)[0]
            if seq != meta_seq and not seq & 1 and now - meta_time >= META_EVERY_S:
                meta_seq, meta_time = seq, now
                save_meta()
        if not events:
            if parser.pending:
                bump()
                handle([parser.flush()])
                bump()
            if not kernel_gone and now - last_alive_check > 1.0:
                last_alive_check = now
                if not _pid_alive(args.kernel_pid):
                    on_kernel_gone(bool(meta["clean_exit"]) or bool(read_clean_flag(state)))
            continue
        for fd, _ev in events:
            if fd == data_fd:
                bump()  # odd before the read: a chunk that has left the pipe is always visible
                try:
                    chunk = os.read(data_fd, READ_SIZE)
                except InterruptedError:
                    chunk = None
                if chunk == b"":
                    items = [parser.flush()]
                    data_fd = -1
                elif chunk:
                    items = parser.feed(chunk)
                else:
                    items = []
                handle(items)
                bump()
                del items
                if chunk and len(chunk) < BATCH_BELOW and MAGIC not in chunk:
                    # small writes: let more accumulate instead of waking for every one (each
                    # wake-up costs the writer a context switch); a marker skips the wait
                    time.sleep(BATCH_WAIT_S)
                chunk = None
            elif fd == ctl_fd:
                try:
                    more = os.read(ctl_fd, 65536)
                except InterruptedError:
                    continue
                if not more:
                    ctl_fd = -1
                    on_kernel_gone(bool(meta["clean_exit"]) or bool(read_clean_flag(state)))
                    continue
                ctl_buf += more
                while len(ctl_buf) >= 5:
                    (length,) = struct.unpack_from(">I", ctl_buf, 1)
                    if len(ctl_buf) < 5 + length:
                        break
                    kind = ctl_buf[:1]
                    ctl_buf = ctl_buf[5 + length:]
                    if kind in (b"X", b"B"):
                        meta["clean_exit"] = True
                        meta["exit_kind"] = "uninstall" if kind == b"B" else "exit"
                    save_meta()
    # EOF: every writer of fd 2 is gone (kernel and any child that inherited it).
    with fwd.cond:
        fwd.closing = True
        fwd.cond.notify_all()
    fwd.join(10.0)
    if not kernel_gone:
        on_kernel_gone(bool(meta["clean_exit"]) or bool(read_clean_flag(state)))
    meta["ended"] = time.time()
    if meta["clean_exit"]:
        _forget_clean_session(args.dir, log, meta)
    save_meta()
    if guardian > 0:
        os.close(life_w)  # the guardian finds the pipe at EOF and exits; reap it
        try:
            os.waitpid(guardian, 0)
        except OSError:
            pass
    return 0


def _forget_clean_session(directory: str, log: _Log, meta: dict) -> None:
    """After a clean exit, keep only what a later crash report can use: ``meta.json`` (process
    ids, times, ``clean_exit``), without the last cell's source. The native stderr segments,
    the shared state (which holds the cell's source) and faulthandler's file go at once, so a
    session that ended well leaves no output or code behind. Never raises."""
    meta["last_cell"] = None
    meta["forgotten"] = "log, cell source and faulthandler file removed at the clean exit"
    if log.fd >= 0:
        try:
            os.close(log.fd)
        except OSError:
            pass
        log.fd = -1
    names = list(CLEAN_EXIT_REMOVES)
    try:
        names += [n for n in os.listdir(directory) if n.startswith("fd2.") and n.endswith(".log")]
    except OSError:
        pass
    for n in names:
        try:
            os.unlink(os.path.join(directory, n))
        except OSError:
            pass


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
