"""The real-wheel lane: how each consumer really loads cuDNN, with real wheels, against the real
thing.

Each scenario runs the framework for real in a child process (``import torch``,
``torch.backends.cudnn.version()``, the ``libcudnn*`` files in ``/proc/self/maps``) and compares that
with what ``cudnn-magic check --json`` predicted in another child with the same environment before
anything was imported, and with ``cudnn_magic.check()`` in the framework's own process after the
import (``cudnn_in_use``). Nothing is hard-coded: the expected copy is the one the framework mapped.
No GPU is needed: the version calls run on the CPU (docs/facts.md).

The environments are built once (:mod:`framework_envs`): torch 2.14.1 for CUDA 13 with its
``nvidia-cudnn-cu13`` 9.24.0.43, and ``--target`` folders of ``nvidia-cudnn-cu13`` 9.12.0.46 and
``nvidia-cudnn-cu12`` 8.9.7.29; scenarios vary ``PYTHONPATH`` and folders made of hard links to
those files.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from helpers.framework_envs import merged_site, run_py, site_of, target, torch_env

pytestmark = [pytest.mark.realwheels, pytest.mark.timeout(1800)]

CU13_OLD = ("nvidia-cudnn-cu13", "9.12.0.46")
CU12_8 = ("nvidia-cudnn-cu12", "8.9.7.29")

TRUTH = r"""
import json, sys
def maps():
    return sorted({l.split()[-1] for l in open('/proc/self/maps') if 'libcudnn' in l and l.split()[-1].startswith('/')})
out = {}
try:
    import torch
except Exception as e:
    out['import_error'] = f'{type(e).__name__}: {e}'
    print(json.dumps(out)); sys.exit(0)
out['after_import'] = maps()
try:
    out['version'] = torch.backends.cudnn.version()
except Exception as e:
    out['version_error'] = str(e)
out['after_version'] = maps()
import cudnn_magic
r = cudnn_magic.check()
out['in_use'] = r.cudnn_in_use.path if r.cudnn_in_use else None
out['in_use_version'] = r.cudnn_in_use.version if r.cudnn_in_use else None
out['findings'] = [[f.id, f.title] for f in r.findings]
if out.get('version_error'):  # the failing cell's annotation: torch's own message with this kernel's facts
    d = cudnn_magic.explain(out['version_error'], report=r)
    out['diagnosis'] = [d[0].id, [f.id for f in d[0].fixes]] if d else None
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def torch_py() -> Path:
    return torch_env()


def predict(py: Path, env: dict[str, str] | None = None) -> dict:
    """``cudnn-magic check --json`` in the framework's environment, nothing imported yet."""
    base = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LD_LIBRARY_PATH", "LD_PRELOAD", "LD_DEBUG")}
    p = subprocess.run([str(py), "-m", "cudnn_magic", "check", "--json"], env={**base, **(env or {})},
                       capture_output=True, text=True, timeout=600, cwd="/")
    assert p.returncode in (0, 1), p.stderr[-3000:]
    return json.loads(p.stdout)


def torch_row(rep: dict) -> dict:
    return next(f for f in rep["frameworks"] if f["name"] == "PyTorch")


def main_of(paths: list[str]) -> list[str]:
    return [p for p in paths if os.path.basename(p).startswith("libcudnn.so.9")]


def finding(rep: dict, fid: str, words: str = "") -> dict | None:
    return next((f for f in rep["findings"] if f["id"] == fid and words in f["title"]), None)


def test_torch_loads_its_own_wheel_and_the_report_says_why(torch_py):
    own = site_of(torch_py) / "nvidia" / "cudnn" / "lib" / "libcudnn.so.9"
    truth = run_py(torch_py, TRUTH)
    assert truth["version"] == 92400 and main_of(truth["after_import"]) == [str(own)]
    rep = predict(torch_py)
    row = torch_row(rep)
    assert (row["cudnn_used"], row["cudnn_used_path"], row["verdict"]) == ("9.24.0", str(own), "ok")
    assert [p["path"] for p in row["preloads"]] == [str(own)]  # torch preloads its own wheel's copy from site-packages
    assert "torch/__init__.py of the installed torch 2.14.1" in row["loading"]
    assert truth["in_use"] == str(own)
    # the wheel's own sub-library set, as its RECORD lists it (9.24 ships tensor_ir and ext)
    subs = {s["soname"]: s["path"] for c in rep["consumers"] if c["framework"] == "PyTorch" for s in c["sublibraries"]}
    assert subs["libcudnn_engines_tensor_ir.so.9"] == str(own.parent / "libcudnn_engines_tensor_ir.so.9")
    assert subs["libcudnn_ext.so.9"] == str(own.parent / "libcudnn_ext.so.9")
    graph = [p for p in truth["after_version"] if os.path.basename(p) == "libcudnn_graph.so.9"]
    assert graph == [subs["libcudnn_graph.so.9"]]
    assert not [f for f in rep["findings"] if f["severity"] == "error"]


@pytest.mark.parametrize("as_site_packages", [False, True], ids=["target-folder", "folder-named-site-packages"])
def test_an_older_cudnn_first_on_pythonpath_is_what_torch_preloads(torch_py, tmp_path, as_site_packages):
    old = target(*CU13_OLD)
    entry = old
    if as_site_packages:  # a folder named site-packages on sys.path is searched the same way
        entry = tmp_path / "env" / "site-packages"
        entry.mkdir(parents=True)
        (entry / "nvidia").symlink_to(old / "nvidia", target_is_directory=True)
    env = {"PYTHONPATH": str(entry)}
    truth = run_py(torch_py, TRUTH, env)
    mapped = main_of(truth["after_import"])
    assert mapped == [str(old / "nvidia" / "cudnn" / "lib" / "libcudnn.so.9")], truth
    assert "(9, 24, 0)" in truth["version_error"] and "(9, 12, 0)" in truth["version_error"]
    rep = predict(torch_py, env)
    row = torch_row(rep)
    assert (row["cudnn_used"], row["cudnn_used_path"], row["verdict"]) == ("9.12.0", mapped[0], "mismatch")
    assert row["preloads"][0]["sys_path_entry"] == str(entry)
    shadow = finding(rep, "cudnn-shadowed", f"sys.path entry {entry}")
    assert shadow is not None and shadow["severity"] == "error"
    assert [x["id"] for x in shadow["fixes"]] == ["remove-sys-path-dir"] and str(entry) in shadow["fixes"][0]["action"]
    assert finding(rep, "cudnn-version-mismatch") is not None
    # the copy on sys.path is listed with the other copies on disk
    listed = [c for c in rep["cudnn_installed"] if c["name"] == "libcudnn.so.9" and c["path"] == mapped[0]]
    assert listed and listed[0]["version"] == "9.12.0"
    assert listed[0]["source"] == ("pip wheel" if as_site_packages else f"pip wheel (sys.path entry {entry})")
    # the graph library the preloaded shim opens (its RPATH $ORIGIN) is its own folder's
    subs = {s["soname"]: s["path"] for c in rep["consumers"] if c["framework"] == "PyTorch" for s in c["sublibraries"]}
    assert [p for p in truth["after_version"] if p.endswith("/libcudnn_graph.so.9")] == [subs["libcudnn_graph.so.9"]]
    # after the import, in the framework's own process, the copy in use is the one it mapped
    assert truth["in_use"] == mapped[0] and truth["in_use_version"] == "9.12.0"
    # and the annotation of torch's own error offers only the fix that changes it: no restart (it would preload the
    # same), no import order (torch came first), no pip install (its own 9.24 is installed), no LD_LIBRARY_PATH change
    assert truth["diagnosis"] == ["cudnn-version-mismatch", ["remove-sys-path-dir"]], truth["diagnosis"]


