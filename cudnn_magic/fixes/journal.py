"""The undo journal (``<state dir>/undo.json``): read and written under a file lock, trusted in
nothing (see :mod:`cudnn_magic.fixes.applier` for what an undo re-derives)."""

from __future__ import annotations

import errno
import json
import os
import re
import stat as _stat
import time
from typing import Any

from ..util.files import atomic_write, file_lock

_atomic_write = atomic_write  # one name for every atomic write of the fix registry


_BACKUP_NAME = re.compile(r"^kernel\.json\.cudnn-magic-backup-\d{8}-\d{6}(-\d{1,4})?$")


_CREATED_NAME = re.compile(r"^(kernel\.json|logo-[A-Za-z0-9_.-]{1,64})$")


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


_READ_LIMIT = 16 << 20


class JournalRefused(ValueError):
    """A journal record asks for something the fix never does; nothing was touched."""


def _state_dir() -> str:
    """Where the undo journal lives: ``$CUDNN_MAGIC_STATE_DIR``, else ``$XDG_STATE_HOME/cudnn_magic``
    (``~/.local/state/cudnn_magic``): the same for a kernel and for a shell whose JUPYTER_*
    variables differ from the server's, so ``cudnn-magic fix --undo`` finds what a kernel wrote
    (it used to live in Jupyter's data dir, which a shell and a kernel may see differently:
    :func:`_legacy_journal_paths`)."""
    d = os.environ.get("CUDNN_MAGIC_STATE_DIR")
    if d:
        return d
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(base, "cudnn_magic")


def _legacy_journal_paths() -> list[str]:
    """Journals of earlier releases (``<jupyter data dir>/cudnn_magic/undo.json``), read by undo
    when the journal has nothing for a fix; none when ``CUDNN_MAGIC_STATE_DIR`` is set."""
    if os.environ.get("CUDNN_MAGIC_STATE_DIR"):
        return []
    try:
        # start-up cost: Jupyter's path and kernelspec modules, only on this path
        from jupyter_core.paths import jupyter_data_dir

        old = os.path.join(jupyter_data_dir(), "cudnn_magic", "undo.json")
    except Exception:  # noqa: BLE001
        return []
    return [old] if os.path.normpath(old) != os.path.normpath(_journal_path()) else []


def _journal_path() -> str:
    return os.path.join(_state_dir(), "undo.json")


def _lock_path(path: str) -> str:
    """The lock file beside ``path``: ``<dir>/.<name>.cudnn-magic-lock``."""
    return os.path.join(os.path.dirname(path), "." + os.path.basename(path) + ".cudnn-magic-lock")


def _read_regular(path: str, dir_fd: int | None = None) -> tuple[bytes, int]:
    """Bytes and permission bits of the regular file ``path``, never through a link (and
    never a FIFO or device). Raises FileNotFoundError, or OSError naming the problem."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0), dir_fd=dir_fd)
    try:
        st = os.fstat(fd)
        if not _stat.S_ISREG(st.st_mode):
            raise OSError(f"{path} is not a regular file")
        if st.st_size > _READ_LIMIT:
            raise OSError(f"{path} is larger than {_READ_LIMIT >> 20} MiB")
        chunks = []
        while True:
            b = os.read(fd, 1 << 20)
            if not b:
                break
            chunks.append(b)
        return b"".join(chunks), st.st_mode & 0o7777
    finally:
        os.close(fd)


def _read_or_none(path: str) -> bytes | None:
    try:
        return _read_regular(path)[0]
    except FileNotFoundError:
        return None
    except OSError as exc:
        if getattr(exc, "errno", None) == errno.ELOOP:  # a symbolic link
            raise RuntimeError(f"{path} is a symbolic link; not following it") from None
        raise


def _journal_load(path: str | None = None) -> dict[str, list[dict[str, Any]]]:
    """The journal (``{}`` when there is none). Raises RuntimeError when it exists but is not a
    regular file or not a JSON object: it is then left alone, and so is every fix."""
    path = path or _journal_path()
    try:
        raw = _read_regular(path)[0]
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise RuntimeError(f"the undo journal {path} cannot be read ({exc}); move it aside") from None
    try:
        data = json.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        raise RuntimeError(f"the undo journal {path} is not valid JSON; move it aside (nothing was changed)") from None
    if not isinstance(data, dict):
        # a bad file, not a bad argument: the same RuntimeError as any other unreadable journal
        raise RuntimeError(f"the undo journal {path} is not a JSON object; move it aside (nothing was changed)")  # noqa: TRY004
    return data


def _journal_save(data: dict[str, list[dict[str, Any]]], path: str | None = None) -> None:
    path = path or _journal_path()
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    _atomic_write(path, (json.dumps(data, indent=1) + "\n").encode("utf-8"), 0o600)


def _journal_locked(path: str | None = None) -> file_lock:
    path = path or _journal_path()
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    return file_lock(_lock_path(path), f"the undo journal {path}")


def _journal_push(fix_id: str, records: list[dict[str, Any]]) -> None:
    """Append an entry (read-modify-write under the journal's lock). Raises on failure."""
    with _journal_locked():
        data = _journal_load()
        stack = data.get(fix_id)
        if not isinstance(stack, list):
            stack = data[fix_id] = []
        stack.append({"time": time.time(), "pid": os.getpid(), "records": records})
        _journal_save(data)


def _journal_pop(fix_id: str) -> dict[str, Any] | None:
    """Take the newest entry of ``fix_id`` out of the journal (so two undos never both run it);
    when it has none, out of an earlier release's journal (:func:`_legacy_journal_paths`)."""
    for path in [_journal_path(), *_legacy_journal_paths()]:
        if path != _journal_path() and not os.path.exists(path):
            continue
        with _journal_locked(path):
            data = _journal_load(path)
            stack = data.get(fix_id)
            if not isinstance(stack, list) or not stack:
                continue
            entry = stack.pop()
            if not stack:
                del data[fix_id]
            _journal_save(data, path)
        return entry if isinstance(entry, dict) else {"records": [entry]}
    return None
