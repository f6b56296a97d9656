"""The prevention results (before an install, and against a saved stack), plain data: the what-if's :class:`WhatIf` with its
:class:`Change` rows (:mod:`cudnn_magic.engines.whatif` computes them, :mod:`cudnn_magic.render.whatif`
shows them) and a manifest comparison's :class:`Drift` rows (:mod:`cudnn_magic.engines.manifest`,
:mod:`cudnn_magic.render.manifest`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .report import Finding, Report

__all__ = ["Change", "Drift", "WhatIf"]


@dataclass(frozen=True)
class Change:
    """One distribution pip would install: ``old`` is the version replaced (None: new)."""

    name: str
    new: str
    old: str | None = None

    def __str__(self) -> str:
        return f"{self.name} {self.old} -> {self.new}" if self.old else f"{self.name} {self.new} (new)"


@dataclass(frozen=True)
class WhatIf:
    """The prediction for one ``pip install REQ...``.

    Attributes:
        requirements: what was asked (the words after ``pip install``).
        changes: what pip would install or replace (from pip's report).
        present: the environment now, judged by the rules (a :class:`~cudnn_magic.model.Report`).
        predicted: the environment after the install, judged by the same rules.
        introduced: predicted findings that are not present now (by id and title).
        resolved: present findings the install would make disappear.
        safer: a requirement predicted to cause no error (verified by a second what-if), or None.
        safer_why: why that one.
        notes: what the prediction assumes or could not read.
        pip_s, rules_s: seconds spent in pip and in our rules.
    """

    requirements: tuple[str, ...]
    changes: tuple[Change, ...]
    present: Report
    predicted: Report
    introduced: tuple[Finding, ...] = ()
    resolved: tuple[Finding, ...] = ()
    safer: str | None = None
    safer_why: str = ""
    notes: tuple[str, ...] = ()
    pip_s: float = 0.0
    rules_s: float = 0.0

    @property
    def error(self) -> bool:
        """True when a predicted finding is an error (the CLI exits 1)."""
        return any(f.severity == "error" for f in self.predicted.findings)

    @property
    def introduces_error(self) -> bool:
        """True when the install would add an error that is not present now (the guard stops)."""
        return any(f.severity == "error" for f in self.introduced)


def _show(v: Any) -> str:
    return "absent" if v is None else str(v)


@dataclass(frozen=True)
class Drift:
    """One difference that matters: ``what`` ("distribution nvidia-cudnn-jit-cu13",
    "cuDNN copy PATH", "framework PyTorch", "driver", "GPU 0"), ``field`` (version, sha256,
    verdict...), ``old`` and ``new`` (None: absent), ``now`` (what the rules say now)."""

    what: str
    field: str
    old: Any
    new: Any
    now: str = ""

    def __str__(self) -> str:
        f = "" if self.field in ("", "present") else f" {self.field}"
        return f"{self.what}{f}: {_show(self.old)} -> {_show(self.new)}" + (f" ({self.now})" if self.now else "")