def test_two_cudnn_majors_in_one_folder_are_judged_apart(torch_py, tmp_path):
    """nvidia-cudnn-cu12 8.9.7 installed into the folder of the cu13 9.24 wheel: only the headers
    are overwritten; libcudnn.so.8 and its set sit beside libcudnn.so.9 and its set."""
    venv_site = site_of(torch_py)
    t = tmp_path / "site"
    t.mkdir()
    merged_site(t / "nvidia" / "cudnn", venv_site / "nvidia" / "cudnn")
    dist9 = next(venv_site.glob("nvidia_cudnn_cu13-9.24.0.43.dist-info"))
    merged_site(t / dist9.name, dist9)
    merged_site(t, target(*CU12_8))
    lib = t / "nvidia" / "cudnn" / "lib"
    assert (lib / "libcudnn.so.8").exists() and (lib / "libcudnn.so.9").exists()
    env = {"PYTHONPATH": str(t)}
    truth = run_py(torch_py, TRUTH, env)
    assert truth["version"] == 92400, truth  # torch still runs 9.24
    rep = predict(torch_py, env)
    row = torch_row(rep)
    assert row["cudnn_used"] == "9.24.0" and row["verdict"] == "ok"
    want = main_of(truth["after_import"])
    assert [row["cudnn_used_path"]] == want, (row, truth)
    mixed = [f for f in rep["findings"] if f["title"].startswith(f"Mixed cuDNN versions in {lib}")]
    assert mixed == [], mixed
    # the 8 shim loads its own 8.9.7 set: its own version call, in a child, says so
    v8 = run_py(torch_py, "import ctypes, json; l = ctypes.CDLL(%r); l.cudnnGetVersion.restype = ctypes.c_size_t; "
                          "print(json.dumps({'v': l.cudnnGetVersion()}))" % str(lib / "libcudnn.so.8"))
    copy8 = next(c for c in rep["cudnn_installed"] if c["path"] == str(lib / "libcudnn.so.8"))
    assert v8["v"] == 8907 and copy8["version"] == "8.9.7"


def test_the_release_a_folder_runs_is_its_graph_librarys(torch_py, tmp_path):
    """A 9.12 libcudnn.so.9 shim in a folder whose other files are 9.24's (soname links): torch
    preloads that shim, and what it runs is the 9.24 graph library the shim opens."""
    venv_lib = site_of(torch_py) / "nvidia" / "cudnn" / "lib"
    d = tmp_path / "mixed"
    lib = d / "nvidia" / "cudnn" / "lib"
    lib.mkdir(parents=True)
    os.link(target(*CU13_OLD) / "nvidia" / "cudnn" / "lib" / "libcudnn.so.9", lib / "libcudnn.so.9")
    for f in venv_lib.iterdir():
        if f.name != "libcudnn.so.9":
            (lib / f.name).symlink_to(f)
    env = {"PYTHONPATH": str(d)}
    truth = run_py(torch_py, TRUTH, env)
    assert truth["version"] == 92400 and main_of(truth["after_import"]) == [str(lib / "libcudnn.so.9")], truth
    rep = predict(torch_py, env)
    row = torch_row(rep)
    assert (row["cudnn_used"], row["verdict"]) == ("9.24.0", "ok"), row
    assert row["cudnn_used_path"] == str(lib / "libcudnn.so.9")
    f = finding(rep, "cudnn-sublibrary-load-failed", f"Mixed cuDNN versions in {lib}")
    assert f is not None and "answers with cuDNN 9.24.0" in f["detail"], rep["findings"]
    assert "libcudnn.so.9: no RECORD lists it" in f["detail"] and "another release's shim" in f["detail"]
    # in torch's process: the shim from this folder, the graph library from the wheel's (real paths)
    dirs = {os.path.dirname(p) for p in truth["after_version"]}
    assert dirs == {str(lib), str(venv_lib)}
    assert any(i == "cudnn-multiple-copies-loaded" and "mapped from 2 directories" in t for i, t in truth["findings"])


def test_a_sub_library_replaced_by_another_releases_file_is_named(torch_py, tmp_path):
    """One sub-library of the 9.24 folder replaced by hand with 9.12's: the check names that
    file (its content is not the one its wheel's RECORD lists)."""
    venv_site = site_of(torch_py)
    t = tmp_path / "site"
    merged_site(t / "nvidia" / "cudnn", venv_site / "nvidia" / "cudnn")
    dist9 = next(venv_site.glob("nvidia_cudnn_cu13-9.24.0.43.dist-info"))
    merged_site(t / dist9.name, dist9)
    lib = t / "nvidia" / "cudnn" / "lib"
    (lib / "libcudnn_cnn.so.9").unlink()
    old_cnn = target(*CU13_OLD) / "nvidia" / "cudnn" / "lib" / "libcudnn_cnn.so.9"
    os.link(old_cnn, lib / "libcudnn_cnn.so.9")
    record = {ln.split(",")[0]: ln.split(",") for ln in (t / dist9.name / "RECORD").read_text().splitlines()}
    assert int(record["nvidia/cudnn/lib/libcudnn_cnn.so.9"][2]) != old_cnn.stat().st_size  # the ground truth
    rep = predict(torch_py, {"PYTHONPATH": str(t)})
    f = finding(rep, "cudnn-sublibrary-load-failed", f"Mixed cuDNN versions in {lib}")
    assert f is not None and "libcudnn_cnn.so.9" in f["detail"] and "replaced after install" in f["detail"], rep["findings"]
    assert "answers with cuDNN 9.24.0" in f["detail"]
    # what cuDNN itself does with that folder, on the CPU: the legacy convolution API needs libcudnn_cnn
    intact = run_py(torch_py, LEGACY % str(site_of(torch_py) / "nvidia" / "cudnn" / "lib" / "libcudnn.so.9"))
    broken = run_py(torch_py, LEGACY % str(lib / "libcudnn.so.9"))
    assert intact["cnn"] == [0, "CUDNN_STATUS_SUCCESS"]
    assert broken["cnn"][0] != 0 and "SUBLIBRARY" in broken["cnn"][1], broken  # the release check refuses the file


