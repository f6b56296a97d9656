"""The cuDNN libraries mapped into THIS process, and their versions read from the mapped copy.

* Which files: every ``libcudnn*`` path in ``/proc/self/maps`` (main library and
  sub-libraries), falling back to ``dl_iterate_phdr`` where ``/proc`` is missing.
* Which version: ``cudnnGetVersion``/``cudnnGetProperty`` through a handle opened with
  ``RTLD_NOLOAD`` (``dlopen`` returns the already-mapped copy or fails; it never maps a new
  one). Encoding per cuDNN's ``cudnn_version.h`` (see :mod:`cudnn_magic.versions`).
* Safety: the main library resolves its sub-library lazily on the first call and ABORTS the
  process when it cannot ("Invalid handle. Cannot load symbol cudnnGetVersion", FACTS.md). So
  the call is made in this process only when the sub-library that answers it
  (``libcudnn_graph`` for 9.x, ``libcudnn_ops_infer``/``libcudnn_ops`` for 8.x) is already
  mapped; otherwise the same file is asked in a child process
  (:mod:`cudnn_magic.probes.subprocess_probe`).
* Caveat (measured, FACTS.md): two cuDNN 9 copies in one process both report the version of
  the first ``libcudnn_graph.so.9`` loaded.
"""

from __future__ import annotations

import ctypes
import os
import sys

from ..model import LibraryCopy
from ..versions import CudnnVersion, try_parse
from . import libnames
from .installed import static_version
from .owners import owner_of


def mapped_cudnn_paths(maps_path: str = "/proc/self/maps") -> tuple[list[str], str | None]:
    """Paths of every mapped ``libcudnn*`` file, in first-mapped order, and a note when the
    list could not be read (then ``dl_iterate_phdr`` is tried). Never raises."""
    paths: list[str] = []
    try:
        with open(maps_path, "rb") as fh:
            for line in fh:
                if b"libcudnn" not in line:
                    continue
                parts = line.split(None, 5)
                if len(parts) < 6:
                    continue
                p = parts[5].strip().decode("utf-8", "replace")
                if p.endswith(" (deleted)"):
                    p = p[: -len(" (deleted)")]
                if libnames.is_cudnn_name(os.path.basename(p)) and p not in paths:
                    paths.append(p)
        return paths, None
    except OSError as exc:
        note = f"{maps_path} unreadable ({exc.strerror or exc}); used dl_iterate_phdr"
    try:
        paths = [p for p in _dl_iterate_phdr() if libnames.is_cudnn_name(os.path.basename(p))]
    except Exception as exc:  # noqa: BLE001
        return [], f"{note}; dl_iterate_phdr failed too ({exc})"
    return paths, note


def _dl_iterate_phdr() -> list[str]:
    class DlPhdrInfo(ctypes.Structure):
        _fields_ = [("dlpi_addr", ctypes.c_void_p), ("dlpi_name", ctypes.c_char_p),
                    ("dlpi_phdr", ctypes.c_void_p), ("dlpi_phnum", ctypes.c_uint16)]

    names: list[str] = []
    cb_type = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(DlPhdrInfo), ctypes.c_size_t, ctypes.c_void_p)

    def cb(info, _size, _data):  # type: ignore[no-untyped-def]
        name = info.contents.dlpi_name
        if name:
            names.append(name.decode("utf-8", "replace"))
        return 0

    libc = ctypes.CDLL(None)
    libc.dl_iterate_phdr(cb_type(cb), None)
    return names


def _answering_sublib(major: int | None, mapped_names: set[str]) -> bool:
    """Is the sub-library that answers version calls already mapped?"""
    if major is None:
        return False
    if major >= 9:
        return any(n.startswith("libcudnn_graph.so") for n in mapped_names)
    if major == 8:
        return any(n.startswith(("libcudnn_ops_infer.so", "libcudnn_ops.so")) for n in mapped_names)
    return True  # cuDNN 7 and older: one monolithic library


