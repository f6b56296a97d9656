"""PyTorch's own preload of cuDNN, modelled from each release's ``torch/__init__.py``
(:mod:`cudnn_magic.probes.frameworks.torch_preload`), against torch's own code.

The files are the real ``torch/__init__.py`` of 12 CUDA wheels, 2.1.2 to 2.14.1
(``tests/fixtures/torch_init/``, wheel names and hashes in its ``SOURCES.md``). The ground truth is
torch's own ``_load_global_deps`` and the preload functions it calls, taken out of each file with
:mod:`ast` and run against folder trees made here: ``ctypes`` is replaced by a recorder at that one
boundary (nothing can be loaded on a machine with no CUDA libraries; the files in the trees are
copies of a small real shared library, ``libdl.so.2``, and the recorder refuses what ``dlopen``
would refuse: a missing file, a broken link, a file that is not ELF), ``/proc/self/maps`` answers as
a CUDA build's would, and ``sys.path`` is the tree's. So what
torch would ``ctypes.CDLL`` first for cuDNN, or that ``import torch`` would fail, comes from torch's
code, never from ours. The real-wheel lane (``tests/realwheels/test_real_loaders.py``) checks the same with the
real torch 2.14.1 and real cuDNN wheels.
"""

from __future__ import annotations

import ast
import builtins
import glob
import importlib
import io
import os
import platform
import sys
import types
import typing
from pathlib import Path

import pytest

from cudnn_magic.probes.frameworks.common import module_constants
from cudnn_magic.probes.frameworks.torch_preload import (
    KNOWN_RULES,
    TorchPreloadRule,
    read_preload_rule,
    rule_for_version,
    torch_preload,
)

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "torch_init"
RELEASES = sorted((p.name for p in FIXTURES.iterdir() if (p / "__init__.py").is_file()),
                  key=lambda v: (*tuple(int(x) for x in v.split("-")[0].split(".")), v.count("-")))
_FUNCS = ("_get_cuda_dep_paths", "_preload_cuda_deps", "_preload_cuda_lib", "_load_global_deps")


def _cuda(release: str) -> str:
    consts, _ = module_constants(str(FIXTURES / release / "version.py"))
    return str(consts["cuda"])


def _shape(r: TorchPreloadRule) -> tuple:
    return r.when, r.patterns, r.before, r.success_stops, r.nvidia_gate


def test_there_are_twelve_releases_and_the_build_tag_variant():
    assert len(RELEASES) == 13 and RELEASES[0] == "2.1.2" and RELEASES[-1] == "2.14.1"


@pytest.mark.parametrize("release", RELEASES)
def test_the_known_behaviour_table_is_what_each_file_says(release):
    """KNOWN_RULES (used when torch is not installed yet, or its file cannot be read) holds each
    release's behaviour as read from that release's own file."""
    read = read_preload_rule(str(FIXTURES / release / "__init__.py"), release)
    assert isinstance(read, TorchPreloadRule), read
    known = rule_for_version(release.split("-")[0])
    assert known is not None
    if release == "2.10.0-nobuildtag":  # the original 2.10.0 wheel: cuBLASLt was not yet in its table
        assert _shape(read)[:2] == _shape(known)[:2] and read.before == (("cublas", "libcublas.so.*[0-9]"),)
    else:
        assert _shape(read) == _shape(known)
    assert f"installed torch {release}" in read.source


def test_the_table_is_newest_first_and_starts_at_2_1():
    firsts = [tuple(int(x) for x in v.split(".")) for v, _ in KNOWN_RULES]
    assert firsts == sorted(firsts, reverse=True) and KNOWN_RULES[-1][0] == "2.1.0"
    assert rule_for_version("2.0.1") is None and rule_for_version("not a version") is None
    assert rule_for_version("2.14.1+cu130").when == "always" and rule_for_version("2.9.1").when == "on-error"


