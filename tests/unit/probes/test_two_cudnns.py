"""Two cuDNNs in one process, one folder, one fix: every claim checked against the real thing.

Real wheels (``tests/helpers/real_wheels.py``): ``nvidia-cudnn-jit-cu12`` 9.12.0.46 ("old") and
9.27.0.42 ("new"), ``nvidia-cudnn-jit-cu13`` 9.24.0.43. Each scenario runs in a child process
(the loader reads ``LD_LIBRARY_PATH`` once, at start) or in a real kernel, and what the report
says is compared with what glibc did: ``LD_DEBUG=bindings`` in the same process, and the
version the calls really returned. The only stand-in is a framework's native library: a tiny C
library built here that links ``libcudnn.so.9`` by soname with an RPATH (like PyTorch's and
JAX's) or RUNPATH (like TensorFlow's) to the new wheel.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from helpers.builders import metadata_wheel
from helpers.real_wheels import install_wheel, installed_dist_info
from helpers.support import REPO, build_c_library, outputs_text, paragraph, run_notebook

pytestmark = pytest.mark.native

OLD = ("nvidia-cudnn-jit-cu12", "9.12.0.46")
NEW = ("nvidia-cudnn-jit-cu12", "9.27.0.42")
CU13 = ("nvidia-cudnn-jit-cu13", "9.24.0.43")

FRAMEWORK_LIKE_C = r"""
/* Stand-in for a framework's native library (libtorch_cuda.so, libtensorflow_framework.so.2):
   it NEEDs libcudnn.so.9 by soname and carries an RPATH or RUNPATH to the cuDNN it ships with. */
#include <stddef.h>
size_t cudnnGetVersion(void);
size_t framework_cudnn_version(void) { return cudnnGetVersion(); }
"""


def lib_dir(wheel: tuple[str, str]) -> Path:
    return install_wheel(*wheel) / "nvidia" / "cudnn_jit" / "lib"


def framework_standin(tmp: Path, runpath: bool) -> Path:
    """``libframework_standin.so`` linking the new wheel's libcudnn.so.9, RUNPATH or RPATH to it."""
    new = lib_dir(NEW)
    tag = "runpath" if runpath else "rpath"
    return build_c_library(FRAMEWORK_LIKE_C, tmp / f"fw-{tag}" / "libframework_standin.so", extra=[
        f"-L{new}", "-l:libcudnn.so.9", f"-Wl,-rpath,{new}",
        "-Wl,--enable-new-dtags" if runpath else "-Wl,--disable-new-dtags"])


# One scenario in a child process: load steps, then the report. The steps are this file's own.
SCENARIO = r"""
import ctypes, json, os, sys
steps, fws = json.loads(sys.argv[1]), json.loads(sys.argv[2])
really = []
for target, mode, call in steps:
    flags = (os.RTLD_GLOBAL if mode == "global" else os.RTLD_LOCAL) | os.RTLD_NOW
    lib = ctypes.CDLL(target, mode=flags)
    if call:
        fn = getattr(lib, "framework_cudnn_version", None) or lib.cudnnGetVersion
        fn.restype = ctypes.c_size_t
        really.append([target, int(fn())])
from cudnn_magic.engines.check import run_check
from cudnn_magic.model import FrameworkBuild
from cudnn_magic.render.report import report_json, report_text, report_html
r = run_check(frameworks=tuple(FrameworkBuild(**f) for f in fws) if fws is not None else None)
print(json.dumps({"json": report_json(r), "text": report_text(r), "html": report_html(r), "really": really}))
"""


