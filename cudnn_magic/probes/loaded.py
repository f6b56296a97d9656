"""The cuDNN libraries mapped into THIS process: each file's own version, the version calls
through it reach, and the copy a library linking cuDNN by soname binds to.

* Which files, in load order: every ``libcudnn*`` object in ``dl_iterate_phdr`` (glibc's list
  of loaded objects, in the order they were loaded), plus any other ``libcudnn*`` file in
  ``/proc/self/maps``. Paths are real paths (symlinks resolved).
* Each file's own version comes from the file (:func:`~.installed.static_version`: its name,
  the version constant a sub-library carries, the owning wheel's ``RECORD`` hash, the
  ``libcudnn_graph`` beside it, ``cudnn_version.h``), or from a child process that loads that
  folder alone -- never from a call in this process. Why: cuDNN 9's ``libcudnn.so.9`` is a
  small shim that opens ``libcudnn_graph.so.9`` by soname, and glibc hands back the object
  with that soname that is already loaded (``dlopen(3)``), so a second copy's shim answers
  ``cudnnGetVersion`` with the first copy's number (measured with the real jit wheels: 9.12
  loaded first, the 9.27 shim answers 91200; alone it answers 92700).
* The version calls through a copy reach (``LibraryCopy.reached_version``):
  ``cudnnGetProperty``/``cudnnGetVersion`` through an ``RTLD_NOLOAD`` handle of that copy
  (``dlopen`` returns the mapped object or fails; it never maps a new one), asked only when the
  sub-library that answers is already mapped (a shim without it ABORTS the process on its
  first call, docs/facts.md).
* The cuDNN in use (:class:`~cudnn_magic.model.CudnnInUse`): a library that links
  ``libcudnn.so.N`` by soname gets, for its ``DT_NEEDED``, the first loaded object with that
  soname, and its symbol references are looked up in the global scope first (``ld.so(8)``,
  ``dlopen(3)`` ``RTLD_GLOBAL``; ``RTLD_DEEPBIND`` aside). So: the definition
  ``dlvsym(RTLD_DEFAULT, "cudnnGetVersion", "libcudnn.so.N")`` finds (``dladdr`` names its
  file) when one is in the global scope, else the first copy loaded. Nothing is loaded to
  find out.
"""

from __future__ import annotations

import ctypes
import dataclasses
import os
import sys
from dataclasses import dataclass, field

from ..model import CudnnInUse, LibraryCopy
from ..rules.cudnn_version import CudnnVersion, try_parse
from ..util.files import regular_or_reason
from . import libnames
from .elf import NotElf, read_dynamic, symbol_slots
from .installed import static_version
from .loader import environ_at_start
from .owners import ownership
from .replaced import MappedObject, mapped_objects, mapped_version
from .subprocess_probe import query_versions


class _DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]


def loaded_objects() -> list[str]:
    """Names of every object loaded in this process, in load order (``dl_iterate_phdr``; the
    main program's empty name skipped). Raises OSError/AttributeError where libc lacks it."""
    class DlPhdrInfo(ctypes.Structure):
        _fields_ = [("dlpi_addr", ctypes.c_void_p), ("dlpi_name", ctypes.c_char_p),
                    ("dlpi_phdr", ctypes.c_void_p), ("dlpi_phnum", ctypes.c_uint16)]

    names: list[str] = []
    cb_type = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(DlPhdrInfo), ctypes.c_size_t, ctypes.c_void_p)

    def cb(info, _size, _data):  # type: ignore[no-untyped-def]
        name = info.contents.dlpi_name
        if name:
            names.append(os.fsdecode(name))
        return 0

    libc = ctypes.CDLL(None)
    libc.dl_iterate_phdr(cb_type(cb), None)
    return names


_dl_iterate_phdr = loaded_objects  # the name older callers used


def _load_bases() -> dict[str, int]:
    """``{real path: load base}`` of every loaded object (``dl_iterate_phdr``'s ``dlpi_addr``)."""
    class DlPhdrInfo(ctypes.Structure):
        _fields_ = [("dlpi_addr", ctypes.c_void_p), ("dlpi_name", ctypes.c_char_p),
                    ("dlpi_phdr", ctypes.c_void_p), ("dlpi_phnum", ctypes.c_uint16)]

    out: dict[str, int] = {}
    cb_type = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(DlPhdrInfo), ctypes.c_size_t, ctypes.c_void_p)

    def cb(info, _size, _data):  # type: ignore[no-untyped-def]
        name = info.contents.dlpi_name
        if name:
            out.setdefault(os.path.realpath(os.fsdecode(name)), info.contents.dlpi_addr or 0)
        return 0

    ctypes.CDLL(None).dl_iterate_phdr(cb_type(cb), None)
    return out


