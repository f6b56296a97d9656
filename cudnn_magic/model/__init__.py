"""Every result type, plain data (no I/O, no IPython): the check :class:`Report` and its parts,
:class:`Diagnosis`/:class:`Diagnoses`, :class:`Fix`, :class:`MemorySnapshot` (:mod:`.report`);
the fix registry's :class:`FixPlan`/:class:`FixResult`/:class:`Step` (:mod:`.fixes`); the
crash :class:`CrashRecord` (:mod:`.crash`); the cluster's :class:`ClusterReport`/:class:`WorkerRow`
(:mod:`.cluster`); the what-if's :class:`WhatIf`/:class:`Change` and a manifest's :class:`Drift`
(:mod:`.prevention`). Each renders through :mod:`cudnn_magic.render`.

This module only re-exports those names, on first use: importing one submodule (the crash
record at ``%load_ext``) does not load the others.
"""

from __future__ import annotations

import importlib
from typing import Any

#: Name -> the submodule of this package that defines it.
_HOMES = {
    "Severity": "report",
    "Verdict": "report",
    "Unavailable": "report",
    "LibraryCopy": "report",
    "CudnnInUse": "report",
    "WheelOverwrite": "report",
    "Resolution": "report",
    "Preload": "report",
    "SublibraryPick": "report",
    "ConsumerLibrary": "report",
    "FrameworkBuild": "report",
    "Gpu": "report",
    "Driver": "report",
    "Fix": "report",
    "Finding": "report",
    "Diagnosis": "report",
    "Report": "report",
    "CudaToolkit": "report",
    "ProcessMemory": "report",
    "GpuMemory": "report",
    "MemorySnapshot": "report",
    "to_plain": "report",
    "Diagnoses": "report",
    "FixPlan": "fixes", "FixResult": "fixes", "Step": "fixes",
    "CrashRecord": "crash",
    "ClusterReport": "cluster", "WorkerRow": "cluster",
    "Change": "prevention", "WhatIf": "prevention", "Drift": "prevention",
}

__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{home}", __name__), name)
    globals()[name] = value  # looked up once
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOMES))
