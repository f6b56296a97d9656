"""A FIFO (or a device) in the scanned tree never hangs a check.

Every attack here plants a real FIFO (``os.mkfifo``) where a probe reads or loads a file: a
``libcudnn.so.9`` in a wheel folder of a ``sys.path`` entry or in an ``LD_LIBRARY_PATH`` folder, a
``RECORD``, a framework's ``METADATA``/``__init__.py``/``build_info.py``, a ``cudnn_version.h``, a
``libnvidia-ml.so.1`` the loader would open, an ``nvcc`` on ``PATH``... Then the real CLI
(``python -m cudnn_magic check --json``) runs in a child with a timeout: a hang fails the test
instead of hanging it. The report must still come, and name the file it skipped and why.

Before the fix, ``torch/__init__.py``, ``METADATA``, ``build_info.py``, ``_wheel.json``, the JAX
plugin's ``__init__.py``, ``RECORD`` (the consumer scan), ``version.json``, ``conda-meta`` and
``nvcc`` blocked in ``open``; the ``libnvidia-ml.so.1`` one blocked in ``dlopen``; the header and
the ``libcudnn_graph.so.9`` beside a copy were skipped or waited out without a word.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.builders import dist_info, write
from helpers.support import REPO, build_cudnn_standin, outputs_text, run_notebook

CHECK_TIMEOUT_S = 90  # a check takes a few seconds; a FIFO blocked it for ever


def _fifo(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)
    return path


# Each builder plants one attack under ``tmp`` (the site folder is ``tmp/site``, put on
# PYTHONPATH) and returns (the FIFO's path, extra environment).

def _wheel_lib(tmp: Path):
    return _fifo(tmp / "site/nvidia/cudnn/lib/libcudnn.so.9"), {}


def _ld_library_path_lib(tmp: Path):
    return _fifo(tmp / "ldp/libcudnn.so.9"), {"LD_LIBRARY_PATH": str(tmp / "ldp")}


def _ld_library_path_beside(tmp: Path):
    # a copy of unknown version is asked in a child that loads its folder alone: the FIFO
    # sub-library beside it would block that child's dlopen until it is killed
    build_cudnn_standin(tmp / "ldp", "9.1.0")
    return _fifo(tmp / "ldp/libcudnn_graph.so.9"), {"LD_LIBRARY_PATH": str(tmp / "ldp")}


def _ld_library_path_nvml(tmp: Path):
    return _fifo(tmp / "ldp/libnvidia-ml.so.1"), {"LD_LIBRARY_PATH": str(tmp / "ldp")}


def _record(tmp: Path):
    build_cudnn_standin(tmp / "site/nvidia/cudnn/lib", "9.1.0")
    dist_info(tmp / "site", "nvidia-cudnn-cu12", "9.1.0.70")
    return _fifo(tmp / "site/nvidia_cudnn_cu12-9.1.0.70.dist-info/RECORD"), {}


def _header(tmp: Path):
    build_cudnn_standin(tmp / "site/nvidia/cudnn/lib", "9.1.0")  # no version in its name, no RECORD
    return _fifo(tmp / "site/nvidia/cudnn/include/cudnn_version.h"), {}


def _consumer_so(tmp: Path):
    write(tmp / "site/torch/__init__.py")
    write(tmp / "site/torch/version.py", "__version__ = '2.5.0'\ncuda = '12.4'\n")
    dist_info(tmp / "site", "torch", "2.5.0", requires=["nvidia-cudnn-cu12==9.1.0.70"])
    return _fifo(tmp / "site/torch/lib/libtorch_cuda.so"), {}


def _torch_init(tmp: Path):
    write(tmp / "site/torch/version.py", "__version__ = '2.5.0'\ncuda = '12.4'\n")
    dist_info(tmp / "site", "torch", "2.5.0")
    return _fifo(tmp / "site/torch/__init__.py"), {}


def _dist_metadata(tmp: Path):
    write(tmp / "site/torch/__init__.py")
    return _fifo(tmp / "site/torch-2.5.0.dist-info/METADATA"), {}


def _tf_build_info(tmp: Path):
    write(tmp / "site/tensorflow/__init__.py")
    dist_info(tmp / "site", "tensorflow", "2.17.0")
    return _fifo(tmp / "site/tensorflow/python/platform/build_info.py"), {}


def _cupy_wheel_json(tmp: Path):
    write(tmp / "site/cupy/__init__.py")
    dist_info(tmp / "site", "cupy-cuda12x", "13.0.0")
    return _fifo(tmp / "site/cupy/.data/_wheel.json"), {}


def _jax_plugin_init(tmp: Path):
    write(tmp / "site/jax_plugins/xla_cuda12/xla_cuda_plugin.so")
    write(tmp / "site/jax_cuda12_plugin/__init__.py")
    dist_info(tmp / "site", "jax-cuda12-plugin", "0.4.30")
    return _fifo(tmp / "site/jax_plugins/xla_cuda12/__init__.py"), {}


def _cuda_home_version(tmp: Path):
    (tmp / "cuda/lib64").mkdir(parents=True)
    return _fifo(tmp / "cuda/version.json"), {"CUDA_HOME": str(tmp / "cuda")}


def _conda_meta(tmp: Path):
    (tmp / "conda/lib").mkdir(parents=True)
    return _fifo(tmp / "conda/conda-meta/cudnn-9.1.0-0.json"), {"CONDA_PREFIX": str(tmp / "conda")}


def _nvcc_on_path(tmp: Path):
    nvcc = _fifo(tmp / "bin/nvcc")
    nvcc.chmod(0o755)
    return nvcc, {"PATH": f"{tmp / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"}


PLACES = {
    "wheel-folder-libcudnn": _wheel_lib,
    "ld-library-path-libcudnn": _ld_library_path_lib,
    "ld-library-path-sublibrary-beside-a-copy": _ld_library_path_beside,
    "ld-library-path-libnvidia-ml": _ld_library_path_nvml,
    "dist-info-RECORD": _record,
    "cudnn_version.h": _header,
    "consumer-so": _consumer_so,
    "torch-__init__.py": _torch_init,
    "dist-info-METADATA": _dist_metadata,
    "tensorflow-build_info.py": _tf_build_info,
    "cupy-_wheel.json": _cupy_wheel_json,
    "jax-plugin-__init__.py": _jax_plugin_init,
    "CUDA_HOME-version.json": _cuda_home_version,
    "conda-meta-json": _conda_meta,
    "nvcc-on-PATH": _nvcc_on_path,
}


def _env(tmp: Path, extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "CONDA_PREFIX", "CUDA_HOME")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), str(tmp / "site")])
    env["HOME"] = str(tmp)
    env.update(extra)
    return env


def _run(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    try:
        return subprocess.run([sys.executable, "-m", "cudnn_magic", *argv], capture_output=True, text=True, env=env,
                              stdin=subprocess.DEVNULL, timeout=CHECK_TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"cudnn-magic {' '.join(argv)} hung (killed after {CHECK_TIMEOUT_S} s): {exc.stderr!r}")


@pytest.mark.parametrize("place", list(PLACES))
def test_a_fifo_never_hangs_the_check_and_is_named_as_skipped(tmp_path, place):
    (tmp_path / "site").mkdir()
    fifo, extra = PLACES[place](tmp_path)
    r = _run(["check", "--json"], _env(tmp_path, extra))
    assert r.returncode in (0, 1), r.stderr
    data = json.loads(r.stdout)
    named = [n for n in data["notes"] if n.startswith(f"skipped {fifo}:")]
    assert named, data["notes"]
    assert "not a regular file (a FIFO)" in named[0], named


def test_a_fifo_metadata_never_hangs_the_manifest(tmp_path):
    """``cudnn-magic manifest`` lists the distributions (``importlib.metadata`` opened a FIFO
    ``METADATA`` and blocked) and hashes each cuDNN file."""
    (tmp_path / "site").mkdir()
    _fifo(tmp_path / "site/nvidia_fifo_cu12-1.0.dist-info/METADATA")
    dist_info(tmp_path / "site", "nvidia-plain-cu12", "2.0")
    r = _run(["manifest"], _env(tmp_path, {}))
    assert r.returncode == 0, r.stderr
    dists = json.loads(r.stdout)["distributions"]
    assert dists.get("nvidia-plain-cu12") == "2.0" and "nvidia-fifo-cu12" not in dists, dists


def test_a_fifo_kernel_json_is_refused_not_waited_on(tmp_path):
    """The fixes read a kernelspec's ``kernel.json`` (:mod:`cudnn_magic.fixes.environment`); a
    FIFO there is an error string, not a hang."""
    spec = tmp_path / "kernels/k1"
    _fifo(spec / "kernel.json")
    code = ("import sys; from cudnn_magic.fixes.environment import _load_spec; "
            "print(_load_spec('k1', sys.argv[1]))")
    env = _env(tmp_path, {})
    try:
        r = subprocess.run([sys.executable, "-c", code, str(spec)], capture_output=True, text=True, env=env,
                           timeout=CHECK_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        pytest.fail("reading a FIFO kernel.json hung")
    assert r.returncode == 0, r.stderr
    assert "not a regular file (a FIFO)" in r.stdout, r.stdout


@pytest.mark.kernel
def test_cudnn_check_in_a_kernel_completes_with_fifos_on_ld_library_path(tmp_path):
    """``%load_ext cudnn_magic`` then ``%cudnn_check`` in a real kernel whose ``LD_LIBRARY_PATH``
    folder holds a FIFO ``libcudnn.so.9`` and a FIFO ``libnvidia-ml.so.1``: before the fix the
    cell waited in NVML's ``dlopen`` until interrupted; now it completes within the cell timeout
    (a hang is a ``CellTimeoutError`` here) and names both files."""
    ldp = tmp_path / "ldp"
    lib = _fifo(ldp / "libcudnn.so.9")
    nvml = _fifo(ldp / "libnvidia-ml.so.1")
    nb = run_notebook(["%load_ext cudnn_magic", "%cudnn_check", "print('alive')"], tmp_path,
                      env={"LD_LIBRARY_PATH": str(ldp)}, timeout=CHECK_TIMEOUT_S, allow_errors=False)
    text = outputs_text(nb.cells[1]).replace("<wbr>", "")
    assert f"skipped {lib}" in text and f"skipped {nvml}" in text, text[-3000:]
    assert "alive" in outputs_text(nb.cells[2])
