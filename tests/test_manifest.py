"""The manifest (issue 16): ``cudnn-magic manifest`` and ``check --against`` in a real venv with
the real ``nvidia-cudnn-jit-cu13`` wheel, upgraded by real pip between the two."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from prevention_env import freeze, make_venv, run_cli

from cudnn_magic.engines.manifest import NotAManifest, compare, loads


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    return make_venv(tmp_path_factory.mktemp("manifest"), "nvidia-cudnn-jit-cu13==9.24.0.43")


def test_round_trip_then_drift_after_a_real_upgrade(venv, tmp_path):
    out = tmp_path / "stack.json"
    cons = tmp_path / "constraints.txt"
    p = run_cli(venv, "manifest", "-o", str(out))
    assert p.returncode == 0, p.stderr
    text = out.read_text()
    data = loads(text)
    # stable: sorted keys, and the same stack writes the same bytes
    assert list(data) == sorted(data)
    assert run_cli(venv, "manifest").stdout == text
    assert data["distributions"]["nvidia-cudnn-jit-cu13"] == "9.24.0.43"
    copy = next(c for c in data["cudnn"] if c["path"].endswith("nvidia/cudnn_jit/lib/libcudnn.so.9"))
    assert copy["version"] == "9.24.0" and copy["owner"] == "pip: nvidia-cudnn-jit-cu13 9.24.0.43"
    assert len(copy["sha256"]) == 64
    assert run_cli(venv, "manifest", "--constraints", "-o", str(cons)).returncode == 0
    assert "nvidia-cudnn-jit-cu13==9.24.0.43" in cons.read_text().splitlines()

    same = run_cli(venv, "check", "--against", str(out))
    assert same.returncode == 0, same.stdout + same.stderr
    assert same.stdout.startswith(f"No drift from {out}")

    up = subprocess.run([str(venv), "-m", "pip", "install", "-q", "--no-deps", "--disable-pip-version-check",
                         "nvidia-cudnn-jit-cu13==9.25.0.15"], capture_output=True, text=True)
    assert up.returncode == 0, up.stderr
    drift = run_cli(venv, "check", "--against", str(out))
    assert drift.returncode == 1, drift.stdout + drift.stderr
    assert "distribution nvidia-cudnn-jit-cu13 version: 9.24.0.43 -> 9.25.0.15" in drift.stdout
    js = run_cli(venv, "check", "--against", str(out), "--json")
    assert js.returncode == 1
    rows = json.loads(js.stdout)["drift"]
    assert {"what": "distribution nvidia-cudnn-jit-cu13", "field": "version", "from": "9.24.0.43",
            "to": "9.25.0.15"}.items() <= next(r for r in rows if r["what"] == "distribution nvidia-cudnn-jit-cu13").items()
    fields = {r["field"]: r for r in rows if r["what"] == f"cuDNN copy {copy['path']}"}
    assert fields["version"]["from"] == "9.24.0" and fields["version"]["to"] == "9.25.0"
    assert fields["sha256"]["from"] == copy["sha256"] and fields["sha256"]["to"] != copy["sha256"]
    assert fields["owner"]["to"] == "pip: nvidia-cudnn-jit-cu13 9.25.0.15"

    # the constraints file rebuilds the verified version: pip's own resolver, dry run
    before = freeze(venv)
    back = subprocess.run([str(venv), "-m", "pip", "install", "--dry-run", "--quiet", "--report", "-", "--no-deps",
                           "--disable-pip-version-check", "-c", str(cons), "nvidia-cudnn-jit-cu13"],
                          capture_output=True, text=True)
    assert back.returncode == 0, back.stderr
    assert [i["metadata"]["version"] for i in json.loads(back.stdout)["install"]] == ["9.24.0.43"]
    assert freeze(venv) == before


def test_a_sub_library_replaced_by_hand_is_drift(venv, tmp_path):
    """Every cuDNN library file is recorded, not only libcudnn.so.9: a sub-library replaced by another
    release's file (the engines library of the real 9.24 or 9.25 wheel, whichever is not there) is drift
    naming that file."""
    out = tmp_path / "stack.json"
    assert run_cli(venv, "manifest", "-o", str(out)).returncode == 0
    data = loads(out.read_text())
    assert data["schema_version"] == 2
    eng = next(c for c in data["cudnn"] if c["path"].endswith("libcudnn_engines_runtime_compiled.so.9"))
    assert eng["main"] is False and len(eng["sha256"]) == 64 and eng["size"] == os.path.getsize(eng["path"])
    from real_wheels import install_wheel

    name = "libcudnn_engines_runtime_compiled.so.9"
    here = open(eng["path"], "rb").read()
    other = next(d for d in (install_wheel("nvidia-cudnn-jit-cu13", v) / "nvidia" / "cudnn_jit" / "lib"
                             for v in ("9.25.0.15", "9.24.0.43")) if (d / name).read_bytes() != here)
    backup = tmp_path / "engines.bak"
    shutil.copy2(eng["path"], backup)
    try:
        shutil.copyfile(other / name, eng["path"])
        drift = run_cli(venv, "check", "--against", str(out), "--json")
        assert drift.returncode == 1, drift.stdout + drift.stderr
        rows = [r for r in json.loads(drift.stdout)["drift"] if r["what"] == f"cuDNN copy {eng['path']}"]
        assert {r["field"] for r in rows} >= {"sha256", "size"}
    finally:
        shutil.copyfile(backup, eng["path"])
    assert run_cli(venv, "check", "--against", str(out)).returncode == 0


def test_a_schema_1_manifest_is_compared_on_its_main_libraries(venv, tmp_path):
    out = tmp_path / "stack.json"
    assert run_cli(venv, "manifest", "-o", str(out)).returncode == 0
    data = json.loads(out.read_text())
    data["schema_version"] = 1
    data["cudnn"] = [{k: v for k, v in c.items() if k not in ("size", "main")} for c in data["cudnn"] if c["main"]]
    out.write_text(json.dumps(data))
    same = run_cli(venv, "check", "--against", str(out))
    assert same.returncode == 0 and same.stdout.startswith("No drift"), same.stdout + same.stderr


@pytest.mark.parametrize("content,words", [
    (b"{\"cudnn\": []}", 'no "schema": "cudnn-magic-manifest" key'),
    (b"\x7fELF\x02\x01\x01", "not JSON"),
    (b'{"schema": "cudnn-magic-manifest", "schema_version": 99}', "schema_version 99"),
])
def test_not_a_manifest_is_exit_2(venv, tmp_path, content, words):
    f = tmp_path / "x.json"
    f.write_bytes(content)
    p = run_cli(venv, "check", "--against", str(f))
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0] and lines[0].startswith(f"cudnn-magic: {f} is not a manifest")
    assert lines[0].count("not a") == 1, lines[0]  # said once
    # --json: the same {"error": {...}} shape on stdout as a bad --what-if (exit 2 unchanged)
    pj = run_cli(venv, "check", "--json", "--against", str(f))
    assert pj.returncode == 2
    err = json.loads(pj.stdout)["error"]
    assert err["kind"] == "not-a-manifest" and words in err["message"]
    assert run_cli(venv, "check", "--against", str(tmp_path / "missing.json")).returncode == 2


def test_compare_names_driver_and_framework_changes():
    base = {"schema": "cudnn-magic-manifest", "schema_version": 1, "driver": {"version": "580.65.06", "cuda_driver_version": "13.0"},
            "gpus": [{"index": 0, "name": "H100", "compute_capability": "9.0"}], "cudnn": [],
            "frameworks": [{"name": "PyTorch", "distribution": "torch", "version": "2.14.1", "cudnn_compiled": "9.24.0",
                            "cuda_compiled": "13", "verdict": "ok"}], "distributions": {"torch": "2.14.1"}, "findings": []}
    live = json.loads(json.dumps(base))
    live["driver"]["version"] = "575.57.08"
    live["frameworks"][0]["verdict"] = "mismatch"
    live["findings"] = [{"id": "cuda-driver-too-old", "severity": "error", "title": "Driver 575.57.08 is too old for PyTorch's CUDA 13"}]
    d = compare(loads(json.dumps(base)), live)
    text = [str(x) for x in d]
    assert text[0].startswith("driver version: 580.65.06 -> 575.57.08 (rules now: error cuda-driver-too-old")
    assert any(t.startswith("framework PyTorch verdict: ok -> mismatch (verdict now: mismatch") for t in text)
    assert compare(base, base) == []
    with pytest.raises(NotAManifest):
        loads("[]")


def test_against_and_what_if_are_mutually_exclusive(tmp_path):
    """Together one of them was silently ignored (CLI): argparse refuses the pair, exit 2."""
    import subprocess
    import sys

    f = tmp_path / "m.json"
    f.write_text("{}")
    p = subprocess.run([sys.executable, "-m", "cudnn_magic", "check", "--against", str(f), "--what-if", "numpy"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "not allowed with argument" in p.stderr, p.stderr
    assert p.stdout == ""


@pytest.mark.kernel
def test_magic_refuses_against_with_what_if_and_views_print_their_text(tmp_path):
    """In a real kernel: the pair is a UsageError (one line, no traceback), and print() of the
    what-if and drift views shows their text, not ``<... object at 0x...>``."""
    from support import outputs_text, run_notebook

    saved = tmp_path / "saved.json"
    nb = run_notebook([
        "%load_ext cudnn_magic",
        f"%cudnn_check --against {saved} --what-if numpy",
        f"import cudnn_magic.engines.manifest as m; open({str(saved)!r}, 'w').write(m.dumps(m.live_manifest()[0]))\n"
        f"d = %cudnn_check --against {saved}\nprint('DRIFT', d)",
        "w = %cudnn_check --what-if 'nvidia-cudnn-jit-cu13==9.24.0.43 --no-deps'\nprint('WHATIF', w)",
    ], tmp_path, env={"PIP_DRY_RUN": "1"}, timeout=300)
    c = [outputs_text(cell) for cell in nb.cells]
    assert "UsageError" in c[1] and "cannot be combined" in c[1], c[1]
    assert "DRIFT " in c[2] and "object at 0x" not in c[2] and str(saved) in c[2], c[2]
    assert "WHATIF " in c[3] and "object at 0x" not in c[3] and "Would change" in c[3], c[3]
