"""Kernel side of the fd-2 capture: install, sync, cheap change test, slices, uninstall.

Design (measured: docs/facts.md "IPython and Jupyter behaviour", native stderr): fd 2 is pointed
at a pipe read by :mod:`cudnn_magic.capture.helper`, a separate process that logs every byte to
a bounded on-disk file and forwards it to the previous fd 2 without ever blocking its reader.
Ordering is made exact only when it matters (a failing cell, or a cell that wrote something):
:meth:`Tee.sync` sends a marker through fd 2 and waits for the helper's ack, which comes after
everything written before the marker has been handed to the previous fd 2;
:func:`cudnn_magic.capture.drain.drain_ipykernel` then waits for ipykernel's own pipe to empty and
flushes ``sys.stderr``.

Records live in ``<root>/<key>/<instance>/`` where ``root`` is
``jupyter_runtime_dir()/cudnn-magic`` (or ``<tempdir>/cudnn-magic-<uid>`` without jupyter_core),
``key`` is the basename of the kernel's connection file without ``.json`` (stable across
restarts by the kernel manager and by JupyterLab's auto-restart) or, outside a kernel,
``terminal-<tty>`` (``terminal-pts-3``; the terminal's device, stable while the window lives)
or ``process-<parent pid>`` without a tty, and ``instance`` is ``<start time ns>-<pid>``. Each
instance directory (0o700) holds ``meta.json``, ``fd2.<offset>.log`` segments and ``state``
(files 0o600). See :mod:`cudnn_magic.capture.helper` for the formats.
"""

from __future__ import annotations

import array
import fcntl
import json
import logging
import math
import mmap
import os
import select
import stat
import stat as _stat
import struct
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path
from typing import Callable, NamedTuple

from ..util.kernelinfo import connection_file
from . import helper as _helper
from . import protocol as _protocol

log = logging.getLogger("cudnn_magic")

DEFAULT_MAX_BYTES = 4 << 20
"""Log bound (4 MiB): the record keeps at least the last 2 MiB and at most the last 4 MiB."""

KEEP_INSTANCES = 4
"""Instance directories kept per key (older ones are removed at install)."""

SYNC_TIMEOUT_S = _protocol.FLUSH_CAP_S + 1.0
"""Longest wait (seconds) for the helper's ack to a sync marker while nothing moves: the wait
goes on as long as the helper keeps forwarding (a large backlog is shown in full)."""

MEMORY_ENV = "CUDNN_MAGIC_CAPTURE_MEMORY_MB"
"""Environment variable: the helper's memory bound in MiB (default 16, at least 1)."""

SPOOL_ENV = "CUDNN_MAGIC_CAPTURE_SPOOL_MB"
"""Environment variable: the helper's spool-file bound in MiB (default 512; 0: no spool)."""

SETTLE_TIMEOUT_S = 0.005
"""Longest wait (seconds) in :meth:`Tee.settled` while bytes are still in the pipe (a writer may
still be running)."""

BUSY_TIMEOUT_S = 0.5
"""Longest wait (seconds) in :meth:`Tee.settled` for the helper to finish the chunk it took once
the pipe is empty."""

_CELL_SEQ = struct.Struct("<Q")
_QUEUED = _FLAG = struct.Struct("<Q")
_FIONREAD = termios.FIONREAD
_FIONREAD_BUF = array.array("i", [0])
_MAIN_THREAD = threading.main_thread().ident
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_F_SETPIPE_SZ = 1031
_PIPE_SIZE = 1 << 20  # 1 MiB: Linux's default pipe-max-size for unprivileged users


def fionread(fd: int) -> int:
    """Bytes waiting in the pipe ``fd`` (either end on Linux); 0 on error. About 1 µs."""
    buf = _FIONREAD_BUF if threading.get_ident() == _MAIN_THREAD else array.array("i", [0])
    try:
        fcntl.ioctl(fd, _FIONREAD, buf, True)
    except OSError:
        return 0
    return buf[0]


class LogSlice(bytes):
    """Bytes of the log between two offsets. ``truncated`` counts the bytes at the start of
    the requested range that the bounded log no longer holds (rotated away); ``start``/``end``
    are the offsets actually covered."""

    truncated: int = 0
    start: int = 0
    end: int = 0


