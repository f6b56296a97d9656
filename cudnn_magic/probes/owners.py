"""Which package owns a library file -- decided by the file's content where pip's records say
more than one -- and which installed wheels overwrote each other's files.

* pip: the ``RECORD`` of ``*.dist-info`` folders (PEP 376/627: one line per file,
  ``path,sha256=<urlsafe base64, no padding>,size``, paths relative to the folder holding the
  ``.dist-info``). The folder is found by walking up from the file, so ``site-packages``,
  ``pip install --target`` folders and unzipped wheels all count (owner ``"pip: ..."`` in a
  site-packages, ``"wheel: ..."`` outside any: :func:`owner_label`). A file no ``RECORD``
  lists at its place, whose sha256 is in some installed ``RECORD``, is a copy of that wheel's
  file.
* conda: ``<prefix>/conda-meta/*.json`` ``files`` lists (conda's package metadata format).
* Debian/Ubuntu: ``/var/lib/dpkg/info/*.list`` (dpkg's file lists), cuDNN packages only.

Overwritten wheels: ``nvidia-cudnn-cu13`` and ``nvidia-cudnn-cu12`` (and the ``-jit-`` pair)
install the same ``nvidia/cudnn*/lib/libcudnn*.so.9`` files; pip overwrites the earlier
install's files and keeps both ``RECORD`` files, and ``pip check`` reports nothing (docs/facts.md
"Two cuDNNs at once"). Whose files are on disk is decided by hashing the small ones (the
``libcudnn.so.9`` shim is about 130 KB) and comparing with each ``RECORD``; large files are
compared by size only. :func:`find_overwritten_wheels` is the pure judgement (no disk), so an
environment predicted from ``pip install --dry-run --report`` can be judged the same way.
"""

from __future__ import annotations

import glob
import os
import re
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache

from ..model import WheelOverwrite
from ..rules.consumer_table import CONSUMERS
from ..util import pyenv
from ..util.files import file_kind, load_json_regular, note_skipped, open_regular, read_regular
from . import filefacts
from .record_scan import is_native_name, native_lines
from .scope import realpath
from .scope import stat as scoped_stat

#: Words in a ``.dist-info`` name that make it worth reading: cuDNN itself and every consumer of the
#: consumer table (its import name and distributions).
_RELEVANT = tuple(sorted({"cudnn", "tf_nightly"} | {c.import_name for c in CONSUMERS if c.import_name}))
#: Files up to this size are hashed (sha256) to decide ownership; larger ones by size only.
HASH_LIMIT_BYTES = 4 << 20
#: A RECORD larger than this is not read (TensorFlow 2.21's, 22,000 rows, is 2.5 MB).
MAX_RECORD_BYTES = 32 << 20
_MAX_LEVELS = 8  # folders walked up from a file looking for a .dist-info


@dataclass(frozen=True)
class RecordEntry:
    """One line of a ``RECORD``: ``path`` relative to the distribution's root folder,
    ``digest`` as written (``"sha256=..."``) or None, ``size`` in bytes or None."""

    path: str
    digest: str | None = None
    size: int | None = None


@dataclass(frozen=True)
class DistRecord:
    """An installed (or predicted) distribution as its ``RECORD`` describes it.

    ``root`` is the absolute folder the ``RECORD`` paths are relative to (the folder that
    holds ``<name>-<version>.dist-info``); ``entries`` are its files.
    """

    name: str
    version: str
    root: str
    entries: tuple[RecordEntry, ...] = ()
    dist_info: str = ""

    @property
    def label(self) -> str:
        return f"{self.name} {self.version}"

    def abspath(self, entry: RecordEntry) -> str:
        return os.path.normpath(os.path.join(self.root, entry.path))


