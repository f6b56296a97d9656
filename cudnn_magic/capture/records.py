"""The crash record store: read a dead kernel's on-disk record (:func:`read_record`), find
and claim the previous kernel's (:func:`previous_crashes`, :func:`claim_previous`,
:func:`all_crashes`) and clean up records of kernels that no longer exist
(:func:`cleanup`). The capture (:mod:`cudnn_magic.capture.tee`) writes the records; what a
record says is :class:`cudnn_magic.model.crash.CrashRecord`.

Nothing from a record is ever executed or evaluated: it is read as bytes, decoded with
replacement, control characters replaced. A record that is truncated or corrupt (bad JSON,
missing files, binary garbage) is still read, with what is wrong listed in ``problems``.
"""


from __future__ import annotations

import errno
import json
import logging
import os
import re
import shutil
import stat
import stat as _stat
import time
from pathlib import Path
from typing import Any

from ..model.crash import CrashRecord
from ..util.safetext import safe_text
from . import protocol as H
from .protocol import _pid_alive as alive
from .tee import read_slice, records_root

log = logging.getLogger("cudnn_magic")

MAX_LOG_FOR_DIAGNOSIS = 4 << 20
"""Bytes of the record (from the last cell's start, newest win) given to ``diagnose`` (4 MiB,
the log bound)."""

MAX_LOG_TAIL = 16 << 10
"""Bytes of the record's tail kept as its ``log_tail``, shown as "native log lines it printed last" (16 KiB)."""

MAX_FAULTHANDLER = 64 << 10
"""Bytes of ``faulthandler.log`` read (64 KiB; the newest, which hold the main thread)."""

RECORD_MAX_AGE_S = 7 * 86400
"""A key directory whose kernel no longer exists (connection file gone, every process of it
dead) is removed once its newest file is older than this (7 days)."""

ORPHAN_MAX_AGE_S = 30 * 86400
"""A key directory with no live process is removed after this (30 days) even if its connection
file is still there (servers that crashed leave connection files behind)."""

CLEANUP_EVERY_S = 3600.0
"""The cleanup scan runs at most this often (seconds, per records root)."""

HELPER_SETTLE_S = 1.0
"""Longest wait (seconds) for a live capture helper to finish logging a kernel that just died."""


FAULTHANDLER_NAME = "faulthandler.log"
SHOWN_NAME = "shown"
CONNECTION_NAME = "connection"

# --------------------------------------------------------------------------- the record


_PROMPT = re.compile(r"(?:In \[\d+\]: |   \.\.\.: )+")


def _strip_prompts(text: str) -> str:
    """Without terminal IPython's prompts (``In [2]: ``, ``   ...: ``): a shell reading its
    input without prompt_toolkit (``--simple-prompt``, no tty for stdout) writes them to fd 2,
    where the next native line is glued onto them (``In [2]: F0000 ... Check failed``). A line
    that was only a prompt goes; a prompt before a native line is cut off."""
    if "In [" not in text and "...: " not in text:
        return text
    out = []
    for line in text.split("\n"):
        m = _PROMPT.match(line)
        if m:
            line = line[m.end():]
            if not line.strip():
                continue
        out.append(line)
    return "\n".join(out)


def _safe_text(data: bytes) -> str:
    """Decode with replacement and replace control characters other than tab/newline,
    bidirectional controls and lone surrogates (:func:`cudnn_magic.util.safetext.safe_text`: binary
    garbage stays printable, terminal escapes are neutralised, nothing reorders the text)."""
    return safe_text(data.decode("utf-8", "replace"))


class UntrustedRecord(OSError):
    """A record file or folder that is not this user's own, or that group or others may write
    (another user could have planted or changed it): never read as this kernel's record."""


def _own(st: os.stat_result) -> bool:
    """Owned by this user (``st_uid == os.getuid()``) and writable by nobody else (no group or
    other write bit)."""
    return st.st_uid == os.getuid() and not st.st_mode & 0o022


