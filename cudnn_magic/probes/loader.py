"""Where glibc's dynamic loader finds a soname for a given requesting library and loader chain.

:mod:`cudnn_magic.probes.installed` answers the one-object question (a framework library asks
for ``libcudnn.so.9``). Consumers found by the environment scan need glibc's full rule, because
the library that asks is often not the one whose RPATH finds it: CTranslate2 4.4.0's
``libctranslate2-*.so`` has no RPATH and finds its vendored ``libcudnn-463fd6d5.so.8.9.7``
through the RPATH ``$ORIGIN/../ctranslate2.libs`` of ``_ext.*.so``, the module that loaded it.

The order, per glibc ``elf/dl-load.c`` ``_dl_map_object`` (verified against ``LD_DEBUG=libs``
in ``tests/unit/probes/test_consumers_native.py``):

1. a loaded object whose name or SONAME equals the request is reused (``_dl_name_match_p``);
2. a name with a ``/`` is opened as a path;
3. when the requesting object has no ``DT_RUNPATH``: the ``DT_RPATH`` of the requesting object,
   then of the object that loaded it, and on up the chain (an object that has a ``DT_RUNPATH``
   contributes no ``DT_RPATH``: ``elf/get-dynamic-info.h``), then the executable's ``DT_RPATH``;
4. ``LD_LIBRARY_PATH`` as it was when the process started;
5. the requesting object's ``DT_RUNPATH`` (not its loaders');
6. ``/etc/ld.so.cache``; 7. the default directories.

``$ORIGIN`` is the directory of the object whose entry it is; a relative entry (auditwheel
writes ``ctranslate2.libs`` into the vendored ``libcudnn``) is relative to the process's
working directory. Nothing here loads a library: ELF facts are read from the file's dynamic
section (:func:`elf_facts`, cached by inode, size and mtime across calls).

This is the ONE loader model of the project: :func:`resolve_in_chain` is built from small search
steps, applied per soname (the main library and each sub-library alike), and answers "what will
this consumer load, file by file" for the check, the consumer scan, the what-if and the fixes.
Besides glibc's own steps it knows the consumer's own preloads (:class:`Preload`: PyTorch's
``torch/__init__.py`` ``ctypes.CDLL``s the first ``nvidia/cudnn/lib/libcudnn.so.*[0-9]`` on
``sys.path`` before ``libtorch_cuda.so``'s ``DT_NEEDED`` lookups, so a preloaded file whose SONAME
is the one asked for is reused, as step 1 says), and the default directories are glibc's own
(:func:`default_dirs`, read from ``ld.so --list-diagnostics``).
"""

from __future__ import annotations

import os
import re
import stat
import struct
import threading
import time
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ..model import Preload, Resolution
from ..util import pyenv
from ..util.disk_cache import file_key, load, store
from ..util.files import file_kind, note_skipped, read_regular
from . import filefacts
from .elf import ElfDynamic, NotElf, read_dynamic
from .filefacts import racy
from .scope import exists, realpath
from .scope import stat as _scoped_stat

__all__ = [
    "DEFAULT_DIRS",
    "LoaderStep",
    "Preload",
    "default_dirs",
    "elf_facts",
    "expand_entry",
    "interpreter_loaders",
    "resolve_in_chain",
    "search_steps",
]

#: glibc's built-in default directories when ``ld.so --list-diagnostics`` cannot be asked (glibc
#: before 2.33, another libc): the multiarch directories Debian and Ubuntu configure first, then
#: the 64-bit ones of Fedora/RHEL, then the traditional ones (glibc ``elf/dl-load.c``
#: ``system_dirs``, built from ``slibdir`` and ``libdir``).
DEFAULT_DIRS = ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib")
_RTLD = ("/lib64/ld-linux-x86-64.so.2", "/lib/ld-linux-aarch64.so.1", "/lib/ld-linux.so.2")


@dataclass(frozen=True)
class RtldFacts:
    """What the running glibc loader says of itself (read once per process; the defaults are
    glibc's for x86-64 when it cannot be asked).

    Attributes:
        system_dirs: the default directories, in order (``--list-diagnostics``
            ``path.system_dirs``).
        dst_lib: what ``$LIB`` expands to (``dl_dst_lib``: ``lib/x86_64-linux-gnu`` on Debian).
        platform: what ``$PLATFORM`` expands to (``dl_platform``: ``haswell``, ``x86_64``...).
        subdirs: the subdirectories glibc tries in every search directory before the directory
            itself, in order, ending with ``""`` (the directory): ``glibc-hwcaps/x86-64-v3``, the
            legacy ``tls/haswell/x86_64``... Read from the loader's own ``LD_DEBUG=libs`` search
            path for a probe directory, so it is this glibc's expansion.
    """

    system_dirs: tuple[str, ...] = DEFAULT_DIRS
    dst_lib: str = "lib64"
    platform: str = "x86_64"
    subdirs: tuple[str, ...] = ("glibc-hwcaps/x86-64-v4", "glibc-hwcaps/x86-64-v3", "glibc-hwcaps/x86-64-v2", "")