def file_digest(path: str) -> str:
    """``"sha256=<urlsafe base64 without padding>"`` of the file, the form ``RECORD`` uses.

    Raises:
        OSError: the file cannot be read.
    """
    # start-up cost (hashlib loads OpenSSL's libcrypto): a digest is taken only when an ownership
    # question needs the file's bytes, which a check with its file facts cached never asks
    import base64
    import hashlib

    h = hashlib.sha256()
    with open_regular(path) as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return "sha256=" + base64.urlsafe_b64encode(h.digest()).rstrip(b"=").decode("ascii")


# --------------------------------------------------------------------------- pure judgement


def find_overwritten_wheels(distributions: Iterable[DistRecord], observed: Mapping[str, str]) -> tuple[WheelOverwrite, ...]:
    """Files that two or more distributions list at the same absolute place, grouped by the set
    of distributions, with whose files are there now. Pure: no disk access.

    Args:
        distributions: every distribution to consider, with its ``RECORD`` entries.
        observed: ``{absolute path: "sha256=..."}`` of the files as they are now (hash only
            small files; a shared file missing here is simply not decided by its hash).

    Returns:
        One :class:`~cudnn_magic.model.WheelOverwrite` per set of distributions that list the
        same files (``directory`` is the folder holding all those files), sorted by folder.
        ``present`` is the one distribution whose ``RECORD`` digest matches every
        observed file that tells the claimants apart; None (``mixed`` True) when some files
        match one and some another, None (``mixed`` False) when no observed hash decides.
    """
    claims: dict[str, dict[tuple[str, str], RecordEntry]] = {}
    sizes_of: dict[tuple[str, str], list[tuple[str, int]]] = {}  # (name, version) -> [(abspath, bytes)]
    roots: dict[tuple[str, str], str] = {}
    for rec in distributions:
        roots.setdefault((rec.name, rec.version), rec.root)
        for e in rec.entries:
            if ".dist-info/" in e.path.replace(os.sep, "/"):
                continue
            p = rec.abspath(e)
            claims.setdefault(p, {})[(rec.name, rec.version)] = e
            sizes_of.setdefault((rec.name, rec.version), []).append((p, e.size or 0))
    groups: dict[tuple[tuple[str, str], ...], list[str]] = {}
    for path, by_dist in claims.items():
        if len(by_dist) < 2:
            continue
        groups.setdefault(tuple(sorted(by_dist)), []).append(path)
    out: list[WheelOverwrite] = []
    for dists, paths in sorted(groups.items(), key=lambda kv: os.path.commonpath(kv[1])):
        paths.sort()
        directory = os.path.dirname(paths[0]) if len(paths) == 1 else os.path.commonpath(paths)
        evidence: list[str] = []
        agree = {d: 0 for d in dists}
        disagree = {d: 0 for d in dists}
        for p in paths:
            seen = observed.get(p)
            digests = {d: claims[p][d].digest for d in dists}
            if seen is None or len(set(digests.values())) < 2:
                continue  # not hashed, or every claimant wrote the same bytes: decides nothing
            matching = [d for d in dists if digests[d] == seen]
            for d in dists:
                if d in matching:
                    agree[d] += 1
                else:
                    disagree[d] += 1
            who = " and ".join(f"{n} {v}" for n, v in matching) or "no distribution (changed after install)"
            evidence.append(f"{os.path.basename(p)}: sha256 matches the RECORD of {who}")
        winners = [d for d in dists if agree[d] and not disagree[d]]
        decided = any(agree.values()) or any(disagree.values())
        present = winners[0] if len(winners) == 1 else None
        mixed = present is None and sum(1 for d in dists if agree[d]) > 1
        out.append(WheelOverwrite(directory=directory, distributions=dists, present=present, files=tuple(paths),
                                  evidence=tuple(evidence) if decided else (), mixed=mixed,
                                  sizes=tuple(sum(b for p, b in sizes_of.get(d, ()) if p.startswith(directory + os.sep))
                                              for d in dists), site=roots.get(dists[0], "")))
    return tuple(out)


# --------------------------------------------------------------------------- reading RECORDs