def bound_cudnn(library: str, prefix: str = "cudnn") -> dict[str, tuple[str, ...]] | None:
    """Where the already-loaded ``library``'s cuDNN calls are bound now: ``{file: symbols}``,
    read from its GOT slots in this process (the relocation offsets from the file, the load
    base from ``dl_iterate_phdr``, each slot's address named by ``dladdr``). A slot still
    pointing into ``library`` itself (lazy binding, never called) is left out: it will bind by
    glibc's rules on its first call. None when ``library`` is not loaded or cannot be read.
    Loads nothing; never raises."""

    try:
        real = os.path.realpath(library)
        base = _load_bases().get(real)
        if base is None:
            return None
        slots, loads = symbol_slots(real, prefix)
        libc = ctypes.CDLL(None)
        libc.dladdr.argtypes = [ctypes.c_void_p, ctypes.POINTER(_DlInfo)]
        out: dict[str, list[str]] = {}
        for name, off in slots:
            if not any(v <= off and off + 8 <= v + m for v, m in loads):
                continue  # not inside a loaded segment: never read it
            value = ctypes.c_uint64.from_address(base + off).value
            info = _DlInfo()
            if not value or not libc.dladdr(ctypes.c_void_p(value), ctypes.byref(info)) or not info.dli_fname:
                continue
            target = os.path.realpath(os.fsdecode(info.dli_fname))
            if target == real:
                continue  # the PLT stub: not bound yet
            out.setdefault(target, [])
            if name not in out[target]:
                out[target].append(name)
        return {k: tuple(v) for k, v in out.items()}
    except (OSError, NotElf, ValueError, AttributeError):
        return None


def mapped_cudnn_paths(maps_path: str = "/proc/self/maps") -> tuple[list[str], str | None]:
    """Real paths of every mapped ``libcudnn*`` file, in load order (``dl_iterate_phdr``; a
    file only ``/proc/self/maps`` shows comes last), each mapped file once (a file replaced on disk
    since, whose mapping ``/proc/self/maps`` names by a stash path, is the path it was loaded by:
    :func:`~.replaced.mapped_objects`), and a note when a source could not be read. Never raises."""
    objects, notes = mapped_objects(maps_path)
    return list(dict.fromkeys(o.path for o in objects)), "; ".join(notes) or None


def _answering_sublib(major: int | None, mapped_names: set[str]) -> bool:
    """Is the sub-library that answers version calls already mapped?"""
    if major is None:
        return False
    if major >= 9:
        return any(n.startswith(f"libcudnn_graph.so.{major}") for n in mapped_names)
    if major == 8:
        return any(n.startswith(("libcudnn_ops_infer.so", "libcudnn_ops.so")) for n in mapped_names)
    return True  # cuDNN 7 and older: one monolithic library


def safe_to_call_mapped_cudnn(maps_path: str = "/proc/self/maps") -> tuple[bool, str]:
    """(True, "") when every cuDNN main library mapped here already has the sub-library that
    answers its calls mapped too, so a version call through a framework (``torch.backends.cudnn
    .version()``) cannot make the shim open one: a shim whose graph library is missing ABORTS the
    process on its first call ("Invalid handle. Cannot load symbol cudnnGetVersion"). Else (False,
    why). Right after ``import torch`` only the shim is mapped, so this says False until the first
    cuDNN call of the user's own code. Never raises."""
    try:
        paths, _ = mapped_cudnn_paths(maps_path)
    except Exception as exc:  # noqa: BLE001
        return False, f"the mapped libraries could not be read ({exc})"
    names = {os.path.basename(p) for p in paths}
    for p in paths:
        parsed = libnames.parse_name(os.path.basename(p))
        if parsed and parsed[0] == "cudnn" and not _answering_sublib(parsed[1], names):
            return False, (f"{p} is mapped without the sub-library that answers its calls; asking it would make it "
                           "open one here (a shim whose libcudnn_graph is missing aborts the process)")
    return True, ""