class Mark(NamedTuple):
    """Where the capture stood at a point in time: ``offset`` is the log offset (bytes),
    ``pending`` bytes known to be in the pipe then (they belong after ``offset``; 0 when not
    measured), ``forwarded`` the bytes the helper had done with (written to the previous fd 2,
    dropped or skipped); ``spilled``/``dropped``/``skipped`` the helper's counters (bytes that
    waited in the spool file, that were beyond its bounds, that were skipped after an
    interrupt)."""

    offset: int
    pending: int = 0
    forwarded: int = 0
    spilled: int = 0
    dropped: int = 0
    skipped: int = 0


def records_root() -> Path:
    """The directory holding every kernel's records (created 0o700)."""
    try:
        # start-up cost: Jupyter's path and kernelspec modules, only on this path
        from jupyter_core.paths import jupyter_runtime_dir

        root = Path(jupyter_runtime_dir()) / "cudnn-magic"
    except Exception:  # noqa: BLE001 - jupyter_core missing or broken
        import tempfile  # start-up cost: tempfile (random, shutil) only without a runtime dir

        root = Path(tempfile.gettempdir()) / f"cudnn-magic-{os.getuid()}"
    _private_dir(root)
    return root


def _private_dir(path: Path) -> None:
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = os.lstat(path)

    if not _stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
        raise OSError(f"{path} is not a directory owned by this user")
    if st.st_mode & 0o077:
        os.chmod(path, 0o700)


def record_key(shell: object = None) -> str:
    """The stable key of this process's records (see the module docstring)."""
    if shell is not None and any(c.__name__ == "ZMQInteractiveShell" for c in type(shell).__mro__):
        try:
            name = os.path.basename(connection_file() or "")
            name = name.removesuffix(".json")
            if name:
                return _safe(name)
        except Exception:
            log.debug("cudnn_magic: no connection file", exc_info=True)
    for fd in (0, 1):
        try:
            if os.isatty(fd):
                tty = os.ttyname(fd)
                return "terminal-" + _safe(tty.replace("/dev/", "").replace("/", "-"))
        except OSError:
            pass
    return f"process-{os.getppid()}"


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name).lstrip(".")[:120] or "unnamed"


