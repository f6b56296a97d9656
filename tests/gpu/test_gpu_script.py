"""The GPU validation script (tests/gpu/validate.py) runs here too: every check either passes
on the CPU or skips with its reason; none fails. Keeps the script from rotting between the
tasks that are lent a GPU."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from helpers.support import REPO


@pytest.mark.kernel
def test_gpu_validation_script_runs_without_a_gpu(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}
    proc = subprocess.run([sys.executable, str(REPO / "tests" / "gpu" / "validate.py"), "--out", str(tmp_path)],
                          capture_output=True, text=True, env=env, timeout=480)
    data = json.loads((tmp_path / "gpu_validation.json").read_text())
    statuses = {r["check"]: r["status"] for r in data["results"]}
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert set(statuses) == {"nvml-vs-nvidia-smi", "torch-mapped-cudnn", "cudnn-create", "real-status-error",
                             "memory-follows-4gib", "check-in-kernel", "crash-record"}
    assert "FAIL" not in statuses.values()
    assert statuses["check-in-kernel"] == "PASS"  # runs for real in a kernel on the CPU
    assert "| check | status |" in proc.stdout
