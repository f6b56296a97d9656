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

import ast
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers.real_wheels import install_wheel, wheel_file
from helpers.support import (
    NOBODY,
    REPO,
    _drop,
    build_c_library,
    have_gcc,
    require_real_cudnn,
    require_unprivileged_child,
    run_unprivileged,
    world_readable_dir,
)

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
        _rc, doc, _text = _check(child.pid)
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
    from helpers.framework_envs import TORCH_VERSION, target, torch_env

    py = torch_env()
    older = target("nvidia-cudnn-cu13", "9.12.0.46")
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "PYTHONPATH", "PYTEST_CURRENT_TEST")}
    env["PYTHONPATH"] = str(older)
    child = Child([], env, tmp_path, python=str(py), code=TORCH_CHILD)
    try:
        assert child.ready == [TORCH_VERSION] or child.ready[0].startswith(TORCH_VERSION)
        rc, doc, _text = _check(child.pid)
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


# --------------------------------------------------------------------------------------------------
# Hostile and unlucky processes.
#
# ``--pid`` against hostile or unlucky processes, through the real CLI: nothing of the other
# process runs here (no module from its working directory or ``PYTHONPATH``, no program merely
# named ``python``, no library it mapped or could map, no standard library its ``pyvenv.cfg``
# points at) except its own proven CPython interpreter, run isolated (``-I -S``, no environment of
# its own) and, when root checks another user's process, as that user; no file of the process hangs
# the check; what the report says it mapped is what the kernel says it mapped (``/proc/PID/maps``),
# read where the process sees it (its mount namespace); a process that replaces its program while it
# is read is never reported half old, half new; a kernel thread and a process this user may not read
# get one true sentence and exit 2.
# Each attack writes a marker line ``PID UID`` from any code it gets to run, so a line from a process
# other than the attacked one is code this check ran. The C programs and libraries are built here
# with gcc: a program that only pretends to be ``python3``, a ``libcudnn.so.9`` whose constructor
# writes the marker (stand-ins at the native boundary, named so).
# --------------------------------------------------------------------------------------------------


MARK = ('import posix as _p\n'
        '_fd = _p.open({path!r}, _p.O_WRONLY | _p.O_CREAT | _p.O_APPEND, 0o666)\n'
        '_p.write(_fd, b"%d %d\\n" % (_p.getpid(), _p.getuid()))\n'
        '_p.close(_fd)\n')

# A library whose constructor writes the marker line: the stand-in for a hostile file named like
# cuDNN (its version is nowhere in the file, so only loading it could tell).
CTOR_C = r"""
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
__attribute__((constructor)) static void ran(void) {
    char line[64];
    int fd = open(MARKER, O_WRONLY | O_CREAT | O_APPEND, 0666);
    if (fd >= 0) { snprintf(line, sizeof line, "%d %d\n", (int)getpid(), (int)getuid()); write(fd, line, strlen(line)); close(fd); }
}
"""

# A program that is not Python but is named python3: it sleeps, and writes the marker when run with
# the arguments a check would give an interpreter.
FAKE_PYTHON_C = r"""
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) if (argv[i][0] == '-') {
        char line[64];
        int fd = open(MARKER, O_WRONLY | O_CREAT | O_APPEND, 0666);
        if (fd >= 0) { snprintf(line, sizeof line, "%d %d\n", (int)getpid(), (int)getuid()); write(fd, line, strlen(line)); close(fd); }
        return 0;
    }
    write(1, "ready\n", 6);
    sleep(300);
    return 0;
}
"""


def _lines(marker: Path) -> list[tuple[int, int]]:
    if not marker.exists():
        return []
    return [(int(a), int(b)) for a, b in (ln.split() for ln in marker.read_text().splitlines() if ln.strip())]


def _check_cli(pid: int, *extra: str, env: dict[str, str] | None = None,
           prefix: list[str] | None = None) -> tuple[int, dict | None, str, float]:
    e = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "PYTEST_CURRENT_TEST")}
    e["PYTHONPATH"] = str(REPO)
    e.update(env or {})
    t0 = time.monotonic()
    r = subprocess.run([*(prefix or []), sys.executable, "-m", "cudnn_magic", "check", "--pid", str(pid), "--json",
                        *extra], capture_output=True, text=True, env=e, timeout=120, cwd="/")
    try:
        doc = json.loads(r.stdout)
    except ValueError:
        doc = None
    return r.returncode, doc, r.stderr, time.monotonic() - t0


