"""The what-if runs the consumer checks on the predicted environment.

``ctranslate2==4.4.0`` (it vendors cuDNN 8.9.7 without its sub-libraries) beside torch 2.14.1's cuDNN 9:
the real install brings two warnings (``cudnn-consumer-clash``, ``cudnn-sublibrary-load-failed``),
which the what-if used to predict none of. Here the prediction is compared with the real install
that follows it, finding by finding, and the upgrade to 4.8.5 (no vendored cuDNN) is predicted to
resolve both. Real wheels: torch 2.14.1 (the shared venv of ``framework_envs``), ctranslate2 4.4.0
and 4.8.5 from PyPI (about 37 MiB each, fetched by pip and by the what-if's own stage). The venv under
test is a small one whose ``.pth`` adds torch's site-packages, so the shared torch venv is never
changed."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from cudnn_magic.probes import wheel_stage
from helpers.framework_envs import site_of, torch_env
from helpers.prevention_env import REPO, run_cli

pytestmark = [pytest.mark.realwheels, pytest.mark.timeout(1800)]

WATCHED = ("cudnn-consumer-clash", "cudnn-sublibrary-load-failed")


@pytest.fixture(scope="module")
def venv_beside_torch(tmp_path_factory):
    torch_py = torch_env()
    root = tmp_path_factory.mktemp("ct2") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(root)], check=True, capture_output=True, timeout=300)
    py = root / "bin" / "python"
    site = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    # this checkout, then torch's site-packages (torch, packaging, nvidia-ml-py) after the venv's own
    with open(os.path.join(site, "zz_beside_torch.pth"), "w") as fh:
        fh.write(f"{REPO}\n{site_of(torch_py)}\n")
    return py


def _watched(findings):
    return {(f["id"], f["title"]) for f in findings if f["id"] in WATCHED}


def _pip(py, *args):
    proc = subprocess.run([str(py), "-m", "pip", *args], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]


def test_consumer_findings_are_predicted_as_the_real_install_shows_them(venv_beside_torch, tmp_path):
    py = venv_beside_torch
    proc = run_cli(py, "check", "--json", "--what-if", "ctranslate2==4.4.0 --no-deps")
    data = json.loads(proc.stdout)
    predicted = _watched(f for f in data["predicted_findings"] if f["new"])
    assert {i for i, _ in predicted} == set(WATCHED), data["predicted_findings"]
    assert not _watched(data["present_findings"])
    assert any("ctranslate2 4.4.0: its wheel" in n and "scratch folder, not installed" in n for n in data["notes"])
    row = next(f for f in data["predicted_frameworks"] if f["name"] == "CTranslate2")
    assert row["version"] == "4.4.0" and row["cudnn_used"] == "8.9.7"
    # no scratch path leaks into what the user reads
    assert "cudnn-magic-whatif-" not in json.dumps(data["predicted_findings"])
    assert not any("ctranslate2" in p for p in os.listdir(site_of(py))), "the what-if installed nothing"
    try:
        _pip(py, "install", "-q", "--no-deps", "ctranslate2==4.4.0")
        real = json.loads(run_cli(py, "check", "--json").stdout)
        assert _watched(real["findings"]) == predicted
        # and the way out: 4.8.5 (no vendored cuDNN 8) is predicted to resolve both
        up = json.loads(run_cli(py, "check", "--json", "--what-if", "ctranslate2==4.8.5 --no-deps").stdout)
        assert {"name": "ctranslate2", "from": "4.4.0", "to": "4.8.5"} in up["changes"]
        assert _watched(up["resolved_findings"]) == predicted
        assert not _watched(up["predicted_findings"])
        rows = [f for f in up["predicted_frameworks"] if f["name"] == "CTranslate2"]
        assert [r["version"] for r in rows] == ["4.8.5"], "the replaced 4.4.0 is not scanned"
    finally:
        subprocess.run([str(py), "-m", "pip", "uninstall", "-q", "-y", "ctranslate2"], capture_output=True, timeout=300)


def test_a_consumer_wheel_too_large_or_not_a_wheel_is_a_note_not_a_download(tmp_path, monkeypatch):
    from cudnn_magic.probes.pip_report import PlannedInstall

    big = tmp_path / "ctranslate2-9.9.9-cp311-cp311-linux_x86_64.whl"
    big.write_bytes(b"x" * 2048)
    monkeypatch.setattr(wheel_stage, "MAX_UNPACKED_BYTES", 10)
    site, staged, notes = wheel_stage.stage_consumer_wheels(
        [PlannedInstall("ctranslate2", "9.9.9", url=big.as_uri()),
         PlannedInstall("ctranslate2", "4.4.0", url="https://example.invalid/ctranslate2-4.4.0.tar.gz"),
         PlannedInstall("numpy", "2.0.0", url="https://example.invalid/numpy.whl")], str(tmp_path / "scratch"))
    assert site is None and staged == []
    assert "cannot be read" in notes[0] and "BadZipFile" in notes[0]
    assert "it would have to be built" in notes[1]
    assert len(notes) == 2, "a wheel that is no cuDNN consumer is never fetched"


def test_a_wheel_entry_outside_its_folder_is_refused(tmp_path):
    import zipfile

    from cudnn_magic.probes.pip_report import PlannedInstall

    evil = tmp_path / "ctranslate2-1.0-py3-none-any.whl"
    with zipfile.ZipFile(evil, "w") as zf:
        zf.writestr("ctranslate2/__init__.py", "")
        zf.writestr("../../escaped.txt", "no")
    site, _staged, notes = wheel_stage.stage_consumer_wheels([PlannedInstall("ctranslate2", "1.0", url=evil.as_uri())],
                                                            str(tmp_path / "scratch"))
    assert site is None and "outside its folder" in notes[0]
    assert not (tmp_path / "escaped.txt").exists() and not (tmp_path.parent / "escaped.txt").exists()