def _parse_record_line(line: str) -> RecordEntry | None:
    # RECORD is CSV; paths with commas are quoted (rare). Split from the right: digest, size.
    line = line.rstrip("\r\n")
    if not line:
        return None
    head, sep1, size = line.rpartition(",")
    path, sep2, digest = head.rpartition(",")
    if not sep1 or not sep2:
        return RecordEntry(line)
    if len(path) >= 2 and path[0] == path[-1] == '"':
        path = path[1:-1].replace('""', '"')
    return RecordEntry(path, digest or None, int(size) if size.isdigit() else None)


@lru_cache(maxsize=512)
def _record_bytes(dist_info: str, _stamp: tuple[int, int]) -> bytes | None:
    """The raw ``RECORD`` of ``dist_info`` (None: unreadable, or larger than :data:`MAX_RECORD_BYTES`)."""
    try:
        with open_regular(os.path.join(dist_info, "RECORD")) as fh:
            data = fh.read(MAX_RECORD_BYTES + 1)
    except OSError:
        return None
    return None if len(data) > MAX_RECORD_BYTES else data  # no wheel's is near this (TensorFlow's: 2.5 MB)


def _dist_record(dist_info: str, entries: list[RecordEntry]) -> DistRecord:
    base = os.path.basename(dist_info)[: -len(".dist-info")]
    name, _, version = base.partition("-")
    return DistRecord(name.replace("_", "-").lower(), version, os.path.dirname(dist_info), tuple(entries), dist_info)


@lru_cache(maxsize=512)
def _read_record_cached(dist_info: str, _stamp: tuple[int, int]) -> DistRecord | None:
    data = _record_bytes(dist_info, _stamp)
    if data is None:
        return None
    entries = [e for e in map(_parse_record_line, data.decode("utf-8", "replace").splitlines()) if e is not None]
    return _dist_record(dist_info, entries)


@lru_cache(maxsize=512)
def _read_natives_cached(dist_info: str, _stamp: tuple[int, int]) -> DistRecord | None:
    record = os.path.join(dist_info, "RECORD")
    st = scoped_stat(record)
    known = filefacts.get(record, st, "natives") if st is not None else filefacts.MISSING
    if isinstance(known, list) and all(isinstance(r, list) and len(r) == 3 and isinstance(r[0], str) for r in known):
        return _dist_record(dist_info, [RecordEntry(p, d if isinstance(d, str) else None, n if isinstance(n, int) else None)
                                        for p, d, n in known])
    data = _record_bytes(dist_info, _stamp)
    if data is None:
        return None
    entries = [e for e in (_parse_record_line(line) for _, line in native_lines(data)) if e is not None]
    if st is not None and (st.st_mtime_ns, st.st_size) == _stamp:
        filefacts.put(record, st, "natives", [[e.path, e.digest, e.size] for e in entries])
    return _dist_record(dist_info, entries)


@lru_cache(maxsize=512)
def _ships_cudnn_cached(dist_info: str, _stamp: tuple[int, int]) -> bool:
    data = _record_bytes(dist_info, _stamp)
    if data is None or (b"nvidia/cudnn" not in data and b"libcudnn" not in data):
        return False  # the few bytes tell for nearly every wheel: no row is parsed
    d = _read_record_cached(dist_info, _stamp)
    return d is not None and _ships_cudnn(d)


def _stat_record(dist_info: str) -> tuple[int, int] | None:
    record = os.path.join(dist_info, "RECORD")
    st = scoped_stat(record)  # once per check (probes.scope)
    if st is None:
        return None
    if not stat.S_ISREG(st.st_mode):  # said on every call, not only the first (the answer is cached)
        note_skipped(record, f"not a regular file ({file_kind(st.st_mode)}); nothing was read from it")
        return None
    return (st.st_mtime_ns, st.st_size)


def read_record(dist_info: str) -> DistRecord | None:
    """The distribution a ``*.dist-info`` folder describes (name and version from the folder
    name, per the wheel spec), or None when it has no readable ``RECORD``. Cached until the
    ``RECORD`` changes (mtime, size). Never raises."""
    stamp = _stat_record(dist_info)
    return None if stamp is None else _read_record_cached(dist_info, stamp)


