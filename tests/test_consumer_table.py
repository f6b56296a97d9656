"""The one table of consumers (:mod:`cudnn_magic.rules.consumer_table`): every entry's probe and rule
exist, every reader takes its facts from the table, and adding a consumer is one entry plus its probe
(shown by planting one)."""

from __future__ import annotations

import importlib
import sys
import types

import pytest

from cudnn_magic.rules import consumer_table as table
from cudnn_magic.rules.compat import RULES
from cudnn_magic.rules.consumers import CONSUMER_RULES


@pytest.mark.parametrize("entry", table.CONSUMERS, ids=lambda c: c.name)
def test_each_entry_has_its_probe_and_its_rule(entry):
    mod, fn = entry.probe.split(":")
    assert callable(getattr(importlib.import_module(f"cudnn_magic.probes.frameworks.{mod}"), fn))
    assert entry.checker in RULES or entry.checker in CONSUMER_RULES
    assert entry.kind in ("framework", "consumer") and entry.loads and entry.compiled_from
    assert set(entry.wheel_distributions) <= set(entry.distributions)
    assert all(d == d.lower() and "_" not in d for d in entry.distributions)  # PEP 503 names


def test_names_and_distributions_are_unique():
    assert len({c.name for c in table.CONSUMERS}) == len(table.CONSUMERS)
    dists = [d for c in table.CONSUMERS for d in c.distributions]
    assert len(dists) == len(set(dists))
    assert table.by_distribution("Torch") is table.by_name("PyTorch")
    assert table.by_distribution("onnxruntime_gpu").name == "ONNX Runtime" and table.by_distribution("numpy") is None


def test_the_readers_take_their_facts_from_the_table():
    from cudnn_magic.probes.frameworks import _PROBES
    from cudnn_magic.probes.owners import _RELEVANT
    from cudnn_magic.engines.whatif import _FRAMEWORK_DISTS

    assert [n for n, _ in _PROBES] == [c.name for c in table.framework_probes()]
    assert _FRAMEWORK_DISTS == {d: (c.name, c.checker) for c in table.CONSUMERS for d in c.wheel_distributions}
    assert {c.import_name for c in table.CONSUMERS if c.import_name} <= set(_RELEVANT)
    from cudnn_magic.model import Report
    from cudnn_magic.render.report import report_text

    assert all(c.name in report_text(Report()) for c in table.CONSUMERS if c.import_name)


def test_adding_a_consumer_is_one_entry_plus_its_probe(monkeypatch, tmp_path):
    """A planted entry and its probe module: the consumer scan runs it and judges its row, with no
    other change anywhere."""
    from cudnn_magic.engines.consumer_check import check_consumers
    from cudnn_magic.model import FrameworkBuild
    from cudnn_magic.probes.frameworks.consumer_facts import ConsumerFacts, CudnnRequest

    def probe(scan, paths, top, notes):  # type: ignore[no-untyped-def]
        row = FrameworkBuild("Planted", "planted", "1.0", cudnn_compiled="9", cudnn_soname="libcudnn.so.9", checker="soname")
        return [ConsumerFacts(row=row, alternatives=[CudnnRequest("libcudnn.so.9", None, (), "dlopen by the planted probe")])]

    mod = types.ModuleType("cudnn_magic.probes.frameworks.planted_probe")
    mod.probe = probe  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, mod.__name__, mod)
    monkeypatch.setattr(table, "CONSUMERS", table.CONSUMERS + (table.Consumer(
        "Planted", ("planted",), "planted", "soname", "dlopens libcudnn.so.9 (planted)", "planted", "planted_probe:probe",
        kind="consumer"),))
    rep = check_consumers(paths=[str(tmp_path)], conda=False, environ={"LD_LIBRARY_PATH": ""}, ldcache={})
    row = next(f for f in rep.frameworks if f.name == "Planted")
    assert row.verdict in ("unknown", "mismatch") and row.rule == CONSUMER_RULES["soname"]
    assert any(f.title == "Planted 1.0 will find no libcudnn.so.9" for f in rep.findings)
