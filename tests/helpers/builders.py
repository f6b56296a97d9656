"""Builders for the files the probes read, written once for every test that needs them: a file
with its folders (:func:`write`), glibc's ``ld.so.cache`` (:func:`ld_so_cache`), an installed
distribution's ``*.dist-info`` (:func:`dist_info`), a ``RECORD`` hash (:func:`record_hash`) and a
metadata-only wheel that pip installs (:func:`metadata_wheel`).

Formats:
* ``ld.so.cache``: glibc ``sysdeps/generic/dl-cache.h`` (struct cache_file_new: magic
  ``glibc-ld.so.cache`` + version ``1.1``, nlibs, len_strings, flags, pad[3], extension_offset,
  unused[3] = a 48-byte header; entries of flags, key, value, osversion, hwcap = 24 bytes; string
  offsets count from the start of the new-format header). Real caches written by glibc's own
  ``ldconfig`` are read back by the parser's tests (tests/unit/probes/test_probe_parsers.py).
* ``*.dist-info``: core metadata 2.x (https://packaging.python.org/en/latest/specifications/core-metadata/:
  an RFC 822 header block ending at the first blank line, then the description) and ``RECORD``
  (https://packaging.python.org/en/latest/specifications/recording-installed-packages/: one
  ``path,sha256=<urlsafe base64 without padding>,size`` CSV row per file; its own row has no hash).
  The folder is named as pip names it: the distribution's name with ``-`` as ``_``, then the version.
* wheels: https://packaging.python.org/en/latest/specifications/binary-distribution-format/
  (``{name}-{version}.dist-info/`` with METADATA, WHEEL and RECORD).
"""

from __future__ import annotations

import base64
import hashlib
import struct
import zipfile
from collections.abc import Iterable
from pathlib import Path

LD_SO_CACHE_MAGIC = b"glibc-ld.so.cache1.1"


def write(path: Path, text: str | bytes = "") -> Path:
    """Write ``text`` (str or bytes) to ``path``, creating its folders; returns ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def ld_so_cache(entries: list[tuple[str | bytes | int, str | bytes | int]], n: int | None = None, *,
                prefix: bytes = b"", tail: bytes = b"") -> bytes:
    """The bytes of a new-format ``ld.so.cache`` holding ``entries`` [(soname, path)] in cache
    order, after ``prefix`` (the old-format part some glibc versions still write first) and before
    ``tail``. The header says ``n`` entries (default: as many as given). A key or value may be str,
    bytes, or an int: a raw string offset (to point past the end). Equal strings are stored once."""
    n = len(entries) if n is None else n
    table_end = 48 + 24 * len(entries)
    strings, pos, rows = bytearray(), {}, []
    for pair in entries:
        offs = []
        for s in pair:
            if isinstance(s, int):
                offs.append(s)
                continue
            if s not in pos:
                pos[s] = table_end + len(strings)
                strings += (s if isinstance(s, bytes) else s.encode()) + b"\0"
            offs.append(pos[s])
        rows.append(struct.pack("<iIIIQ", 0x303, offs[0], offs[1], 0, 0))  # flags: ELF x86-64 libc6
    head = LD_SO_CACHE_MAGIC + struct.pack("<II", n, len(strings)) + b"\0" * 20
    assert len(head) == 48
    return prefix + head + b"".join(rows) + bytes(strings) + tail


def record_hash(data: bytes) -> str:
    """A RECORD row's hash field: ``sha256=`` and the urlsafe base64 digest without padding."""
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def dist_info(site: Path, name: str, version: str, files: Iterable[str] | None = None, *,
              requires: Iterable[str] = (), extras: Iterable[str] = (), headers: Iterable[str] = (),
              description: str = "", metadata_version: str = "2.1") -> Path:
    """An installed distribution's ``*.dist-info`` folder in ``site``; returns the folder.

    METADATA: Metadata-Version, Name, Version, then ``headers`` as given, one ``Provides-Extra``
    per extra and one ``Requires-Dist`` per requirement, a blank line and ``description``.
    RECORD, only when ``files`` is given: one row per file (paths relative to ``site``; a stand-in
    hash ``sha256=x`` and size 1, as the probes judge a RECORD by its paths) and the RECORD's own row.
    """
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    lines = [f"Metadata-Version: {metadata_version}", f"Name: {name}", f"Version: {version}", *headers]
    lines += [f"Provides-Extra: {e}" for e in extras]
    lines += [f"Requires-Dist: {r}" for r in requires]
    write(info / "METADATA", "\n".join(lines) + "\n\n" + description)
    if files is not None:
        write(info / "RECORD", "".join(f"{f},sha256=x,1\n" for f in files) + f"{info.name}/RECORD,,\n")
    return info


def metadata_wheel(directory: Path, name: str, version: str) -> Path:
    """A valid pure-Python wheel holding only its metadata (METADATA, WHEEL, and a RECORD with
    real hashes), written to ``directory``; returns its path. pip installs it like any wheel."""
    dist = name.replace("-", "_")
    info = f"{dist}-{version}.dist-info"
    files = {
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\nSummary: test stand-in\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: cudnn-magic-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    rows = [f"{path},{record_hash(text.encode())},{len(text.encode())}" for path, text in files.items()]
    files[f"{info}/RECORD"] = "\n".join([*rows, f"{info}/RECORD,,"]) + "\n"
    out = directory / f"{dist}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(out, "w") as zf:
        for path, text in files.items():
            zf.writestr(path, text)
    return out