def read_record_natives(dist_info: str) -> DistRecord | None:
    """:func:`read_record` with only the rows that name a native library
    (:func:`cudnn_magic.probes.record_scan.native_lines`): what ownership of a library file needs,
    without parsing the other rows (TensorFlow's 22,000). Never raises."""
    stamp = _stat_record(dist_info)
    return None if stamp is None else _read_natives_cached(dist_info, stamp)


def ships_cudnn(dist_info: str) -> bool:
    """The distribution ships a cuDNN library or writes under ``nvidia/cudnn*`` (:func:`_ships_cudnn`),
    decided without parsing a ``RECORD`` that names neither. Never raises."""
    stamp = _stat_record(dist_info)
    return stamp is not None and _ships_cudnn_cached(dist_info, stamp)


_RELEVANT_RE = re.compile("|".join(map(re.escape, _RELEVANT)))


def _relevant(dist_info: str) -> bool:
    """The ``.dist-info`` name holds a word of :data:`_RELEVANT` (one C-speed search per name: an
    environment of 10,000 distributions is looked through on every check)."""
    return _RELEVANT_RE.search(os.path.basename(dist_info).lower()) is not None


def distributions_in(folder: str, relevant_only: bool = True, natives_only: bool = False) -> list[DistRecord]:
    """Distributions whose ``.dist-info`` lies directly in ``folder`` (a site-packages, a
    ``--target`` folder, an unzipped wheel); ``natives_only``: with only their native-library rows
    (:func:`read_record_natives`). Cached until the folder changes. Never raises."""
    try:
        st = os.stat(folder)
    except OSError:
        return []
    return list(_distributions_in(folder, relevant_only, (st.st_ino, st.st_mtime_ns), natives_only))


@lru_cache(maxsize=256)
def _infos(folder: str, relevant_only: bool, _stamp: tuple[int, int]) -> tuple[str, ...]:
    try:
        infos = sorted(e.path for e in os.scandir(folder) if e.name.endswith(".dist-info") and e.is_dir())
    except OSError:
        return ()
    return tuple(i for i in infos if not relevant_only or _relevant(i))


def _distributions_in(folder: str, relevant_only: bool, _stamp: tuple[int, int], natives_only: bool = False
                      ) -> tuple[DistRecord, ...]:
    read = read_record_natives if natives_only else read_record
    return tuple(d for d in map(read, _infos(folder, relevant_only, _stamp)) if d is not None)


@lru_cache(maxsize=256)
def _record_index(records: tuple[tuple[str, tuple[int, int]], ...]
                  ) -> dict[str, tuple[tuple[DistRecord, RecordEntry], ...]]:
    """``{normalised absolute path: ((distribution, entry), ...)}`` of every native library the
    given ``RECORD`` files list (``(.dist-info, its RECORD's stamp)``, those of one folder),
    built once per set of RECORD states, so looking up a file costs one dictionary access
    instead of a pass over every entry of every distribution."""
    index: dict[str, list[tuple[DistRecord, RecordEntry]]] = {}
    for info, stamp in records:
        dist = _read_natives_cached(info, stamp)
        if dist is None:
            continue
        for e in dist.entries:
            key = os.path.normpath(os.path.join(dist.root, e.path))
            lst = index.setdefault(key, [])
            if all(d is not dist for d, _ in lst):
                lst.append((dist, e))
    return {k: tuple(v) for k, v in index.items()}


def _folder_records(folder: str, st: os.stat_result) -> tuple[tuple[str, tuple[int, int]], ...]:
    """``(.dist-info, RECORD stamp)`` of the relevant distributions in ``folder``."""
    out = []
    for info in _infos(folder, True, (st.st_ino, st.st_mtime_ns)):
        stamp = _stat_record(info)
        if stamp is not None:
            out.append((info, stamp))
    return tuple(out)


