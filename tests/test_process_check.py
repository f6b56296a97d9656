"""``cudnn-magic check --pid PID``: real child processes that loaded real cuDNN wheels, read from
outside through ``/proc/PID`` (maps, environ, the link map in ``/proc/PID/mem``, cmdline, cwd, exe).

Each child is a real Python process that loads a real older cuDNN (``nvidia-cudnn-jit-cu12``
9.12.0.46, a ``pip install --target`` folder) and then sleeps; each says what it loaded itself
(``cudnnGetVersion`` through the handle it holds, and this package's own in-process check, run in
the child after the outside check), and the outside check must agree. The real-wheel test runs a
process of the real torch 2.14.1 venv (a CUDA 13 build, its ``nvidia-cudnn-cu13`` 9.24 wheel) with
an older ``nvidia-cudnn-cu13`` 9.12 folder on its ``PYTHONPATH``: the check from this venv (no torch
here) must find that interpreter's PyTorch and judge it as the process itself does.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from real_wheels import install_wheel
from support import REPO, require_real_cudnn, run_unprivileged, world_readable_dir

OLD = ("nvidia-cudnn-jit-cu12", "9.12.0.46")


def _old_lib() -> Path:
    return install_wheel(*OLD) / "nvidia" / "cudnn_jit" / "lib"


# The child: load what argv says, print the version calls answer and its own check (on request).
CHILD = r"""
import ctypes, json, os, sys
handles = []
for how in sys.argv[1:]:
    lib = ctypes.CDLL(how, mode=ctypes.RTLD_GLOBAL if how == "libcudnn.so.9" else ctypes.RTLD_LOCAL)
    lib.cudnnGetVersion.restype = ctypes.c_size_t
    handles.append(lib.cudnnGetVersion())
print(json.dumps({"ready": handles}), flush=True)
sys.stdin.readline()  # the outside check runs now
from cudnn_magic.engines.check import run_check
from cudnn_magic.render.report import report_json
print(json.dumps(report_json(run_check())), flush=True)
sys.stdin.readline()
"""


class Child:
    """A sleeping child that loaded cuDNN; ``own_check()`` asks it for its in-process report."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path, python: str = sys.executable,
                 code: str = CHILD) -> None:
        self.proc = subprocess.Popen([python, "-c", code, *argv], env=env, cwd=str(cwd), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if not line:
            pytest.fail(f"the child did not start: {self.proc.stderr.read()[-3000:]}")
        self.ready = json.loads(line)["ready"]
        self.pid = self.proc.pid

    def own_check(self) -> dict:
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=30)


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "PYTHONPATH", "PYTEST_CURRENT_TEST")}
    env["PYTHONPATH"] = str(REPO)
    env.update(extra)
    return env


def _check(pid: int) -> tuple[int, dict, str]:
    from cudnn_magic.cli.process import cli_process

    out = io.StringIO()
    rc = cli_process(str(pid), as_json=True, out=out)
    return rc, json.loads(out.getvalue()), out.getvalue()


def _mains(doc: dict) -> list[tuple[str, str]]:
    return [(c["path"], c["version"]) for c in doc["cudnn_loaded"] if c["main"]]


@pytest.mark.native
def test_a_process_that_loaded_an_older_cudnn_by_path(tmp_path):
    wheel = require_real_cudnn()
    old = _old_lib()
    extra = tmp_path / "extra-site"  # on the child's PYTHONPATH only, never on this process's sys.path
    extra.mkdir()
    child = Child([str(old / "libcudnn.so.9")], _env(PYTHONPATH=os.pathsep.join([str(REPO), str(extra)])), tmp_path)
    try:
        assert child.ready == [91200]  # the child's own call: 9.12.0
        rc, doc, _ = _check(child.pid)
        own = child.own_check()
    finally:
        child.stop()
    assert rc == (1 if any(f["severity"] == "error" for f in doc["findings"]) else 0)
    real_old = os.path.realpath(old / "libcudnn.so.9")
    assert _mains(doc) == [(real_old, "9.12.0")] == _mains(own)
    assert doc["cudnn_in_use"]["path"] == own["cudnn_in_use"]["path"] == real_old
    p = doc["process"]
    assert p["pid"] == child.pid and p["uid"] == os.getuid()
    assert p["cwd"] == str(tmp_path) and p["ld_library_path"] is None
    assert p["pythonpath"] == os.pathsep.join([str(REPO), str(extra)])
    assert p["load_order"].startswith("its dynamic linker's link map")
    # Its interpreter's sys.path: the working directory for -c, then PYTHONPATH, then this venv's
    # site-packages (the child runs this venv's python) -- as the child itself has it.
    py = p["python"]
    assert py["executable"] == sys.executable and py["prefix"] == sys.prefix
    want = subprocess.run([sys.executable, "-c", "import sys, json; print(json.dumps(sys.path))"], env=_env(
        PYTHONPATH=os.pathsep.join([str(REPO), str(extra)])), cwd=str(tmp_path), capture_output=True, text=True)
    child_path = [os.path.abspath(e or str(tmp_path)) for e in json.loads(want.stdout)]
    assert [e for e in child_path if e in py["sys_path"]] == [e for e in py["sys_path"] if e in child_path]
    assert str(extra) in py["sys_path"] and str(tmp_path) == py["sys_path"][0]
    # The venv's own 9.27 wheel is on disk for that interpreter.
    assert os.path.realpath(wheel / "libcudnn.so.9") in {c["path"] for c in doc["cudnn_installed"]}
    assert any("could be read from the process at run time" in n or "nothing could be read" in n for n in doc["notes"])


