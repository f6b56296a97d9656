"""``plan(fix_id, report, context)``: the preview of a fix, from the planner its
:class:`~cudnn_magic.fixes.catalogue.FixSpec` names."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

from ..model import Report
from ..model.fixes import FixPlan
from . import planners
from .advice import _diagnosis_advice, _finding_advice
from .catalogue import FIXES, SPECS

Planner = Callable[[Report, dict[str, Any]], FixPlan]


def planner_for(fix_id: str) -> Planner:
    """The planner of ``fix_id``: the function its spec names in :mod:`.planners`, or the advice
    planner in the words of the diagnosis or finding that offered it.

    Raises:
        KeyError: ``fix_id`` is not in the catalogue.
        LookupError: the spec names no planner and no words (a catalogue error;
            ``tests/unit/fixes/test_fix_catalogue.py`` keeps it from happening).
    """
    spec = SPECS[fix_id]
    if spec.planner:
        return getattr(planners, spec.planner)  # type: ignore[no-any-return]
    if spec.words == "diagnosis":
        return _diagnosis_advice(fix_id, spec.notes)
    if spec.words == "finding":
        return _finding_advice(fix_id)
    raise LookupError(f"fix {fix_id!r} has no planner in the catalogue")


def plan(fix_id: str, report: Report | None = None, *, context: dict[str, Any] | None = None) -> FixPlan:
    """Compute exactly what ``fix_id`` would do here, without doing it. Never raises for
    environment problems: a fix that cannot apply returns ``applicable=False`` with the reason.

    Args:
        fix_id: a key of :data:`~cudnn_magic.fixes.catalogue.FIXES`.
        report: live facts (``check.run_check()``); None means an empty report.
        context: optional inputs: ``python`` (interpreter, default ``sys.executable``),
            ``framework`` (pick one framework's requirement), ``directory`` (the shadowing
            directory), ``mode`` ("remove"/"prepend"), ``kernel_name``, ``connection_file``,
            ``environ``, ``find_links``/``no_index`` (offline pip), ``devices``, ``dist``/``version``.

    Raises:
        KeyError: ``fix_id`` is not a known fix id (likely a typo; see ``FIXES``).
    """
    if fix_id not in FIXES:
        raise KeyError(f"unknown fix id {fix_id!r}; known: {', '.join(FIXES)}")
    context = dict(context or {})
    report = report or Report()
    try:
        p = planner_for(fix_id)(report, context)
    except Exception as exc:  # noqa: BLE001 - a planner bug must not break the caller
        p = FixPlan(fix_id, FIXES[fix_id], False, f"could not compute this fix: {type(exc).__name__}: {exc}")
    return dataclasses.replace(p, context=context)


__all__ = ["plan", "planner_for"]
