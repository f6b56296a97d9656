"""Fixes in isolation: the cuDNN requirement solver over docs/facts.md's frameworks and pins, every
fix's preview, kernelspec edits (atomic, backed up, undone byte-for-byte, only the running
kernel's), pip into a temporary venv from a local wheel (no network), and the buttons clicked."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import threading
import time
from argparse import Namespace
from pathlib import Path

import pytest

from cudnn_magic import fixes
from cudnn_magic.model import Fix, FrameworkBuild, LibraryCopy, Report
from helpers.builders import metadata_wheel

# --------------------------------------------------------------------------- frameworks (docs/facts.md)

TF221 = FrameworkBuild("TensorFlow", "tensorflow", "2.21.0", cudnn_compiled="9.3", cuda_compiled="12.5.1",
                       checker="tensorflow", pins=('nvidia-cudnn-cu12<10.0,>=9.3.0.75; extra == "and-cuda"',))
TF215 = FrameworkBuild("TensorFlow", "tensorflow", "2.15.0", cudnn_compiled="8.9", cuda_compiled="12.2",
                       checker="tensorflow", pins=('nvidia-cudnn-cu12==8.9.4.25; extra == "and-cuda"',))
TF215_NOPIN = FrameworkBuild("TensorFlow", "tensorflow", "2.15.0", cudnn_compiled="8.9", cuda_compiled="12.2",
                             checker="tensorflow")
TORCH291 = FrameworkBuild("PyTorch", "torch", "2.9.1", cudnn_compiled="9.10.2", cuda_compiled="12.8", checker="pytorch",
                          pins=('nvidia-cudnn-cu12==9.10.2.21; platform_system == "Linux" and platform_machine == "x86_64"',))
TORCH2141 = FrameworkBuild("PyTorch", "torch", "2.14.1", cudnn_compiled="9.24.0", cuda_compiled="13.0",
                           checker="pytorch", pins=('nvidia-cudnn-cu13==9.24.0.43; platform_system == "Linux"',))
JAX = FrameworkBuild("JAX", "jax-cuda12-plugin", "0.12.0", cudnn_compiled="9.8.0", cuda_compiled="12.8", checker="jax")
CPU_TORCH = FrameworkBuild("PyTorch", "torch", "2.9.1+cpu", checker="pytorch", verdict="not-applicable")
TF_LEGACY = FrameworkBuild("TensorFlow", "tensorflow", "2.1.0", cudnn_compiled="7.6", cuda_compiled="10.1",
                           checker="tensorflow-legacy")


@pytest.mark.parametrize("frameworks, requirement, accepts, refuses", [
    ([TF221], "nvidia-cudnn-cu12>=9.3.0.75,<10", ["9.3.0.75", "9.27.0.42"], ["9.3.0.74", "10.0.0", "8.9.7.29"]),
    ([TORCH291], "nvidia-cudnn-cu12==9.10.2.21", ["9.10.2.21"], ["9.10.2.22", "9.11.0"]),
    ([TF221, TORCH291], "nvidia-cudnn-cu12==9.10.2.21", ["9.10.2.21"], ["9.3.0.75"]),
    ([TORCH291, TF221, CPU_TORCH], "nvidia-cudnn-cu12==9.10.2.21", ["9.10.2.21"], []),
    ([JAX, TF221], None, ["9.8.0.87", "9.10.1.4", "9.27.0.42"], ["9.7.1", "9.10.0.56", "10.0"]),
    ([JAX], None, ["9.8.0.87"], ["9.10.0.56"]),
    ([TF215_NOPIN], "nvidia-cudnn-cu12>=8.9,<9", ["8.9.7.29"], ["9.1.0", "8.8.1"]),
    ([TF_LEGACY], "nvidia-cudnn-cu10>=7.6,<8", ["7.6.5"], ["7.5"]),
])
def test_solver_finds_the_one_requirement(frameworks, requirement, accepts, refuses):
    sol = fixes.solve_cudnn(frameworks)
    assert sol.conflicts == ()
    assert sol.requirement is not None
    if requirement is not None:
        assert sol.requirement == requirement
    from packaging.requirements import Requirement

    req = Requirement(sol.requirement)
    for v in accepts:
        assert req.specifier.contains(v), (sol.requirement, v)
    for v in refuses:
        assert not req.specifier.contains(v), (sol.requirement, v)


def test_solver_jax_and_tensorflow_is_at_least_jax_build():
    sol = fixes.solve_cudnn([JAX, TF221])
    assert sol.requirement.startswith("nvidia-cudnn-cu12>=9.8,") and sol.requirement.endswith("<10")
    assert "!=9.10.0.*" in sol.requirement  # JAX refuses 9.10.0 (jax_plugins/cuda/__init__.py)


@pytest.mark.parametrize("frameworks, names", [
    ([TORCH2141, TF221], ("PyTorch 2.14.1", "TensorFlow 2.21.0")),
    ([TF215, TORCH291], ("TensorFlow 2.15.0", "PyTorch 2.9.1")),
    ([TF215_NOPIN, TORCH291], ("TensorFlow 2.15.0", "PyTorch 2.9.1")),
])
def test_solver_names_conflicting_frameworks_and_offers_choices(frameworks, names):
    sol = fixes.solve_cudnn(frameworks)
    assert sol.requirement is None
    assert len(sol.conflicts) == 1 and all(n in sol.conflicts[0] for n in names)
    assert [c[0] for c in sol.choices] == list(names)
    p = fixes.plan("install-matching-cudnn", Report(frameworks=tuple(frameworks)))
    assert not p.applicable and all(n in p.reason for n in names)
    assert len(p.choices) == 2
    # Each choice is a plan of its own, for that framework only.
    _label, ctx = p.choices[1]
    one = fixes.plan("install-matching-cudnn", Report(frameworks=tuple(frameworks)), context=ctx)
    assert one.applicable, one.reason
    assert one.steps[0].argv[-1] == sol.choices[1][1]
    assert one.steps[0].argv[:4] == (sys.executable, "-m", "pip", "install")


def test_solver_ignores_pins_for_other_platforms_and_non_cudnn_requirements():
    fw = FrameworkBuild("PyTorch", "torch", "9.9", cudnn_compiled="9.10.2", cuda_compiled="12.8", checker="pytorch",
                        pins=('nvidia-cudnn-cu12==9.1.0.70; platform_system == "Windows"', "numpy>=1",
                              "nvidia-cudnn-cu12==9.10.2.21"))
    assert fixes.solve_cudnn([fw]).requirement == "nvidia-cudnn-cu12==9.10.2.21"


def test_nothing_needs_cudnn():
    p = fixes.plan("install-matching-cudnn", Report(frameworks=(CPU_TORCH,)))
    assert not p.applicable and "no installed framework needs cuDNN" in p.reason


def test_no_pip_plan_for_a_cudnn_wheel_pypi_does_not_have():
    # TensorFlow 2.1 was built with CUDA 10.1: the rule's requirement names nvidia-cudnn-cu10, which
    # PyPI does not have (`pip index versions nvidia-cudnn-cu10`: no matching distribution; the
    # cuDNN wheels start at nvidia-cudnn-cu11 8.5.0.96), so the plan is advice, not a pip run.
    p = fixes.plan("install-matching-cudnn", Report(frameworks=(TF_LEGACY,)))
    assert not p.applicable and not p.steps
    assert "PyPI has no nvidia-cudnn-cu10 wheel" in p.reason
    assert p.title == "Install nvidia-cudnn-cu10>=7.6,<8"


def test_unknown_fix_id_raises_keyerror_and_every_id_plans():
    with pytest.raises(KeyError):
        fixes.plan("rm-rf", Report())
    for fid in fixes.FIXES:
        p = fixes.plan(fid, Report(frameworks=(TF221, TORCH291)))
        assert p.fix_id == fid and p.title and p.text().startswith(fid)
        json.dumps(p.to_dict(), default=str)


# --------------------------------------------------------------------------- advice-only fixes


def test_advice_fixes_are_exact_and_not_applicable():
    r = Report(frameworks=(TORCH2141,))
    drv = fixes.plan("upgrade-driver", r)
    assert not drv.applicable and "580" in drv.action
    assert "x.contiguous()" in fixes.plan("make-contiguous", r).action
    sd = fixes.plan("same-device", r, context={"devices": ["cpu", "cuda:0", "cuda:0; rm -rf /"]})
    assert "torch.device('cuda:0')" in sd.action and "rm" not in sd.action
    io_plan = fixes.plan("import-order", Report(frameworks=(TF221, TORCH291)))
    assert io_plan.action.splitlines() == ["import torch", "import tensorflow"]


def test_reinstall_is_built_from_validated_owner_names():
    good = LibraryCopy("/x/nvidia/cudnn/lib/libcudnn.so.9", "libcudnn.so.9", "libcudnn.so.9",
                       owner="pip: nvidia-cudnn-cu12 9.10.2.21")
    p = fixes.plan("reinstall-cudnn", Report(cudnn_installed=(good,)))
    assert p.steps[0].argv == (sys.executable, "-m", "pip", "install", "--force-reinstall", "--no-deps",
                               "nvidia-cudnn-cu12==9.10.2.21")
    bad = LibraryCopy("/x/libcudnn.so.9", "libcudnn.so.9", "libcudnn.so.9", owner="pip: evil;touch${IFS}x 1.0")
    p = fixes.plan("reinstall-cudnn", Report(cudnn_installed=(bad,)))
    assert not p.steps[0].argv and "evil" not in p.action


def test_restart_outside_a_kernel_is_not_applicable():
    p = fixes.plan("restart-kernel", Report())
    assert not p.applicable and "not running in a Jupyter kernel" in p.reason
    assert fixes.apply(p).ok is False


# --------------------------------------------------------------------------- kernelspec edits


@pytest.fixture
def jupyter_home(tmp_path, monkeypatch):
    """Temporary JUPYTER_PATH (kernels in jp/kernels), JUPYTER_DATA_DIR, HOME and undo journal."""
    for k, sub in (("HOME", "home"), ("JUPYTER_DATA_DIR", "data"), ("JUPYTER_CONFIG_DIR", "config"),
                   ("JUPYTER_RUNTIME_DIR", "runtime"), ("IPYTHONDIR", "ipython"), ("CUDNN_MAGIC_STATE_DIR", "state")):
        (tmp_path / sub).mkdir()
        monkeypatch.setenv(k, str(tmp_path / sub))
    (tmp_path / "jp" / "kernels").mkdir(parents=True)
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jp"))
    monkeypatch.delenv("JUPYTER_PREFER_ENV_PATH", raising=False)
    return tmp_path


def _spec(root: Path, name: str, env: dict[str, str] | None = None) -> Path:
    d = root / "jp" / "kernels" / name
    d.mkdir(parents=True)
    spec = {"argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            "display_name": f"Test {name}", "language": "python", "metadata": {"debugger": True}}
    if env is not None:
        spec["env"] = env
    # Deliberately not the indent=1 layout fixes writes, so "byte-for-byte" means something.
    (d / "kernel.json").write_text(json.dumps(spec, indent=4) + "\n")
    return d / "kernel.json"


def _shadow_dirs(root: Path) -> tuple[Path, Path]:
    shadow, real = root / "shadow", root / "wheel"
    for d in (shadow, real):
        d.mkdir()
        (d / "libcudnn.so.9").write_bytes(b"\x7fELF stand-in file: only its existence matters to the loader search")
    return shadow, real


def _conn(root: Path, name: str) -> Path:
    cf = root / "runtime" / "kernel-test.json"
    cf.write_text(json.dumps({"shell_port": 1, "kernel_name": name}))
    return cf


def test_remove_shadowing_dir_edits_only_the_running_kernels_spec_and_undo_restores_bytes(jupyter_home):
    shadow, real = _shadow_dirs(jupyter_home)
    path = _spec(jupyter_home, "testk", {"LD_LIBRARY_PATH": f"{shadow}:{real}", "OTHER": "1"})
    other = _spec(jupyter_home, "other", {"LD_LIBRARY_PATH": f"{shadow}:{real}"})
    before, other_before = path.read_bytes(), other.read_bytes()
    ctx = {"connection_file": str(_conn(jupyter_home, "testk")), "environ": {"LD_LIBRARY_PATH": f"{shadow}:{real}"}}
    report = Report(cudnn_installed=(
        LibraryCopy(str(shadow / "libcudnn.so.9"), "libcudnn.so.9", "libcudnn.so.9", "9.1.0", source="LD_LIBRARY_PATH"),
        LibraryCopy(str(real / "libcudnn.so.9"), "libcudnn.so.9", "libcudnn.so.9", "9.27.0", source="LD_LIBRARY_PATH")))
    p = fixes.plan("remove-shadowing-dir", report, context=ctx)
    assert p.applicable, p.reason
    assert p.restart_required
    step = p.steps[0]
    assert step.kind == "kernelspec" and step.path == str(path)
    assert ("LD_LIBRARY_PATH", str(real)) in step.env
    assert any(line.startswith("-") and str(shadow) in line for line in step.diff)
    assert any(line.startswith("+") and f'"LD_LIBRARY_PATH": "{real}"' in line for line in step.diff)
    assert "kernel_name 'testk'" in step.description
    assert any("9.1.0" in n and "9.27.0" in n for n in p.notes)
    assert "Shut Down Kernel" in p.text()
    assert path.read_bytes() == before  # preview changes nothing

    res = fixes.apply(p)
    assert res.ok, res.error
    data = json.loads(path.read_text())
    assert data["env"] == {"LD_LIBRARY_PATH": str(real), "OTHER": "1"}
    assert data["argv"][0] == sys.executable and data["metadata"] == {"debugger": True}
    backups = list(path.parent.glob("kernel.json" + fixes.BACKUP_TAG + "*"))
    assert len(backups) == 1 and backups[0].read_bytes() == before
    assert other.read_bytes() == other_before
    assert "--undo remove-shadowing-dir" in res.undo_hint

    u = fixes.undo("remove-shadowing-dir")
    assert u.ok, u.error
    assert path.read_bytes() == before
    assert not list(path.parent.glob("kernel.json" + fixes.BACKUP_TAG + "*"))
    assert fixes.undo("remove-shadowing-dir").ok is False  # nothing left to undo


def test_remove_shadowing_dir_inherited_path_and_stale_preview(jupyter_home):
    shadow, real = _shadow_dirs(jupyter_home)
    path = _spec(jupyter_home, "testk")  # no env: LD_LIBRARY_PATH comes from the server
    ctx = {"connection_file": str(_conn(jupyter_home, "testk")),
           "environ": {"LD_LIBRARY_PATH": f"/usr/local/nothing:{shadow}:{real}"}}
    p = fixes.plan("remove-shadowing-dir", Report(), context=ctx)
    assert p.applicable, p.reason
    assert p.steps[0].env == (("LD_LIBRARY_PATH", f"/usr/local/nothing:{real}"),)
    path.write_text(path.read_text() + " ")  # someone edits it after the preview
    res = fixes.apply(p)
    assert not res.ok and "changed since the preview" in res.error


def test_remove_shadowing_dir_prepends_when_the_dir_holds_other_libraries(jupyter_home):
    shadow, real = _shadow_dirs(jupyter_home)
    (shadow / "libcudart.so.12").write_bytes(b"x")
    _spec(jupyter_home, "testk")
    ctx = {"connection_file": str(_conn(jupyter_home, "testk")), "environ": {"LD_LIBRARY_PATH": f"{shadow}:{real}"}}
    p = fixes.plan("remove-shadowing-dir", Report(), context=ctx)
    assert p.steps[0].env == (("LD_LIBRARY_PATH", f"{real}:{shadow}"),)


def test_a_kernel_name_that_names_no_kernelspec_is_one_sentence_with_the_known_ones():
    """``--kernel NAME``: the command line exits 2 with it, the magic raises ``UsageError`` (the
    magic only when the kernelspecs could be listed: a listing that failed is not the input)."""
    from cudnn_magic.fixes.environment import unknown_kernelspec

    assert unknown_kernelspec("py", {"py": "/k/py"}) is None
    assert unknown_kernelspec("nope", {"b": "/k/b", "a": "/k/a"}) == (
        "no kernelspec named 'nope' (known: a, b; `jupyter kernelspec list` shows them)")
    assert unknown_kernelspec("nope", {}) == "no kernelspec named 'nope' (known: none; `jupyter kernelspec list` shows them)"
    why = "jupyter_client is not installed, so kernelspecs cannot be found"
    assert unknown_kernelspec("py", why) == f"no kernelspec named 'py' ({why}; `jupyter kernelspec list` shows them)"


def test_remove_shadowing_dir_not_applicable_cases(jupyter_home, monkeypatch):
    shadow, real = _shadow_dirs(jupyter_home)
    env = {"LD_LIBRARY_PATH": f"{shadow}:{real}"}
    # Nothing shadows.
    p = fixes.plan("remove-shadowing-dir", Report(), context={"environ": {"LD_LIBRARY_PATH": str(real)}})
    assert not p.applicable and "shadows" in p.reason
    # No connection file, no kernelspec runs this interpreter -> cannot tell which spec.
    p = fixes.plan("remove-shadowing-dir", Report(), context={"environ": env, "python": "/nonexistent/python"})
    assert not p.applicable and "cannot tell which kernelspec" in p.reason
    # A read-only spec that comes before the user data dir: a user copy would be hidden.
    path = _spec(jupyter_home, "testk")
    real_writable = fixes._writable
    monkeypatch.setattr(fixes.environment, "_writable", lambda p: False if p == str(path) else real_writable(p))
    p = fixes.plan("remove-shadowing-dir", Report(),
                   context={"environ": env, "connection_file": str(_conn(jupyter_home, "testk"))})
    assert not p.applicable and "read-only" in p.reason and "hidden" in p.reason


def test_builtin_python3_spec_gets_a_user_level_copy_and_undo_removes_it(jupyter_home, monkeypatch):
    import jupyter_core.paths

    shadow, real = _shadow_dirs(jupyter_home)
    from jupyter_client.kernelspec import KernelSpecManager

    # Hide this venv's share/jupyter (it holds ipykernel's installed python3 spec) so the
    # built-in one from ipykernel's resources folder is what jupyter_client serves.
    monkeypatch.setattr(jupyter_core.paths, "ENV_JUPYTER_PATH", [])

    specs = KernelSpecManager().find_kernel_specs()
    if not fixes._is_bundled_native(specs.get("python3", "")):
        pytest.skip("a python3 kernelspec is installed on a kernels path; the built-in one is not used")
    ctx = {"environ": {"LD_LIBRARY_PATH": f"{shadow}:{real}"}, "connection_file": str(_conn(jupyter_home, "python3"))}
    p = fixes.plan("remove-shadowing-dir", Report(), context=ctx)
    assert p.applicable, p.reason
    target = jupyter_home / "data" / "kernels" / "python3" / "kernel.json"
    assert p.steps[0].path == str(target) and "user-level copy" in p.steps[0].description
    assert fixes.apply(p).ok
    assert json.loads(target.read_text())["env"]["LD_LIBRARY_PATH"] == str(real)
    assert KernelSpecManager().find_kernel_specs()["python3"] == str(target.parent)
    assert fixes.undo("remove-shadowing-dir").ok
    assert not target.parent.exists()


# --------------------------------------------------------------------------- memory growth


def test_allow_memory_growth(jupyter_home, monkeypatch):
    assert not fixes.plan("allow-memory-growth", Report()).applicable
    monkeypatch.delenv("TF_FORCE_GPU_ALLOW_GROWTH", raising=False)
    monkeypatch.delitem(sys.modules, "tensorflow", raising=False)
    path = _spec(jupyter_home, "testk")
    before = path.read_bytes()
    tfj = FrameworkBuild("TensorFlow", "tensorflow", "2.21.0", cudnn_compiled="9.3", verdict="ok")
    jx = FrameworkBuild("JAX", "jax", "0.12.0", cudnn_compiled="9.8.0", verdict="ok", checker="jax")
    ctx = {"connection_file": str(_conn(jupyter_home, "testk"))}
    p = fixes.plan("allow-memory-growth", Report(frameworks=(tfj, jx)), context=ctx)
    assert p.applicable, p.reason
    kinds = [s.kind for s in p.steps]
    assert kinds.count("set-env") == (2 if "jax" not in sys.modules else 1)
    assert "advice" in kinds and "CUDA_VISIBLE_DEVICES" in p.text()  # two frameworks on one GPU
    ks = next(s for s in p.steps if s.kind == "kernelspec")
    assert dict(ks.env) == {"TF_FORCE_GPU_ALLOW_GROWTH": "true", "XLA_PYTHON_CLIENT_PREALLOCATE": "false"}
    res = fixes.apply(p)
    assert res.ok, res.error
    assert os.environ["TF_FORCE_GPU_ALLOW_GROWTH"] == "true"
    assert json.loads(path.read_text())["env"]["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false"
    assert fixes.undo("allow-memory-growth").ok
    assert "TF_FORCE_GPU_ALLOW_GROWTH" not in os.environ and path.read_bytes() == before


def test_allow_memory_growth_calls_tensorflow_and_falls_back_when_initialized(jupyter_home, monkeypatch):
    import types

    calls = []

    class Cfg:  # the real tf.config API surface this fix calls
        class experimental:
            @staticmethod
            def set_memory_growth(gpu, flag):
                calls.append((gpu, flag))
                if gpu == "GPU:1":
                    raise RuntimeError("Physical devices cannot be modified after being initialized")

        @staticmethod
        def list_physical_devices(kind):
            return ["GPU:0", "GPU:1"]

    monkeypatch.setitem(sys.modules, "tensorflow", types.SimpleNamespace(config=Cfg))
    p = fixes.plan("allow-memory-growth", Report(), context={"python": "/nonexistent"})
    assert p.applicable and p.steps[0].kind == "call"
    res = fixes.apply(p)
    assert res.ok and calls == [("GPU:0", True), ("GPU:1", True)]
    assert "already initialized" in res.done[0]


# --------------------------------------------------------------------------- pip into a temporary venv


def _venv(root: Path, with_pip: bool) -> str:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True, capture_output=True)
    py = str(root / "bin" / "python")
    if with_pip:  # make this interpreter's pip importable there, nothing else
        import pip

        pipdir = root / "pipsrc"
        pipdir.mkdir()
        os.symlink(os.path.dirname(pip.__file__), pipdir / "pip")
        site = subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                              check=True, capture_output=True, text=True).stdout.strip()
        Path(site, "pip-from-tests.pth").write_text(str(pipdir) + "\n")
    return py


def _installed(py: str, name: str) -> str | None:
    r = subprocess.run([py, "-c", "import sys, importlib.metadata as m\ntry: print(m.version(sys.argv[1]))\n"
                        "except Exception: pass", name], capture_output=True, text=True)
    return r.stdout.strip() or None


def test_install_matching_cudnn_runs_pip_of_the_target_interpreter_offline(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDNN_MAGIC_STATE_DIR", str(tmp_path / "state"))
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    metadata_wheel(wheels, "nvidia-cudnn-cu12", "9.2.1.18")   # too old for TF 2.21
    metadata_wheel(wheels, "nvidia-cudnn-cu12", "9.3.0.75")
    py = _venv(tmp_path / "venv", with_pip=True)
    # the venv is a kernel's environment: a kernelspec names its interpreter (undo runs pip
    # only with an interpreter jupyter_client knows)
    kd = tmp_path / "jp" / "kernels" / "venvk"
    kd.mkdir(parents=True)
    (kd / "kernel.json").write_text(json.dumps({"argv": [py, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                                                "display_name": "venv", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jp"))
    ctx = {"python": py, "find_links": str(wheels), "no_index": True}
    p = fixes.plan("install-matching-cudnn", Report(frameworks=(TF221,)), context=ctx)
    assert p.applicable, p.reason
    assert p.title == "Install nvidia-cudnn-cu12>=9.3.0.75,<10"
    assert p.steps[0].argv == (py, "-m", "pip", "install", "--no-index", "--find-links", str(wheels),
                               "nvidia-cudnn-cu12>=9.3.0.75,<10")
    assert p.restart_required and "uninstall" in p.undo_hint
    lines: list[str] = []
    res = fixes.apply(p, stream=lines.append)
    assert res.ok, (res.error, res.output)
    assert any("Successfully installed nvidia-cudnn-cu12-9.3.0.75" in ln for ln in lines), lines
    assert lines == list(res.output)
    assert _installed(py, "nvidia-cudnn-cu12") == "9.3.0.75"
    u = fixes.undo("install-matching-cudnn")
    assert u.ok, (u.error, u.output)
    assert _installed(py, "nvidia-cudnn-cu12") is None


def test_install_without_pip_is_not_applicable_and_button_disabled(tmp_path):
    py = _venv(tmp_path / "venv", with_pip=False)
    p = fixes.plan("install-matching-cudnn", Report(frameworks=(TF221,)), context={"python": py})
    assert not p.applicable and "pip is not installed" in p.reason
    assert p.steps[0].argv[-1] == "nvidia-cudnn-cu12>=9.3.0.75,<10"  # the preview still says what it would run
    from cudnn_magic.ui.fix_buttons import fix_box

    box = fix_box([Fix("install-matching-cudnn", "Install cuDNN", "pip install")], Report(frameworks=(TF221,)),
                  context={"python": py})
    b = box.panels[0].button
    assert b.disabled and "pip is not installed" in b.tooltip


def test_find_links_must_be_a_local_directory():
    p = fixes.plan("install-matching-cudnn", Report(frameworks=(TF221,)),
                   context={"find_links": "https://example.invalid/simple"})
    assert not p.applicable and "local directory" in p.reason


# --------------------------------------------------------------------------- buttons


def test_buttons_preview_apply_undo_hint_and_cancel(jupyter_home):
    from cudnn_magic.ui.fix_buttons import fix_box

    shadow, real = _shadow_dirs(jupyter_home)
    path = _spec(jupyter_home, "testk", {"LD_LIBRARY_PATH": f"{shadow}:{real}"})
    ctx = {"connection_file": str(_conn(jupyter_home, "testk")), "environ": {"LD_LIBRARY_PATH": f"{shadow}:{real}"}}
    fx = [Fix("remove-shadowing-dir", "Take the dir out", "edit kernel.json", True),
          Fix("make-contiguous", "Make it contiguous", "x.contiguous()"),
          Fix("remove-shadowing-dir", "duplicate", "")]
    box = fix_box(fx, Report(), context=ctx)
    shadow_panel, advice = box.panels
    assert len(box.panels) == 2 and not shadow_panel.button.disabled
    # Advice: preview shows the snippet, Apply disabled with the reason.
    advice.button.click()
    assert "x.contiguous()" in advice.preview.value and advice.apply_button.disabled
    assert "advice only" in advice.apply_button.tooltip
    # Cancel: nothing changes.
    shadow_panel.button.click()
    assert str(path) in shadow_panel.preview.value and "Shut Down Kernel" in shadow_panel.preview.value
    shadow_panel.cancel_button.click()
    assert "Cancelled" in shadow_panel.status.value and str(shadow) in path.read_text()
    # Apply.
    shadow_panel.button.click()
    shadow_panel.apply_button.click()
    shadow_panel.thread.join(10)
    assert shadow_panel.result.ok, shadow_panel.result.error
    assert "%cudnn_fix --undo remove-shadowing-dir" in shadow_panel.status.value
    assert json.loads(path.read_text())["env"]["LD_LIBRARY_PATH"] == str(real)
    assert fixes.undo("remove-shadowing-dir").ok


def test_a_long_apply_does_not_block_other_buttons_and_streams_lines():
    from cudnn_magic.ui.fix_buttons import fix_box

    release = threading.Event()
    started = threading.Event()

    def slow_apply(plan, stream=None):  # stands in for a long pip install (the UI's threading is under test)
        stream("Collecting nvidia-cudnn-cu12")
        started.set()
        release.wait(10)
        stream("Successfully installed")
        return fixes.FixResult(plan.fix_id, True, ("ran pip",), undo_hint=f"%cudnn_fix --undo {plan.fix_id}")

    def planner(fix_id, report, context=None):
        return fixes.FixPlan(fix_id, "t", True, steps=(fixes.Step("run", "pip", argv=("python", "-m", "pip")),))

    box = fix_box([Fix("install-matching-cudnn", "Install", ""), Fix("make-contiguous", "Contig", "")], Report(),
                  planner=planner, applier=slow_apply)
    slow, other = box.panels
    slow.button.click()
    t0 = time.perf_counter()
    slow.apply_button.click()
    assert time.perf_counter() - t0 < 1.0  # returned at once
    assert started.wait(5)
    assert "Collecting nvidia-cudnn-cu12" in slow.log.value and slow.apply_button.disabled
    other.button.click()  # answered while the install runs
    assert other.panel.layout.display is None and other.preview.value
    release.set()
    slow.thread.join(10)
    assert "Successfully installed" in slow.log.value and "Done" in slow.status.value


# --------------------------------------------------------------------------- magic and CLI


def test_advice_buttons_preview_the_diagnosis_words_for_this_error():
    """The preview under a diagnosis says what the diagnosis said (one wording, in diagnose.py):
    a cuDNN 8 error names the CUDA 11 wheels, not the registry's generic CUDA 12 ones."""
    from cudnn_magic.engines.diagnose import diagnose

    d = diagnose(exception="", log="Could not load library libcudnn_cnn_infer.so.8. Error: libnvrtc.so.11.2: "
                                   "cannot open shared object file: No such file or directory")
    fix = next(f for x in d for f in x.fixes if f.id == "install-cudnn-deps")
    assert "nvidia-cuda-nvrtc-cu11" in fix.action, fix.action
    from cudnn_magic.ui.fix_buttons import fix_box

    panel = fix_box([fix], Report()).panels[0]
    panel.show_preview()
    assert fix.action in panel.plan.action and not panel.plan.applicable
    assert "nvidia-cuda-nvrtc-cu11" in panel.preview.value
    # without a diagnosis (the CLI), the same function words it from live facts alone
    bare = fixes.plan("install-cudnn-deps", Report())
    assert bare.action.endswith("python -m pip install nvidia-cublas-cu12 nvidia-cuda-nvrtc-cu12")
    # junk in the context is not shown
    assert fixes.plan("check-shapes", Report(), context={"advice": {"title": 1, "action": None}}).title


