"""``cudnn-magic check --pid PID``: the check of another running process (a training job under
Slurm, a pod's process seen from a debug container, a kernel), read from outside.

What is read and how (nothing is injected into the process, nothing written, no signal sent):

* the cuDNN files it mapped: ``/proc/PID/maps``, in load order from its link map where
  ``/proc/PID/mem`` is readable (:func:`cudnn_magic.probes.process.load_order`), else in address
  order (said in the notes); each file's own version read from the file, as for this process
  (:func:`cudnn_magic.probes.loaded.mapped_copies`), never from a call in that process; a file
  removed or replaced on disk since it was loaded (``(deleted)`` in the map: ``pip install -U``
  moved its folder into pip's stash beside it, then deleted it) is named by the path it was loaded
  by (:func:`_loaded_by`) and its release read from the mapped file itself through
  ``/proc/PID/map_files`` where the kernel allows it (:func:`cudnn_magic.probes.replaced.mapped_version`),
  else unknown with the reason in the notes;
* the copy in use by the rule the check applies here (glibc reuses the first object loaded with a
  soname), except that its global scope (``RTLD_GLOBAL``) cannot be asked from outside: ``why``
  says so when several copies are mapped;
* the environment it started with (``/proc/PID/environ``): the ``LD_LIBRARY_PATH`` its loader
  used, ``PYTHONPATH``, ``CUDA_HOME``...;
* its interpreter's ``sys.path`` as built at start
  (:func:`cudnn_magic.probes.process.python_layout`: its own proven CPython run isolated with
  ``-I -S``, as its own user, ``.pth`` files read, never run), and with it the frameworks and cuDNN wheels installed for that
  interpreter and their verdicts (the probes read that layout through
  :func:`cudnn_magic.util.pyenv.checking`).

Not available from outside: what an imported framework would answer at run time, the version a
call through a copy reaches, where an already loaded library's calls are bound (its GOT), and
``sys.path`` changes made after start.
"""

from __future__ import annotations

import dataclasses
import os
import shlex
from dataclasses import dataclass, field
from typing import Any

from ..model import LibraryCopy, Report
from ..probes import libnames
from ..probes.loaded import MappedState, _bind_sublibraries, in_use, mapped_copies, replaced_copy
from ..probes.process import (
    ProcessReplaced,
    ProcessUnreadable,
    load_order,
    mapped_files,
    python_layout,
    read_process,
    runs_as,
    verify,
)
from ..probes.replaced import MappedObject, file_ranges
from ..render.report import report_json, report_text
from ..rules.pip_stash import stashed_folder
from ..util import pyenv
from ..util.files import collect_skipped
from ..util.safetext import safe_text
from .check import run_check

__all__ = ["ProcessCheckError", "ProcessReport", "check_process"]

_DELETED = " (deleted)"  # what /proc/PID/maps adds to the name of a file removed since it was mapped (proc(5))


class ProcessCheckError(Exception):
    """The process cannot be checked (exited, another user's, not a process id): one sentence."""


@dataclass
class ProcessReport:
    """The check of another process: the usual :class:`~cudnn_magic.model.Report` plus what was
    read of the process (``process``: pid, user, argv, executable, cwd, ``LD_LIBRARY_PATH``,
    ``PYTHONPATH``, ``python`` with its ``sys.path`` and how it was obtained, ``load_order``,
    notes)."""

    report: Report
    process: dict[str, Any] = field(default_factory=dict)

    @property
    def exit_code(self) -> int:
        """1 when a finding has severity "error", else 0 (as ``cudnn-magic check``)."""
        return 1 if self.report.worst_severity == "error" else 0

    def to_json(self) -> dict[str, Any]:
        """The check JSON (same keys as ``cudnn-magic check --json``) plus ``"process"``."""

        doc = report_json(self.report)
        doc["process"] = self.process
        return doc

    def text(self) -> str:
        p = self.process
        cmd = " ".join(shlex.quote(a) for a in p["argv"]).replace("\n", "\\n")
        cmd = cmd if len(cmd) <= 400 else cmd[:400] + f"... ({len(cmd)} characters; whole in --json)"

        def pathlist(value: str | None) -> str:  # a variable of the process can be 128 KiB long
            if value is None:
                return "(unset)"
            if len(value) <= 400:
                return value
            return f"{value[:400]}... ({value.count(':') + 1} entries, {len(value)} characters; whole in --json)"

        out = [f"Process {p['pid']} (user {p['user']}): {cmd or '(no command line)'}",
               f"  executable: {p['executable'] or '(unreadable)'}", f"  working directory: {p['cwd'] or '(unreadable)'}",
               f"  LD_LIBRARY_PATH at start: {pathlist(p['ld_library_path'])}",
               f"  PYTHONPATH at start: {pathlist(p['pythonpath'])}"]
        py = p.get("python")
        if isinstance(py, dict):
            out.append(f"  Python {py['version']}: {py['executable']} (prefix {py['prefix']})")
            out.append(f"  sys.path at start, from {py['how']}:")
            out += [f"    {e}" for e in py["sys_path"]]
        else:
            out.append(f"  Python: {p.get('python_unavailable') or 'not read'}")
        out.append(f"  load order read from {p['load_order']} (notes under \"Could not read\")")
        out = [safe_text(line, keep_newlines=False) for line in out] + [""]
        body = report_text(self.report, where="process").replace("in this process", f"in process {p['pid']}")
        body = safe_text(body)  # its paths and variables are the process's bytes: shown, never sent raw
        return "\n".join(out) + body

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(self.text())