def run_scenario(steps: list, env: dict[str, str] | None = None, frameworks: list | None = None,
                 ld_debug: Path | None = None, extra_path: list[str] | None = None) -> dict:
    e = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "LD_DEBUG", "LD_DEBUG_OUTPUT")}
    e["PYTHONPATH"] = os.pathsep.join([str(REPO)] + (extra_path or []))
    e.update(env or {})
    if ld_debug is not None:
        e.update(LD_DEBUG="bindings", LD_DEBUG_OUTPUT=str(ld_debug))
    proc = subprocess.run([sys.executable, "-c", SCENARIO, json.dumps(steps), json.dumps(frameworks)],
                          capture_output=True, text=True, env=e, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def glibc_binding(ld_debug: Path, library: str, symbol: str = "cudnnGetVersion") -> str:
    """The file glibc bound ``library``'s reference to ``symbol`` to (``LD_DEBUG=bindings``)."""
    found = []
    for f in glob.glob(f"{ld_debug}.*"):
        for line in Path(f).read_text(errors="replace").splitlines():
            if f"binding file {library} " in line and f"`{symbol}'" in line:
                found.append(line.split(" to ", 1)[1].split(" [", 1)[0])
    assert found, f"glibc never bound {symbol} of {library}"
    return os.path.realpath(found[-1])


def rows(report: dict, directory: Path) -> dict[str, dict]:
    return {c["name"]: c for c in report["cudnn_loaded"] if c["path"].startswith(str(directory) + os.sep)}


def ids(report: dict) -> list[str]:
    return [f["id"] for f in report["findings"]]


def alone_version(directory: Path) -> int:
    """What the copy in ``directory`` answers when it is the only cuDNN in a process."""
    code = ("import ctypes,sys; l=ctypes.CDLL(sys.argv[1]); l.cudnnGetVersion.restype=ctypes.c_size_t; "
            "print(l.cudnnGetVersion())")
    out = subprocess.run([sys.executable, "-I", "-c", code, str(directory / "libcudnn.so.9")], capture_output=True,
                         text=True, env={"PATH": os.environ.get("PATH", ""), "LD_LIBRARY_PATH": str(directory)},
                         check=True)
    return int(out.stdout.strip())


def decode(v: int) -> str:
    return f"{v // 10000}.{v // 100 % 100}.{v % 100}"


# --------------------------------------------------------------------------- points 1-3


def test_point1_each_mapped_copy_reports_its_own_files_version():
    old, new = lib_dir(OLD), lib_dir(NEW)
    data = run_scenario([["libcudnn.so.9", "global", True], [str(new / "libcudnn.so.9"), "local", True]],
                        env={"LD_LIBRARY_PATH": str(old)})
    # What really happens: both shims answer the old graph's number; the new one alone answers its own.
    assert [v for _, v in data["really"]] == [91200, 91200]
    assert alone_version(new) == 92700 and alone_version(old) == 91200
    rep = data["json"]
    n, o = rows(rep, new), rows(rep, old)
    assert n["libcudnn.so.9"]["version"] == decode(alone_version(new)) == "9.27.0"
    assert n["libcudnn.so.9"]["reached_version"] == "9.12.0"  # kept, as what calls through it reach
    # a pip --target folder outside any site-packages: its own RECORD, prefix "wheel:"
    assert n["libcudnn.so.9"]["owner"] == "wheel: nvidia-cudnn-jit-cu12 9.27.0.42"
    assert o["libcudnn.so.9"]["version"] == o["libcudnn_graph.so.9"]["version"] == "9.12.0"
    assert n["libcudnn.so.9"]["bound_to"] == [str(old / "libcudnn_graph.so.9")]
    assert "cudnn-multiple-copies-loaded" in ids(rep)
    assert "calls reach 9.12.0" in data["text"]


@pytest.mark.parametrize("new_on_search_path", [False, True], ids=["new-off-path", "new-on-LD_LIBRARY_PATH"])
def test_point2_and_3_intact_wheel_folder_is_neither_mixed_nor_missing_its_graph(new_on_search_path):
    old, new = lib_dir(OLD), lib_dir(NEW)
    ldp = f"{old}:{new}" if new_on_search_path else str(old)
    data = run_scenario([["libcudnn.so.9", "global", True], [str(new / "libcudnn.so.9"), "local", True]],
                        env={"LD_LIBRARY_PATH": ldp})
    rep = data["json"]
    bad = [f for f in rep["findings"] if f["id"] == "cudnn-sublibrary-load-failed"]
    assert bad == [], bad  # both folders are intact on disk
    assert "cudnn-multiple-copies-loaded" in ids(rep)
    # The mapped copy's folder was listed even when no search path leads there.
    listed = {c["path"] for c in rep["cudnn_installed"]}
    assert str(new / "libcudnn_graph.so.9") in listed


def test_point3_control_a_lone_shim_is_still_called_broken(tmp_path):
    """The finding still fires where it is true: a shim with no libcudnn_graph beside it."""
    lone = tmp_path / "lone"
    lone.mkdir()
    shutil.copy(lib_dir(NEW) / "libcudnn.so.9", lone / "libcudnn.so.9")
    data = run_scenario([[str(lone / "libcudnn.so.9"), "local", False]])
    titles = [f["title"] for f in data["json"]["findings"] if f["id"] == "cudnn-sublibrary-load-failed"]
    assert any("has no libcudnn_graph.so.9 beside it" in t for t in titles), titles


def test_mixed_folder_on_disk_is_still_found(tmp_path):
    """A folder that really mixes releases (the 9.27 shim beside the 9.12 graph) is mixed."""
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    shutil.copy(lib_dir(NEW) / "libcudnn.so.9", mixed / "libcudnn.so.9")
    os.link(lib_dir(OLD) / "libcudnn_graph.so.9", mixed / "libcudnn_graph.so.9")
    site = tmp_path / "new" / "site-packages"
    site.parent.mkdir()
    site.symlink_to(install_wheel(*NEW))  # the 9.27 wheel installed where Python looks
    data = run_scenario([], env={"LD_LIBRARY_PATH": str(mixed)}, extra_path=[str(site)])
    rep = data["json"]
    shim = next(c for c in rep["cudnn_installed"] if c["path"] == str(mixed / "libcudnn.so.9"))
    assert shim["version"] == "9.27.0" and "sha256" in shim["owner_evidence"]  # a copy of the 9.27 wheel's shim
    titles = [f["title"] for f in rep["findings"] if f["id"] == "cudnn-sublibrary-load-failed"]
    assert any(t == f"Mixed cuDNN versions in {mixed}" for t in titles), titles


def _system_layout(tmp: Path) -> Path:
    """The 9.27 files laid out as NVIDIA's tarballs and Debian packages do: real files with the
    full version in their names, soname symlinks beside them."""
    d = tmp / "cudnn-9.27-system" / "lib"
    d.mkdir(parents=True)
    shutil.copy(lib_dir(NEW) / "libcudnn.so.9", d / "libcudnn.so.9.27.0")
    os.link(lib_dir(NEW) / "libcudnn_graph.so.9", d / "libcudnn_graph.so.9.27.0")
    (d / "libcudnn.so.9").symlink_to("libcudnn.so.9.27.0")
    (d / "libcudnn_graph.so.9").symlink_to("libcudnn_graph.so.9.27.0")
    return d


@pytest.mark.parametrize("called", [False, True])
def test_system_layout_shim_opens_its_own_graph_by_its_longer_name(tmp_path, called):
    """A shim opens libcudnn_graph.so.<its full version> before the soname, so a system-layout copy
    keeps its own graph next to an older wheel copy (measured: 92700). Uncalled, asking it here
    would load that graph: the check does not, and predicts no binding to a mapped copy."""
    old, sysdir = lib_dir(OLD), _system_layout(tmp_path)
    data = run_scenario([["libcudnn.so.9", "global", True], [str(sysdir / "libcudnn.so.9"), "local", called]],
                        env={"LD_LIBRARY_PATH": str(old)})
    rep = data["json"]
    shim = next(c for c in rep["cudnn_loaded"] if c["path"] == str(sysdir / "libcudnn.so.9.27.0"))
    assert shim["version"] == "9.27.0"
    mapped_graphs = [c["path"] for c in rep["cudnn_loaded"] if c["name"].startswith("libcudnn_graph")]
    if called:
        assert data["really"][-1][1] == 92700
        assert shim["reached_version"] == "9.27.0" and shim["bound_to"] == [str(sysdir / "libcudnn_graph.so.9.27.0")]
    else:
        assert mapped_graphs == [str(old / "libcudnn_graph.so.9")]  # the check loaded nothing
        assert shim["reached_version"] is None and shim["bound_to"] == []
    assert "cudnn-sublibrary-load-failed" not in ids(rep)


# --------------------------------------------------------------------------- point 4: the copy in use, vs glibc


ORDERS = {
    # old by soname from LD_LIBRARY_PATH into the global scope, then the framework preloads its wheel copy
    "old-global-first": lambda old, new: [["libcudnn.so.9", "global", True], [str(new / "libcudnn.so.9"), "local", True]],
    # the framework's copy first (RTLD_LOCAL, as ctypes.CDLL does), then the old one by path, global
    "new-first-old-global": lambda old, new: [[str(new / "libcudnn.so.9"), "local", True],
                                              [str(old / "libcudnn.so.9"), "global", True]],
    # nothing global: the first one loaded wins the soname
    "old-local-first": lambda old, new: [["libcudnn.so.9", "local", True], [str(new / "libcudnn.so.9"), "local", True]],
    "new-local-first": lambda old, new: [[str(new / "libcudnn.so.9"), "local", True],
                                         [str(old / "libcudnn.so.9"), "local", True]],
    # by soname after the new copy is loaded: glibc hands back the new one; only it is mapped
    "new-then-soname": lambda old, new: [[str(new / "libcudnn.so.9"), "local", True], ["libcudnn.so.9", "global", True]],
}


@pytest.mark.parametrize("order", list(ORDERS))
def test_point4_the_copy_in_use_is_the_one_glibc_binds(tmp_path, order):
    old, new = lib_dir(OLD), lib_dir(NEW)
    fw = framework_standin(tmp_path, runpath=False)  # RPATH, like libtorch_cuda.so
    torch_like = dict(name="PyTorch", distribution="torch", version="2.99.0+standin", cudnn_compiled="9.20.0",
                      cuda_compiled="12.9", cudnn_soname="libcudnn.so.9", consumer_library=str(fw), checker="pytorch")
    steps = [*ORDERS[order](old, new), [str(fw), "local", True]]
    ld = tmp_path / "ld"
    data = run_scenario(steps, env={"LD_LIBRARY_PATH": str(old)}, frameworks=[torch_like], ld_debug=ld)
    rep = data["json"]
    bound = glibc_binding(ld, str(fw))
    seen = dict(data["really"])[str(fw)]  # what the framework's own cudnnGetVersion call returned
    assert rep["cudnn_in_use"]["path"] == bound, (rep["cudnn_in_use"], bound)
    (res,) = rep["resolutions"]
    assert res["picked"] == bound
    (fwj,) = rep["frameworks"]
    assert fwj["cudnn_used"] == decode(seen)  # the version the framework really gets
    assert fwj["cudnn_used_path"] == bound
    assert fwj["verdict"] == ("ok" if seen >= 92000 else "mismatch")
    u = rep["cudnn_in_use"]
    assert (u["reached_version"] or u["version"]) == decode(seen)
    if fwj["verdict"] == "mismatch":  # another copy was loaded first; the framework's own would do
        (mism,) = [f for f in rep["findings"] if f["id"] == "cudnn-version-mismatch"]
        assert [x["id"] for x in mism["fixes"]] == ["remove-shadowing-dir", "restart-kernel", "import-order"]
        assert [x["applicable"] for x in mism["fixes"]] == [True, True, False]
        assert f"LD_LIBRARY_PATH entry {old} was loaded into this process first" in mism["detail"]
        assert "PyTorch's own 9.27.0" in mism["detail"] and "would satisfy it" in mism["detail"]
    in_use_line = paragraph(data["text"], "cuDNN in use:")
    assert bound in in_use_line
    assert "cuDNN in use:" in data["html"] and bound in data["html"]


def test_point4_a_framework_bound_before_another_copy_arrived_keeps_its_copy(tmp_path):
    """The framework's calls were bound (to its own copy) before the old copy entered the global
    scope: glibc keeps that binding. The report reads it from the library's GOT, and still says
    that a library loaded from now on would bind to the old, global copy."""
    old, new = lib_dir(OLD), lib_dir(NEW)
    fw = framework_standin(tmp_path, runpath=False)
    torch_like = dict(name="PyTorch", distribution="torch", version="2.99.0+standin", cudnn_compiled="9.20.0",
                      cuda_compiled="12.9", cudnn_soname="libcudnn.so.9", consumer_library=str(fw), checker="pytorch")
    steps = [[str(new / "libcudnn.so.9"), "local", True], [str(fw), "local", True],
             [str(old / "libcudnn.so.9"), "global", True], [str(fw), "local", True]]
    ld = tmp_path / "ld"
    data = run_scenario(steps, env={"LD_LIBRARY_PATH": str(old)}, frameworks=[torch_like], ld_debug=ld)
    rep = data["json"]
    bound = glibc_binding(ld, str(fw))
    assert bound == str(new / "libcudnn.so.9")
    assert [v for p, v in data["really"] if p == str(fw)] == [92700, 92700]  # still the new copy after
    assert rep["cudnn_in_use"]["path"] == str(old / "libcudnn.so.9")  # what a new library would bind to
    (res,) = rep["resolutions"]
    assert res["picked"] == bound and "bound there, read from its GOT" in res["reason"]
    (fwj,) = rep["frameworks"]
    assert fwj["cudnn_used"] == "9.27.0" and fwj["verdict"] == "ok"


EXTRA_SITES = [p for p in os.environ.get("CUDNN_MAGIC_EXTRA_SITE", "").split(os.pathsep) if p]

REAL_TORCH = r"""
import ctypes, json, os, sys
old, order = sys.argv[1], sys.argv[2]
def old_copy():
    lib = ctypes.CDLL(os.path.join(old, "libcudnn.so.9") if order == "torch-first" else "libcudnn.so.9",
                      mode=os.RTLD_GLOBAL)
    lib.cudnnGetVersion.restype = ctypes.c_size_t
    lib.cudnnGetVersion()
if order == "old-first":
    old_copy()
import torch
try:
    seen, err = torch.backends.cudnn.version(), None
except RuntimeError as exc:
    seen, err = None, str(exc)
if order == "torch-first":
    old_copy()
from cudnn_magic.engines.check import run_check
from cudnn_magic.render.report import report_json
r = report_json(run_check())
print(json.dumps({"report": r, "seen": seen, "err": err, "torch_lib": os.path.join(os.path.dirname(torch.__file__),
                  "lib", "libtorch_cuda.so"), "cuda": torch.version.cuda}))
"""


@pytest.mark.parametrize("order", ["old-first", "torch-first"])
def test_point4_real_pytorch_with_an_old_copy_agrees_with_glibc(tmp_path, order):
    """A real CUDA PyTorch (installed here, or in a folder on CUDNN_MAGIC_EXTRA_SITE, e.g. a venv's
    site-packages with ``pip install torch==2.14.1``): the copy the report says PyTorch uses is
    the one glibc bound libtorch_cuda.so's cudnnGetVersion to, and PyTorch's own answer agrees."""
    import importlib.machinery

    if importlib.machinery.PathFinder.find_spec("torch", sys.path + EXTRA_SITES) is None:
        pytest.skip("no torch installed (set CUDNN_MAGIC_EXTRA_SITE to a site-packages with a CUDA torch)")
    old = lib_dir(OLD)
    ld = tmp_path / "ld"
    e = {k: v for k, v in os.environ.items() if k not in ("LD_DEBUG", "LD_DEBUG_OUTPUT")}
    e.update(PYTHONPATH=os.pathsep.join([str(REPO), *EXTRA_SITES]), LD_LIBRARY_PATH=str(old), LD_DEBUG="bindings",
             LD_DEBUG_OUTPUT=str(ld))
    proc = subprocess.run([sys.executable, "-c", REAL_TORCH, str(old), order], capture_output=True, text=True, env=e,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    if got["cuda"] is None:
        pytest.skip("a CPU build of torch loads no cuDNN")
    bound = glibc_binding(ld, got["torch_lib"])
    rep = got["report"]
    (res,) = [r for r in rep["resolutions"] if r["consumer"] == "PyTorch"]
    assert res["picked"] == bound
    (torch_fw,) = [f for f in rep["frameworks"] if f["name"] == "PyTorch"]
    if order == "old-first":
        assert bound == str(old / "libcudnn.so.9") == rep["cudnn_in_use"]["path"]
        assert "cuDNN version incompatibility" in got["err"] and "(9, 12, 0)" in got["err"]
        assert torch_fw["verdict"] == "mismatch" and torch_fw["cudnn_used"] == "9.12.0"
        mism = next(f for f in rep["findings"] if f["id"] == "cudnn-version-mismatch")
        assert mism["fixes"][0]["id"] == "remove-shadowing-dir"
    else:  # torch bound its own copy first and keeps it; a library loaded now would get the old one
        assert bound != str(old / "libcudnn.so.9") and rep["cudnn_in_use"]["path"] == str(old / "libcudnn.so.9")
        assert torch_fw["verdict"] == "ok" and decode(got["seen"]) == torch_fw["cudnn_used"]


def test_point4_nothing_mapped_means_no_copy_in_use():
    rep = run_scenario([])["json"]
    assert rep["cudnn_in_use"] is None
    assert "cudnn_in_use" in rep


# --------------------------------------------------------------------------- point 5: fixes by cause


def _tf_like(fw: Path) -> dict:
    return dict(name="TensorFlow", distribution="tensorflow", version="2.99.0+standin", cudnn_compiled="9.20",
                cuda_compiled="12.9", cudnn_soname="libcudnn.so.9", consumer_library=str(fw), checker="tensorflow",
                pins=("nvidia-cudnn-cu12>=9.3.0.75,<10",))


@pytest.mark.parametrize("loaded", [False, True], ids=["before-loading", "after-loading"])
def test_point5_shadowing_gets_remove_shadowing_dir_and_no_pip_fix(tmp_path, loaded):
    old, _new = lib_dir(OLD), lib_dir(NEW)
    fw = framework_standin(tmp_path, runpath=True)  # RUNPATH, like libtensorflow_framework.so.2
    steps = [[str(fw), "local", True]] if loaded else []
    ld = tmp_path / "ld"
    data = run_scenario(steps, env={"LD_LIBRARY_PATH": str(old)}, frameworks=[_tf_like(fw)],
                        ld_debug=ld if loaded else None)
    rep = data["json"]
    if loaded:  # glibc: LD_LIBRARY_PATH comes before RUNPATH; the old copy is the one bound
        assert glibc_binding(ld, str(fw)) == str(old / "libcudnn.so.9") == rep["cudnn_in_use"]["path"]
        assert dict(data["really"])[str(fw)] == 91200
    (tf,) = rep["frameworks"]
    assert tf["verdict"] == "mismatch" and tf["cudnn_used"] == "9.12.0"
    mism = next(f for f in rep["findings"] if f["id"] == "cudnn-version-mismatch")
    fixes = {x["id"]: x for f in rep["findings"] for x in f["fixes"]}
    assert fixes["remove-shadowing-dir"]["applicable"] is True
    assert str(old) in fixes["remove-shadowing-dir"]["title"]
    assert not any(x["id"] == "install-matching-cudnn" and x["applicable"] for f in rep["findings"] for x in f["fixes"])
    assert mism["fixes"][0]["id"] == "remove-shadowing-dir"
    # The cause in a user's words: the LD_LIBRARY_PATH entry, and the framework's own copy that would do.
    assert f"LD_LIBRARY_PATH entry {old}" in mism["detail"]
    assert "own 9.27.0" in mism["detail"] and "would satisfy it" in mism["detail"]
    if loaded:  # TensorFlow's own load took the old copy by search order: a restart alone changes nothing
        assert "loader searches LD_LIBRARY_PATH before the RUNPATH" in mism["detail"]
        assert "restart-kernel" not in fixes and "import-order" not in fixes


def test_point5_remove_shadowing_dir_plan_sees_the_mapped_copy(tmp_path, monkeypatch):
    """``%cudnn_fix remove-shadowing-dir`` finds the directory the mapped old copy came from."""
    from cudnn_magic import fixes
    from cudnn_magic.model import CudnnInUse, LibraryCopy, Report, Resolution

    old, new = lib_dir(OLD), lib_dir(NEW)
    for k, sub in (("HOME", "home"), ("JUPYTER_DATA_DIR", "data"), ("JUPYTER_RUNTIME_DIR", "runtime"),
                   ("CUDNN_MAGIC_STATE_DIR", "state")):
        (tmp_path / sub).mkdir()
        monkeypatch.setenv(k, str(tmp_path / sub))
    spec = tmp_path / "jp" / "kernels" / "testk"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({"argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                                                  "display_name": "t", "language": "python",
                                                  "env": {"LD_LIBRARY_PATH": str(old)}}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jp"))
    conn = tmp_path / "runtime" / "kernel-x.json"
    conn.write_text(json.dumps({"kernel_name": "testk"}))
    o, n = str(old / "libcudnn.so.9"), str(new / "libcudnn.so.9")
    report = Report(
        cudnn_loaded=(LibraryCopy(o, "libcudnn.so.9", "libcudnn.so.9", "9.12.0", loaded=True, load_order=0),),
        cudnn_installed=(LibraryCopy(n, "libcudnn.so.9", "libcudnn.so.9", "9.27.0"),),
        resolutions=(Resolution("TensorFlow", None, "libcudnn.so.9", o,
                                f"already mapped in this process: in the global scope; from LD_LIBRARY_PATH entry {old}",
                                (n,)),),
        cudnn_in_use=CudnnInUse(o, "9.12.0", "global", ld_library_path_entry=str(old)))
    p = fixes.plan("remove-shadowing-dir", report,
                   context={"environ": {"LD_LIBRARY_PATH": str(old)}, "connection_file": str(conn)})
    assert p.applicable, p.reason
    assert str(old) in p.title
    # No framework at all: the copy in use came from that entry and another release is mapped too.
    import dataclasses

    bare = dataclasses.replace(report, resolutions=(), cudnn_loaded=(
        *report.cudnn_loaded, LibraryCopy(n, "libcudnn.so.9", "libcudnn.so.9", "9.27.0", loaded=True, load_order=2)))
    p = fixes.plan("remove-shadowing-dir", bare,
                   context={"environ": {"LD_LIBRARY_PATH": str(old)}, "connection_file": str(conn)})
    assert p.applicable, p.reason
    assert any("came from LD_LIBRARY_PATH entry" in n_ for n_ in p.notes)


def test_point5_pip_fix_already_satisfied_is_not_applicable(tmp_path):
    """The pip fix whose preview says pip will change nothing is not applicable, and says why."""
    from cudnn_magic import fixes
    from cudnn_magic.model import CudnnInUse, FrameworkBuild, Report

    name, version = "nvidia-cudnn-cu12", "9.28.0.42"
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    metadata_wheel(wheels, name, version)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "--no-index",
                    "--find-links", str(wheels), "--no-deps", "-q", f"{name}=={version}"], check=True)
    jax = FrameworkBuild("JAX", "jax-cuda12-plugin", "0.10.2", cudnn_compiled="9.8.0", cuda_compiled="12.9",
                         checker="jax", cudnn_used="9.1.0", verdict="mismatch")
    report = Report(frameworks=(jax,), cudnn_in_use=CudnnInUse("/opt/cudnn-9.1/libcudnn.so.9", "9.1.0", "first loaded",
                                                               ld_library_path_entry="/opt/cudnn-9.1"))
    p = fixes.plan("install-matching-cudnn", report, context={"python": str(venv / "bin" / "python"),
                                                              "find_links": str(wheels), "no_index": True})
    assert not p.applicable
    assert "already installed" in p.reason and "pip would change nothing" in p.reason
    assert "LD_LIBRARY_PATH entry /opt/cudnn-9.1" in p.reason and "remove-shadowing-dir" in p.reason


def test_point5_diagnosis_offers_the_cause_fixes_first_and_no_pip_fix():
    """The annotation of a failing cell takes the live facts' cause and fixes."""
    from cudnn_magic.engines.diagnose import diagnose
    from cudnn_magic.model import Finding, Fix, FrameworkBuild, Report

    jax = FrameworkBuild("JAX", "jax-cuda12-plugin", "0.10.2", cudnn_compiled="9.8.0", cuda_compiled="12.9",
                         checker="jax", cudnn_used="9.1.0", cudnn_used_path="/opt/old/libcudnn.so.9", verdict="mismatch")
    finding = Finding("cudnn-version-mismatch", "error", "JAX 0.10.2 was built with cuDNN 9.8.0, but loads 9.1.0",
                      "cuDNN 9.1.0 from LD_LIBRARY_PATH entry /opt/old was loaded into this process first; JAX's own "
                      "9.28.0 would satisfy it.",
                      (Fix("remove-shadowing-dir", "Take /opt/old out of LD_LIBRARY_PATH", "...", True, True),
                       Fix("restart-kernel", "Restart", "...", True, True),
                       Fix("import-order", "Import JAX first", "...", True, False, "a change to your code")))
    log = ("E0607 11:27:34.427160 7414 cuda_dnn.cc:522] Loaded runtime CuDNN library: 9.1.0 but source was compiled "
           "with: 9.8.0.")
    top = diagnose(log=log, exception="XlaRuntimeError: FAILED_PRECONDITION: DNN library initialization failed.",
                   report=Report(frameworks=(jax,), findings=(finding,)))[0]
    assert top.id == "cudnn-version-mismatch"
    assert [f.id for f in top.fixes][:3] == ["remove-shadowing-dir", "restart-kernel", "import-order"]
    assert top.fixes[0].applicable
    assert not any(f.id == "install-matching-cudnn" for f in top.fixes)
    assert any("LD_LIBRARY_PATH entry /opt/old" in e for e in top.evidence)


# --------------------------------------------------------------------------- point 6: overwritten wheels


def _venv_with(tmp: Path, name: str, wheels: list[tuple[str, str]]) -> Path:
    """A real venv into which pip installs ``wheels`` one after another (``--no-deps``)."""
    install_wheel(*wheels[0])  # skips the test with the reason when PyPI cannot be reached
    venv = tmp / name
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    for dist, version in wheels:
        subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "--no-deps",
                        "-q", "--disable-pip-version-check", f"{dist}=={version}"], check=True, capture_output=True)
    (site,) = glob.glob(str(venv / "lib" / "python*" / "site-packages"))
    return Path(site)


