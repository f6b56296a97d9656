"""Crash records without a notebook: parsing, corrupt and truncated records, the shown marker,
the cleanup policy, the faulthandler summary, install-startup's file edits, and the whole
crash -> next-shell report in plain ``InteractiveShell`` child processes (the terminal key).

Records here are written byte for byte in the layout of :mod:`cudnn_magic.capture` (the
helper's ``meta.json``, ``fd2.<offset>.log`` segments and the shared ``state`` file packed with
the helper's own structs), so the reader is tested against the real format.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from cudnn_magic.capture import protocol as H
from cudnn_magic.engines import crash
from cudnn_magic.engines.startup import BEGIN, END, install_startup

REPO = Path(__file__).resolve().parents[3]

TF_LINE = ("F0000 00:00:1700000000.000000   4242 cuda_dnn.cc:1234] Check failed: status == "
           "CUDNN_STATUS_SUCCESS (7 vs. 0)Failed to set cuDNN stream.")

FH_DUMP = """Fatal Python error: Aborted

Thread 0x00007f0000000001 (most recent call first):
  File "/usr/lib/python3.11/threading.py", line 320 in wait
  File "/usr/lib/python3.11/threading.py", line 1002 in _bootstrap

Current thread 0x00007f0000000002 (most recent call first):
  File "/tmp/ipykernel_1/123.py", line 3 in <module>
  File "/venv/IPython/core/interactiveshell.py", line 3823 in run_code

Extension modules: zmq.backend.cython._zmq, tornado.speedups (total: 2)
"""


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def make_record(root: Path, key: str, *, pid: int | None = None, t_ns: int | None = None,
                meta: dict | str | None = None, log: bytes = b"", cell: str | None = "x = 1\nboom()",
                cell_offset: int = 0, fh: str | None = FH_DUMP, state: bytes | None = None) -> Path:
    """One instance directory in the capture's layout."""
    pid = pid or _dead_pid()
    d = root / key / f"{t_ns or time.time_ns()}-{pid}"
    d.mkdir(parents=True, mode=0o700)
    if meta is None:
        meta = {"version": 1, "kernel_pid": pid, "helper_pid": _dead_pid(), "started": time.time() - 5,
                "clean_exit": False, "kernel_exited": time.time() - 1, "ended": time.time() - 1,
                "offset": len(log), "key": key}
    if meta != "absent":
        (d / "meta.json").write_text(meta if isinstance(meta, str) else json.dumps(meta))
    if log:
        (d / ("fd2.%012d.log" % 0)).write_bytes(log)
    if state is not None:
        (d / "state").write_bytes(state)
    elif cell is not None:
        buf = bytearray(H.STATE_SIZE)
        src = cell.encode()
        H.CELL_HEAD.pack_into(buf, H.CELL_AT, 2, 7, cell_offset, time.time() - 2, len(src))
        buf[H.SOURCE_AT:H.SOURCE_AT + len(src)] = src
        (d / "state").write_bytes(bytes(buf))
    if fh is not None:
        (d / crash.FAULTHANDLER_NAME).write_text(fh)
    return d


def test_read_record_parses_cell_log_stack_and_diagnosis(tmp_path):
    log = b"noise before the cell\n" + TF_LINE.encode() + b"\n*** Check failure stack trace: ***\n"
    d = make_record(tmp_path, "kernel-abc", log=log, cell="import tensorflow as tf\nmodel.fit(x)", cell_offset=22)
    rec = crash.read_record(d)
    assert rec.crashed and not rec.problems, rec.problems
    assert rec.cell_source == "import tensorflow as tf\nmodel.fit(x)"
    assert rec.log.startswith("F0000") and "noise" not in rec.log  # from the cell's start
    assert "noise" in rec.log_tail
    assert [x.id for x in crash.diagnose_record(rec)] == ["cudnn-stream-set-failed"]
    text = rec.text()
    assert "the previous kernel died" in text and "model.fit(x)" in text and "Failed to set cuDNN stream" in text
    assert "Current thread" in text and 'line 3 in <module>' in text
    assert "(1 other thread in the record)" in text and "Extension modules" not in text
    assert "kernel-abc (keyed by the kernel's connection file kernel-abc.json)" in text
    html = rec.html()
    assert "cudnn-stream-set-failed" in html and "model.fit(x)" in html