def _claimants(path: str) -> list[tuple[DistRecord, RecordEntry]]:
    """Distributions whose RECORD lists ``path`` at its place (walking up from its folder)."""
    norm = os.path.normpath(path)
    if not is_native_name(norm):
        return []  # the index holds native libraries only: every caller asks about one
    d = os.path.dirname(norm)
    for _ in range(_MAX_LEVELS):
        st = scoped_stat(d)
        if st is not None:
            hit = _record_index(_folder_records(d, st)).get(norm)
            if hit:
                return list(hit)
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
    return []


@lru_cache(maxsize=1024)
def _digest_cached(path: str, _stamp: tuple[int, int, int]) -> str | None:
    try:
        return file_digest(path)
    except OSError:
        return None


def digest_if_small(path: str, limit: int = HASH_LIMIT_BYTES) -> str | None:
    """RECORD-style sha256 of ``path`` when it is at most ``limit`` bytes, else None. Cached
    per (inode, mtime, size), also on disk (:mod:`.filefacts`). Never raises."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    if st.st_size > limit:
        return None
    return _digest_kept(path, st)


def _digest_kept(path: str, st: os.stat_result) -> str | None:
    known = filefacts.get(path, st, "sha256") if stat.S_ISREG(st.st_mode) else None
    if isinstance(known, str):
        return known
    value = _digest_cached(path, (st.st_ino, st.st_mtime_ns, st.st_size))
    if value is not None and stat.S_ISREG(st.st_mode):
        filefacts.put(path, st, "sha256", value)
    return value


# --------------------------------------------------------------------------- ownership


@dataclass(frozen=True)
class Ownership:
    """Who owns a file: ``owner`` in the :class:`~cudnn_magic.model.LibraryCopy` form
    ("pip: nvidia-cudnn-jit-cu12 9.27.0.42", "wheel: nvidia-cudnn-jit-cu12 9.12.0.46" outside any
    site-packages (:func:`owner_label`), "conda: cudnn 8.9.7", "deb: libcudnn9-cuda-12",
    "system"), how that was established, the distribution (pip), whether the file's content
    is confirmed to be that distribution's (hash or size matches its ``RECORD``), and every
    distribution whose ``RECORD`` lists the file."""

    owner: str = "system"
    evidence: str | None = None
    dist: DistRecord | None = None
    confirmed: bool = False
    claimants: tuple[str, ...] = ()


def _judge_claim(path: str, claims: list[tuple[DistRecord, RecordEntry]]) -> Ownership:
    labels = tuple(d.label for d, _ in claims)
    try:
        size: int | None = os.path.getsize(path)
    except OSError:
        size = None
    digest = digest_if_small(path)
    status: list[tuple[DistRecord, str]] = []
    for d, e in claims:
        if digest is not None and e.digest:
            status.append((d, "sha256 matches" if e.digest == digest else "differs"))
        elif e.size is not None and size is not None:
            status.append((d, "size matches (not hashed: large file)" if e.size == size else "differs"))
        else:
            status.append((d, "unknown"))

    def also(d: DistRecord) -> str:
        others = [x for x in labels if x != d.label]
        return f"; also listed by {', '.join(others)}" if others else ""

    for how in ("sha256 matches", "size matches (not hashed: large file)"):
        hits = [d for d, st in status if st == how]
        if len(hits) == 1 or (hits and how == "sha256 matches"):
            return Ownership(owner_label(hits[0]), f"RECORD lists it; {how}{also(hits[0])}", hits[0], True, labels)
    if len(claims) == 1:
        d, st = status[0]
        if st == "differs":
            return Ownership(owner_label(d), "RECORD lists it, but the file differs from it (replaced after install)",
                             d, False, labels)
        return Ownership(owner_label(d), "RECORD lists it", d, False, labels)
    if all(st == "differs" for _, st in status):  # no sibling can vouch for a file that is none of theirs
        d = claims[-1][0]
        return Ownership(owner_label(d), f"listed by {', '.join(labels)}, but the file differs from every one of them "
                         "(replaced after install)", d, False, labels)
    # Several claimants and this file's content decides nothing: its small siblings in the same
    # folder (the libcudnn.so.9 shim) were written by the same install; follow their hash.
    folder = os.path.dirname(os.path.normpath(path))
    for d, _e in claims:
        for sib in d.entries:
            sp = d.abspath(sib)
            if os.path.dirname(sp) != folder or sp == os.path.normpath(path) or not sib.digest:
                continue
            sd = digest_if_small(sp)
            if sd is None:
                continue
            if sd == sib.digest:
                return Ownership(owner_label(d), f"listed by {', '.join(labels)}; {os.path.basename(sp)} beside it "
                                 f"matches {d.label}'s RECORD sha256, so this folder holds its files", d, True, labels)
    d = claims[-1][0]
    return Ownership(owner_label(d), f"listed by {', '.join(labels)}; the content here decides none of them",
                     d, False, labels)


def _site_dirs() -> tuple[str, ...]:
    """Every directory on ``sys.path`` (site-packages, a ``pip install --target`` folder on
    ``PYTHONPATH``, a folder a ``.pth`` file adds), in order, once each."""
    out: dict[str, None] = {}
    for p in pyenv.search_path():
        p = os.fspath(p) if isinstance(p, os.PathLike) else p
        if isinstance(p, str) and os.path.isdir(p or os.curdir):
            out.setdefault(os.path.abspath(p or os.curdir), None)
    return tuple(out)


def _stamp(dirs: Iterable[str]) -> tuple[float, ...]:
    out = []
    for d in dirs:
        try:
            out.append(os.stat(d).st_mtime)
        except OSError:
            out.append(0.0)
    return tuple(out)


@lru_cache(maxsize=16)
def _import_dirs(path: tuple[str, ...]) -> frozenset[str]:
    return frozenset(realpath(p) for p in path if p and isinstance(p, str))


def _is_site_dir(folder: str) -> bool:
    """``folder`` is a ``site-packages``/``dist-packages`` (by name), or the real folder of a
    ``sys.path`` entry (a ``pip install --target`` folder on ``PYTHONPATH``: Python imports
    from it and ``pip list`` shows its distributions, as the consumer scan does): a
    distribution whose ``.dist-info`` lies there is installed, not just unpacked somewhere."""
    if os.path.basename(os.path.normpath(folder)) in ("site-packages", "dist-packages"):
        return True
    return realpath(folder) in _import_dirs(tuple(pyenv.search_path()))


def owner_label(dist: DistRecord) -> str:
    """The owner string of a distribution's files: ``"pip: NAME VERSION"`` when its
    ``.dist-info`` lies in a ``site-packages`` or a folder on ``sys.path`` (installed in an
    environment), ``"wheel: NAME VERSION"`` for a ``pip install --target`` folder or an unzipped
    wheel outside any of them (its files are not installed in this environment)."""
    return f"{'pip' if _is_site_dir(dist.root) else 'wheel'}: {dist.label}"


def _copy_of(path: str) -> Ownership | None:
    """A cuDNN file no RECORD lists where it lies, that is a byte copy of an installed wheel's file
    (copied into ``CUDA_HOME/lib64`` or a system folder by hand). One rule for every size: an
    installed cuDNN wheel's RECORD lists a file of the same name and size, and its sha256 (the
    file is read once; cached by inode, size and mtime) matches that RECORD entry."""
    try:
        size = os.path.getsize(path)
    except OSError:
        return None
    sites = _site_dirs()
    by_name = _name_index(sites, _stamp(sites))
    name = os.path.basename(realpath(path))
    cands = [(d, e) for d, e in by_name.get(name, ()) if e.size == size and e.digest]
    if not cands:
        return None
    digest = _digest_any(path)
    hit = next(((d, e) for d, e in cands if e.digest == digest), None)
    if hit is None:
        return None
    d, e = hit
    return Ownership(owner_label(d), f"not listed here; its sha256 matches {d.label}'s {e.path} "
                                        f"(a copy of that wheel's file, installed at {d.root})", d, True, ())


@lru_cache(maxsize=16)
def _name_index(sites: tuple[str, ...], _stamp: tuple[float, ...]) -> dict[str, tuple[tuple[DistRecord, RecordEntry], ...]]:
    """``{file name: ((distribution, entry), ...)}`` of every cuDNN library the cuDNN wheels in
    ``sites`` list."""
    index: dict[str, list[tuple[DistRecord, RecordEntry]]] = {}
    for site in sites:
        for d in distributions_in(site, natives_only=True):
            for e in d.entries:
                base = os.path.basename(e.path)
                if base.startswith("libcudnn"):
                    index.setdefault(base, []).append((d, e))
    return {k: tuple(v) for k, v in index.items()}


def _digest_any(path: str) -> str | None:
    """RECORD-style sha256 of ``path`` whatever its size, cached per (inode, mtime, size)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return _digest_kept(path, st)


