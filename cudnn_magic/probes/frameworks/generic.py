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

from ...model import LibraryCopy
from ...util import disk_cache, pyenv
from ...util.files import load_json_regular, read_regular
from .. import libnames
from ..elf import ElfDynamic
from ..loader import elf_facts, elf_from_json, elf_to_json, remember_elf
from ..record_scan import is_native_name, native_lines
from ..scope import listdir

__all__ = [
    "CUDNN_DISTRIBUTION",
    "Distribution",
    "EnvironmentScan",
    "NativeLibrary",
    "is_native_name",
    "scan_environment",
    "site_dirs",
]

_SEP = re.compile(r"[-_.]+")
#: Distributions that ARE cuDNN (pip wheels and conda packages): their files are not consumers.
CUDNN_DISTRIBUTION = re.compile(r"^(nvidia-cudnn(-jit)?(-cu\d+)?|cudnn|libcudnn\d*(-dev)?|cudnn-jit)$")
_MAX_RECORD = 64 << 20


def _native_rows(data: bytes) -> list[str]:
    """Paths (the first CSV field, PEP 376/627 RECORD format) of the rows naming a native
    library (:func:`cudnn_magic.probes.record_scan.native_lines`: TensorFlow's RECORD has 20,000
    rows and about 150 libraries)."""
    return [rel for rel, _ in native_lines(data)]


def _norm(name: str) -> str:
    return _SEP.sub("-", name).lower()


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
            if any(e.endswith(".dist-info") for e in listdir(ap)):  # by the folder's mtime (probes.scope)
                out.append(ap)
        except OSError:
            continue
    return out


_lock = threading.Lock()
_list_cache: dict[str, tuple[tuple[int, int, int], tuple[str, str, tuple[str, ...]]]] = {}


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


def _library(path: str, vendor_ok: bool, cache: _SiteCache | None = None) -> NativeLibrary | None:
    base = os.path.basename(path)
    is_cudnn = libnames.is_cudnn_name(base)
    if not os.path.exists(path):
        return None
    facts = None
    if not base.lower().endswith((".dll", ".pyd")):
        facts = cache.library(path) if cache is not None else None
        if facts is None:
            facts = elf_facts(path)
    if isinstance(facts, str):
        if is_cudnn and vendor_ok:
            return NativeLibrary(path=path, vendored_cudnn=True, error=facts)
        return NativeLibrary(path=path, error=facts)
    if facts is None:  # a Windows DLL: only its name tells
        return NativeLibrary(path=path, vendored_cudnn=is_cudnn and vendor_ok)
    cudnn_needed = tuple(n for n in facts.needed if libnames.is_cudnn_name(n))
    return NativeLibrary(path=path, soname=facts.soname, needed=facts.needed, rpath=facts.rpath,
                         runpath=facts.runpath, cudnn_needed=cudnn_needed, vendored_cudnn=is_cudnn and vendor_ok)


def _dist(name: str, version: str, source: str, location: str, rels: tuple[str, ...],
          cache: _SiteCache | None = None) -> Distribution | None:
    vendor_ok = not CUDNN_DISTRIBUTION.match(name)
    if not vendor_ok:
        return None  # cuDNN itself: its files are no consumers (read by the inventory instead)
    libs: list[NativeLibrary] = []
    for rel in rels:
        path = os.path.normpath(os.path.join(location, rel))
        lib = _library(path, vendor_ok, cache)
        if lib is not None:
            libs.append(lib)
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