def _answering_sublib_beside(path: str) -> bool:
    """Is the sub-library that answers this main library's version calls in its folder on disk
    (``libcudnn_graph.so.9`` for 9.x, ``libcudnn_ops_infer.so.8``/``libcudnn_ops.so.8`` for 8.x)?"""
    parsed = libnames.parse_name(os.path.basename(path))
    major = parsed[1] if parsed else None
    if major is None or major < 8:
        return True
    d = os.path.dirname(path)
    names = (f"libcudnn_graph.so.{major}",) if major >= 9 else ("libcudnn_ops_infer.so.8", "libcudnn_ops.so.8")
    return any(os.path.exists(os.path.join(d, n)) for n in names)


def _noload_query(path: str) -> tuple[CudnnVersion | None, str | None]:
    """Ask the mapped copy at ``path`` through an ``RTLD_NOLOAD`` handle."""
    mode = getattr(os, "RTLD_NOLOAD", 4) | getattr(os, "RTLD_LAZY", 1)
    why = regular_or_reason(path)  # a path not matched by name is opened first, and a FIFO blocks that open
    if why is not None and os.path.lexists(path):  # a mapped file deleted since is still matched by name
        return None, f"not opened: {why}"
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


def global_definition(symbol: str = "cudnnGetVersion", version_name: str | None = None) -> str | None:
    """Real path of the file whose ``symbol`` the global scope resolves to
    (``dlvsym(RTLD_DEFAULT, symbol, version_name)``, or ``dlsym`` without a version, then
    ``dladdr``), or None when no object in the global scope defines it. Loads nothing; never
    raises."""
    try:
        libc = ctypes.CDLL(None)
        addr = None
        if version_name is not None and hasattr(libc, "dlvsym"):
            libc.dlvsym.restype = ctypes.c_void_p
            libc.dlvsym.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p]
            addr = libc.dlvsym(None, symbol.encode(), version_name.encode())
        if not addr and version_name is None:
            libc.dlsym.restype = ctypes.c_void_p
            libc.dlsym.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
            addr = libc.dlsym(None, symbol.encode())
        if not addr:
            return None
        info = _DlInfo()
        libc.dladdr.argtypes = [ctypes.c_void_p, ctypes.POINTER(_DlInfo)]
        if not libc.dladdr(ctypes.c_void_p(addr), ctypes.byref(info)) or not info.dli_fname:
            return None
        fname: bytes = info.dli_fname
        return os.path.realpath(os.fsdecode(fname))
    except Exception:  # noqa: BLE001
        return None


def _elf_soname(path: str) -> str:
    try:
        so = read_dynamic(path).soname
    except (OSError, NotElf):
        so = None
    return so or libnames.soname_of(os.path.basename(path))


def _versioned_sublib_unmapped(shim: str, version: str | None, mapped: set[str]) -> str | None:
    """A shim opens ``libcudnn_graph.so.<its full version>`` first, then ``.<major.minor>``,
    then the soname (docs/facts.md "cuDNN on a machine without a GPU", seen under ``LD_DEBUG``). A
    file by such a longer name beside it that is not mapped would be loaded anew by a call: return
    it (then the call is not made here)."""
    v = try_parse(version) if version else None
    if v is None:
        return None
    d = os.path.dirname(shim)
    for suffix in (str(v), v.short()):
        cand = os.path.join(d, f"libcudnn_graph.so.{suffix}")
        if os.path.exists(cand) and os.path.realpath(cand) not in mapped:
            return cand
    return None


@dataclass
class MappedState:
    """What :func:`probe_mapped` found: the mapped copies (load order), the copy in use per
    soname (newest major first), and what could not be read."""

    copies: tuple[LibraryCopy, ...] = ()
    in_use: tuple[CudnnInUse, ...] = ()
    notes: list[str] = field(default_factory=list)


def _ld_entry(directory: str, ld_library_path: str) -> str | None:
    real = os.path.realpath(directory)
    for e in ld_library_path.split(":"):
        if e and os.path.realpath(e) == real:
            return e
    return None


