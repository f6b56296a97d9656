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
import struct
import subprocess
from dataclasses import dataclass, field

__all__ = ["ProcessFacts", "ProcessUnreadable", "read_process", "load_order", "python_layout", "PythonLayout",
           "parse_python_argv"]


class ProcessUnreadable(Exception):
    """The process cannot be checked: it exited, or its ``/proc`` files are not readable by this
    user. The message is one sentence, shown as is (the CLI exits 2)."""


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
            this process's ``/``); False in another container's mount namespace.
        start_ticks: its start time in clock ticks after boot (``stat`` field 22): the pid is
            the same process while this holds.
        notes: what could not be read.
    """

    pid: int
    uid: int = -1
    user: str = ""
    argv: list[str] = field(default_factory=list)
    exe: str = ""
    exe_deleted: bool = False
    cwd: str = ""
    environ: dict[str, str] = field(default_factory=dict)
    same_root: bool = True
    start_ticks: int | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def maps_path(self) -> str:
        return f"/proc/{self.pid}/maps"


def _stat_fields(pid: int) -> tuple[str, int] | None:
    """(state letter, start time in ticks) from ``/proc/PID/stat``; None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            raw = fh.read().decode("utf-8", "replace")
    except OSError:
        return None
    rest = raw[raw.rfind(")") + 2:].split()  # the command name may hold spaces and parentheses
    try:
        return rest[0], int(rest[19])
    except (IndexError, ValueError):
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
    return ProcessUnreadable(
        f"process {facts.pid} belongs to user {facts.user} (uid {facts.uid}) and this user ({_user(me)}, uid {me}) "
        f"may not read its {what}: run cudnn-magic as that user, or as root")


