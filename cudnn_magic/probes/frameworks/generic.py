"""Every cuDNN consumer installed in the environment, found generically.

A consumer is any native library of an installed distribution (every ``*.dist-info/RECORD`` on
``sys.path``, every package of the conda env in ``conda-meta/*.json``) that

* NEEDs a cuDNN soname (``DT_NEEDED libcudnn.so.9``, ``libcudnn-463fd6d5.so.8.9.7``), or
* is a cuDNN file the distribution vendors (auditwheel's ``libcudnn-HASH.so.X.Y.Z`` in
  ``<pkg>.libs/``, delvewheel's ``cudnn64_8-HASH.dll``, a plain ``libcudnn.so.8`` in a
  framework's ``lib/``): a *copy*, owned by that distribution.

The scan reads only RECORD/conda file lists and the ELF dynamic section of each native library
(:func:`cudnn_magic.probes.loader.elf_facts`); it never imports or loads anything. Distributions
without native libraries are skipped after reading their RECORD; RECORDs, conda lists and ELF
facts are cached by (inode, size, mtime) across calls, so a second ``%cudnn_check`` only stats
files. NVIDIA's own cuDNN distributions (``nvidia-cudnn-*``, conda ``cudnn``) are cuDNN itself,
not consumers.
"""

from __future__ import annotations

import glob
import os
import re
import threading
import time
from dataclasses import dataclass, field

from ...util.files import load_json_regular, read_regular
from ...model import LibraryCopy
from .. import libnames
from ...util import pyenv
from ..elf import ElfDynamic
from ..loader import elf_facts

__all__ = ["NativeLibrary", "Distribution", "EnvironmentScan", "scan_environment", "site_dirs",
           "is_native_name", "CUDNN_DISTRIBUTION"]

_SEP = re.compile(r"[-_.]+")
#: Distributions that ARE cuDNN (pip wheels and conda packages): their files are not consumers.
CUDNN_DISTRIBUTION = re.compile(r"^(nvidia-cudnn(-jit)?(-cu\d+)?|cudnn|libcudnn\d*(-dev)?|cudnn-jit)$")
_NATIVE = re.compile(r"(\.so(\.\d+)*|\.pyd|\.dll)$", re.IGNORECASE)
_MAX_RECORD = 64 << 20


def _native_rows(data: bytes) -> list[str]:
    """Paths (the first CSV field, PEP 376/627 RECORD format) of the rows naming a native
    library. Finds the few ``.so``/``.pyd``/``.dll`` hits with ``bytes.find`` and looks at their
    line only: TensorFlow's RECORD has 20,000 rows and about 150 libraries."""
    starts: set[int] = set()
    out: list[str] = []
    for needle in (b".so", b".pyd", b".dll", b".DLL"):
        pos = data.find(needle)
        while pos >= 0:
            start = data.rfind(b"\n", 0, pos) + 1
            end = data.find(b"\n", pos)
            end = len(data) if end < 0 else end
            if start not in starts:
                starts.add(start)
                rel = data[start:end].decode("utf-8", "replace").rsplit(",", 2)[0].strip().strip('"')
                if rel and is_native_name(rel):
                    out.append(rel)
            pos = data.find(needle, end)
    return out


def _norm(name: str) -> str:
    return _SEP.sub("-", name).lower()


def is_native_name(path: str) -> bool:
    """``foo.so``, ``libfoo.so.1.2``, ``_ext.cpython-311-x86_64-linux-gnu.so``, ``x.pyd``, ``x.dll``."""
    return bool(_NATIVE.search(os.path.basename(path)))


@dataclass(frozen=True)
class NativeLibrary:
    """One native library of a distribution, with the loader facts of its dynamic section.

    ``path`` is absolute (symlinks kept, as the loader sees the file), ``cudnn_needed`` the
    cuDNN sonames among its ``DT_NEEDED``; ``vendored_cudnn`` is True when the file itself is a
    cuDNN copy the distribution ships. ``error`` says why its ELF facts could not be read.
    """

    path: str
    soname: str | None = None
    needed: tuple[str, ...] = ()
    rpath: tuple[str, ...] = ()
    runpath: tuple[str, ...] = ()
    cudnn_needed: tuple[str, ...] = ()
    vendored_cudnn: bool = False
    error: str | None = None


@dataclass(frozen=True)
class Distribution:
    """An installed distribution with native libraries that has something to do with cuDNN.

    ``source`` is ``"pip"`` (a ``*.dist-info`` RECORD) or ``"conda"``; ``location`` the site
    directory or conda prefix its paths are relative to; ``libraries`` every native library it
    installs (needed to follow loader chains inside it), ``consumers`` those that NEED cuDNN,
    ``vendored`` the cuDNN files it ships.
    """

    name: str
    version: str
    source: str
    location: str
    libraries: tuple[NativeLibrary, ...] = ()

    @property
    def consumers(self) -> tuple[NativeLibrary, ...]:
        return tuple(lib for lib in self.libraries if lib.cudnn_needed and not lib.vendored_cudnn)

    @property
    def vendored(self) -> tuple[NativeLibrary, ...]:
        return tuple(lib for lib in self.libraries if lib.vendored_cudnn)

    @property
    def label(self) -> str:
        return f"{self.name} {self.version}".strip()

    def owner(self) -> str:
        """The owner string used in inventories: ``"pip: ctranslate2 4.4.0"``."""
        return f"{self.source}: {self.label}"

    def parents_of(self, lib: NativeLibrary) -> list[NativeLibrary]:
        """Libraries of this distribution that NEED ``lib`` by its SONAME or file name."""
        names = {os.path.basename(lib.path)} | ({lib.soname} if lib.soname else set())
        return [o for o in self.libraries if o.path != lib.path and names & set(o.needed)]


