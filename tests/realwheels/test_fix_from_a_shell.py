"""``cudnn-magic fix ... --kernel NAME`` from a shell, and ``--undo`` from a shell whose JUPYTER_*
variables differ from the server's.

Before: the shell's own ``LD_LIBRARY_PATH`` was judged, not the environment the kernelspec starts
the kernel with ("no directory on LD_LIBRARY_PATH shadows ... here"; with ``--dir``: "not on
LD_LIBRARY_PATH"), and the undo journal lived in Jupyter's data dir, so a shell with another
``JUPYTER_DATA_DIR`` said "nothing to undo" with the backup lying beside ``kernel.json``.

Real parts: the TensorFlow 2.21.0 wheel's libraries with the real ``nvidia-cudnn-cu12`` 9.28.0.42
beside them (:func:`framework_envs.tf_site`: RUNPATH ``$ORIGIN/../nvidia/cudnn/lib``) and the real
``nvidia-cudnn-jit-cu12`` 9.12.0.46 as the older copy the kernelspec's ``LD_LIBRARY_PATH`` names;
the CLI runs in a child process, jupyter_client finds the kernelspec through ``JUPYTER_PATH``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.framework_envs import tf_site
from helpers.real_wheels import REPO, install_wheel

pytestmark = [pytest.mark.realwheels, pytest.mark.timeout(900)]


def _old_dir() -> Path:
    return install_wheel("nvidia-cudnn-jit-cu12", "9.12.0.46") / "nvidia" / "cudnn_jit" / "lib"


def _shell(tmp: Path, data: str, jupyter_path: bool = True) -> dict[str, str]:
    """A terminal's environment: no LD_LIBRARY_PATH, TensorFlow's site on PYTHONPATH, its own
    Jupyter data and runtime dirs, the journal in the XDG state dir of a home of its own."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("LD_LIBRARY_PATH", "LD_PRELOAD", "PYTHONPATH", "CUDNN_MAGIC_STATE_DIR", "XDG_STATE_HOME",
                        "JUPYTER_PREFER_ENV_PATH", "PYTEST_CURRENT_TEST") and not k.startswith("JUPYTER_")}
    env.update(PYTHONPATH=f"{tf_site()}{os.pathsep}{REPO}", HOME=str(tmp / "home"),
               JUPYTER_DATA_DIR=str(tmp / data), JUPYTER_RUNTIME_DIR=str(tmp / data / "runtime"),
               JUPYTER_CONFIG_DIR=str(tmp / data / "config"))
    if jupyter_path:
        env["JUPYTER_PATH"] = str(tmp / "jp")
    return env


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cudnn_magic", *args], capture_output=True, text=True, env=env,
                          timeout=300, cwd=str(REPO))


@pytest.fixture
def spec(tmp_path: Path) -> Path:
    (tmp_path / "home").mkdir()
    kj = tmp_path / "jp" / "kernels" / "testk" / "kernel.json"
    kj.parent.mkdir(parents=True)
    kj.write_text(json.dumps({"argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                              "display_name": "testk", "language": "python",
                              "env": {"LD_LIBRARY_PATH": f"{_old_dir()}:${{LD_LIBRARY_PATH}}"}}, indent=1) + "\n")
    return kj


def test_fix_with_kernel_judges_the_kernelspec_environment_not_the_shell(spec, tmp_path):
    old = str(_old_dir())
    env = _shell(tmp_path, "data-a")
    p = _cli(env, "fix", "remove-shadowing-dir", "--kernel", "testk", "--json")
    assert p.returncode == 0, p.stderr[-3000:]
    plan = json.loads(p.stdout)
    assert plan["applicable"] is True, plan
    assert old in plan["title"], plan["title"]
    assert any("kernelspec 'testk' starts with" in n for n in plan["notes"]), plan["notes"]
    # TensorFlow's own copy is the one the old copy hides, under the kernel's environment
    assert any("tf-2.21.0-site/nvidia/cudnn/lib/libcudnn.so.9 (cuDNN 9.28.0)" in n for n in plan["notes"]), plan["notes"]
    # the spec's own value changes: only its entry goes, the ${LD_LIBRARY_PATH} reference stays
    step = next(s for s in plan["steps"] if s["kind"] == "kernelspec")
    assert ["LD_LIBRARY_PATH", "${LD_LIBRARY_PATH}"] in [list(e) for e in step["env"]], step["env"]
    p = _cli(env, "fix", "remove-shadowing-dir", "--kernel", "testk", "--dir", old, "--json")
    assert json.loads(p.stdout)["applicable"] is True, p.stdout[-2000:]


def test_a_fixed_kernelspec_is_not_offered_the_same_fix_again(spec, tmp_path):
    env = _shell(tmp_path, "data-a")
    assert _cli(env, "fix", "remove-shadowing-dir", "--kernel", "testk", "--yes").returncode == 0
    assert str(_old_dir()) not in json.loads(spec.read_text())["env"]["LD_LIBRARY_PATH"]
    p = _cli(env, "fix", "remove-shadowing-dir", "--kernel", "testk", "--json")
    plan = json.loads(p.stdout)
    assert plan["applicable"] is False
    assert "no directory on LD_LIBRARY_PATH shadows a different cuDNN in the environment kernelspec 'testk'" \
        in plan["reason"], plan["reason"]


def test_undo_from_a_shell_with_other_jupyter_variables_finds_the_backup(spec, tmp_path):
    before = spec.read_bytes()
    a = _shell(tmp_path, "data-a")
    p = _cli(a, "fix", "remove-shadowing-dir", "--kernel", "testk", "--yes")
    assert p.returncode == 0, p.stdout + p.stderr
    assert spec.read_bytes() != before
    journal = tmp_path / "home" / ".local" / "state" / "cudnn_magic" / "undo.json"
    assert journal.is_file(), "the journal lives in the XDG state dir, not in JUPYTER_DATA_DIR"
    rec = json.loads(journal.read_text())["remove-shadowing-dir"][-1]["records"][0]
    assert rec["kernel_dir"] == str(spec.parent.parent)
    # another terminal: other JUPYTER_DATA_DIR, and JUPYTER_PATH does not name the kernelspec's folder
    b = _shell(tmp_path, "data-b", jupyter_path=False)
    p = _cli(b, "fix", "remove-shadowing-dir", "--undo")
    assert p.returncode == 0, p.stdout + p.stderr
    assert spec.read_bytes() == before
    assert "nothing to undo" not in p.stdout + p.stderr