def check_process(pid: Any) -> ProcessReport:
    """Check the running process ``pid`` from outside (module docstring).

    Raises:
        ProcessCheckError: ``pid`` is not a number, the process is not running (exited, a
            zombie), is a kernel thread, this user may not read its ``/proc`` files (another
            user's process without root), or it kept replacing its program (``execve``) while it
            was read. One sentence.
    """

    try:
        pid = int(str(pid).strip())
    except ValueError:
        raise ProcessCheckError(f"not a process id: {pid!r}") from None
    for attempt in range(3):  # an execve while it is read: read it again, as the new program
        try:
            return _check_once(pid)
        except ProcessReplaced as exc:
            if attempt == 2:
                raise ProcessCheckError(f"{exc}, three times: run the check again once it has settled") from None
        except ProcessUnreadable as exc:
            raise ProcessCheckError(str(exc)) from None
    raise AssertionError("unreachable")


@dataclass(frozen=True)
class _File:
    """One cuDNN file a process mapped (:func:`_mapped_cudnn`)."""

    path: str  # the path it is reported by: the path it was loaded by, where known
    read_at: str | None  # where its file is read here; None for a file removed or replaced on disk since
    replaced: MappedObject | None  # the mapping of a file removed or replaced on disk since it was loaded


def _loaded_by(gone: str, names: list[str], same_root: bool) -> tuple[str, str | None, str] | None:
    """The path a file that ``/proc/PID/maps`` shows deleted at ``gone`` was loaded by, among the
    link map's ``names`` (absolute): the same path (deleted or replaced where it lay: ``pip install
    --target --upgrade``), or the same file name in the folder that pip's stash folder in ``gone``
    came from (:func:`~cudnn_magic.rules.pip_stash.stashed_folder`: ``pip install -U`` or ``pip
    uninstall`` moved the folder aside, then deleted it). Each name is tried as written and, on this
    file system, with its symbolic links resolved (the kernel and pip name real paths). Returns
    (that path, the folder pip moved aside or None, the name it matched), or None."""
    for n in names:
        if os.path.basename(n) != os.path.basename(gone):  # both keep the file name (a wheel holds no symbolic link)
            continue
        for form in dict.fromkeys([n, os.path.realpath(n)] if same_root else [n]):
            if form == gone:
                return form, None, n
            folder = stashed_folder(gone, form)
            if folder is not None:
                return form, folder, n
    return None


def _mapped_cudnn(facts: Any, maps: list[tuple[str, str, int]], names: list[str] | None) -> list[_File]:
    """The cuDNN files the process mapped, in load order where its link map was read, else in
    address order, each with the path it is reported by, where it is read here (its own path, or
    through ``/proc/PID/root`` when the process is in another mount namespace), or its mapping when
    it was removed or replaced on disk since it was loaded.

    Only files ``/proc/PID/maps`` shows are reported (the link map is in the process's own memory,
    which it can write). A file shown `` (deleted)`` is named by the path the link map says it was
    loaded by when that path is the same, or is its path before pip moved its folder aside
    (:func:`_loaded_by`); else by the path the map shows."""
    pid = facts.pid
    shown = [p for p, _dev, _ino in maps if libnames.is_cudnn_name(os.path.basename(p.removesuffix(_DELETED)))]
    inodes = {p: ino for p, _dev, ino in maps}
    ranges = file_ranges(facts.maps_path)
    full_names = [os.path.normpath(os.path.join(facts.cwd or "/", n)) for n in names or ()]
    files: dict[str, _File] = {}  # by the name the map shows
    claimed: set[str] = set()  # link-map names a deleted file was matched to
    for p in shown:
        if not p.endswith(_DELETED):
            files[p] = _File(p, p if facts.same_root else facts.root + p, None)
            continue
        gone = p.removesuffix(_DELETED)
        hit = _loaded_by(gone, [n for n in full_names if n not in claimed], facts.same_root)
        if hit is None:
            path = gone
            why = (f"the file it mapped was removed or replaced on disk since it was loaded (/proc/{pid}/maps marks "
                   "it deleted); the path it was loaded by is not known (" +
                   ("its link map was not read" if names is None else "its link map names no such file") +
                   "), so it is named by the path the map shows")
        else:
            path = hit[0]
            claimed.add(hit[2])
            why = (f"the file it was loaded from was removed or replaced on disk since it was loaded (/proc/{pid}/maps "
                   "marks it deleted)" if hit[1] is None else
                   "the file it was loaded from was replaced on disk since it was loaded: pip moved its folder aside "
                   "during an upgrade or uninstall (into a stash folder beside it, named by pip's rule) and then "
                   "deleted it")
        files[p] = _File(path, None, MappedObject(path=path, loaded_as=path, shown=p, replaced=why,
                                                  ranges=ranges.get((p, inodes.get(p, -1)), ())))
    ordered: list[_File] = []
    for full in full_names:
        real = {full, os.path.realpath(full)} if facts.same_root else {full}
        f = next((f for f in files.values() if f.path in real and f not in ordered), None)
        if f is not None:
            ordered.append(f)
    return ordered + [f for f in files.values() if f not in ordered]