def mapped_copies(paths: list[str], objects: list[MappedObject] | None = None) -> list[LibraryCopy]:
    """Each mapped file (real paths, load order) as a :class:`LibraryCopy` with its own version
    read from the file (:func:`~.installed.static_version`), or, for a main library whose file does
    not say or whose first call could abort, from a child process that loads its folder alone.
    A path whose file was replaced on disk since it was mapped (``objects``, this process's:
    :func:`~.replaced.mapped_objects`) gets the mapped copy's own release
    (:func:`~.replaced.mapped_version`), owner "unknown", and ``replaced`` with the release the
    file there now holds. ``reached_version`` and ``bound_to`` are left to the caller. Never
    raises."""
    copies: list[LibraryCopy] = []
    child_needed: list[int] = []
    gone = {o.path: o for o in objects or () if o.replaced}
    for i, p in enumerate(paths):
        name = os.path.basename(p)
        if p in gone:
            copies.append(replaced_copy(gone[p], objects or [], i))
            continue
        own = ownership(p)
        version, vsource = static_version(p, own.owner, own)
        copies.append(LibraryCopy(
            path=p, name=name, soname=_elf_soname(p), version=version, version_source=vsource,
            owner=own.owner, source="mapped", loaded=True, is_main=libnames.is_main(name),
            owner_evidence=own.evidence, load_order=i,
        ))
        if libnames.is_main(name) and (version is None or not _answering_sublib_beside(p)):
            child_needed.append(i)  # unknown, or a copy whose first call may abort: see what it does alone
    if child_needed:
        results = query_versions([copies[i].path for i in child_needed], alone=True)
        for i in child_needed:
            c = copies[i]
            r = results.get(c.path)
            if r is None:
                continue
            v = try_parse(r.version) if r.version is not None else None
            if v is not None and c.version is None:
                copies[i] = dataclasses.replace(c, version=str(v), version_source=(
                    "cudnnGetVersion in a child process that loads this folder alone"))
            elif r.error:
                copies[i] = dataclasses.replace(c, error=r.error)
    return copies


def replaced_copy(obj: MappedObject, objects: list[MappedObject], order: int, pid: int | None = None,
                  root: str = "") -> LibraryCopy:
    """A mapped file whose path now holds another file (or none): the mapped copy's own release
    (:func:`~.replaced.mapped_version`, with ``pid`` and ``root`` for another process), and what is
    there now (read from the new file at ``root + path``, as what a restart would map from that
    path). Never raises."""
    name = os.path.basename(obj.loaded_as)
    version, how = mapped_version(obj, objects, pid=pid, root=root)
    now = None
    here = root + obj.path
    if os.path.exists(here):
        own = ownership(here)
        now, _src = static_version(here, own.owner, own)
    there = (f"; the file there now is cuDNN {now}" if now else
             "; no file is there now" if not os.path.exists(here) else "; the release of the file there now is unknown")
    return LibraryCopy(
        path=obj.path, name=name, soname=libnames.soname_of(name), version=version,
        version_source=how if version else None, owner="unknown", source="mapped", loaded=True,
        is_main=libnames.is_main(name), error=None if version else f"release of the mapped copy unknown: {how}",
        owner_evidence="not read: the file at this path is no longer the one mapped", load_order=order,
        replaced=(obj.replaced or "replaced on disk") + there)


