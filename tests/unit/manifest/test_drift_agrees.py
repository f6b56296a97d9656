"""``cudnn-magic check --against MANIFEST`` says what ``check`` says in the same shell.

The demo's set-up: a manifest written for this environment (its own pip cuDNN 9.27), then the
older real cuDNN 9.12 jit wheel's folder first on ``LD_LIBRARY_PATH``. ``check`` reports the
``cudnn-shadowed`` warning for that folder; the drift said "rules now: no finding about it" for
each of its library files (the finding names the folder, not the file, and names it as it is
written on ``LD_LIBRARY_PATH``, the manifest each file's real path), in one 200+ character line
per file. Real CLI subprocesses, real wheels."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.support import REPO, require_real_cudnn


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_CURRENT_TEST", "LD_LIBRARY_PATH")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env.update(extra)
    return env


def _cli(*args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cudnn_magic", *args], capture_output=True, text=True,
                          env=_env(**env), cwd=REPO, timeout=180)


@pytest.fixture(scope="module")
def old_dir() -> Path:
    require_real_cudnn()
    from helpers.real_wheels import install_wheel

    return install_wheel("nvidia-cudnn-jit-cu12", "9.12.0.46") / "nvidia" / "cudnn_jit" / "lib"


@pytest.fixture(scope="module")
def manifest(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("manifest") / "stack.json"
    p = _cli("manifest", "-o", str(out))
    assert p.returncode == 0, p.stderr
    return out


@pytest.mark.realwheels
@pytest.mark.parametrize("linked", [False, True], ids=["real-path", "through-a-link"])
def test_the_drift_names_the_finding_check_reports_for_that_folder(old_dir, manifest, tmp_path, linked):
    entry = old_dir
    if linked:  # a folder reached through a link (a shared cache linked into the checkout)
        os.symlink(old_dir.parent.parent.parent, tmp_path / "wheels")
        entry = tmp_path / "wheels" / "nvidia" / "cudnn_jit" / "lib"
    check = json.loads(_cli("check", "--json", LD_LIBRARY_PATH=str(entry)).stdout)
    shadow = [f for f in check["findings"] if f["id"] == "cudnn-shadowed"]
    assert shadow and shadow[0]["severity"] == "warning", check["findings"]

    p = _cli("check", "--against", str(manifest), "--json", LD_LIBRARY_PATH=str(entry))
    assert p.returncode == 1, p.stderr
    rows = [r for r in json.loads(p.stdout)["drift"] if r["what"].startswith("cuDNN copy ")]
    ours = [r for r in rows if os.path.realpath(os.path.dirname(r["what"][len("cuDNN copy "):])) == str(old_dir.resolve())]
    assert {Path(r["what"]).name for r in ours} >= {"libcudnn.so.9", "libcudnn_graph.so.9"}, rows
    for r in ours:
        assert r["from"] is None and r["to"] == "9.12.0", r
        assert r["now"].startswith("rules now: warning cudnn-shadowed: "), r
        assert "no finding about it" not in r["now"], r

    text = _cli("check", "--against", str(manifest), LD_LIBRARY_PATH=str(entry), COLUMNS="100").stdout
    lines = text.splitlines()
    assert max(len(ln) for ln in lines) <= 100, [ln for ln in lines if len(ln) > 100]
    # one entry for the folder, naming its files, with check's finding under it once
    entries = [ln for ln in lines if ln.startswith("  - ")]
    assert len(entries) == 1 and entries[0].startswith("  - cuDNN folder "), text
    flat = " ".join(text.split())
    assert f"({len(ours)} files: " in flat and "libcudnn.so.9" in flat and "libcudnn_graph.so.9" in flat, text
    assert flat.count("cudnn-shadowed") == 1 and "no finding about it" not in flat, text
