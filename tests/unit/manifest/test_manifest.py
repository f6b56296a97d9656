"""The manifest: ``cudnn-magic manifest`` and ``check --against`` in a real venv with
the real ``nvidia-cudnn-jit-cu13`` wheel, upgraded by real pip between the two."""

from __future__ import annotations

import copy
import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from cudnn_magic.engines.manifest import NotAManifest, compare, loads
from cudnn_magic.render.manifest import DriftView
from cudnn_magic.util.safetext import safe_text
from helpers.prevention_env import freeze, make_venv, run_cli
from helpers.support import REPO


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
    from helpers.real_wheels import install_wheel

    name = "libcudnn_engines_runtime_compiled.so.9"
    with open(eng["path"], "rb") as f:
        here = f.read()
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
    from helpers.support import outputs_text, run_notebook

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


# --------------------------------------------------------------------------------------------------
# Hostile manifests, FIFOs and links.
#
# Hostile manifests and outputs, each through the real CLI (``python -m cudnn_magic`` in a
# subprocess, this checkout on ``PYTHONPATH``) on real files, FIFOs and symbolic links:
# * a manifest of the right schema but wrong field types is a usage error with a message, never an
#   "internal error" (and ``--json`` still prints its document);
# * ``--against`` a FIFO (and ``manifest`` of a stack with a FIFO named like a library) never hangs;
# * terminal escapes, C1 controls and bidirectional overrides from a manifest never reach the
#   terminal or the kernel's ``text/plain`` as they were;
# * ``manifest -o OUT`` never writes through a link planted at its predictable ``OUT.tmp-<pid>``.
# --------------------------------------------------------------------------------------------------


def _cli(*args: str, timeout: float = 60, env_extra: dict[str, str] | None = None,
         code: str | None = None) -> subprocess.CompletedProcess:
    """``python -m cudnn_magic ARGS`` (or ``python -c CODE``); a run past ``timeout`` fails the
    test (it hung) instead of hanging it."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONIOENCODING": "utf-8", **(env_extra or {})}
    argv = [sys.executable, "-c", code] if code is not None else [sys.executable, "-m", "cudnn_magic", *args]
    try:
        return subprocess.run(argv, capture_output=True, text=True, encoding="utf-8", env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{' '.join(argv[1:])!r} did not finish in {timeout} s (it blocked)")


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> dict:
    """This environment's real manifest (``cudnn-magic manifest``)."""
    p = _cli("manifest")
    assert p.returncode == 0, p.stderr
    return loads(p.stdout)


def _write(path: Path, manifest: dict) -> Path:
    path.write_text(json.dumps(manifest))
    return path


# --------------------------------------------------------------------------- 3: field types

def _set(**fields):
    return lambda m: m.update(fields)


def _first(key: str, **fields):
    """Change fields of the first record of ``key`` (one is added when there is none)."""
    def f(m):
        recs = m[key] or [{"index": 0, "name": "GPU"} if key == "gpus" else
                          {"name": "PyTorch", "distribution": "torch"} if key == "frameworks" else
                          {"path": "/usr/lib/libcudnn.so.9"} if key == "cudnn" else {"id": "x", "severity": "info", "title": "t"}]
        m[key] = [dict(recs[0], **fields), *recs[1:]]
    return f


def _deep(m):
    return json.dumps(m)[:-1] + ', "nested": ' + "[" * 200_000 + "]" * 200_000 + "}"