def test_point6_cu13_then_cu12_jit_wheels_overwrite_and_the_hash_says_whose_files(tmp_path):
    site = _venv_with(tmp_path, "both", [CU13, NEW])
    lib = site / "nvidia" / "cudnn_jit" / "lib"
    torch_like = dict(name="PyTorch", distribution="torch", version="2.14.1+standin", cudnn_compiled="9.24.0",
                      cuda_compiled="13.0", cudnn_soname="libcudnn.so.9", checker="pytorch",
                      pins=("nvidia-cudnn-jit-cu13==9.24.0.43",))
    data = run_scenario([], frameworks=[torch_like], extra_path=[str(site)])
    rep = data["json"]
    (ow,) = rep["wheels_overwritten"]
    assert ow["directory"] == str(lib.parent)  # nvidia/cudnn_jit: its lib/ and include/
    assert {(d["name"], d["version"]) for d in ow["distributions"]} == {("nvidia-cudnn-jit-cu13", "9.24.0.43"),
                                                                        ("nvidia-cudnn-jit-cu12", "9.27.0.42")}
    assert ow["present"] == {"name": "nvidia-cudnn-jit-cu12", "version": "9.27.0.42"}
    # the truth: the shim on disk is byte-for-byte the cu12 wheel's
    assert (lib / "libcudnn.so.9").read_bytes() == (lib_dir(NEW) / "libcudnn.so.9").read_bytes()
    (f,) = [f for f in rep["findings"] if f["id"] == "cudnn-wheel-overwritten"]
    assert f["severity"] == "error"
    assert "nvidia-cudnn-jit-cu13 9.24.0.43" in f["detail"] and "nvidia-cudnn-jit-cu12 9.27.0.42" in f["detail"]
    assert str(lib / "libcudnn.so.9") in ow["files"] and str(lib.parent) in f["detail"]
    assert "a CUDA 12 build of cuDNN under a CUDA 13 framework" in f["detail"]
    fixes = {x["id"]: x for x in f["fixes"]}
    assert "one-venv-per-cuda" in fixes
    assert "--force-reinstall --no-deps nvidia-cudnn-jit-cu13==9.24.0.43" in fixes["reinstall-cudnn"]["action"]
    size = ow["bytes"][[(d["name"], d["version"]) for d in ow["distributions"]].index(("nvidia-cudnn-jit-cu13", "9.24.0.43"))]
    assert f" {size / 2**20:.0f} MiB in " in fixes["reinstall-cudnn"]["action"]  # its cost, in MiB (2**20 bytes)
    # Owners follow the hash: every file there now is the cu12 wheel's.
    shim = next(c for c in rep["cudnn_installed"] if c["path"] == str(lib / "libcudnn.so.9"))
    assert shim["owner"] == "pip: nvidia-cudnn-jit-cu12 9.27.0.42" and shim["version"] == "9.27.0"
    assert "nvidia-cudnn-jit-cu13 9.24.0.43" in shim["owner_evidence"]


