"""cuDNN files mapped in THIS process that are no longer the files at their paths, and the release
of the copy really mapped.

``%pip install -U nvidia-cudnn-cu12`` (or a reinstall) in a kernel that already mapped cuDNN does
not change what the kernel runs: pip removes the old files (an upgrade in site-packages first renames
them into a stash folder beside them, ``nvidia/cudnn/~ib/``, then deletes it; ``--target --upgrade``
deletes the old folder and moves the new one in; measured with pip 23 and 25) and writes new ones,
while the mappings keep the old inodes alive. ``/proc/self/maps`` then names the mapping
``<old or stash path> (deleted)`` (proc(5)), glibc's link map still holds the name the object was
loaded by, and that path now holds the NEW release. So a file's facts are read from the file at its
path only when that file is the one mapped (same device and inode, not deleted, not renamed).

The release of a replaced copy is read from the copy itself:

* ``/proc/self/map_files/<range>`` opens the very file a mapping holds, when the kernel lets this
  process open it: with CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE in the initial user namespace
  (proc(5); ``proc_map_files_get_link`` in ``fs/proc/base.c``). Measured on Linux 6.18: root
  with its full capability set opens it; ``nobody`` (``setpriv --reuid``) reads the link's name but
  the open fails with EPERM; root in a container without CAP_SYS_ADMIN does too.
* Else from the mapped bytes: the sub-library's ``cudnn_<stem>_version`` constant read from memory
  at the address ``dlsym`` gives on an ``RTLD_NOLOAD`` handle of the object (opened by the very
  name glibc's link map holds, so glibc matches it by name and opens no file), checked to lie inside
  that object's own mappings.

cuDNN 9's ``libcudnn.so.9`` is a shim with no version of its own: its release is the mapped
``libcudnn_graph`` loaded from the same folder. Nothing here loads a library; nothing raises.

Another process (``cudnn-magic check --pid``): :func:`mapped_version` with its ``pid`` reads the
mapped file through ``/proc/PID/map_files`` under the same capability rule, and never its memory.
"""

from __future__ import annotations

import ctypes
import os
from dataclasses import dataclass

from . import libnames
from .libnames import decode_embedded, embedded_version_in

_DELETED = " (deleted)"


@dataclass(frozen=True)
class MappedObject:
    """One object mapped in this process.

    Attributes:
        path: real path of the name it was loaded by (symlinks resolved now).
        loaded_as: that name as glibc's link map holds it (``dl_iterate_phdr``'s ``dlpi_name``);
            the path itself for a file only ``/proc/self/maps`` shows.
        shown: the name ``/proc/self/maps`` gives its mapping, `` (deleted)`` kept.
        ranges: its mappings' address ranges, ``"start-end"`` in hex as the kernel writes them.
        replaced: why the file at ``path`` is not the one mapped (one sentence), or None when it is.
    """

    path: str
    loaded_as: str
    shown: str
    ranges: tuple[str, ...] = ()
    replaced: str | None = None


@dataclass(frozen=True)
class _Mapping:
    start: int
    end: int
    dev: tuple[int, int]
    inode: int
    shown: str


class _Phdr(ctypes.Structure):
    _fields_ = [("p_type", ctypes.c_uint32), ("p_flags", ctypes.c_uint32), ("p_offset", ctypes.c_uint64),
                ("p_vaddr", ctypes.c_uint64), ("p_paddr", ctypes.c_uint64), ("p_filesz", ctypes.c_uint64),
                ("p_memsz", ctypes.c_uint64), ("p_align", ctypes.c_uint64)]


class _PhdrInfo(ctypes.Structure):
    _fields_ = [("dlpi_addr", ctypes.c_void_p), ("dlpi_name", ctypes.c_char_p),
                ("dlpi_phdr", ctypes.POINTER(_Phdr)), ("dlpi_phnum", ctypes.c_uint16)]


def link_map() -> list[tuple[str, int]]:
    """(name, an address inside its first ``PT_LOAD`` segment) of every loaded object, in load
    order (``dl_iterate_phdr``; the main program's empty name skipped; 64-bit ELF only). Raises
    OSError/AttributeError where libc lacks it."""
    out: list[tuple[str, int]] = []
    cb_type = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(_PhdrInfo), ctypes.c_size_t, ctypes.c_void_p)

    def cb(info, _size, _data):  # type: ignore[no-untyped-def]
        i = info.contents
        if i.dlpi_name:
            addr = 0
            for k in range(i.dlpi_phnum):
                if i.dlpi_phdr[k].p_type == 1:  # PT_LOAD
                    addr = (i.dlpi_addr or 0) + i.dlpi_phdr[k].p_vaddr
                    break
            out.append((os.fsdecode(i.dlpi_name), addr))
        return 0

    ctypes.CDLL(None).dl_iterate_phdr(cb_type(cb), None)
    return out


