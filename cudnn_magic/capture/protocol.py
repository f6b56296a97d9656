"""The capture's formats, shared by the helper process (:mod:`cudnn_magic.capture.helper`) and
the kernel side (:mod:`cudnn_magic.capture.tee`, :mod:`cudnn_magic.capture.records`): bounds,
the markers in the data stream and their parser, the shared state file, the cell record.
Standard library only (the helper runs it with ``python -I -S``).

Markers in the data stream (stripped): ``MAGIC + b"S" + token + b"\\0"`` (sync) and ``MAGIC +
b"D" + token + b"\\0"`` (skip: drop what is still waiting to be forwarded except its newest
:data:`SKIP_KEEP` bytes, which follow a one-line notice; sent when a cell is interrupted). The
ack, ``b"<token> <offset> <forwarded> <ok> <spilled> <dropped> <skipped>\\n"`` on the ack fd, is
sent once everything before the marker has been written downstream (``ok`` 1), or when the
writer made no progress for :data:`FLUSH_CAP_S` seconds (``ok`` 0). ``offset`` is the log offset
(data bytes, markers excluded) at the marker. Reading goes on while an ack is pending.

A second pipe (``--ctl``) carries length-prefixed records from the kernel: ``X`` (clean exit
of the kernel), ``B`` (uninstall); its EOF means the kernel is gone. The helper is the only
writer of ``meta.json`` (a uniquely named temporary file created ``O_EXCL | O_NOFOLLOW``, then
renamed; removed when it cannot be written).

Shared state (``--state``, a :data:`STATE_SIZE`-byte file mapped by both sides, little-endian):

* written by the helper: ``[0] gen`` (uint64, odd while a chunk is being read and counted),
  ``[8] offset`` (data bytes read), ``[16] forwarded`` (stream bytes done with: written
  downstream, dropped or skipped), ``[24] spilled`` (data bytes that waited in the spool file),
  ``[32] dropped`` (data bytes never forwarded: beyond the bounds, or the spool could not be
  written), ``[40] skipped`` (data bytes skipped on request). The kernel reads these to tell,
  in about a microsecond, whether a cell wrote anything to fd 2 and what happened to it.
  ``[56] queued`` (stream bytes accepted for forwarding: data and notices). A chunk is read,
  logged, queued and counted while ``gen`` is odd: once ``gen`` is even and the pipe is empty,
  the log holds every byte up to ``offset`` and every byte written so far is delivered when
  ``forwarded`` reaches ``queued``.
* written by the kernel: ``[48] clean`` (uint64: 1 clean exit, 2 uninstall; written into the
  mapping, so it lands even when the disk is full and ``meta.json`` cannot be rewritten), and
  at every ``pre_run_cell`` (no syscall, no wake-up of the helper): ``[64] seq`` (uint64, odd
  while being written), ``[72] n`` (int64 execution count, -1 if unknown), ``[80] offset``
  (uint64, log offset at the cell's start), ``[88] t`` (float64 epoch s), ``[96] length``
  (uint32), ``[100:]`` the cell's source, UTF-8, cut to fit. The helper copies the cell record
  into ``meta.json``'s ``last_cell`` at most every :data:`META_EVERY_S` seconds and when the
  kernel goes; the file itself also holds it (it is a shared file mapping), so a reader can
  take it from ``state`` with :func:`read_cell_record` even if the helper was killed.
* written by the helper: ``[8184] flagged`` (:data:`FLAGGED_AT`).

Log layout (in the instance directory): ``fd2.<start>.log`` segments, ``<start>`` being the
log offset (12 decimal digits) of the segment's first byte. A new segment starts when the
current one reaches ``max_bytes / 2``; only the newest two are kept, so the log holds at
least the last ``max_bytes / 2`` and at most ``max_bytes`` bytes. Every file is created
``O_EXCL | O_NOFOLLOW``: never through a planted link.
"""

from __future__ import annotations

import json
import os
import struct

TYPE_CHECKING = False  # typing itself is not imported: start-up cost of the helper process
if TYPE_CHECKING:
    import mmap
    from typing import Any

MAGIC = b"\0\x1bcudnn-magic-sync:"
"""Prefix of a marker in the fd-2 stream (never valid text, so never produced by a log)."""


FLUSH_CAP_S = 5.0
"""An ack is sent with ``ok`` 0 when the writer made no progress for this long (seconds)."""


MEMORY_BYTES = 16 << 20
"""Default bound (16 MiB) of the bytes waiting for the previous fd 2 in memory."""


