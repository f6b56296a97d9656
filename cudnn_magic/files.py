"""File helpers shared by the features that edit user files (fix registry, install-startup)."""

from __future__ import annotations

import os
import tempfile
import stat
import fcntl
import time


def atomic_write(path: str | os.PathLike[str], data: bytes, mode: int | None = None) -> None:
    """Replace ``path`` with ``data`` atomically: a temporary file in the same directory,
    fsync, then ``os.replace``. ``mode`` sets the permission bits (default: the temporary
    file's, 0o600). On any error the temporary file is removed and the error re-raised."""
    path = os.fspath(path)
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


class NotRegularFile(OSError):
    """Raised by :func:`open_regular` for something that is not a regular file (a FIFO, a device,
    a folder); its text is ``"PATH is not a regular file"``."""


def open_regular(path: str | os.PathLike[str]):  # type: ignore[no-untyped-def]
    """``open(path, "rb")`` for a regular file only: opened with ``O_NONBLOCK`` (so a FIFO or a
    device named like a library cannot block the caller) and refused after ``fstat`` unless it is a
    regular file. Readers of files found on disk (ELF sections, ``RECORD``, headers, hashes) use it.

    Raises:
        OSError: it cannot be opened; :class:`NotRegularFile` (an OSError) when it is not a
            regular file (a FIFO, a device, a folder).
    """
    fd = os.open(os.fspath(path), os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegularFile(f"{os.fspath(path)} is not a regular file")
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


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


class file_lock:  # noqa: N801 - used as a context manager, like open()
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

    def __enter__(self) -> "file_lock":

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
                                       f"{self.path} for more than {self.timeout:g} s); nothing was changed, try again")
                time.sleep(0.02)
        self.fd = fd
        return self

    def __exit__(self, *exc: object) -> None:
        if self.fd >= 0:
            os.close(self.fd)  # closing the last fd of the open file releases the lock
            self.fd = -1
