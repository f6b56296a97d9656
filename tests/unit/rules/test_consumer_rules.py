"""The one table of consumers (:mod:`cudnn_magic.rules.consumer_table`): every entry's probe and rule
exist, every reader takes its facts from the table, and adding a consumer is one entry plus its probe
(shown by planting one)."""

from __future__ import annotations

import importlib
import sys
import types

import pytest

from cudnn_magic.model import ConsumerLibrary, FrameworkBuild, SublibraryPick
from cudnn_magic.rules import consumer_table as table
from cudnn_magic.rules.compat import RULES
from cudnn_magic.rules.consumers import (
    CONSUMER_RULES,
    ConsumerNeed,
    clash_findings,
    ctranslate2_build,
    judge_consumer,
    sublibrary_problems,
)


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
    from cudnn_magic.engines.whatif import _FRAMEWORK_DISTS
    from cudnn_magic.probes.frameworks import _PROBES
    from cudnn_magic.probes.owners import _RELEVANT

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
    monkeypatch.setattr(table, "CONSUMERS", (*table.CONSUMERS, table.Consumer(
        "Planted", ("planted",), "planted", "soname", "dlopens libcudnn.so.9 (planted)", "planted", "planted_probe:probe",
        kind="consumer")))
    rep = check_consumers(paths=[str(tmp_path)], conda=False, environ={"LD_LIBRARY_PATH": ""}, ldcache={})
    row = next(f for f in rep.frameworks if f.name == "Planted")
    assert row.verdict in ("unknown", "mismatch") and row.rule == CONSUMER_RULES["soname"]
    assert any(f.title == "Planted 1.0 will find no libcudnn.so.9" for f in rep.findings)


# --------------------------------------------------------------------------------------------------
# The consumer rules at their edges.
#
# The consumer rules (CTranslate2, PaddlePaddle, MXNet, TensorRT, any distribution that loads
# cuDNN) at their edges: each CTranslate2 build row's first and last release, sub-libraries of one
# release or mixed, a cuDNN 8 main library newer than its sub-libraries, which major is missing where.
# Sources: CTranslate2 python/tools/prepare_build_environment_linux.sh at each tag (the CUDA and
# cuDNN each wheel line was built with); cuDNN's sub-library version checks
# (cudnnOpsInferVersionCheck ... CUDNN_STATUS_VERSION_MISMATCH / SUBLIBRARY_VERSION_MISMATCH);
# docs/facts.md "Two cuDNNs at once" (a cuDNN 8 main library forwards to its sub-libraries; cuDNN 8
# and 9 load side by side); PaddlePaddle's "The installed Paddle is compiled with CUDNN" warning.
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version, build", [
    ("2.24.0", None), ("3.0.0", ("11.2", "8.1.1")), ("3.24.0", ("11.2", "8.1.1")), ("3.24.1", ("11.2", "8.1.1")),
    ("4.0.0", ("12.2", "8.9.7")), ("4.4.0", ("12.2", "8.9.7")), ("4.5.0", ("12.2", "9.1.0")), ("4.6.0", ("12.2", "9.1.0")),
    ("4.6.1", ("12.4", "9.1.0")), ("4.6.2", ("12.4", "9.1.0")), ("4.6.3", ("12.8", None)), ("5.0.0", ("12.8", None)),
    ("4.5.0.post1", ("12.2", "9.1.0")), ("4.4.0rc1", ("12.2", "8.9.7")), ("junk", None),
])
def test_ctranslate2_build_rows(version, build):
    assert ctranslate2_build(version) == build


def _sub(soname, version, path="/x", required=True):
    return SublibraryPick(soname, path if version or path else None, version, "ld.so cache", required)