LEGACY = r"""
import ctypes, json
lib = ctypes.CDLL(%r)
lib.cudnnGetErrorString.restype = ctypes.c_char_p
out = {}
for api, fn in (("ops", "cudnnCreateTensorDescriptor"), ("cnn", "cudnnCreateConvolutionDescriptor")):
    d = ctypes.c_void_p()
    r = getattr(lib, fn)(ctypes.byref(d))
    out[api] = [r, lib.cudnnGetErrorString(r).decode()]
out["maps"] = sorted({l.split()[-1] for l in open('/proc/self/maps') if 'libcudnn' in l and l.split()[-1].startswith('/')})
print(json.dumps(out))
"""


MIX = r"""
import ctypes, json
lib = ctypes.CDLL(%r)
lib.cudnnGetErrorString.restype = ctypes.c_char_p
print(json.dumps({"ready": True}), flush=True)
out = []
for fn in ("cudnnCreateTensorDescriptor", "cudnnCreateConvolutionDescriptor", "cudnnCreateRNNDescriptor"):
    d = ctypes.c_void_p()
    out.append(getattr(lib, fn)(ctypes.byref(d)))
print(json.dumps({"status": out}))
"""


@pytest.mark.parametrize("base,other,files", [
    ("new", "old", ["libcudnn_ops.so.9"]), ("old", "new", ["libcudnn_ops.so.9"]), ("new", "old", ["libcudnn_adv.so.9"]),
    ("new", "old", ["libcudnn_cnn.so.9"]), ("old", "new", ["libcudnn_cnn.so.9"]),
    ("new", "old", ["libcudnn.so.9"]), ("old", "new", ["libcudnn.so.9"])])
def test_what_mixing_releases_does_is_what_the_finding_says(torch_py, tmp_path, base, other, files):
    """The facts behind the mixed-folder finding's words and severity, on the CPU: a sub-library of
    another release makes a call that needs it fail or the process abort (error); another release's
    shim alone runs the folder's calls (warning)."""
    dirs = {"new": site_of(torch_py) / "nvidia" / "cudnn" / "lib", "old": target(*CU13_OLD) / "nvidia" / "cudnn" / "lib"}
    d = tmp_path / "mix"
    d.mkdir()
    for f in dirs[base].iterdir():
        os.link(dirs[other] / f.name if f.name in files else f, d / f.name)
    base_env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LD_LIBRARY_PATH")}
    p = subprocess.run([str(torch_py), "-c", MIX % str(d / "libcudnn.so.9")], env=base_env, capture_output=True, text=True,
                       timeout=120)
    lines = [json.loads(ln) for ln in p.stdout.splitlines() if ln.startswith("{")]
    ok = p.returncode == 0 and bool(lines) and lines[-1].get("status") == [0, 0, 0]
    # the report, with the folder on LD_LIBRARY_PATH and both wheels' RECORDs on sys.path (to know each file)
    rep = predict(torch_py, {"LD_LIBRARY_PATH": str(d), "PYTHONPATH": str(target(*CU13_OLD))})
    fs = [x for x in rep["findings"] if x["title"].startswith(f"Mixed cuDNN versions in {d}")]
    if files == ["libcudnn.so.9"]:
        assert ok, p.stdout + p.stderr[-500:]
        assert [x["severity"] for x in fs] == ["warning"], fs  # another release's shim: calls still run
    else:
        assert not ok, p.stdout
        assert [x["severity"] for x in fs] == ["error"], fs


def test_a_sub_library_the_shims_folder_lacks_comes_from_the_loaders_search(torch_py, tmp_path):
    """torch preloads a 9.12 folder (on PYTHONPATH) that has no libcudnn_cnn.so.9, with 9.24's folder
    on LD_LIBRARY_PATH. The 9.12 shim carries RUNPATH $ORIGIN (9.24's carries RPATH $ORIGIN), so
    LD_LIBRARY_PATH comes first for every sub-library it opens by soname. cuDNN's legacy API (which
    loads libcudnn_ops and libcudnn_cnn, no GPU needed) shows the files glibc really took: each is the
    report's prediction."""
    old = target(*CU13_OLD) / "nvidia" / "cudnn" / "lib"
    d = tmp_path / "partial"
    lib = d / "nvidia" / "cudnn" / "lib"
    lib.mkdir(parents=True)
    for f in old.iterdir():
        if f.name != "libcudnn_cnn.so.9":
            os.link(f, lib / f.name)
    venv_lib = site_of(torch_py) / "nvidia" / "cudnn" / "lib"
    for case, ldp in (("ld-library-path", str(venv_lib)), ("none", "")):
        env = {"PYTHONPATH": str(d), **({"LD_LIBRARY_PATH": ldp} if ldp else {})}
        code = LEGACY.replace("lib = ctypes.CDLL(%r)", "import torch\nlib = ctypes.CDLL(%r)") % str(lib / "libcudnn.so.9")
        rep = predict(torch_py, env)
        if case == "none":  # nothing provides libcudnn_cnn.so.9: the convolution API aborts the process
            base = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LD_LIBRARY_PATH")}
            p = subprocess.run([str(torch_py), "-c", code], env={**base, **env}, capture_output=True, text=True, timeout=120)
            assert p.returncode == -6 and "Unable to load any of {libcudnn_cnn.so.9.12.0" in p.stderr, p.stderr[-600:]
            subs = {s["soname"]: s for c in rep["consumers"] if c["framework"] == "PyTorch" for s in c["sublibraries"]}
            assert subs["libcudnn_cnn.so.9"]["path"] is None
            continue
        truth = run_py(torch_py, code, env)
        subs = {s["soname"]: s for c in rep["consumers"] if c["framework"] == "PyTorch" for s in c["sublibraries"]}
        for name in ("libcudnn_graph.so.9", "libcudnn_ops.so.9", "libcudnn_cnn.so.9"):
            mapped = [p for p in truth["maps"] if os.path.basename(p) == name]
            assert mapped == ([subs[name]["path"]] if subs[name]["path"] else []), (case, name, truth, subs[name])
        assert subs["libcudnn_cnn.so.9"]["path"] == str(venv_lib / "libcudnn_cnn.so.9") and truth["cnn"][0] == 0


