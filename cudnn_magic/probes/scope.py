"""One check sees one state of the file system: answers that follow from the file system alone
(where a symbolic link leads) are worked out once per check, not once per question; when the
check ends, what it read from files is written to the disk cache (:mod:`.filefacts`).

:func:`check_scope` opens a scope for the calling thread (``run_check`` holds one for its whole
run); inside it :func:`realpath` remembers each absolute path's answer. Outside a scope it is
``os.path.realpath``. A new check opens a new scope, so a link changed between two checks is
followed anew.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator

from .filefacts import flush, racy

__all__ = ["check_scope", "realpath"]

_local = threading.local()


@contextlib.contextmanager
def check_scope() -> Iterator[None]:
    """Remember file-system answers until the scope closes (nested scopes share the outer one)."""
    if getattr(_local, "memo", None) is not None:
        yield
        return
    _local.memo = {}
    try:
        yield
    finally:
        _local.memo = None

        flush()  # what this check read from files that may be read again by the next process


def realpath(path: str) -> str:
    """``os.path.realpath(path)``, once per absolute path within a :func:`check_scope`."""
    memo = getattr(_local, "memo", None)
    if memo is None or not path.startswith("/"):
        return os.path.realpath(path)
    hit: str | None = memo.get(path)
    if hit is None:
        hit = memo[path] = os.path.realpath(path)
    return hit


def stat(path: str) -> os.stat_result | None:
    """``os.stat(path)`` (None when it fails), once per absolute path within a :func:`check_scope`."""
    memo = getattr(_local, "memo", None)
    if memo is None or not path.startswith("/"):
        try:
            return os.stat(path)
        except OSError:
            return None
    key = ("stat", path)
    if key in memo:
        return memo[key]  # type: ignore[no-any-return]
    try:
        st: os.stat_result | None = os.stat(path)
    except OSError:
        st = None
    memo[key] = st
    return st


def exists(path: str) -> bool:
    """``os.path.exists(path)``, once per absolute path within a :func:`check_scope`."""
    return stat(path) is not None


_listings: dict[str, tuple[tuple[int, int, int], tuple[str, ...]]] = {}
_listings_lock = threading.Lock()


def listdir(path: str) -> list[str]:
    """``os.listdir(path)`` (the same errors), kept for the life of the process while the folder's
    (device, inode, mtime) stay the same: a folder's mtime changes whenever an entry is added,
    removed or renamed (POSIX), and one changed in the last :data:`~cudnn_magic.probes.filefacts.RACY_S` seconds is listed
    again."""
    st = os.stat(path)
    key = (st.st_dev, st.st_ino, st.st_mtime_ns)
    hit = _listings.get(path)
    if hit is not None and hit[0] == key:
        return list(hit[1])
    names = os.listdir(path)
    if not racy(st):
        with _listings_lock:
            _listings[path] = (key, tuple(names))
            while len(_listings) > 4096:
                _listings.pop(next(iter(_listings)))
    return names


