"""Another running process, read from ``/proc/PID`` only: nothing is injected into it, nothing
written, no signal sent, no debugger attached.

* :func:`read_process`: its identity (``status``: user, state), command line, working directory,
  executable and root (``cmdline``, ``cwd``, ``exe``, ``root``), and the environment it started
  with (``environ``: what its dynamic loader read ``LD_LIBRARY_PATH`` from). A process that exited
  (or is a zombie) and one whose files this user may not read raise :class:`ProcessUnreadable`
  with one sentence (``proc(5)``: ``maps`` and ``environ`` need ptrace read access, i.e. the same
  user or ``CAP_SYS_PTRACE``).
* :func:`load_order`: the objects it loaded, in load order, from its dynamic linker's link map
  (``r_debug.r_map`` found through the ``DT_DEBUG`` entry of the executable's dynamic section,
  ``<link.h>``), read with ``pread`` on ``/proc/PID/mem``; that file needs ptrace *attach* access
  (Yama's ``ptrace_scope`` 1 limits it to descendants and root), so where it cannot be read the
  caller falls back to the address order of ``/proc/PID/maps`` and says so.
* :func:`python_layout`: the interpreter's ``sys.path`` as it builds it at start (see there).
"""

from __future__ import annotations

import json
import os
import pwd
import re
import signal
import struct
import subprocess
from dataclasses import dataclass, field

from ..util.files import NotRegularFile, read_regular
from .elf import NotElf, read_dynamic, read_symbol_bytes

__all__ = [
    "ProcessFacts",
    "ProcessReplaced",
    "ProcessUnreadable",
    "PythonLayout",
    "load_order",
    "mapped_files",
    "parse_python_argv",
    "python_layout",
    "read_process",
    "runs_as",
    "verify",
]


class ProcessUnreadable(Exception):
    """The process cannot be checked: it exited, or its ``/proc`` files are not readable by this
    user. The message is one sentence, shown as is (the CLI exits 2)."""


class ProcessReplaced(ProcessUnreadable):
    """The process ran another program (``execve``) while it was being read: what was read mixes
    two programs. The caller reads it again."""


def verify(facts: ProcessFacts) -> None:
    """Raise unless the pid still names the process and program that was read.

    Raises:
        ProcessUnreadable: it exited (or the pid now names another process).
        ProcessReplaced: it replaced its program (``execve``) since.
    """
    st = _stat_fields(facts.pid)
    if st is None or st[0] in "ZX" or st[1] != facts.start_ticks:
        raise _gone(facts.pid)
    if facts.exec_stamp is not None and _exec_stamp(facts.pid) != facts.exec_stamp:
        raise ProcessReplaced(f"process {facts.pid} replaced its program (execve) while it was being read")


@dataclass
class ProcessFacts:
    """What ``/proc/PID`` says of a process.

    Attributes:
        pid: the process id.
        uid: its real user id; ``user``: that user's name (the uid as text when unknown).
        argv: its command line (``/proc/PID/cmdline``; a program may have rewritten it).
        exe: the real path of its executable (``/proc/PID/exe``; "" when unreadable).
        exe_deleted: the executable file was replaced or removed since it started.
        cwd: its working directory ("" when unreadable).
        environ: the environment it started with (``/proc/PID/environ``).
        same_root: it sees this machine's files at the same paths (its ``/proc/PID/root`` is
            this process's ``/`` and its mount namespace, ``/proc/PID/ns/mnt``, is this one's);
            False in a container's mount namespace: its files are then read through
            ``/proc/PID/root``, its own view of them (``proc(5)``).
        start_ticks: its start time in clock ticks after boot (``stat`` field 22): the pid is
            the same process while this holds.
        exec_stamp: its auxiliary vector (``/proc/PID/auxv``): the same program image while
            this holds (an ``execve`` changes it, not the pid nor the start time).
        uids, gid: its real, effective, saved and filesystem user ids, and its real group id
            (``status``): code run for it runs as this user (:func:`runs_as`).
        notes: what could not be read.
    """

    pid: int
    uid: int = -1
    uids: tuple[int, ...] = ()
    gid: int = -1
    user: str = ""
    argv: list[str] = field(default_factory=list)
    exe: str = ""
    exe_deleted: bool = False
    cwd: str = ""
    environ: dict[str, str] = field(default_factory=dict)
    same_root: bool = True
    start_ticks: int | None = None
    exec_stamp: bytes | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def maps_path(self) -> str:
        return f"/proc/{self.pid}/maps"

    @property
    def root(self) -> str:
        """``/proc/PID/root``: the path its files are read through when it is in another mount
        namespace (``proc(5)``: the same view of the filesystem as the process itself has)."""
        return f"/proc/{self.pid}/root"