def test_files_a_newer_release_left_beside_an_older_one_are_named(torch_py, tmp_path):
    """9.24's two new sub-libraries left in a 9.12 folder (a file of another release each)."""
    old = target(*CU13_OLD)
    t = merged_site(tmp_path / "site", old)
    venv_lib = site_of(torch_py) / "nvidia" / "cudnn" / "lib"
    lib = t / "nvidia" / "cudnn" / "lib"
    for n in ("libcudnn_engines_tensor_ir.so.9", "libcudnn_ext.so.9"):
        os.link(venv_lib / n, lib / n)
    rep = predict(torch_py, {"PYTHONPATH": str(t)})
    f = finding(rep, "cudnn-sublibrary-load-failed", f"Mixed cuDNN versions in {lib}")
    assert f is not None, rep["findings"]
    assert "answers with cuDNN 9.12.0" in f["detail"]
    assert "libcudnn_engines_tensor_ir.so.9 9.24.0" in f["detail"] and "libcudnn_ext.so.9 9.24.0" in f["detail"]


# ----------------------------------------------------------------------------- ONNX Runtime

ORT_GPU = ("onnxruntime-gpu", "1.31.1")
ORT_CPU = ("onnxruntime", "1.32.0")

ORT_TRUTH = r"""
import ctypes, json, sys
def maps():
    return sorted({l.split()[-1] for l in open('/proc/self/maps') if 'libcudnn' in l and l.split()[-1].startswith('/')})
out = {}
import onnxruntime
out['version'] = onnxruntime.__version__
out['providers'] = onnxruntime.get_available_providers()
try:  # what the CUDA provider's dlopen("libcudnn.so.9") finds on its own (it has no RPATH/RUNPATH)
    ctypes.CDLL('libcudnn.so.9'); out['alone'] = maps()
except OSError as e:
    out['alone_error'] = str(e)
if sys.argv[-1] == 'torch-first':
    import torch
    out['torch'] = maps()
    ctypes.CDLL('libcudnn.so.9')
    out['after_torch'] = maps()
print(json.dumps(out))
"""


def _readelf(path: Path) -> tuple[list[str], str]:
    out = subprocess.run(["readelf", "-d", str(path)], capture_output=True, text=True, check=True).stdout
    needed = [ln.split("[", 1)[1].rstrip("]") for ln in out.splitlines() if "(NEEDED)" in ln]
    paths = " ".join(ln for ln in out.splitlines() if "RPATH" in ln or "RUNPATH" in ln)
    return needed, paths


def test_onnx_runtime_beside_pytorch_is_served_by_torchs_copy(torch_py):
    from helpers.framework_envs import target_with_deps

    ort = target_with_deps(*ORT_GPU)
    env = {"PYTHONPATH": str(ort)}
    provider = ort / "onnxruntime" / "capi" / "libonnxruntime_providers_cuda.so"
    needed, paths = _readelf(provider)
    truth = run_py(torch_py, ORT_TRUTH.replace("sys.argv[-1]", "'torch-first'"), env)
    assert "CUDAExecutionProvider" in truth["providers"]
    assert "alone_error" in truth  # its own search (LD_LIBRARY_PATH, cache, default dirs) finds no libcudnn.so.9
    assert truth["after_torch"] == truth["torch"] and main_of(truth["torch"])  # torch's copy is reused, nothing new mapped
    rep = predict(torch_py, env)
    row = next(f for f in rep["frameworks"] if f["name"] == "ONNX Runtime")
    assert not [n for n in needed if n.startswith("libcudnn")] and not paths  # 1.28+: no cuDNN in NEEDED, no RPATH/RUNPATH
    assert row["loading"].startswith("libonnxruntime_providers_cuda.so NEEDs no cuDNN: it dlopens libcudnn.so.9")
    f = next(f for f in rep["findings"] if f["id"] == "cudnn-library-not-found" and "ONNX Runtime" in f["title"])
    assert f["severity"] == "warning" and "serves it when PyTorch is imported first" in f["title"]
    assert main_of(truth["torch"])[0] in f["detail"] and "GPU code will not run" not in f["detail"]
    assert [x["id"] for x in f["fixes"]] == ["import-order"]
    # the TensorRT provider needs TensorRT itself (not installed): not blamed on cuDNN
    trt = ort / "onnxruntime" / "capi" / "libonnxruntime_providers_tensorrt.so"
    trt_needed, _ = _readelf(trt)
    assert "libcudnn.so.9" in trt_needed and any(n.startswith("libnvinfer") for n in trt_needed)
    c = next(c for c in rep["consumers"] if c["path"] == str(trt))
    assert any(n.startswith("libnvinfer") for n in c["blocked_by"])
    assert not [f for f in rep["findings"] if "tensorrt" in f["detail"].lower() and f["id"].startswith("cudnn-")]


def test_a_cpu_onnxruntime_installed_over_the_gpu_one_is_a_finding(torch_py, tmp_path):
    from helpers.framework_envs import target_with_deps

    gpu, cpu = target_with_deps(*ORT_GPU), target_with_deps(*ORT_CPU)
    both = merged_site(tmp_path / "site", gpu, cpu)  # pip install onnxruntime-gpu, then onnxruntime: file for file
    assert (both / "onnxruntime" / "capi" / "libonnxruntime_providers_cuda.so").exists()  # left behind
    truth = run_py(torch_py, ORT_TRUTH, {"PYTHONPATH": str(both)})
    assert truth["version"] == ORT_CPU[1] and "CUDAExecutionProvider" not in truth["providers"]
    rep = predict(torch_py, {"PYTHONPATH": str(both)})
    f = finding(rep, "onnxruntime-cpu-over-gpu")
    assert f is not None and f["severity"] == "error" and f"onnxruntime {ORT_CPU[1]}" in f["title"]
    assert f"onnxruntime-gpu {ORT_GPU[1]}" in f["title"] and [x["id"] for x in f["fixes"]] == ["install-cudnn-build"]
    row = next(r for r in rep["frameworks"] if r["name"] == "ONNX Runtime")
    assert (row["distribution"], row["version"], row["verdict"]) == ("onnxruntime", ORT_CPU[1], "not-applicable")
    # the GPU wheel alone: no such finding, and its CUDA provider is there
    alone = run_py(torch_py, ORT_TRUTH, {"PYTHONPATH": str(gpu)})
    assert "CUDAExecutionProvider" in alone["providers"]
    assert finding(predict(torch_py, {"PYTHONPATH": str(gpu)}), "onnxruntime-cpu-over-gpu") is None