SUBS = [
    # main version, sub-libraries -> missing, mixed?, older?
    ("9.1.0", [_sub("libcudnn_graph.so.9", "9.1.0"), _sub("libcudnn_engines_precompiled.so.9", "9.1.0")], (), False, False),
    ("9.1.0", [_sub("libcudnn_graph.so.9", "9.1.0"), _sub("libcudnn_engines_precompiled.so.9", "9.1.1")], (), True, False),
    ("9.1.0", [_sub("libcudnn_graph.so.9", "9.1.0"), _sub("libcudnn_engines_precompiled.so.9", None, path=None)],
     ("libcudnn_engines_precompiled.so.9",), False, False),
    ("9.1.0", [_sub("libcudnn_graph.so.9", "9.1.0"), _sub("libcudnn_heuristic.so.9", None, path=None, required=False)],
     (), False, False),  # an optional sub-library may be absent
    ("8.9.7", [_sub("libcudnn_ops_infer.so.8", "8.9.6"), _sub("libcudnn_cnn_infer.so.8", "8.9.6")], (), False, True),
    ("8.9.6", [_sub("libcudnn_ops_infer.so.8", "8.9.6")], (), False, False),  # equal: fine
    ("8.9.5", [_sub("libcudnn_ops_infer.so.8", "8.9.6")], (), False, False),  # newer sub-libraries: fine
    ("9.2.0", [_sub("libcudnn_graph.so.9", "9.1.0")], (), False, False),  # a cuDNN 9 shim is not compared
    ("8.9.7", [_sub("libcudnn_ops_infer.so.8", "8.9.6"), _sub("libcudnn_cnn_infer.so.8", "8.9.7")], (), True, False),
    (None, [_sub("libcudnn_ops_infer.so.8", "8.9.6")], (), False, False),
    ("8.9.7", [_sub("libcudnn_ops_infer.so.8", "8")], (), False, False),  # no minor: not comparable
    ("8.9.7", [], (), False, False),
]


@pytest.mark.parametrize("main, subs, missing, mixed, older", SUBS, ids=[str(i) for i in range(len(SUBS))])
def test_sublibrary_problems(main, subs, missing, mixed, older):
    p = sublibrary_problems(main, tuple(subs))
    assert p.missing == missing
    found = tuple((s.soname, s.version) for s in subs if s.path and s.version)
    assert p.mixed == (found if mixed else ())
    assert p.older == (found if older else ())
    assert bool(p) is bool(missing or mixed or older)


def _row(checker="ctranslate2", compiled="8.9.7", name="CTranslate2", version="4.4.0"):
    return FrameworkBuild(name, name.lower(), version, cudnn_compiled=compiled, checker=checker)


def _lib(picked="/usr/lib/libcudnn.so.8", picked_version="8.9.7", subs=(), soname="libcudnn.so.8", **kw):
    return ConsumerLibrary("/site/ctranslate2/libctranslate2.so.4", "ctranslate2", soname, picked=picked,
                           picked_version=picked_version, why="ld.so cache", sublibraries=tuple(subs), **kw)


GOOD8 = [_sub("libcudnn_ops_infer.so.8", "8.9.7", "/usr/lib/libcudnn_ops_infer.so.8"),
         _sub("libcudnn_cnn_infer.so.8", "8.9.7", "/usr/lib/libcudnn_cnn_infer.so.8")]


@pytest.mark.parametrize("gpus, severity", [(True, "error"), (False, "warning")])
def test_a_major_mismatch_is_an_error_only_with_a_gpu(gpus, severity):
    j = judge_consumer(_row(compiled="8.9.7"), [_lib(picked_version="9.1.0", soname="libcudnn.so.9")], gpus=gpus)
    assert j.row.verdict == "mismatch"
    assert [(f.id, f.severity) for f in j.findings] == [("cudnn-version-mismatch", severity)]
    assert j.findings[0].title == "CTranslate2 4.4.0 was built with cuDNN 8.9.7 but will load 9.1.0"
    assert j.row.rule == CONSUMER_RULES["ctranslate2"]


def test_the_same_release_with_its_sub_libraries_is_ok():
    j = judge_consumer(_row(), [_lib(subs=GOOD8)], gpus=True)
    assert (j.row.verdict, j.findings) == ("ok", ())
    assert j.row.cudnn_used == "8.9.7" and j.row.cudnn_used_path == "/usr/lib/libcudnn.so.8"
    assert j.row.detail == "cuDNN 8.9.7 from /usr/lib/libcudnn.so.8 (ld.so cache). Its sub-libraries come from /usr/lib."