WRONG = [
    ("gpus-of-ints", _set(gpus=[1]), '"gpus[0]" must be an object'),
    ("gpu-index-string", _set(gpus=[{"index": "0", "name": "H100"}]), '"gpus[0].index" must be an integer'),
    ("gpu-index-bool", _set(gpus=[{"index": True, "name": "H100"}]), '"gpus[0].index" must be an integer'),
    ("gpu-without-index", _set(gpus=[{"name": "H100"}]), '"gpus[0]" has no "index"'),
    ("gpu-name-list", _set(gpus=[{"index": 0, "name": ["H100"]}]), '"gpus[0].name" must be a string or null'),
    ("gpu-cc-number", _set(gpus=[{"index": 0, "compute_capability": 9.0}]), '"gpus[0].compute_capability"'),
    ("frameworks-of-empty-objects", _set(frameworks=[{}]), '"frameworks[0]" has no "name"'),
    ("frameworks-a-string", _set(frameworks="torch"), '"frameworks" is missing or not a list'),
    ("framework-name-int", _set(frameworks=[{"name": 1, "distribution": "torch"}]), '"frameworks[0].name"'),
    ("framework-without-distribution", _set(frameworks=[{"name": "PyTorch"}]), 'has no "distribution"'),
    ("framework-version-nested-junk", _first("frameworks", version={"a": [[{}], {"b": None}]}),
     '"frameworks[0].version" must be a string or null, not an object'),
    ("framework-verdict-list", _first("frameworks", verdict=["ok"]), '"frameworks[0].verdict"'),
    ("driver-a-string", _set(driver="x"), '"driver" must be an object or null, not a string'),
    ("driver-a-list", _set(driver=[]), '"driver" must be an object or null, not a list'),
    ("driver-version-int", _set(driver={"version": 550, "cuda_driver_version": "12.4"}), '"driver.version"'),
    ("cudnn-path-a-list", _first("cudnn", path=["/usr/lib/libcudnn.so.9"]), '"cudnn[0].path" must be a string, not a list'),
    ("cudnn-path-int", _first("cudnn", path=9), '"cudnn[0].path" must be a string, not an integer'),
    ("cudnn-entry-a-path-string", _set(cudnn=["/usr/lib/libcudnn.so.9"]), '"cudnn[0]" must be an object, not a string'),
    ("cudnn-without-path", _set(cudnn=[{"version": "9.1.0"}]), '"cudnn[0]" has no "path"'),
    ("cudnn-size-string", _first("cudnn", size="big"), '"cudnn[0].size" must be a byte count'),
    ("cudnn-size-negative", _first("cudnn", size=-1), '"cudnn[0].size" must be a byte count'),
    ("cudnn-size-nan", _first("cudnn", size=float("nan")), '"cudnn[0].size" must be a byte count'),
    ("cudnn-main-string", _first("cudnn", main="yes"), '"cudnn[0].main" must be true or false'),
    ("cudnn-sha256-int", _first("cudnn", sha256=0), '"cudnn[0].sha256"'),
    ("cudnn-version-nested", _first("cudnn", version=[[["9"]]]), '"cudnn[0].version"'),
    ("cudnn-null", _set(cudnn=None), '"cudnn" is missing or not a list'),
    ("distribution-version-int", _set(distributions={"torch": 2}), '"distributions["torch"]" must be a string'),
    ("distribution-version-list", _set(distributions={"nvidia-cudnn-cu12": ["9.1"]}),
     '"distributions["nvidia-cudnn-cu12"]"'),
    ("distribution-name-hostile", _set(distributions={"nvidia-\x1b]0;pwned\x07\u202e": {}}), '"distributions["nvidia-'),
    ("distributions-a-list", _set(distributions=[["torch", "2"]]), '"distributions" is missing or not an object'),
    ("findings-of-ints", _set(findings=[1]), '"findings[0]" must be an object'),
    ("finding-title-object", _set(findings=[{"id": "x", "severity": "error", "title": {}}]), '"findings[0].title"'),
    ("findings-a-string", _set(findings="none"), '"findings" must be a list'),
    ("created-by-int", _set(created_by=5), '"created_by" must be a string'),
    ("schema-version-bool", _set(schema_version=True), "schema_version True"),
    ("nested-too-deeply", _deep, "nested too deeply"),
]


@pytest.mark.parametrize("mutate,words", [pytest.param(f, w, id=i) for i, f, w in WRONG])
def test_a_manifest_with_a_field_of_the_wrong_type_is_not_a_manifest(base, tmp_path, mutate, words):
    """The attack: the right schema, a field of the wrong type. Each gave "internal error:
    AttributeError/KeyError/TypeError" (``--json``: nothing on stdout), or was silently compared
    (a drift of ``2`` against ``"2.1"``, a cuDNN entry that was a string skipped). Now: one line
    naming the field, the documented ``{"error": {"kind": "not-a-manifest"}}``, exit 2."""
    m = copy.deepcopy(base)
    text = mutate(m)
    f = tmp_path / "stack.json"
    f.write_text(text if isinstance(text, str) else json.dumps(m))
    p = _cli("check", "--against", str(f))
    assert p.returncode == 2, p.stdout + p.stderr
    assert p.stdout == ""
    lines = p.stderr.splitlines()
    assert len(lines) == 1, p.stderr
    assert lines[0].startswith(f"cudnn-magic: {f} is not a manifest: ") and words in lines[0], lines[0]
    assert "internal error" not in lines[0] and safe_text(lines[0]) == lines[0]
    pj = _cli("check", "--json", "--against", str(f))
    assert pj.returncode == 2, pj.stdout + pj.stderr
    err = json.loads(pj.stdout)["error"]
    assert err["kind"] == "not-a-manifest" and words in err["message"], err


