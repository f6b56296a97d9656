"""A pip fix is offered only where installing the wheel would change the finding, checked
by really installing it in a copy of the environment and asking the loader.

* ONNX Runtime 1.31.1 (``onnxruntime-gpu``, a CUDA 13 build) installed in a venv with no cuDNN:
  the report offered ``pip install 'nvidia-cudnn-cu13>=9,<10'``. Installed for real (the real
  ``nvidia-cudnn-cu13`` 9.12.0.46 wheel's files, hard links of its ``--target`` folder, as pip
  leaves them), ONNX Runtime's CUDA provider still finds no ``libcudnn.so.9`` (it ``dlopen``\\ s it
  by name and has no RUNPATH), and the check says so again; what the report says does work,
  ``onnxruntime.preload_dlls()``, maps that copy.
* A CUDA 12 cuDNN wheel where PyTorch's CUDA 13 one is installed writes over its files: the real
  what-if (pip's resolver) predicts ``cudnn-wheel-overwritten``, and the replay says so without pip.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.framework_envs import merged_site, run_py, site_of, target, target_with_deps, torch_env
from helpers.real_wheels import REPO

pytestmark = [pytest.mark.realwheels, pytest.mark.timeout(1800)]

ORT_GPU = ("onnxruntime-gpu", "1.31.1")
CUDNN_CU13 = ("nvidia-cudnn-cu13", "9.12.0.46")

MAPS = r"""
import ctypes, json, sys
def maps():
    return sorted({l.split()[-1] for l in open('/proc/self/maps') if 'libcudnn' in l and l.split()[-1].startswith('/')})
out = {}
import onnxruntime
try:  # what the CUDA provider's dlopen("libcudnn.so.9") finds on its own (no RPATH/RUNPATH)
    ctypes.CDLL('libcudnn.so.9'); out['alone'] = maps()
except OSError as e:
    out['alone_error'] = str(e)