def ownership(path: str) -> Ownership:
    """Who owns ``path`` and how we know (see :class:`Ownership`). Never raises."""
    try:
        candidates = [path]
        real = realpath(path)
        if real != path:
            candidates.append(real)
        for p in candidates:
            claims = _claimants(p)
            if claims:
                return _judge_claim(p, claims)
        for p in candidates:
            prefix = _conda_prefix_of(p)
            if prefix:
                rel = os.path.relpath(p, prefix)
                for name, version, files in _conda_files(prefix):
                    if rel in files:
                        return Ownership(f"conda: {name} {version}", "conda-meta files list")
        for p in candidates:
            for name, files in _dpkg_lists():
                if p in files:
                    return Ownership(f"deb: {name}", "dpkg file list")
        if os.path.basename(path).startswith("libcudnn"):
            copy = _copy_of(real)
            if copy is not None:
                return copy
            stray = _not_the_graphs_shim(path)
            if stray is not None:
                return stray
    except Exception:  # noqa: BLE001 - a probe never raises
        pass
    return Ownership()


def _not_the_graphs_shim(path: str) -> Ownership | None:
    """A cuDNN 9 ``libcudnn.so.9`` no RECORD lists, beside a ``libcudnn_graph.so.9`` that a wheel's
    RECORD does list, whose own ``libcudnn.so.9`` entry has another sha256: this shim is not the
    one that release ships (a folder made of two releases' files). None otherwise."""
    name = os.path.basename(path)
    if not name.startswith("libcudnn.so.9"):
        return None
    graph = os.path.join(os.path.dirname(path), "libcudnn_graph.so.9")
    if not os.path.exists(graph):
        return None
    gown = ownership(graph)
    if gown.dist is None or not gown.confirmed:
        return None
    gdir = os.path.dirname(gown.dist.abspath(next(e for e in gown.dist.entries if e.path.endswith("libcudnn_graph.so.9"))))
    entry = next((e for e in gown.dist.entries if gown.dist.abspath(e) == os.path.join(gdir, "libcudnn.so.9")), None)
    digest = digest_if_small(path)
    if entry is None or not entry.digest or digest is None or digest == entry.digest:
        return None
    return Ownership("system", f"no RECORD lists it; the libcudnn_graph.so.9 beside it is {gown.dist.label}'s, whose "
                               "libcudnn.so.9 differs from this file (another release's shim)")