def test_the_crash_notice_never_offers_the_restart_that_just_happened(tmp_path):
    """The notice shown in the restarted kernel never offers ``restart-kernel`` (the stream
    diagnosis's first fix elsewhere): the kernel showing it is that restart."""
    from cudnn_magic.engines.diagnose import diagnose

    log = TF_LINE.encode() + b"\n*** Check failure stack trace: ***\n"
    assert next(f.id for f in diagnose(log=log.decode())[0].fixes) == "restart-kernel"  # an error cell offers it
    rec = crash.read_record(make_record(tmp_path, "kernel-abc", log=log, cell="model.fit(x)", cell_offset=0))
    fixes = [f.id for d in crash.diagnose_record(rec) for f in d.fixes]
    assert fixes and "restart-kernel" not in fixes, fixes
    assert "restart-kernel" not in rec.text() and "restart-kernel" not in rec.html()


def test_nothing_from_the_record_is_executed_and_html_is_escaped(tmp_path):
    marker = tmp_path / "pwned"
    src = f"__import__('pathlib').Path({str(marker)!r}).write_text('x')  # <script>alert(1)</script>"
    d = make_record(tmp_path, "k", log=b"<img src=x onerror=alert(1)>\n\x1b[31mred\x1b[0m\n", cell=src)
    rec = crash.read_record(d)
    crash.diagnose_record(rec)
    html = rec.html()
    text = rec.text()
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "<img" not in html and "&lt;img" in html
    assert "\x1b" not in text and "\x1b" not in html  # terminal escapes neutralised
    assert not marker.exists()


@pytest.mark.parametrize("meta, problem", [
    ('{"kernel_pid": 1, "clean_exit": fal', "meta.json is corrupt or truncated"),
    ("absent", "meta.json is missing"),
    ("[1, 2, 3]", "meta.json is not a JSON object"),
    ("\x00\xff garbage", "meta.json is corrupt or truncated"),
])
def test_corrupt_or_missing_meta_is_reported_and_the_rest_still_shown(tmp_path, meta, problem):
    d = make_record(tmp_path, "k", meta=meta, log=TF_LINE.encode() + b"\n")
    rec = crash.read_record(d)
    assert any(problem in p for p in rec.problems), rec.problems
    assert rec.crashed  # pid from the directory name is dead
    assert rec.cell_source == "x = 1\nboom()"
    assert "Problems with the record" in rec.text()
    assert [x.id for x in crash.diagnose_record(rec)] == ["cudnn-stream-set-failed"]


def test_binary_garbage_truncated_state_and_missing_log_are_reported(tmp_path):
    garbage = bytes(range(256)) * 8
    d = make_record(tmp_path, "k", log=garbage + TF_LINE.encode() + b"\n", state=b"\x03" * 50)
    rec = crash.read_record(d)
    assert any("state is truncated" in p for p in rec.problems), rec.problems
    assert rec.cell_source is None and "cell it was running is not known" in rec.text()
    assert all(c >= " " or c in "\n\t" for c in rec.log_tail)
    assert "Failed to set cuDNN stream" in rec.log_tail
    # the log segments gone while meta.json says bytes were logged
    for f in d.glob("fd2.*.log"):
        f.unlink()
    rec = crash.read_record(d)
    assert "the log segments are missing" in rec.problems
    assert "printed nothing on native stderr" in rec.text()


def test_truncated_log_and_odd_seq_are_reported(tmp_path):
    meta = {"kernel_pid": _dead_pid(), "clean_exit": False, "kernel_exited": time.time(), "offset": 10_000}
    buf = bytearray(H.STATE_SIZE)
    H.CELL_HEAD.pack_into(buf, H.CELL_AT, 3, 1, 0, time.time(), 5)  # odd seq: being written
    d = make_record(tmp_path, "k", meta=meta, log=b"short\n", state=bytes(buf))
    rec = crash.read_record(d)
    assert any("shorter than recorded (6 of 10000 bytes)" in p for p in rec.problems), rec.problems
    assert any("recording the cell's start" in p for p in rec.problems), rec.problems


def test_clean_exit_and_live_kernels_are_not_crashes(tmp_path):
    clean = make_record(tmp_path, "k", meta={"kernel_pid": _dead_pid(), "clean_exit": True, "kernel_exited": 1.0})
    assert not crash.read_record(clean).crashed
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        d = make_record(tmp_path, "k2", pid=live.pid, meta={"kernel_pid": live.pid, "clean_exit": False})
        assert crash.read_record(d).alive
        assert crash.previous_crashes("k2", tmp_path) == []
    finally:
        live.kill()
        live.wait()
    assert crash.read_record(d).crashed  # dead now (reaped)