# ----------------------------------------------------------------------------- cuda-pathfinder

PATHFINDER = ("cuda-pathfinder", "1.9.1")

PF_TRUTH = r"""
import json, os, sys
pf_site = sys.argv[1]
if len(sys.argv) > 2 and sys.argv[2] == 'torch-first':
    import torch
    try:
        torch.backends.cudnn.version()
    except Exception:
        pass
maps = sorted({l.split()[-1] for l in open('/proc/self/maps') if l.split()[-1].startswith('/')})
from cudnn_magic.probes.frameworks.pathfinder import pathfinder_pick
from cudnn_magic.probes.installed import read_ldcache
res, note = pathfinder_pick(pf_site, 'standin', environ=dict(os.environ), ldcache=read_ldcache()[0], mapped=maps)
out = {'predicted': res.picked if res else None, 'why': res.reason if res else note}
from cuda.pathfinder import load_nvidia_dynamic_lib
try:
    r = load_nvidia_dynamic_lib('cudnn')
    out['real'] = os.path.realpath(r.abs_path); out['found_via'] = r.found_via
except Exception as e:
    out['real'] = None; out['error'] = f'{type(e).__name__}: {e}'
print(json.dumps(out))
"""


def _lib_dir(tmp: Path, name: str, sub: str, src: Path) -> Path:
    """``tmp/name/sub`` holding hard links of ``src``'s cuDNN files (an install root)."""
    d = tmp / name / sub
    d.mkdir(parents=True)
    for f in src.iterdir():
        if f.name.startswith("libcudnn"):
            os.link(f, d / f.name)
    return tmp / name


@pytest.mark.parametrize("case", ["wheel", "wheel-over-ld-library-path", "already-loaded", "system-search", "cudnn-path",
                                  "cuda-home", "conda-over-ld-library-path", "no-cublaslt"])
def test_cuda_pathfinder_finds_what_our_model_says(torch_py, tmp_path, case):
    """The real cuda-pathfinder 1.9.1's load_nvidia_dynamic_lib("cudnn") in a child process, with
    real cuDNN wheels, against cudnn-magic's model of it computed in the same process just before."""
    import sys as _sys

    pf = target(*PATHFINDER)
    old_lib = target(*CU13_OLD) / "nvidia" / "cudnn" / "lib"
    cu13 = site_of(torch_py) / "nvidia" / "cu13" / "lib"  # cuBLASLt, which cuda-pathfinder loads first
    py, extra, env = torch_py, [], {"PYTHONPATH": str(pf)}
    if case == "wheel-over-ld-library-path":
        env["LD_LIBRARY_PATH"] = str(old_lib)
    elif case == "already-loaded":
        env["PYTHONPATH"] = f"{target(*CU13_OLD)}:{pf}"  # torch preloads 9.12, then the wheel is not loaded again
        extra = ["torch-first"]
    elif case != "wheel":
        py = Path(_sys.executable)  # an environment with no nvidia/cudnn wheel in its site-packages
        env["LD_LIBRARY_PATH"] = str(cu13)
        if case == "system-search":
            env["LD_LIBRARY_PATH"] += f":{old_lib}"
        elif case == "cudnn-path":
            env["CUDNN_PATH"] = str(_lib_dir(tmp_path, "cudnn-root", "lib", old_lib))
        elif case == "cuda-home":
            env["CUDA_HOME"] = str(_lib_dir(tmp_path, "cuda-root", "lib64", old_lib))
        elif case == "conda-over-ld-library-path":
            env["CONDA_PREFIX"] = str(_lib_dir(tmp_path, "conda-root", "lib", site_of(torch_py) / "nvidia" / "cudnn" / "lib"))
            env["LD_LIBRARY_PATH"] += f":{old_lib}"
        elif case == "no-cublaslt":
            env["LD_LIBRARY_PATH"] = str(old_lib)
    base = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LD_LIBRARY_PATH", "CONDA_PREFIX", "CUDA_HOME",
                                                                "CUDA_PATH", "CUDNN_PATH")}
    p = subprocess.run([str(py), "-c", PF_TRUTH, str(pf), *extra], env={**base, **env}, capture_output=True, text=True,
                       timeout=300, cwd="/")
    assert p.returncode == 0, p.stderr[-3000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out["predicted"] == out["real"], out
    if out["real"] is None:
        assert case == "no-cublaslt" and "cublasLt" in out["error"] and "cublasLt" in out["why"]
    else:
        assert out["why"].split(":", 1)[0] == out["found_via"], out  # our step name is cuda-pathfinder's found_via


def test_a_consumer_that_loads_cudnn_through_cuda_pathfinder_is_resolved_its_way(torch_py, tmp_path):
    """A stand-in consumer distribution (a package whose module calls
    load_nvidia_dynamic_lib("cudnn"), requiring cuda-pathfinder) beside the real cuda-pathfinder
    1.9.1: with an older cuDNN first on LD_LIBRARY_PATH, glibc's order would pick it, cuda-pathfinder
    picks the wheel; the report follows cuda-pathfinder, as the real call does."""
    site = merged_site(tmp_path / "site", target(*PATHFINDER))
    pkg = site / "standin_pathfinder_consumer"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from cuda.pathfinder import load_nvidia_dynamic_lib\n\n"
                                     "def cudnn():\n    return load_nvidia_dynamic_lib(\"cudnn\")\n")
    info = site / "standin_pathfinder_consumer-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: standin-pathfinder-consumer\nVersion: 1.0\n"
                                   "Requires-Dist: cuda-pathfinder>=1.7\n\n")
    (info / "RECORD").write_text("standin_pathfinder_consumer/__init__.py,,\nstandin_pathfinder_consumer-1.0.dist-info/RECORD,,\n")
    old_lib = target(*CU13_OLD) / "nvidia" / "cudnn" / "lib"
    env = {"PYTHONPATH": str(site), "LD_LIBRARY_PATH": str(old_lib)}
    real = run_py(torch_py, "import json, os, standin_pathfinder_consumer as c; r = c.cudnn(); "
                            "print(json.dumps([os.path.realpath(r.abs_path), r.found_via]))", env)
    rep = predict(torch_py, env)
    c = next(c for c in rep["consumers"] if c["framework"] == "standin-pathfinder-consumer")
    assert [c["picked"], c["why"].split(":", 1)[0]] == real, (c, real)
    assert real[1] == "site-packages" and c["picked"] != str(old_lib / "libcudnn.so.9")
    assert "load_nvidia_dynamic_lib" in c["how"]
    row = next(f for f in rep["frameworks"] if f["name"] == "standin-pathfinder-consumer")
    assert row["verdict"] == "ok" and "cuda-pathfinder" in row["loading"]