def owner_of(path: str) -> str:
    """Describe the package owning ``path`` ("pip: nvidia-cudnn-cu12 9.3.0.75", "conda: cudnn
    8.9.7", "deb: libcudnn9-cuda-12"; "wheel: nvidia-cudnn-jit-cu12 9.12.0.46" for the files of
    a wheel installed with ``pip install --target`` or unzipped outside any site-packages, by
    the wheel's own ``RECORD``), or "system" when none claims it. Where two pip distributions
    list the file, the one whose ``RECORD`` hash (or size) matches the file wins. Never
    raises."""
    return ownership(path).owner


@lru_cache(maxsize=8)
def _conda_files(prefix: str) -> tuple[tuple[str, str, frozenset[str]], ...]:
    out = []
    for meta in glob.glob(os.path.join(prefix, "conda-meta", "*.json")):
        base = os.path.basename(meta)
        if not _RELEVANT_RE.search(base.lower()):
            continue
        try:
            data = load_json_regular(meta, 64 << 20)
        except (OSError, ValueError):
            continue
        out.append((str(data.get("name", base)), str(data.get("version", "")), frozenset(data.get("files", ()))))
    return tuple(out)


@lru_cache(maxsize=1)
def _dpkg_lists() -> tuple[tuple[str, frozenset[str]], ...]:
    out = []
    for lst in glob.glob("/var/lib/dpkg/info/*cudnn*.list"):
        try:
            files = frozenset(read_regular(lst, 64 << 20).decode("utf-8", "replace").split("\n")) - {""}
        except OSError:
            continue
        out.append((os.path.basename(lst)[: -len(".list")].split(":")[0], files))
    return tuple(out)


