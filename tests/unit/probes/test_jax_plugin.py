"""JAX's CUDA plugin as its installed files state it (:mod:`cudnn_magic.probes.frameworks.jax_plugin`),
against the plugin's own code.

The files are the real ``jax_plugins/xla_cuda12/__init__.py`` of jax-cuda12-pjrt 0.10.2 and
0.12.0.1 and ``xla_cuda13/__init__.py`` of jax-cuda13-pjrt 0.12.0.1 (``tests/fixtures/jax_plugins/``,
wheel hashes in its ``SOURCES.md``). The ground truth for the rule is the plugin's own
``_check_cuda_versions``, taken out of each file with :mod:`ast` and run with the version numbers of a
scenario (its ``cuda_versions`` extension and JAX's ``xla_bridge`` flag stand in at that boundary:
there is no GPU here); for the preload, Python's own import system resolving ``nvidia.cudnn`` in a
child process, as the plugin's ``_load`` does.
"""

from __future__ import annotations

import ast
import json
import logging
import subprocess
import sys
import traceback
import types
from pathlib import Path
from typing import Any

import pytest

from cudnn_magic.engines.check import judge_report
from cudnn_magic.model import FrameworkBuild, Gpu
from cudnn_magic.probes.frameworks.jax_plugin import jax_preload, read_plugin

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "jax_plugins"
FILES = sorted(FIXTURES.glob("*/*__init__.py"))


def test_three_plugin_files():
    assert [f"{p.parent.name}/{p.name}" for p in FILES] == [
        "0.10.2/xla_cuda12__init__.py", "0.12.0.1/xla_cuda12__init__.py", "0.12.0.1/xla_cuda13__init__.py"]


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}-{p.name}")
def test_each_file_says_the_whole_rule(path):
    facts = read_plugin(str(path))
    assert not isinstance(facts, str), facts
    assert facts.preload == "libcudnn.so.9" and facts.refuses == (91000,) and facts.multi_gpu == (91001, 120900, 1)
    assert "refuses 9.10.0 unless built with it" in facts.rule
    assert "refuses cuDNN below 9.10.1 when cuBLAS is 12.9 or newer and more than 1 local device is visible" in facts.rule
    assert "any cuDNN 9 passes" in facts.rule and "_check_cuda_versions" in facts.rule


def test_a_file_without_the_checks_says_so(tmp_path):
    p = tmp_path / "__init__.py"
    p.write_text("def initialize():\n    pass\n")
    facts = read_plugin(str(p))
    assert facts.preload == "" and facts.multi_gpu is None and "no cuDNN check found" in facts.rule
    assert "could not read" in read_plugin(str(tmp_path / "none.py"))


def plugin_refuses(path: Path, cudnn: int, build: int, cublas: int, devices: int, flag: str) -> str | None:
    """The message the plugin's own ``_check_cuda_versions(raise_on_first_error=True)`` raises,
    or None when it passes."""
    tree = ast.parse(path.read_text())
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "_check_cuda_versions")
    cv = types.SimpleNamespace(
        cuda_runtime_get_version=lambda: 12090, cuda_runtime_build_version=lambda: 12090,
        cudnn_get_version=lambda: cudnn, cudnn_build_version=lambda: build,
        cufft_get_version=lambda: 11401, cufft_build_version=lambda: 11401,
        cupti_get_version=lambda: 28, cupti_build_version=lambda: 28,
        cublas_get_version=lambda: cublas, cublas_build_version=lambda: 120901,
        cusparse_get_version=lambda: 12510, cusparse_build_version=lambda: 12510,
        cuda_device_count=lambda: devices, cuda_compute_capability=lambda d: 90)
    xb = types.SimpleNamespace(CUDA_VISIBLE_DEVICES=types.SimpleNamespace(value=flag))
    ns: dict[str, Any] = dict(cuda_versions=cv, xb=xb, logger=logging.getLogger("jaxplugin"), traceback=traceback, Any=Any)
    exec(compile(ast.Module(body=[fn], type_ignores=[]), str(path), "exec"), ns)
    try:
        ns["_check_cuda_versions"](raise_on_first_error=True)
    except RuntimeError as exc:
        return str(exc)
    return None