_PF_KTHREAD = 0x00200000  # a kernel thread (the ``flags`` field of ``/proc/PID/stat``; include/linux/sched.h)


def _stat_fields(pid: int) -> tuple[str, int, int, str] | None:
    """(state letter, start time in ticks, flags, command name) from ``/proc/PID/stat``
    (``proc(5)``: fields 3, 22, 9 and 2); None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            raw = fh.read().decode("utf-8", "replace")
    except OSError:
        return None
    comm = raw[raw.find("(") + 1: raw.rfind(")")]
    rest = raw[raw.rfind(")") + 2:].split()  # the command name may hold spaces and parentheses
    try:
        return rest[0], int(rest[19]), int(rest[6]), comm
    except (IndexError, ValueError):
        return None


def _exec_stamp(pid: int) -> bytes | None:
    """``/proc/PID/auxv``: the auxiliary vector the kernel gave the program it runs now (``AT_RANDOM``,
    ``AT_ENTRY``, ``AT_EXECFN``... differ after every ``execve``, while the pid and its start time
    stay); None when unreadable."""
    try:
        with open(f"/proc/{pid}/auxv", "rb") as fh:
            return fh.read(1 << 16)
    except OSError:
        return None


def _user(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except (KeyError, OSError):
        return str(uid)


def _gone(pid: int) -> ProcessUnreadable:
    return ProcessUnreadable(f"process {pid} is not running (it exited, or there is no such process)")


def _denied(facts: ProcessFacts, what: str) -> ProcessUnreadable:
    me = os.geteuid()
    if me == 0 or (facts.uids and all(u == me for u in facts.uids)):
        # Not a matter of users: the kernel's ptrace access check refused (ptrace(2), "Ptrace
        # access mode checking"): capabilities the target holds and this process lacks, another
        # user namespace, a program that is not dumpable, or a security module.
        return ProcessUnreadable(
            f"the kernel refused this process (user {_user(me)}, uid {me}) read access to the {what} of process "
            f"{facts.pid} (user {facts.user}): that needs ptrace read access, which a process holding capabilities "
            "this one lacks (CAP_SYS_PTRACE among them), one in another user namespace, or one that is not dumpable "
            "refuses even to root")
    return ProcessUnreadable(
        f"process {facts.pid} belongs to user {facts.user} (uid {facts.uid}) and this user ({_user(me)}, uid {me}) "
        f"may not read its {what}: run cudnn-magic as that user, or as root")


def still_same(facts: ProcessFacts) -> bool:
    """The pid still names the process and the program :func:`read_process` read (not exited,
    not reused, no ``execve`` since: its auxiliary vector is unchanged)."""
    st = _stat_fields(facts.pid)
    if st is None or st[0] in "ZX" or st[1] != facts.start_ticks:
        return False
    return facts.exec_stamp is None or _exec_stamp(facts.pid) == facts.exec_stamp


def runs_as(facts: ProcessFacts) -> tuple[int, int] | None:
    """The (uid, gid) that code run for the process must run as when it is not this process's
    user: its own (its real ids), so nothing it controls runs with more rights than it has. None
    when this process already runs as that user (every one of its user ids is ours)."""
    me = os.geteuid()
    if facts.uids and all(u == me for u in facts.uids) and os.getuid() == me:
        return None
    return facts.uid, facts.gid


def _text(raw: bytes) -> str:
    """Bytes of ``/proc`` (paths, variables) as ``os.fsdecode`` gives them: a byte that is not
    UTF-8 kept as a lone surrogate, so the path still names the same file (the display layer
    replaces it, :func:`cudnn_magic.safetext.safe_text`)."""
    return raw.decode("utf-8", "surrogateescape")


def read_process(pid: int) -> ProcessFacts:
    """Read a process's identity, command line, directories and start environment.

    Raises:
        ProcessUnreadable: it is not running (exited, a zombie, never existed), or this user
            may not read its ``maps``/``environ`` (another user's process, without root).
    """
    if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 0:
        raise ProcessUnreadable(f"not a process id: {pid!r}")
    st = _stat_fields(pid)
    if st is None:
        raise _gone(pid)
    if st[0] in "ZX":
        raise ProcessUnreadable(f"process {pid} has exited (a zombie its parent has not reaped yet): nothing is mapped")
    if st[2] & _PF_KTHREAD:
        raise ProcessUnreadable(f"process {pid} ({st[3]}) is a kernel thread: it runs no program, maps no library and "
                                "has no environment, so there is nothing to check")
    facts = ProcessFacts(pid=pid, start_ticks=st[1])
    try:
        with open(f"/proc/{pid}/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"Uid:"):
                    facts.uids = tuple(int(v) for v in line.split()[1:5])
                    facts.uid = facts.uids[0]
                elif line.startswith(b"Gid:"):
                    facts.gid = int(line.split()[1])
    except (OSError, ValueError, IndexError):
        raise _gone(pid) from None
    if facts.uid < 0:
        raise _gone(pid)
    facts.user = _user(facts.uid)
    facts.exec_stamp = _exec_stamp(pid)
    for what, name in (("memory map", "maps"), ("environment", "environ")):
        try:
            with open(f"/proc/{pid}/{name}", "rb") as fh:
                raw = fh.read()
        except PermissionError:
            raise _denied(facts, f"{what} (/proc/{pid}/{name})") from None
        except (FileNotFoundError, ProcessLookupError):
            raise _gone(pid) from None
        except OSError as exc:
            raise ProcessUnreadable(f"process {pid}: /proc/{pid}/{name} could not be read ({exc.strerror or exc})") from None
        if name == "environ":
            for item in raw.split(b"\0"):
                key, sep, value = item.partition(b"=")
                if sep:
                    facts.environ[_text(key)] = _text(value)
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            facts.argv = [_text(a) for a in fh.read().split(b"\0")[:-1]]
    except OSError:
        facts.notes.append(f"/proc/{pid}/cmdline unreadable")
    for name in ("exe", "cwd"):
        try:
            target = os.readlink(f"/proc/{pid}/{name}")
        except OSError as exc:
            facts.notes.append(f"/proc/{pid}/{name} unreadable ({exc.strerror or exc})")
            continue
        if target.endswith(" (deleted)"):
            target = target[: -len(" (deleted)")]
            if name == "exe":
                facts.exe_deleted = True
        setattr(facts, name, target)
    try:
        mine, theirs = os.stat("/"), os.stat(f"/proc/{pid}/root/")
        facts.same_root = (mine.st_dev, mine.st_ino) == (theirs.st_dev, theirs.st_ino)
        # The same root folder can be seen through another mount table (unshare -m, a container
        # that keeps the host's root): the namespaces themselves must be the same.
        facts.same_root = facts.same_root and os.readlink("/proc/self/ns/mnt") == os.readlink(f"/proc/{pid}/ns/mnt")
    except OSError as exc:
        facts.notes.append(f"/proc/{pid}/root unreadable ({exc.strerror or exc}); its paths are taken as this machine's")
    verify(facts)
    return facts


# --------------------------------------------------------------------------------------------
# load order: the dynamic linker's link map, read from /proc/PID/mem
# --------------------------------------------------------------------------------------------

_AT_PHDR, _AT_PHNUM = 3, 5
_PT_DYNAMIC, _PT_PHDR = 2, 6
_DT_NULL, _DT_DEBUG = 0, 21


def _is_elf64(path: str) -> bool:
    try:
        with open(path, "rb") as fh:
            head = fh.read(6)
    except OSError:
        return False
    return head[:4] == b"\x7fELF" and head[4] == 2 and head[5] == 1  # ELFCLASS64, little-endian


def _read_cstr(fd: int, addr: int, limit: int = 4096) -> str:
    out = b""
    while len(out) < limit:
        chunk = os.pread(fd, 256, addr + len(out))
        if not chunk:
            break
        end = chunk.find(b"\0")
        if end >= 0:
            return (out + chunk[:end]).decode("utf-8", "replace")
        out += chunk
    return out.decode("utf-8", "replace")


def load_order(pid: int, exe: str) -> tuple[list[str] | None, str]:
    """The names of the objects ``pid`` loaded, in load order (its link map: the program, then
    its ``DT_NEEDED`` libraries, then each ``dlopen``), or (None, why not).

    Read: ``/proc/PID/auxv`` (``AT_PHDR``, ``AT_PHNUM``), the program headers and dynamic section in
    its memory, ``DT_DEBUG`` -> ``struct r_debug`` -> ``r_map`` -> each ``struct link_map``
    (``l_name``, ``l_next``; the public head of glibc's ``<link.h>``). 64-bit little-endian
    processes only (x86_64, aarch64). Never raises."""
    if not _is_elf64(f"/proc/{pid}/exe"):
        return None, "not a 64-bit little-endian ELF program"
    try:
        with open(f"/proc/{pid}/auxv", "rb") as fh:
            auxv = fh.read()
        aux = dict(struct.iter_unpack("<QQ", auxv[: len(auxv) // 16 * 16]))
        phdr, phnum = aux.get(_AT_PHDR), aux.get(_AT_PHNUM)
        if not phdr or not phnum:
            return None, "its auxiliary vector has no program headers"
        fd = os.open(f"/proc/{pid}/mem", os.O_RDONLY)
    except PermissionError:
        return None, f"/proc/{pid}/mem is not readable by this user (ptrace attach access; Yama ptrace_scope)"
    except OSError as exc:
        return None, f"/proc/{pid}/auxv or mem unreadable ({exc.strerror or exc})"
    try:
        heads = [struct.unpack_from("<IIQQQQQQ", os.pread(fd, 56, phdr + 56 * i)) for i in range(min(phnum, 256))]
        pt_phdr = next((h for h in heads if h[0] == _PT_PHDR), None)
        pt_dyn = next((h for h in heads if h[0] == _PT_DYNAMIC), None)
        if pt_dyn is None:
            return None, "a static program (no dynamic section)"
        base = phdr - pt_phdr[3] if pt_phdr is not None else 0
        dyn = base + pt_dyn[3]
        r_debug = 0
        for i in range(1024):
            tag, val = struct.unpack("<qQ", os.pread(fd, 16, dyn + 16 * i))
            if tag == _DT_NULL:
                break
            if tag == _DT_DEBUG:
                r_debug = val
                break
        if not r_debug:
            return None, "its dynamic section has no DT_DEBUG (the linker's r_debug cannot be found)"
        (link,) = struct.unpack("<Q", os.pread(fd, 8, r_debug + 8))  # r_version (int, padded), then r_map
        names: list[str] = []
        seen: set[int] = set()
        while link and link not in seen and len(seen) < 65536:
            seen.add(link)
            _l_addr, l_name, _l_ld, l_next = struct.unpack("<QQQQ", os.pread(fd, 32, link))
            name = _read_cstr(fd, l_name) if l_name else ""
            if name:
                names.append(name)
            link = l_next
        return names, "its dynamic linker's link map (/proc/PID/mem)"
    except PermissionError:
        return None, f"/proc/{pid}/mem is not readable by this user (ptrace attach access; Yama ptrace_scope)"
    except (OSError, struct.error, ValueError) as exc:
        return None, f"its link map could not be read ({exc})"
    finally:
        os.close(fd)


# --------------------------------------------------------------------------------------------
# the interpreter's sys.path
# --------------------------------------------------------------------------------------------

_PYTHON_NAME = re.compile(r"^python(\d+(\.\d+)?t?)?$")
# Options that take a value (CPython's Modules/main.c usage: -c cmd, -m mod, -W arg, -X opt,
# --check-hash-based-pycs mode).
_WITH_VALUE = "cmWX"


@dataclass
class PythonArgv:
    """A python command line taken apart (CPython's option syntax)."""

    flags: set[str] = field(default_factory=set)  # single-letter options: E, I, s, S, P, ...
    mode: str = "stdin"  # "script", "module", "command", "stdin"
    target: str = ""  # the script path or module name


def parse_python_argv(argv: list[str]) -> PythonArgv:
    """Take a ``python`` command line apart: its single-letter options (combined ones such as
    ``-uE`` too), and what it runs (``-c``, ``-m``, a script, or standard input). Pure."""
    out = PythonArgv()
    i = 1
    while i < len(argv):
        a = argv[i]
        if a == "--":
            if i + 1 < len(argv):
                out.mode, out.target = "script", argv[i + 1]
            return out
        if a.startswith("--"):
            if a == "--check-hash-based-pycs":
                i += 1
            i += 1
            continue
        if a == "-" or not a.startswith("-"):
            if a != "-":
                out.mode, out.target = "script", a
            return out
        j = 1
        while j < len(a):
            ch = a[j]
            if ch in _WITH_VALUE:
                value = a[j + 1:] or (argv[i + 1] if i + 1 < len(argv) else "")
                if not a[j + 1:]:
                    i += 1
                if ch == "c":
                    out.mode, out.target = "command", value
                    return out
                if ch == "m":
                    out.mode, out.target = "module", value
                    return out
                break
            out.flags.add(ch)
            j += 1
        i += 1
    return out


@dataclass
class PythonLayout:
    """An interpreter's start-up layout (:func:`python_layout`)."""

    executable: str
    sys_path: list[str]
    prefix: str
    base_prefix: str
    site_packages: list[str]
    user_site: str | None
    purelib: str
    platlib: str
    version: str
    how: str
    notes: list[str] = field(default_factory=list)


# Run in the target's own interpreter as ``python -I -S -c _CHILD PARAMS``: isolated (-I: no
# PYTHON* variable, no working directory or script folder on sys.path, no user site) and without
# site (-S: no .pth file, no sitecustomize). It prints what that interpreter computes at start, and
# site's rules for a venv (as site.venv sets sys.prefix) and the user site, as pure reads. What
# the process's environment would change (PYTHONPATH, PYTHONHOME, PYTHONUSERBASE, HOME) comes in
# PARAMS as plain strings and is applied by CPython's rules, never through the environment.
_CHILD = r"""
import json, os, sys, site, sysconfig
params = json.loads(sys.argv[1])
path = [p for p in sys.path if p]
exe = sys.executable
exe_dir = os.path.dirname(os.path.abspath(exe))
site_prefix = os.path.dirname(exe_dir)
prefix, exec_prefix, base_prefix = sys.prefix, sys.exec_prefix, sys.base_prefix
home = params.get("home")
if home:  # PYTHONHOME=prefix[:exec_prefix]: the standard library's folders (CPython's getpath rules)
    prefix, _, exec_prefix = home.partition(":")
    exec_prefix = exec_prefix or prefix
    base_prefix = prefix
    lib, ver = getattr(sys, "platlibdir", "lib"), "%d.%d" % sys.version_info[:2]
    path = [os.path.join(prefix, lib, "python%d%d.zip" % sys.version_info[:2]), os.path.join(prefix, lib, "python" + ver),
            os.path.join(exec_prefix, lib, "python" + ver, "lib-dynload")]
    sys.prefix, sys.exec_prefix = prefix, exec_prefix
prefixes, user_ok, venv = [prefix, exec_prefix], bool(params.get("user_site")), None
for conf in (os.path.join(exe_dir, "pyvenv.cfg"), os.path.join(site_prefix, "pyvenv.cfg")):
    if os.path.isfile(conf):
        system_site = "true"
        with open(conf, encoding="utf-8") as f:
            for line in f:
                key, eq, value = line.partition("=")
                if eq and key.strip().lower() == "include-system-site-packages":
                    system_site = value.strip().lower()
        venv = site_prefix
        prefix = exec_prefix = site_prefix
        sys.prefix = sys.exec_prefix = site_prefix  # as site.venv does (Debian's getsitepackages reads it)
        if system_site == "true":
            prefixes.insert(0, site_prefix)
        else:
            prefixes, user_ok = [site_prefix], False
        break
sites = site.getsitepackages(list(dict.fromkeys(prefixes)))
venv_sites = site.getsitepackages([site_prefix]) if venv else []
for key in ("PYTHONUSERBASE", "HOME"):
    os.environ.pop(key, None)
    if params.get(key) is not None:
        os.environ[key] = params[key]
vars = {"base": prefix, "platbase": exec_prefix, "installed_base": base_prefix, "installed_platbase": base_prefix}
paths = sysconfig.get_paths(vars=vars)
print(json.dumps({"path": path, "prefix": prefix, "base_prefix": base_prefix, "venv": venv,
                  "venv_sites": venv_sites, "sites": sites,
                  "user_site": site.getusersitepackages() if user_ok else None,
                  "purelib": paths["purelib"], "platlib": paths["platlib"],
                  "version": "%d.%d.%d" % sys.version_info[:3], "executable": exe}))
"""


def mapped_files(pid: int) -> list[tuple[str, str, int]]:
    """Every file ``/proc/PID/maps`` shows, once, in address order: (path as the process names it,
    device ``major:minor`` in hex as the kernel writes it, inode). Paths keep bytes that are not
    UTF-8 (:func:`_text`); `` (deleted)`` is kept (the file at that path is no longer the one mapped).

    Raises:
        OSError: the map cannot be read.
    """
    out: list[tuple[str, str, int]] = []
    seen: set[str] = set()
    with open(f"/proc/{pid}/maps", "rb") as fh:
        for line in fh:
            parts = line.rstrip(b"\n").split(None, 5)
            if len(parts) < 6 or not parts[5].startswith(b"/"):
                continue
            path = _text(parts[5])
            if path in seen:
                continue
            seen.add(path)
            try:
                out.append((path, _text(parts[3]), int(parts[4])))
            except ValueError:
                continue
    return out


def _defines_main(path: str) -> bool:
    """Does the ELF file ``path`` define CPython's entry point (``Py_BytesMain``, 3.8 and later, or
    ``Py_Main``) in its dynamic symbol table? Read from the file, never loaded. Never raises."""
    try:
        return any(read_symbol_bytes(path, name, 1) is not None for name in ("Py_BytesMain", "Py_Main"))
    except (OSError, NotElf, ValueError):
        return False


def cpython_proof(facts: ProcessFacts, maps: list[tuple[str, str, int]]) -> tuple[str | None, str | None]:
    """Whether the program the process runs is a CPython interpreter, from its files alone:
    ``/proc/PID/exe`` (the very file it runs, even if the path was replaced since) is named
    ``python``/``python3``/``python3.X`` and either defines CPython's entry point
    (``Py_BytesMain``/``Py_Main``: a statically linked interpreter), or needs a ``libpython3``
    whose copy it mapped defines it (a shared build: ``python.c``'s ``main`` calls it).

    Returns:
        (the mapped ``libpython`` to preload when the interpreter is run, or None; None when it is
        proven, else the sentence saying why it is not run).
    """
    name = os.path.basename(facts.exe)
    if not facts.exe or not _PYTHON_NAME.match(name):
        return None, f"its executable ({facts.exe or 'unreadable'}) is not a Python interpreter (python, python3, python3.X)"
    exe = f"/proc/{facts.pid}/exe"
    if _defines_main(exe):
        return None, None
    try:
        needed = [n for n in read_dynamic(exe).needed if n.startswith("libpython3")]
    except (OSError, NotElf, ValueError) as exc:
        return None, f"its executable {facts.exe} is not a CPython interpreter (not a readable ELF program: {exc})"
    for path, _dev, _ino in maps:
        if path.endswith(" (deleted)") or (os.path.basename(path) not in needed and not any(
                os.path.basename(path).startswith(n) for n in needed)):
            continue
        try:
            soname = read_dynamic(path).soname
        except (OSError, NotElf, ValueError):
            continue
        if soname in needed and _defines_main(path):
            return path, None
    return None, (f"its executable {facts.exe} is not a CPython interpreter (it neither defines Py_BytesMain nor "
                  "needs a libpython3 it mapped that does): it is not run")


def _started_as(facts: ProcessFacts) -> tuple[str, str | None]:
    """The interpreter path the process was started as (argv[0] resolved against its working
    directory or its PATH, as CPython sets ``sys.executable``), when it leads to the running
    binary; else its ``/proc/PID/exe`` and why."""
    argv0 = facts.argv[0] if facts.argv else ""
    cand = ""
    if "/" in argv0:
        cand = os.path.normpath(os.path.join(facts.cwd or "/", argv0))
    elif argv0:
        for d in facts.environ.get("PATH", "").split(":"):
            p = os.path.join(os.path.join(facts.cwd or "/", d) if d else (facts.cwd or "/"), argv0)
            if os.path.isfile(p) and os.access(p, os.X_OK):
                cand = os.path.normpath(p)
                break
    if cand and os.path.exists(cand) and os.path.realpath(cand) == facts.exe:
        return cand, None
    return facts.exe, (f"its argv[0] ({argv0 or 'empty'}) does not lead to the running binary (a rewritten command "
                       f"line?); {facts.exe} is used, so a virtual environment it was started from is not seen")


def _pth_dirs(sitedir: str, known: set[str], skipped: list[str], unread: list[str]) -> list[str]:
    """The folders the ``.pth`` files of ``sitedir`` add, as ``site.addsitedir`` adds them (files in
    name order, a line that is not a comment and does not start with ``import`` names a folder,
    added when it exists); ``import`` lines are code and are not run: their files go to ``skipped``.
    A ``.pth`` that is not a regular file (a FIFO would block the read) or is larger than 1 MiB is
    not read: it goes to ``unread`` with the reason."""
    out: list[str] = []
    try:
        names = sorted(n for n in os.listdir(sitedir) if n.endswith(".pth") and not n.startswith("."))
    except OSError:
        return out
    for name in names:
        path = os.path.join(sitedir, name)
        try:
            raw = read_regular(path, (1 << 20) + 1)
        except NotRegularFile as exc:
            unread.append(f"{path} ({str(exc).rsplit('(', 1)[-1].rstrip(')')}; not read)")
            continue
        except OSError:
            continue
        if len(raw) > 1 << 20:
            unread.append(f"{path} (larger than 1 MiB; not read)")
            continue
        for line in raw.decode("utf-8", "replace").splitlines():
            if not line.strip() or line.startswith("#"):
                continue
            if line.startswith(("import ", "import\t")):
                skipped.append(path)
                continue
            d = os.path.abspath(os.path.join(sitedir, line.rstrip()))
            if d not in known and os.path.exists(d):
                known.add(d)
                out.append(d)
    return out


def _pythonpath(facts: ProcessFacts, env_ignored: bool) -> list[str]:
    """The ``PYTHONPATH`` entries as CPython puts them on ``sys.path`` (an empty entry is the
    working directory, a relative one is made absolute against it); none under ``-E``/``-I``."""
    value = "" if env_ignored else facts.environ.get("PYTHONPATH", "")
    cwd = facts.cwd or "/"
    return [os.path.normpath(os.path.join(cwd, e)) if e else cwd for e in value.split(":")] if value else []


def _ask(argv: list[str], exe: str, env: dict[str, str], ids: tuple[int, int] | None,
         timeout: float) -> subprocess.CompletedProcess:
    """Run ``argv`` with the program ``exe``, in ``/`` with ``env`` only, in a session of its own
    (killed whole after ``timeout`` seconds), as ``ids`` (uid, gid; no supplementary group) when
    given."""
    user: int | None = None if ids is None else ids[0]
    group: int | None = None if ids is None else ids[1]
    extra_groups: list[int] | None = None if ids is None else []  # no supplementary group
    proc = subprocess.Popen(argv, executable=exe, env=env, cwd="/", stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True, user=user, group=group,
                            extra_groups=extra_groups)
    try:
        out, err = proc.communicate(timeout=timeout)
    except BaseException:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        proc.communicate()
        raise
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def python_layout(facts: ProcessFacts, timeout: float = 20.0,
                  maps: list[tuple[str, str, int]] | None = None) -> PythonLayout | str | None:
    """The ``sys.path`` the process's Python interpreter built at start, or a sentence saying why
    there is none (not a CPython interpreter, not runnable here), or None.

    How (no code of the process, of its folders or of its packages runs): its interpreter, proven
    to be CPython from its ELF file (:func:`cpython_proof`), is run as the very file the process
    runs (``/proc/PID/exe``) with ``argv[0]`` as the process resolved it (so a venv's
    ``pyvenv.cfg`` counts, as CPython's ``getpath`` reads it), isolated and without ``site``
    (``-I -S``), in ``/``, with no variable of the process's environment (only ``LD_PRELOAD`` of
    the ``libpython`` it mapped, for a shared build); when root checks another user's process it
    runs as that user (a ``pyvenv.cfg`` ``home`` of that user's could point at a standard library
    of that user's: it runs with no more rights than the process has). It prints its start
    ``sys.path``, prefixes, ``site.getsitepackages`` and ``getusersitepackages`` and ``sysconfig``'s
    install paths; ``PYTHONPATH``, ``PYTHONHOME``, ``PYTHONUSERBASE``, ``HOME`` and the process's
    ``-E``/``-s``/``-I`` are applied by CPython's rules. Then ``site.main``'s order is applied here:
    the folder of the script (or the working directory for ``-m``/``-c``) first unless
    ``-P``/``-I``/``PYTHONSAFEPATH``, ``PYTHONPATH``, the standard library, the venv's
    site-packages, the user site, the other site-packages, each followed by the folders its ``.pth``
    files name (read, never run; a FIFO or a file over 1 MiB is not read). Changes the program made
    to ``sys.path`` after start cannot be seen from outside. Never raises."""
    if maps is None:
        try:
            maps = mapped_files(facts.pid)
        except OSError:
            maps = []
    preload, why_not = cpython_proof(facts, maps)
    if why_not is not None:
        return why_not
    if not facts.same_root:
        return "it runs in another mount namespace: its interpreter cannot be run from here"
    if facts.exe_deleted:
        return f"its interpreter {facts.exe} was removed or replaced since it started"
    executable, note = _started_as(facts)
    notes = [note] if note else []
    argv = parse_python_argv(facts.argv)
    env_ignored = bool(argv.flags & {"E", "I"})
    penv = {} if env_ignored else facts.environ
    no_user = bool(argv.flags & {"s", "I"}) or bool(penv.get("PYTHONNOUSERSITE"))
    params = {"home": penv.get("PYTHONHOME") or None, "user_site": not no_user,
              "PYTHONUSERBASE": penv.get("PYTHONUSERBASE") or None, "HOME": facts.environ.get("HOME")}
    if penv.get("PYTHONPLATLIBDIR"):
        notes.append(f"PYTHONPLATLIBDIR={penv['PYTHONPLATLIBDIR']} is not applied: the standard library's folders are "
                     "those of the interpreter's own platlibdir")
    ids = runs_as(facts)
    if ids is not None and os.geteuid() != 0:
        return (f"it runs as user {facts.user} (uid {facts.uid}): its interpreter is run only as its own user, which "
                "needs root or that user")
    env = {"LD_PRELOAD": preload} if preload else {}
    try:
        proc = _ask([executable, "-I", "-S", "-c", _CHILD, json.dumps(params)], f"/proc/{facts.pid}/exe", env, ids,
                    timeout)
    except subprocess.TimeoutExpired:
        return f"its interpreter {executable} did not answer within {timeout:g} s"
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        return f"its interpreter {executable} could not be run ({type(exc).__name__}: {exc})"
    try:
        data = json.loads(proc.stdout.decode("utf-8", "replace").strip().splitlines()[-1])
        if not isinstance(data, dict) or not isinstance(data.get("path"), list):
            raise TypeError("not the expected answer")
    except (ValueError, TypeError, IndexError):
        last = (proc.stderr.decode("utf-8", "replace").strip().splitlines() or ["no message"])[-1][:300]
        return f"its interpreter {executable} gave no answer (exit {proc.returncode}: {last})"
    cwd_abs = facts.cwd or "/"
    safe = "P" in argv.flags or "I" in argv.flags or bool(penv.get("PYTHONSAFEPATH"))
    head: list[str] = []
    if not safe:
        if argv.mode == "script":
            head = [os.path.dirname(os.path.realpath(os.path.join(cwd_abs, argv.target)))]
        elif argv.mode in ("module", "command", "stdin"):
            head = [cwd_abs]
    path = head + _pythonpath(facts, env_ignored) + [os.path.normpath(os.path.join(cwd_abs, p)) for p in data["path"]]
    known = set(path)
    site_dirs = list(data["venv_sites"])
    if data.get("user_site"):
        site_dirs.append(data["user_site"])
    site_dirs += [s for s in data["sites"] if s not in site_dirs]
    if "S" in argv.flags:
        site_dirs = []
        notes.append("it was started with -S: no site-packages folder is on its sys.path")
    skipped: list[str] = []
    unread: list[str] = []
    for s in site_dirs:
        if not os.path.isdir(s):
            continue
        if s not in known:
            known.add(s)
            path.append(s)
        path += _pth_dirs(s, known, skipped, unread)
    if skipped:
        notes.append("import lines of " + ", ".join(dict.fromkeys(skipped)) + " were not run (code run at start-up: "
                     "an editable install's finder, setuptools' distutils hack...); what they would make importable "
                     "is not looked for")
    if unread:
        notes.append("not read: " + ", ".join(unread) + "; the folders they would add are not on the sys.path shown")
    as_user = f"; run as user {facts.user} (uid {facts.uid}), the process's own" if ids is not None else ""
    how = (f"{executable} -I -S (its own interpreter, isolated: no variable of its environment, not in its working "
           f"directory; PYTHONPATH, PYTHONHOME and the user site applied by CPython's rules, site's rules applied "
           f"here; .pth files read, not run; changes made at run time are not visible{as_user})")
    return PythonLayout(executable=executable, sys_path=path, prefix=data["prefix"], base_prefix=data["base_prefix"],
                        site_packages=[s for s in data["sites"]], user_site=data.get("user_site"),
                        purelib=data["purelib"], platlib=data["platlib"], version=data["version"], how=how, notes=notes)
