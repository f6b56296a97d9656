"""Find the native-library rows of a wheel's ``RECORD`` without parsing every row.

TensorFlow 2.21's ``RECORD`` has 22,000 rows and about 150 native libraries; a check needs only
those (who owns a library file, what a library NEEDs). The rows are found with ``bytes.find`` on
the few suffixes a native library name ends in (``.so``, ``.so.N``, ``.pyd``, ``.dll``) and only
their lines are looked at. ``RECORD`` format: PEP 376/627, CSV ``path,hash,size``.
"""

from __future__ import annotations

import os
import re

__all__ = ["is_native_name", "native_lines"]

_NATIVE = re.compile(r"(\.so(\.\d+)*|\.pyd|\.dll)$", re.IGNORECASE)
_NEEDLES = (b".so", b".pyd", b".dll")


def is_native_name(path: str) -> bool:
    """``foo.so``, ``libfoo.so.1.2``, ``_ext.cpython-311-x86_64-linux-gnu.so``, ``x.pyd``, ``x.dll``."""
    return bool(_NATIVE.search(os.path.basename(path)))


def native_lines(data: bytes) -> list[tuple[str, str]]:
    """``(path, the whole line)`` of every row of ``data`` (a ``RECORD``) whose path names a native
    library, in file order, each once; the path is the first CSV field, unquoted."""
    starts: dict[int, tuple[str, str]] = {}
    low = data.lower()  # the suffixes in any case (".DLL" in Windows wheels): three passes, not six
    for needle in _NEEDLES:
        pos = low.find(needle)
        while pos >= 0:
            start = low.rfind(b"\n", 0, pos) + 1
            end = low.find(b"\n", pos)
            end = len(data) if end < 0 else end
            if start not in starts:
                line = data[start:end].decode("utf-8", "replace").rstrip("\r")
                rel = line.rsplit(",", 2)[0].strip()
                if len(rel) >= 2 and rel[0] == rel[-1] == '"':
                    rel = rel[1:-1].replace('""', '"')
                if rel and is_native_name(rel):
                    starts[start] = (rel, line)
                else:
                    starts[start] = ("", "")
            pos = low.find(needle, end)
    return [v for _, v in sorted(starts.items()) if v[0]]
