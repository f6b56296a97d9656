"""cuDNN file names, sonames and the versions a file's name or nearby header give away.

File naming per NVIDIA's cuDNN Linux packages: ``libcudnn.so.9.1.0`` (real file),
``libcudnn.so.9`` (soname link), ``libcudnn.so`` (dev link); sub-libraries ``libcudnn_ops.so.9``,
``libcudnn_cnn_infer.so.8`` ...; pip wheels ship only the soname (``libcudnn.so.9``).
Header: ``CUDNN_MAJOR``/``CUDNN_MINOR``/``CUDNN_PATCHLEVEL`` in ``cudnn_version.h`` (cuDNN 8+)
or ``cudnn.h`` (7 and older).
"""

from __future__ import annotations

import os
import re
import stat
from functools import lru_cache

from ..util.files import file_kind, note_skipped, open_regular
from . import filefacts
from .elf import NotElf, read_symbol_bytes

_NAME = re.compile(r"^lib(cudnn(?:_[a-z_]+)?)\.so(?:\.(\d+)(?:\.(\d+))?(?:\.(\d+))?)?$")
# auditwheel renames a library it vendors into a wheel's ``<pkg>.libs`` folder to
# ``NAME-<8 hex of its hash>.so.VERSION`` and sets that as its SONAME (auditwheel ``repair``,
# ``auditwheel/repair.py`` ``copylib``): ctranslate2 4.4.0 ships ``libcudnn-463fd6d5.so.8.9.7``.
_HASHED = re.compile(r"^lib(cudnn(?:_[a-z_]+)?)-([0-9a-f]{8})\.so(?:\.(\d+)(?:\.(\d+))?(?:\.(\d+))?)?$")
# Windows: ``cudnn64_8.dll``, ``cudnn_ops_infer64_8.dll``, ``cudnn_graph64_9.dll``; delvewheel
# (the Windows auditwheel) vendors them as ``cudnn64_8-<hash>.dll``.
_DLL = re.compile(r"^(cudnn(?:_[a-z_]+?)?)64_(\d+)(?:-[0-9a-f]+)?\.dll$", re.IGNORECASE)
_HDR = re.compile(rb"#define\s+CUDNN_(MAJOR|MINOR|PATCHLEVEL)\s+(\d+)")


def parse_name(name: str) -> tuple[str, int | None, str | None] | None:
    """``libcudnn_ops.so.9.1.0`` -> ("cudnn_ops", 9, "9.1.0"); ``libcudnn.so.9`` -> ("cudnn", 9, None).

    Also copies vendored by auditwheel (``libcudnn-463fd6d5.so.8.9.7`` -> ("cudnn", 8, "8.9.7"))
    and Windows DLLs (``cudnn_ops_infer64_8.dll`` -> ("cudnn_ops_infer", 8, None)).
    The third item is a full version only when the name carries major.minor.patch.
    Returns None for names that are not cuDNN libraries.
    """
    m = _NAME.match(name)
    if m:
        stem, major, minor, patch = m.groups()
    else:
        h = _HASHED.match(name)
        if h:
            stem, _hash, major, minor, patch = h.groups()
        else:
            d = _DLL.match(name)
            if not d:
                return None
            return d.group(1).lower(), int(d.group(2)), None
    full = f"{major}.{minor}.{patch}" if patch is not None else None
    return stem, int(major) if major else None, full


def is_cudnn_name(name: str) -> bool:
    return parse_name(name) is not None


def is_main(name: str) -> bool:
    """True for ``libcudnn.so*`` itself (the library frameworks link), False for sub-libraries."""
    p = parse_name(name)
    return bool(p and p[0] == "cudnn")


def is_vendored_name(name: str) -> bool:
    """True for a cuDNN file renamed by auditwheel/delvewheel (``libcudnn-463fd6d5.so.8.9.7``,
    ``cudnn64_8-1a2b3c4d.dll``): a copy some other distribution vendors into its wheel."""
    return bool(_HASHED.match(name)) or bool(re.match(r"^cudnn(?:_[a-z_]+?)?64_\d+-[0-9a-f]+\.dll$", name, re.IGNORECASE))


def soname_of(name: str) -> str:
    """``libcudnn_ops.so.9.1.0`` -> ``libcudnn_ops.so.9``; names without a major stay as they are.

    A vendored copy keeps its whole name (``libcudnn-463fd6d5.so.8.9.7``): auditwheel makes that
    its SONAME, so a request for ``libcudnn.so.8`` never matches it. DLL names stay as they are."""
    if is_vendored_name(name) or name.lower().endswith(".dll"):
        return name
    p = parse_name(name)
    if not p or p[1] is None:
        return name
    return f"lib{p[0]}.so.{p[1]}"