def test_point6_the_same_wheels_in_separate_venvs_overwrite_nothing(tmp_path):
    from cudnn_magic.probes.owners import probe_overwritten_wheels

    a = _venv_with(tmp_path, "cu13", [CU13])
    b = _venv_with(tmp_path, "cu12", [NEW])
    found, notes = probe_overwritten_wheels([str(a), str(b)])
    assert found == () and notes == []
    rep = run_scenario([], extra_path=[str(a), str(b)])["json"]
    assert "cudnn-wheel-overwritten" not in ids(rep) and rep["wheels_overwritten"] == []


def test_point6_pytorch_cuda13_and_tensorflow_and_cuda_in_one_venv():
    """The issue's venv: torch 2.14.1 (CUDA 13, pins nvidia-cudnn-cu13==9.24.0.43) then
    tensorflow[and-cuda] 2.21 (nvidia-cudnn-cu12>=9.3.0.75,<10: 9.28.0.42): what each framework gets."""
    from cudnn_magic.engines.check import judge_report
    from cudnn_magic.model import FrameworkBuild, WheelOverwrite

    site = "/venv/lib/python3.11/site-packages"
    torch = FrameworkBuild("PyTorch", "torch", "2.14.1", cudnn_compiled="9.24.0", cuda_compiled="13.0", checker="pytorch",
                           pins=('nvidia-cudnn-cu13==9.24.0.43; platform_system == "Linux"',))
    tf = FrameworkBuild("TensorFlow", "tensorflow", "2.21.0", cudnn_compiled="9.3", cuda_compiled="12.5.1",
                        checker="tensorflow", pins=('nvidia-cudnn-cu12<10.0,>=9.3.0.75; extra == "and-cuda"',))
    ow = WheelOverwrite(f"{site}/nvidia/cudnn", (("nvidia-cudnn-cu12", "9.28.0.42"), ("nvidia-cudnn-cu13", "9.24.0.43")),
                        ("nvidia-cudnn-cu12", "9.28.0.42"), (f"{site}/nvidia/cudnn/lib/libcudnn.so.9",),
                        ("libcudnn.so.9: sha256 matches the RECORD of nvidia-cudnn-cu12 9.28.0.42",),
                        sizes=(1_150_000_000, 1_120_000_000))
    r = judge_report(loaded=(), installed=(), frameworks=(torch, tf), driver=None, gpus=(), overwrites=(ow,), in_use=())
    (f,) = [f for f in r.findings if f.id == "cudnn-wheel-overwritten"]
    assert f.severity == "error"
    assert ("PyTorch 2.14.1 (built for CUDA 13, wants nvidia-cudnn-cu13 9.24.0.43) now runs nvidia-cudnn-cu12 "
            "9.28.0.42's files: a CUDA 12 build of cuDNN under a CUDA 13 framework") in f.detail
    assert "TensorFlow 2.21.0 (CUDA 12) gets the files it wants" in f.detail
    fixes = [x for x in f.fixes if x.id == "reinstall-cudnn"]
    assert len(fixes) == 1 and "(for PyTorch)" in fixes[0].title
    assert "--force-reinstall --no-deps nvidia-cudnn-cu13==9.24.0.43" in fixes[0].action
    assert "1068 MiB" in fixes[0].action and "a CUDA 13 build" in fixes[0].action  # 1,120,000,000 bytes = 1068 MiB


