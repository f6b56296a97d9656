"""What a crash record says about a kernel that died (:class:`CrashRecord`); read by
:mod:`cudnn_magic.capture.records`, diagnosed by :mod:`cudnn_magic.engines.crash`, rendered by
:mod:`cudnn_magic.render.crash`."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from .display import Displayed

if TYPE_CHECKING:  # annotations only: a crash record loads without the report's types
    from .report import Diagnosis

__all__ = ["CrashRecord"]


@dataclass
class CrashRecord(Displayed):
    """What a record says about a kernel that died.

    Attributes:
        key: the record key (see :func:`cudnn_magic.render.crash.key_description`).
        connection_file: the kernel's connection file as the capture saved it in
            ``<key>/connection`` (a Jupyter kernel's ``kernel-<id>.json``), or ``None``
            (terminal IPython, records of older cudnn-magic).
        directory: the record's instance directory.
        kernel_pid: the dead kernel's process id (``None`` if unknown).
        started: when that kernel installed the capture (epoch seconds) or ``None``.
        died: when it died (epoch seconds: the capture helper's ``kernel_exited``, else the
            newest file time) or ``None``.
        cell_number: execution count of the cell it was running, if known.
        cell_source: that cell's source (first 8,084 bytes of UTF-8), or ``None``.
        cell_started: when that cell started (epoch seconds) or ``None``.
        log: the native stderr from that cell's start to the end of the record (newest
            :data:`cudnn_magic.capture.records.MAX_LOG_FOR_DIAGNOSIS` bytes), display-safe text.
        log_tail: the newest :data:`cudnn_magic.capture.records.MAX_LOG_TAIL` bytes of the record, display-safe text.
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
        diagnoses: :class:`~cudnn_magic.model.Diagnosis` list, after
            :func:`cudnn_magic.engines.crash.diagnose_record`.
    """

    key: str
    directory: str
    connection_file: str | None = None
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
    python_version: tuple[int, ...] | None = None
    problems: list[str] = field(default_factory=list)
    shown: bool = False
    clean_exit: bool = False
    alive: bool = False
    diagnoses: list[Diagnosis] = field(default_factory=list)

    @property
    def crashed(self) -> bool:
        """Dead without a clean exit."""
        return not self.alive and not self.clean_exit

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict (diagnoses as their ids)."""
        d = asdict(self)
        d["diagnoses"] = [getattr(x, "id", str(x)) for x in self.diagnoses]
        d["crashed"] = self.crashed
        return d

    def __repr__(self) -> str:
        return self.text()