def header_version(lib_dir: str) -> tuple[str, str] | None:
    """Version from ``cudnn_version.h`` next to a library directory: ``../include`` (pip wheels,
    tarballs, CUDA toolkits), the same directory, or the system include dirs for system library
    dirs. Returns (version, header path) or None."""
    cands = [
        os.path.join(lib_dir, os.pardir, "include"),
        lib_dir,
    ]
    if lib_dir.startswith(("/usr/lib", "/lib")):
        cands += ["/usr/include", "/usr/include/x86_64-linux-gnu", "/usr/include/aarch64-linux-gnu"]
    for inc in cands:
        for hname in ("cudnn_version.h", "cudnn_version_v9.h", "cudnn_version_v8.h", "cudnn.h"):
            path = os.path.normpath(os.path.join(inc, hname))
            try:
                with open_regular(path) as fh:
                    text = fh.read(200_000)
            except OSError:
                continue
            vals = {k.decode(): int(v) for k, v in _HDR.findall(text)}
            if {"MAJOR", "MINOR", "PATCHLEVEL"} <= vals.keys():
                return f"{vals['MAJOR']}.{vals['MINOR']}.{vals['PATCHLEVEL']}", path
    return None


def pip_dist_version_to_cudnn(version: str) -> str | None:
    """``9.27.0.42`` (wheel version) -> ``9.27.0`` (cuDNN version)."""
    parts = version.split(".")
    if len(parts) >= 3 and all(p.isdigit() for p in parts[:3]):
        return ".".join(parts[:3])
    return None


def embedded_version(path: str) -> str | None:
    """The version a cuDNN sub-library carries in itself, read from the file without loading
    it: the exported 4-byte constant ``cudnn_<stem>_version`` (``cudnn_graph_version`` in
    ``libcudnn_graph.so.9``). Measured on the real wheels: it holds
    ``major << 16 | minor << 8 | patch`` (0x90C00 in 9.12.0, 0x91800 in 9.24.0, 0x91B00 in
    9.27.0); a ``CUDNN_VERSION``-style integer (``major*10000 + minor*100 + patch``) is
    accepted too. The major must agree with the file's soname, else None. Never raises."""
    parsed = parse_name(os.path.basename(path))
    if not parsed or parsed[0] == "cudnn" or parsed[1] is None:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):  # said on every call, not only the first (the answer is cached)
        note_skipped(path, f"not a regular file ({file_kind(st.st_mode)}); nothing was read from it")
        return None

    known = filefacts.get(path, st, "version")
    if known is None or isinstance(known, str):
        return known
    value = _embedded_version(path, (st.st_ino, st.st_mtime_ns, st.st_size))
    filefacts.put(path, st, "version", value)
    return value


@lru_cache(maxsize=256)
def _embedded_version(path: str, _stamp: tuple[int, int, int]) -> str | None:
    return embedded_version_in(path, os.path.basename(path))


def embedded_version_in(path: str, name: str) -> str | None:
    """:func:`embedded_version` of the file opened at ``path`` (``/proc/self/map_files/...``: the
    very file a mapping holds) for a sub-library named ``name``. Uncached; never raises."""
    parsed = parse_name(name)
    if not parsed or parsed[0] == "cudnn" or parsed[1] is None:
        return None
    try:
        raw = read_symbol_bytes(path, f"{parsed[0]}_version", 4)
        if raw is None:
            return None
        with open_regular(path) as fh:
            little = fh.read(6)[5:6] != b"\x02"
    except (OSError, NotElf, ValueError):
        return None
    return decode_embedded(int.from_bytes(raw, "little" if little else "big"), parsed[1])


def decode_embedded(v: int, major: int) -> str | None:
    """The release a sub-library's ``cudnn_<stem>_version`` constant ``v`` says, for a file of
    soname major ``major`` (layouts in :func:`embedded_version`), or None when it does not agree."""
    if v >> 16 == major and (v >> 8) & 0xFF < 100 and v & 0xFF < 100:
        return f"{major}.{(v >> 8) & 0xFF}.{v & 0xFF}"
    if major >= 9 and v // 10000 == major:
        return f"{major}.{v // 100 % 100}.{v % 100}"
    if major < 9 and v // 1000 == major:
        return f"{major}.{v // 100 % 10}.{v % 100}"
    return None