def probe_mapped(maps_path: str = "/proc/self/maps", ld_library_path: str | None = None) -> MappedState:
    """Every mapped ``libcudnn*`` file as a :class:`LibraryCopy` (``loaded=True``, in load
    order) with its own version, the version calls through it reach, and the sub-libraries it
    is bound to; and the copy in use for each soname. Never raises.

    Args:
        maps_path: the process's memory map (``/proc/self/maps``).
        ld_library_path: ``LD_LIBRARY_PATH`` as the loader read it at process start, to name
            the entry a copy came from (default: this process's start value).
    """
    st = MappedState()
    if not sys.platform.startswith("linux"):
        st.notes.append(f"mapped-library probe unavailable on this platform ({sys.platform})")
        return st
    if ld_library_path is None:
        start = environ_at_start()
        ld_library_path = (start if start is not None else os.environ).get("LD_LIBRARY_PATH", "")
    objects, obj_notes = mapped_objects(maps_path)
    st.notes += obj_notes
    paths = list(dict.fromkeys(o.path for o in objects))
    loaded_as = {o.path: o.loaded_as for o in objects}
    mapped = set(paths)
    names = {os.path.basename(p) for p in paths}
    copies = mapped_copies(paths, objects)
    # The version calls through each main library reach, asked in this process only when safe.
    own_neighbour: set[str] = set()  # shims that would open a graph by a longer name beside them
    asked = False  # whether a version call was made here (only then can the mapped set have changed)
    for i, c in enumerate(copies):
        if not c.is_main or (c.error and not c.replaced):
            continue
        parsed = libnames.parse_name(c.name)
        major = parsed[1] if parsed else None
        if not _answering_sublib(major, names):
            continue  # its first call would load (or fail to load) a sub-library: not made here
        longer = _versioned_sublib_unmapped(c.path, c.version, mapped)
        if longer:
            st.notes.append(f"{c.path}: not asked in this process (its first call could load {longer})")
            own_neighbour.add(c.path)
            continue
        asked = True
        v, err = _noload_query(loaded_as.get(c.path, c.path))  # the name glibc holds: matched, nothing opened
        if v is not None and c.replaced and c.version is None:  # nothing else speaks for the mapped copy
            copies[i] = dataclasses.replace(c, reached_version=str(v), version=str(v), error=None, version_source=(
                "cudnnGetVersion through the mapped copy (RTLD_NOLOAD handle; the file on disk was replaced)"))
        elif v is not None:
            copies[i] = dataclasses.replace(c, reached_version=str(v))
        elif err:
            st.notes.append(f"{c.path}: {err}")
    # honesty: say so if a call here made a shim open a sub-library (read again only after a
    # call: without one, nothing of this process's own doing can have mapped a library since)
    for p in [o.path for o in mapped_objects(maps_path)[0]] if asked else ():
        if p not in mapped:
            st.notes.append(f"the version query made a shim open {p}")
    copies = _bind_sublibraries(copies, own_neighbour)
    st.copies = tuple(copies)
    st.in_use = in_use(copies, ld_library_path)
    return st


def _bind_sublibraries(copies: list[LibraryCopy], unbound: set[str] = frozenset()) -> list[LibraryCopy]:  # type: ignore[assignment]
    """``bound_to`` for each main library: per sub-library soname, the mapped file its calls
    reach. For ``libcudnn_graph``: the mapped graph whose own version is the version the
    calls reach (measured), the first loaded among equals; unasked: the first loaded with that
    soname (glibc reuses it). The other sub-libraries follow where the graph was found: the
    shim's own folder when its graph is its neighbour, else the first loaded of each soname.
    Shims in ``unbound`` (their first call would open an unmapped file by a longer name) get
    none: what they will bind is that file, not a mapped one."""
    subs = [c for c in copies if not c.is_main]
    out: list[LibraryCopy] = []
    for c in copies:
        if not c.is_main or c.path in unbound:
            out.append(c)
            continue
        parsed = libnames.parse_name(c.name)
        major = parsed[1] if parsed else None
        graph_so = f"libcudnn_graph.so.{major}"
        graphs = [s for s in subs if s.soname == graph_so]
        graph: LibraryCopy | None = None
        if c.reached_version is not None:
            same = [g for g in graphs if g.version == c.reached_version]
            graph = same[0] if same else None
        elif graphs:
            graph = graphs[0]
        bound: list[str] = []
        own_dir = graph is not None and graph.directory == c.directory
        for so in dict.fromkeys(s.soname for s in subs if s.soname.endswith(f".so.{major}")):
            if so == graph_so:
                if graph is not None:
                    bound.append(graph.path)
                continue
            cands = [s for s in subs if s.soname == so]
            pick = next((s for s in cands if s.directory == c.directory), None) if own_dir else None
            bound.append((pick or cands[0]).path)
        out.append(dataclasses.replace(c, bound_to=tuple(bound)))
    return out


