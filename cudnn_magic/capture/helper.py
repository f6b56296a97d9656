"""The fd-2 capture helper: a tiny process that owns the kernel's native stderr.

The kernel points its fd 2 at a pipe whose read end is this process's stdin. For every chunk
this process:

1. appends it to a bounded on-disk log (the crash record; written as bytes arrive, so it
   survives ``abort()`` of the kernel);
2. queues it for a writer thread that forwards it, with ordinary blocking writes, to the fd
   that was fd 2 before (ipykernel's own pipe in a kernel, the terminal in terminal IPython).
   The reading side never waits for the writer, so a native writer that holds the GIL while
   ipykernel's reader thread needs it cannot deadlock (FACTS.md, "IPython and Jupyter
   behaviour"). No fd is ever switched to ``O_NONBLOCK``: that flag lives on the shared open
   file description and would leak into the terminal or into ipykernel after we are gone.

Sync markers ``MAGIC + b"S" + token + b"\\0"`` in the data stream are stripped; when one is seen,
everything before it is flushed downstream (cap :data:`FLUSH_CAP_S`) and
``b"<token> <offset> <forwarded> <ok>\\n"`` is written to the ack fd. ``offset`` is the log
offset (data bytes, markers excluded) at the marker.

A second pipe (``--ctl``) carries length-prefixed records from the kernel: ``X`` (clean exit
of the kernel), ``B`` (uninstall); its EOF means the kernel is gone. The helper is the only
writer of ``meta.json``.

Shared state (``--state``, a :data:`STATE_SIZE`-byte file mapped by both sides, little-endian):

* written by the helper: ``[0] gen`` (uint64, odd while a chunk is being read and counted),
  ``[8] offset`` (data bytes read), ``[16] forwarded`` (bytes written downstream). The kernel
  reads these to tell, in about a microsecond, whether a cell wrote anything to fd 2.
* written by the kernel at every ``pre_run_cell`` (no syscall, no wake-up of the helper):
  ``[64] seq`` (uint64, odd while being written), ``[72] n`` (int64 execution count, -1 if
  unknown), ``[80] offset`` (uint64, log offset at the cell's start), ``[88] t`` (float64 epoch
  s), ``[96] length`` (uint32), ``[100:]`` the cell's source, UTF-8, cut to fit. The helper
  copies it into ``meta.json``'s ``last_cell`` at most every :data:`META_EVERY_S` seconds and
  when the kernel goes; the file itself also holds it (it is a shared file mapping), so a
  reader can take it from ``state`` with :func:`read_cell_record` even if the helper was killed.

Log layout (in the instance directory): ``fd2.<start>.log`` segments, ``<start>`` being the
log offset (12 decimal digits) of the segment's first byte. A new segment starts when the
current one reaches ``max_bytes / 2``; only the newest two are kept, so the log holds at
least the last ``max_bytes / 2`` and at most ``max_bytes`` bytes.

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

MAGIC = b"\0\x1bcudnn-magic-sync:"
"""Prefix of a sync marker in the fd-2 stream (never valid text, so never produced by a log)."""

FLUSH_CAP_S = 5.0
"""Longest wait (seconds) for the downstream fd to take the queued bytes before acking."""

QUEUE_CAP = 256 << 20
"""Bytes queued for downstream (256 MiB) beyond which reading stops (ordinary backpressure)."""

READ_SIZE = 1 << 20
"""Bytes per read (1 MiB): at least the pipe size, so a read never splits a small write."""

BATCH_BELOW = 64 << 10
"""A read shorter than this (64 KiB) is followed by a :data:`BATCH_WAIT_S` pause."""

BATCH_WAIT_S = 0.0005
"""Pause (0.5 ms) after a short read so small writes are read in batches: this is the most a
forwarded byte is delayed, and it lifts 80-byte-write throughput about twofold."""

CRASH_ECHO = 8192
"""Bytes of the log tail echoed to the fallback fd when the kernel dies without a clean exit."""

_STATE = struct.Struct("<QQQ")

STATE_SIZE = 8192
"""Bytes in the shared state file (the cell source gets ``STATE_SIZE - 100`` of them)."""

CELL_HEAD = struct.Struct("<QqQdI")
"""seq, n, offset, t, length: the cell record at byte 64 of the state file."""

CELL_AT = 64
SOURCE_AT = CELL_AT + CELL_HEAD.size  # 100

META_EVERY_S = 2.0
"""Longest delay (seconds) before a new cell record reaches ``meta.json`` while the kernel lives."""


def read_cell_record(buf) -> dict | None:
    """The last cell record from a state buffer (an ``mmap`` or the file's bytes), or ``None``
    if none was written yet or it is being written (odd ``seq``)."""
    if len(buf) < SOURCE_AT:
        return None
    seq, n, offset, t, length = CELL_HEAD.unpack_from(buf, CELL_AT)
    if seq == 0 or seq & 1:
        return None
    length = min(length, len(buf) - SOURCE_AT)
    src = bytes(buf[SOURCE_AT:SOURCE_AT + length]).decode("utf-8", "replace")
    return {"n": None if n < 0 else n, "offset": offset, "t": t, "source": src, "seq": seq}


class _Parser:
    """Splits a byte stream into data and sync tokens; a marker may straddle two reads."""

    def __init__(self) -> None:
        self.pending = b""

    def feed(self, chunk: bytes) -> list:
        """Returns a list of ``bytes`` (data) and ``str`` (a sync token), in stream order."""
        buf = self.pending + chunk if self.pending else chunk
        self.pending = b""
        out: list = []
        i = 0
        n = len(buf)
        while True:
            j = buf.find(MAGIC, i)
            if j < 0:
                keep = self._partial_tail(buf, i)
                if n - keep > i:
                    out.append(buf[i:n - keep])
                if keep:
                    self.pending = buf[n - keep:]
                return out
            end = buf.find(b"\0", j + len(MAGIC), j + len(MAGIC) + 40)
            if end < 0:
                if n - j < len(MAGIC) + 40:  # marker not complete yet
                    if j > i:
                        out.append(buf[i:j])
                    self.pending = buf[j:]
                    return out
                end_data = j + len(MAGIC)  # not a marker: keep it as data
                out.append(buf[i:end_data])
                i = end_data
                continue
            rec = buf[j + len(MAGIC):end]
            if rec[:1] == b"S" and rec[1:].isdigit():
                if j > i:
                    out.append(buf[i:j])
                out.append(rec[1:].decode("ascii"))
                i = end + 1
            else:
                out.append(buf[i:j + len(MAGIC)])
                i = j + len(MAGIC)

    @staticmethod
    def _partial_tail(buf: bytes, start: int) -> int:
        """Length of the longest suffix of ``buf[start:]`` that is a proper prefix of MAGIC."""
        lo = max(start, len(buf) - len(MAGIC) + 1)
        k = buf.find(b"\0", lo)
        while k >= 0:
            if MAGIC.startswith(buf[k:]):
                return len(buf) - k
            k = buf.find(b"\0", k + 1)
        return 0

    def flush(self) -> bytes:
        data, self.pending = self.pending, b""
        return data


class _Log:
    """Bounded segmented log; never raises (a disk error stops logging, not forwarding)."""

    def __init__(self, directory: str, max_bytes: int) -> None:
        self.dir = directory
        self.seg_bytes = max(4096, max_bytes // 2)
        self.fd = -1
        self.seg_size = 0
        self.segments: list = []
        self.seg_start = 0
        self.error = ""
        self._open(0)

    def _open(self, start: int) -> None:
        try:
            if self.fd >= 0:
                os.close(self.fd)
            path = os.path.join(self.dir, "fd2.%012d.log" % start)
            self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
            self.segments.append(path)
            self.seg_size = 0
            self.seg_start = start
            while len(self.segments) > 2:
                old = self.segments.pop(0)
                try:
                    os.unlink(old)
                except OSError:
                    pass
        except OSError as exc:
            self.fd = -1
            self.error = "log: %s" % exc

    def _reset(self, start: int) -> None:
        for old in self.segments:
            try:
                os.unlink(old)
            except OSError:
                pass
        self.segments = []
        self._open(start)

    def write(self, data: bytes, offset_after: int) -> None:
        if self.fd < 0:
            return
        start = offset_after - len(data)
        if len(data) > self.seg_bytes:
            # only the newest seg_bytes of a huge chunk fit: drop everything older so the
            # segments on disk stay contiguous
            data = data[len(data) - self.seg_bytes:]
            self._reset(offset_after - len(data))
        elif self.seg_size and self.seg_size + len(data) > self.seg_bytes:
            self._open(start)
        elif not self.seg_size and start != self.seg_start:
            self._reset(start)
        if self.fd < 0:
            return
        try:
            view = memoryview(data)
            while view:
                k = os.write(self.fd, view)
                view = view[k:]
            self.seg_size += len(data)
        except OSError as exc:
            self.error = "log: %s" % exc
            try:
                os.close(self.fd)
            except OSError:
                pass
            self.fd = -1

    def tail(self, n: int) -> bytes:
        out = b""
        for path in reversed(self.segments):
            try:
                with open(path, "rb") as f:
                    f.seek(0, 2)
                    size = f.tell()
                    f.seek(max(0, size - (n - len(out))))
                    out = f.read() + out
            except OSError:
                break
            if len(out) >= n:
                break
        return out[-n:]


class _Forwarder(threading.Thread):
    """Writes queued bytes to the downstream fd with blocking writes; on EPIPE/EBADF switches
    to the fallback fd once (ipykernel's copy of the real stderr), then drops."""

    def __init__(self, downstream: int, fallback: int, publish) -> None:
        super().__init__(daemon=True, name="forward")
        self.fds = [fd for fd in (downstream, fallback) if fd >= 0]
        self.cond = threading.Condition()
        self.queue: list = []
        self.queued = 0  # bytes ever queued
        self.forwarded = 0  # bytes ever written (or dropped)
        self.dropped = 0
        self.closing = False
        self.publish = publish

    def put(self, data: bytes) -> None:
        with self.cond:
            self.queue.append(data)
            self.queued += len(data)
            self.cond.notify_all()

    def backlog(self) -> int:
        return self.queued - self.forwarded

    def wait_flushed(self, target: int, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        with self.cond:
            while self.forwarded < target:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.cond.wait(left)
        return True

    def run(self) -> None:
        while True:
            with self.cond:
                while not self.queue and not self.closing:
                    self.cond.wait()
                if not self.queue and self.closing:
                    return
                batch, self.queue = self.queue, []
            data = batch[0] if len(batch) == 1 else b"".join(batch)
            self._write(data)
            with self.cond:
                self.forwarded += len(data)
                self.cond.notify_all()
            self.publish()

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            if not self.fds:
                self.dropped += len(view)
                return
            try:
                k = os.write(self.fds[0], view)
                view = view[k:]
            except InterruptedError:
                continue
            except OSError:
                self.fds.pop(0)  # EPIPE (reader gone), EBADF, EIO: try the fallback


def _write_json(path: str, obj: dict) -> None:
    tmp = path + ".tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(obj, f)
        os.replace(tmp, path)
    except OSError:
        pass


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    try:  # a zombie is dead for our purpose
        with open("/proc/%d/stat" % pid, "rb") as f:
            return f.read().rsplit(b")", 1)[-1].split()[0] != b"Z"
    except OSError:
        return True


def main(argv: list) -> int:
    import argparse

    p = argparse.ArgumentParser(prog="cudnn_magic.capture.helper")
    p.add_argument("--dir", required=True, help="instance directory (log segments, meta.json)")
    p.add_argument("--state", required=True, help="shared state file (STATE_SIZE bytes)")
    p.add_argument("--downstream", type=int, required=True, help="fd that was fd 2 before")
    p.add_argument("--fallback", type=int, default=-1, help="fd to use if downstream breaks")
    p.add_argument("--ack", type=int, required=True)
    p.add_argument("--ctl", type=int, required=True)
    p.add_argument("--kernel-pid", type=int, required=True)
    p.add_argument("--max-bytes", type=int, default=4 << 20)
    p.add_argument("--meta", default="{}", help="JSON object merged into meta.json")
    args = p.parse_args(argv)

    for sig in ("SIGINT", "SIGPIPE", "SIGHUP", "SIGTSTP", "SIGTTOU"):
        if hasattr(signal, sig):
            signal.signal(getattr(signal, sig), signal.SIG_IGN)

    import mmap

    sfd = os.open(args.state, os.O_RDWR | os.O_CLOEXEC)
    state = mmap.mmap(sfd, STATE_SIZE)
    os.close(sfd)
    gen = 0
    offset = 0

    fwd: _Forwarder

    def publish() -> None:
        struct.pack_into("<Q", state, 16, fwd.forwarded)

    fwd = _Forwarder(args.downstream, args.fallback, publish)
    fwd.start()
    log = _Log(args.dir, args.max_bytes)
    meta_path = os.path.join(args.dir, "meta.json")
    meta = {
        "version": 1,
        "kernel_pid": args.kernel_pid,
        "helper_pid": os.getpid(),
        "started": time.time(),
        "clean_exit": False,
        "kernel_exited": None,
        "ended": None,
        "last_cell": None,
        "max_bytes": args.max_bytes,
        "segment_bytes": log.seg_bytes,
    }
    try:
        meta.update(json.loads(args.meta))
    except ValueError:
        pass

    def save_meta() -> None:
        rec = None if meta.get("forgotten") else read_cell_record(state)
        if rec is not None:
            meta["last_cell"] = rec
        meta["offset"] = offset
        meta["forwarded"] = fwd.forwarded
        meta["dropped"] = fwd.dropped
        meta["log_error"] = log.error or None
        _write_json(meta_path, meta)

    save_meta()
    meta_seq, meta_time = 0, 0.0
    parser = _Parser()
    data_fd, ctl_fd = 0, args.ctl
    ctl_buf = b""
    kernel_gone = False
    last_alive_check = time.monotonic()
    poller = select.poll()

    def ack(token: str) -> None:
        ok = fwd.wait_flushed(fwd.queued, FLUSH_CAP_S)
        try:
            os.write(args.ack, b"%s %d %d %d\n" % (token.encode(), offset, fwd.forwarded, int(ok)))
        except OSError:
            pass

    def handle(items: list) -> None:
        nonlocal offset
        for item in items:
            if isinstance(item, bytes):
                offset += len(item)
                log.write(item, offset)
                fwd.put(item)
            else:
                ack(item)

    def on_kernel_gone(clean: bool) -> None:
        nonlocal kernel_gone
        if kernel_gone:
            return
        kernel_gone = True
        meta["kernel_exited"] = time.time()
        save_meta()
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
        if fwd.backlog() < QUEUE_CAP:
            poller.register(data_fd, select.POLLIN)
        if ctl_fd >= 0:
            poller.register(ctl_fd, select.POLLIN)
        timeout_ms = 50 if parser.pending else 1000
        events = poller.poll(timeout_ms)
        if not kernel_gone:
            seq = struct.unpack_from("<Q", state, CELL_AT)[0]
            if seq != meta_seq and not seq & 1 and time.monotonic() - meta_time >= META_EVERY_S:
                meta_seq, meta_time = seq, time.monotonic()
                save_meta()
        if not events:
            if parser.pending:
                handle([parser.flush()])
            now = time.monotonic()
            if not kernel_gone and now - last_alive_check > 1.0:
                last_alive_check = now
                if not _pid_alive(args.kernel_pid):
                    on_kernel_gone(bool(meta["clean_exit"]))
            continue
        for fd, ev in events:
            if fd == data_fd:
                gen += 1
                struct.pack_into("<Q", state, 0, gen)
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
                count = sum(len(x) for x in items if isinstance(x, bytes))
                struct.pack_into("<Q", state, 8, offset + count)
                gen += 1
                struct.pack_into("<Q", state, 0, gen)
                handle(items)
                if chunk and len(chunk) < BATCH_BELOW and not any(isinstance(x, str) for x in items):
                    # small writes: let more accumulate instead of waking for every one (each
                    # wake-up costs the writer a context switch); a sync marker skips the wait
                    time.sleep(BATCH_WAIT_S)
            elif fd == ctl_fd:
                try:
                    more = os.read(ctl_fd, 65536)
                except InterruptedError:
                    continue
                if not more:
                    ctl_fd = -1
                    on_kernel_gone(bool(meta["clean_exit"]))
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
        on_kernel_gone(bool(meta["clean_exit"]))
    meta["ended"] = time.time()
    if meta["clean_exit"]:
        _forget_clean_session(args.dir, log, meta)
    save_meta()
    return 0


#: Files of an instance directory a clean exit removes (:func:`_forget_clean_session`).
CLEAN_EXIT_REMOVES = ("state", "faulthandler.log")


def _forget_clean_session(directory: str, log: "_Log", meta: dict) -> None:
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