def test_the_real_manifest_and_a_schema_1_one_still_load(base):
    """The validation refuses none of what cudnn-magic writes (or wrote: schema 1 had no
    ``size``/``main``), and nulls where the format allows them."""
    assert loads(json.dumps(base)) == base
    old = dict(copy.deepcopy(base), schema_version=1, driver=None)
    old["cudnn"] = [{k: v for k, v in c.items() if k not in ("size", "main")} for c in old["cudnn"]]
    old["gpus"] = [{"index": 0, "name": None, "uuid": None, "compute_capability": None}]
    assert loads(json.dumps(old))["schema_version"] == 1


# --------------------------------------------------------------------------- 4: FIFOs and devices

@pytest.mark.parametrize("kind", ["fifo", "folder", "device"])
def test_against_what_is_not_a_regular_file_is_refused_at_once(tmp_path, kind):
    """The attack: ``--against`` a FIFO blocked in ``open()`` for ever (a device was read as
    16 MiB of data). Now it is opened non-blocking and refused after ``fstat``: exit 2, one line,
    ``{"error": {"kind": "unreadable"}}``."""
    target = {"fifo": tmp_path / "stack.json", "folder": tmp_path, "device": Path("/dev/zero")}[kind]
    if kind == "fifo":
        os.mkfifo(target)
    for args in (("check", "--against", str(target)), ("check", "--json", "--against", str(target))):
        p = _cli(*args, timeout=30)
        assert p.returncode == 2, p.stdout + p.stderr
        line = f"cannot read {target}: not a regular file (a FIFO, a device or a folder)"
        assert p.stderr == f"cudnn-magic: {line}\n", p.stderr
        if "--json" in args:
            assert json.loads(p.stdout) == {"error": {"kind": "unreadable", "message": line}}


def test_the_magic_does_not_block_on_a_fifo_either(tmp_path):
    """``%cudnn_check --against FIFO`` ran the same blocking ``open()`` in the kernel. Now it is
    refused at once, as bad input: a ``UsageError`` (the cell fails with that one line)."""
    fifo = tmp_path / "stack.json"
    os.mkfifo(fifo)
    code = ("from IPython.core.error import UsageError\nfrom cudnn_magic.shell.check import check_against\n"
            f"try:\n    check_against({str(fifo)!r}, False)\nexcept UsageError as exc:\n    print('UsageError:', exc)")
    p = _cli(code=code, timeout=30)
    assert p.returncode == 0, p.stderr
    assert p.stdout == f"UsageError: cannot read {fifo}: not a regular file (a FIFO, a device or a folder)\n"


def test_a_file_over_the_size_bound_is_refused_by_its_size(tmp_path):
    """Over 16 MiB is no manifest: refused as such, not parsed as a cut-off prefix ("not JSON")."""
    f = tmp_path / "big.json"
    with open(f, "wb") as fh:
        fh.write(b'{"schema": "cudnn-magic-manifest", "schema_version": 2, "gpus": [], "junk": "')
        fh.truncate((16 << 20) + 1)  # sparse: quick to make
    p = _cli("check", "--json", "--against", str(f), timeout=60)
    assert p.returncode == 2, p.stderr
    assert json.loads(p.stdout)["error"] == {"kind": "not-a-manifest",
                                             "message": f"{f} is not a manifest: larger than 16 MiB (no manifest is)"}


