"""File helpers shared by the features that edit user files (fix registry, install-startup)."""

from __future__ import annotations

import os
import tempfile


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