_rtld_facts: RtldFacts | None = None
_PROBE_DIR = "/__cudnn_magic_probe__"


# --------------------------------------------------------------------------- what the loader reads at start


def read_ldcache(path: str = "/etc/ld.so.cache") -> tuple[dict[str, list[str]], str | None]:
    """Parse glibc's ``ld.so.cache`` (new format "glibc-ld.so.cache1.1", per glibc
    ``sysdeps/generic/dl-cache.h``) into ``{soname: [paths in cache order]}``.

    Returns (map, note); the note says why the cache could not be read, or how many entries
    were left out because a name of theirs lies past the end of the file or runs to it with no
    terminating NUL (a cut or corrupt cache). The answer is kept for the life of the process
    while the file's (device, inode, size, mtime) stay the same (``ldconfig`` writes a new
    file), except for a file changed in the last two seconds. Treat the map as read-only. Never
    raises.
    """
    try:
        st = os.stat(path)
    except OSError:
        return _read_ldcache(path)
    if st.st_mtime_ns >= time.time_ns() - 2_000_000_000:
        return _read_ldcache(path)  # changed just now: a second change might keep size and mtime
    return _ldcache_cached(path, (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns))


@lru_cache(maxsize=4)
def _ldcache_cached(path: str, _stamp: tuple[int, int, int, int]) -> tuple[dict[str, list[str]], str | None]:
    try:
        st = os.stat(path)
    except OSError:
        return _read_ldcache(path)
    known = filefacts.get(path, st, "ldcache")
    if (isinstance(known, list) and len(known) == 2 and isinstance(known[0], dict)
            and (known[1] is None or isinstance(known[1], str))
            and all(isinstance(v, list) and all(isinstance(x, str) for x in v) for v in known[0].values())):
        return known[0], known[1]
    value = _read_ldcache(path)
    if (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns) == _stamp:
        filefacts.put(path, st, "ldcache", [value[0], value[1]])
    return value


def _read_ldcache(path: str) -> tuple[dict[str, list[str]], str | None]:
    try:
        data = read_regular(path, 64 << 20)
    except OSError as exc:
        return {}, f"ld.so cache {path} unreadable ({exc.strerror or exc})"
    magic_new = b"glibc-ld.so.cache1.1"
    start = data.find(magic_new)
    if start < 0:
        return {}, f"ld.so cache {path}: unknown format"
    try:
        nlibs, _len_strings = struct.unpack_from("<II", data, start + 20)
        # struct cache_file_new: magic[17] version[3] nlibs len_strings flags[1] pad[3] extension_offset unused[3]
        off = start + 20 + 4 + 4 + 1 + 3 + 4 + 12
        out: dict[str, list[str]] = {}
        unreadable = 0

        def cstr(o: int) -> str | None:
            o += start
            end = data.find(b"\0", o)
            return os.fsdecode(data[o:end]) if end >= 0 else None  # a path: round-trips to its bytes

        for i in range(min(nlibs, 200_000)):
            _flags, key, value, _osv, _hwcap = struct.unpack_from("<iIIIQ", data, off + i * 24)
            soname, lib_path = cstr(key), cstr(value)
            if soname is None or lib_path is None:
                unreadable += 1
                continue
            out.setdefault(soname, []).append(lib_path)
        if unreadable:
            return out, (f"ld.so cache {path}: {unreadable} entr{'y' if unreadable == 1 else 'ies'} "
                         "left out (a name past the end of the file or not NUL-terminated)")
        return out, None
    except struct.error:
        return {}, f"ld.so cache {path}: truncated"


def environ_at_start(path: str = "/proc/self/environ") -> dict[str, str] | None:
    """The environment this process was started with, from ``/proc/self/environ`` (Linux).

    The dynamic loader reads ``LD_LIBRARY_PATH`` once, at process start (``ld.so(8)``); setting
    ``os.environ["LD_LIBRARY_PATH"]`` later in a kernel, or Dask's ``Nanny(env=...)`` inside an
    already started worker, does not change where ``dlopen`` looks. Returns None where
    ``/proc`` is not available.
    """
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError:
        return None
    env: dict[str, str] = {}
    for item in raw.split(b"\0"):
        key, sep, value = item.partition(b"=")
        if sep:
            env[os.fsdecode(key)] = os.fsdecode(value)  # as os.environ decodes it (PEP 383): a path round-trips
    return env