def test_a_file_that_cannot_be_read_or_has_no_cudnn_entry(tmp_path):
    assert "could not read" in read_preload_rule(str(tmp_path / "missing.py"))
    (tmp_path / "bad.py").write_text("def (:\n")
    assert "SyntaxError" in read_preload_rule(str(tmp_path / "bad.py"))
    (tmp_path / "none.py").write_text("cuda_libs = [('cublas', 'libcublas.so.*[0-9]')]\n")
    assert read_preload_rule(str(tmp_path / "none.py")).when == "never"
    (tmp_path / "big.py").write_bytes(b"#" * ((2 << 20) + 1))
    assert "larger than" in read_preload_rule(str(tmp_path / "big.py"))


# ----------------------------------------------------------------------------- torch's own code


class _Recorder:
    """Stands in for ``ctypes`` inside torch's functions: records each ``CDLL``; loading
    ``libtorch_global_deps.so`` fails (its cudart not found) when asked to."""

    RTLD_GLOBAL = 256

    def __init__(self, global_deps_fails: bool):
        self.loaded: list[str] = []
        self.fails = global_deps_fails

    def CDLL(self, path, mode=0):  # ctypes' name
        if path.endswith("libtorch_global_deps.so"):
            if self.fails and not any("libcudart" in p for p in self.loaded):
                raise OSError("libcudart.so.12: cannot open shared object file: No such file or directory")
            return
        try:  # what dlopen refuses at once
            with open(path, "rb") as fh:
                if fh.read(4) != b"\x7fELF":
                    raise OSError(f"{path}: invalid ELF header")
        except FileNotFoundError as exc:
            raise OSError(f"{path}: cannot open shared object file: No such file or directory") from exc
        self.loaded.append(path)
        return


def run_torch(release: str, sys_path: list[str], global_deps_fails: bool, pkg: Path) -> tuple[str | None, str | None]:
    """(the first cuDNN file torch's own ``_load_global_deps`` of ``release`` loads, the exception
    ``import torch`` would raise from it)."""
    tree = ast.parse((FIXTURES / release / "__init__.py").read_text())
    body = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in _FUNCS]
    rec = _Recorder(global_deps_fails)
    maps = "" if global_deps_fails else "7f0000 r-xp 0 00:00 0 /x/nvidia/cuda_runtime/lib/libcudart.so.12\n"

    def fake_open(p, *a, **k):
        return io.StringIO(maps) if p == "/proc/self/maps" else builtins.open(p, *a, **k)

    tv = types.ModuleType("torch.version")
    tv.cuda = _cuda(release)
    tm = types.ModuleType("torch")
    tm.version = tv
    saved = {k: sys.modules.get(k) for k in ("torch", "torch.version")}
    sys.modules.update({"torch": tm, "torch.version": tv})
    ns = dict(os=os, sys=types.SimpleNamespace(path=sys_path), glob=glob, platform=platform, ctypes=rec,
              _running_with_deploy=lambda: False, importlib=importlib, Dict=typing.Dict, _Dict=typing.Dict, open=fake_open,  # noqa: UP006 - the names torch's __init__.py uses
              __file__=str(pkg / "__init__.py"), __builtins__=builtins)
    err = None
    try:
        exec(compile(ast.Module(body=body, type_ignores=[]), f"{release}/__init__.py", "exec"), ns)
        ns["_load_global_deps"]()
    except (ValueError, OSError) as exc:  # what import torch would raise (anything else is the harness's fault)
        err = f"{type(exc).__name__}: {exc}"
    finally:
        for k, m in saved.items():
            if m is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = m
    return next((p for p in rec.loaded if os.path.basename(p).startswith("libcudnn")), None), err