def _maps(maps_path: str) -> list[_Mapping]:
    """Every ``libcudnn*`` mapping of a process (its ``maps`` file), in address order."""
    out: list[_Mapping] = []
    with open(maps_path, "rb") as fh:
        for line in fh:
            if b"libcudnn" not in line:
                continue
            parts = line.rstrip(b"\n").split(None, 5)
            if len(parts) < 6 or not parts[5].startswith(b"/"):
                continue
            try:
                lo, hi = (int(x, 16) for x in parts[0].split(b"-"))
                major, minor = (int(x, 16) for x in parts[3].split(b":"))
                out.append(_Mapping(lo, hi, (major, minor), int(parts[4]), os.fsdecode(parts[5])))
            except ValueError:
                continue
    return out


def _why_replaced(path: str, m: _Mapping) -> str | None:
    """Why the file at ``path`` is not the file mapped by ``m``, or None when it is (one sentence)."""
    shown = m.shown.removesuffix(_DELETED)
    try:
        st = os.stat(path)
    except OSError:
        return f"{path} was removed from disk since it was mapped (/proc/self/maps: {m.shown})"
    if (os.major(st.st_dev), os.minor(st.st_dev)) == m.dev:  # same file system: the inode decides
        if st.st_ino == m.inode:
            return None
        return (f"the file at {path} is another file (inode {st.st_ino}) than the one mapped (inode {m.inode}, "
                f"/proc/self/maps: {m.shown})")
    # Another device number (overlayfs shows the real file's device in maps, its own in stat): the
    # kernel's own marks decide.
    if m.shown.endswith(_DELETED):
        return f"the file it was loaded from was deleted or replaced on disk since it was mapped (/proc/self/maps: {m.shown})"
    if os.path.realpath(shown) != path:
        return f"the mapped file now lies at {shown}, not at {path}"
    return None


def mapped_objects(maps_path: str = "/proc/self/maps") -> tuple[list[MappedObject], list[str]]:
    """Every mapped ``libcudnn*`` object (load order; an object only ``/proc/self/maps`` shows
    comes last), each once, with whether the file at its path is still the one mapped; and notes
    for what could not be read. Never raises."""
    notes: list[str] = []
    try:
        maps = _maps(maps_path)
    except OSError as exc:
        maps = []
        notes.append(f"{maps_path} unreadable ({exc.strerror or exc}); used dl_iterate_phdr")
    try:
        objects = link_map()
    except Exception as exc:  # noqa: BLE001
        objects = []
        notes.append(f"dl_iterate_phdr failed ({exc}); load order unknown")
    by_file: dict[tuple[tuple[int, int], int], list[_Mapping]] = {}
    for m in maps:
        by_file.setdefault((m.dev, m.inode), []).append(m)
    out: list[MappedObject] = []
    claimed: set[tuple[tuple[int, int], int]] = set()
    for name, addr in objects:
        if not libnames.is_cudnn_name(os.path.basename(name)):
            continue
        real = os.path.realpath(name)
        if any(o.path == real and o.replaced is None for o in out):
            continue
        hit = next((m for m in maps if m.start <= addr < m.end), None) if addr else None
        if hit is None:  # not in /proc/self/maps (unreadable): the path is all there is
            out.append(MappedObject(real, name, real))
            continue
        key = (hit.dev, hit.inode)
        claimed.add(key)
        out.append(MappedObject(real, name, hit.shown, tuple(f"{m.start:x}-{m.end:x}" for m in by_file[key]),
                                _why_replaced(real, hit)))
    for key, group in by_file.items():
        if key in claimed:
            continue
        first = group[0]
        shown = first.shown.removesuffix(_DELETED)
        if not libnames.is_cudnn_name(os.path.basename(shown)):
            continue
        real = os.path.realpath(shown) if os.path.exists(shown) else shown
        why = _why_replaced(real, first)
        out.append(MappedObject(real, shown, first.shown, tuple(f"{m.start:x}-{m.end:x}" for m in group), why))
    return out, notes


def _own_ranges(obj: MappedObject) -> list[tuple[int, int]]:
    out = []
    for r in obj.ranges:
        lo, hi = r.split("-")
        out.append((int(lo, 16), int(hi, 16)))
    return out


def _from_memory(obj: MappedObject, name: str) -> tuple[str | None, str]:
    """The constant of the mapped sub-library, read from this process's memory."""
    parsed = libnames.parse_name(name)
    if not parsed or parsed[1] is None:
        return None, "not a cuDNN sub-library name"
    if os.path.lexists(obj.loaded_as) and not os.path.isfile(obj.loaded_as):
        return None, f"not asked: {obj.loaded_as} is not a regular file now"
    mode = getattr(os, "RTLD_NOLOAD", 4) | getattr(os, "RTLD_LAZY", 1)
    try:
        lib = ctypes.CDLL(obj.loaded_as, mode=mode)  # matched by name in the link map: nothing is opened
        addr = ctypes.cast(getattr(lib, f"{parsed[0]}_version"), ctypes.c_void_p).value
    except (OSError, AttributeError) as exc:
        return None, f"the mapped object could not be asked ({exc})"
    if not addr or not any(lo <= addr and addr + 4 <= hi for lo, hi in _own_ranges(obj)):
        return None, f"its {parsed[0]}_version symbol does not lie in its own mappings"
    v = decode_embedded(ctypes.c_uint32.from_address(addr).value, parsed[1])
    if v is None:
        return None, f"its {parsed[0]}_version constant does not hold a release"
    return v, f"{parsed[0]}_version constant of the mapped copy, read from memory (the file on disk was replaced)"