def test_claim_marks_shown_once_newest_first_and_counts_older(tmp_path):
    old = make_record(tmp_path, "k", t_ns=1_000, log=b"old\n")
    new = make_record(tmp_path, "k", t_ns=2_000, log=TF_LINE.encode() + b"\n")
    rec, older = crash.claim_previous("k", tmp_path)
    assert rec is not None and rec.directory == str(new) and older == 1
    assert (new / "shown").exists() and (old / "shown").exists()
    assert oct((new / "shown").stat().st_mode & 0o777) == "0o600"
    assert crash.claim_previous("k", tmp_path) == (None, 0)
    last = crash.last_crash("k", tmp_path)  # reading does not need unshown records
    assert last is not None and last.directory == str(new) and last.shown
    assert [x.id for x in last.diagnoses] == ["cudnn-stream-set-failed"]


def test_records_of_this_process_are_never_shown(tmp_path):
    make_record(tmp_path, "k", pid=os.getpid(), meta={"kernel_pid": os.getpid(), "clean_exit": False})
    assert crash.claim_previous("k", tmp_path) == (None, 0)


def _age(path: Path, seconds: float) -> None:
    t = time.time() - seconds
    for p in [path, *path.rglob("*")]:
        os.utime(p, (t, t), follow_symlinks=False)


def test_cleanup_policy(tmp_path):
    day = 86400
    gone_old = make_record(tmp_path, "kernel-gone-old").parent
    _age(gone_old, 8 * day)
    gone_new = make_record(tmp_path, "kernel-gone-new").parent
    _age(gone_new, 2 * day)
    conn = tmp_path / "conn.json"
    conn.write_text("{}")
    with_conn = make_record(tmp_path, "kernel-with-conn").parent
    (with_conn / crash.CONNECTION_NAME).write_text(str(conn))
    _age(with_conn, 8 * day)
    with_conn_ancient = make_record(tmp_path, "kernel-ancient").parent
    (with_conn_ancient / crash.CONNECTION_NAME).write_text(str(conn))
    _age(with_conn_ancient, 31 * day)
    terminal = make_record(tmp_path, "terminal-pts-9").parent
    _age(terminal, 8 * day)
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        alive = make_record(tmp_path, "kernel-alive", pid=live.pid,
                            meta={"kernel_pid": live.pid, "clean_exit": False}).parent
        _age(alive, 40 * day)
        mine = make_record(tmp_path, "kernel-mine").parent
        _age(mine, 40 * day)
        removed = crash.cleanup(tmp_path, keep_key="kernel-mine", force=True)
    finally:
        live.kill()
        live.wait()
    assert sorted(Path(p).name for p in removed) == ["kernel-ancient", "kernel-gone-old", "terminal-pts-9"]
    for kept in (gone_new, with_conn, alive, mine):
        assert kept.exists(), kept
    # rate limit: a second scan within the hour does nothing
    _age(gone_new, 9 * day)
    assert crash.cleanup(tmp_path, keep_key="kernel-mine") == []
    # the live kernel has died meanwhile: its 40-day-old records go too
    assert sorted(Path(p).name for p in crash.cleanup(tmp_path, keep_key="kernel-mine", force=True)) == [
        "kernel-alive", "kernel-gone-new"]


def test_cleanup_never_follows_symlinks(tmp_path):
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious").write_text("keep")
    root = tmp_path / "root"
    root.mkdir()
    (root / "kernel-link").symlink_to(victim)
    crash.cleanup(root, force=True, now=time.time() + 365 * 86400)
    assert (victim / "precious").exists()


def test_faulthandler_summary_without_structure_returns_text():
    assert crash.faulthandler_summary("just text\n") == "just text"
    s = crash.faulthandler_summary(FH_DUMP)
    assert s.splitlines()[0] == "Fatal Python error: Aborted"
    assert "threading.py" not in s and "123.py" in s