def _parse_system_dirs(text: str) -> tuple[str, ...]:
    """``path.system_dirs[0x0]="/lib/x86_64-linux-gnu/"`` lines of ``ld.so --list-diagnostics``
    (glibc ``elf/dl-diagnostics.c``) -> the directories in order, trailing ``/`` dropped."""
    out: list[tuple[int, str]] = []
    for line in text.splitlines():
        if line.startswith("path.system_dirs["):
            idx, _, rest = line[len("path.system_dirs["):].partition("]=")
            try:
                n = int(idx, 0)
            except ValueError:
                continue
            d = rest.strip().strip('"').rstrip("/")
            if d:
                out.append((n, d))
    return tuple(d for _, d in sorted(out))


def _diag_value(text: str, key: str) -> str | None:
    for line in text.splitlines():
        if line.startswith(key + "="):
            return line.split("=", 1)[1].strip().strip('"')
    return None


def _parse_subdirs(debug: str) -> tuple[str, ...]:
    """The subdirectories of ``_PROBE_DIR`` in the first ``search path=`` line of ``LD_DEBUG=libs``
    output, in order, the directory itself as ``""``."""
    for line in debug.splitlines():
        if "search path=" in line and _PROBE_DIR in line:
            path = line.split("search path=", 1)[1].split("\t")[0].split("(")[0].strip()
            out = []
            for d in path.split(":"):
                d = d.strip()
                if d == _PROBE_DIR:
                    out.append("")
                elif d.startswith(_PROBE_DIR + "/"):
                    out.append(d[len(_PROBE_DIR) + 1:])
            if out and out[-1] == "":
                return tuple(out)
    return ()


def rtld_facts() -> RtldFacts:
    """The running loader's own facts (:class:`RtldFacts`), read once per process from
    ``ld.so --list-diagnostics`` (glibc 2.33 and later) and from its ``LD_DEBUG=libs`` search path
    for a probe directory on ``LD_LIBRARY_PATH``; glibc's x86-64 defaults otherwise. What the two
    child processes said is kept on disk (:mod:`cudnn_magic.util.disk_cache`, kind ``rtld``),
    keyed by the loader's and ``/bin/true``'s (device, inode, size, mtime), this CPU's feature
    flags (the hardware-capability subdirectories and ``$PLATFORM`` follow them) and
    ``GLIBC_TUNABLES``: a new process on the same machine starts no child. Never raises."""
    global _rtld_facts
    if _rtld_facts is not None:
        return _rtld_facts
    facts = RtldFacts()
    rtld = next((r for r in _RTLD if os.path.exists(r)), None)
    true = next((t for t in ("/bin/true", "/usr/bin/true") if os.path.exists(t)), None)
    key = _rtld_key(rtld, true) if rtld is not None else None
    if key is not None:
        cached = _facts_from_json(load("rtld", key))
        if cached is not None:
            _rtld_facts = cached
            return cached
    if rtld is not None:
        try:
            import subprocess  # start-up cost: only the loader model needs it, once per process

            env = {"LC_ALL": "C"}
            diag = subprocess.run([rtld, "--list-diagnostics"], capture_output=True, text=True, timeout=5, env=env, check=False)
            dirs = _parse_system_dirs(diag.stdout) if diag.returncode == 0 else ()
            lib = _diag_value(diag.stdout, "dl_dst_lib") if diag.returncode == 0 else None
            plat = _diag_value(diag.stdout, "dl_platform") if diag.returncode == 0 else None
            sub: tuple[str, ...] = ()
            if true:
                dbg = subprocess.run([rtld, true], capture_output=True, text=True, timeout=5,
                                     env={**env, "LD_DEBUG": "libs", "LD_LIBRARY_PATH": _PROBE_DIR}, check=False)
                sub = _parse_subdirs(dbg.stderr)
            facts = RtldFacts(dirs or facts.system_dirs, lib or facts.dst_lib, plat or facts.platform,
                              sub or facts.subdirs)
            if key is not None and dirs and sub:  # what the loader said, not our defaults
                store("rtld", key, [list(facts.system_dirs), facts.dst_lib, facts.platform, list(facts.subdirs)])
        except Exception:  # noqa: BLE001 - OSError, SubprocessError, a timeout: glibc's defaults stand
            facts = RtldFacts()
    _rtld_facts = facts
    return facts


def _rtld_key(rtld: str, true: str | None) -> str | None:
    """What :func:`rtld_facts`' answer depends on, as one string; None when it cannot be read."""

    try:
        parts = [rtld, file_key(os.stat(rtld)), true, file_key(os.stat(true)) if true else None, os.uname().machine,
                 os.environ.get("GLIBC_TUNABLES", "")]
        with open("/proc/cpuinfo", "rb") as fh:  # the first CPU's feature flags
            head = fh.read(32 << 10)
        flags = next((ln for ln in head.split(b"\n") if ln.startswith((b"flags", b"Features"))), b"")
        parts.append(flags.decode("ascii", "replace"))
        return "|".join(map(str, parts))
    except OSError:
        return None


