"""What a check read from a file that did not change, kept on disk: a new process takes it from
there instead of reading the file again (``benchmarks/bench_startup.py``, "warm").

The facts are pure functions of a file's bytes: its dynamic section (:func:`cudnn_magic.probes.loader.elf_facts`),
the version constant a cuDNN sub-library carries (:func:`cudnn_magic.probes.libnames.embedded_version`),
its sha256 (:func:`cudnn_magic.probes.owners.digest_if_small`), the native-library rows of a wheel's
``RECORD`` (:func:`cudnn_magic.probes.owners.read_record_natives`: TensorFlow's has 22,000 rows).
Each is stored under the file's ``[device, inode, size, mtime_ns]`` and served only while the file
still has them; a file changed less than :data:`RACY_S` seconds ago is
not stored (git's "racy" entries).

One JSON document per folder (:mod:`cudnn_magic.util.disk_cache`, kind ``files``: trusted files
only, written exclusively), read once per process and written back when a check that added to it
ends (:func:`cudnn_magic.probes.scope.check_scope`). Never raises.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

from ..util.disk_cache import load, store

__all__ = ["MISSING", "flush", "get", "put", "racy"]

#: What :func:`get` answers when nothing valid is stored.
MISSING = object()
_docs: dict[str, dict[str, list]] = {}
_dirty: set[str] = set()
_lock = threading.Lock()


#: A file or folder changed less than this long ago (seconds) is read again every time: a second
#: change within the file system's timestamp granularity could keep its mtime.
RACY_S = 2.0


def racy(st: os.stat_result) -> bool:
    """The file or folder changed less than :data:`RACY_S` seconds ago (git's "racy" entries): a
    second change within its timestamp's granularity could leave it looking the same."""
    return st.st_mtime_ns >= time.time_ns() - int(RACY_S * 1e9)


def _doc(folder: str) -> dict[str, list]:
    doc = _docs.get(folder)
    if doc is None:
        raw = load("files", folder)
        doc = raw if isinstance(raw, dict) else {}
        with _lock:
            doc = _docs.setdefault(folder, doc)
            while len(_docs) > 256:
                _docs.pop(next(iter(_docs)))
    return doc


def _key(st: os.stat_result) -> list[int]:
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns]


def get(path: str, st: os.stat_result, kind: str) -> Any:
    """The ``kind`` fact of ``path`` (which has the stat ``st``), or :data:`MISSING`."""
    folder, name = os.path.split(path)
    row = _doc(folder).get(name)
    if isinstance(row, list) and len(row) == 2 and row[0] == _key(st) and isinstance(row[1], dict):
        return row[1].get(kind, MISSING)
    return MISSING


def put(path: str, st: os.stat_result, kind: str, value: Any) -> None:
    """Keep ``value`` (JSON data) as the ``kind`` fact of ``path`` read at the stat ``st``."""

    if racy(st):
        return
    folder, name = os.path.split(path)
    doc = _doc(folder)
    key = _key(st)
    with _lock:
        row = doc.get(name)
        if not (isinstance(row, list) and len(row) == 2 and row[0] == key and isinstance(row[1], dict)):
            row = doc[name] = [key, {}]
        if row[1].get(kind, MISSING) != value:
            row[1][kind] = value
            _dirty.add(folder)


def flush() -> None:
    """Write back the documents this process added to (called when a check ends)."""
    if not _dirty:
        return

    with _lock:  # a copy to write: another thread's check may add to a document meanwhile
        todo = [(f, {k: [v[0], dict(v[1])] for k, v in _docs[f].items()}) for f in _dirty if f in _docs]
        _dirty.clear()
    for folder, doc in todo:
        try:
            store("files", folder, doc)
        except Exception:  # noqa: BLE001 - the cache is only a speed-up
            pass
