"""Issue 28, items 1 and 2: a prediction never executes a package's code, and the guard passes the
user's words to pip exactly as IPython's ``%pip`` would.

Item 1, as the attack did it: a source tree whose ``setup.py`` leaves a ``.pth`` file in
site-packages (it would run at every start of that Python) and a marker file; before, ``cudnn-magic
check --what-if "'pkg @ file:///dir' --no-index --no-build-isolation"`` let pip run it to read
metadata and then said "nothing installed". Now the what-if refuses what needs a build before pip
starts, and every dry run has ``--only-binary :all:``, so a source distribution found on an index is
never built either. Real pip in a real venv, real ``setup.py`` files; the proof is on disk.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import tarfile
from pathlib import Path

import pytest

from prevention_env import make_venv, run_cli
from support import outputs_text, run_notebook

SETUP = """\
import os, sysconfig
from setuptools import setup
open({marker!r}, "w").write("setup.py ran")
open(os.path.join(sysconfig.get_paths()["purelib"], "zz_attack.pth"), "w").write("import os\\n")
setup(name="evilpkg", version="1.0", py_modules=[])
"""


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    return make_venv(tmp_path_factory.mktemp("hard-whatif"))


def _site(py: Path) -> Path:
    return Path(subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())


def _tree(tmp: Path) -> tuple[Path, Path]:
    src = tmp / "evilpkg"
    src.mkdir()
    marker = tmp / "marker"
    (src / "setup.py").write_text(SETUP.format(marker=str(marker)))
    return src, marker


@pytest.mark.parametrize("words", [
    "'evilpkg @ file://{src}' --no-index --no-build-isolation",
    "evilpkg @ file://{src} --no-index",
    "{src} --no-index",
    "-e {src} --no-index",
    "'evilpkg @ git+file://{src}' --no-index",
    "evilpkg --no-binary :all: --no-index --find-links {src}",
])
def test_a_source_tree_is_refused_and_nothing_runs(venv, tmp_path, words):
    src, marker = _tree(tmp_path)
    site = _site(venv)
    proc = run_cli(venv, "check", "--json", "--what-if", words.format(src=src), isolate_pip_config=True)
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    err = json.loads(proc.stdout)["error"]
    assert err["kind"] == "needs-build", err
    assert "ran nothing" in err["message"]
    assert not marker.exists(), "setup.py ran"
    assert not (site / "zz_attack.pth").exists()


def test_an_sdist_on_an_index_is_never_built(venv, tmp_path):
    """``evilpkg`` exists only as a source distribution in a find-links folder: pip (wheels only)
    finds no release, and says so; its setup.py never runs."""
    src, marker = _tree(tmp_path)
    links = tmp_path / "links"
    links.mkdir()
    with tarfile.open(links / "evilpkg-1.0.tar.gz", "w:gz") as tf:
        for name, data in (("evilpkg-1.0/setup.py", (src / "setup.py").read_bytes()),
                           ("evilpkg-1.0/PKG-INFO", b"Metadata-Version: 2.1\nName: evilpkg\nVersion: 1.0\n")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    proc = run_cli(venv, "check", "--json", "--what-if", f"evilpkg --no-index --find-links {links}",
                   isolate_pip_config=True)
    assert proc.returncode == 2, proc.stdout[-2000:]
    err = json.loads(proc.stdout)["error"]
    assert err["kind"] == "no-match" and "as a wheel" in err["message"] and "never runs" in err["message"], err
    assert not marker.exists(), "setup.py ran"
    assert not (_site(venv) / "zz_attack.pth").exists()
    # and plain pip (what the what-if did before) does run it: the attack is real
    subprocess.run([str(venv), "-m", "pip", "install", "--dry-run", "--no-index", "--find-links", str(links),
                    "--no-build-isolation", "evilpkg"], capture_output=True, text=True, timeout=300,
                   env={**os.environ, "PIP_CONFIG_FILE": os.devnull})
    assert marker.exists()
    (_site(venv) / "zz_attack.pth").unlink(missing_ok=True)


def test_a_direct_reference_to_a_wheel_is_still_predicted(venv, tmp_path):
    from real_wheels import wheel_file

    whl = wheel_file("nvidia-cudnn-jit-cu13", "9.24.0.43")
    proc = run_cli(venv, "check", "--json", "--what-if", f"'nvidia-cudnn-jit-cu13 @ {whl.as_uri()}' --no-deps",
                   isolate_pip_config=True, env_extra={"XDG_CACHE_HOME": str(tmp_path / "c")})
    data = json.loads(proc.stdout)
    assert "error" not in data or not isinstance(data["error"], dict), data
    assert {"name": "nvidia-cudnn-jit-cu13", "from": None, "to": "9.24.0.43"} in data["changes"]
    assert any("file list read from the wheel's own RECORD" in n for n in data["notes"]), data["notes"]


@pytest.mark.parametrize("line,words", [
    ("install --force \"pip; python_version>'3'\"", ["install", "pip; python_version>'3'"]),
    ("install --force numpy", ["install", "numpy"]),
    ("install numpy --force", ["install", "numpy"]),
    ("install --force *.whl", ["install", "*.whl"]),
    ("install --force-reinstall --force x", ["install", "--force-reinstall", "x"]),
    ("install \"--force\" 'a b'", ["install", "a b"]),
])
def test_without_force_keeps_every_other_word_as_typed(line, words):
    import shlex

    from cudnn_magic.shell.guard import without_force

    out = without_force(line)
    assert shlex.split(out) == words
    if "*" in line:
        assert "*.whl" in out and "'*.whl'" not in out, "a glob reaches the shell unquoted, as typed"


@pytest.mark.kernel
def test_the_guard_hands_a_quoted_marker_to_pip_as_one_requirement(tmp_path):
    """Before: ``%pip install --force ... "pip; python_version>'3'"`` reached pip as ``'pip;'
    'python_version>3'`` (pip: "Invalid requirement"). The bare kernel's ``%pip`` is the reference."""
    cell = "%pip install --dry-run --no-deps --no-index \"pip; python_version>'3'\""
    bare = run_notebook([cell], tmp_path / "bare", env={"PIP_CONFIG_FILE": os.devnull}, timeout=300)
    ours = run_notebook(["%load_ext cudnn_magic\n%cudnn_guard on", cell.replace("install ", "install --force ", 1)],
                        tmp_path / "ours", env={"PIP_CONFIG_FILE": os.devnull}, timeout=300)
    want = outputs_text(bare.cells[0])
    got = outputs_text(ours.cells[1])
    assert "Requirement already satisfied: pip" in want, want
    assert "--force given" in got and "Requirement already satisfied: pip" in got, got
    assert "Invalid requirement" not in got