def _from_map_files(obj: MappedObject, name: str, proc: str = "self") -> tuple[str | None, str]:
    """(release, where it was read) of the sub-library ``name`` from the very file a mapping of
    ``obj`` holds, opened through ``/proc/<proc>/map_files/``; (None, why not)."""
    for r in obj.ranges:
        link = f"/proc/{proc}/map_files/{r}"
        try:
            os.close(os.open(link, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0)))
        except OSError as exc:  # EPERM without the capability (proc(5)): every range answers alike
            return None, (f"{link} could not be opened ({exc.strerror or exc}: the kernel opens a mapped file there "
                          "only for a process holding CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE, proc(5))")
        v = embedded_version_in(link, name)
        if v is None:
            return None, f"the mapped file (opened through {link}) holds no {name} release constant"
        parsed = libnames.parse_name(name)
        return v, f"{parsed[0] if parsed else name}_version constant of the mapped file, read through /proc/{proc}/map_files"
    return None, "its mappings are not known (/proc/PID/maps unread), so the mapped file cannot be opened"


def mapped_version(obj: MappedObject, others: list[MappedObject] | tuple[MappedObject, ...] = (),
                   pid: int | None = None, root: str = "") -> tuple[str | None, str]:
    """(release, where it was read) of the copy ``obj`` really maps, for a file replaced on disk;
    (None, why not) when it cannot be read. A main library's release is the constant of the mapped
    ``libcudnn_graph`` (9.x; ``libcudnn_ops_infer``/``libcudnn_ops`` for 8.x) loaded from the same
    folder, among ``others``. Never raises.

    Args:
        pid: another process whose mappings ``obj`` and ``others`` are (``/proc/PID/maps``): the
            mapped file is read through ``/proc/PID/map_files`` only, never from that process's
            memory. None: this process (through ``/proc/self/map_files``, else from its memory).
        root: the prefix that a path of that process is read through here (``/proc/PID/root`` for
            a process in another mount namespace), for a sub-library of ``others`` that is not
            replaced; "" for the same file system.
    """
    name = os.path.basename(obj.loaded_as)
    parsed = libnames.parse_name(name)
    if not parsed or parsed[1] is None:
        return None, "not a cuDNN library name"
    if parsed[0] != "cudnn":
        v, how = _from_map_files(obj, name, "self" if pid is None else str(pid))
        if v is not None or pid is not None:
            return v, how
        try:
            return _from_memory(obj, name)
        except Exception as exc:  # noqa: BLE001
            return None, f"the mapped copy could not be read ({exc})"
    folder = os.path.dirname(obj.loaded_as)
    stems = ("graph",) if parsed[1] >= 9 else ("ops_infer", "ops")
    unread: list[str] = []
    for o in others:
        sub = libnames.parse_name(os.path.basename(o.loaded_as))
        if sub and sub[0] in (f"cudnn_{s}" for s in stems) and sub[1] == parsed[1] \
                and os.path.dirname(o.loaded_as) == folder:
            v, how = mapped_version(o, pid=pid, root=root) if o.replaced else (
                libnames.embedded_version(root + o.path), "the constant")
            if v is not None:
                return v, f"the release of the {os.path.basename(o.loaded_as)} mapped from the same folder ({how})"
            unread.append(f"the release of the {os.path.basename(o.loaded_as)} mapped from the same folder (which "
                          f"says it) could not be read: {how}")
    if unread:
        return None, f"{name} carries no release of its own, and " + "; ".join(unread)
    return None, (f"{name} carries no release of its own and no {stems[0]} sub-library of its folder is mapped; the "
                  "file on disk was replaced, so nothing on disk speaks for the mapped copy")


def file_ranges(maps_path: str) -> dict[tuple[str, int], tuple[str, ...]]:
    """The address ranges (``"start-end"`` in hex, as the kernel writes them) of each mapped
    ``libcudnn*`` file of a process, by (its name in ``maps_path``, `` (deleted)`` kept; its inode):
    what :attr:`MappedObject.ranges` holds. Empty when the file cannot be read. Never raises."""
    out: dict[tuple[str, int], list[str]] = {}
    try:
        maps = _maps(maps_path)
    except OSError:
        return {}
    for m in maps:
        out.setdefault((m.shown, m.inode), []).append(f"{m.start:x}-{m.end:x}")
    return {k: tuple(v) for k, v in out.items()}


__all__ = ["MappedObject", "file_ranges", "link_map", "mapped_objects", "mapped_version"]