# The shape of a real dump cut short (tests/kernel/test_crash_kernel.py, 1 run in 10-25): faulthandler
# read a running thread's frames during the SIGABRT dump, faulted, and its SIGSEGV handler wrote a
# second header with no stack (the traceback dump is not re-entrant) before the process died.
FH_CUT_SHORT = """Fatal Python error: Aborted

Thread 0x00007f77dcf6f6c0 (most recent call first):
  File "/usr/lib/python3.11/subprocess.py", line 2004 in _try_wait
  File "/usr/lib/python3.11/threading.py", line 1002 in _bootstrap

Thread 0x00007f77f69586c0 (most recent call first):
  File "/venv/zmq/sugar/socket.py", line 713 in send
  File "/venv/zmq/eventloop/zmqstream.py", line ??? in _run_callback
Fatal Python error: Segmentation fault


Extension modules: zmq.backend.cython._zmq, tornado.speedups (total: 2)
"""


def test_faulthandler_summary_keeps_the_first_fault_when_the_dump_was_cut_short():
    s = crash.faulthandler_summary(FH_CUT_SHORT)
    lines = s.splitlines()
    assert lines[0] == "Fatal Python error: Aborted"  # the fault that killed it, not the nested one
    assert "cut short by a second fault" in lines[1] and "Segmentation fault" in lines[1]
    assert "crashing thread's stack was not written" in s
    # one line per thread written, newest frame each; the module list is not shown
    assert 'Thread 0x00007f77dcf6f6c0: File "/usr/lib/python3.11/subprocess.py", line 2004 in _try_wait' in s
    assert "socket.py\", line 713 in send" in s and "_bootstrap" not in s and "Extension modules" not in s


# A real dump that ends mid-way with no second header (tests/kernel/test_crash_kernel.py, the missing
# libcudnn_graph abort, 1 run in 10): the process died while faulthandler read a running thread.
FH_DIED_MIDWAY = """Fatal Python error: Aborted

Thread 0x00007f04c67fc6c0 (most recent call first):
  File "/usr/lib/python3.11/subprocess.py", line 2004 in _try_wait
Thread 0x00007f04c7fff6c0 (most recent call first):
  File "/venv/zmq/sugar/socket.py", line ??? in send
"""


def test_a_second_fault_header_in_the_middle_of_a_frame_line_is_found():
    # seen verbatim: the SIGSEGV handler's header landed after a half-written "  File " line
    dump = FH_DIED_MIDWAY + '  File "<frozen abc>", line 117 in __instancecheck__\n  File Fatal Python error: Segmentation fault\n\n\nExtension modules: zmq (total: 1)\n'
    s = crash.faulthandler_summary(dump, ends_with_module_list=True)
    assert s.splitlines()[0] == "Fatal Python error: Aborted"
    assert "cut short by a second fault" in s and "Segmentation fault" in s
    assert "Thread 0x00007f04c7fff6c0: File \"/venv/zmq/sugar/socket.py\"" in s


def test_a_dump_that_ends_midway_is_cut_short_only_for_writers_that_end_with_the_module_list():
    assert "cut short: the process died" in crash.faulthandler_summary(FH_DIED_MIDWAY, ends_with_module_list=True)
    # Python 3.9 writes no module list, and an unknown writer proves nothing: no claim then
    for flag in (False, None):
        s = crash.faulthandler_summary(FH_DIED_MIDWAY, ends_with_module_list=flag)
        assert "cut short" not in s and "crashing thread's stack was not written" in s
    # a complete dump of 3.11 is not called cut short
    assert "cut short" not in crash.faulthandler_summary(FH_DUMP, ends_with_module_list=True)


def test_read_record_takes_the_kernel_python_version_from_meta(tmp_path):
    pid = _dead_pid()
    meta = {"version": 1, "kernel_pid": pid, "clean_exit": False, "ended": time.time() - 1,
            "python_version": "3.11.7", "key": "kernel-v"}
    rec = crash.read_record(make_record(tmp_path, "kernel-v", pid=pid, meta=meta, fh=FH_DIED_MIDWAY))
    assert rec.python_version == (3, 11, 7)
    assert "cut short: the process died" in rec.text() and "cut short: the process died" in rec.html()
    meta["python_version"] = "3.11; rm -rf /"  # junk is ignored, not parsed
    rec = crash.read_record(make_record(tmp_path, "kernel-w", pid=pid, meta=meta, fh=FH_DIED_MIDWAY))
    assert rec.python_version is None and "cut short" not in rec.text()