def _facts_from_json(raw: object) -> RtldFacts | None:
    if (isinstance(raw, list) and len(raw) == 4 and isinstance(raw[0], list) and isinstance(raw[3], list)
            and all(isinstance(x, str) for x in raw[0] + raw[3]) and isinstance(raw[1], str) and isinstance(raw[2], str)
            and raw[0] and raw[3] and raw[3][-1] == ""):
        return RtldFacts(tuple(raw[0]), raw[1], raw[2], tuple(raw[3]))
    return None


def default_dirs() -> tuple[str, ...]:
    """The directories glibc searches last, in its order (:func:`rtld_facts`; on Debian 12
    ``/lib/x86_64-linux-gnu``, ``/usr/lib/x86_64-linux-gnu``, ``/lib``, ``/usr/lib``). Never raises."""
    return rtld_facts().system_dirs


_listing_cache: dict[str, tuple[int, frozenset[str]]] = {}


def candidates_in(directory: str, soname: str) -> list[str]:
    """The paths glibc tries for ``soname`` in one search directory, in its order: each
    hardware-capability subdirectory (:attr:`RtldFacts.subdirs`: ``glibc-hwcaps/x86-64-v3``, the
    legacy ``tls``, ``haswell``...) that exists, then the directory itself."""
    st = _scoped_stat(directory)
    if st is None:
        return []
    hit = _listing_cache.get(directory)
    if hit is None or hit[0] != st.st_mtime_ns:
        try:
            names = frozenset(os.listdir(directory))
        except OSError:
            names = frozenset()
        hit = (st.st_mtime_ns, names)
        if not racy(st):  # a folder changed just now may change again within its mtime's tick
            with _lock:
                _listing_cache[directory] = hit
    names = hit[1]
    out = []
    for sub in rtld_facts().subdirs:
        if sub == "":
            if soname in names:
                out.append(os.path.join(directory, soname))
        elif sub.split("/", 1)[0] in names:
            out.append(os.path.join(directory, sub, soname))
    return out


def ld_library_path_entries(value: str, executable: str | None = None, cwd: str | None = None) -> list[tuple[str, str]]:
    """``LD_LIBRARY_PATH`` as glibc reads it (``ld.so(8)``): entries separated by ``:`` or ``;``,
    an empty entry meaning the working directory (a trailing ``:`` puts it on the path),
    ``$ORIGIN`` (the executable's directory), ``$LIB`` and ``$PLATFORM`` expanded. Returns
    (directory, entry as written)."""
    facts = rtld_facts()
    exe = executable if executable is not None else _exe()
    base = cwd if cwd is not None else os.getcwd()
    out = []
    parts = re.split(r"[:;]", value) if value else []
    for e in parts:
        d = e
        for tok in ("${ORIGIN}", "$ORIGIN"):
            d = d.replace(tok, os.path.dirname(exe))
        d = d.replace("${LIB}", facts.dst_lib).replace("$LIB", facts.dst_lib)
        d = d.replace("${PLATFORM}", facts.platform).replace("$PLATFORM", facts.platform)
        d = os.path.normpath(os.path.join(base, d)) if d else base
        out.append((d, e if e else "(empty: the working directory)"))
    return out


_lock = threading.Lock()
_elf_cache: dict[str, tuple[tuple[int, int, int], ElfDynamic | str]] = {}
_stats = {"elf_reads": 0, "elf_cached": 0}


def elf_facts(path: str) -> ElfDynamic | str:
    """The dynamic section of ``path`` (SONAME, NEEDED, RPATH, RUNPATH), or a sentence saying
    why it could not be read. Cached by (inode, size, mtime) for the life of the process, so a
    second ``%cudnn_check`` reads no file that did not change. Never raises."""
    st = _scoped_stat(path)  # once per check (probes.scope)
    if st is None:
        try:
            st = os.stat(path)
        except OSError as exc:
            return f"cannot stat: {exc.strerror or exc}"
    key = (st.st_ino, st.st_size, st.st_mtime_ns)
    with _lock:
        hit = _elf_cache.get(path)
        if hit is not None and hit[0] == key:
            _stats["elf_cached"] += 1
            if not stat.S_ISREG(st.st_mode):  # said on every check, not only the first
                note_skipped(path, f"not a regular file ({file_kind(st.st_mode)}); nothing was read from it")
            return hit[1]

    value: ElfDynamic | str | None = elf_from_json(filefacts.get(path, st, "elf")) if stat.S_ISREG(st.st_mode) else None
    if value is None:
        try:
            value = read_dynamic(path)
        except NotElf as exc:
            value = f"not a shared library: {exc}"
        except OSError as exc:
            value = f"unreadable: {exc.strerror or exc}"
        except Exception as exc:  # noqa: BLE001 - a malformed file must not break the check
            value = f"unreadable: {type(exc).__name__}: {exc}"
        # what a file says is kept; that it could not be read (a passing error) is not
        if stat.S_ISREG(st.st_mode) and not (isinstance(value, str) and value.startswith("unreadable")):
            filefacts.put(path, st, "elf", elf_to_json(value))
        with _lock:
            _stats["elf_reads"] += 1
    with _lock:
        _elf_cache[path] = (key, value)
    return value