def in_use(copies: list[LibraryCopy] | tuple[LibraryCopy, ...], ld_library_path: str = "",
           this_process: bool = True, order: str = "its link map") -> tuple[CudnnInUse, ...]:
    """The copy a library linking ``libcudnn.so.N`` by soname binds to, per soname mapped
    (newest major first), by glibc's rules (module docstring), measured in this process with
    ``dlvsym(RTLD_DEFAULT, ...)``/``dladdr`` over ``copies`` (mapped, in load order).

    ``this_process=False``: the copies are another process's (``/proc/PID/maps``); its global
    scope cannot be asked from outside, so the rule's second half decides (the first copy loaded
    with that soname, by ``order``: where the load order was read), and ``why`` says what could
    not be read."""
    out: list[CudnnInUse] = []
    mains = [c for c in copies if c.is_main]
    for so in sorted({c.soname for c in mains}, key=lambda s: -_major(s)):
        same = [c for c in mains if c.soname == so]
        first = same[0]
        glob_path = global_definition("cudnnGetVersion", so) if this_process else None
        pick = next((c for c in same if c.path == glob_path), None)
        if pick is not None:
            why = (f"dlvsym(RTLD_DEFAULT, \"cudnnGetVersion\", \"{so}\") resolves to it: it is in the global scope "
                   f"(loaded with RTLD_GLOBAL), which glibc searches first, so a library that links {so} binds its "
                   "cuDNN calls there")
            if pick is not first:
                why += (f" (its {so} dependency itself is {first.path}, the first {so} loaded, but the symbols come from "
                        "the global scope)")
        else:
            pick = first
            others = len(same) - 1
            if this_process:
                why = (f"it is the first {so} loaded in this process (dl_iterate_phdr order) and none is in the global "
                       f"scope; glibc reuses an already loaded object with the soname {so}, so a library that links it "
                       "binds there" + (f" ({others} other cop{'y' if others == 1 else 'ies'} mapped)" if others else ""))
            elif others:
                why = (f"it is the first of {others + 1} copies of {so} loaded in that process (order read from {order}); "
                       f"glibc reuses an already loaded object with the soname {so}, so a library that links it binds "
                       "there, unless a later copy was loaded with RTLD_GLOBAL (the global scope of another process "
                       "cannot be read from outside)")
            else:
                why = (f"it is the only {so} mapped in that process; glibc reuses an already loaded object with the "
                       f"soname {so}, so a library that links it binds there")
        entry = _ld_entry(pick.directory, ld_library_path)
        if entry is not None:
            why += f"; the file lies in LD_LIBRARY_PATH entry {entry}"
        graphs = [b for b in pick.bound_to if "libcudnn_graph" in os.path.basename(b)]
        if pick.reached_version and pick.version and pick.reached_version != pick.version and graphs:
            why += (f"; its calls reach {graphs[0]} ({pick.reached_version}), the libcudnn_graph loaded first")
        out.append(CudnnInUse(path=pick.path, version=pick.version, why=why, soname=so,
                              reached_version=pick.reached_version, sublibraries=pick.bound_to,
                              ld_library_path_entry=entry))
    return tuple(out)


def _major(soname: str) -> int:
    p = libnames.parse_name(soname)
    return p[1] if p and p[1] is not None else -1


def probe_loaded(maps_path: str = "/proc/self/maps") -> tuple[tuple[LibraryCopy, ...], list[str]]:
    """Every mapped ``libcudnn*`` file as a :class:`LibraryCopy` (``loaded=True``, load order)
    and notes; see :func:`probe_mapped` (which also gives the copy in use). Never raises."""
    st = probe_mapped(maps_path)
    return st.copies, st.notes


def load_like_a_framework(path: str) -> str | None:
    """Load ``path`` into this process the way a framework does (``dlopen`` with
    ``RTLD_GLOBAL``, then one ``cudnnGetVersion`` call, as ``torch.backends.cudnn.version()``
    does), after checking in a child process that doing so will not abort this process.

    Returns None on success, else the reason it was not loaded. Never raises.
    """

    if not os.path.exists(path):
        return "no such file"
    r = query_versions([path])[path]
    if r.error:
        return f"not loaded: in a child process it failed: {r.error}"
    why = regular_or_reason(path)  # checked again just before the dlopen: a FIFO blocks it
    if why is not None:
        return f"not loaded: {why}"
    try:
        lib = ctypes.CDLL(path, mode=getattr(os, "RTLD_GLOBAL", 256) | getattr(os, "RTLD_NOW", 2))
        fn = lib.cudnnGetVersion
        fn.restype = ctypes.c_size_t
        fn()
    except (OSError, AttributeError) as exc:
        return str(exc)
    return None
