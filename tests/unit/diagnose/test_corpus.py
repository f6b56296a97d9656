"""Every real report in tests/fixtures/corpus gets an accepted id first; no negative gets a cudnn-* id."""

from __future__ import annotations

import json

import pytest

from cudnn_magic.engines.diagnose import diagnose
from helpers.support import corpus_dir

CORPUS = corpus_dir()


def _load(name: str) -> list[dict]:
    path = CORPUS / name
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


_cases = _load


@pytest.mark.parametrize("case", _cases("cases.jsonl"), ids=lambda c: c["id"])
def test_case_gets_accepted_id_first(case):
    res = diagnose(exception=case.get("exception") or "", log=case.get("stderr") or "",
                   traceback=case.get("traceback_tail") or "")
    assert res, "no diagnosis"
    assert res[0].id in case["expected"], [(d.id, d.score) for d in res]
    top = res[0]
    assert top.title and top.summary and top.fixes and top.evidence
    # evidence is quoted from the input, not invented
    text = "\n".join([case.get("exception") or "", case.get("stderr") or "", case.get("traceback_tail") or ""])
    assert any(e[:40] in text for e in top.evidence if not e.startswith("fact:"))


@pytest.mark.parametrize("case", _cases("negatives.jsonl"), ids=lambda c: c["id"])
def test_negative_gets_no_cudnn_id(case):
    res = diagnose(exception=case.get("exception") or "", log=case.get("stderr") or "",
                   traceback=case.get("traceback_tail") or "")
    assert not [d.id for d in res if d.id.startswith("cudnn-")]


def test_corpus_present():
    assert len(_load("cases.jsonl")) >= 30
    assert len(_load("negatives.jsonl")) >= 5


@pytest.mark.parametrize("name", ["cases.jsonl", "negatives.jsonl"])
def test_every_report_names_its_public_source(name):
    sources = (CORPUS / "SOURCES.md").read_text(encoding="utf-8")
    for case in _load(name):
        assert case["source"].startswith("https://"), case["id"]
        assert f"`{case['id']}` | {case['source']} |" in sources, case["id"]


@pytest.mark.parametrize("case", _cases("cases.jsonl"), ids=lambda c: c["id"])
def test_case_as_one_pasted_log(case):
    """The same report pasted as one CI log (exception and traceback inside the log)."""
    text = "\n".join(x for x in (case.get("stderr"), case.get("traceback_tail"), case.get("exception")) if x)
    res = diagnose(log=text)
    assert res and res[0].id in case["expected"]