def _record_of(wheel: tuple[str, str], root: str):
    from cudnn_magic.probes.owners import DistRecord, read_record

    info = str(installed_dist_info(*wheel))
    d = read_record(info)
    assert d is not None
    return DistRecord(d.name, d.version, root, d.entries)


def test_point6_pure_judgement_over_records_and_observed_hashes():
    """The pure function a what-if of ``pip install --dry-run --report`` can reuse: no disk."""
    from cudnn_magic.probes.owners import find_overwritten_wheels

    root = "/predicted/site-packages"
    cu13, cu12 = _record_of(CU13, root), _record_of(NEW, root)
    shim = f"{root}/nvidia/cudnn_jit/lib/libcudnn.so.9"
    digest = {d.name: next(e.digest for e in d.entries if e.path.endswith("lib/libcudnn.so.9")) for d in (cu13, cu12)}
    (ow,) = find_overwritten_wheels([cu13, cu12], {shim: digest["nvidia-cudnn-jit-cu12"]})
    assert ow.present == ("nvidia-cudnn-jit-cu12", "9.27.0.42") and not ow.mixed
    assert shim in ow.files and ow.sizes and all(ow.sizes)
    (ow,) = find_overwritten_wheels([cu12, cu13], {shim: digest["nvidia-cudnn-jit-cu13"]})
    assert ow.present == ("nvidia-cudnn-jit-cu13", "9.24.0.43")
    (ow,) = find_overwritten_wheels([cu13, cu12], {})
    assert ow.present is None and not ow.mixed  # nothing hashed: undecided, and says so
    other = _record_of(NEW, "/another/venv/site-packages")
    assert find_overwritten_wheels([cu13, other], {}) == ()


