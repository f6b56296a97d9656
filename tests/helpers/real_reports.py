"""The judgement every table of real error reports is held to (tests/unit/diagnose/test_real_reports.py
and test_real_reports_consumers.py): a row is ``(exception, log, traceback, accepted, source)``,
``accepted`` the diagnosis ids one of which must rank first (``|``-separated; ``NONE``: no
diagnosis, or at least none that blames cuDNN), ``source`` the public page the wording was taken
from (``https://...``) or ``wording: <where the text is printed>``."""

from __future__ import annotations

from cudnn_magic.engines.diagnose import diagnose


def check_first(ids: list[str], accepted: str, what: str) -> None:
    """The first of ``ids`` is one of ``accepted``; with ``NONE`` accepted, no id blames cuDNN."""
    acc = accepted.split("|")
    first = ids[0] if ids else "NONE"
    assert first in acc, (what, ids)
    if "NONE" in acc:
        assert not [i for i in ids if i.startswith("cudnn-")], (what, ids)


def check_real_report(row: tuple[str, str, str, str, str]) -> None:
    """Diagnose the row from its fields and as one pasted text: the same first diagnosis both
    ways, and the first diagnosis's evidence quoted from the input (or a live fact), never invented."""
    exc, log, tb, accepted, source = row
    assert source.startswith(("https://", "wording: "))
    res = diagnose(exception=exc, log=log, traceback=tb)
    check_first([d.id for d in res], accepted, "fields")
    if res:
        text = f"{exc}\n{log}\n{tb}"
        assert any(e[:40] in text or e.startswith(("fact:", "note:")) for e in res[0].evidence), res[0].evidence
    pasted = "\n".join(x for x in (log, tb, exc) if x)
    check_first([d.id for d in diagnose(log=pasted)], accepted, "pasted")
