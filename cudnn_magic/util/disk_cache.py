"""A small on-disk cache for what a check reads that rarely changes: the consumer scan of each
site directory (:mod:`cudnn_magic.probes.frameworks.generic`) and the dynamic loader's own facts
(:func:`cudnn_magic.probes.loader.rtld_facts`), so a second ``cudnn-magic check`` in a new process
reads only what changed (``benchmarks/bench_check_floor.py``).

Where: ``$XDG_CACHE_HOME/cudnn_magic/<kind>/`` (default ``~/.cache``, the XDG Base Directory
specification; a relative ``XDG_CACHE_HOME`` is ignored, as the specification says), one JSON file
per key. Every entry carries the facts it was read from (each file's device, inode, size and
mtime in nanoseconds, as the caller decides), and the caller compares them with the files as they
are now: the cache is a speed-up, never a source of truth.

Trust: a cache file is read only when it is a regular file (opened ``O_NOFOLLOW | O_NONBLOCK``:
never through a link, never a FIFO's wait), owned by this user, writable by no one else, at most
:data:`MAX_BYTES`, valid JSON holding this format and the key it is stored under; anything else
(corrupt, foreign, another version's) is ignored and rewritten. Folders are created 0700 and
used only when they are real folders owned by this user. A file is written under a new unique
name (``O_CREAT | O_EXCL | O_NOFOLLOW``, 0600) and renamed over the old one, so a planted link is
replaced, never followed, and a reader never sees half a file. Nothing here raises.
"""

from __future__ import annotations

import os
import stat
from typing import Any

__all__ = ["FORMAT", "MAX_BYTES", "cache_root", "file_key", "load", "read_trusted", "store", "trusted_dir", "write_trusted"]

#: Bumped whenever what a kind stores changes: files of another format are ignored.
FORMAT = 1
#: The largest cache file read (64 MiB: a scan of 10,000 distributions is about 2 MiB).
MAX_BYTES = 64 << 20
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


def cache_root() -> str | None:
    """``$XDG_CACHE_HOME/cudnn_magic`` (``~/.cache/cudnn_magic`` when the variable is unset,
    empty or relative), or None when no home is known or the home folder does not exist: a service
    account's ``HOME=/nonexistent`` (Debian's ``nobody``) means "no home", and a cache never creates
    one (as root it could)."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):
        home = os.path.expanduser("~")
        if not os.path.isabs(home) or not os.path.isdir(home):
            return None
        base = os.path.join(home, ".cache")
    return os.path.join(base, "cudnn_magic")


def file_key(st: os.stat_result) -> list[int]:
    """What identifies a file's content for the cache: ``[device, inode, size, mtime_ns]``."""
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns]


def _path(kind: str, key: str) -> str | None:
    root = cache_root()
    if root is None:
        return None
    # The name only spreads keys over files: the key itself is stored in the file and compared on
    # every read, so two keys sharing a name only cost a miss. zlib's CRC-32 and Adler-32 (64 bits
    # together) rather than hashlib's SHA-256: hashlib loads OpenSSL's libcrypto (11 M
    # instructions, 3 % of a second check) for this one name.
    import zlib  # start-up cost: only a check reads the cache (the code cache does not need it)

    raw = key.encode("utf-8", "surrogatepass")
    return os.path.join(root, kind, f"{zlib.crc32(raw):08x}{zlib.adler32(raw):08x}.json")


def trusted_dir(path: str) -> bool:
    """``path`` is a real folder (not a link) of this user's that no one else may write."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o022


def read_trusted(path: str, limit: int = MAX_BYTES) -> bytes | None:
    """The bytes of ``path`` when it is a regular file of this user's that no one else may write,
    of at most ``limit`` bytes, in a trusted folder inside a trusted folder (module docstring);
    None otherwise. Opened ``O_NOFOLLOW | O_NONBLOCK``: never through a link, never a FIFO's wait."""
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _CLOEXEC | _NONBLOCK)
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as fh:
            st = os.fstat(fh.fileno())
            if (not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o022 or st.st_size > limit
                    or not trusted_dir(os.path.dirname(path)) or not trusted_dir(os.path.dirname(os.path.dirname(path)))):
                return None
            data = fh.read(limit + 1)
    except OSError:
        return None
    return data if len(data) <= limit else None


def write_trusted(path: str, data: bytes) -> bool:
    """Write ``data`` to ``path`` as the only file of that name: its folder and the folder above
    made 0700 when missing and used only when trusted (:func:`trusted_dir`), the bytes written
    under a new unique name (``O_CREAT | O_EXCL | O_NOFOLLOW``, 0600) and renamed over ``path`` (a
    planted link there is replaced, not followed). False when it could not be. Never raises."""
    folder = os.path.dirname(path)
    tmp = None
    try:
        for d in (os.path.dirname(folder), folder):
            try:
                os.mkdir(d, 0o700)
            except FileExistsError:
                pass
            except FileNotFoundError:
                os.makedirs(d, 0o700, exist_ok=True)
            if not trusted_dir(d):
                return False
        tmp = os.path.join(folder, f".{os.path.basename(path)}.{os.getpid()}.{os.urandom(6).hex()}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
        tmp = None
        return True
    except OSError:
        return False
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def load(kind: str, key: str) -> Any:
    """The value stored under ``(kind, key)``, or None (missing, or not to be trusted: module
    docstring). Never raises."""
    path = _path(kind, key)
    raw = read_trusted(path) if path is not None else None
    if raw is None:
        return None
    import json  # start-up cost: as above

    try:
        doc = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or doc.get("kind") != kind or doc.get("key") != key:
        return None
    return doc.get("value")


def store(kind: str, key: str, value: Any) -> bool:
    """Keep ``value`` (JSON-serialisable) under ``(kind, key)``; False when it could not be
    written (read-only home, a folder that is not ours: the check goes on without). Never raises."""
    path = _path(kind, key)
    if path is None:
        return False
    import json  # start-up cost: as above

    try:
        # ASCII with escapes: a path that is not UTF-8 (surrogate escapes) comes back the same
        data = json.dumps({"format": FORMAT, "kind": kind, "key": key, "value": value},
                          separators=(",", ":")).encode("ascii")
    except (ValueError, TypeError, RecursionError):
        return False
    return write_trusted(path, data)