def elf_to_json(value: ElfDynamic | str) -> list | str:
    """An :func:`elf_facts` answer as JSON data (for the disk caches)."""
    if isinstance(value, str):
        return value
    return [value.soname, list(value.needed), list(value.rpath), list(value.runpath), value.machine]


def elf_from_json(raw: object) -> ElfDynamic | str | None:
    """:func:`elf_to_json` back; None for anything else."""
    if isinstance(raw, str):
        return raw
    if (isinstance(raw, list) and len(raw) == 5 and (raw[0] is None or isinstance(raw[0], str))
            and all(isinstance(x, list) and all(isinstance(y, str) for y in x) for x in raw[1:4])
            and isinstance(raw[4], int)):
        return ElfDynamic(raw[0], tuple(raw[1]), tuple(raw[2]), tuple(raw[3]), raw[4])
    return None


def remember_elf(path: str, st: os.stat_result, value: ElfDynamic | str) -> None:
    """Seed :func:`elf_facts`'s cache with ``value``, read from ``path`` when it had the stat
    ``st`` (the consumer scan's disk cache: :mod:`cudnn_magic.util.disk_cache`)."""
    with _lock:
        _elf_cache[path] = ((st.st_ino, st.st_size, st.st_mtime_ns), value)
        _stats["elf_cached"] += 1


def cache_stats() -> dict[str, int]:
    """How many ELF files were read and how many answers came from the cache (for benchmarks)."""
    with _lock:
        return dict(_stats, entries=len(_elf_cache))


def expand_entry(entry: str, origin: str, cwd: str | None = None) -> tuple[str, str]:
    """Expand one RPATH/RUNPATH entry as ``ld.so(8)`` does: ``$ORIGIN``/``${ORIGIN}`` is the
    directory of the object that carries it (the folder of the path it was opened by, symbolic
    links not resolved), ``$LIB`` and ``$PLATFORM`` what this glibc says (:func:`rtld_facts`).
    Returns (directory, note); the note says when the entry is relative to the working directory
    (glibc opens it from there)."""
    out = _expanded(entry, origin, rtld_facts())
    if os.path.isabs(out):
        return out, ""
    base = cwd if cwd is not None else os.getcwd()
    return os.path.normpath(os.path.join(base, out)), f" (relative: looked up from the working directory {base})"


@lru_cache(maxsize=4096)
def _expanded(entry: str, origin: str, facts: RtldFacts) -> str:
    out = entry
    for tok in ("${ORIGIN}", "$ORIGIN"):
        out = out.replace(tok, origin)
    out = out.replace("${LIB}", facts.dst_lib).replace("$LIB", facts.dst_lib)
    out = out.replace("${PLATFORM}", facts.platform).replace("$PLATFORM", facts.platform)
    return os.path.normpath(out) if os.path.isabs(out) else out


@dataclass(frozen=True)
class LoaderStep:
    """One directory the loader tries, in order, and why (``"RPATH $ORIGIN/../x.libs of _ext.so"``)."""

    directory: str
    why: str


def _rpath(facts: ElfDynamic | str) -> tuple[str, ...]:
    if isinstance(facts, str) or facts.runpath:
        return ()  # DT_RPATH is ignored when DT_RUNPATH is present (glibc get-dynamic-info.h)
    return facts.rpath


#: This interpreter's own :func:`interpreter_loaders`: the libpython it was started with is mapped
#: for the life of the process, so it is read from the memory map once.
_own_loaders: list[str] | None = None