@dataclass
class EnvironmentScan:
    """Result of :func:`scan_environment`: the relevant distributions, and what the scan cost.

    ``stats``: ``records`` (RECORD/conda lists looked at), ``native_dists`` (with at least one
    native library), ``native_libraries`` (ELF files considered), ``seconds``.
    """

    distributions: list[Distribution] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    stats: dict[str, float] = field(default_factory=dict)
    #: file names of every native library any scanned distribution installs (relevant or not):
    #: what the environment provides, for telling "not on the loader's path" from "not installed".
    native_names: set[str] = field(default_factory=set)

    def vendored_copies(self) -> list[LibraryCopy]:
        """Every vendored cuDNN file as an inventory row (owner = the vendoring distribution,
        version from the file name, ``source`` "vendored by <dist>")."""
        out: list[LibraryCopy] = []
        for d in self.distributions:
            for lib in d.vendored:
                real = os.path.realpath(lib.path)
                name = os.path.basename(real)
                parsed = libnames.parse_name(name)
                out.append(LibraryCopy(
                    path=real, name=name, soname=lib.soname or libnames.soname_of(name),
                    version=parsed[2] if parsed else None, version_source="file name" if parsed and parsed[2] else None,
                    owner=d.owner(), source=f"vendored by {d.label}", loaded=False,
                    is_main=libnames.is_main(name), error=lib.error,
                ))
        return out

    def owner_by_path(self) -> dict[str, str]:
        """Real path -> owner string for every file of every distribution scanned."""
        out: dict[str, str] = {}
        for d in self.distributions:
            for lib in d.libraries:
                out[os.path.realpath(lib.path)] = d.owner()
        return out


def site_dirs(paths: list[str] | None = None) -> list[str]:
    """The site directories to scan: ``paths`` as given, else every ``site-packages`` /
    ``dist-packages`` directory on ``sys.path`` (the user site included when it is there) and
    every other ``sys.path`` directory that holds a ``*.dist-info`` (``pip install --target``
    folders on ``PYTHONPATH``). The empty entry (the working directory) is not scanned."""
    if paths is not None:
        return [os.path.abspath(p) for p in paths if os.path.isdir(p)]
    out: list[str] = []
    for p in pyenv.search_path():
        if not p or not isinstance(p, str) or not os.path.isdir(p):
            continue
        ap = os.path.abspath(p)
        if ap in out:
            continue
        if ap.rstrip("/").endswith(("site-packages", "dist-packages")):
            out.append(ap)
            continue
        try:
            if any(e.endswith(".dist-info") for e in os.listdir(ap)):
                out.append(ap)
        except OSError:
            continue
    return out


_lock = threading.Lock()
_list_cache: dict[str, tuple[tuple[int, int, int], tuple[str, str, tuple[str, ...]]]] = {}


def _stat_key(path: str) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


def _record_natives(record: str, key: tuple[int, int, int]) -> tuple[str, str, tuple[str, ...]] | None:
    """(name, version, native paths relative to the site dir) of one RECORD; cached."""
    with _lock:
        hit = _list_cache.get(record)
        if hit is not None and hit[0] == key:
            return hit[1]
    info = os.path.basename(os.path.dirname(record))[: -len(".dist-info")]
    name, _, version = info.partition("-")
    try:
        data = read_regular(record, _MAX_RECORD)
    except OSError:
        return None
    value = (_norm(name), version, tuple(_native_rows(data)))
    with _lock:
        _list_cache[record] = (key, value)
    return value


def _conda_natives(meta: str, key: tuple[int, int, int]) -> tuple[str, str, tuple[str, ...]] | None:
    with _lock:
        hit = _list_cache.get(meta)
        if hit is not None and hit[0] == key:
            return hit[1]
    try:
        data = load_json_regular(meta, 64 << 20)
    except (OSError, ValueError):
        return None
    files = data.get("files") or ()
    natives = tuple(f for f in files if isinstance(f, str) and is_native_name(f))
    value = (_norm(str(data.get("name", ""))), str(data.get("version", "")), natives)
    with _lock:
        _list_cache[meta] = (key, value)
    return value


