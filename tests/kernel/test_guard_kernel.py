"""``%cudnn_guard`` in a real ipykernel (nbclient): ``%pip install`` of a wheel that would
overwrite the kernel's installed cuDNN wheel is stopped with the prediction and installs nothing;
``--force`` reaches pip; ``off`` and ``%unload_ext`` give IPython's ``%pip`` back.

The kernel runs this test environment, which holds the real ``nvidia-cudnn-jit-cu12`` 9.27.0.42
(a test extra of the project, ``.venv``); the -cu13 wheel writes the same ``nvidia/cudnn_jit``
folder. ``--force`` is shown with pip's own ``--dry-run`` so the shared test environment is never
changed: pip rejecting an unknown ``--force`` would fail that cell, so its answer proves the
guard removed it and handed the rest to pip. The kernel also runs with ``PIP_DRY_RUN=1`` (pip's
environment form of ``--dry-run``), so even a guard that failed to stop would install nothing.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from helpers.support import outputs_text, run_notebook

FREEZE = ("import subprocess, sys\n"
          "print('FREEZE', subprocess.run([sys.executable, '-m', 'pip', 'freeze', '--all'], capture_output=True, "
          "text=True).stdout.replace('\\n', ' '))")


@pytest.mark.kernel
def test_guard_stops_an_overwriting_install_and_force_goes_on(tmp_path):
    freeze = subprocess.run([sys.executable, "-m", "pip", "freeze", "--all"], capture_output=True, text=True).stdout
    if "nvidia-cudnn-jit-cu12==" not in freeze:
        pytest.fail("the test environment lacks nvidia-cudnn-jit-cu12 (run scripts/bootstrap.sh)")
    nb = run_notebook([
        "%load_ext cudnn_magic",
        "%cudnn_guard",
        "%cudnn_guard on",
        "%pip install --no-deps nvidia-cudnn-jit-cu13==9.24.0.43",
        FREEZE,
        "%pip install --force --dry-run --no-deps nvidia-cudnn-jit-cu13==9.24.0.43",
        "%cudnn_guard off",
        "%cudnn_guard status",
        "r = %cudnn_check --json --what-if 'nvidia-cudnn-jit-cu13==9.24.0.43 --no-deps'\n"
        "print('NEW', [f['id'] for f in r['predicted_findings'] if f['new']], r['error'])",
        "%cudnn_check --what-if 'nvidia-cudnn-jit-cu13=9.24'",
        "%cudnn_guard on\n%unload_ext cudnn_magic\n"
        "print('PIP', type(get_ipython().magics_manager.magics['line']['pip'].__self__).__name__)",
    ], tmp_path, env={"PIP_DRY_RUN": "1"}, timeout=300)  # pip installs nothing even if the guard failed
    c = [outputs_text(cell) for cell in nb.cells]
    assert "cudnn_guard is off" in c[1]
    assert "cudnn_guard is on" in c[2]
    assert "cudnn_guard: stopped, nothing installed: this install would add 1 cuDNN error" in c[3], c[3]
    assert "Would install" not in c[3]  # pip itself never ran
    # "install nvidia-cudnn-jit-cu12>=9.27.0.42 instead" (which pip resolves to nothing) is never offered
    assert " instead" not in c[3].split("(prediction below)")[1].split("\n")[0], c[3]
    assert "or leave the environment as it is" in c[3] and "Safer requirement: none (nothing to install instead" in c[3], c[3]
    assert "[predicted error] cudnn-wheel-overwritten" in c[3] and "nvidia-cudnn-jit-cu13 9.24.0.43's files are there now" in c[3]
    assert "nvidia-cudnn-jit-cu13" not in c[4] and "nvidia-cudnn-jit-cu12==9.27.0.42" in c[4]
    assert "--force given" in c[5] and "Would install nvidia-cudnn-jit-cu13-9.24.0.43" in c[5], c[5]
    assert "cudnn_guard is off" in c[6] and c[7].strip() == "cudnn_guard is off"
    assert "NEW ['cudnn-wheel-overwritten'] True" in c[8], c[8]
    # bad input fails the cell: IPython's one line for a usage error
    assert c[9].strip().startswith("UsageError: what-if: 'nvidia-cudnn-jit-cu13=9.24' is not a valid requirement")
    assert "Traceback" not in c[9] and len(c[9].strip().splitlines()) == 1
    assert "PIP PackagingMagics" in c[10]
    assert subprocess.run([sys.executable, "-m", "pip", "freeze", "--all"], capture_output=True, text=True).stdout == freeze


def test_what_if_words_keeps_requirements_and_index_options():
    from cudnn_magic.shell.guard import what_if_words

    assert what_if_words("install -q --progress-bar off torch==2.14.1 -i https://x/simple") == [
        "torch==2.14.1", "-i", "https://x/simple"]
    assert "is not an option" in what_if_words("install -r requirements.txt")
    assert "is not a valid requirement" in what_if_words("install ./dist/x.whl")