def ours(path: Path, cudnn: int, build: int, cublas: int, devices: int, flag: str):  # type: ignore[no-untyped-def]
    """cudnn-magic's verdict for the same facts: a JAX row whose runtime cuDNN is known, the
    plugin's rule as read from ``path``, ``devices`` GPUs, JAX's flag in the environment."""
    facts = read_plugin(str(path))
    v = f"{cudnn // 10000}.{cudnn // 100 % 100}.{cudnn % 100}"
    b = f"{build // 10000}.{build // 100 % 100}.{build % 100}"
    fw = FrameworkBuild("JAX", "jax-cuda12-plugin", "0.10.2", imported=True, cudnn_compiled=b, cudnn_runtime=v,
                        cudnn_soname="libcudnn.so.9", checker="jax", own_rule=facts.rule,
                        facts=(("multi_gpu_rule", " ".join(map(str, facts.multi_gpu))),
                               ("cublas", f"{cublas // 10000}.{cublas // 100 % 100}.{cublas % 100}")))
    env = {} if flag == "all" else {"JAX_CUDA_VISIBLE_DEVICES": flag}
    rep = judge_report(loaded=(), installed=(), frameworks=(fw,), driver=None,
                       gpus=tuple(Gpu(i, "GPU") for i in range(devices)), environ=env)
    return rep.frameworks[0]


SCENARIOS = [  # (runtime, build, cublas, devices, jax_cuda_visible_devices): XLA's C++ rule passes in each
    (90800, 90800, 120901, 1, "all"), (90800, 90800, 120901, 2, "all"), (90800, 90800, 120901, 2, "0"),
    (90800, 90800, 120800, 2, "all"), (91000, 90800, 120901, 1, "all"), (91000, 91000, 120800, 1, "all"),
    (91001, 90800, 120901, 2, "all"), (91200, 90800, 120901, 4, "0,1"), (90900, 90800, 120901, 2, "0,1"),
    (90900, 90800, 120901, 8, "3"),
]


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}-{p.name}")
@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: "-".join(map(str, s)))
def test_the_verdict_is_what_the_plugins_own_check_does(path, scenario):
    refused = plugin_refuses(path, *scenario)
    row = ours(path, *scenario)
    assert (row.verdict == "mismatch") == (refused is not None), (refused, row.detail)
    assert row.rule.startswith("JAX's Python side (") and "_check_cuda_versions" in row.rule
    if refused and "multi-GPU" in refused:
        assert "multi-GPU" in row.detail


def test_the_preload_is_the_folder_pythons_import_system_gives(tmp_path):
    """``nvidia.cudnn.__path__[0]`` as the real import system resolves it (a namespace package over
    several ``sys.path`` entries), against :func:`jax_preload`."""
    trees = {"none": [], "other_nvidia": ["nvidia/cublas/lib/libcublas.so.12"], "empty_cudnn": ["nvidia/cudnn/include/x.h"],
             "cudnn": ["nvidia/cudnn/lib/libcudnn.so.9"], "cudnn2": ["nvidia/cudnn/lib/libcudnn.so.9"],
             # nvidia-cudnn-cu12 8.9.7 ships nvidia/__init__.py: a regular package that takes nvidia.cudnn over
             "regular8": ["nvidia/__init__.py", "nvidia/cudnn/__init__.py", "nvidia/cudnn/lib/libcudnn.so.8"]}
    for name, files in trees.items():
        (tmp_path / name).mkdir()
        for rel in files:
            (tmp_path / name / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / name / rel).write_bytes(b"")
    for order in (["none", "cudnn", "cudnn2"], ["other_nvidia", "cudnn2", "cudnn"], ["empty_cudnn", "cudnn"], ["none"],
                  ["cudnn", "regular8"], ["regular8", "cudnn"]):
        entries = [str(tmp_path / n) for n in order]
        code = ("import importlib, json\ntry:\n    m = importlib.import_module('nvidia.cudnn'); print(json.dumps(list(m.__path__)[0]))\n"
                "except ImportError:\n    print(json.dumps(None))")
        p = subprocess.run([sys.executable, "-S", "-c", f"import sys; sys.path[:0] = {entries!r}\n" + code],
                           capture_output=True, text=True, timeout=60)
        first = json.loads(p.stdout)
        pre = jax_preload("libcudnn.so.9", entries)
        want = str(Path(first) / "lib" / "libcudnn.so.9") if first else None
        assert (pre.path if pre else None) == (want if want and Path(want).exists() else None), (order, first, pre)