def test_a_fifo_named_like_a_library_does_not_block_the_manifest(tmp_path):
    """The check lists a FIFO named ``libcudnn.so.9`` on ``LD_LIBRARY_PATH`` as an unusable copy;
    the manifest then hashed it with a blocking ``open()`` (``manifest`` and ``check --against``
    hung). Now it is recorded with ``sha256`` and ``size`` null."""
    lib = tmp_path / "lib"
    lib.mkdir()
    os.mkfifo(lib / "libcudnn.so.9")
    env = {"LD_LIBRARY_PATH": str(lib)}
    p = _cli("manifest", "-o", str(tmp_path / "stack.json"), timeout=60, env_extra=env)
    assert p.returncode == 0, p.stderr
    saved = loads((tmp_path / "stack.json").read_text())
    fifo = [c for c in saved["cudnn"] if c["path"] == str(lib / "libcudnn.so.9")]
    assert fifo and fifo[0]["sha256"] is None and fifo[0]["size"] is None, saved["cudnn"]
    same = _cli("check", "--against", str(tmp_path / "stack.json"), timeout=60, env_extra=env)
    assert same.returncode == 0 and same.stdout.startswith("No drift"), same.stdout + same.stderr


# --------------------------------------------------------------------------- 5: control characters

EVIL = ("\x1b]0;pwned\x07" "\x1b[2J\x1b[31m" "\x9b1;1H" "\x9d0;t\x9c" "\u202eexe.txt\u202c" "\u2066\u2069\u200f"
        "\x7f\x08\x00" "\ud800" "<script>alert(1)</script>" "\n  - forged row")


def _hostile(base: dict, evil: str = EVIL) -> dict:
    """``base`` with ``evil`` in every kind of value and name a drift row shows."""
    m = copy.deepcopy(base)
    m["driver"] = {"version": "550" + evil, "cuda_driver_version": evil}
    m["gpus"] = [{"index": 0, "name": "H100" + evil, "uuid": evil, "compute_capability": "9.0" + evil}]
    m["cudnn"].append({"path": f"/opt/{evil}/libcudnn.so.9", "version": evil, "owner": evil, "soname": evil,
                       "sha256": evil, "size": 1, "main": True, "loaded": False})
    m["frameworks"].append({"name": "Py" + evil, "distribution": "torch" + evil, "version": evil,
                            "cudnn_compiled": evil, "cuda_compiled": evil, "verdict": evil})
    m["distributions"]["nvidia-cudnn-cu12" + evil] = "9.1" + evil
    return m


def _display_safe(text: str) -> None:
    assert safe_text(text) == text, [hex(ord(c)) for c in text if safe_text(c) != c]
    assert not any(c in text for c in "\x1b\x07\x9b\x9d\x9c\u202e\u2066\x7f\x00")
    assert "\ufffd]0;pwned\ufffd" in text  # shown, made harmless: not dropped


@pytest.mark.parametrize("evil", [pytest.param(EVIL, id="with-surrogate"),
                                  pytest.param(EVIL.replace("\ud800", ""), id="escapes-only")])
def test_the_drift_text_of_a_hostile_manifest_is_display_safe(base, tmp_path, evil):
    """The attack: OSC title sequences, CSI, C1 controls, RLO and kin and a newline in the
    manifest's values and names reached the terminal raw in the drift text (the newline forged a
    row; a lone surrogate made it an "internal error"). Now every row is one display-safe line;
    ``--json`` keeps the values as data."""
    f = _write(tmp_path / "stack\x1b]0;pwned\x07.json", _hostile(base, evil))
    p = _cli("check", "--against", str(f))
    assert p.returncode == 1, p.stdout + p.stderr
    _display_safe(p.stdout)
    # entries start "  - ", their wrapped lines and the rules under them are indented deeper
    lines = p.stdout.splitlines()
    first = next(i for i, r in enumerate(lines) if r.startswith("  - "))
    head, rows = " ".join(x.strip() for x in lines[:first]), lines[first:]
    assert head.startswith(f"Drift from {safe_text(str(f), keep_newlines=False)} ("), head
    n = int(head.rsplit("(", 1)[1].split()[0])
    assert 1 <= len([r for r in rows if r.startswith("  - ")]) <= n, rows  # a folder's files are one entry
    assert all(r.startswith(("  - ", "    ")) for r in rows), rows
    assert not any(r.startswith("  - forged row") for r in rows)
    assert "- distribution nvidia-cudnn-cu12\ufffd]0;pwned\ufffd" in " ".join(r.strip() for r in rows), rows
    assert safe_text(p.stderr) == p.stderr
    pj = _cli("check", "--json", "--against", str(f))
    assert pj.returncode == 1 and "\x1b" not in pj.stdout
    got = json.loads(pj.stdout)
    assert got["manifest"] == str(f)
    assert {"what": "distribution nvidia-cudnn-cu12" + evil, "field": "version", "from": "9.1" + evil,
            "to": None}.items() <= next(r for r in got["drift"] if r["what"] == "distribution nvidia-cudnn-cu12" + evil).items()


