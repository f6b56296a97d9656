"""Helpers for tests that use the C stand-in for ``libnvidia-ml.so.1`` (tests/native/fake_nvml.c).

The stand-in is built with gcc into a temp directory. pynvml loads ``libnvidia-ml.so.1`` by
name and the loader reads ``LD_LIBRARY_PATH`` only at process start (docs/facts.md), so code under
test runs in a child Python process whose environment points at that directory. The pytest
process itself never loads the stand-in: other tests expect this machine's real (absent) NVML.
"""

from __future__ import annotations

import ctypes.util
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from helpers.support import NATIVE_SRC, REPO, have_gcc

STANDIN_SRC = NATIVE_SRC / "fake_nvml.c"


def build_nvml_standin(directory: Path, old_driver: bool = False, without_uuid: bool = False) -> Path:
    """Build the stand-in ``libnvidia-ml.so.1`` into ``directory``; return the directory.

    ``old_driver`` leaves out the v2/v3 entry points (``-DSTANDIN_OLD_DRIVER``);
    ``without_uuid`` leaves out ``nvmlDeviceGetUUID`` (``-DSTANDIN_WITHOUT_UUID``), so pynvml
    answers Function Not Found for it as it does for a driver that lacks it.
    """
    if not have_gcc():
        pytest.skip("gcc is needed to build the NVML stand-in")
    directory.mkdir(parents=True, exist_ok=True)
    out = directory / "libnvidia-ml.so.1"
    cmd = ["gcc", "-shared", "-fPIC", "-O2", "-Wall", "-Wl,-soname,libnvidia-ml.so.1", "-o", str(out), str(STANDIN_SRC)]
    if old_driver:
        cmd.insert(1, "-DSTANDIN_OLD_DRIVER")
    if without_uuid:
        cmd.insert(1, "-DSTANDIN_WITHOUT_UUID")
    subprocess.run(cmd, check=True, capture_output=True)
    return directory


def spec_string(spec: Mapping[str, Any] | None) -> str:
    return ";".join(f"{k}={v}" for k, v in (spec or {}).items())


def standin_env(libdir: Path | None, spec: Mapping[str, Any] | None = None, config: Path | None = None,
                extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Child environment: the stand-in first on LD_LIBRARY_PATH (None = no stand-in), its
    configuration, the repo on PYTHONPATH, CUDA_VISIBLE_DEVICES removed unless given."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("CUDA_VISIBLE_DEVICES", "FAKE_NVML_SPEC", "FAKE_NVML_CONFIG", "PYTEST_CURRENT_TEST")}
    if libdir is not None:
        env["LD_LIBRARY_PATH"] = os.pathsep.join([str(libdir)] + [p for p in env.get("LD_LIBRARY_PATH", "").split(os.pathsep) if p])
    env["FAKE_NVML_SPEC"] = spec_string(spec)
    if config is not None:
        env["FAKE_NVML_CONFIG"] = str(config)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    if extra:
        env.update(extra)
    return env


def run_py(code: str, env: Mapping[str, str], timeout: float = 120, args: list[str] | None = None) -> subprocess.CompletedProcess:
    """Run ``code`` in a child ``python`` (this interpreter) with ``env``."""
    cmd = [sys.executable, "-c", textwrap.dedent(code)] if args is None else [sys.executable, *args]
    return subprocess.run(cmd, env=dict(env), cwd=str(REPO), capture_output=True, text=True, timeout=timeout)


def run_json(code: str, env: Mapping[str, str], timeout: float = 120) -> Any:
    """Run ``code``, which prints one JSON document as its last stdout line; return it parsed."""
    p = run_py(code, env, timeout=timeout)
    assert p.returncode == 0, f"child failed ({p.returncode}):\n{p.stdout}\n{p.stderr}"
    return json.loads(p.stdout.strip().splitlines()[-1])


def real_nvml_present() -> bool:
    """True when this machine has a real ``libnvidia-ml`` (then "no driver" tests are skipped)."""
    return ctypes.util.find_library("nvidia-ml") is not None


@pytest.fixture(scope="session")
def nvml_standin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Directory holding the stand-in ``libnvidia-ml.so.1`` (built once per session)."""
    return build_nvml_standin(tmp_path_factory.mktemp("nvml-standin"))


@pytest.fixture(scope="session")
def nvml_standin_old(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The stand-in without the v2/v3 entry points, like an old driver."""
    return build_nvml_standin(tmp_path_factory.mktemp("nvml-standin-old"), old_driver=True)