@pytest.mark.native
def test_older_copy_first_on_ld_library_path_loaded_by_soname(tmp_path):
    from cudnn_magic.cli.process import cli_process

    wheel = require_real_cudnn()
    old = _old_lib()
    child = Child(["libcudnn.so.9"], _env(LD_LIBRARY_PATH=str(old)), tmp_path)
    try:
        assert child.ready == [91200]
        rc, doc, _ = _check(child.pid)
        text = io.StringIO()
        assert cli_process(str(child.pid), out=text) == rc
        own = child.own_check()
    finally:
        child.stop()
    real_old = os.path.realpath(old / "libcudnn.so.9")
    assert _mains(doc) == _mains(own) == [(real_old, "9.12.0")]
    lines = text.getvalue().splitlines()
    assert lines[0].startswith(f"Process {child.pid} (user ") and f"  LD_LIBRARY_PATH at start: {old}" in lines
    assert f"cuDNN mapped in process {child.pid} (each file's own version)" in lines
    iu = doc["cudnn_in_use"]
    assert iu["path"] == own["cudnn_in_use"]["path"] == real_old
    assert iu["ld_library_path_entry"] == own["cudnn_in_use"]["ld_library_path_entry"] == str(old)
    assert doc["process"]["ld_library_path"] == str(old)
    # The 9.12 folder on LD_LIBRARY_PATH hides this environment's own 9.27 wheel: the same finding
    # the process's own check makes.
    ids = sorted(f["id"] for f in doc["findings"])
    assert ids == sorted(f["id"] for f in own["findings"]) and "cudnn-shadowed" in ids
    shadow = next(f for f in doc["findings"] if f["id"] == "cudnn-shadowed")
    assert "9.27" in shadow["title"] and str(wheel) in shadow["detail"]


@pytest.mark.native
def test_two_copies_in_use_is_the_first_in_the_link_map(tmp_path):
    """The 9.27 wheel loaded first, then the 9.12 copy: the link map (not the address order of
    /proc/PID/maps) says which came first, and the copy in use is the one the process's own
    in-process check names (glibc reuses the first object with the soname)."""
    wheel = require_real_cudnn()
    old = _old_lib()
    child = Child([str(wheel / "libcudnn.so.9"), str(old / "libcudnn.so.9")], _env(), tmp_path)
    try:
        rc, doc, text = _check(child.pid)
        own = child.own_check()
    finally:
        child.stop()
    assert child.ready == [92700, 92700]  # the second shim's call reaches the first copy's graph library
    assert [p for p, _ in _mains(doc)] == [p for p, _ in _mains(own)] == [
        os.path.realpath(wheel / "libcudnn.so.9"), os.path.realpath(old / "libcudnn.so.9")]
    assert [v for _, v in _mains(doc)] == ["9.27.0", "9.12.0"]
    assert doc["cudnn_in_use"]["path"] == own["cudnn_in_use"]["path"] == os.path.realpath(wheel / "libcudnn.so.9")
    assert "RTLD_GLOBAL" in doc["cudnn_in_use"]["why"] and "cannot be read from outside" in doc["cudnn_in_use"]["why"]
    assert "cudnn-multiple-copies-loaded" in {f["id"] for f in doc["findings"]}


@pytest.mark.native
def test_exited_zombie_and_bad_pid_exit_2_with_one_line(tmp_path):
    from cudnn_magic.cli.main import main

    done = subprocess.Popen([sys.executable, "-c", "pass"])
    done.wait(timeout=30)
    zombie = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # not waited for: a zombie once it exits
        with open(f"/proc/{zombie.pid}/stat") as fh:
            if fh.read().rsplit(")", 1)[1].split()[0] == "Z":
                break
        time.sleep(0.05)
    try:
        for pid, words in ((done.pid, "is not running"), (zombie.pid, "has exited"), ("abc", "not a process id")):
            r = subprocess.run([sys.executable, "-m", "cudnn_magic", "check", "--pid", str(pid)], capture_output=True,
                               text=True, env=_env(), timeout=120)
            assert r.returncode == 2 and r.stdout == "", r
            lines = r.stderr.strip().splitlines()
            assert len(lines) == 1 and words in lines[0], r.stderr
        assert main(["check", "--pid", str(done.pid), "--json"]) == 2
    finally:
        zombie.wait(timeout=30)