def test_byte_copies_of_a_wheels_files_are_owned_by_one_rule(torch_py, tmp_path):
    """The 9.24 wheel's small shim and its 128 MB graph library copied byte for byte into
    CUDA_HOME/lib64: both are "a copy" of the wheel's file (one rule, by name, size and sha256),
    not one a copy and the other "system"."""
    import shutil as _shutil

    venv_lib = site_of(torch_py) / "nvidia" / "cudnn" / "lib"
    home = tmp_path / "cuda"
    (home / "lib64").mkdir(parents=True)
    for n in ("libcudnn.so.9", "libcudnn_graph.so.9"):
        _shutil.copyfile(venv_lib / n, home / "lib64" / n)  # new inodes: copies, not links
    rep = predict(torch_py, {"CUDA_HOME": str(home)})
    rows = {c["name"]: c for c in rep["cudnn_installed"] if c["path"].startswith(str(home))}
    assert set(rows) == {"libcudnn.so.9", "libcudnn_graph.so.9"}, rows
    owners = {c["owner"] for c in rows.values()}
    assert owners == {"pip: nvidia-cudnn-cu13 9.24.0.43"}, rows
    assert all("a copy of that wheel's file" in c["owner_evidence"] for c in rows.values())
    assert {c["version"] for c in rows.values()} == {"9.24.0"}


# ----------------------------------------------------------------------------- CTranslate2 beside PyTorch

CT2_TRUTH = r"""
import ctypes, glob, json, os, sys
vend = glob.glob(os.path.join(sys.argv[1], 'ctranslate2.libs', 'libcudnn-*.so.*'))[0]
out = {'vendored': vend}
if sys.argv[2] == 'torch-first':
    import torch
    out['torch'] = torch.backends.cudnn.version()
    out['graph_before'] = sorted({l.split()[-1] for l in open('/proc/self/maps') if 'libcudnn_graph' in l})
    lib = ctypes.CDLL(vend); lib.cudnnGetVersion.restype = ctypes.c_size_t
    out['ct2_runs'] = lib.cudnnGetVersion()
    out['graph_after'] = sorted({l.split()[-1] for l in open('/proc/self/maps') if 'libcudnn_graph' in l})
    import cudnn_magic
    r = cudnn_magic.check()
    c = next(c for c in r.consumers if c.framework == 'CTranslate2')
    out['subs'] = {s.soname: s.path for s in c.sublibraries}
    print(json.dumps(out))
else:
    print(json.dumps(out), flush=True)
    lib = ctypes.CDLL(vend); lib.cudnnGetVersion.restype = ctypes.c_size_t
    lib.cudnnGetVersion()  # aborts the process: no graph library for its shim
"""


def test_ctranslate2_4_6_beside_pytorch_runs_on_torchs_graph_only_when_torch_comes_first(torch_py):
    ct2 = target("ctranslate2", "4.6.0")
    env = {"PYTHONPATH": str(ct2)}
    base = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LD_LIBRARY_PATH")}
    alone = subprocess.run([str(torch_py), "-c", CT2_TRUTH, str(ct2), "alone"], env={**base, **env},
                           capture_output=True, text=True, timeout=120)
    assert alone.returncode != 0 and "Unable to load any of {libcudnn_graph.so.9.1.0" in alone.stderr, alone.stderr[-800:]
    first = run_py(torch_py, CT2_TRUTH.replace("sys.argv[1]", repr(str(ct2))).replace("sys.argv[2]", "'torch-first'"), env)
    assert first["ct2_runs"] == first["torch"] == 92400 and first["graph_after"] == first["graph_before"]
    rep = predict(torch_py, env)
    sub = finding(rep, "cudnn-sublibrary-load-failed", "CTranslate2 4.6.0")
    assert sub is not None and "libcudnn_graph.so.9" in sub["title"]  # alone it aborts: said before it happens
    order = finding(rep, "cudnn-import-order")
    assert order is not None and "PyTorch" in order["title"] and "CTranslate2" in order["title"]
    assert next(x["id"] for x in order["fixes"]) == "import-order"
    # in the process where torch came first, its graph library serves CTranslate2's shim
    assert first["subs"]["libcudnn_graph.so.9"] == first["graph_before"][0]


# ----------------------------------------------------------------------------- TensorFlow's own loader

TF_TRUTH = r"""
import ctypes, json, sys
fw = ctypes.CDLL(sys.argv[1])
get = getattr(fw, "_ZN3tsl8internal15CachedDsoLoader17GetCudnnDsoHandleEv")  # absl::StatusOr<void*>, returned by pointer
get.restype, get.argtypes = None, [ctypes.c_void_p]
buf = ctypes.create_string_buffer(64)
get(buf)
out = {"handle": int.from_bytes(buf.raw[8:16], "little") != 0,
       "maps": sorted({l.split()[-1] for l in open('/proc/self/maps') if 'libcudnn' in l and l.split()[-1].startswith('/')})}
shim = next((p for p in out["maps"] if p.split('/')[-1].startswith('libcudnn.so.9')), None)
if shim:
    lib = ctypes.CDLL(shim); lib.cudnnGetVersion.restype = ctypes.c_size_t
    out["version"] = lib.cudnnGetVersion()
    out["maps"] = sorted({l.split()[-1] for l in open('/proc/self/maps') if 'libcudnn' in l and l.split()[-1].startswith('/')})
import cudnn_magic
r = cudnn_magic.check()
out["findings"] = [[f.id, f.title] for f in r.findings]
print(json.dumps(out))
"""

JIT_OLD = ("nvidia-cudnn-jit-cu12", "9.12.0.46")


def _tf_truth(site: Path, env: dict[str, str]) -> dict:
    import sys as _sys

    return run_py(Path(_sys.executable), TF_TRUTH.replace("sys.argv[1]", repr(str(site / "tensorflow" / "libtensorflow_framework.so.2"))),
                  env)