def _noload_query(path: str) -> tuple[CudnnVersion | None, str | None]:
    """Ask the mapped copy at ``path`` through an ``RTLD_NOLOAD`` handle."""
    mode = getattr(os, "RTLD_NOLOAD", 4) | getattr(os, "RTLD_LAZY", 1)
    try:
        lib = ctypes.CDLL(path, mode=mode)
    except OSError as exc:
        return None, f"RTLD_NOLOAD open failed ({exc})"
    try:
        prop = lib.cudnnGetProperty
        prop.restype = ctypes.c_int
        parts = []
        for t in (0, 1, 2):
            v = ctypes.c_int(-1)
            if prop(ctypes.c_int(t), ctypes.byref(v)) != 0:
                raise AttributeError("cudnnGetProperty failed")
            parts.append(v.value)
        return CudnnVersion(*parts), None
    except AttributeError:
        pass
    try:
        fn = lib.cudnnGetVersion
        fn.restype = ctypes.c_size_t
        return CudnnVersion.from_int(int(fn())), None
    except (AttributeError, ValueError) as exc:
        return None, f"no usable version symbol ({exc})"


def probe_loaded(maps_path: str = "/proc/self/maps") -> tuple[tuple[LibraryCopy, ...], list[str]]:
    """Every mapped ``libcudnn*`` file as a :class:`LibraryCopy` (``loaded=True``), and notes.

    Versions: main libraries from the mapped copy (``RTLD_NOLOAD`` handle), or from a child
    process when its answering sub-library is not mapped yet; sub-libraries from their file
    name, owning pip wheel or ``cudnn_version.h`` (a sub-library has no version call of its
    own). Never raises.
    """
    notes: list[str] = []
    if not sys.platform.startswith("linux"):
        return (), [f"mapped-library probe unavailable on this platform ({sys.platform})"]
    paths, note = mapped_cudnn_paths(maps_path)
    if note:
        notes.append(note)
    names = {os.path.basename(p) for p in paths}
    copies: list[LibraryCopy] = []
    child_needed: list[str] = []
    for p in paths:
        name = os.path.basename(p)
        parsed = libnames.parse_name(name)
        major = parsed[1] if parsed else None
        owner = owner_of(p)
        version: str | None = None
        vsource: str | None = None
        error: str | None = None
        if libnames.is_main(name):
            if _answering_sublib(major, names):
                v, err = _noload_query(p)
                if v is not None:
                    version, vsource = str(v), "cudnnGetVersion on the mapped copy (RTLD_NOLOAD)"
                else:
                    error = err
            else:
                child_needed.append(p)
        if version is None:
            version, vsource = static_version(os.path.realpath(p), owner)
        copies.append(LibraryCopy(
            path=p, name=name, soname=libnames.soname_of(name), version=version, version_source=vsource,
            owner=owner, source="mapped", loaded=True, is_main=libnames.is_main(name), error=error,
        ))
    if child_needed:
        from .subprocess_probe import query_versions

        results = query_versions(child_needed)
        for i, c in enumerate(copies):
            r = results.get(c.path)
            if r is None:
                continue
            if r.version is not None:
                v = try_parse(r.version)
                copies[i] = _replace(c, version=str(v) if v else c.version,
                                     version_source="cudnnGetVersion in a child process (its sub-library is not mapped "
                                                    "here yet, so calling it in this kernel could abort it)")
            elif r.error:
                copies[i] = _replace(c, error=r.error)
    return tuple(copies), notes


def _replace(c: LibraryCopy, **kw: object) -> LibraryCopy:
    import dataclasses

    return dataclasses.replace(c, **kw)  # type: ignore[arg-type]


def load_like_a_framework(path: str) -> str | None:
    """Load ``path`` into this process the way a framework does (``dlopen`` with
    ``RTLD_GLOBAL``, then one ``cudnnGetVersion`` call, as ``torch.backends.cudnn.version()``
    does), after checking in a child process that doing so will not abort this process.

    Returns None on success, else the reason it was not loaded. Never raises.
    """
    from .subprocess_probe import query_versions

    if not os.path.exists(path):
        return "no such file"
    r = query_versions([path])[path]
    if r.error:
        return f"not loaded: in a child process it failed: {r.error}"
    try:
        lib = ctypes.CDLL(path, mode=getattr(os, "RTLD_GLOBAL", 256) | getattr(os, "RTLD_NOW", 2))
        fn = lib.cudnnGetVersion
        fn.restype = ctypes.c_size_t
        fn()
    except (OSError, AttributeError) as exc:
        return str(exc)
    return None