def test_magic_and_cli(jupyter_home, capsys):
    from IPython.core.interactiveshell import InteractiveShell

    from cudnn_magic.cli import fix as fix_cli
    from cudnn_magic.shell import fix as fix_magics

    ip = InteractiveShell.instance()  # the process-wide shell other tests share
    fix_magics.load_ipython_extension(ip)
    try:
        view = ip.run_line_magic("cudnn_fix", "make-contiguous")
        assert "x.contiguous()" in repr(view) and "<pre>" in view._repr_html_()
        from IPython.core.error import UsageError

        with pytest.raises(UsageError):
            ip.run_line_magic("cudnn_fix", "no-such-fix")
        res = ip.run_line_magic("cudnn_fix", "--undo remove-shadowing-dir")
        assert res.result.ok is False and "nothing to undo" in repr(res)
        res = ip.run_line_magic("cudnn_fix", "restart-kernel --yes")  # a terminal shell: refused, no exit
        assert res.result.ok is False
    finally:
        fix_magics.unload(ip)
    assert "cudnn_fix" not in ip.magics_manager.magics["line"]

    out = io.StringIO()
    args = Namespace(fix_id="make-contiguous", dry_run=True, yes=False, undo=False, json=True, framework=None,
                     dir=None, kernel=None)
    assert fix_cli.cli_fix(args, out) == 0
    from cudnn_magic.engines.diagnose import fix_advice

    assert json.loads(out.getvalue())["action"] == fix_advice("make-contiguous").action  # one wording
    assert "x = x.contiguous()" in fix_advice("make-contiguous").action
    assert fix_cli.cli_fix(Namespace(fix_id="nope"), io.StringIO()) == 2
    assert fix_cli.cli_fix(Namespace(fix_id="upgrade-driver", yes=True, dry_run=False, undo=False), io.StringIO()) == 1


def test_cli_fix_without_ipython_imported():
    code = ("import sys, io, argparse\nfrom cudnn_magic.cli.fix import cli_fix\nfrom cudnn_magic.cli.main import add_fix_arguments\n"
            "p = add_fix_arguments(argparse.ArgumentParser())\n"
            "rc = cli_fix(p.parse_args(['check-shapes', '--dry-run']), io.StringIO())\n"
            "print(rc, 'IPython' in sys.modules, 'ipywidgets' in sys.modules)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[3])))
    assert r.stdout.split() == ["0", "False", "False"], r.stderr
