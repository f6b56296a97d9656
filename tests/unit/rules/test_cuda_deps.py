"""Advice for a library cuDNN cannot open is judged by whether it would make that very name resolve,
from the real cuDNN wheels' RUNPATHs (``tests/helpers/real_wheels.py``): nvidia-cudnn-cu12 8.9.7's
sub-libraries search ``$ORIGIN/../../nvrtc/lib`` (a folder no NVRTC wheel installs), cuDNN 9's
cu12 wheels ``$ORIGIN/../../cuda_nvrtc/lib`` (nvidia-cuda-nvrtc-cu12's), the cu13 jit wheel also
``$ORIGIN/../../cu13/lib`` (the CUDA 13 wheels'). No wheel ships the unversioned ``libnvrtc.so``
nor ``libz.so.1``."""

from __future__ import annotations

import os
import shutil

from cudnn_magic.engines.deps import _runpath_dirs, deep_error_findings
from cudnn_magic.rules.cuda_deps import dep_advice
from helpers.real_wheels import install_wheel


def _site(tmp_path, dist, version, sub):
    site = tmp_path / "site-packages"
    shutil.copytree(install_wheel(dist, version) / "nvidia", site / "nvidia")
    return str(site), str(site / "nvidia" / sub / "lib")


def test_cudnn_9_cu12_finds_the_nvrtc_wheel_by_its_runpath(tmp_path):
    site, lib = _site(tmp_path, "nvidia-cudnn-jit-cu12", "9.12.0.46", "cudnn_jit")
    dirs = _runpath_dirs(os.path.join(lib, "libcudnn.so.9"))
    assert os.path.join(site, "nvidia", "cuda_nvrtc", "lib") in dirs
    adv = dep_advice("libnvrtc.so.12", 12, dirs, [site])
    assert adv.pip_resolves and adv.action == "python -m pip install nvidia-cuda-nvrtc-cu12"
    assert dep_advice("libcublasLt.so.12", 12, dirs, [site]).pip_resolves
    unversioned = dep_advice("libnvrtc.so", 12, dirs, [site])
    assert not unversioned.pip_resolves and "ln -s libnvrtc.so.12 libnvrtc.so" in unversioned.action
    assert not dep_advice("libz.so.1", 12, dirs, [site]).pip_resolves


def test_cudnn_8_wheel_does_not_search_the_nvrtc_wheels_folder(tmp_path):
    site, lib = _site(tmp_path, "nvidia-cudnn-cu12", "8.9.7.29", "cudnn")
    dirs = _runpath_dirs(os.path.join(lib, "libcudnn.so.8"))
    assert os.path.join(site, "nvidia", "nvrtc", "lib") in dirs  # the folder it names: no wheel's
    adv = dep_advice("libnvrtc.so.12", 12, dirs, [site])
    assert not adv.pip_resolves and "LD_LIBRARY_PATH=" + os.path.join(site, "nvidia", "cuda_nvrtc", "lib") in adv.action
    assert dep_advice("libcublasLt.so.12", 12, dirs, [site]).pip_resolves  # cublas/lib is searched
    # with the wheel's folder on LD_LIBRARY_PATH (as the process started), the install does it
    assert dep_advice("libnvrtc.so.12", 12, [*dirs, os.path.join(site, "nvidia", "cuda_nvrtc", "lib")], [site]).pip_resolves
    fnd = deep_error_findings({os.path.join(lib, "libcudnn.so.8"): "libnvrtc.so.12: cannot open shared object file"},
                              {}, {}, [site])
    fix = fnd[0].fixes[0]
    assert fix.id == "install-cudnn-deps" and fix.applicable is False and "LD_LIBRARY_PATH" in fix.action


def test_cudnn_9_cu13_finds_the_cuda_13_wheels(tmp_path):
    site, lib = _site(tmp_path, "nvidia-cudnn-jit-cu13", "9.24.0.43", "cudnn_jit")
    dirs = _runpath_dirs(os.path.join(lib, "libcudnn.so.9"))
    adv = dep_advice("libnvrtc.so.13", 13, dirs, [site])
    assert adv.pip_resolves and adv.action == "python -m pip install nvidia-cuda-nvrtc==13.*"
    fnd = deep_error_findings({os.path.join(lib, "libcudnn.so.9"): "libcublasLt.so.13: cannot open shared object file"},
                              {}, {}, [site])
    assert fnd[0].fixes[0].applicable is True and "nvidia-cublas==13.*" in fnd[0].fixes[0].action