onnxruntime.preload_dlls(cuda=False, cudnn=True)
out['after_preload'] = maps()
print(json.dumps(out))
"""


def _base() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LD_LIBRARY_PATH", "LD_PRELOAD", "LD_DEBUG")}


def _check(py: Path) -> dict:
    p = subprocess.run([str(py), "-m", "cudnn_magic", "check", "--json"], env=_base(), capture_output=True, text=True,
                       timeout=600, cwd="/")
    assert p.returncode in (0, 1), p.stderr[-3000:]
    return json.loads(p.stdout)


def _ort_finding(rep: dict) -> dict:
    return next(f for f in rep["findings"] if f["id"] == "cudnn-library-not-found" and "ONNX Runtime" in f["title"])


def _ort_venv(root: Path, with_pip: bool) -> Path:
    """A venv (with its own pip or without) whose site-packages holds onnxruntime-gpu 1.31.1 and its
    dependencies (as pip installs them), this checkout and its own dependencies on a ``.pth`` after them."""
    subprocess.run([sys.executable, "-m", "venv", *(() if with_pip else ("--without-pip",)), str(root / "venv")],
                   check=True)
    py = root / "venv" / "bin" / "python"
    site = site_of(py)
    merged_site(site, target_with_deps(*ORT_GPU))
    here = subprocess.run([sys.executable, "-c", "import packaging, os; print(os.path.dirname(os.path.dirname("
                           "packaging.__file__)))"], capture_output=True, text=True, check=True).stdout.strip()
    (site / "zz-cudnn-magic.pth").write_text(f"{REPO}\n{here}\n")
    return py


@pytest.fixture(scope="module")
def ort_venv(tmp_path_factory) -> Path:
    """:func:`_ort_venv` without pip."""
    return _ort_venv(tmp_path_factory.mktemp("ortvenv"), with_pip=False)


def test_a_cudnn_wheel_onnx_runtime_never_reads_is_not_offered_and_that_holds(ort_venv):
    site = site_of(ort_venv)
    lib = site / "nvidia" / "cudnn" / "lib"
    rep = _check(ort_venv)
    f = _ort_finding(rep)
    assert "install-matching-cudnn" not in [x["id"] for x in f["fixes"]], f["fixes"]
    assert f"pip would put it in {lib}" in f["detail"] and "never reads" in f["detail"], f["detail"]
    (adv,) = [x for x in f["fixes"] if x["id"] == "add-library-path"]
    assert "nvidia-cudnn-cu13>=9,<10" in adv["action"] and "onnxruntime.preload_dlls()" in adv["action"], adv
    assert "CUDA 13 runtime libraries" in adv["action"]

    # apply the pip fix for real (in this copy) and ask the loader and the check again
    merged_site(site, target(*CUDNN_CU13))
    assert (lib / "libcudnn.so.9").is_file()
    truth = run_py(ort_venv, MAPS)
    assert "alone_error" in truth, truth  # installed, and still not found: pip alone changed nothing
    assert str(lib / "libcudnn.so.9") in truth["after_preload"], truth  # the advice that works does
    again = _ort_finding(_check(ort_venv))
    assert "will find no libcudnn.so.9" in again["title"], again


def test_a_cuda_12_cudnn_wheel_over_pytorchs_cuda_13_one_is_an_overwrite(tmp_path):
    from cudnn_magic.fixes.pip_replay import pip_fix_blocker
    from cudnn_magic.model import FrameworkBuild, LibraryCopy

    py = torch_env()
    site = site_of(py)
    lib = site / "nvidia" / "cudnn" / "lib"
    owner = next(d.name for d in site.iterdir() if d.name.startswith("nvidia_cudnn_cu13-") and d.suffix == ".dist-info")
    version = owner[len("nvidia_cudnn_cu13-"):-len(".dist-info")]
    copy = LibraryCopy(str(lib / "libcudnn.so.9"), "libcudnn.so.9", "libcudnn.so.9", "9.24.0",
                       owner=f"pip: nvidia-cudnn-cu13 {version}")
    ort12 = FrameworkBuild("ONNX Runtime", "onnxruntime-gpu", "1.20.1", cudnn_compiled="9", cuda_compiled="12.6",
                           checker="onnxruntime")
    why = pip_fix_blocker(ort12, "nvidia-cudnn-cu12>=9,<10", [copy], purelib=str(site), search_dirs=[])
    assert why and "over nvidia-cudnn-cu13's" in why and "cudnn-wheel-overwritten" in why, why
    # the real what-if (pip's resolver, nothing installed) predicts the same
    p = subprocess.run([str(py), "-m", "cudnn_magic", "check", "--json", "--what-if",
                        "nvidia-cudnn-cu12>=9,<10 --no-deps"], env=_base(), capture_output=True, text=True,
                       timeout=900, cwd="/")
    if p.returncode == 2 and "index-unreachable" in p.stdout:
        pytest.skip("PyPI cannot be reached")
    data = json.loads(p.stdout)
    assert any(x["id"] == "cudnn-wheel-overwritten" and x["new"] for x in data["predicted_findings"]), data


# ----------------------------------------------------------------------------- the what-if sees consumers

ORT_CPU = ("onnxruntime", "1.32.0")


@pytest.fixture(scope="module")
def ort_pip_venv(tmp_path_factory) -> Path:
    """:func:`_ort_venv` with its own pip."""
    return _ort_venv(tmp_path_factory.mktemp("ortpip"), with_pip=True)


def _what_if(py: Path, reqs: str) -> dict:
    p = subprocess.run([str(py), "-m", "cudnn_magic", "check", "--json", "--what-if", reqs], env=_base(),
                       capture_output=True, text=True, timeout=900, cwd="/")
    if p.returncode == 2 and "index-unreachable" in p.stdout:
        pytest.skip("PyPI cannot be reached")
    assert p.returncode in (0, 1), p.stdout[-2000:] + p.stderr[-2000:]
    return json.loads(p.stdout)


@pytest.mark.parametrize("reqs", [f"{ORT_CPU[0]}=={ORT_CPU[1]} --no-deps", "faster-whisper"])
def test_the_what_if_predicts_the_cpu_onnxruntime_over_the_gpu_one(ort_pip_venv, reqs, tmp_path):
    """``faster-whisper`` depends on ``onnxruntime``: installed beside ``onnxruntime-gpu`` it writes
    the CPU wheel over the GPU one, and ONNX Runtime silently loses its CUDA provider. Not
    predicted before; the real install of that wheel (hard links of its files, as pip leaves them)
    gives the same finding in the check."""
    data = _what_if(ort_pip_venv, reqs)
    assert any(c["name"] == "onnxruntime" for c in data["changes"]), data["changes"]
    new = [f for f in data["predicted_findings"] if f["new"] and f["id"] == "onnxruntime-cpu-over-gpu"]
    assert new and new[0]["severity"] == "error" and "onnxruntime-gpu 1.31.1" in new[0]["title"], data["predicted_findings"]
    assert data["error"] is True
    if reqs.startswith("onnxruntime=="):  # the truth, for the wheel the prediction names
        both = merged_site(tmp_path / "site", target_with_deps(*ORT_GPU), target_with_deps(*ORT_CPU))
        rep = _check_with(ort_pip_venv, both)
        assert any(f["id"] == "onnxruntime-cpu-over-gpu" for f in rep["findings"]), rep["findings"]


def _check_with(py: Path, site: Path) -> dict:
    p = subprocess.run([str(py), "-I", "-c", f"import sys; sys.path[:0] = [{str(site)!r}, {str(REPO)!r}]; "
                        "from cudnn_magic.cli.main import main; sys.argv = ['cudnn-magic', 'check', '--json']; main()"],
                       env=_base(), capture_output=True, text=True, timeout=600, cwd="/")
    assert p.returncode in (0, 1), p.stderr[-3000:]
    return json.loads(p.stdout)