def test_faulthandler_summary_finds_the_cell_thread_without_a_current_thread_block():
    # cut short after the main thread was written: its block runs the cell, so it is the one shown
    dump = FH_DUMP.replace("Current thread", "Thread").replace("Extension modules", "Fatal Python error: Segmentation fault\n\nExtension modules")
    s = crash.faulthandler_summary(dump)
    assert s.splitlines()[0] == "Fatal Python error: Aborted"
    assert "123.py" in s and "threading.py" not in s and "(1 other thread in the record)" in s


def test_faulthandler_summary_clips_a_deep_stack_below_the_header():
    frames = "".join(f'  File "/x/m{i}.py", line {i} in f{i}\n' for i in range(500))
    dump = f"Fatal Python error: Segmentation fault\n\nCurrent thread 0x1 (most recent call first):\n{frames}"
    s = crash.faulthandler_summary(dump, max_lines=40)
    lines = s.splitlines()
    assert lines[0] == "Fatal Python error: Segmentation fault" and len(lines) <= 41
    assert "m0.py" in s and "m499.py" not in s and "more lines ...]" in lines[-1]


def test_faulthandler_summary_of_a_single_thread_dump():
    dump = 'Fatal Python error: Aborted\n\nStack (most recent call first):\n  File "/tmp/ipykernel_9/1.py", line 1 in <module>\n'
    assert crash.faulthandler_summary(dump).splitlines()[-1].endswith("line 1 in <module>")


def test_key_description_names_the_key_kind():
    assert "terminal device /dev/pts/3" in crash.key_description("terminal-pts-3")
    assert "parent process id 42" in crash.key_description("process-42")
    assert "connection file kernel-1.json" in crash.key_description("kernel-1")


# --------------------------------------------------------------------------- install-startup


def test_install_startup_appends_to_user_config_and_undo_restores_it_exactly(tmp_path):
    cfg = tmp_path / "ipython_kernel_config.py"
    user = "c = get_config()  # noqa\nc.InteractiveShellApp.exec_lines = ['import numpy']\n"
    cfg.write_text(user)
    msg = install_startup(profile_dir=tmp_path)
    assert "Appended" in msg and str(cfg) in msg
    text = cfg.read_text()
    assert text.startswith(user) and BEGIN in text and END in text
    assert "Already installed" in install_startup(profile_dir=tmp_path)
    assert cfg.read_text().count(BEGIN) == 1
    assert "Removed the cudnn-magic block" in install_startup(undo=True, profile_dir=tmp_path)
    assert cfg.read_text() == user
    assert "Nothing to undo" in install_startup(undo=True, profile_dir=tmp_path)


def test_install_startup_config_is_valid_ipython_config(tmp_path):
    install_startup(profile_dir=tmp_path)
    from traitlets.config.loader import PyFileConfigLoader

    cfg = PyFileConfigLoader("ipython_kernel_config.py", path=str(tmp_path)).load_config()
    from traitlets.config import Config

    base = Config()
    base.InteractiveShellApp.extensions = ["storemagic_user"]
    base.merge(cfg)  # a lazy append merges with lists from lower-priority files
    ext = base.InteractiveShellApp.extensions
    value = ext.get_value(["other"]) if hasattr(ext, "get_value") else ext
    assert "cudnn_magic" in value


def test_install_startup_leaves_unterminated_block_alone(tmp_path):
    cfg = tmp_path / "ipython_kernel_config.py"
    cfg.write_text(f"x = 1\n{BEGIN}\nc.Foo.bar = 1\n")
    install_startup(undo=True, profile_dir=tmp_path)
    assert cfg.read_text() == f"x = 1\n{BEGIN}\nc.Foo.bar = 1\n"


def test_cli_install_startup_reports_unwritable_dir():
    """The CLI runs in a child dropped to ``nobody`` (the suite runs as root, which writes
    anywhere), so the folder really is not writable there."""
    import shutil

    from helpers.support import run_unprivileged, world_readable_dir

    home = world_readable_dir()
    try:
        ro = home / "ro"
        ro.mkdir()
        ro.chmod(0o555)
        can = run_unprivileged([sys.executable, "-c", "import os, sys; print(os.access(sys.argv[1], os.W_OK))", str(ro)],
                               home)
        assert can.stdout.strip() == "False", (can.stdout, can.stderr)  # the child really cannot write there
        r = run_unprivileged([sys.executable, "-m", "cudnn_magic", "install-startup", "--profile-dir", str(ro)], home)
        assert r.returncode == 2, (r.stdout, r.stderr)
        assert "cannot write" in r.stderr, r.stderr
        assert not (ro / "ipython_kernel_config.py").exists()
    finally:
        shutil.rmtree(home, ignore_errors=True)