@pytest.mark.parametrize("case", ["its-own-wheel", "ld-library-path", "soname-link-folder"])
def test_tensorflows_own_loader_against_the_report(tmp_path, case):
    """TensorFlow's own cuDNN loader (tsl's CachedDsoLoader::GetCudnnDsoHandle() in the real
    libtensorflow_framework.so.2, called through ctypes: it dlopens libcudnn.so.9 from inside the
    library, so its RUNPATH applies) against what cudnn-magic predicted for TensorFlow."""
    import sys as _sys

    from helpers.framework_envs import tf_site

    site = tf_site()
    wheel_lib = site / "nvidia" / "cudnn" / "lib"
    env = {"PYTHONPATH": str(site)}
    if case == "ld-library-path":
        env["LD_LIBRARY_PATH"] = str(target(*JIT_OLD) / "nvidia" / "cudnn_jit" / "lib")
    elif case == "soname-link-folder":
        # a system-style folder on LD_LIBRARY_PATH: a 9.12 shim under its full name, the rest links to 9.28's files
        links = tmp_path / "cudnn-links"
        links.mkdir()
        os.link(target(*JIT_OLD) / "nvidia" / "cudnn_jit" / "lib" / "libcudnn.so.9", links / "libcudnn.so.9.12.0")
        (links / "libcudnn.so.9").symlink_to("libcudnn.so.9.12.0")
        for f in wheel_lib.iterdir():
            if f.name != "libcudnn.so.9":
                (links / f.name).symlink_to(f)
        env["LD_LIBRARY_PATH"] = str(links)
    truth = _tf_truth(site, env)
    assert truth["handle"], truth
    shim = next(p for p in truth["maps"] if os.path.basename(p).startswith("libcudnn.so.9"))
    base = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LD_LIBRARY_PATH")}
    p = subprocess.run([_sys.executable, "-m", "cudnn_magic", "check", "--json"], env={**base, **env},
                       capture_output=True, text=True, timeout=600, cwd="/")
    rep = json.loads(p.stdout)
    row = next(f for f in rep["frameworks"] if f["name"] == "TensorFlow")
    assert row["cudnn_used_path"] == shim, (row, truth)
    v = truth["version"]
    assert row["cudnn_used"] == f"{v // 10000}.{v // 100 % 100}.{v % 100}", (row, truth)
    if case == "its-own-wheel":
        assert shim.startswith(str(wheel_lib)) and row["verdict"] == "ok"
    elif case == "ld-library-path":
        assert finding(rep, "cudnn-shadowed") is not None and v == 91200
    else:  # the graph library answers: 9.28, though the shim is 9.12's; the folder mixes releases
        assert v == 92800 and row["verdict"] == "ok"
        mixed = finding(rep, "cudnn-sublibrary-load-failed", f"Mixed cuDNN versions in {tmp_path / 'cudnn-links'}")
        assert mixed is not None and "libcudnn.so.9.12.0 9.12.0" in mixed["detail"], rep["findings"]
        assert len({os.path.dirname(m) for m in truth["maps"]}) == 2  # shim and graph from two real folders
        assert any(i == "cudnn-multiple-copies-loaded" for i, _ in truth["findings"]), truth["findings"]


# ----------------------------------------------------------------------------- attacks that broke it once

def _preload_case(tmp_path: Path, case: str) -> tuple[dict[str, str], str]:
    """(environment, what torch really runs: "new" its own 9.24, "old" 9.12) for each way torch's
    preload can be cancelled or changed."""
    old = target(*CU13_OLD)
    d = tmp_path / case
    if case == "broken-cublas-link":  # an earlier table row that cannot load ends torch's whole preload
        (d / "nvidia" / "cublas" / "lib").mkdir(parents=True)
        (d / "nvidia" / "cublas" / "lib" / "libcublasLt.so.13").symlink_to("/nonexistent/libcublasLt.so.13")
        return {"PYTHONPATH": f"{d}:{old}"}, "new"
    if case == "lfs-pointer-cudnn":  # the cuDNN file itself cannot load: nothing is preloaded
        (d / "nvidia" / "cudnn" / "lib").mkdir(parents=True)
        (d / "nvidia" / "cudnn" / "lib" / "libcudnn.so.9").write_text(
            "version https://git-lfs.github.com/spec/v1\noid sha256:0\nsize 125136\n")
        return {"PYTHONPATH": str(d)}, "new"
    if case == "torch-use-rtld-global":
        return {"PYTHONPATH": str(old), "TORCH_USE_RTLD_GLOBAL": "1"}, "new"
    if case == "graph-preloaded":  # a 9.12 graph library already mapped: torch's own shim reuses it
        return {"LD_PRELOAD": str(old / "nvidia" / "cudnn" / "lib" / "libcudnn_graph.so.9")}, "old"
    if case == "linked-shim-beside-old-graph":  # $ORIGIN is the link's folder, not its target's
        lib = d / "nvidia" / "cudnn" / "lib"
        lib.mkdir(parents=True)
        for f in (site_of(torch_env()) / "nvidia" / "cudnn" / "lib").iterdir():
            if f.name == "libcudnn_graph.so.9":
                os.link(old / "nvidia" / "cudnn" / "lib" / f.name, lib / f.name)
            else:
                (lib / f.name).symlink_to(f)
        return {"PYTHONPATH": str(d)}, "old"
    raise AssertionError(case)


@pytest.mark.parametrize("case", ["broken-cublas-link", "lfs-pointer-cudnn", "torch-use-rtld-global", "graph-preloaded",
                                  "linked-shim-beside-old-graph"])
def test_what_torch_really_runs_when_its_preload_is_cancelled_or_served(torch_py, tmp_path, case):
    env, want = _preload_case(tmp_path, case)
    truth = run_py(torch_py, TRUTH, env)
    expect = {"new": "9.24.0", "old": "9.12.0"}[want]
    if want == "new":
        assert truth["version"] == 92400, truth
    else:
        assert "(9, 12, 0)" in truth.get("version_error", ""), truth
    row = torch_row(predict(torch_py, env))
    assert row["cudnn_used"] == expect, (row, truth)
    assert row["verdict"] == ("ok" if want == "new" else "mismatch")