class Tee:
    """fd 2 -> pipe -> helper process. Use :meth:`install`; all methods are safe to call after
    the helper died (they then do nothing and return empty results)."""

    def __init__(self) -> None:
        self.active = False
        self.directory: Path | None = None
        self.key = ""
        self.proc: subprocess.Popen | None = None
        self.saved_fd = -1  # dup of the fd 2 we replaced
        self.pipe_w = -1  # our write end, kept to test FIONREAD (same pipe as fd 2)
        self.ack_r = -1
        self.ctl_w = -1
        self.state: mmap.mmap | None = None
        self.death: str | None = None  # why the helper stopped, until reported
        self._lock = threading.Lock()
        self._token = 0
        self._cell_seq = 0
        self.pid = os.getpid()
        self._ack_buf = b""
        self._uninstalling = False
        self.last_forwarded = 0
        self.memory_bytes = _protocol.MEMORY_BYTES
        self.spool_bytes = _protocol.SPOOL_BYTES
        self.flag_literals: tuple[bytes, ...] = ()

    # -- lifecycle -------------------------------------------------------------------------------

    @classmethod
    def install(cls, key: str, root: Path | None = None, max_bytes: int = DEFAULT_MAX_BYTES,
                fallback_fd: int | None = None, meta: dict | None = None,
                on_death: Callable[[str], None] | None = None, memory_bytes: int | None = None,
                spool_bytes: int | None = None, flag_literals: tuple[bytes, ...] = ()) -> Tee:
        """Start the helper and point fd 2 at it.

        Args:
            key: record key (:func:`record_key`).
            root: records root (default :func:`records_root`).
            max_bytes: log bound in bytes (default 4 MiB).
            fallback_fd: where the helper writes if the previous fd 2 breaks (ipykernel's
                ``sys.stderr._original_stdstream_copy``: the real stderr / server log).
            meta: extra fields for ``meta.json``.
            on_death: called (from a watcher thread) with a reason if the helper exits while
                installed; fd 2 is restored before the call.
            memory_bytes: bytes waiting for the previous fd 2 kept in memory (default
                ``$CUDNN_MAGIC_CAPTURE_MEMORY_MB`` MiB, else 16 MiB; at least 1 MiB).
            spool_bytes: bytes waiting in the spool file beyond that (default
                ``$CUDNN_MAGIC_CAPTURE_SPOOL_MB`` MiB, else 512 MiB); more is dropped and said.
            flag_literals: lower-case literals the helper looks for in every chunk (ASCII case
                folded): :meth:`flagged` then tells whether any byte after an offset held one.

        Raises:
            OSError: the helper could not be started (fd 2 is then left as it was, and no
                record directory is left behind).
        """
        self = cls()
        self.key = key
        root = root or records_root()
        keydir = root / key
        _private_dir(keydir)
        _prune(keydir, KEEP_INSTANCES - 1)
        inst = keydir / f"{time.time_ns()}-{os.getpid()}"
        _private_dir(inst)
        try:
            self.flag_literals = tuple(x.lower() for x in flag_literals if x)
            return self._start(inst, key, max_bytes, fallback_fd, meta, on_death,
                               _bound(memory_bytes, MEMORY_ENV, _protocol.MEMORY_BYTES),
                               _bound(spool_bytes, SPOOL_ENV, _protocol.SPOOL_BYTES))
        except BaseException:
            # a record that was never started must not read as a kernel that died
            _remove_instance(inst)
            raise

    def _start(self, inst: Path, key: str, max_bytes: int, fallback_fd: int | None, meta: dict | None,
               on_death: Callable[[str], None] | None, memory_bytes: int, spool_bytes: int) -> Tee:
        self.directory = inst
        self.memory_bytes = max(_protocol.READ_SIZE, memory_bytes)
        self.spool_bytes = max(0, spool_bytes)
        state_path = inst / "state"
        fd = os.open(state_path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | _NOFOLLOW, 0o600)
        try:
            data = memoryview(b"\0" * _protocol.STATE_SIZE)
            while data:  # the pages are allocated now: later writes need no disk space
                data = data[os.write(fd, data):]
            self.state = mmap.mmap(fd, _protocol.STATE_SIZE)
        finally:
            os.close(fd)

        r, w = os.pipe()
        ack_r, ack_w = os.pipe()
        ctl_r, ctl_w = os.pipe()
        try:
            fcntl.fcntl(w, _F_SETPIPE_SZ, _PIPE_SIZE)
        except OSError:
            pass
        downstream = os.dup(2)
        fb = fallback_fd if fallback_fd is not None and fallback_fd >= 0 else -1
        pass_fds = [downstream, ack_w, ctl_r] + ([fb] if fb >= 0 else [])
        cmd = [sys.executable, "-I", "-S", _helper.__file__,
               "--dir", str(inst), "--state", str(state_path), "--downstream", str(downstream),
               "--fallback", str(fb), "--ack", str(ack_w), "--ctl", str(ctl_r),
               "--kernel-pid", str(os.getpid()), "--max-bytes", str(int(max_bytes)),
               "--memory-bytes", str(int(memory_bytes)), "--spool-bytes", str(int(spool_bytes)),
               "--meta", json.dumps(dict(meta or {}, key=key), ensure_ascii=True),
               "--flag", ",".join(x.hex() for x in self.flag_literals)]
        env = dict(os.environ)
        try:
            self.proc = subprocess.Popen(
                cmd, stdin=r, stdout=subprocess.DEVNULL, stderr=downstream, pass_fds=pass_fds,
                close_fds=True, start_new_session=True, env=env,
            )
        except BaseException:
            for x in (r, w, ack_r, ack_w, ctl_r, ctl_w, downstream):
                os.close(x)
            raise
        for x in (r, ack_w, ctl_r):
            os.close(x)
        os.set_blocking(ctl_w, False)
        self.ack_r, self.ctl_w, self.saved_fd = ack_r, ctl_w, downstream
        try:
            sys.stderr.flush()
        except Exception:  # noqa: BLE001
            pass
        os.dup2(w, 2)  # the switch: atomic for every writer
        self.pipe_w = w
        self.active = True
        self._on_death = on_death
        threading.Thread(target=self._watch, name="cudnn-magic-capture-watch", daemon=True).start()
        return self

    def _watch(self) -> None:
        proc = self.proc
        if proc is None:
            return
        code = proc.wait()
        with self._lock:
            if self._uninstalling or not self.active:
                return
            self._restore_fd2()
            self.active = False
            self.death = (f"the fd-2 capture helper (pid {proc.pid}) exited with status {code}; "
                          "native stderr goes straight to the previous fd 2 again")
        cb = self._on_death
        if cb is not None:
            try:
                cb(self.death)
            except Exception:
                log.debug("cudnn_magic: on_death failed", exc_info=True)

    def _restore_fd2(self) -> None:
        if self.saved_fd >= 0:
            try:
                os.dup2(self.saved_fd, 2)
            except OSError:
                log.debug("cudnn_magic: restoring fd 2 failed", exc_info=True)

    def pop_death(self) -> str | None:
        """The helper-death message, once (``None`` afterwards or if it is alive)."""
        msg, self.death = self.death, None
        return msg

    def uninstall(self, timeout: float = 3.0) -> None:
        """Restore fd 2, tell the helper this was a clean stop, close the pipe and wait up to
        ``timeout`` seconds for it to flush and exit. If it is still running (a child process
        that inherited fd 2 still holds the pipe) it is left to exit on that child's EOF:
        killing it would break the child's stderr."""
        if os.getpid() != self.pid:
            return  # a forked child: the capture (its helper, record and channels) is the parent's
        with self._lock:
            self._uninstalling = True
            was_active = self.active
            self.active = False
            if was_active:
                try:
                    self.sync(timeout=min(timeout, SYNC_TIMEOUT_S), _force=True, limit=timeout)
                except Exception:
                    log.debug("cudnn_magic: final sync failed", exc_info=True)
                self._restore_fd2()
            self._set_clean(2)
            self._send_ctl(b"B", b"")
            for name in ("pipe_w", "ctl_w", "ack_r", "saved_fd"):
                fd = getattr(self, name)
                if fd >= 0:
                    try:
                        os.close(fd)
                    except OSError:
                        pass
                    setattr(self, name, -1)
        proc = self.proc
        if proc is not None:
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                log.debug("cudnn_magic: helper %d still running after uninstall (fd 2 held by a child?)", proc.pid)
        if self.state is not None:
            try:
                self.state.close()
            except Exception:  # noqa: BLE001
                pass
            self.state = None

    def clean_exit(self) -> None:
        """Record a clean exit of this process (atexit); the helper marks ``meta.json``. A
        forked child (which inherits the atexit handler) does not count."""
        if os.getpid() == self.pid:
            self._set_clean(1)
            self._send_ctl(b"X", b"")

    def shutdown_requested(self) -> None:
        """The front end asked this kernel to shut down or restart: mark the exit clean now (only
        the shared flag; the capture goes on to the end), since the process may yet end by a
        signal (:mod:`cudnn_magic.shell.shutdown`)."""
        if os.getpid() == self.pid:
            self._set_clean(1)

    def _set_clean(self, kind: int) -> None:
        """The clean-exit flag in the shared state: a write into pages allocated at install,
        so it lands even when the disk is full and ``meta.json`` cannot be rewritten."""
        st = self.state
        if st is None:
            return
        try:
            if not _protocol.read_clean_flag(st):
                struct.pack_into("<Q", st, _protocol.CLEAN_AT, kind)
        except (ValueError, TypeError):  # closed mapping
            pass

    # -- cheap per-cell state --------------------------------------------------------------------

    def mark(self) -> Mark:
        """Where the capture stands now, without a round trip (about 1 µs: one read of the
        shared counters). Bytes still in the pipe are not counted here; they make the next
        :meth:`changed_since` true (and land in the slice that starts at this mark)."""
        st = self.state
        if not self.active or st is None:
            return Mark(0, 0)
        gen, offset, fwd = _protocol._STATE.unpack_from(st, 0)
        if gen & 1:  # a chunk is being counted right now: wait a moment for a stable value
            for _ in range(200):
                time.sleep(0.0001)
                gen, offset, fwd = _protocol._STATE.unpack_from(st, 0)
                if not gen & 1:
                    break
        return Mark(offset, 0, fwd, *_protocol.COUNTS.unpack_from(st, _protocol.COUNTS_AT))

    def counts(self) -> tuple[int, int, int]:
        """The helper's ``(spilled, dropped, skipped)`` byte counters so far (zeros when not
        running)."""
        st = self.state
        if st is None:
            return (0, 0, 0)
        try:
            return _protocol.COUNTS.unpack_from(st, _protocol.COUNTS_AT)
        except (ValueError, TypeError):
            return (0, 0, 0)

    def changed_since(self, mark: Mark) -> bool:
        """True when fd 2 may have received bytes after ``mark`` (never a false ``False``).

        Checked in this order: bytes still in the pipe (FIONREAD); a chunk being counted
        (``gen`` odd); the log offset. The helper raises ``gen`` before reading and stores
        ``offset`` before lowering it, so a chunk that has left the pipe is always visible
        here. About 1.5 µs.
        """
        st = self.state
        if st is None or not self.active:
            return False
        if mark.pending or fionread(self.pipe_w):
            return True
        gen, offset, _ = _protocol._STATE.unpack_from(st, 0)
        return bool(gen & 1) or offset != mark.offset

    def settled(self, timeout: float = SETTLE_TIMEOUT_S) -> int | None:
        """The log offset once the helper has taken every byte written to fd 2 so far out of
        the pipe and counted it (FIONREAD 0, ``gen`` even), waiting at most ``timeout``
        seconds while bytes wait in the pipe and :data:`BUSY_TIMEOUT_S` for the chunk the helper
        holds; ``None`` when it did not settle (a writer still running, the helper stuck).

        Cheaper than :meth:`sync` (no marker, no round trip, no wait for forwarding), but it
        does not order the forwarded bytes before what is shown next (:meth:`delivered` does).
        The helper counts a chunk only once it is in the log, so the log holds every byte up to
        the offset returned.
        """
        st = self.state
        if st is None or not self.active or self.pipe_w < 0:
            return None
        start = time.monotonic()
        deadline = start + timeout
        nap = 0.00005
        while True:
            try:
                waiting = fionread(self.pipe_w)
            except OSError:
                return None
            now = time.monotonic()
            if not waiting:
                gen, offset, _ = _protocol._STATE.unpack_from(st, 0)
                if not gen & 1 and not fionread(self.pipe_w):
                    return int(offset)
                # the pipe is empty and the helper is still at its last chunk (a MiB to log, queue
                # and look through): no writer is behind it, so its end is worth waiting for
                if now >= start + BUSY_TIMEOUT_S:
                    return None
            elif now >= deadline:
                return None
            time.sleep(nap)  # from 50 µs, growing: a long wait costs few wake-ups
            nap = min(nap * 1.5, 0.0005)

    def delivered(self, timeout: float = SYNC_TIMEOUT_S) -> bool:
        """After :meth:`settled`: wait until the helper has done with (written to the previous
        fd 2, or dropped beyond its bounds) every byte it had accepted when this was called. No
        marker and no round trip: two reads of the shared counters per look, waking every 50 µs
        at first and at most every millisecond. The wait lasts as long as the helper makes
        progress, and ends after ``timeout`` seconds without any. ``KeyboardInterrupt``
        propagates. Returns True when everything was delivered."""
        st = self.state
        if st is None or not self.active:
            return False
        target = _QUEUED.unpack_from(st, _protocol.QUEUED_AT)[0]
        seen = -1
        deadline = nap = 0.0
        while True:
            fwd = _protocol._STATE.unpack_from(st, 0)[2]
            if fwd >= target:
                return True
            now = time.monotonic()
            if fwd != seen:
                seen, deadline, nap = fwd, now + timeout, 0.00005
            elif now >= deadline or not self.active:
                return False
            time.sleep(nap)
            nap = min(nap * 2, 0.001)

    def flagged(self) -> int:
        """The log offset just past the last chunk that held one of :attr:`flag_literals` (0:
        none yet). Read after :meth:`settled`: every byte up to its offset has been looked at."""
        st = self.state
        if st is None:
            return 0
        try:
            return int(_FLAG.unpack_from(st, _protocol.FLAGGED_AT)[0])
        except (ValueError, TypeError):  # closed mapping
            return 0

    def forwarded(self) -> int:
        """Bytes the helper has written to the previous fd 2 so far."""
        st = self.state
        if st is None or os.getpid() != self.pid:  # a forked child must not overwrite the parent's cell
            return 0
        return int(_protocol._STATE.unpack_from(st, 0)[2])

    def note_cell(self, number: int | None, source: str, offset: int) -> None:
        """Record that a cell started, for ``meta.json``'s ``last_cell``: written into the
        shared state mapping (no syscall, no wake-up of the helper; about 1 µs). The source is
        cut to the first 8,084 bytes of UTF-8."""
        st = self.state
        if st is None:
            return
        self._cell_seq += 2
        data = source.encode("utf-8", "replace")[:_protocol.FLAGGED_AT - _protocol.SOURCE_AT]
        _CELL_SEQ.pack_into(st, _protocol.CELL_AT, self._cell_seq - 1)  # odd: being written
        st[_protocol.SOURCE_AT:_protocol.SOURCE_AT + len(data)] = data
        _protocol.CELL_HEAD.pack_into(st, _protocol.CELL_AT, self._cell_seq - 1, -1 if number is None else number,
                                    offset, time.time(), len(data))
        _CELL_SEQ.pack_into(st, _protocol.CELL_AT, self._cell_seq)  # even, last: complete

    def _send_ctl(self, kind: bytes, payload: bytes) -> None:
        if self.ctl_w < 0:
            return
        try:
            os.write(self.ctl_w, kind + struct.pack(">I", len(payload)) + payload)
        except OSError:  # full (helper stuck) or gone: meta is best effort
            pass

    # -- sync and slices ---------------------------------------------------------------------------

    def sync(self, timeout: float = SYNC_TIMEOUT_S, _force: bool = False, limit: float | None = None) -> int | None:
        """Send a marker through fd 2 and wait until the helper has logged and forwarded
        everything written before it.

        The wait lasts as long as the helper keeps forwarding (a backlog of many MB is shown in
        full before this returns); it ends after ``timeout`` seconds without progress, or after
        ``limit`` seconds in all when given. ``KeyboardInterrupt`` (the user interrupting the
        wait) propagates; :meth:`skip` then cuts what still waits.

        Returns:
            The log offset (bytes) at the marker, or ``None`` if the helper did not answer (or
            is not running).
        """
        return self._marker(b"S", timeout, _force, limit)

    def skip(self, timeout: float = 2.0) -> int | None:
        """Drop what still waits to be forwarded, except its newest 64 KiB, which the helper
        forwards after a one-line notice (``[cudnn-magic: skipped N MiB of native stderr ...]``).
        Used when a cell is interrupted: its backlog must not flow on into the next cell.

        Returns:
            The log offset at the marker, or ``None`` (helper not answering). The bytes skipped
            so far are in :meth:`counts`.
        """
        return self._marker(b"D", timeout, False, None)

    def _marker(self, kind: bytes, timeout: float, force: bool, limit: float | None) -> int | None:
        if not (self.active or force) or self.ack_r < 0 or self.pipe_w < 0 or os.getpid() != self.pid:
            return None  # (a forked child would steal the parent's acknowledgements)
        self._token += 1
        token = b"%d" % self._token
        try:
            os.write(self.pipe_w, _protocol.MAGIC + kind + token + b"\0")
        except OSError:
            return None
        if kind != b"S":
            token = kind + token
        start = time.monotonic()
        deadline = start + timeout
        seen = self.forwarded()
        while True:
            while b"\n" in self._ack_buf:
                line, self._ack_buf = self._ack_buf.split(b"\n", 1)
                parts = line.split()
                if parts and parts[0] == token and len(parts) >= 4:
                    self.last_forwarded = int(parts[2])
                    if parts[3] != b"1":
                        log.debug("cudnn_magic: previous fd 2 did not take all bytes in time")
                    return int(parts[1])
            now = time.monotonic()
            fwd = self.forwarded()
            if fwd != seen:  # the helper is forwarding: keep waiting
                seen = fwd
                deadline = now + timeout
            left = deadline - now
            if limit is not None:
                left = min(left, start + limit - now)
            if left <= 0:
                log.debug("cudnn_magic: capture sync timed out")
                return None
            try:
                ready, _, _ = select.select([self.ack_r], [], [], min(left, 0.25))
            except InterruptedError:
                continue
            if not ready:
                continue
            chunk = os.read(self.ack_r, 4096)
            if not chunk:
                return None  # helper gone
            self._ack_buf += chunk

    def slice(self, start: int, end: int | None = None) -> LogSlice:
        """The logged bytes in ``[start, end)`` (``end=None``: to the end of the log).

        Sync first (:meth:`sync`) for an exact end. Bytes that rotated out of the bounded log
        are missing from the front; ``result.truncated`` says how many.
        """
        return read_slice(self.directory, start, end) if self.directory else _mk(b"", start, start, 0)