def _own_dir(path: Path | str) -> bool:
    """``path`` is a real folder (never through a link: ``O_NOFOLLOW``, then ``fstat``) of this
    user that group and others cannot write. Never raises."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return False
    try:
        st = os.fstat(fd)
        return stat.S_ISDIR(st.st_mode) and _own(st)
    except OSError:
        return False
    finally:
        os.close(fd)


def _read_bytes(path: Path, limit: int, tail: bool = True) -> bytes:
    """At most ``limit`` bytes of a regular file of this user's that nobody else may write (the
    newest when ``tail``), never following a symbolic link.

    Raises:
        OSError: it cannot be opened, or is not a regular file; :class:`UntrustedRecord` when it
            is another user's or group/other-writable.
    """
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        if not _own(st):
            raise UntrustedRecord(errno.EPERM, f"{path} is not this user's own file, or others may write it")
        if tail and st.st_size > limit:
            os.lseek(fd, st.st_size - limit, os.SEEK_SET)
        chunks = []
        left = limit
        while left > 0:
            b = os.read(fd, min(left, 1 << 20))
            if not b:
                break
            chunks.append(b)
            left -= len(b)
        return b"".join(chunks)
    finally:
        os.close(fd)


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def _create_exclusive(path: Path) -> int:
    """Create ``path`` (0o600, write-only) with ``O_CREAT | O_EXCL | O_NOFOLLOW``: never through
    a link. A leftover of that name (a file of a dead process with the same pid, or a planted
    link) is removed first, never followed. Returns the fd; raises OSError."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | _NOFOLLOW
    try:
        return os.open(path, flags, 0o600)
    except FileExistsError:
        os.unlink(path)
        return os.open(path, flags, 0o600)


def _pid_alive(pid: int | None) -> bool:
    if not pid or pid <= 0:
        return False

    return alive(pid)