_ALL = ["cublas/lib/libcublas.so.12", "cublas/lib/libcublasLt.so.12", "cudnn/lib/libcudnn.so.9",
        "cuda_nvrtc/lib/libnvrtc.so.12", "cuda_nvrtc/lib/libnvrtc-builtins.so.12", "cuda_runtime/lib/libcudart.so.12",
        "cuda_cupti/lib/libcupti.so.12", "cufft/lib/libcufft.so.11", "curand/lib/libcurand.so.10",
        "nvjitlink/lib/libnvJitLink.so.12", "cusparse/lib/libcusparse.so.12", "cusparselt/lib/libcusparseLt.so.0",
        "cusolver/lib/libcusolver.so.11", "nccl/lib/libnccl.so.2", "nvshmem/lib/libnvshmem_host.so.3",
        "cufile/lib/libcufile.so.0", "nvtx/lib/libnvToolsExt.so.1"]
TREES = {
    "only_cudnn": ["nvidia/cudnn/lib/libcudnn.so.9"],                       # pip install --target DIR nvidia-cudnn-cu13
    "full": ["nvidia/" + p for p in _ALL],                                # a site-packages with every CUDA wheel
    "plain_cudnn_dir": ["cudnn/lib/libcudnn.so.9"],                         # DIR/cudnn/lib, no nvidia/
    "plain_with_nvidia": ["cudnn/lib/libcudnn.so.9", "nvidia/.keep"],
    "cu12": ["nvidia/cu12/lib/libcudnn.so.9"],
    "cu13": ["nvidia/cu13/lib/libcudnn.so.9"],
    "two_majors": ["nvidia/cudnn/lib/libcudnn.so.8", "nvidia/cudnn/lib/libcudnn.so.9"],
    "broken_cublas": ["nvidia/cublas/lib/libcublasLt.so.12@", "nvidia/cublas/lib/libcublas.so.12@"],  # broken links
    "lfs_cudnn": ["nvidia/cudnn/lib/libcudnn.so.9#"],  # a Git LFS pointer named like the library
}
SCENARIOS = [  # (sys.path as tree names, libtorch_global_deps.so fails to load)
    (["only_cudnn", "full"], False), (["only_cudnn", "full"], True), (["only_cudnn"], False), (["only_cudnn"], True),
    (["plain_cudnn_dir", "full"], False), (["plain_cudnn_dir", "full"], True), (["plain_with_nvidia", "full"], True),
    (["cu12", "cu13", "full"], False), (["cu12", "cu13", "full"], True), (["full"], False), (["two_majors", "full"], False),
    ([], False), (["broken_cublas", "only_cudnn", "full"], False), (["lfs_cudnn", "full"], False),
    (["lfs_cudnn", "full"], True),
]


def _elf_bytes() -> bytes:
    """A small real shared library's bytes (libdl.so.2), for files that must read as one."""
    return next(Path(d) / "libdl.so.2" for d in ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64",
                                                  "/usr/lib64", "/lib", "/usr/lib") if (Path(d) / "libdl.so.2").exists()
                ).read_bytes()


@pytest.fixture(scope="module")
def trees(tmp_path_factory):
    root = tmp_path_factory.mktemp("trees")
    elf = _elf_bytes()
    for name, files in TREES.items():
        for rel in files:
            p = root / name / rel.rstrip("@#")
            p.parent.mkdir(parents=True, exist_ok=True)
            if rel.endswith("@"):
                p.symlink_to(p.parent / "gone" / p.name)
            elif rel.endswith("#"):
                p.write_text("version https://git-lfs.github.com/spec/v1\noid sha256:0\nsize 129240\n")
            else:
                p.write_bytes(elf)
    pkg = root / "torchpkg"
    (pkg / "lib").mkdir(parents=True)
    (pkg / "lib" / "libtorch_global_deps.so").write_bytes(elf)
    return root, pkg


