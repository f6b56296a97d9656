"""The one table of fixes (``cudnn_magic.fixes.catalogue``): every fix id used
anywhere is in it, every name it gives exists, every other fix table is derived from it, and
adding a fix is one entry plus its planner."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import cudnn_magic
from cudnn_magic import fixes
from cudnn_magic.engines import diagnose
from cudnn_magic.fixes import advice, catalogue, planners, plans
from cudnn_magic.fixes.catalogue import CATALOGUE, FIXES, SPECS, FixSpec
from cudnn_magic.knowledge import FIX_IDS, signatures
from cudnn_magic.model import Report
from cudnn_magic.rules import consumers
from cudnn_magic.ui import fix_buttons

PACKAGE = Path(cudnn_magic.__file__).resolve().parent
IDS_DOC = PACKAGE.parent / "docs" / "ids.md"


def _fix_ids_in_source() -> dict[str, set[str]]:
    """Every ``Fix("<id>", ...)`` written anywhere in the package (check findings, consumer
    rules, diagnosis wordings, buttons), and every id a catalogue lookup names literally."""
    found: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "Fix" \
                    and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                found.setdefault(node.args[0].value, set()).add(str(path.relative_to(PACKAGE)))
    return found


def test_every_fix_id_used_anywhere_is_in_the_catalogue():
    used = _fix_ids_in_source()
    assert len(used) >= 10, used  # the scan sees the findings' fixes (advice.py words them by the id it is given)
    assert set(used) <= set(SPECS), {k: v for k, v in used.items() if k not in SPECS}
    for s in signatures():  # the knowledge signatures
        assert set(s.fixes) <= set(SPECS), s.name
        assert set(s.fixes) <= set(FIX_IDS), s.name  # and a diagnosis may offer them
    assert set(fix_buttons.ADVICE_ONLY) <= set(SPECS)


def test_every_name_the_catalogue_gives_exists():
    assert len({s.id for s in CATALOGUE}) == len(CATALOGUE)
    for s in CATALOGUE:
        assert re.fullmatch(r"[a-z][a-z0-9-]+", s.id) and s.title, s
        if s.planner:
            assert callable(getattr(planners, s.planner, None)), s
        else:
            assert s.words in ("diagnosis", "finding"), s  # a planner made from the words
        if s.offer:
            assert callable(getattr(advice, s.offer, None)), s
            assert s.advice, s  # a diagnosis offers it, so it has its one line
        assert s.button in ("plan", "show") and s.words in ("planner", "diagnosis", "finding")
        assert not (s.runs and s.button == "show"), s  # a runnable fix's button computes its plan


def test_the_other_tables_are_the_catalogue():
    assert fixes.FIXES is FIXES and list(FIXES) == [s.id for s in CATALOGUE]
    assert FIX_IDS == {s.id: s.advice for s in CATALOGUE if s.advice}
    assert diagnose.APPLICABLE_FIX_IDS == {s.id for s in CATALOGUE if s.runs}
    assert fix_buttons.ADVICE_ONLY == {s.id for s in CATALOGUE if s.button == "show"}
    assert fixes.DIAGNOSIS_WORDED == {s.id for s in CATALOGUE if s.words == "diagnosis"}
    assert consumers.CONSUMER_FIX_IDS == {s.id: s.title for s in CATALOGUE if s.words == "finding"}
    assert set(diagnose.FIX_IDS) == set(FIX_IDS)


def test_the_ids_page_lists_every_fix_id():
    text = IDS_DOC.read_text(encoding="utf-8")
    section = text[text.index("## Fix ids"):]
    end = section.find("\n## ", 5)  # the next section, if any
    section = section if end < 0 else section[:end]
    listed = {i for row in section.splitlines() if row.startswith("| `")
              for i in re.findall(r"`([a-z][a-z0-9-]+)`", row.split("|")[1])}
    assert listed == {s.id for s in CATALOGUE}


@pytest.mark.parametrize("fid", [s.id for s in CATALOGUE])
def test_every_fix_plans_from_its_entry(fid):
    p = fixes.plan(fid, Report(), context={"environ": {}, "python": "/nonexistent/python"})
    assert p.fix_id == fid and not p.reason.startswith("could not compute"), p
    assert SPECS[fid].runs or not p.applicable  # only a runnable fix is ever applicable


def test_adding_a_fix_is_one_entry_and_its_planner(monkeypatch):
    """A new id: one FixSpec in the table and its planner; plan() and the registry's id list
    take it from there (nothing else is edited)."""
    seen = []

    def new_plan(report, ctx):
        seen.append(ctx)
        return advice._advice("pin-everything", "Pin everything", "pip freeze > constraints.txt")

    spec = FixSpec("pin-everything", title="advice: pin every package", advice="", planner="new_plan")
    monkeypatch.setattr(planners, "new_plan", new_plan, raising=False)
    monkeypatch.setitem(SPECS, spec.id, spec)
    monkeypatch.setitem(FIXES, spec.id, spec.title)
    p = plans.plan("pin-everything", Report(), context={"x": 1})
    assert p.title == "Pin everything" and "pip freeze" in p.action and seen == [{"x": 1}]
    assert "pin-everything" in catalogue.FIXES
