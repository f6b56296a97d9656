"""The README's first command: ``scripts/demo.sh`` runs ``notebooks/quickstart.ipynb`` through
``scripts/run_quickstart.py`` in a real kernel. Its own checks (the report shows the cuDNN 9.12
the kernel mapped from the real wheel on ``LD_LIBRARY_PATH`` and names it as the cuDNN in use, the
failing cell's diagnosis names 9.12.0 against 9.27.0, offers only remove-shadowing-dir and
suggests no conda) must hold on every change."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from helpers.support import REPO, kernel_env, real_cudnn_lib_dir

pytestmark = pytest.mark.kernel


def test_the_demo_runs_and_its_diagnosis_agrees_with_the_live_facts(tmp_path):
    if real_cudnn_lib_dir() is None:
        pytest.skip("the venv's cuDNN wheel is missing: pip install --no-deps nvidia-cudnn-jit-cu12")
    from helpers.real_wheels import install_wheel

    install_wheel("nvidia-cudnn-jit-cu12", "9.12.0.46")  # here, so that a missing index skips the test
    p = subprocess.run([sys.executable, str(REPO / "scripts" / "run_quickstart.py"), "--out", str(tmp_path / "out")],
                       capture_output=True, text=True, env=kernel_env(tmp_path), timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr[-3000:]
    assert "libcudnn.so.9 9.12.0 (wheel: nvidia-cudnn-jit-cu12 9.12.0.46)" in p.stdout, p.stdout
    assert "[cudnn-version-mismatch]" in p.stdout
    assert "cuDNN in use: 9.12.0 " in p.stdout and "FAILED" not in p.stdout, p.stdout
    nb = json.loads((tmp_path / "out" / "quickstart.ipynb").read_text())
    text = json.dumps(nb)
    assert "remove-shadowing-dir" in text and "conda install" not in text
    # the check must not say OK two cells before the same kernel is diagnosed
    check_out = json.dumps([c.get("outputs") for c in nb["cells"] if "%cudnn_check" in "".join(c.get("source", ""))])
    assert "shadows this environment&#x27;s cuDNN 9.27.0" in check_out or "shadows this environment's cuDNN 9.27.0" in check_out, \
        check_out[:3000]
    assert "-- OK" not in check_out
    assert (tmp_path / "out" / "quickstart.html").exists()