def test_the_drift_view_plain_text_and_html_of_a_hostile_manifest_are_safe(base, tmp_path):
    """What the kernel shows: the view's ``text/plain`` (and ``repr``/``str``/IPython's pretty
    printer) carried ESC and RLO raw; the HTML is escaped and display-safe too."""
    from IPython.lib.pretty import pretty  # the real pretty printer terminal IPython uses

    f = _write(tmp_path / "stack.json", _hostile(base))
    view = DriftView(compare(loads(f.read_text()), base), str(f), base)
    bundle = view._repr_mimebundle_()
    for text in (bundle["text/plain"], repr(view), str(view), pretty(view)):
        _display_safe(text)
        assert "\n  - forged row" not in text
    html = bundle["text/html"]
    _display_safe(html.replace("\n", ""))
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html


@pytest.mark.kernel
def test_in_a_kernel_the_drift_view_is_safe_and_a_fifo_does_not_block(base, tmp_path):
    """In a real kernel: ``%cudnn_check --against`` a hostile manifest sends a display-safe
    ``text/plain``; ``--against`` a FIFO fails the cell at once with one line (a ``UsageError``)
    instead of hanging the kernel."""
    from helpers.kernel_session import KernelSession

    f = _write(tmp_path / "stack.json", _hostile(base))
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    ks = KernelSession(tmp_path)
    try:
        assert ks.run("%load_ext cudnn_magic").reply["status"] == "ok"
        c = ks.run(f"%cudnn_check --against {f}", timeout=120)
        assert c.reply["status"] == "ok", c.text()
        data = next(m["content"]["data"] for m in c.messages if m["msg_type"] == "execute_result")
        _display_safe(data["text/plain"])
        assert "<script>" not in data["text/html"]
        c2 = ks.run(f"%cudnn_check --against {fifo}", timeout=30)  # bad input: the cell fails at once
        assert c2.reply["status"] == "error" and c2.reply["ename"] == "UsageError", c2.text()
        assert "not a regular file" in c2.text(), c2.text()
        assert ks.run("1 + 1").reply["status"] == "ok"  # and the kernel answers
    finally:
        ks.close()


# --------------------------------------------------------------------------- 6: exclusive writes

def _manifest_in_child(out: Path, plant: str, *args: str) -> subprocess.CompletedProcess:
    """``cudnn-magic manifest -o OUT ARGS`` in a child that first plants a symlink to ``plant`` at
    ``OUT.tmp-<its pid>``, the temporary name the writer used."""
    return _cli(code=("import os, sys\n"
                      f"os.symlink({plant!r}, {str(out)!r} + '.tmp-%d' % os.getpid())\n"
                      "from cudnn_magic.cli.main import main\n"
                      f"sys.exit(main(['manifest', '-o', {str(out)!r}, *{list(args)!r}]))"))


@pytest.mark.parametrize("args", [(), ("--constraints",)])
def test_manifest_is_not_written_through_a_link_at_its_temporary_name(tmp_path, args):
    """The attack: a symlink planted at ``OUT.tmp-<pid>`` was opened with ``open(..., "w")``: the
    victim it pointed to was overwritten and OUT left a symlink to it. Now the temporary file is
    made by ``mkstemp`` (``O_CREAT | O_EXCL | O_NOFOLLOW``) and renamed over OUT."""
    victim = tmp_path / "victim"
    victim.write_text("keep me\n")
    out = tmp_path / "stack.json"
    p = _manifest_in_child(out, str(victim), *args)
    assert p.returncode == 0, p.stderr
    assert victim.read_text() == "keep me\n"
    assert out.is_file() and not out.is_symlink()
    text = out.read_text()
    assert text.startswith("# pip constraints") if args else loads(text)["schema"] == "cudnn-magic-manifest"
    leftovers = sorted(q.name for q in tmp_path.iterdir() if q.name not in ("victim", "stack.json"))
    assert len(leftovers) == 1 and (tmp_path / leftovers[0]).is_symlink(), leftovers  # only the planted link


