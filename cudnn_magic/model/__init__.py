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
from typing import TYPE_CHECKING, Any

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

__all__ = sorted(_HOMES)  # noqa: PLE0605 - a list: the lazy re-export table's names



if TYPE_CHECKING:  # the names for type checkers and readers; at run time they load on first use (below)
    from .cluster import ClusterReport as ClusterReport
    from .cluster import WorkerRow as WorkerRow
    from .crash import CrashRecord as CrashRecord
    from .fixes import FixPlan as FixPlan
    from .fixes import FixResult as FixResult
    from .fixes import Step as Step
    from .prevention import Change as Change
    from .prevention import Drift as Drift
    from .prevention import WhatIf as WhatIf
    from .report import ConsumerLibrary as ConsumerLibrary
    from .report import CudaToolkit as CudaToolkit
    from .report import CudnnInUse as CudnnInUse
    from .report import Diagnoses as Diagnoses
    from .report import Diagnosis as Diagnosis
    from .report import Driver as Driver
    from .report import Finding as Finding
    from .report import Fix as Fix
    from .report import FrameworkBuild as FrameworkBuild
    from .report import Gpu as Gpu
    from .report import GpuMemory as GpuMemory
    from .report import LibraryCopy as LibraryCopy
    from .report import MemorySnapshot as MemorySnapshot
    from .report import Preload as Preload
    from .report import ProcessMemory as ProcessMemory
    from .report import Report as Report
    from .report import Resolution as Resolution
    from .report import Severity as Severity
    from .report import SublibraryPick as SublibraryPick
    from .report import Unavailable as Unavailable
    from .report import Verdict as Verdict
    from .report import WheelOverwrite as WheelOverwrite
    from .report import to_plain as to_plain


if not TYPE_CHECKING:  # type checkers see the imports above; at run time names load on first use
    def __getattr__(name: str) -> Any:
        home = _HOMES.get(name)
        if home is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f".{home}", __name__), name)
        globals()[name] = value  # looked up once
        return value

    def __dir__() -> list[str]:
        return sorted(set(globals()) | set(_HOMES))