def still_same(facts: ProcessFacts) -> bool:
    """The pid still names the process :func:`read_process` read (not exited, not reused)."""
    st = _stat_fields(facts.pid)
    return st is not None and st[0] not in "ZX" and st[1] == facts.start_ticks


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
    facts = ProcessFacts(pid=pid, start_ticks=st[1])
    try:
        with open(f"/proc/{pid}/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"Uid:"):
                    facts.uid = int(line.split()[1])
                    break
    except (OSError, ValueError, IndexError):
        raise _gone(pid) from None
    facts.user = _user(facts.uid)
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
                    facts.environ[key.decode("utf-8", "replace")] = value.decode("utf-8", "replace")
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            facts.argv = [a.decode("utf-8", "replace") for a in fh.read().split(b"\0")[:-1]]
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
    except OSError as exc:
        facts.notes.append(f"/proc/{pid}/root unreadable ({exc.strerror or exc}); its paths are taken as this machine's")
    if not facts.same_root:
        facts.notes.append(f"process {pid} runs with another root directory (a container's mount namespace): the paths "
                           "it mapped are read at the same paths here, which may be other files")
    if not still_same(facts):
        raise _gone(pid)
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


# Run in the target's interpreter with -S (no site: no .pth file and no sitecustomize runs) and
# the process's own -E/-s: print what that interpreter computes at start, and site's rules for a
# venv (site.venv, without its addsitepackages) and the user site, as pure reads.
_CHILD = r"""
import json, os, sys, site, sysconfig
path = list(sys.path)
if path and path[0] == "" and not getattr(sys.flags, "safe_path", False):
    path = path[1:]  # the entry -c itself adds
exe = sys.executable
exe_dir = os.path.dirname(os.path.abspath(exe))
site_prefix = os.path.dirname(exe_dir)
prefix, exec_prefix = sys.prefix, sys.exec_prefix
prefixes, user_ok, venv = [sys.prefix, sys.exec_prefix], not sys.flags.no_user_site, None
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
        if system_site == "true":
            prefixes.insert(0, site_prefix)
        else:
            prefixes, user_ok = [site_prefix], False
        break
sites = site.getsitepackages(list(dict.fromkeys(prefixes)))
venv_sites = site.getsitepackages([site_prefix]) if venv else []
vars = {"base": prefix, "platbase": exec_prefix, "installed_base": sys.base_prefix,
        "installed_platbase": sys.base_exec_prefix}
paths = sysconfig.get_paths(vars=vars)
print(json.dumps({"path": path, "prefix": prefix, "base_prefix": sys.base_prefix, "venv": venv,
                  "venv_sites": venv_sites, "sites": sites,
                  "user_site": site.getusersitepackages() if user_ok else None,
                  "purelib": paths["purelib"], "platlib": paths["platlib"],
                  "version": "%d.%d.%d" % sys.version_info[:3], "executable": exe}))
"""


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


def _pth_dirs(sitedir: str, known: set[str], skipped: list[str]) -> list[str]:
    """The folders the ``.pth`` files of ``sitedir`` add, as ``site.addsitedir`` adds them (files in
    name order, a line that is not a comment and does not start with ``import`` names a folder,
    added when it exists); ``import`` lines are code and are not run: their files go to ``skipped``."""
    out: list[str] = []
    try:
        names = sorted(n for n in os.listdir(sitedir) if n.endswith(".pth") and not n.startswith("."))
    except OSError:
        return out
    for name in names:
        try:
            with open(os.path.join(sitedir, name), "rb") as fh:
                text = fh.read(1 << 20).decode("utf-8", "replace")
        except OSError:
            continue
        for line in text.splitlines():
            if not line.strip() or line.startswith("#"):
                continue
            if line.startswith(("import ", "import\t")):
                skipped.append(os.path.join(sitedir, name))
                continue
            d = os.path.abspath(os.path.join(sitedir, line.rstrip()))
            if d not in known and os.path.exists(d):
                known.add(d)
                out.append(d)
    return out


def python_layout(facts: ProcessFacts, timeout: float = 20.0) -> PythonLayout | None | str:
    """The ``sys.path`` the process's Python interpreter built at start, or a sentence saying why
    there is none (not a Python interpreter, not runnable here), or None.

    How (no code of the process or of its packages runs, here or there): its interpreter (argv[0]
    resolved as CPython resolves ``sys.executable``, so a venv's ``pyvenv.cfg`` counts) is run with
    ``-S`` (``site`` is not imported: no ``.pth`` import line, no ``sitecustomize``), plus the
    process's own ``-E``/``-s``/``-I``, in its working directory with its ``PYTHON*`` variables,
    ``HOME`` and ``LD_LIBRARY_PATH``; it prints its start ``sys.path`` (the script folder aside),
    prefixes, ``site.getsitepackages`` and ``getusersitepackages``, and ``sysconfig``'s install
    paths. Then ``site.main``'s order is applied here: the folder of the script (or the working
    directory for ``-m``/``-c``) first unless ``-P``/``-I``/``PYTHONSAFEPATH``, the venv's
    site-packages, the user site, the other site-packages, each followed by the folders its
    ``.pth`` files name (read, never run). Changes the program made to ``sys.path`` after start
    cannot be seen from outside."""
    exe_name = os.path.basename(facts.exe)
    if not facts.exe or not _PYTHON_NAME.match(exe_name):
        return f"its executable ({facts.exe or 'unreadable'}) is not a Python interpreter (python, python3, python3.X)"
    if not facts.same_root:
        return "it runs in another mount namespace: its interpreter cannot be run from here"
    if facts.exe_deleted:
        return f"its interpreter {facts.exe} was removed or replaced since it started"
    executable, note = _started_as(facts)
    notes = [note] if note else []
    argv = parse_python_argv(facts.argv)
    env_ignored = bool(argv.flags & {"E", "I"})
    flags = ["-S"] + (["-E"] if env_ignored else []) + (["-s"] if argv.flags & {"s", "I"} else [])
    keep = ("PYTHONPATH", "PYTHONHOME", "PYTHONNOUSERSITE", "PYTHONUSERBASE", "PYTHONPLATLIBDIR", "PYTHONSAFEPATH",
            "HOME", "LD_LIBRARY_PATH", "PATH")
    env = {k: v for k, v in facts.environ.items() if k in keep}
    env.setdefault("PATH", "/usr/bin:/bin")
    cwd = facts.cwd if facts.cwd and os.path.isdir(facts.cwd) else "/"
    try:
        proc = subprocess.run([executable, *flags, "-c", _CHILD], env=env, cwd=cwd, capture_output=True,
                              timeout=timeout, stdin=subprocess.DEVNULL)
        data = json.loads(proc.stdout.decode("utf-8", "replace").strip().splitlines()[-1])
    except subprocess.TimeoutExpired:
        return f"its interpreter {executable} did not answer within {timeout:g} s"
    except (OSError, ValueError, IndexError) as exc:
        return f"its interpreter {executable} could not be asked ({type(exc).__name__}: {exc})"
    cwd_abs = facts.cwd or "/"
    safe = "P" in argv.flags or "I" in argv.flags or (not env_ignored and bool(facts.environ.get("PYTHONSAFEPATH")))
    head: list[str] = []
    if not safe:
        if argv.mode == "script":
            head = [os.path.dirname(os.path.realpath(os.path.join(cwd_abs, argv.target)))]
        elif argv.mode in ("module", "command", "stdin"):
            head = [cwd_abs]
    path = head + [os.path.normpath(os.path.join(cwd_abs, p)) if p else cwd_abs for p in data["path"]]
    known = set(path)
    site_dirs = list(data["venv_sites"])
    if data.get("user_site"):
        site_dirs.append(data["user_site"])
    site_dirs += [s for s in data["sites"] if s not in site_dirs]
    if "S" in argv.flags:
        site_dirs = []
        notes.append("it was started with -S: no site-packages folder is on its sys.path")
    skipped: list[str] = []
    for s in site_dirs:
        if not os.path.isdir(s):
            continue
        if s not in known:
            known.add(s)
            path.append(s)
        path += _pth_dirs(s, known, skipped)
    if skipped:
        notes.append("import lines of " + ", ".join(dict.fromkeys(skipped)) + " were not run (code run at start-up: "
                     "an editable install's finder, setuptools' distutils hack...); what they would make importable "
                     "is not looked for")
    how = (f"{executable} -S {' '.join(flags[1:])} (site's rules applied here; .pth files read, not run; changes made "
           "at run time are not visible)").replace("  ", " ")
    return PythonLayout(executable=executable, sys_path=path, prefix=data["prefix"], base_prefix=data["base_prefix"],
                        site_packages=[s for s in data["sites"]], user_site=data.get("user_site"),
                        purelib=data["purelib"], platlib=data["platlib"], version=data["version"], how=how, notes=notes)