def test_manifest_over_a_symlink_replaces_the_link_and_says_so(tmp_path):
    """OUT itself a symlink: the link is replaced by a regular file, the file it pointed to is
    left as it was, and stderr says so (it said only "wrote manifest")."""
    victim = tmp_path / "victim"
    victim.write_text("keep me\n")
    out = tmp_path / "stack.json"
    out.symlink_to(victim)
    p = _cli("manifest", "-o", str(out))
    assert p.returncode == 0, p.stderr
    assert victim.read_text() == "keep me\n"
    assert out.is_file() and not out.is_symlink() and loads(out.read_text())
    assert p.stderr == (f"cudnn-magic: wrote manifest {out} (it was a symbolic link: the link was replaced by this "
                        "file, what it pointed to is unchanged)\n")


def test_manifest_permission_bits_are_the_umask_or_the_files_own(tmp_path):
    """A new manifest is ``0o666`` less the umask (as ``open()`` made it: it is meant to be shared),
    not ``mkstemp``'s 0o600; an existing file keeps its bits (``chmod 600`` stays)."""
    code = ("import os, sys\nos.umask(0o027)\nfrom cudnn_magic.cli.main import main\n"
            "sys.exit(main(['manifest', '-o', sys.argv[1]]))")
    new, kept = tmp_path / "new.json", tmp_path / "kept.json"
    kept.write_text("old")
    os.chmod(kept, 0o604)
    for f in (new, kept):
        p = subprocess.run([sys.executable, "-c", code, str(f)], capture_output=True, text=True, timeout=60,
                           env={**os.environ, "PYTHONPATH": str(REPO)})
        assert p.returncode == 0, p.stderr
    assert stat.S_IMODE(new.stat().st_mode) == 0o640
    assert stat.S_IMODE(kept.stat().st_mode) == 0o604 and loads(kept.read_text())


def test_the_capture_meta_writer_never_follows_a_link_at_its_temporary_name(tmp_path):
    """Guard (this writer was already exclusive): ``meta.json``'s temporary name
    ``meta.json.<pid>.tmp`` is predictable; a link planted there is removed, never written through."""
    from cudnn_magic.capture.protocol import _write_json

    victim = tmp_path / "victim"
    victim.write_text("keep me")
    meta = tmp_path / "meta.json"
    os.symlink(victim, f"{meta}.{os.getpid()}.tmp")
    assert _write_json(str(meta), {"a": 1})
    assert victim.read_text() == "keep me"
    assert meta.is_file() and not meta.is_symlink() and json.loads(meta.read_text()) == {"a": 1}
    assert not os.path.lexists(f"{meta}.{os.getpid()}.tmp")


def test_install_startup_replaces_a_symlinked_config_instead_of_writing_through_it(tmp_path):
    """Guard (install-startup already wrote with ``atomic_write``): a linked
    ``ipython_kernel_config.py`` is replaced by a regular file holding its text and the block; the
    file it pointed to is not changed; ``--undo`` gives that text back."""
    victim = tmp_path / "elsewhere.py"
    victim.write_text("c = get_config()\n")
    profile = tmp_path / "profile"
    profile.mkdir()
    (profile / "ipython_kernel_config.py").symlink_to(victim)
    p = _cli("install-startup", "--profile-dir", str(profile))
    assert p.returncode == 0, p.stderr
    cfg = profile / "ipython_kernel_config.py"
    assert victim.read_text() == "c = get_config()\n"
    assert cfg.is_file() and not cfg.is_symlink() and "cudnn-magic install-startup" in cfg.read_text()
    assert _cli("install-startup", "--undo", "--profile-dir", str(profile)).returncode == 0
    assert cfg.read_text() == "c = get_config()\n" and victim.read_text() == "c = get_config()\n"


def test_install_startup_refuses_a_fifo_config_at_once(tmp_path):
    """A FIFO named ipython_kernel_config.py in the profile: install-startup used to block in
    ``read_text``; now it is refused at once with one line."""
    import subprocess
    import sys

    profile = tmp_path / "profile"
    profile.mkdir()
    os.mkfifo(profile / "ipython_kernel_config.py")
    p = subprocess.run([sys.executable, "-m", "cudnn_magic", "install-startup", "--profile-dir", str(profile)],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode != 0 and "not a regular file" in (p.stdout + p.stderr), p.stdout + p.stderr