@pytest.mark.parametrize("runtime, compiled, verdict", [
    ("8.9.6", "8.9.7", "mismatch"),  # Paddle warns for an older runtime and runs; calls added later fail
    ("8.9.7", "8.9.7", "ok"), ("8.9.8", "8.9.7", "ok"),
])
def test_paddle_older_runtime(runtime, compiled, verdict):
    subs = [_sub("libcudnn_ops_infer.so.8", runtime, "/usr/lib/libcudnn_ops_infer.so.8")]
    j = judge_consumer(_row("paddle", compiled, "PaddlePaddle", "2.6.2"), [_lib(picked_version=runtime, subs=subs)],
                       gpus=True)
    assert j.row.verdict == verdict
    if verdict == "mismatch":
        assert j.findings[0].severity == "warning"
        assert ("The installed Paddle is compiled with CUDNN 8.9, but CUDNN version in your machine is 8.9"
                in j.findings[0].detail)


def test_mxnet_prints_and_runs():
    j = judge_consumer(_row("mxnet", "8.9.7", "MXNet", "1.9.1"), [_lib(picked_version="8.9.6", subs=[])], gpus=True)
    assert j.row.verdict == "ok" and j.findings == ()
    assert 'MXNet will print "cuDNN lib mismatch" (8.9.6 vs 8.9.7) and run.' in j.row.detail


@pytest.mark.parametrize("optional, gpus, verdict, severity", [
    (False, True, "mismatch", "error"), (False, False, "unknown", "warning"), (True, True, "ok", "warning"),
])
def test_nothing_found(optional, gpus, verdict, severity):
    lib = _lib(picked=None, picked_version=None, searched=tuple(f"/d{i}" for i in range(8)))
    j = judge_consumer(_row(), [lib], gpus=gpus, optional=optional,
                       disk_dirs={"libcudnn.so.8": [("/opt/cudnn8/lib", "8.9.7")]})
    assert j.row.verdict == verdict
    f = j.findings[0]
    assert (f.id, f.severity, f.title) == ("cudnn-library-not-found", severity, "CTranslate2 4.4.0 will find no libcudnn.so.8")
    assert "/d0; /d1; /d2; /d3; /d4; /d5; ...; then the ld.so cache" in f.detail
    assert "(copies exist in /opt/cudnn8/lib, which are not searched)" in f.detail
    assert f.fixes[0].id == "add-library-path" and "/opt/cudnn8/lib" in f.fixes[0].title


def test_missing_sub_library_names_the_abort_of_its_major():
    subs = [_sub("libcudnn_ops_infer.so.8", "8.9.7", "/usr/lib/libcudnn_ops_infer.so.8"),
            _sub("libcudnn_cnn_infer.so.8", None, path=None)]
    j = judge_consumer(_row(), [_lib(subs=subs)], gpus=True,
                       disk_dirs={"libcudnn_cnn_infer.so.8": [("/opt/other", "8.6.0"), ("/opt/same", "8.9.7")]})
    assert j.row.verdict == "mismatch"
    f = j.findings[0]
    assert (f.id, f.severity) == ("cudnn-sublibrary-load-failed", "error")
    assert f.title == "CTranslate2 4.4.0: cuDNN 8.9.7 will not find libcudnn_cnn_infer.so.8"
    assert '"Could not load library libcudnn_cnn_infer.so.8. Error: libcudnn_cnn_infer.so.8: cannot open shared' in f.detail
    assert f.fixes[0].title == "Put /opt/same on LD_LIBRARY_PATH for this kernel"
    assert "Its cuDNN 8 sub-libraries will not load (libcudnn_cnn_infer.so.8 not found)." in j.row.detail


def test_missing_cudnn9_sub_library_and_only_other_releases_on_disk():
    subs = [_sub("libcudnn_graph.so.9", None, path=None)]
    j = judge_consumer(_row(compiled="9.1.0"), [_lib(picked_version="9.1.0", soname="libcudnn.so.9", subs=subs)],
                       gpus=True, disk_dirs={"libcudnn_graph.so.9": [("/opt/other", "9.5.0")]})
    f = j.findings[0]
    assert '"Unable to load any of {libcudnn_graph.so.9, ...}"' in f.detail
    assert "Copies of another release exist in /opt/other: cuDNN refuses sub-libraries of another release." in f.detail
    assert all(x.id != "add-library-path" for x in f.fixes)