def scan_environment(paths: list[str] | None = None, *, conda: str | bool | None = True,
                     environ: dict[str, str] | None = None, skip: frozenset[str] = frozenset()) -> EnvironmentScan:
    """Find every cuDNN consumer and vendored cuDNN copy of the environment (module docstring).

    What each site directory held is kept on disk (:class:`_SiteCache`): a second scan, in this
    process or a new one, reads no ``RECORD`` whose (device, inode, size, mtime) did not change,
    and no library of a distribution that needed no cuDNN then; the libraries of the
    distributions that did are checked the same way, each.

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
    counts = {"records": 0, "native_dists": 0, "native_libraries": 0, "read": 0}
    seen_paths: set[str] = set()
    try:
        for site in site_dirs(paths):
            try:
                entries = os.listdir(site)
            except OSError as exc:
                scan.notes.append(f"could not list {site}: {exc.strerror or exc}")
                continue
            lists = [(e, os.path.join(site, e, "RECORD")) for e in sorted(entries) if e.endswith(".dist-info")
                     and not (skip and os.path.normpath(os.path.join(site, e)) in skip)]
            _scan_location(scan, site, "pip", lists, _record_natives, seen_paths, counts)
        prefix = conda_prefix(environ) if conda is True else (conda or None)
        if prefix:
            metas = sorted(glob.glob(os.path.join(prefix, "conda-meta", "*.json")))
            _scan_location(scan, prefix, "conda", [(os.path.basename(m), m) for m in metas], _conda_natives,
                           seen_paths, counts)
    except Exception as exc:  # noqa: BLE001 - a probe never raises into the cell
        scan.notes.append(f"environment scan stopped: {type(exc).__name__}: {exc}")
    scan.stats = {"records": counts["records"], "native_dists": counts["native_dists"],
                  "native_libraries": counts["native_libraries"], "lists_read": counts["read"],
                  "seconds": time.perf_counter() - t0}
    return scan


def _scan_location(scan: EnvironmentScan, location: str, source: str, lists: list[tuple[str, str]], read,  # type: ignore[no-untyped-def]
                   seen_paths: set[str], counts: dict[str, int]) -> None:
    """Scan the file lists (``RECORD`` or ``conda-meta/*.json``) of one site directory or conda
    prefix, through its :class:`_SiteCache`."""
    cache = _SiteCache(location, source)
    for entry, listfile in lists:
        try:
            st = os.stat(listfile)
        except OSError:
            continue
        counts["records"] += 1
        got, relevant = cache.natives(entry, listfile, st, read, counts)
        if not got or not got[2]:
            continue
        counts["native_dists"] += 1
        scan.native_names.update(os.path.basename(r) for r in got[2])
        fresh = [(r, os.path.normpath(os.path.join(location, r))) for r in got[2]]
        rels = tuple(r for r, p in fresh if p not in seen_paths)
        seen_paths.update(p for _, p in fresh)
        counts["native_libraries"] += len(rels)
        if relevant is False:
            continue  # unchanged since a scan that found no library of it needing cuDNN
        d = _dist(got[0], got[1], source, location, rels, cache)
        cache.relevant(entry, d is not None)
        if d is not None:
            scan.distributions.append(d)
    cache.save()


#: A file changed less than this long ago (seconds) is not trusted to the disk cache: a second
#: change within the file system's timestamp granularity would keep its (size, mtime) (git's
#: "racy" entries), so it is read again next time.
RACY_S = 2.0


class _SiteCache:
    """What one site directory (or conda prefix) held at the last scan, on disk
    (:mod:`cudnn_magic.util.disk_cache`, kind ``scan``, keyed by the folder):

    * per file list (``RECORD``): its ``[device, inode, size, mtime_ns]``, the distribution's name,
      version and native library paths, and whether any of those needed cuDNN;
    * per native library of a distribution that did: its ``[device, inode, size, mtime_ns]`` and
      its dynamic section (or why it could not be read).

    A list whose key changed is read again, and so is every library whose key changed; the rest
    is taken from here (the libraries' dynamic sections also seed
    :func:`cudnn_magic.probes.loader.elf_facts`). Entries younger than :data:`RACY_S` are not
    stored. Written back only when something changed."""

    def __init__(self, location: str, source: str) -> None:
        self._dc = disk_cache
        self.key = f"{source}:{location}"
        self.location = location
        doc = _docs.get(self.key)  # what this process last read or wrote: no file read
        if doc is None:
            doc = disk_cache.load("scan", self.key)
        ok = isinstance(doc, dict) and isinstance(doc.get("lists"), dict) and isinstance(doc.get("libs"), dict)
        self.lists: dict[str, list] = doc["lists"] if ok else {}
        self.libs: dict[str, list] = doc["libs"] if ok else {}
        self.used_lists: dict[str, list] = {}
        self.used_libs: dict[str, list] = {}
        self.dirty = not ok
        self.now_ns = time.time_ns()

    def _racy(self, key: list[int]) -> bool:
        return key[3] >= self.now_ns - int(RACY_S * 1e9)

    def natives(self, entry: str, listfile: str, st: os.stat_result, read, counts: dict[str, int]  # type: ignore[no-untyped-def]
                ) -> tuple[tuple[str, str, tuple[str, ...]] | None, bool | None]:
        """(name, version, native paths) of a file list, and whether the last scan found a library
        of it needing cuDNN (None: not known)."""
        key = self._dc.file_key(st)
        row = self.lists.get(entry)
        if (isinstance(row, list) and len(row) == 5 and row[0] == key and isinstance(row[3], list)
                and all(isinstance(x, str) for x in row[3]) and isinstance(row[1], str) and isinstance(row[2], str)):
            self.used_lists[entry] = row
            return (row[1], row[2], tuple(row[3])), row[4] if isinstance(row[4], bool) else None
        counts["read"] += 1
        got = read(listfile, (st.st_ino, st.st_size, st.st_mtime_ns))
        if got is not None and not self._racy(key):
            self.used_lists[entry] = [key, got[0], got[1], list(got[2]), None if got[2] else False]
        self.dirty = True
        return got, None

    def relevant(self, entry: str, value: bool) -> None:
        row = self.used_lists.get(entry)
        if row is not None and row[4] is not value:
            row[4] = value
            self.dirty = True

    def library(self, path: str) -> ElfDynamic | str | None:
        """The dynamic section of ``path`` as last scanned, when the file is unchanged (seeding
        :func:`~cudnn_magic.probes.loader.elf_facts`); None otherwise."""

        try:
            st = os.stat(path)
        except OSError:
            return None
        prefix = self.location.rstrip(os.sep) + os.sep
        rel = path.removeprefix(prefix)
        key = self._dc.file_key(st)
        row = self.libs.get(rel)
        value: ElfDynamic | str | None = None
        if isinstance(row, list) and len(row) == 2 and row[0] == key:
            value = elf_from_json(row[1])
        if value is None:
            value = elf_facts(path)
            self.dirty = True
        else:
            remember_elf(path, st, value)
        if not self._racy(key):
            self.used_libs[rel] = [key, elf_to_json(value)]
        return value

    def save(self) -> None:
        doc = {"lists": self.used_lists, "libs": self.used_libs}
        with _lock:
            _docs[self.key] = doc
            while len(_docs) > 64:
                _docs.pop(next(iter(_docs)))
        if not self.dirty and len(self.used_lists) == len(self.lists) and len(self.used_libs) == len(self.libs):
            return
        self._dc.store("scan", self.key, doc)


#: The last document of each site directory in this process (every entry in it is checked
#: against the files each time, as one read from disk is).
_docs: dict[str, dict] = {}