def _conda_prefix_of(path: str) -> str | None:
    d = os.path.dirname(path)
    for _ in range(4):
        if os.path.isdir(os.path.join(d, "conda-meta")):
            return d
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
    return None


def pip_version_of(owner: str) -> str | None:
    """The version part of a "pip: name version" or "wheel: name version" owner string, else
    None."""
    if owner.startswith(("pip: ", "wheel: ")):
        bits = owner.split()
        return bits[-1] if len(bits) >= 3 else None
    return None


# --------------------------------------------------------------------------- overwritten wheels


def _ships_cudnn(d: DistRecord) -> bool:
    """``d`` ships a cuDNN library (``libcudnn*``, vendored copies included) or writes under ``nvidia/cudnn*``."""
    for e in d.entries:
        p = e.path.replace(os.sep, "/")
        if p.startswith("nvidia/cudnn") or p.rpartition("/")[2].startswith("libcudnn"):
            return True
    return False


def probe_overwritten_wheels(folders: Iterable[str] | None = None) -> tuple[tuple[WheelOverwrite, ...], list[str]]:
    """Overwritten cuDNN wheels in ``folders`` (default: every ``site-packages`` on
    ``sys.path``): reads the relevant ``RECORD`` files, hashes the shared files of at most
    :data:`HASH_LIMIT_BYTES`, and judges with :func:`find_overwritten_wheels`. Returns the
    overwrites and notes. Never raises."""
    notes: list[str] = []
    out: list[WheelOverwrite] = []
    try:
        for folder in dict.fromkeys(folders if folders is not None else _site_dirs()):
            # only wheels that ship a cuDNN library or write nvidia/cudnn*: not every distribution
            # with "cudnn" in some file name (TensorFlow's 22,000-row RECORD, this package itself)
            try:
                st = os.stat(folder)
            except OSError:
                continue
            infos = [i for i in _infos(folder, True, (st.st_ino, st.st_mtime_ns)) if ships_cudnn(i)]
            dists = [d for d in map(read_record, infos) if d is not None]
            if len(dists) < 2:
                continue
            places: dict[str, int] = {}  # relative paths: every RECORD here is relative to the same folder
            for d in dists:
                for e in d.entries:
                    places[e.path] = places.get(e.path, 0) + 1
            observed: dict[str, str] = {}
            for rel, n in places.items():
                if n > 1 and ".dist-info" not in rel:
                    p = os.path.normpath(os.path.join(folder, rel))
                    digest = digest_if_small(p)
                    if digest is not None:
                        observed[p] = digest
            out.extend(find_overwritten_wheels(dists, observed))
    except Exception as exc:  # noqa: BLE001
        notes.append(f"overwritten-wheel check failed: {type(exc).__name__}: {exc}")
    return tuple(out), notes