# --------------------------------------------------------------------------- a whole cycle, terminal key


SHELL = """
import os, sys
from IPython.core.interactiveshell import InteractiveShell
ip = InteractiveShell.instance(colors="nocolor")
ip.run_cell("%load_ext cudnn_magic")
print("@@loaded", flush=True)
"""


def _child(tmp: Path, body: str) -> subprocess.CompletedProcess:
    script = tmp / "child.py"
    script.write_text(SHELL + textwrap.dedent(body))
    e = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}
    e["PYTHONPATH"] = os.pathsep.join([str(REPO)] + [p for p in e.get("PYTHONPATH", "").split(os.pathsep) if p])
    e.update(HOME=str(tmp), IPYTHONDIR=str(tmp / "ipython"), JUPYTER_RUNTIME_DIR=str(tmp / "runtime"))
    return subprocess.run([sys.executable, str(script)], stdin=subprocess.DEVNULL, capture_output=True,
                          env=e, timeout=120)


def test_shell_crash_then_next_shell_shows_report_once_with_its_key(tmp_path):
    line = TF_LINE.encode() + b"\n"
    cell = f"import ctypes\nl = {line!r}\nctypes.CDLL(None).write(2, l, len(l))\nctypes.CDLL(None).abort()"
    crash_body = f"ip.run_cell({cell!r})\n"
    p = _child(tmp_path, crash_body)
    assert p.returncode == -6, p.stderr[-2000:]
    assert TF_LINE.encode() in p.stderr  # the user still sees the fatal line (forwarded)
    p2 = _child(tmp_path, "print('@@second', flush=True)\nip.run_cell('%reload_ext cudnn_magic')\nprint('@@end')\n")
    out = p2.stdout.decode()
    assert p2.returncode == 0, p2.stderr.decode()[-2000:]
    report = out.split("@@loaded")[0]
    assert "the previous kernel died" in report and "cudnn-stream-set-failed" in report, out
    assert "ctypes.CDLL(None).abort()" in report and "Failed to set cuDNN stream" in report
    assert "Fatal Python error: Aborted" in report
    assert f"process-{os.getpid()} (no terminal and no kernel: keyed by the parent process id {os.getpid()})" in report
    assert out.split("@@second")[1].split("@@end")[0].strip() == ""  # reload: nothing again
    p3 = _child(tmp_path, "")  # after a clean exit: nothing
    assert p3.stdout.decode().split("@@loaded")[0].strip() == ""


def test_terminal_shells_on_one_tty_share_the_key_and_the_report_names_it(tmp_path):
    import pty

    master, slave = pty.openpty()
    try:
        name = os.ttyname(slave).replace("/dev/", "").replace("/", "-")

        def child(body: str) -> subprocess.CompletedProcess:
            script = tmp_path / "tty_child.py"
            script.write_text(SHELL + textwrap.dedent(body))
            e = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}
            e["PYTHONPATH"] = os.pathsep.join([str(REPO)] + [p for p in e.get("PYTHONPATH", "").split(os.pathsep) if p])
            e.update(HOME=str(tmp_path), IPYTHONDIR=str(tmp_path / "ipython"), JUPYTER_RUNTIME_DIR=str(tmp_path / "rt"))
            return subprocess.run([sys.executable, str(script)], stdin=slave, capture_output=True, env=e, timeout=120)

        p = child("ip.run_cell('import ctypes; ctypes.string_at(0)')\n")
        assert p.returncode == -11, p.stderr[-2000:]
        out = child("").stdout.decode()
    finally:
        os.close(master)
        os.close(slave)
    report = out.split("@@loaded")[0]
    assert f"terminal-{name} (terminal IPython: keyed by the terminal device /dev/{name.replace('-', '/')})" in report, out
    assert "ctypes.string_at(0)" in report and "Fatal Python error: Segmentation fault" in report


# --------------------------------------------------------------------------- deep probe, stand-ins


def _lib(path: Path, src: str, soname: str, extra: tuple = ()) -> Path:
    from helpers.support import build_c_library

    return build_c_library(src, path, soname=soname, extra=list(extra))