def interpreter_loaders() -> list[str]:
    """The objects above a Python extension module in its loader chain: the shared libpython
    that calls ``dlopen`` for ``import`` (when the interpreter uses one), then the executable.
    Read from ``/proc/self/maps`` (once per process for this interpreter; each time for another
    process's); ``[sys.executable]`` where that is unavailable."""
    global _own_loaders
    own = pyenv.target() is None
    if own and _own_loaders is not None:
        return list(_own_loaders)
    exe = _exe()
    out: list[str] = []
    read = False
    try:
        with open(pyenv.maps_path(), "rb") as fh:
            for line in fh:
                if b"libpython" not in line:
                    continue
                p = line.split(None, 5)
                if len(p) == 6:
                    path = os.fsdecode(p[5].strip())
                    if os.path.basename(path).startswith("libpython") and path not in out:
                        out.append(path)
                        break
        read = True
    except OSError:
        pass
    if exe:
        out.append(exe)
    if own and read:
        _own_loaders = list(out)
    return out


def search_steps(requester: str | None, chain: list[str], *, environ: dict[str, str] | None = None,
                 executable: str | None = None, cwd: str | None = None) -> list[LoaderStep]:
    """The directories searched for a soname requested by ``requester``, before the ld.so cache
    and the default directories (module docstring, steps 3-5).

    Args:
        requester: the ELF object whose ``DT_NEEDED`` entry or ``dlopen`` call asks (None: a
            plain ``dlopen`` from the executable).
        chain: the objects that loaded ``requester``, nearest first (``[parent, grandparent,
            ...]``); their ``DT_RPATH`` entries apply when ``requester`` has no ``DT_RUNPATH``.
        environ: the environment the process started with (``LD_LIBRARY_PATH``).
        executable: the main program (default: this interpreter).
    """
    env = os.environ if environ is None else environ
    exe = executable if executable is not None else _exe()
    objs = ([requester] if requester else []) + list(chain) + ([exe] if exe else [])
    # the answer follows from these facts alone: a file that changed has new facts (elf_facts)
    key = (requester, tuple(chain), exe, tuple(elf_facts(o) for o in objs), env.get("LD_LIBRARY_PATH", ""),
           cwd if cwd is not None else os.getcwd(), rtld_facts())
    hit = _steps_cache.get(key)
    if hit is None:
        hit = _steps_cache[key] = tuple(_search_steps(requester, chain, env, exe, cwd))
        with _lock:
            while len(_steps_cache) > 1024:
                _steps_cache.pop(next(iter(_steps_cache)))
    return list(hit)


_steps_cache: dict[tuple, tuple[LoaderStep, ...]] = {}


def _exe() -> str:
    """The real file of the interpreter the check is about (:func:`cudnn_magic.util.pyenv.executable`:
    this one, or another process's), resolved once per path."""
    exe = pyenv.executable()
    return _real_exe(exe) if exe else ""


@lru_cache(maxsize=4)
def _real_exe(executable: str) -> str:
    return os.path.realpath(executable)  # keep: once per process


def _search_steps(requester: str | None, chain: list[str], env: Any, exe: str, cwd: str | None) -> list[LoaderStep]:
    steps: list[LoaderStep] = []
    req_facts = elf_facts(requester) if requester else None
    has_runpath = isinstance(req_facts, ElfDynamic) and bool(req_facts.runpath)
    if not has_runpath:
        seen: set[str] = set()
        for obj in ([requester] if requester else []) + list(chain):
            if not obj or obj in seen:
                continue
            seen.add(obj)
            for e in _rpath(elf_facts(obj)):
                d, note = expand_entry(e, os.path.dirname(obj), cwd)
                steps.append(LoaderStep(d, f"RPATH {e} of {os.path.basename(obj)}{note}"))
        if exe and exe not in seen:
            for e in _rpath(elf_facts(exe)):
                d, note = expand_entry(e, os.path.dirname(exe), cwd)
                steps.append(LoaderStep(d, f"RPATH {e} of the executable {os.path.basename(exe)}{note}"))
    for d, e in ld_library_path_entries(env.get("LD_LIBRARY_PATH", ""), exe, cwd):
        steps.append(LoaderStep(d, f"LD_LIBRARY_PATH entry {e}"))
    if has_runpath and requester:
        for e in req_facts.runpath:  # type: ignore[union-attr]
            d, note = expand_entry(e, os.path.dirname(requester), cwd)
            steps.append(LoaderStep(d, f"RUNPATH {e} of {os.path.basename(requester)}{note}"))
    return steps


def loaded_sonames(mapped: list[str] | tuple[str, ...]) -> dict[str, str]:
    """``{SONAME or file name: path}`` for mapped files, as ``_dl_name_match_p`` matches them
    (the SONAME read from the file; the file name as a fallback). First mapped wins."""
    out: dict[str, str] = {}
    for p in mapped:
        facts = elf_facts(p)
        names = [os.path.basename(p)]
        if isinstance(facts, ElfDynamic) and facts.soname:
            names.insert(0, facts.soname)
        for n in names:
            out.setdefault(n, p)
    return out