def _check_once(pid: int) -> ProcessReport:
    facts = read_process(pid)
    notes = list(facts.notes)
    ldp = facts.environ.get("LD_LIBRARY_PATH", "")
    try:
        maps = mapped_files(pid)
    except OSError as exc:
        raise ProcessCheckError(f"process {pid}: its memory map could not be read ({exc.strerror or exc})") from None
    names, order_how = load_order(pid, facts.exe)
    if names is not None:
        order_src = order_how
    else:
        notes.append(f"load order unknown ({order_how}): the cuDNN files are listed in /proc/{pid}/maps address order")
        order_src = f"/proc/{pid}/maps address order"
    files = _mapped_cudnn(facts, maps, names)
    layout = python_layout(facts, maps=maps)
    may_load = runs_as(facts) is None
    py_json: dict[str, Any] | None = None
    if isinstance(layout, str) or layout is None:
        env = pyenv.PythonEnv(executable=facts.exe, sys_path=(), prefix="", base_prefix="", maps_path=facts.maps_path,
                              pid=pid, may_load=may_load)
        notes.append(f"no Python layout: {layout or 'not read'}; frameworks are not looked for")
    else:
        env = pyenv.PythonEnv(executable=layout.executable, sys_path=tuple(layout.sys_path), prefix=layout.prefix,
                              base_prefix=layout.base_prefix, site_packages=tuple(layout.site_packages),
                              user_site=layout.user_site, purelib=layout.purelib, platlib=layout.platlib,
                              maps_path=facts.maps_path, pid=pid, may_load=may_load)
        notes += layout.notes
        py_json = {"executable": layout.executable, "version": layout.version, "prefix": layout.prefix,
                   "base_prefix": layout.base_prefix, "sys_path": layout.sys_path, "how": layout.how}
    environ = dict(facts.environ)
    if not facts.same_root:
        notes.append(f"process {pid} runs in another mount namespace (a container): the cuDNN files it mapped are read "
                     f"through /proc/{pid}/root, as it sees them; the folders on its LD_LIBRARY_PATH are not scanned "
                     "(the same paths here may be other files), and the driver, GPUs and CUDA toolkit are this machine's")
        environ.pop("LD_LIBRARY_PATH", None)
    with pyenv.checking(env):
        with collect_skipped() as skipped:
            got = {c.path: c for c in mapped_copies([f.read_at for f in files if f.read_at is not None])}
        copies = []
        objects = [f.replaced for f in files if f.replaced is not None]
        root = "" if facts.same_root else facts.root
        for i, f in enumerate(files):
            p = f.path
            c = got.get(f.read_at or "")
            if f.replaced is not None:  # removed or replaced on disk since it was mapped: the mapped file's own release
                c = replaced_copy(f.replaced, objects, i, pid=pid, root=root)
                if c.version is None:
                    notes.append(f"{p}: {f.replaced.replaced}; the release of the mapped copy is not known: "
                                 f"{(c.error or '').removeprefix('release of the mapped copy unknown: ')}")
            elif c is None:  # its file could not be read
                name = os.path.basename(p)
                c = LibraryCopy(path=p, name=name, soname=libnames.soname_of(name), version=None, version_source=None,
                                owner="unknown", source="mapped", loaded=True, is_main=libnames.is_main(name),
                                load_order=i)
            elif f.read_at != p:
                c = dataclasses.replace(c, path=p, version_source=(c.version_source and
                                                                    f"{c.version_source}, read through /proc/{pid}/root"))
            copies.append(dataclasses.replace(c, load_order=i))
        copies = _bind_sublibraries(copies)
        mapped = MappedState(copies=tuple(copies), notes=[])
        mapped.in_use = in_use(copies, ldp, this_process=False, order=order_src)
        report = run_check(environ=environ, mapped=mapped)
    notes += [f"skipped {p}: {why}" for p, why in sorted(skipped.items())]
    verify(facts)
    extra = (("nothing could be read from the process at run time: what an imported framework would answer, the "
              "version calls through a copy reach, where a loaded library's calls are bound"),)
    report = dataclasses.replace(report, notes=tuple(report.notes) + tuple(notes) + extra)
    process = {
        "pid": pid, "uid": facts.uid, "user": facts.user, "argv": facts.argv, "executable": facts.exe,
        "cwd": facts.cwd, "ld_library_path": facts.environ.get("LD_LIBRARY_PATH"),
        "pythonpath": facts.environ.get("PYTHONPATH"), "python": py_json,
        "python_unavailable": layout if isinstance(layout, str) else None,
        "load_order": order_src, "same_root": facts.same_root, "notes": notes,
    }
    return ProcessReport(report, process)