# --------------------------------------------------------------------------- point 7: JAX's rules


def test_point7_jax_rules_quoted_from_their_real_places_and_which_fires_when():
    from cudnn_magic.rules.compat import RULES, judge

    rule = RULES["jax"]
    assert "jax_plugins/xla_cuda12/__init__.py" in rule and "cudnn_build_version // 100" in rule
    assert "cuda_dnn.cc" in rule and "CudnnSupport::Init" in rule and "IsSourceCompatibleWithCudnnLibrary" in rule
    j = judge("jax", "9.1.0", "9.8.0")
    assert j.verdict == "mismatch"
    assert "Python-side check passes it" in j.detail and "908 <= 90100" in j.detail
    assert "XLA's C++ check refuses it when the GPU backend creates its cuDNN handle" in j.detail
    assert judge("jax", "9.10.0", "9.8.0").verdict == "mismatch"
    assert judge("jax", "9.10.0", "9.10.0").verdict == "ok"  # built with 9.10.0, JAX lets it through
    assert judge("jax", "9.28.0", "9.8.0").verdict == "ok"


# --------------------------------------------------------------------------- point 8: owners


def test_point8_target_folders_unzipped_wheels_and_copies_have_real_owners(tmp_path):
    old = install_wheel(*OLD)
    unzipped = tmp_path / "unzipped"
    for src in glob.glob(str(old / "**"), recursive=True):
        dst = unzipped / os.path.relpath(src, old)
        if os.path.isdir(src):
            dst.mkdir(parents=True, exist_ok=True)
        elif not src.endswith(("INSTALLER", "REQUESTED")):  # an unzipped wheel has neither
            os.link(src, dst)
    lone = tmp_path / "opt" / "lib"
    lone.mkdir(parents=True)
    shutil.copy(old / "nvidia" / "cudnn_jit" / "lib" / "libcudnn.so.9", lone / "libcudnn.so.9")
    site = tmp_path / "site-packages"
    site.symlink_to(old)  # the wheel installed where Python looks
    code = textwrap.dedent(f"""
        import json, sys
        sys.path.insert(0, {str(site)!r})
        from cudnn_magic.probes.owners import ownership
        out = {{}}
        for p in sys.argv[1:]:
            o = ownership(p)
            out[p] = [o.owner, o.evidence]
        print(json.dumps(out))
    """)
    paths = [str(old / "nvidia" / "cudnn_jit" / "lib" / "libcudnn_graph.so.9"),
             str(unzipped / "nvidia" / "cudnn_jit" / "lib" / "libcudnn.so.9"), str(lone / "libcudnn.so.9")]
    out = subprocess.run([sys.executable, "-c", code, *paths], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(REPO)})
    got = json.loads(out.stdout)
    # Installed where Python looks (the site-packages link), and a copy of an installed file: "pip:";
    # the unzipped wheel outside any site-packages: "wheel:" (the prefix of a wheel outside site-packages).
    want = ["pip: ", "wheel: ", "pip: "]
    for p, prefix in zip(paths, want):
        assert got[p][0] == prefix + "nvidia-cudnn-jit-cu12 9.12.0.46", (p, got[p])
    assert "sha256 matches" in got[paths[1]][1]
    assert "a copy of that wheel's file" in got[paths[2]][1]