class Target:
    """A real process started with ``argv`` that prints one line when ready and then sleeps."""

    def __init__(self, argv: list, env: dict, cwd: Path | str, prefix: list[str] | None = None) -> None:
        self.proc = subprocess.Popen([*(prefix or []), *argv], env=env, cwd=str(cwd), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.first = self.proc.stdout.readline().decode("utf-8", "replace")
        if not self.first:
            pytest.fail(f"the target did not start: {self.proc.stderr.read()[-3000:]!r}")
        self.pid = self.proc.pid

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=30)


def _plain_env(**extra: str) -> dict[str, str]:
    env = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"}
    env.update(extra)
    return env


def test_rebuilding_sys_path_runs_no_module_of_its_working_directory_or_pythonpath(tmp_path):
    """The interpreter asked for the start-up ``sys.path`` ran with the process's working directory
    and ``PYTHONPATH``: a ``json.py`` there ran (its line was written by the check's child). Now no
    line but the process's own, and the ``sys.path`` rebuilt is still the one the process has."""
    marker = tmp_path / "marker"
    work, extra = tmp_path / "work", tmp_path / "extra"
    for d in (work, extra):
        d.mkdir()
        for mod in ("json.py", "sysconfig.py", "_sysconfigdata__linux_x86_64-linux-gnu.py", "struct.py"):
            (d / mod).write_text(MARK.format(path=str(marker)))
    code = "import sys; print(repr(sys.path), flush=True); sys.stdin.readline()"
    t = Target([sys.executable, "-c", code], _plain_env(PYTHONPATH=str(extra)), work)
    try:
        own = [os.path.abspath(os.path.join(str(work), p)) if p else str(work) for p in ast.literal_eval(t.first)]
        _rc, doc, err, _ = _check_cli(t.pid)
    finally:
        t.stop()
    assert {pid for pid, _ in _lines(marker)} <= {t.pid}, _lines(marker)  # nothing ran in the check's child
    assert doc is not None, err
    got = doc["process"]["python"]["sys_path"]
    assert got[: len(own)] == own, (got, own)  # the same sys.path (site's folders come after, from .pth files)
    assert "-I -S" in doc["process"]["python"]["how"]


@pytest.mark.native
def test_a_program_that_is_only_named_python_is_never_run(tmp_path):
    if not have_gcc():
        pytest.skip("gcc is needed to build the program that pretends to be python3")
    marker = tmp_path / "marker"
    src = tmp_path / "fake.c"
    src.write_text(f'#define MARKER "{marker}"\n' + FAKE_PYTHON_C)
    (tmp_path / "bin").mkdir()
    exe = tmp_path / "bin" / "python3"
    subprocess.run(["gcc", "-O1", "-o", str(exe), str(src)], check=True, capture_output=True)
    t = Target([str(exe), "train.py"], _plain_env(), tmp_path)
    try:
        rc, doc, err, _ = _check_cli(t.pid)
    finally:
        t.stop()
    assert _lines(marker) == [], "the check ran a program that only has the name of an interpreter"
    assert doc is not None and doc["process"]["python"] is None, err
    assert "not a CPython interpreter" in doc["process"]["python_unavailable"]
    assert rc == 0 and doc["frameworks"] == []


def _system_python() -> str:
    """A Python interpreter ``nobody`` may run (this venv's lies under a 0700 /root)."""
    for cand in ("/usr/bin/python3", "/usr/local/bin/python3"):
        if os.access(cand, os.X_OK):
            return os.path.realpath(cand)
    pytest.skip("no system python3 that another user may run")