def _num(v: Any, kind: type = float) -> Any:
    """A number from untrusted JSON, or ``None``."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    try:
        return kind(v)
    except (ValueError, OverflowError):
        return None


def _instance_pid(name: str) -> int | None:
    try:
        return int(name.rsplit("-", 1)[1])
    except (IndexError, ValueError):
        return None


def read_record(directory: Path | str, key: str | None = None, settle_s: float = 0.0) -> CrashRecord:
    """Read one instance directory of the capture (never raises for a bad record: what is
    wrong goes to :attr:`CrashRecord.problems`).

    Args:
        directory: ``<records_root>/<key>/<time_ns>-<pid>``.
        key: the key (default: the parent directory's name).
        settle_s: if the capture helper still runs for a kernel that is gone, wait up to this
            many seconds for it to finish logging.
    """

    d = Path(directory)
    rec = CrashRecord(key=key or d.parent.name, directory=str(d))
    if not _own_dir(d):
        rec.problems.append("the record directory is not this user's own, or others may write it: not read")
        rec._untrusted = True  # type: ignore[attr-defined]
        return rec
    meta = _read_meta(d, rec, settle_s)
    try:  # the connection file the capture saved beside the key's records (absent in a terminal)
        rec.connection_file = _safe_text(_read_bytes(d.parent / CONNECTION_NAME, 4096, tail=False)).strip() or None
    except OSError:
        pass
    rec.kernel_pid = _num(meta.get("kernel_pid"), int) or _instance_pid(d.name)
    pv = meta.get("python_version")
    if isinstance(pv, str) and re.fullmatch(r"\d{1,3}(\.\d{1,4}){1,2}", pv):
        rec.python_version = tuple(int(x) for x in pv.split("."))
    rec.started = _num(meta.get("started"))
    rec.clean_exit = meta.get("clean_exit") is True
    exited = _num(meta.get("kernel_exited"))
    if rec.kernel_pid == os.getpid():
        rec.alive = True  # this very process (a reload)
    else:
        rec.alive = exited is None and _pid_alive(rec.kernel_pid)
    rec.shown = (d / SHOWN_NAME).exists()
    cell_offset = _read_cell(d, rec, meta)
    names = _read_log(d, rec, meta, cell_offset)
    _read_faulthandler(d, rec)
    times = [x for x in (exited, _num(meta.get("ended"))) if x is not None]
    if times:
        rec.died = min(times)
    elif not rec.alive:
        mt = []
        for n in [*names, FAULTHANDLER_NAME, "meta.json", "state"]:
            try:
                mt.append(os.lstat(d / n).st_mtime)
            except OSError:
                pass
        rec.died = max(mt) if mt else None
    return rec


def _read_meta(d: Path, rec: CrashRecord, settle_s: float) -> dict:
    """``meta.json`` of the record (``{}`` when unreadable, with the reason in ``problems``);
    waits up to ``settle_s`` for a helper that still logs for a kernel that is gone."""
    problems = rec.problems
    meta: dict = {}
    meta_path = d / "meta.json"
    deadline = time.monotonic() + settle_s
    while True:
        try:
            raw = _read_bytes(meta_path, 1 << 20, tail=False)
            try:
                obj = json.loads(raw.decode("utf-8"))
                if isinstance(obj, dict):
                    meta = obj
                else:
                    problems.append("meta.json is not a JSON object")
            except (ValueError, UnicodeDecodeError):
                meta = {}
                problems.append(f"meta.json is corrupt or truncated ({len(raw)} bytes of invalid JSON)")
        except FileNotFoundError:
            problems.append("meta.json is missing")
        except UntrustedRecord as exc:
            problems.append(f"meta.json: {exc.strerror}")
            rec._untrusted = True  # type: ignore[attr-defined]
        except OSError as exc:
            problems.append(f"meta.json cannot be read ({exc.strerror or exc})")
        helper_pid = _num(meta.get("helper_pid"), int)
        if (settle_s and meta and meta.get("kernel_exited") is None and not meta.get("clean_exit")
                and _pid_alive(helper_pid) and not _pid_alive(_num(meta.get("kernel_pid"), int))
                and time.monotonic() < deadline):
            time.sleep(0.05)
            problems.clear()
            continue
        break
    return meta


def _read_cell(d: Path, rec: CrashRecord, meta: dict) -> int | None:
    """The last cell (source, number, start) into ``rec``; returns its log offset, or None."""
    problems = rec.problems
    # the last cell: the shared state file is the truth (written by the kernel itself, there
    # even if the helper was killed); meta.json's copy is at most 2 s old
    cell = None
    cell_offset: int | None
    try:
        buf = _read_bytes(d / "state", H.STATE_SIZE, tail=False)
        if len(buf) < H.STATE_SIZE:
            problems.append(f"state is truncated ({len(buf)} of {H.STATE_SIZE} bytes)")
        seq = int.from_bytes(buf[H.CELL_AT:H.CELL_AT + 8], "little") if len(buf) >= H.CELL_AT + 8 else 0
        if seq & 1:
            problems.append("the kernel died while recording the cell's start (the cell source may be cut)")
        cell = H.read_cell_record(buf)
        if H.read_clean_flag(buf):
            # written by the kernel itself into pages allocated at install: it lands even when
            # the disk is full and meta.json could not be rewritten
            rec.clean_exit = True
    except FileNotFoundError:
        problems.append("state is missing")
        if "meta.json is missing" in problems:
            # nothing of this record was ever written (the capture could not start, e.g. on a
            # full disk): that is not a kernel that died
            rec._nothing_written = True  # type: ignore[attr-defined]
    except UntrustedRecord as exc:
        problems.append(f"state: {exc.strerror}")
        rec._untrusted = True  # type: ignore[attr-defined]
    except OSError as exc:
        problems.append(f"state cannot be read ({exc.strerror or exc})")
    except Exception as exc:  # noqa: BLE001 - garbage in the state file
        problems.append(f"state is corrupt ({type(exc).__name__})")
    mcell = meta.get("last_cell")
    if isinstance(mcell, dict):
        mseq = _num(mcell.get("seq"), int)
        if cell is None or (mseq not in (None, cell.get("seq")) and (mseq or 0) > (cell.get("seq") or 0)):
            cell = mcell
    if isinstance(cell, dict):
        src = cell.get("source")
        rec.cell_source = _safe_text(src.encode("utf-8", "replace")) if isinstance(src, str) else None
        rec.cell_number = _num(cell.get("n"), int)
        rec.cell_started = _num(cell.get("t"))
        cell_offset = _num(cell.get("offset"), int)
    else:
        cell_offset = None

    return cell_offset


def _read_log(d: Path, rec: CrashRecord, meta: dict, cell_offset: int | None) -> list[str]:
    """The log's tail and the dying cell's slice into ``rec``; returns the segment names read."""
    problems = rec.problems
    try:
        names = [n for n in os.listdir(d) if n.startswith("fd2.") and n.endswith(".log")]
    except OSError as exc:
        names = []
        problems.append(f"the record directory cannot be listed ({exc.strerror or exc})")
    ends = []

    for n in list(names):
        try:
            start = int(n[4:-4])
            st = os.lstat(d / n)
            if not _stat.S_ISREG(st.st_mode):
                names.remove(n)
                problems.append(f"log segment {n!r} is not a regular file (a link?): not read")
                continue
            if not _own(st):
                names.remove(n)
                problems.append(f"log segment {n!r} is not this user's own, or others may write it: not read")
                rec._untrusted = True  # type: ignore[attr-defined]
                continue
            ends.append(start + st.st_size)
        except (ValueError, OSError):
            problems.append(f"unexpected log file {n!r}")
    end = max(ends) if ends else 0
    if not names:
        if meta.get("offset"):
            problems.append("the log segments are missing")
    else:
        logged = _num(meta.get("offset"), int)
        if logged is not None and end < logged:
            problems.append(f"the log is shorter than recorded ({end} of {logged} bytes): truncated")
        tail = read_slice(d, max(0, end - MAX_LOG_TAIL), end)
        rec.log_tail = _strip_prompts(_safe_text(bytes(tail)))
        start = cell_offset if cell_offset is not None and 0 <= cell_offset <= end else max(0, end - MAX_LOG_FOR_DIAGNOSIS)
        cut = max(0, end - start - MAX_LOG_FOR_DIAGNOSIS)
        sl = read_slice(d, start + cut, end)
        rec.log = _strip_prompts(_safe_text(bytes(sl)))
        rec.log_missing = cut + sl.truncated
    if meta.get("log_error"):
        problems.append(f"the capture could not write the whole log ({str(meta.get('log_error'))[:200]})")
    if meta.get("meta_error"):
        problems.append(f"{str(meta.get('meta_error'))[:200]} (meta.json may be older than the kernel's end)")

    return names


def _read_faulthandler(d: Path, rec: CrashRecord) -> None:
    """faulthandler's file into ``rec``: in the record, or still in the key directory if the
    kernel died before the capture made its record directory known."""
    problems = rec.problems
    for fh in (d / FAULTHANDLER_NAME, d.parent / f"faulthandler-{rec.kernel_pid}.pending"):
        try:
            rec.faulthandler = _safe_text(_read_bytes(fh, MAX_FAULTHANDLER))
            rec.faulthandler_on = True
            break
        except FileNotFoundError:
            continue
        except UntrustedRecord as exc:
            problems.append(f"{fh.name}: {exc.strerror}")
            rec._untrusted = True  # type: ignore[attr-defined]
            break
        except OSError as exc:
            problems.append(f"{fh.name} cannot be read ({exc.strerror or exc})")
            break


def _instances(keydir: Path) -> list[Path]:
    """Instance directories of a key, newest first (names are ``<time_ns>-<pid>``); links and
    anything but a directory are left out (never followed)."""
    try:
        names = os.listdir(keydir)
    except OSError:
        return []
    out = []
    for n in names:
        head = n.split("-", 1)[0]
        if head.isdigit() and _instance_pid(n) is not None:
            try:
                if not _stat.S_ISDIR(os.lstat(keydir / n).st_mode):
                    continue
            except OSError:
                continue
            out.append((int(head), n))
    out.sort(reverse=True)
    return [keydir / n for _, n in out]


def valid_key(key: object) -> bool:
    """Is ``key`` a record key: one path component as :func:`cudnn_magic.capture.tee.record_key`
    makes them (letters, digits, ``-``, ``_``, ``.``; not starting with a dot; at most 120
    characters)? ``..``, ``/etc``, ``a/b`` and the empty string are not."""
    if not isinstance(key, str) or not key or len(key) > 120 or key.startswith("."):
        return False
    return all(c.isalnum() or c in "-_." for c in key)


def _key_dir(key: str, root: Path) -> Path | None:
    """``root/key`` when ``key`` is valid and that is a real directory of this user (never a
    link), else ``None``."""
    if not valid_key(key):
        return None
    kd = root / key
    try:
        st = os.lstat(kd)
    except OSError:
        return None
    if not _stat.S_ISDIR(st.st_mode) or not _own(st):
        log.debug("cudnn_magic: crash records of %s not read: not this user's own folder, or others may write it", kd)
        return None
    return kd


def key_exists(key: str, root: Path | None = None) -> bool:
    """Is there an entry named ``key`` under the records root (a key directory, read or
    refused: a link or another user's folder is there, just not read)? ``False`` for a key that
    is not one path component (:func:`valid_key`)."""
    if not valid_key(key):
        return False
    return os.path.lexists((root or records_root()) / key)


def _claim(directory: Path) -> bool:
    """Mark a record as shown, atomically: True for the one caller that created the marker."""
    try:
        fd = os.open(directory / SHOWN_NAME, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    except FileExistsError:
        return False
    except OSError:
        log.debug("cudnn_magic: cannot mark %s as shown", directory, exc_info=True)
        return True  # show it anyway (it may show again next time)
    try:
        os.write(fd, json.dumps({"shown_at": time.time(), "by_pid": os.getpid()}).encode())
    except OSError:
        pass
    finally:
        os.close(fd)
    return True


def previous_crashes(key: str, root: Path | None = None, include_shown: bool = False,
                     settle_s: float = 0.0) -> list[CrashRecord]:
    """Records under ``key`` of OTHER processes that died without a clean exit, newest first.

    Raises:
        ValueError: ``key`` is not one path component (see :func:`valid_key`).
    """
    if not valid_key(key):
        raise ValueError(f"not a record key (one path component such as kernel-1234abcd or terminal-pts-3): {key!r}")
    keydir = _key_dir(key, root or records_root())
    if keydir is None:
        return []
    out = []
    me = os.getpid()
    for inst in _instances(keydir):
        if _instance_pid(inst.name) == me:
            continue
        if not include_shown and (inst / SHOWN_NAME).exists():
            continue
        rec = read_record(inst, key, settle_s=settle_s)
        if getattr(rec, "_untrusted", False):
            # another user's record (or one others could have written) is never this kernel's crash
            log.debug("cudnn_magic: crash record %s refused: %s", inst, "; ".join(rec.problems))
            continue
        if rec.crashed and not getattr(rec, "_nothing_written", False) and (include_shown or not rec.shown):
            out.append(rec)
    return out


def claim_previous(key: str, root: Path | None = None) -> tuple[CrashRecord | None, int]:
    """The newest unshown crash record of ``key``, marked as shown, and how many older unshown
    crash records were marked with it (they are mentioned, not shown)."""
    recs = previous_crashes(key, root, settle_s=HELPER_SETTLE_S)
    if not recs:
        return None, 0
    newest = None
    older = 0
    for rec in recs:
        if not _claim(Path(rec.directory)):
            continue
        if newest is None:
            newest = rec
        else:
            older += 1
    if newest is not None and older:
        newest.problems.append(f"{older} earlier kernel death(s) under this key were not shown")
    return newest, older


def all_crashes(root: Path | None = None) -> list[CrashRecord]:
    """Every crash record under the records root (every key), newest first (for the CLI)."""
    root = root or records_root()
    out = []
    try:
        keys = sorted(os.listdir(root))
    except OSError:
        return []
    for key in keys:
        if valid_key(key):
            out += previous_crashes(key, root, include_shown=True)
    out.sort(key=lambda r: r.died or 0, reverse=True)
    return out


# --------------------------------------------------------------------------- cleanup


def cleanup(root: Path | None = None, now: float | None = None, keep_key: str | None = None,
            force: bool = False) -> list[str]:
    """Remove the records of kernels that no longer exist. Policy:

    * A key directory is removed when no process of it is alive (no instance's kernel or
      capture helper runs), its kernel's connection file is gone (the path saved in
      ``<key>/connection``; ``<jupyter runtime dir>/<key>.json`` when none was saved; terminal
      and process keys have none) and its newest file is older than :data:`RECORD_MAX_AGE_S`
      (7 days) — so a crash record, shown or not, stays at least a week for
      :func:`cudnn_magic.engines.crash.last_crash` and ``cudnn-magic crashes``.
    * A key directory with no live process is removed after :data:`ORPHAN_MAX_AGE_S` (30 days)
      even if a stale connection file remains.
    * Within a live key the capture keeps the newest 4 instance directories
      (:data:`cudnn_magic.capture.tee.KEEP_INSTANCES`); the dead kernel's record is never
      among the ones it drops on the next start.
    * ``faulthandler-<pid>.pending`` files (the kernel died before its record directory was
      known) older than 7 days with a dead pid are removed.

    Runs at most every :data:`CLEANUP_EVERY_S` (1 hour) per root unless ``force``; ``keep_key``
    (this kernel's) is never removed. Only directories owned by this user are touched, and
    symbolic links are never followed.

    Returns:
        The removed key directories.
    """
    root = root or records_root()
    now = time.time() if now is None else now
    stamp = root / ".cleanup-stamp"
    if not force:
        try:
            if now - os.lstat(stamp).st_mtime < CLEANUP_EVERY_S:
                return []
        except OSError:
            pass
    try:
        try:
            fd = os.open(stamp, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC | _NOFOLLOW, 0o600)
        except OSError as exc:
            if exc.errno != errno.ELOOP:
                raise
            fd = _create_exclusive(stamp)  # a link planted there: replaced, never followed
        try:
            os.utime(fd, (now, now))
        finally:
            os.close(fd)
    except OSError:
        pass
    removed = []
    try:
        keys = os.listdir(root)
    except OSError:
        return []

    for key in keys:
        if key.startswith(".") or key == keep_key:
            continue
        kd = root / key
        try:
            st = os.lstat(kd)
        except OSError:
            continue
        if not _stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
            continue
        try:
            if _key_gone(kd, key, now):
                shutil.rmtree(kd, ignore_errors=True)
                removed.append(str(kd))
            else:
                _prune_pending(kd, now)
        except Exception:  # cleanup never harms the session
            log.debug("cudnn_magic: cleanup of %s failed", kd, exc_info=True)
    return removed


def _key_gone(kd: Path, key: str, now: float) -> bool:
    newest = 0.0
    for inst in _instances(kd):
        meta: dict = {}
        try:
            meta = json.loads(_read_bytes(inst / "meta.json", 1 << 20, tail=False))
            if not isinstance(meta, dict):
                meta = {}
        except (OSError, ValueError):
            pass
        kpid = _num(meta.get("kernel_pid"), int) or _instance_pid(inst.name)
        if meta.get("kernel_exited") is None and not meta.get("ended") and _pid_alive(kpid):
            return False
        if _pid_alive(_num(meta.get("helper_pid"), int)):
            return False
        try:
            for n in os.listdir(inst):
                newest = max(newest, os.lstat(inst / n).st_mtime)
        except OSError:
            pass
    try:
        for n in os.listdir(kd):
            newest = max(newest, os.lstat(kd / n).st_mtime)
    except OSError:
        pass
    age = now - newest
    if age >= ORPHAN_MAX_AGE_S:
        return True
    if age < RECORD_MAX_AGE_S:
        return False
    if key.startswith(("terminal-", "process-")):
        return True
    conn = None
    try:
        conn = _read_bytes(kd / CONNECTION_NAME, 4096, tail=False).decode("utf-8", "replace").strip()
    except OSError:
        try:
            # start-up cost: Jupyter's path and kernelspec modules, only on this path
            from jupyter_core.paths import jupyter_runtime_dir

            conn = os.path.join(jupyter_runtime_dir(), key + ".json")
        except Exception:  # noqa: BLE001
            conn = None
    return not (conn and os.path.exists(conn))


def _prune_pending(kd: Path, now: float) -> None:
    try:
        names = os.listdir(kd)
    except OSError:
        return
    for n in names:
        if n.startswith("faulthandler-") and n.endswith(".pending"):
            p = kd / n
            try:
                pid = int(n[len("faulthandler-"):-len(".pending")])
                if not _pid_alive(pid) and now - os.lstat(p).st_mtime > RECORD_MAX_AGE_S:
                    os.unlink(p)
            except (ValueError, OSError):
                pass


__all__ = ["all_crashes", "claim_previous", "cleanup", "key_exists", "previous_crashes", "read_record",
           "valid_key"]