def read_slice(directory: Path | str, start: int, end: int | None = None) -> LogSlice:
    """Read ``[start, end)`` from the log segments in ``directory`` (see the helper)."""
    data, first, last, truncated = read_range(directory, start, end)
    return _mk(data, first, last, truncated)


def read_range(directory: Path | str, start: int, end: int | None = None) -> tuple[bytes, int, int, int]:
    """:func:`read_slice` as a plain tuple ``(data, start, end, truncated)``, without copying
    the bytes into a :class:`LogSlice` (a megabyte copied costs about 0.4 ms per cell)."""
    segs: list[tuple[int, str]] = []
    try:
        names = os.listdir(directory)
    except OSError:
        names = []
    for name in names:
        if name.startswith("fd2.") and name.endswith(".log"):
            try:
                segs.append((int(name[4:-4]), os.path.join(directory, name)))
            except ValueError:
                pass
    segs.sort()
    parts: list[bytes] = []
    first = None
    last = start
    for i, (seg_start, path) in enumerate(segs):
        seg_end_limit = segs[i + 1][0] if i + 1 < len(segs) else None
        if seg_end_limit is not None and seg_end_limit <= start:
            continue
        if end is not None and seg_start >= end:
            break
        lo = max(start, seg_start)
        try:
            # never through a link, never a device or a FIFO (a record is on disk, not trusted)
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
            with os.fdopen(fd, "rb") as f:
                st = os.fstat(f.fileno())
                if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o022:
                    continue  # another user's, or one others may write, is not part of this record
                f.seek(lo - seg_start)
                want = -1 if end is None else max(0, (end if seg_end_limit is None else min(end, seg_end_limit)) - lo)
                data = f.read(want) if want != -1 else f.read()
        except OSError:
            continue
        if not data:
            continue
        if first is None:
            first = lo
        parts.append(data)
        last = lo + len(data)
    if first is None:
        if segs and end is not None and end <= segs[0][0]:
            return b"", end, end, end - start
        return b"", start, start, 0
    return b"".join(parts), first, last, max(0, first - start)