def _library(path: str, vendor_ok: bool) -> NativeLibrary | None:
    base = os.path.basename(path)
    is_cudnn = libnames.is_cudnn_name(base)
    if not os.path.exists(path):
        return None
    facts = elf_facts(path) if not base.lower().endswith((".dll", ".pyd")) else None
    if isinstance(facts, str):
        if is_cudnn and vendor_ok:
            return NativeLibrary(path=path, vendored_cudnn=True, error=facts)
        return NativeLibrary(path=path, error=facts)
    if facts is None:  # a Windows DLL: only its name tells
        return NativeLibrary(path=path, vendored_cudnn=is_cudnn and vendor_ok)
    cudnn_needed = tuple(n for n in facts.needed if libnames.is_cudnn_name(n))
    return NativeLibrary(path=path, soname=facts.soname, needed=facts.needed, rpath=facts.rpath,
                         runpath=facts.runpath, cudnn_needed=cudnn_needed, vendored_cudnn=is_cudnn and vendor_ok)


def _dist(name: str, version: str, source: str, location: str, rels: tuple[str, ...]) -> Distribution | None:
    vendor_ok = not CUDNN_DISTRIBUTION.match(name)
    libs: list[NativeLibrary] = []
    for rel in rels:
        path = os.path.normpath(os.path.join(location, rel))
        lib = _library(path, vendor_ok)
        if lib is not None:
            libs.append(lib)
    if not vendor_ok:
        return None  # cuDNN itself
    if not any(lib.cudnn_needed or lib.vendored_cudnn for lib in libs):
        return None
    return Distribution(name, version, source, location, tuple(libs))


def conda_prefix(environ: dict[str, str] | None = None) -> str | None:
    """The conda env of this interpreter (``sys.prefix`` with a ``conda-meta``), else
    ``CONDA_PREFIX`` when it has one."""
    env = os.environ if environ is None else environ
    for p in (pyenv.prefix(), env.get("CONDA_PREFIX", "")):
        if p and os.path.isdir(os.path.join(p, "conda-meta")):
            return p
    return None


def scan_environment(paths: list[str] | None = None, *, conda: str | None | bool = True,
                     environ: dict[str, str] | None = None, skip: frozenset[str] = frozenset()) -> EnvironmentScan:
    """Find every cuDNN consumer and vendored cuDNN copy of the environment (module docstring).

    Args:
        paths: site directories to scan instead of ``sys.path``'s (tests, another environment).
        conda: a conda prefix to scan, ``True`` for this interpreter's conda env (if any),
            ``False``/None for none.
        environ: environment to read ``CONDA_PREFIX`` from.
        skip: ``.dist-info`` folders (absolute, normalized) left out: the what-if's distributions
            that pip would replace.

    Returns:
        An :class:`EnvironmentScan`. Never raises: what cannot be read becomes a note.
    """
    t0 = time.perf_counter()
    scan = EnvironmentScan()
    n_records = n_native_dists = n_libs = 0
    seen_paths: set[str] = set()
    try:
        for site in site_dirs(paths):
            try:
                entries = os.listdir(site)
            except OSError as exc:
                scan.notes.append(f"could not list {site}: {exc.strerror or exc}")
                continue
            for entry in sorted(entries):
                if not entry.endswith(".dist-info") or (skip and os.path.normpath(os.path.join(site, entry)) in skip):
                    continue
                record = os.path.join(site, entry, "RECORD")
                key = _stat_key(record)
                if key is None:
                    continue
                n_records += 1
                got = _record_natives(record, key)
                if not got or not got[2]:
                    continue
                n_native_dists += 1
                scan.native_names.update(os.path.basename(r) for r in got[2])
                rels = tuple(r for r in got[2] if os.path.normpath(os.path.join(site, r)) not in seen_paths)
                seen_paths.update(os.path.normpath(os.path.join(site, r)) for r in rels)
                n_libs += len(rels)
                d = _dist(got[0], got[1], "pip", site, rels)
                if d is not None:
                    scan.distributions.append(d)
        prefix = conda_prefix(environ) if conda is True else (conda or None)
        if prefix:
            for meta in sorted(glob.glob(os.path.join(prefix, "conda-meta", "*.json"))):
                key = _stat_key(meta)
                if key is None:
                    continue
                n_records += 1
                got = _conda_natives(meta, key)
                if not got or not got[2]:
                    continue
                n_native_dists += 1
                scan.native_names.update(os.path.basename(r) for r in got[2])
                rels = tuple(r for r in got[2] if os.path.normpath(os.path.join(prefix, r)) not in seen_paths)
                seen_paths.update(os.path.normpath(os.path.join(prefix, r)) for r in rels)
                n_libs += len(rels)
                d = _dist(got[0], got[1], "conda", prefix, rels)
                if d is not None:
                    scan.distributions.append(d)
    except Exception as exc:  # noqa: BLE001 - a probe never raises into the cell
        scan.notes.append(f"environment scan stopped: {type(exc).__name__}: {exc}")
    scan.stats = {"records": n_records, "native_dists": n_native_dists, "native_libraries": n_libs,
                  "seconds": time.perf_counter() - t0}
    return scan


def elf_of(lib: NativeLibrary) -> ElfDynamic | None:
    facts = elf_facts(lib.path)
    return facts if isinstance(facts, ElfDynamic) else None
