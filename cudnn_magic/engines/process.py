"""``cudnn-magic check --pid PID``: the check of another running process (a training job under
Slurm, a pod's process seen from a debug container, a kernel), read from outside.

What is read and how (nothing is injected into the process, nothing written, no signal sent):

* the cuDNN files it mapped: ``/proc/PID/maps``, in load order from its link map where
  ``/proc/PID/mem`` is readable (:func:`cudnn_magic.probes.process.load_order`), else in address
  order (said in the notes); each file's own version read from the file, as for this process
  (:func:`cudnn_magic.probes.loaded.mapped_copies`), never from a call in that process;
* the copy in use by the rule the check applies here (glibc reuses the first object loaded with a
  soname), except that its global scope (``RTLD_GLOBAL``) cannot be asked from outside: ``why``
  says so when several copies are mapped;
* the environment it started with (``/proc/PID/environ``): the ``LD_LIBRARY_PATH`` its loader
  used, ``PYTHONPATH``, ``CUDA_HOME``...;
* its interpreter's ``sys.path`` as built at start
  (:func:`cudnn_magic.probes.process.python_layout`: the interpreter run with ``-S``, ``.pth``
  files read, never run), and with it the frameworks and cuDNN wheels installed for that
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

from ..model import Report
from .check import run_check
from ..probes import libnames
from ..util import pyenv
from ..probes.loaded import _bind_sublibraries, _maps_paths, in_use, mapped_copies, MappedState
from ..probes.process import load_order, ProcessUnreadable, python_layout, read_process, still_same
from ..render.report import report_json, report_text
from ..util.safetext import safe_text

__all__ = ["ProcessCheckError", "ProcessReport", "check_process"]


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
        cmd = cmd if len(cmd) <= 400 else cmd[:400] + "..."
        out = [f"Process {p['pid']} (user {p['user']}): {cmd or '(no command line)'}",
               f"  executable: {p['executable'] or '(unreadable)'}", f"  working directory: {p['cwd'] or '(unreadable)'}",
               f"  LD_LIBRARY_PATH at start: {p['ld_library_path'] if p['ld_library_path'] is not None else '(unset)'}",
               f"  PYTHONPATH at start: {p['pythonpath'] if p['pythonpath'] is not None else '(unset)'}"]
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
        return "\n".join(out) + body

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(self.text())


def check_process(pid: Any) -> ProcessReport:
    """Check the running process ``pid`` from outside (module docstring).

    Raises:
        ProcessCheckError: ``pid`` is not a number, the process is not running (exited, a
            zombie), or this user may not read its ``/proc`` files (another user's process
            without root). One sentence.
    """

    try:
        pid = int(str(pid).strip())
    except ValueError:
        raise ProcessCheckError(f"not a process id: {pid!r}") from None
    try:
        facts = read_process(pid)
    except ProcessUnreadable as exc:
        raise ProcessCheckError(str(exc)) from None
    notes = list(facts.notes)
    ldp = facts.environ.get("LD_LIBRARY_PATH", "")

    # What it mapped, in load order where its link map can be read.
    try:
        maps = _maps_paths(facts.maps_path)
    except OSError as exc:
        raise ProcessCheckError(f"process {pid}: its memory map could not be read ({exc.strerror or exc})") from None
    names, order_how = load_order(pid, facts.exe)
    ordered: list[str] = []
    if names is not None:
        for n in names:
            if libnames.is_cudnn_name(os.path.basename(n)):
                real = os.path.realpath(os.path.join(facts.cwd or "/", n))
                if real not in ordered:
                    ordered.append(real)
        order_src = order_how
    else:
        notes.append(f"load order unknown ({order_how}): the cuDNN files are listed in /proc/{pid}/maps address order")
        order_src = f"/proc/{pid}/maps address order"
    ordered += [os.path.realpath(m) for m in maps if os.path.realpath(m) not in ordered]
    copies = _bind_sublibraries(mapped_copies(ordered))
    mapped = MappedState(copies=tuple(copies), notes=[])
    mapped.in_use = in_use(copies, ldp, this_process=False, order=order_src)

    layout = python_layout(facts)
    py_json: dict[str, Any] | None = None
    if isinstance(layout, str) or layout is None:
        env = pyenv.PythonEnv(executable=facts.exe, sys_path=(), prefix="", base_prefix="", maps_path=facts.maps_path,
                              pid=pid)
        notes.append(f"no Python layout: {layout or 'not read'}; frameworks are not looked for")
    else:
        env = pyenv.PythonEnv(executable=layout.executable, sys_path=tuple(layout.sys_path), prefix=layout.prefix,
                              base_prefix=layout.base_prefix, site_packages=tuple(layout.site_packages),
                              user_site=layout.user_site, purelib=layout.purelib, platlib=layout.platlib,
                              maps_path=facts.maps_path, pid=pid)
        notes += layout.notes
        py_json = {"executable": layout.executable, "version": layout.version, "prefix": layout.prefix,
                   "base_prefix": layout.base_prefix, "sys_path": layout.sys_path, "how": layout.how}
    with pyenv.checking(env):
        report = run_check(environ=dict(facts.environ), mapped=mapped)
    if not still_same(facts):
        raise ProcessCheckError(f"process {pid} exited while it was being checked")
    extra = ("nothing could be read from the process at run time: what an imported framework would answer, the "
             "version calls through a copy reach, where a loaded library's calls are bound",)
    report = dataclasses.replace(report, notes=tuple(report.notes) + tuple(notes) + extra)
    process = {
        "pid": pid, "uid": facts.uid, "user": facts.user, "argv": facts.argv, "executable": facts.exe,
        "cwd": facts.cwd, "ld_library_path": facts.environ.get("LD_LIBRARY_PATH"),
        "pythonpath": facts.environ.get("PYTHONPATH"), "python": py_json,
        "python_unavailable": layout if isinstance(layout, str) else None,
        "load_order": order_src, "same_root": facts.same_root, "notes": notes,
    }
    return ProcessReport(report, process)