SPOOL_BYTES = 512 << 20
"""Default bound (512 MiB) of the bytes waiting in the spool file on disk."""


SKIP_KEEP = 64 << 10
"""Bytes (64 KiB, the newest) still forwarded when what waits is skipped (interrupted cell)."""


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


COUNTS = struct.Struct("<QQQ")
"""spilled, dropped, skipped at byte 24 of the state file."""


COUNTS_AT = 24


CLEAN_AT = 48
"""Byte of the kernel's clean-exit flag (uint64: 1 exit, 2 uninstall) in the state file."""


QUEUED_AT = 56
"""Byte of ``queued`` (uint64: stream bytes accepted for forwarding) in the state file."""


STATE_SIZE = 8192
"""Bytes in the shared state file (the cell source gets ``STATE_SIZE - 108`` of them)."""


FLAGGED_AT = STATE_SIZE - 8
"""Byte of ``flagged`` (uint64): the log offset just past the last chunk that held one of the
literals the helper was given (``--flag``), 0 for none; written before ``gen`` goes even. At the
end of the file, so state files of either layout read the same cell record."""


CELL_HEAD = struct.Struct("<QqQdI")
"""seq, n, offset, t, length: the cell record at byte 64 of the state file."""


CELL_AT = 64


SOURCE_AT = CELL_AT + CELL_HEAD.size  # 100


META_EVERY_S = 2.0
"""Longest delay (seconds) before a new cell record reaches ``meta.json`` while the kernel lives."""


_NEW_FILE = os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)


def mib(n: int) -> bytes:
    """``n`` bytes as ``b"12.3 MiB"`` (for the notices)."""
    return b"%.1f MiB" % (n / 1048576)


def _size(n: int) -> bytes:
    return mib(n) if n >= 1048576 else b"%d KiB" % max(1, (n + 1023) >> 10) if n else b"0 bytes"


def read_clean_flag(buf: bytes | mmap.mmap) -> int:
    """The kernel's clean-exit flag from a state buffer: 0 (none), 1 (exit), 2 (uninstall)."""
    if len(buf) < CLEAN_AT + 8:
        return 0
    v = struct.unpack_from("<Q", buf, CLEAN_AT)[0]
    return v if v in (1, 2) else 0


def read_cell_record(buf: bytes | mmap.mmap) -> dict[str, Any] | None:
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
        """Returns a list of ``bytes`` (data) and ``str`` (a sync token ``"17"``, or a skip
        token ``"D17"``), in stream order."""
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
            if rec[:1] in (b"S", b"D") and rec[1:].isdigit():
                if j > i:
                    out.append(buf[i:j])
                out.append(rec[1:].decode("ascii") if rec[:1] == b"S" else rec.decode("ascii"))
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


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    try:  # a zombie is dead for our purpose
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[-1].split()[0] != b"Z"
    except OSError:
        return True


def _create(path: str, extra: int = os.O_WRONLY) -> int:
    """Create ``path`` exclusively (0o600), never through a link; a leftover file or link of
    that name (names are unique per helper, so not another process's) is removed first, never
    followed. ``extra``: the access mode and other flags. Raises OSError."""
    try:
        return os.open(path, _NEW_FILE | extra, 0o600)
    except FileExistsError:
        os.unlink(path)
        return os.open(path, _NEW_FILE | extra, 0o600)


def _write_json(path: str, obj: dict) -> bool:
    """Replace ``path`` with ``obj`` as JSON: a uniquely named temporary file created
    ``O_EXCL | O_NOFOLLOW``, renamed over it; the temporary file is removed on failure (disk
    full). Returns whether it was written."""
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        fd = _create(tmp)
    except OSError:
        return False
    try:
        data = json.dumps(obj).encode("utf-8", "backslashreplace")
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.close(fd)
        fd = -1
        os.replace(tmp, path)
        return True
    except (OSError, ValueError):
        if fd >= 0:
            try:
                os.close(fd)
            except OSError:
                pass
        try:
            os.unlink(tmp)
        except OSError:
            pass
        return False


#: Files of an instance directory a clean exit removes (:func:`_forget_clean_session`).
CLEAN_EXIT_REMOVES = ("state", "faulthandler.log")


class _Log:
    """The helper's bounded segmented log, in the layout above (``fd2.<start>.log`` segments, the
    newest two kept); never raises (a disk error stops logging, not forwarding)."""

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
            path = os.path.join(self.dir, f"fd2.{start:012d}.log")
            self.fd = _create(path, os.O_WRONLY | os.O_APPEND)
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
            self.error = f"log: {exc}"

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
            self.error = f"log: {exc}"
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