def _preloaded(soname: str, preloads: tuple[Preload, ...] | list[Preload]) -> tuple[str, str, str] | None:
    """(real path, why, the path as loaded) of the first preload whose SONAME (or file name) is
    ``soname``."""
    for p in preloads:
        if not os.path.exists(p.path):
            continue
        real = realpath(p.path)
        facts = elf_facts(real)
        names = {os.path.basename(p.path), os.path.basename(real)}
        if isinstance(facts, ElfDynamic) and facts.soname:
            names = {facts.soname}  # glibc matches a loaded object by its SONAME once it has one
        if soname in names:
            return real, p.why, p.path
    return None


def resolve_in_chain(soname: str, consumer: str, requester: str | None, chain: list[str], *,
                     environ: dict[str, str] | None = None, ldcache: dict[str, list[str]] | None = None,
                     mapped: list[str] | tuple[str, ...] = (), executable: str | None = None,
                     cwd: str | None = None, preloads: tuple[Preload, ...] | list[Preload] = ()) -> Resolution:
    """Which file ``soname`` resolves to when ``requester`` (loaded by ``chain``) asks for it.

    ``mapped`` are the files already mapped in the process the answer is for (an object with
    that SONAME is reused); pass ``()`` to predict a fresh process. ``preloads`` are the files the
    consumer's own code loads by path first (:class:`Preload`), in order: one whose SONAME is
    ``soname`` is reused the same way. ``reason`` names the search step that decided;
    ``shadowed`` lists the later candidates it hides. Never raises.
    """
    try:
        if "/" in soname:
            p = soname if exists(soname) else None
            return Resolution(consumer, requester, os.path.basename(soname), realpath(p) if p else None,
                              "opened by path" if p else f"{soname} does not exist")
        hit = loaded_sonames(mapped).get(soname)
        if hit:
            return Resolution(consumer, requester, soname, hit, "already mapped in this process (the loader reuses it)")
        pre = _preloaded(soname, preloads)
        hits: list[tuple[str, str, str]] = []  # (real path, why, the path as opened: its folder is $ORIGIN)
        if pre is not None:
            hits.append((pre[0], f"preloaded: {pre[1]}", pre[2]))
        seen_dirs: set[str] = set()
        for step in search_steps(requester, chain, environ=environ, executable=executable, cwd=cwd):
            if step.directory in seen_dirs:
                continue
            seen_dirs.add(step.directory)
            for cand in candidates_in(step.directory, soname):
                if exists(cand):
                    sub = os.path.relpath(os.path.dirname(cand), step.directory)
                    hits.append((realpath(cand), step.why + (f" (its {sub}/ subdirectory)" if sub != "." else ""),
                                 cand))
        for p in (ldcache or {}).get(soname, []):
            if exists(p):
                hits.append((realpath(p), "ld.so cache", p))
        for d in default_dirs():
            for cand in candidates_in(d, soname):
                if exists(cand):
                    hits.append((realpath(cand), f"default dir {d}", cand))
        uniq: list[tuple[str, str, str]] = []
        for h in hits:
            if all(h[0] != u[0] for u in uniq):
                uniq.append(h)
        if not uniq:
            return Resolution(consumer, requester, soname, None, "not found by the loader's search")
        return Resolution(consumer, requester, soname, uniq[0][0], uniq[0][1], tuple(u[0] for u in uniq[1:]),
                          uniq[0][2] if uniq[0][2] != uniq[0][0] else None)
    except Exception as exc:  # noqa: BLE001 - a probe never raises
        return Resolution(consumer, requester, soname, None, f"could not resolve: {type(exc).__name__}: {exc}")


def dlopen_blocker(soname: str, *, environ: dict[str, str] | None = None,
                   ldcache: dict[str, list[str]] | None = None) -> tuple[str, str] | None:
    """(path, what it is) of the first file a plain ``dlopen(soname)`` from this process would
    open that is not a regular file (a FIFO or a device: glibc's ``open`` of it blocks for ever),
    met before the first shared library it would take (steps 4, 6 and 7 of the module docstring,
    each directory's hardware-capability subdirectories first); None when there is none. Call it
    before a ``dlopen`` by soname of something not already mapped. Never raises."""
    try:
        dirs = [step.directory for step in search_steps(None, [], environ=environ)]
        paths = [c for d in dict.fromkeys(dirs) for c in candidates_in(d, soname)]
        paths += list((ldcache or {}).get(soname, ()))
        paths += [c for d in default_dirs() for c in candidates_in(d, soname)]
        for cand in paths:
            try:
                mode = os.stat(cand).st_mode
            except OSError:
                continue  # missing, or a broken link: glibc goes on to the next
            if stat.S_ISDIR(mode):
                continue  # glibc's read of a folder fails at once, and it goes on
            if not stat.S_ISREG(mode):
                note_skipped(cand, f"not a regular file ({file_kind(mode)}); {soname} was not loaded by name "
                                   "(the loader would block opening it)")
                return cand, file_kind(mode)
            if isinstance(elf_facts(cand), ElfDynamic):
                return None  # the loader takes this one
    except Exception:  # noqa: BLE001 - a guard never raises
        return None
    return None