@pytest.mark.native
def test_another_users_process_exit_2_with_one_line(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root: the process checked belongs to root and the check runs as nobody")
    old = _old_lib()
    child = Child([str(old / "libcudnn.so.9")], _env(), tmp_path)
    home = world_readable_dir()
    try:
        r = run_unprivileged([sys.executable, "-m", "cudnn_magic", "check", "--pid", str(child.pid)], home)
    finally:
        child.stop()
        shutil.rmtree(home, ignore_errors=True)
    assert r.returncode == 2 and r.stdout == "", r
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert f"process {child.pid} belongs to user root (uid 0)" in lines[0] and "run cudnn-magic as that user" in lines[0]


@pytest.mark.native
def test_a_process_that_is_not_python(tmp_path):
    """A program that is not a Python interpreter: its maps and environment are read, no
    interpreter is run, and no framework of this venv is claimed for it."""
    sleeper = subprocess.Popen(["sleep", "120"], env=_env(LD_LIBRARY_PATH=str(tmp_path)), cwd=str(tmp_path))
    try:
        time.sleep(0.2)
        rc, doc, _ = _check(sleeper.pid)
    finally:
        sleeper.send_signal(signal.SIGKILL)
        sleeper.wait(timeout=30)
    assert doc["process"]["python"] is None and "not a Python interpreter" in doc["process"]["python_unavailable"]
    assert doc["frameworks"] == [] and doc["cudnn_loaded"] == [] and doc["process"]["ld_library_path"] == str(tmp_path)
    assert rc == 0


def test_python_command_lines_are_taken_apart():
    from cudnn_magic.probes.process import parse_python_argv

    a = parse_python_argv(["python", "-u", "-Es", "train.py", "-c", "x"])
    assert (a.mode, a.target, a.flags) == ("script", "train.py", {"u", "E", "s"})
    a = parse_python_argv(["python3", "-X", "dev", "-Wignore", "-m", "ipykernel_launcher", "-f", "k.json"])
    assert (a.mode, a.target) == ("module", "ipykernel_launcher") and "X" not in a.flags and "W" not in a.flags
    a = parse_python_argv(["python", "-Ic", "print(1)"])
    assert (a.mode, a.target, a.flags) == ("command", "print(1)", {"I"})
    a = parse_python_argv(["python", "--check-hash-based-pycs", "always", "-P", "--", "-odd.py"])
    assert (a.mode, a.target, a.flags) == ("script", "-odd.py", {"P"})
    assert parse_python_argv(["python"]).mode == "stdin" and parse_python_argv(["python", "-"]).mode == "stdin"


TORCH_CHILD = r"""
import json, sys
import torch
print(json.dumps({"ready": [torch.__version__]}), flush=True)
sys.stdin.readline()
from cudnn_magic.engines.check import run_check
from cudnn_magic.render.report import report_json
print(json.dumps(report_json(run_check())), flush=True)
sys.stdin.readline()
"""


@pytest.mark.realwheels
def test_a_torch_process_judged_from_another_venv(tmp_path):
    """A process of the real torch 2.14.1 venv, with an older nvidia-cudnn-cu13 9.12 --target folder
    first on its PYTHONPATH: ``import torch`` preloads that folder's cuDNN (torch/__init__.py). The
    check runs from this venv (no torch here) and must find that interpreter's PyTorch, the copy it
    mapped and the verdict, as the process's own in-process check does."""
    from framework_envs import TORCH_VERSION, target, torch_env

    py = torch_env()
    older = target("nvidia-cudnn-cu13", "9.12.0.46")
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "PYTHONPATH", "PYTEST_CURRENT_TEST")}
    env["PYTHONPATH"] = str(older)
    child = Child([], env, tmp_path, python=str(py), code=TORCH_CHILD)
    try:
        assert child.ready == [TORCH_VERSION] or child.ready[0].startswith(TORCH_VERSION)
        rc, doc, text = _check(child.pid)
        own = child.own_check()
    finally:
        child.stop()
    assert doc["process"]["python"]["executable"] == str(py)
    assert str(older) in doc["process"]["python"]["sys_path"]
    fw = next(f for f in doc["frameworks"] if f["name"] == "PyTorch")
    own_fw = next(f for f in own["frameworks"] if f["name"] == "PyTorch")
    assert fw["version"] == own_fw["version"] and fw["cudnn_compiled"] == own_fw["cudnn_compiled"]
    assert fw["verdict"] == own_fw["verdict"] and not fw["imported"]
    assert _mains(doc) == _mains(own) and _mains(doc)[0][0].startswith(os.path.realpath(older))
    assert doc["cudnn_in_use"]["path"] == own["cudnn_in_use"]["path"]
    assert {f["id"] for f in doc["findings"]} >= {f["id"] for f in own["findings"]} - {"ld-library-path-changed-at-runtime"}
    assert rc == (1 if any(f["severity"] == "error" for f in doc["findings"]) else 0)