def test_a_lone_linked_shim_is_the_abort_it_is_and_the_check_never_aborts(torch_py, tmp_path):
    """A folder holding only a link to the wheel's shim: the shim looks for its graph library in
    the link's folder (none): torch aborts on its first cuDNN call; the report says so; and
    cudnn_magic.check() in that process, after import torch, does not make the call itself."""
    d = tmp_path / "lone" / "nvidia" / "cudnn" / "lib"
    d.mkdir(parents=True)
    (d / "libcudnn.so.9").symlink_to(site_of(torch_py) / "nvidia" / "cudnn" / "lib" / "libcudnn.so.9")
    env = {"PYTHONPATH": str(tmp_path / "lone")}
    base = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LD_LIBRARY_PATH")}
    p = subprocess.run([str(torch_py), "-c", "import torch; torch.backends.cudnn.version()"], env={**base, **env},
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == -6 and "Cannot load symbol cudnnGetVersion" in p.stderr  # the real thing: an abort
    rep = predict(torch_py, env)
    subs = {s["soname"]: s for c in rep["consumers"] if c["framework"] == "PyTorch" for s in c["sublibraries"]}
    assert subs["libcudnn_graph.so.9"]["path"] is None, subs["libcudnn_graph.so.9"]
    q = subprocess.run([str(torch_py), "-c", "import torch, cudnn_magic; r = cudnn_magic.check(); print('returned')"],
                       env={**base, **env}, capture_output=True, text=True, timeout=300)
    assert q.returncode == 0 and "returned" in q.stdout, q.stderr[-800:]


@pytest.mark.parametrize("case", ["trailing-colon", "semicolon", "hwcaps-subdir", "dollar-lib"])
def test_ld_library_path_as_glibc_reads_it(tmp_path, case):
    """TensorFlow's own loader with LD_LIBRARY_PATH forms glibc understands: an empty entry (the
    working directory), ';', the glibc-hwcaps subdirectories, $LIB: where the 9.12 copy sits."""
    import sys as _sys

    from cudnn_magic.probes.loader import rtld_facts
    from helpers.framework_envs import tf_site

    site = tf_site()
    jit = target(*JIT_OLD) / "nvidia" / "cudnn_jit" / "lib"
    cwd = tmp_path
    if case == "trailing-colon":
        d, value = tmp_path, "/opt/nothing:"
    elif case == "semicolon":
        d = tmp_path / "semi"
        value = f"/opt/nothing;{d}"
    elif case == "hwcaps-subdir":
        hw = next((s for s in rtld_facts().subdirs if s.startswith("glibc-hwcaps/")), None)
        if hw is None:
            pytest.skip("this glibc searches no glibc-hwcaps subdirectories")
        d = tmp_path / "hw" / hw
        value = str(tmp_path / "hw")
    else:
        d = tmp_path / "L" / rtld_facts().dst_lib
        value = str(tmp_path / "L") + "/$LIB"
    d.mkdir(parents=True, exist_ok=True)
    for f in jit.iterdir():
        os.link(f, d / f.name)
    env = {"PYTHONPATH": str(site), "LD_LIBRARY_PATH": value}
    base = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LD_LIBRARY_PATH")}
    code = TF_TRUTH.replace("sys.argv[1]", repr(str(site / "tensorflow" / "libtensorflow_framework.so.2")))
    t = subprocess.run([_sys.executable, "-c", code], env={**base, **env}, capture_output=True, text=True, timeout=300,
                       cwd=str(cwd))
    truth = json.loads(t.stdout.strip().splitlines()[-1])
    assert truth["version"] == 91200, truth  # the loader took the 9.12 copy
    p = subprocess.run([_sys.executable, "-m", "cudnn_magic", "check", "--json"], env={**base, **env},
                       capture_output=True, text=True, timeout=600, cwd=str(cwd))
    row = next(f for f in json.loads(p.stdout)["frameworks"] if f["name"] == "TensorFlow")
    shim = next(m for m in truth["maps"] if os.path.basename(m).startswith("libcudnn.so.9"))
    assert (row["cudnn_used"], row["cudnn_used_path"]) == ("9.12.0", shim), row


def test_the_console_script_sees_the_working_directory_as_python_does(torch_py, tmp_path):
    """``cudnn-magic`` (a console script: its sys.path[0] is its bin/ folder) run in a project folder
    holding ./nvidia/cudnn/lib: python run there preloads that copy, so the report says so too."""
    proj = merged_site(tmp_path / "proj", target(*CU13_OLD))
    script = tmp_path / "bin" / "cudnn-magic"
    script.parent.mkdir()
    script.write_text(f"#!{torch_py}\nimport sys\nfrom cudnn_magic.cli.main import main\nsys.exit(main())\n")
    script.chmod(0o755)
    base = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LD_LIBRARY_PATH")}
    t = subprocess.run([str(torch_py), "-c", "import torch\ntry:\n    torch.backends.cudnn.version()\nexcept Exception as e:\n"
                        "    print(e)"], env=base, capture_output=True, text=True, timeout=300, cwd=str(proj))
    assert "(9, 12, 0)" in t.stdout, t.stdout + t.stderr[-500:]
    p = subprocess.run([str(script), "check", "--json"], env=base, capture_output=True, text=True, timeout=600, cwd=str(proj))
    assert torch_row(json.loads(p.stdout))["cudnn_used"] == "9.12.0"


def test_a_graph_library_named_for_another_release_is_judged_by_its_content(torch_py, tmp_path):
    """9.12 files under the names of 9.24 (libcudnn_graph.so.9.24.0 and its soname link): the
    version constant in the file wins over the name."""
    old = target(*CU13_OLD) / "nvidia" / "cudnn" / "lib"
    lib = tmp_path / "named" / "nvidia" / "cudnn" / "lib"
    lib.mkdir(parents=True)
    for f in old.iterdir():
        os.link(f, lib / (f.name + ".24.0"))
        (lib / f.name).symlink_to(f.name + ".24.0")
    env = {"PYTHONPATH": str(tmp_path / "named")}
    truth = run_py(torch_py, TRUTH, env)
    assert "(9, 12, 0)" in truth["version_error"], truth
    assert torch_row(predict(torch_py, env))["cudnn_used"] == "9.12.0"


def test_the_shim_asks_for_its_own_full_version_name_first(torch_py, tmp_path):
    """The 9.12 shim dlopens libcudnn_graph.so.9.12.0, then .9.12, then the soname: a file by that
    longer name on LD_LIBRARY_PATH (here 9.24's graph library renamed) wins over the soname file in
    the shim's own folder, and it is what torch runs."""
    old = target(*CU13_OLD)
    d = tmp_path / "longer"
    d.mkdir()
    os.link(site_of(torch_py) / "nvidia" / "cudnn" / "lib" / "libcudnn_graph.so.9", d / "libcudnn_graph.so.9.12.0")
    env = {"PYTHONPATH": str(old), "LD_LIBRARY_PATH": str(d)}
    truth = run_py(torch_py, TRUTH, env)
    assert truth["version"] == 92400 and str(d / "libcudnn_graph.so.9.12.0") in truth["after_version"], truth
    rep = predict(torch_py, env)
    assert torch_row(rep)["cudnn_used"] == "9.24.0"
    subs = {s["soname"]: s for c in rep["consumers"] if c["framework"] == "PyTorch" for s in c["sublibraries"]}
    assert subs["libcudnn_graph.so.9"]["path"] == str(d / "libcudnn_graph.so.9.12.0")
    assert "as libcudnn_graph.so.9.12.0" in subs["libcudnn_graph.so.9"]["why"]