def test_mixed_and_older_sub_libraries():
    mixed = [_sub("libcudnn_ops_infer.so.8", "8.9.7"), _sub("libcudnn_cnn_infer.so.8", "8.9.6")]
    j = judge_consumer(_row(), [_lib(subs=mixed)], gpus=False)
    assert j.row.verdict == "mismatch"
    assert [(f.id, f.severity) for f in j.findings] == [("cudnn-sublibrary-load-failed", "warning")]
    assert j.findings[0].fixes[0].id == "reinstall-cudnn"
    older = [_sub("libcudnn_ops_infer.so.8", "8.9.6"), _sub("libcudnn_cnn_infer.so.8", "8.9.6")]
    j = judge_consumer(_row(), [_lib(subs=older)], gpus=True)
    assert j.row.verdict == "ok"
    assert [(f.id, f.severity) for f in j.findings] == [("cudnn-sublibrary-load-failed", "warning")]
    assert j.findings[0].title == "CTranslate2 4.4.0: its cuDNN 8.9.7 main library would use older sub-libraries"


@pytest.mark.parametrize("unknown, verdict", [(False, "not-applicable"), (True, "unknown")])
def test_no_consumer_library(unknown, verdict):
    j = judge_consumer(_row(), [], gpus=True, unknown=unknown)
    assert j.row.verdict == verdict and j.findings == ()
    assert j.row.detail == "CTranslate2 4.4.0 uses no cuDNN: nothing to check"


def _need(label, major, subs, main=None):
    return ConsumerNeed(label, major, tuple(subs), main)


def test_two_majors_one_unserved_is_a_clash():
    ct2 = _need("CTranslate2 4.4.0", 8, [_sub("libcudnn_ops_infer.so.8", None, path=None)])
    torch = _need("PyTorch 2.9.1", 9, [_sub("libcudnn_graph.so.9", "9.10.2", "/site/nvidia/cudnn/lib/libcudnn_graph.so.9")])
    out = clash_findings([ct2, torch], gpus=True)
    assert [(f.id, f.severity) for f in out] == [("cudnn-consumer-clash", "error")]
    assert out[0].title == "CTranslate2 4.4.0 needs cuDNN 8, but this environment's cuDNN is 9 (for PyTorch 2.9.1)"
    assert [x.id for x in out[0].fixes] == ["separate-kernels"]
    # both served, or a single major: no clash
    ct2_ok = _need("CTranslate2 4.4.0", 8, [_sub("libcudnn_ops_infer.so.8", "8.9.7", "/usr/lib/libcudnn_ops_infer.so.8")])
    assert clash_findings([ct2_ok, torch], gpus=True) == []
    assert clash_findings([ct2], gpus=True) == []
    assert clash_findings([_need("A", None, [])], gpus=True) == []


def test_same_major_different_copies_is_import_order():
    a = _need("PyTorch 2.9.1", 9, [_sub("libcudnn_graph.so.9", "9.10.2", "/site/nvidia/cudnn/lib/libcudnn_graph.so.9")])
    b = _need("JAX 0.6.1", 9, [_sub("libcudnn_graph.so.9", "9.8.0", "/site/jax/lib/libcudnn_graph.so.9")])
    c = _need("Other 1.0", 9, [_sub("libcudnn_graph.so.9", None, path=None)])
    out = clash_findings([a, b, c], gpus=True)
    assert [(f.id, f.severity) for f in out] == [("cudnn-import-order", "warning")]
    f = out[0]
    assert f.title == "Import order decides which libcudnn_graph.so.9 serves JAX 0.6.1, Other 1.0, PyTorch 2.9.1"
    assert "Other 1.0 work only if another consumer has loaded it first." in f.detail
    assert f.fixes[0].title == "Import PyTorch first"  # the newest copy (9.10.2)
    assert "put /site/nvidia/cudnn/lib on LD_LIBRARY_PATH" in f.fixes[1].action
    same = _need("JAX 0.6.1", 9, [_sub("libcudnn_graph.so.9", "9.10.2", "/site/nvidia/cudnn/lib/libcudnn_graph.so.9")])
    assert clash_findings([a, same], gpus=True) == []  # one copy for both