@pytest.mark.parametrize("release", RELEASES)
@pytest.mark.parametrize("names,fails", SCENARIOS, ids=lambda x: "+".join(x) if isinstance(x, list) else str(x))
def test_the_prediction_is_what_torch_own_code_does(release, names, fails, trees, tmp_path):
    root, pkg = trees
    sys_path = [str(root / n) for n in names]
    real, err = run_torch(release, sys_path, fails, pkg)
    # the release's own file, in a torch package folder of its own, as the probe reads it
    tpkg = tmp_path / "torch"
    tpkg.mkdir()
    (tpkg / "__init__.py").write_bytes((FIXTURES / release / "__init__.py").read_bytes())
    pre, rule, note = torch_preload(str(tpkg), release.split("-")[0], _cuda(release), sys_path,
                                    global_deps_loads=not fails)
    assert rule is not None and rule.source.startswith("torch/__init__.py of the installed torch")
    if err is not None:
        assert pre is None and "import torch fails" in note, (err, note)
        assert "not found in the system path" in err or "cannot open shared object" in err or "invalid ELF" in err
        return
    assert (pre.path if pre else None) == (os.path.abspath(real) if real else None), (real, pre, note)
    if pre is not None:
        assert pre.sys_path_entry in sys_path and pre.path.startswith(pre.sys_path_entry + os.sep)


@pytest.mark.parametrize("value,preloads", [("1", False), ("", True)])
def test_torch_use_rtld_global_means_no_preload(tmp_path, value, preloads):
    """``if (USE_RTLD_GLOBAL_WITH_LIBTORCH or os.getenv("TORCH_USE_RTLD_GLOBAL"))`` in every release:
    set, torch never calls _load_global_deps."""
    tpkg = tmp_path / "torch"
    tpkg.mkdir()
    (tpkg / "__init__.py").write_bytes((FIXTURES / "2.14.1" / "__init__.py").read_bytes())
    lib = tmp_path / "d" / "nvidia" / "cudnn" / "lib"
    lib.mkdir(parents=True)
    (lib / "libcudnn.so.9").write_bytes(_elf_bytes())
    pre, rule, note = torch_preload(str(tpkg), "2.14.1", "13.0", [str(tmp_path / "d")],
                                    environ={"TORCH_USE_RTLD_GLOBAL": value})
    assert rule.rtld_global_env == "TORCH_USE_RTLD_GLOBAL"
    assert (pre is not None) == preloads, note
    if not preloads:
        assert "TORCH_USE_RTLD_GLOBAL is set" in note


def test_a_cpu_build_preloads_nothing(tmp_path):
    tpkg = tmp_path / "torch"
    tpkg.mkdir()
    (tpkg / "__init__.py").write_bytes((FIXTURES / "2.14.1" / "__init__.py").read_bytes())
    (tmp_path / "d" / "nvidia" / "cudnn" / "lib").mkdir(parents=True)
    (tmp_path / "d" / "nvidia" / "cudnn" / "lib" / "libcudnn.so.9").write_bytes(_elf_bytes())
    pre, rule, note = torch_preload(str(tpkg), "2.14.1+cpu", None, [str(tmp_path / "d")])
    assert pre is None and rule is not None and "CPU build" in note


def test_an_unreadable_file_falls_back_to_the_known_behaviour(tmp_path):
    (tmp_path / "d" / "nvidia" / "cudnn" / "lib").mkdir(parents=True)
    (tmp_path / "d" / "nvidia" / "cudnn" / "lib" / "libcudnn.so.9").write_bytes(_elf_bytes())
    pre, rule, note = torch_preload(str(tmp_path / "no-torch-here"), "2.14.1", "13.0", [str(tmp_path / "d")])
    assert rule is rule_for_version("2.14.1") and "using the known behaviour of torch 2.14.1" in note
    assert pre is not None and pre.path.endswith("d/nvidia/cudnn/lib/libcudnn.so.9")
    pre, rule, note = torch_preload(str(tmp_path / "no-torch-here"), "1.13.1", "11.7", [str(tmp_path / "d")])
    assert pre is None and rule is None and "could not read" in note
