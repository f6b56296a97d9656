"""What a crash record says about a kernel that died (:class:`CrashRecord`); read by
:mod:`cudnn_magic.capture.records`, rendered by :mod:`cudnn_magic.render.crash`."""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field, replace
from typing import Any

log = logging.getLogger("cudnn_magic")

__all__ = ["CrashRecord"]


@dataclass
class CrashRecord:
    """What a record says about a kernel that died.

    Attributes:
        key: the record key (see :func:`cudnn_magic.render.crash.key_description`).
        directory: the record's instance directory.
        kernel_pid: the dead kernel's process id (``None`` if unknown).
        started: when that kernel installed the capture (epoch seconds) or ``None``.
        died: when it died (epoch seconds: the capture helper's ``kernel_exited``, else the
            newest file time) or ``None``.
        cell_number: execution count of the cell it was running, if known.
        cell_source: that cell's source (first 8,092 bytes of UTF-8), or ``None``.
        cell_started: when that cell started (epoch seconds) or ``None``.
        log: the native stderr from that cell's start to the end of the record (newest
            :data:`cudnn_magic.capture.records.MAX_LOG_FOR_DIAGNOSIS` bytes), display-safe text.
        log_tail: the newest :data:`cudnn_magic.capture.records.MAX_LOG_FOR_DISPLAY` bytes of the record, display-safe text.
        log_missing: bytes of that cell's output no longer in the bounded log (rotated away).
        faulthandler: the Python stack(s) faulthandler wrote at the fatal signal, or "".
        python_version: the dead kernel's Python as a tuple such as ``(3, 11, 7)`` (from the
            record's ``meta.json``), or ``None`` for records of older cudnn-magic.
        faulthandler_on: the record has a faulthandler file (so an empty one means no fatal
            signal was caught: SIGKILL from outside, such as the out-of-memory killer or a
            restart of a kernel that did not answer the shutdown request).
        problems: what is wrong with the record (truncated, corrupt, missing files).
        shown: whether the record had been shown before this read.
        clean_exit: the helper saw a clean exit (then it is not a crash).
        alive: the kernel process still runs.
        diagnoses: :class:`~cudnn_magic.model.Diagnosis` list, after :meth:`diagnose`.
    """

    key: str
    directory: str
    kernel_pid: int | None = None
    started: float | None = None
    died: float | None = None
    cell_number: int | None = None
    cell_source: str | None = None
    cell_started: float | None = None
    log: str = ""
    log_tail: str = ""
    log_missing: int = 0
    faulthandler: str = ""
    faulthandler_on: bool = False
    python_version: tuple | None = None
    problems: list[str] = field(default_factory=list)
    shown: bool = False
    clean_exit: bool = False
    alive: bool = False
    diagnoses: list = field(default_factory=list)

    def stack_summary(self) -> str:
        """:func:`cudnn_magic.engines.crash.faulthandler_summary` of :attr:`faulthandler`; a dump of CPython 3.10+ (which
        ends complete dumps with ``Extension modules: ...``) without that end was cut short."""
        from ..engines.crash import faulthandler_summary  # a cycle: the engine imports this type

        v = self.python_version
        return faulthandler_summary(self.faulthandler,
                                    ends_with_module_list=None if v is None else tuple(v[:2]) >= (3, 10))

    @property
    def crashed(self) -> bool:
        """Dead without a clean exit."""
        return not self.alive and not self.clean_exit

    def diagnose(self, with_facts: bool = True) -> list:
        """Diagnose the record's log (and its faulthandler stack) like an annotated error cell:
        ``diagnose(log=..., traceback=...)``; live facts of THIS process are consulted only when
        something cuDNN-related was found (``with_facts``). ``restart-kernel`` is left out: the
        kernel that shows the record is the restart (or the one that died is gone). Fills and
        returns :attr:`diagnoses`."""
        from ..engines.diagnose import diagnose  # start-up cost: the knowledge tables, only for a record to show

        kw = dict(exception="", log=self.log or self.log_tail, traceback=self.faulthandler)
        found = diagnose(report=None, **kw)
        if found and with_facts:
            try:
                from ..engines.check import cached_report  # start-up cost: the probes, only when something was found

                found = diagnose(report=cached_report(), **kw) or found
            except Exception:  # noqa: BLE001
                log.debug("cudnn_magic: facts for the crash diagnosis failed", exc_info=True)
        # this kernel IS the restart: a notice that offers restart-kernel again offers what just happened
        self.diagnoses = [replace(d, fixes=tuple(f for f in d.fixes if f.id != "restart-kernel"))
                          if any(f.id == "restart-kernel" for f in d.fixes) else d for d in found]
        return self.diagnoses

    def to_json(self) -> dict:
        """JSON-ready dict (diagnoses as their ids)."""
        d = asdict(self)
        d["diagnoses"] = [getattr(x, "id", str(x)) for x in self.diagnoses]
        d["crashed"] = self.crashed
        return d

    def text(self) -> str:
        """Plain text (terminal IPython, ``text/plain``): :func:`cudnn_magic.render.crash.crash_text`."""
        from ..render.crash import crash_text  # a cycle: the renderer reads this type

        return crash_text(self)

    def html(self) -> str:
        """Compact escaped HTML (no JavaScript): :func:`cudnn_magic.render.crash.crash_html`."""
        from ..render.crash import crash_html  # a cycle: the renderer reads this type

        return crash_html(self)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict:
        return {"text/plain": self.text(), "text/html": self.html()}

    def __repr__(self) -> str:
        return self.text()