def _evil_home(base: Path, marker: Path, python: str) -> Path:
    """A folder laid out as a Python installation whose standard library is this machine's, except
    that its ``encodings`` package writes the marker line first (a ``pyvenv.cfg`` ``home`` pointing
    here makes every start of the venv's interpreter run it, even with ``-I -S``)."""
    ver = subprocess.run([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"], capture_output=True,
                         text=True, check=True).stdout.strip()
    stdlib = Path(subprocess.run([python, "-c", "import os; print(os.path.dirname(os.__file__))"], capture_output=True,
                                 text=True, check=True).stdout.strip())
    lib = base / "lib" / f"python{ver}"
    lib.mkdir(parents=True)
    (base / "bin").mkdir()
    for entry in stdlib.iterdir():
        if entry.name != "encodings":
            os.symlink(entry, lib / entry.name)
    shutil.copytree(stdlib / "encodings", lib / "encodings")
    init = lib / "encodings" / "__init__.py"
    init.write_text(MARK.format(path=str(marker)) + init.read_text())
    return base


def hostile_venv(base: Path, python: str) -> tuple[Path, Path, Path, Path]:
    """In ``base`` (a folder others may enter): the marker (anyone may append), a standard library
    of ``python`` that writes it (:func:`_evil_home`), a venv whose ``pyvenv.cfg`` ``home`` points
    there, and a folder with a ``libcudnn.so.9`` whose constructor writes it. Returns (marker,
    home, venv, library folder)."""
    marker = base / "marker"
    marker.touch()
    home = _evil_home(base / "home", marker, python)
    venv = base / "venv"
    (venv / "bin").mkdir(parents=True)
    os.symlink(python, venv / "bin" / "python")
    (venv / "pyvenv.cfg").write_text(f"home = {home / 'bin'}\ninclude-system-site-packages = false\n")
    lib = base / "lib"
    lib.mkdir()
    build_c_library(f'#define MARKER "{marker}"\n' + CTOR_C, lib / "libcudnn.so.9", soname="libcudnn.so.9")
    for p in [base, *base.rglob("*")]:
        if not p.is_symlink():
            p.chmod(0o777 if p.is_dir() else 0o666 if p == marker else 0o755)
    return marker, home, venv, lib


@pytest.mark.native
def test_root_runs_nothing_as_root_for_another_users_process(tmp_path):
    """Root checks a process of ``nobody`` whose venv's ``pyvenv.cfg`` points its standard library at
    a folder of that user's, and whose ``LD_LIBRARY_PATH`` folder holds a ``libcudnn.so.9`` whose
    version only loading could tell (its constructor writes the marker; the process loaded it).
    Before: the interpreter ran as root (its ``encodings`` wrote uid 0) and the library was loaded
    as root. Now the interpreter runs as the process's user and that library is not loaded."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv: the process belongs to nobody and the check runs as root")
    if not have_gcc():
        pytest.skip("gcc is needed to build the library stand-in")
    python = _system_python()
    base = world_readable_dir()
    try:
        marker, home, venv, lib = hostile_venv(base, python)
        code = "import ctypes, sys; ctypes.CDLL('libcudnn.so.9'); print('ready', flush=True); sys.stdin.readline()"
        t = Target([str(venv / "bin" / "python"), "-c", code], _plain_env(LD_LIBRARY_PATH=str(lib)), base,
                   prefix=["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"])
        try:
            started = _lines(marker)
            _rc, doc, err, _ = _check_cli(t.pid)
        finally:
            t.stop()
        lines = _lines(marker)
        assert started and {uid for _, uid in started} == {NOBODY}  # the attack is real: the process ran both
        assert all(uid == NOBODY for _, uid in lines), lines  # nothing ran as root
        assert doc is not None, err
        py = doc["process"]["python"]
        assert py is not None and py["base_prefix"] == str(home) and f"as user nobody (uid {NOBODY})" in py["how"]
        mapped = [c for c in doc["cudnn_loaded"] if c["main"]]
        assert [c["path"] for c in mapped] == [str(lib / "libcudnn.so.9")] and mapped[0]["version"] is None
        assert any("not loaded" in n and "libcudnn.so.9" in n for n in doc["notes"]), doc["notes"]
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_a_fifo_pth_file_in_its_site_packages_does_not_hang_the_check(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, capture_output=True)
    t = Target([str(venv / "bin" / "python"), "-c", "import sys; print('ready', flush=True); sys.stdin.readline()"],
               _plain_env(), tmp_path)
    try:
        site = next((venv / "lib").glob("python3*/site-packages"))
        os.mkfifo(site / "zz-planted.pth")  # after the process started: it never read it
        rc, doc, err, _took = _check_cli(t.pid)
    finally:
        t.stop()
    assert doc is not None and rc in (0, 1), err
    assert str(site) in doc["process"]["python"]["sys_path"]
    assert any(s.get("path") == str(site / "zz-planted.pth") for s in doc.get("skipped_files", [])) or \
        any("zz-planted.pth" in n for n in doc["notes"]), (doc.get("skipped_files"), doc["notes"])


def test_a_venv_of_a_debian_python_keeps_its_site_packages(tmp_path):
    """Debian's ``site.getsitepackages`` names ``site-packages`` only inside a virtual environment
    (``sys.prefix != sys.base_prefix``): the rebuilt ``sys.path`` of a venv made by ``/usr/bin/python3``
    lacked the venv's own ``site-packages`` (the frameworks installed there were not looked for)."""
    python = _system_python()
    venv = tmp_path / "venv"
    r = subprocess.run([python, "-m", "venv", "--without-pip", str(venv)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"{python} cannot make a venv here: {r.stderr.strip()[-200:]}")
    code = "import sys; print(repr(sys.path), flush=True); sys.stdin.readline()"
    t = Target([str(venv / "bin" / "python"), "-c", code], _plain_env(), tmp_path)
    try:
        own = [p or str(tmp_path) for p in ast.literal_eval(t.first)]
        _rc, doc, err, _ = _check_cli(t.pid)
    finally:
        t.stop()
    assert doc is not None, err
    got = doc["process"]["python"]["sys_path"]
    assert got[: len(own)] == own, (got, own)
    assert doc["process"]["python"]["prefix"] == str(venv)


FORGE = r"""
import ctypes, os, sys
fifo = sys.argv[1]
os.mkfifo(fifo)
class LinkMap(ctypes.Structure):  # the public head of glibc's struct link_map (<link.h>)
    _fields_ = [("l_addr", ctypes.c_void_p), ("l_name", ctypes.c_char_p), ("l_ld", ctypes.c_void_p),
                ("l_next", ctypes.c_void_p), ("l_prev", ctypes.c_void_p)]
lm = LinkMap.from_address(ctypes.CDLL("libm.so.6")._handle)  # a dlopen handle is its link_map
name = ctypes.create_string_buffer(fifo.encode())
lm.l_name = ctypes.cast(name, ctypes.c_char_p)
print("ready", flush=True)
sys.stdin.readline()
"""


def test_a_link_map_entry_the_process_wrote_itself_is_not_reported_as_mapped(tmp_path):
    """The link map lives in the process's own memory: a process can write any name there. A name
    of a ``libcudnn.so.9`` it never mapped (here a FIFO) was reported as the cuDNN mapped and in use;
    only what ``/proc/PID/maps`` (the kernel) shows is."""
    fifo = tmp_path / "libcudnn.so.9"
    t = Target([sys.executable, "-c", FORGE, str(fifo)], _plain_env(), tmp_path)
    try:
        _rc, doc, err, took = _check_cli(t.pid)
    finally:
        t.stop()
    assert doc is not None, err
    assert doc["cudnn_loaded"] == [] and doc["cudnn_in_use"] in (None, {}, []), (doc["cudnn_loaded"], doc["cudnn_in_use"])
    assert took < 60


def _kthread() -> int | None:
    for d in sorted(os.listdir("/proc"), key=lambda s: (len(s), s)):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat", "rb") as fh:
                    flags = int(fh.read().rsplit(b")", 1)[1].split()[6])
            except (OSError, ValueError, IndexError):
                continue
            if flags & 0x00200000:  # PF_KTHREAD (include/linux/sched.h)
                return int(d)
    return None


def test_a_kernel_thread_is_one_true_line():
    pid = _kthread()
    if pid is None:
        pytest.skip("no kernel thread is visible in this PID namespace")
    rc, doc, err, _ = _check_cli(pid)
    assert rc == 2 and doc is None
    lines = err.strip().splitlines()
    assert len(lines) == 1 and f"process {pid}" in lines[0] and "kernel thread" in lines[0], err


def test_a_process_this_root_may_not_read_is_told_the_real_reason():
    """Process 1 of this kind of machine (a VM's init) refuses ptrace read access even to root: the
    message said to run "as that user, or as root" to root itself."""
    try:
        with open("/proc/1/maps", "rb") as fh:
            fh.read(1)
        pytest.skip("process 1 is readable here: no process refuses this user")
    except PermissionError:
        pass
    except OSError as exc:
        pytest.skip(f"/proc/1/maps: {exc}")
    rc, doc, err, _ = _check_cli(1)
    assert rc == 2 and doc is None
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    if os.geteuid() == 0:
        assert "or as root" not in lines[0] and "refused" in lines[0] and "CAP_SYS_PTRACE" in lines[0], lines[0]
    else:
        assert "run cudnn-magic as that user" in lines[0], lines[0]


EXEC_CHILD = r"""
import ctypes, os, signal, sys, time
ctypes.CDLL(sys.argv[1])
def swap(*_):
    os.execv("/bin/sleep", ["sleep", "300"])
signal.signal(signal.SIGUSR1, swap)
print("ready", flush=True)
while True:
    time.sleep(1)
"""


@pytest.mark.native
def test_a_process_that_replaces_its_program_while_read_is_not_reported_half_old(tmp_path, monkeypatch):
    """The process runs ``execve`` between the reading of its memory map and the end of the check
    (its pid and start time stay the same). The report said a program ``sleep`` had cuDNN 9.12
    mapped (the old image's maps with the new image's command line); now each report is one image."""
    from cudnn_magic.engines import process as process_mod
    from helpers.real_wheels import install_wheel

    lib = install_wheel("nvidia-cudnn-jit-cu12", "9.12.0.46") / "nvidia" / "cudnn_jit" / "lib" / "libcudnn.so.9"
    t = Target([sys.executable, "-c", EXEC_CHILD, str(lib)], _plain_env(), tmp_path)
    real_layout = process_mod.python_layout
    swapped = []

    def layout_then_exec(facts, *a, **k):  # the process execs right after its maps were read
        out = real_layout(facts, *a, **k)
        if not swapped:
            swapped.append(True)
            os.kill(t.pid, signal.SIGUSR1)
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline and not os.readlink(f"/proc/{t.pid}/exe").endswith("sleep"):
                time.sleep(0.02)
        return out

    monkeypatch.setattr(process_mod, "python_layout", layout_then_exec)
    try:
        try:
            rep = process_mod.check_process(t.pid)
            doc = rep.to_json()
        except process_mod.ProcessCheckError as exc:
            doc = {"error": str(exc)}
    finally:
        t.stop()
    assert swapped
    if "error" in doc:
        assert "replaced its program" in doc["error"], doc
        return
    argv0 = os.path.basename(doc["process"]["argv"][0])
    mapped = [c["path"] for c in doc["cudnn_loaded"]]
    assert (argv0, bool(mapped)) in (("sleep", False), (os.path.basename(sys.executable), True)), (argv0, mapped)
    assert argv0 == "sleep" and doc["process"]["python"] is None


@pytest.mark.native
def test_an_ld_library_path_entry_that_is_not_utf8_is_named_as_written(tmp_path):
    """``/proc/PID/environ`` holds bytes: a folder whose name is not UTF-8 was decoded with U+FFFD
    and no longer named the folder the copy in use came from."""
    from helpers.real_wheels import install_wheel

    src = install_wheel("nvidia-cudnn-jit-cu12", "9.12.0.46") / "nvidia" / "cudnn_jit" / "lib"
    odd = os.path.join(os.fsencode(tmp_path), b"lib\xff")
    os.symlink(os.fsencode(src), odd)
    env = {b"PATH": b"/usr/bin:/bin", b"LD_LIBRARY_PATH": odd}
    code = "import ctypes, sys; ctypes.CDLL('libcudnn.so.9'); print('ready', flush=True); sys.stdin.readline()"
    t = Target([sys.executable, "-c", code], env, tmp_path)
    try:
        _rc, doc, err, _ = _check_cli(t.pid)
        from cudnn_magic.cli.process import cli_process

        text = io.StringIO()
        cli_process(str(t.pid), out=text)
    finally:
        t.stop()
    assert doc is not None, err
    assert doc["process"]["ld_library_path"] == os.fsdecode(odd)
    assert doc["cudnn_in_use"]["ld_library_path_entry"] == os.fsdecode(odd)
    text.getvalue().encode("utf-8")  # printable: the undecodable byte is shown replaced


@pytest.mark.native
def test_a_process_in_another_mount_namespace_is_read_where_it_sees_its_files(tmp_path):
    """A container's process: in its mount namespace, the folder it loaded cuDNN from holds 9.12;
    here the same path holds 9.27. It was reported as 9.27, the same root, no note. Its files are now
    read through ``/proc/PID/root`` (its own view)."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root and unshare(1) for a private mount namespace")
    from helpers.real_wheels import install_wheel

    old = install_wheel("nvidia-cudnn-jit-cu12", "9.12.0.46") / "nvidia" / "cudnn_jit" / "lib"
    new = install_wheel("nvidia-cudnn-jit-cu12", "9.27.0.42") / "nvidia" / "cudnn_jit" / "lib"
    here = tmp_path / "lib"
    shutil.copytree(new, here)
    code = (f"import ctypes, sys; l = ctypes.CDLL({str(here / 'libcudnn.so.9')!r}); l.cudnnGetVersion.restype = "
            "ctypes.c_size_t; print(l.cudnnGetVersion(), flush=True); sys.stdin.readline()")
    script = f"mount --bind {old} {here} && exec {sys.executable} -c \"$0\""
    t = Target(["unshare", "--mount", "--propagation", "private", "sh", "-c", script, code], _plain_env(), tmp_path)
    try:
        if t.first.strip() != "91200":
            pytest.skip(f"the private mount did not take: {t.first!r}")
        _rc, doc, err, _ = _check_cli(t.pid)
    finally:
        t.stop()
    assert doc is not None, err
    mains = [(c["path"], c["version"]) for c in doc["cudnn_loaded"] if c["main"]]
    assert mains == [(str(here / "libcudnn.so.9"), "9.12.0")], mains
    assert doc["process"]["same_root"] is False
    assert any("mount namespace" in n for n in doc["notes"]), doc["notes"]


# A long job that loaded cuDNN from a pip-installed wheel, then ``pip install -U`` of that wheel.
LOAD_AND_WAIT = ("import ctypes, sys; l = ctypes.CDLL(sys.argv[1]); l.cudnnGetVersion.restype = ctypes.c_size_t; "
                 "print(l.cudnnGetVersion(), flush=True); sys.stdin.readline()")


def _can_open_map_files(pid: int, prefix: list[str]) -> bool:
    """Can a process started with ``prefix`` open ``/proc/PID/map_files/`` entries (proc(5): only
    with CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE)?"""
    with open(f"/proc/{pid}/maps") as fh:
        rng = next(ln.split()[0] for ln in fh if ln.split()[-1].startswith("/"))
    code = "import os, sys; os.close(os.open(sys.argv[1], os.O_RDONLY))"
    return subprocess.run([*prefix, sys.executable, "-c", code, f"/proc/{pid}/map_files/{rng}"],
                          capture_output=True, timeout=60).returncode == 0


def _pip(python: Path, *args: str, prefix: list[str] | None = None, env: dict[str, str] | None = None) -> None:
    """This venv's real pip, installing for the interpreter ``python`` (``--python``), from local
    wheel files only."""
    r = subprocess.run([*(prefix or []), sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps",
                        "--no-index", "--no-cache-dir", "--disable-pip-version-check", "--no-input", *args],
                       capture_output=True, text=True, timeout=600, env=env, cwd="/")
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]


def _mapped(pid: int, name: str) -> list[str]:
    with open(f"/proc/{pid}/maps") as fh:
        return sorted({ln.split(None, 5)[5].rstrip("\n") for ln in fh
                       if len(ln.split(None, 5)) == 6 and f"/{name}" in ln})


@pytest.mark.native
@pytest.mark.parametrize("as_nobody", [False, True], ids=["root", "nobody"])
def test_a_cudnn_wheel_upgraded_by_pip_under_a_running_process(as_nobody):
    """A process loaded ``libcudnn.so.9`` from a real venv's ``nvidia-cudnn-jit-cu12`` 9.12.0.46 (real
    pip, local wheel), then a real ``pip install -U`` put 9.27.0.42 there: pip moved the old ``lib``
    folder to its stash ``~ib`` beside it and deleted it, so ``/proc/PID/maps`` names the mapping
    ``.../nvidia/cudnn_jit/~ib/libcudnn.so.9 (deleted)``. The check reported that stash path with
    no version (and no finding). Now: the path it was loaded by, and 9.12.0 read from the mapped
    file itself (``/proc/PID/map_files``), the copy marked replaced on disk (pip moved it aside), the
    finding; the text never shows the stash. As ``nobody`` (the job's own user), ``map_files`` does
    not open: the version is unknown and a note says why."""
    if as_nobody:
        if os.geteuid() != 0 or shutil.which("setpriv") is None:
            pytest.skip("needs root and setpriv: the job and the check run as nobody")
        require_unprivileged_child()
    drop = _drop() if as_nobody else []
    old_whl = wheel_file("nvidia-cudnn-jit-cu12", "9.12.0.46")
    new_whl = wheel_file("nvidia-cudnn-jit-cu12", "9.27.0.42")
    base = world_readable_dir()
    try:
        for whl in (old_whl, new_whl):  # readable by the job's user
            (base / whl.parent.name).mkdir()
            shutil.copy2(whl, base / whl.parent.name / whl.name)
        maker = _system_python() if as_nobody else sys.executable  # this venv's interpreter lies under a 0700 /root
        subprocess.run([maker, "-m", "venv", "--without-pip", str(base / "venv")], check=True, timeout=120)
        if as_nobody:
            subprocess.run(["chown", "-R", f"{NOBODY}:{NOBODY}", str(base)], check=True)
        python = base / "venv" / "bin" / "python"
        pip_env = {**_plain_env(), "HOME": str(base)}
        _pip(python, "--find-links", str(base / old_whl.parent.name), "nvidia-cudnn-jit-cu12==9.12.0.46",
             prefix=drop, env=pip_env)
        (site,) = (base / "venv" / "lib").glob("python3*/site-packages")
        lib = site / "nvidia" / "cudnn_jit" / "lib"
        t = Target([str(python), "-c", LOAD_AND_WAIT, str(lib / "libcudnn.so.9")], _plain_env(), base, prefix=drop)
        try:
            assert t.first.strip() == "91200"  # the job's own call: 9.12.0
            _pip(python, "--upgrade", "--find-links", str(base / new_whl.parent.name), "nvidia-cudnn-jit-cu12",
                 prefix=drop, env=pip_env)
            shown = _mapped(t.pid, "libcudnn.so.9")
            # the scenario is real: pip's stash beside the folder, deleted (pip 26.3 names it ~ib)
            assert len(shown) == 1 and shown[0].endswith("/libcudnn.so.9 (deleted)"), shown
            stash = os.path.basename(os.path.dirname(shown[0]))
            assert stash.startswith("~") and stash != "lib", shown
            readable = _can_open_map_files(t.pid, drop)
            _rc, doc, err, _ = _check_cli(t.pid, prefix=drop, env={"HOME": str(base)})
            text = subprocess.run([*drop, sys.executable, "-m", "cudnn_magic", "check", "--pid", str(t.pid)],
                                  capture_output=True, text=True, timeout=120, cwd="/",
                                  env={**_plain_env(), "PYTHONPATH": str(REPO)}).stdout
        finally:
            t.stop()
    finally:
        shutil.rmtree(base, ignore_errors=True)
    assert doc is not None, err
    assert readable is not as_nobody  # root opens map_files; nobody gets EPERM (proc(5))
    rows = {c["name"]: c for c in doc["cudnn_loaded"]}
    assert set(rows) == {"libcudnn.so.9", "libcudnn_graph.so.9"}, rows
    assert doc["process"]["load_order"].startswith("its dynamic linker's link map")
    for name, c in rows.items():
        assert c["path"] == str(lib / name)  # the path it was loaded by, not pip's stash
        assert "pip moved its folder aside" in c["replaced_on_disk"] and "replaced on disk since it was loaded" in \
            c["replaced_on_disk"] and "the file there now is cuDNN 9.27.0" in c["replaced_on_disk"], c
    assert doc["cudnn_in_use"]["path"] == str(lib / "libcudnn.so.9")
    assert stash not in text and stash not in json.dumps(doc), stash
    assert str(lib) in text or "cudnn_jit/lib" in text
    found = [f for f in doc["findings"] if f["id"] == "cudnn-replaced-on-disk"]
    assert len(found) == 1, doc["findings"]
    # the 9.27 file pip wrote at that path is another copy on disk, with its own release
    now = [(c["version"], c["loaded"], c["main"]) for c in doc["cudnn_installed"] if c["path"] == str(lib / "libcudnn.so.9")]
    assert now == [("9.27.0", False, True)], doc["cudnn_installed"]
    on_disk = text.split("Other cuDNN copies on disk", 1)[1].split("\n\n", 1)[0]
    assert re.search(r"libcudnn\.so\.9\W+9\.27\.0\W+pip wheel", on_disk), on_disk
    if readable:
        assert rows["libcudnn.so.9"]["version"] == rows["libcudnn_graph.so.9"]["version"] == "9.12.0"
        assert doc["cudnn_in_use"]["version"] == "9.12.0"
        assert f"/proc/{t.pid}/map_files" in rows["libcudnn_graph.so.9"]["version_source"]
        assert "9.12.0 (mapped; file replaced on disk)" in text
        assert [f["id"] for f in found[0]["fixes"]] == ["restart-kernel"] and "9.27.0" in found[0]["title"]
    else:
        assert rows["libcudnn.so.9"]["version"] is None and rows["libcudnn_graph.so.9"]["version"] is None
        why = [n for n in doc["notes"] if n.startswith(str(lib / "libcudnn_graph.so.9"))]
        assert len(why) == 1 and "replaced on disk since it was loaded" in why[0], doc["notes"]
        assert f"/proc/{t.pid}/map_files/" in why[0] and "could not be opened" in why[0], why
        assert "CAP_SYS_ADMIN" in why[0] and found[0]["fixes"] == []


@pytest.mark.native
def test_a_target_folder_upgraded_by_pip_under_a_running_process_is_read_from_the_mapped_copy(tmp_path):
    """A long job loaded cuDNN 9.12 from a ``pip install --target`` folder, then a real ``pip install
    --target --upgrade`` of 9.27 (pip deletes the old folder and moves the new one to the same
    path): ``/proc/PID/maps`` marks the old mapping `` (deleted)`` at the path it was loaded by. The
    check once read the new file there (9.27); then it gave no version; now the mapped file's own
    (``/proc/PID/map_files``, root here), never the new file's."""
    target = tmp_path / "site"
    old_whl = wheel_file("nvidia-cudnn-jit-cu12", "9.12.0.46")
    new_whl = wheel_file("nvidia-cudnn-jit-cu12", "9.27.0.42")
    _pip(Path(sys.executable), "--target", str(target), str(old_whl))
    lib = target / "nvidia" / "cudnn_jit" / "lib"
    t = Target([sys.executable, "-c", LOAD_AND_WAIT, str(lib / "libcudnn.so.9")], _plain_env(), tmp_path)
    try:
        assert t.first.strip() == "91200"
        _pip(Path(sys.executable), "--target", str(target), "--upgrade", str(new_whl))
        assert _mapped(t.pid, "libcudnn.so.9") == [f"{lib / 'libcudnn.so.9'} (deleted)"]
        readable = _can_open_map_files(t.pid, [])
        _rc, doc, err, _ = _check_cli(t.pid)
    finally:
        t.stop()
    assert doc is not None, err
    mains = [(c["path"], c["version"]) for c in doc["cudnn_loaded"] if c["main"]]
    assert mains == [(str(lib / "libcudnn.so.9"), "9.12.0" if readable else None)], mains
    main = next(c for c in doc["cudnn_loaded"] if c["main"])
    assert "removed or replaced on disk since it was loaded" in main["replaced_on_disk"]
    assert "the file there now is cuDNN 9.27.0" in main["replaced_on_disk"] and "pip" not in main["replaced_on_disk"]
    if not readable:
        assert any("replaced on disk since it was loaded" in n and "map_files" in n for n in doc["notes"]), doc["notes"]


def test_huge_variables_and_command_line_are_cut_in_the_text_and_whole_in_json(tmp_path):
    """A variable of the process may be 128 KiB (``MAX_ARG_STRLEN``): the text printed a 100 KB
    ``LD_LIBRARY_PATH`` line; now the text names its size and ``--json`` has it whole."""
    ldp = ":".join(["/"] * 10000 + [f"/nonexistent{i}" for i in range(5000)])
    code = "import sys; print('ready', flush=True); sys.stdin.readline()"
    t = Target([sys.executable, "-c", code, "y" * 100000], _plain_env(LD_LIBRARY_PATH=ldp, PYTHONPATH=ldp), tmp_path)
    try:
        _rc, doc, _err, _took = _check_cli(t.pid)
        e = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "PYTEST_CURRENT_TEST")}
        text = subprocess.run([sys.executable, "-m", "cudnn_magic", "check", "--pid", str(t.pid)], capture_output=True,
                              text=True, env={**e, "PYTHONPATH": str(REPO)}, timeout=120).stdout
    finally:
        t.stop()
    assert doc is not None and doc["process"]["ld_library_path"] == ldp and doc["process"]["argv"][-1] == "y" * 100000
    assert max(len(line) for line in text.splitlines()) < 1000
    assert "15000 entries" in text and "whole in --json" in text
