"""File helpers: atomic writes and locks for the features that edit user files (fix registry,
install-startup), and the readers every probe uses for a file found on disk (regular files only,
with a size bound: a FIFO named like a library must never block a check)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from . import pyenv

if TYPE_CHECKING:
    from typing_extensions import Self  # typing.Self from Python 3.11


def atomic_write(path: str | os.PathLike[str], data: bytes, mode: int | None = None) -> None:
    """Replace ``path`` with ``data`` atomically: a temporary file in the same directory,
    fsync, then ``os.replace``. ``mode`` sets the permission bits (default: the temporary
    file's, 0o600). On any error the temporary file is removed and the error re-raised."""
    path = os.fspath(path)
    import tempfile  # start-up cost: only the features that edit files write (random, shutil)

    fd, tmp = tempfile.mkstemp(prefix=".cudnn-magic-", dir=os.path.dirname(path) or ".")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def file_kind(mode: int) -> str:
    """What a ``st_mode`` is, in words ("a FIFO", "a character device", "a folder"...)."""
    for test, name in ((stat.S_ISREG, "a regular file"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder")):
        if test(mode):
            return name
    return "not a file"


class NotRegularFile(OSError):
    """A file found on disk is not a regular file (a FIFO, a device, a socket, a folder), so it was
    not read (raised by :func:`open_regular`; errno ``EINVAL``)."""


_skip_lock = threading.Lock()
_skip_sinks: list[dict[str, str]] = []


def note_skipped(path: str | os.PathLike[str], reason: str) -> None:
    """Record that ``path`` was skipped for ``reason`` (a debug log line, and an entry in every
    :func:`collect_skipped` block running now, in any thread). Never raises."""
    path = os.fspath(path)
    import logging  # start-up cost: only when a file is skipped

    logging.getLogger(__name__).debug("cudnn-magic: skipped %s: %s", path, reason)
    with _skip_lock:
        for sink in _skip_sinks:
            sink.setdefault(path, reason)


@contextlib.contextmanager
def collect_skipped() -> Iterator[dict[str, str]]:
    """Collect ``{path: reason}`` of every file :func:`open_regular` (or :func:`regular_or_reason`)
    refused while the block runs, so the report can say what it did not read."""
    sink: dict[str, str] = {}
    with _skip_lock:
        _skip_sinks.append(sink)
    try:
        yield sink
    finally:
        with _skip_lock:
            _skip_sinks.remove(sink)


def open_regular(path: str | os.PathLike[str]):  # type: ignore[no-untyped-def]
    """``open(path, "rb")`` for a regular file only: opened with ``O_NONBLOCK`` (so a FIFO or a
    device named like a library cannot block the caller) and refused after ``fstat`` unless it is a
    regular file (the refusal is noted, :func:`note_skipped`). Readers of files found on disk (ELF
    sections, ``RECORD``, headers, metadata, hashes) use it, and read a bounded number of bytes.

    Raises:
        OSError: it cannot be opened; :class:`NotRegularFile` when it is not a regular file (a
            FIFO, a device, a folder).
    """
    fd = os.open(os.fspath(path), os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = file_kind(mode)
            note_skipped(path, f"not a regular file ({kind}); nothing was read from it")
            raise NotRegularFile(22, f"{os.fspath(path)} is not a regular file ({kind})")
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: str | os.PathLike[str], limit: int) -> bytes:
    """At most ``limit`` bytes from the start of the regular file ``path`` (:func:`open_regular`).

    Raises:
        OSError: as :func:`open_regular`, or a read error.
    """
    with open_regular(path) as fh:
        return fh.read(limit)  # type: ignore[no-any-return]


def read_regular_whole(path: str | os.PathLike[str], limit: int) -> bytes:
    """The whole regular file ``path``, which must hold at most ``limit`` bytes.

    Raises:
        OSError: as :func:`open_regular`, or a read error.
        ValueError: the file is larger than ``limit`` bytes (noted as skipped).
    """
    data = read_regular(path, limit + 1)
    if len(data) > limit:
        note_skipped(path, f"larger than {limit} bytes; not read")
        raise ValueError(f"{os.fspath(path)} is larger than {limit} bytes")
    return data


def load_json_regular(path: str | os.PathLike[str], limit: int = 1 << 20) -> Any:
    """``json.loads`` of the regular file ``path`` of at most ``limit`` bytes (default 1 MiB).

    Raises:
        OSError: as :func:`open_regular`. ValueError: larger than ``limit``, or not JSON (or
            not UTF-8).
    """
    import json  # start-up cost: json only for the readers that need it

    return json.loads(read_regular_whole(path, limit).decode("utf-8"))


def regular_or_reason(path: str | os.PathLike[str]) -> str | None:
    """None when ``path`` (links followed) is a regular file, else why not ("a FIFO", "no such
    file"): checked before anything hands the path to ``dlopen`` (a ``dlopen`` of a FIFO blocks in
    its ``open``). A refusal for a file that exists is noted (:func:`note_skipped`). Never raises."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        return exc.strerror or str(exc)
    if stat.S_ISREG(mode):
        return None
    kind = file_kind(mode)
    note_skipped(path, f"not a regular file ({kind}); not loaded")
    return kind


def regular_distributions(name: str | None = None) -> list[Any]:
    """``importlib.metadata.distributions()`` (of ``name`` only, when given) on ``sys.path``, each
    reading its metadata files through :func:`open_regular` with a 16 MiB bound: a FIFO
    ``METADATA`` reads as missing (the distribution then has no ``Name``) instead of blocking.
    Never raises for one broken folder."""
    from importlib import metadata  # start-up cost: 70-120 ms, only the callers that list distributions

    cls = _regular_dist_class(metadata)
    out = []

    where: dict[str, Any] = {"path": pyenv.search_path()} if pyenv.target() is not None else {}
    for d in (metadata.distributions(name=name, **where) if name is not None else metadata.distributions(**where)):
        path = getattr(d, "_path", None)  # the .dist-info folder of a PathDistribution (a zip's is not a PathLike)
        out.append(cls(path) if isinstance(path, os.PathLike) else d)
    return out


_regular_dist: Any = None


def _regular_dist_class(metadata: Any) -> Any:
    global _regular_dist
    if _regular_dist is None:
        class RegularPathDistribution(metadata.PathDistribution):
            def read_text(self, filename: str) -> str | None:
                p = self._path.joinpath(filename)
                if os.path.isdir(p):  # read_text("") asks for an egg-info that is a file, not a folder
                    return None
                try:
                    return read_regular_whole(p, 16 << 20).decode("utf-8")
                except (OSError, ValueError, KeyError):
                    return None

        _regular_dist = RegularPathDistribution
    return _regular_dist


def regular_dist_version(name: str) -> str | None:
    """The version of the first distribution ``name`` on ``sys.path`` (as
    ``importlib.metadata.version``), read by :func:`regular_distributions`; None when it is not
    installed or its metadata cannot be read. Never raises."""
    try:
        for d in regular_distributions(name):
            return str(d.version) if d.version else None
    except Exception:  # noqa: BLE001 - unreadable metadata is "unknown"
        return None
    return None


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


class LockBusy(OSError):
    """Another process held the lock for longer than the wait allowed (a conflict: the caller
    says so and changes nothing)."""


def open_lock_file(path: str | os.PathLike[str]) -> int:
    """Open (creating it 0o600 with ``O_EXCL`` when missing) the lock file ``path``, never
    through a link; returns the fd. Raises OSError (``ELOOP`` for a link, ``EINVAL`` for
    something that is not a regular file)."""
    path = os.fspath(path)
    flags = os.O_RDWR | os.O_CLOEXEC | _NOFOLLOW
    try:
        fd = os.open(path, flags | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        fd = os.open(path, flags)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(22, f"not a regular file: {path}")
    return fd


class file_lock:  # used as a context manager, like open()
    """Hold an exclusive ``fcntl.flock`` on the lock file ``path`` for a read-modify-write of
    ``what`` (a file name, for the message). ``flock`` locks belong to the open file, so two
    threads of one process exclude each other as two processes do.

    Waits up to ``timeout`` seconds (polling every 20 ms), then raises :class:`LockBusy` naming
    ``what``: a conflict is reported, never resolved by guessing.
    """

    def __init__(self, path: str | os.PathLike[str], what: str, timeout: float = 10.0) -> None:
        self.path = os.fspath(path)
        self.what = what
        self.timeout = timeout
        self.fd = -1

    def __enter__(self) -> Self:
        fd = open_lock_file(self.path)
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    os.close(fd)
                    raise LockBusy(11, f"{self.what} is being changed by another process right now (it has held "
                                       f"{self.path} for more than {self.timeout:g} s); nothing was changed, try again") from None
                time.sleep(0.02)
        self.fd = fd
        return self

    def __exit__(self, *exc: object) -> None:
        if self.fd >= 0:
            os.close(self.fd)  # closing the last fd of the open file releases the lock
            self.fd = -1