# --------------------------------------------------------------------------- in a real kernel


KERNEL_ORDERS = {  # each copy is called as soon as it is loaded, as a framework does
    "old-first": ["old = load('libcudnn.so.9', ctypes.RTLD_GLOBAL)", "new = load(NEW + '/libcudnn.so.9')"],
    "reversed": ["new = load(NEW + '/libcudnn.so.9')", "old = load(OLD + '/libcudnn.so.9', ctypes.RTLD_GLOBAL)"],
}
LOAD = """
def load(path, mode=ctypes.RTLD_LOCAL):
    lib = ctypes.CDLL(path, mode=mode)
    lib.cudnnGetVersion.restype = ctypes.c_size_t
    lib.cudnnGetVersion()
    return lib
"""


@pytest.mark.kernel
@pytest.mark.parametrize("order", list(KERNEL_ORDERS))
def test_two_copies_in_a_real_kernel(tmp_path, order):
    old, new = lib_dir(OLD), lib_dir(NEW)
    first, second = KERNEL_ORDERS[order]
    calls = "print('really', [int(h.cudnnGetVersion()) for h in (old, new)])"
    nb = run_notebook([
        f"import ctypes, json\nOLD, NEW = {str(old)!r}, {str(new)!r}\n{LOAD}\n{first}\n{second}\n{calls}",
        "%load_ext cudnn_magic",
        "r = %cudnn_check --json\nprint(json.dumps(r))",
        "%cudnn_check",
    ], tmp_path, env={"LD_LIBRARY_PATH": str(old)})
    really = json.loads(outputs_text(nb.cells[0]).split("really", 1)[1].strip().replace("'", '"'))
    rep = json.loads([ln for ln in outputs_text(nb.cells[2]).splitlines() if ln.startswith("{")][-1])
    n, o = rows(rep, new), rows(rep, old)
    assert n["libcudnn.so.9"]["version"] == "9.27.0" and o["libcudnn.so.9"]["version"] == "9.12.0"
    assert "cudnn-multiple-copies-loaded" in ids(rep)
    assert "cudnn-sublibrary-load-failed" not in ids(rep)
    u = rep["cudnn_in_use"]
    assert u["path"] == str(old / "libcudnn.so.9")  # the global one, in both orders
    # what calls through each copy really returned is what the report says they reach
    assert o["libcudnn.so.9"]["reached_version"] == decode(really[0])
    assert n["libcudnn.so.9"]["reached_version"] == decode(really[1])
    if order == "old-first":
        assert really == [91200, 91200] and u["reached_version"] == "9.12.0"
    else:
        assert really == [92700, 92700] and u["reached_version"] == "9.27.0"
    html = "".join(o_["data"].get("text/html", "") for o_ in nb.cells[3].outputs if "data" in o_)
    head = html[: html.index("cuDNN mapped in this kernel")]
    assert "cuDNN in use:" in head and str(old / "libcudnn.so.9") in head
