"""What a report shows once and in which order: the most severe finding first (the report's
headline is a WARNING; the INFO about the missing driver came first, in text and HTML), a second
diagnosis with the same evidence and fix as the first refers to them instead of repeating the
block, the CUDA toolkit line names nvcc once. Real CLI subprocesses, the real cuDNN 9.12 JIT
wheel first on ``LD_LIBRARY_PATH`` (the demo's set-up)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.support import REPO, require_real_cudnn

#: TensorFlow's two lines when cuDNN cannot get memory for its handle (cuda_dnn.cc and the BFC
#: allocator; the wording of https://github.com/tensorflow/tensorflow/issues/24828).
OOM_LOG = ("2024-01-01 12:00:00.000000: E tensorflow/stream_executor/cuda/cuda_dnn.cc:389] Could not create cudnn "
           "handle: CUDNN_STATUS_INTERNAL_ERROR\n"
           "2024-01-01 12:00:00.000000: I tensorflow/core/common_runtime/bfc_allocator.cc:1010] failed to allocate "
           "2.00G (2147483648 bytes) from device: CUDA_ERROR_OUT_OF_MEMORY: out of memory\n")


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_CURRENT_TEST", "LD_LIBRARY_PATH")}
    env["PYTHONPATH"] = str(REPO)
    env.update(extra)
    return env


def test_a_second_diagnosis_refers_to_the_evidence_and_fix_already_shown():
    p = subprocess.run([sys.executable, "-m", "cudnn_magic", "explain", "-"], input=OOM_LOG, capture_output=True,
                       text=True, env=_env(COLUMNS="100"), cwd=REPO, timeout=120)
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert "[gpu-out-of-memory]" in out and "[cudnn-init-failed]" in out, out
    assert out.count("TF_FORCE_GPU_ALLOW_GROWTH") == 1, out
    assert out.count("not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR") == 1, out
    second = out.split("Also possible:", 1)[1]
    assert "Evidence: the same lines as above." in second and "Fix: [allow-memory-growth], above." in second, out


@pytest.fixture(scope="module")
def old_dir() -> Path:
    require_real_cudnn()
    from helpers.real_wheels import install_wheel

    return install_wheel("nvidia-cudnn-jit-cu12", "9.12.0.46") / "nvidia" / "cudnn_jit" / "lib"


@pytest.mark.realwheels
def test_findings_are_listed_most_severe_first_in_text_and_html(old_dir):
    env = _env(LD_LIBRARY_PATH=str(old_dir), COLUMNS="100")
    text = subprocess.run([sys.executable, "-m", "cudnn_magic", "check"], capture_output=True, text=True, env=env,
                          cwd=REPO, timeout=180).stdout
    findings = text.split("\nFindings\n", 1)[1].split("\n\n", 1)[0]
    tags = [ln.split("]", 1)[0].strip() + "]" for ln in findings.splitlines() if ln.startswith("  [")]
    order = {"[ERROR]": 0, "[WARNING]": 1, "[INFO]": 2}
    assert tags == sorted(tags, key=order.__getitem__) and "[WARNING]" in tags, findings
    assert text.splitlines()[0].startswith("cudnn-magic check: 1 warning (cudnn-shadowed)"), text
    html = subprocess.run([sys.executable, "-c", "import cudnn_magic; print(cudnn_magic.check().html())"],
                          capture_output=True, text=True, env=env, cwd=REPO, timeout=180).stdout
    body = html.split("<h4>Findings</h4>", 1)[1]
    if "no-nvidia-driver" in body:
        assert body.index("cudnn-shadowed") < body.index("no-nvidia-driver"), body


def test_the_cuda_toolkit_line_names_nvcc_once():
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("no nvcc on PATH on this machine")
    text = subprocess.run([sys.executable, "-m", "cudnn_magic", "check"], capture_output=True, text=True,
                          env=_env(COLUMNS="300"), cwd=REPO, timeout=180).stdout
    section = text.split("CUDA toolkit on this machine", 1)[1].split("\n\n", 1)[0]
    assert section.count(nvcc) == 1, section


@pytest.mark.realwheels
def test_the_demo_says_installing_only_when_it_installs(old_dir):
    """scripts/run_quickstart.py printed "Installing the older cuDNN ... once..." on every run:
    the line now comes from ``install_wheel``'s ``on_install``, called only when pip runs."""
    from helpers.real_wheels import install_wheel

    said: list[int] = []
    assert install_wheel("nvidia-cudnn-jit-cu12", "9.12.0.46", on_install=lambda: said.append(1)) == old_dir.parent.parent.parent
    assert said == []
    src = (REPO / "scripts" / "run_quickstart.py").read_text()
    assert "on_install=lambda: print(" in src and src.count("Installing the older cuDNN") == 1