def _mk(data: bytes, start: int, end: int, truncated: int) -> LogSlice:
    s = LogSlice(data)
    s.start, s.end, s.truncated = start, end, truncated
    return s


def _bound(value: int | None, env: str, default: int) -> int:
    """A byte bound: ``value``, else ``$env`` in MiB (a bad value is ignored), else ``default``."""
    if value is not None:
        return int(value)
    raw = os.environ.get(env, "").strip()
    if raw:
        try:
            mb = float(raw)
            if mb >= 0 and not math.isnan(mb) and mb < 1 << 30:
                return int(mb * (1 << 20))
        except ValueError:
            pass
        log.debug("cudnn_magic: ignoring %s=%r (MiB expected)", env, raw)
    return default


def _remove_instance(inst: Path) -> None:
    try:
        for f in os.listdir(inst):
            try:
                os.unlink(inst / f)
            except OSError:
                pass
        os.rmdir(inst)
    except OSError:
        pass


def _prune(keydir: Path, keep: int) -> None:
    """Remove all but the newest ``keep`` instance directories of a key whose helper is gone."""
    try:
        insts = sorted((p for p in keydir.iterdir() if p.is_dir()), key=lambda p: p.name)
    except OSError:
        return
    for old in insts[:-keep] if keep > 0 else insts:
        meta = old / "meta.json"
        try:
            fd = os.open(meta, os.O_RDONLY | os.O_CLOEXEC | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0))  # never a FIFO's wait
            with os.fdopen(fd, "rb") as f:
                raw = f.read(1 << 20) if stat.S_ISREG(os.fstat(f.fileno()).st_mode) else b"{}"
            pid = json.loads(raw).get("helper_pid")
            if pid and _protocol._pid_alive(int(pid)):
                continue
        except (OSError, ValueError, AttributeError, TypeError):
            pass
        try:
            files = list(old.iterdir())
        except OSError:  # removed meanwhile (another kernel of the key pruned it)
            continue
        for p in files:
            try:
                p.unlink()
            except OSError:
                pass
        try:
            old.rmdir()
        except OSError:
            pass