def pathfinder_site_dirs() -> list[str]:
    """The folders cuda-pathfinder looks for NVIDIA wheels in, in its order:
    ``site.getsitepackages()`` with the user site inserted at index 1 in a venv
    (``sys.prefix != sys.base_prefix``), at 0 outside one, when ``site.ENABLE_USER_SITE``
    (cuda-pathfinder ``_utils/find_sub_dirs.py`` ``find_sub_dirs_all_sitepackages``). Never raises."""
    try:
        dirs = pyenv.site_packages()
        user = pyenv.user_site()
        if user:
            dirs.insert(1 if pyenv.prefix() != pyenv.base_prefix() else 0, user)
        return dirs
    except Exception:  # noqa: BLE001 - a probe never raises
        return []


def resolve_pathfinder(spec: Any, consumer: str, *, site_dirs: list[str] | None = None,
                       environ: dict[str, str] | None = None, ldcache: dict[str, list[str]] | None = None,
                       mapped: list[str] | tuple[str, ...] = ()) -> Resolution:
    """Where ``cuda.pathfinder.load_nvidia_dynamic_lib("cudnn")`` finds cuDNN, by the installed
    cuda-pathfinder's descriptor ``spec``
    (:class:`~cudnn_magic.probes.frameworks.pathfinder.PathfinderSpec`) and its order: the wheels'
    folders below ``site_dirs`` (default :func:`pathfinder_site_dirs`), ``$CONDA_PREFIX``, a copy
    already mapped (which wins over both), the OS loader's search (the steps above, from the
    interpreter), ``CUDNN_PATH``, ``$CUDA_PATH`` else ``$CUDA_HOME``. ``reason`` names the step with
    cuda-pathfinder's own ``found_via`` word. Never raises."""
    env = os.environ if environ is None else environ
    soname = spec.sonames[0] if spec.sonames else "libcudnn.so.9"
    try:
        sites = pathfinder_site_dirs() if site_dirs is None else site_dirs
        found: tuple[str, str] | None = None
        for s in sites:
            for rel in spec.site_dirs:
                for so in spec.sonames:
                    p = os.path.join(s, rel, so)
                    if os.path.isfile(p):
                        found = (p, (f"site-packages: {os.path.join(s, rel)} (cuda-pathfinder searches the NVIDIA wheels "
                                     "before the OS loader)"))
                        break
                if found:
                    break
            if found:
                break
        conda = env.get("CONDA_PREFIX")
        if found is None and conda:
            for rel in spec.anchor_rel_dirs:
                for so in spec.sonames:
                    p = os.path.join(conda, rel, so)
                    if os.path.isfile(p):
                        found = (p, f"conda: $CONDA_PREFIX/{rel}")
                        break
                if found:
                    break
        names = loaded_sonames(mapped)
        for so in spec.sonames:
            if so in names:
                return Resolution(consumer, None, so, names[so], "was-already-loaded-from-elsewhere: already mapped in this "
                                  "process (cuda-pathfinder checks with RTLD_NOLOAD, and that copy wins)")
        if found is not None:
            return Resolution(consumer, None, soname, realpath(found[0]), found[1])
        system = resolve_in_chain(soname, consumer, None, [], environ=dict(env), ldcache=ldcache)
        if system.picked:
            return Resolution(consumer, None, soname, system.picked, f"system-search: dlopen(\"{soname}\") ({system.reason})",
                              system.shadowed)
        for var in spec.env_vars:
            root = env.get(var)
            for rel in spec.env_rel_dirs if root else ():
                p = os.path.join(root, rel, soname)  # type: ignore[arg-type]
                if os.path.isfile(p):
                    return Resolution(consumer, None, soname, realpath(p), f"{var}: ${var}/{rel}")
        home = env.get("CUDA_PATH") or env.get("CUDA_HOME")
        for rel in spec.anchor_rel_dirs if home else ():
            p = os.path.join(home, rel, soname)  # type: ignore[arg-type]
            if os.path.isfile(p):
                return Resolution(consumer, None, soname, realpath(p), f"CUDA_PATH: {home}/{rel}")
        return Resolution(consumer, None, soname, None, "not found by cuda-pathfinder (DynamicLibNotFoundError)")
    except Exception as exc:  # noqa: BLE001 - a probe never raises
        return Resolution(consumer, None, soname, None, f"could not resolve: {type(exc).__name__}: {exc}")