def test_deep_probe_names_missing_dependency_and_undefined_symbol(tmp_path):
    from cudnn_magic.probes.subprocess_probe import deep_probe

    d = tmp_path / "cudnn8"
    d.mkdir()
    _lib(d / "libcudnn.so.8", "int cudnnGetVersion(void){return 8902;}", "libcudnn.so.8")
    dep = _lib(tmp_path / "dep" / "libnvrtc.so.11.2", "int nvrtcVersion(void){return 0;}", "libnvrtc.so.11.2")
    for stem in ("ops_infer", "ops_train", "cnn_train", "adv_infer"):
        _lib(d / f"libcudnn_{stem}.so.8", "int cudnnGetVersion(void){return 8902;}", f"libcudnn_{stem}.so.8")
    # links against libnvrtc, which is then not on any search path
    _lib(d / "libcudnn_cnn_infer.so.8", "int nvrtcVersion(void); int f(void){return nvrtcVersion();}",
         "libcudnn_cnn_infer.so.8", (f"-L{dep.parent}", "-l:libnvrtc.so.11.2"))
    # a symbol no library provides
    _lib(d / "libcudnn_adv_train.so.8", "int cudnnNotThere(void); int g(void){return cudnnNotThere();}",
         "libcudnn_adv_train.so.8")
    r = deep_probe([str(d / "libcudnn.so.8")], env={k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"})
    res = r[str(d / "libcudnn.so.8")]
    kinds = {(p.library, p.kind) for p in res.errors}
    assert ("libcudnn_cnn_infer.so.8", "missing-dependency") in kinds, res.problems
    assert ("libcudnn_adv_train.so.8", "undefined-symbol") in kinds, res.problems
    assert "libnvrtc.so.11.2" in res.error and "cudnnNotThere" in res.error
    assert res.version == 8902


def test_deep_probe_cudnn8_missing_sublibrary_and_mixed_versions(tmp_path):
    from cudnn_magic.probes.subprocess_probe import deep_probe

    d = tmp_path / "cudnn8"
    d.mkdir()
    _lib(d / "libcudnn.so.8", "int cudnnGetVersion(void){return 8902;}", "libcudnn.so.8")
    for stem in ("ops_infer", "ops_train", "cnn_infer", "cnn_train", "adv_infer"):
        v = 8600 if stem == "cnn_train" else 8902
        _lib(d / f"libcudnn_{stem}.so.8", f"int cudnnGetVersion(void){{return {v};}}", f"libcudnn_{stem}.so.8")
    res = deep_probe([str(d / "libcudnn.so.8")])[str(d / "libcudnn.so.8")]
    kinds = {(p.library, p.kind) for p in res.errors}
    assert ("libcudnn_adv_train.so.8", "missing-file") in kinds, res.problems
    assert ("libcudnn_cnn_train.so.8", "mixed-versions") in kinds, res.problems
    assert "reports cuDNN version 8600" in res.error


def test_deep_probe_of_the_real_wheel_has_no_errors(tmp_path):
    from cudnn_magic.probes.subprocess_probe import deep_probe
    from helpers.support import require_real_cudnn

    path = str(require_real_cudnn() / "libcudnn.so.9")
    res = deep_probe([path])[path]
    assert res.errors == (), res.problems
    assert res.version and res.version >= 90000
    assert ("cudnnGraphVersionCheck", 0) in res.checks
    assert "libcudnn_graph.so.9" in dict(res.sub_versions)


def test_binary_bytes_in_the_log_are_shown_as_their_size(tmp_path):
    log = b"before\n" + bytes(range(128, 256)) * 40 + b"\n" + TF_LINE.encode() + b"\n"
    rec = crash.read_record(make_record(tmp_path, "kernel-bin", log=log))
    text = rec.text()
    assert "characters of binary data]" in text and "\ufffd" not in text
    assert "before" in text and TF_LINE[-40:] in text and TF_LINE in rec.html() and "characters of binary data]" in rec.html()


# --------------------------------------------------------------------------------------------------
# Records of another user.
#
# A crash record of another user is never shown as this kernel's crash: a record directory under
# this kernel's key that another uid owns, or that group or others may write (mode 0777: anyone
# could have planted or edited it), or a record file in it that is another user's or writable by
# others, is refused silently (a debug log line): every record folder and file is opened with
# ``O_NOFOLLOW`` and checked with ``fstat`` (``st_uid == os.getuid()``, no group/other write bit).
# As root, ``os.chown`` to ``nobody`` (65534) is real; without that privilege the chown cases are
# skipped with the reason (the mode cases still run).
# --------------------------------------------------------------------------------------------------


NOBODY = 65534


def _chown_tree(path: Path, uid: int = NOBODY) -> None:
    try:
        for p in [path, *path.rglob("*")]:
            os.chown(p, uid, uid, follow_symlinks=False)
    except PermissionError as exc:
        pytest.skip(f"chown to uid {uid} is not permitted for uid {os.getuid()} here ({exc})")


def _dir_of_another_uid(inst: Path) -> None:
    _chown_tree(inst)


def _dir_of_another_uid_mode_0777(inst: Path) -> None:
    _chown_tree(inst)
    inst.chmod(0o777)


def _dir_mode_0777(inst: Path) -> None:
    inst.chmod(0o777)


def _meta_of_another_uid(inst: Path) -> None:
    _chown_tree(inst / "meta.json")


def _log_writable_by_others(inst: Path) -> None:
    next(inst.glob("fd2.*.log")).chmod(0o666)


def _faulthandler_of_another_uid(inst: Path) -> None:
    _chown_tree(inst / crash.FAULTHANDLER_NAME)


def _key_dir_mode_0777(inst: Path) -> None:
    inst.parent.chmod(0o777)


TAMPERING = {
    "dir-of-another-uid": _dir_of_another_uid,
    "dir-of-another-uid-mode-0777": _dir_of_another_uid_mode_0777,
    "dir-mode-0777": _dir_mode_0777,
    "meta.json-of-another-uid": _meta_of_another_uid,
    "log-segment-writable-by-others": _log_writable_by_others,
    "faulthandler.log-of-another-uid": _faulthandler_of_another_uid,
    "key-dir-mode-0777": _key_dir_mode_0777,
}


@pytest.mark.parametrize("how", list(TAMPERING))
def test_a_record_of_another_user_or_writable_by_others_is_refused(tmp_path, how, caplog):
    root = tmp_path / "records"
    inst = make_record(root, "kernel-abc", log=TF_LINE.encode() + b"\n")
    # the control: the same record, untouched, is this key's crash
    assert [r.directory for r in crash.previous_crashes("kernel-abc", root)] == [str(inst)]
    TAMPERING[how](inst)
    with caplog.at_level(logging.DEBUG, logger="cudnn_magic"):
        assert crash.previous_crashes("kernel-abc", root) == []
        assert crash.claim_previous("kernel-abc", root) == (None, 0)
        assert crash.last_crash("kernel-abc", root) is None
        assert crash.all_crashes(root) == []
    assert not (inst / crash.SHOWN_NAME).exists()
    assert any("not read" in m or "refused" in m for m in caplog.messages), caplog.messages


def test_read_record_of_another_users_folder_reads_nothing(tmp_path):
    inst = make_record(tmp_path, "kernel-abc", log=TF_LINE.encode() + b"\n", cell="secret = 1")
    _chown_tree(inst)
    rec = crash.read_record(inst)
    assert rec.cell_source is None and not rec.log and rec.faulthandler in (None, "")
    assert any("not this user's own" in p for p in rec.problems), rec.problems


def test_the_notice_at_load_never_shows_another_users_record(tmp_path):
    """End to end: a shell child (the process key, as in the tests above) loads the extension
    over a planted record of its key. Untouched, the record is shown; owned by nobody with mode
    0777, nothing is shown."""
    key = f"process-{os.getpid()}"
    root = tmp_path / "runtime" / "cudnn-magic"
    shown = make_record(root, key, log=TF_LINE.encode() + b"\n")
    out = _child(tmp_path, "").stdout.decode()
    assert "the previous kernel died" in out.split("@@loaded")[0], out  # the control
    planted = make_record(root, key, log=TF_LINE.encode() + b"\n", cell="planted_by_another_user()")
    assert planted != shown
    _chown_tree(planted)
    planted.chmod(0o777)
    p = _child(tmp_path, "")
    assert p.returncode == 0, p.stderr.decode()[-2000:]
    report = p.stdout.decode().split("@@loaded")[0]
    assert report.strip() == "", report
    assert not (planted / crash.SHOWN_NAME).exists()
