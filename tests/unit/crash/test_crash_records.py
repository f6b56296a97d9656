"""Crash records and state on disk, attacked.

* A full disk (a real 1 MiB tmpfs, mounted by the test; skipped with the reason where mounting
  is not permitted) during a graceful restart must not turn into a reported crash, and leaves
  no temporary files behind.
* Every file the extension creates is created exclusively and never through a link planted in
  the records directory (a real kernel, real symlinks).
* ``cudnn-magic crashes --key`` takes one path component; a record's log that is a link is not
  followed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers.kernel_session import KernelSession
from helpers.support import REPO, kernel_env, outputs_text, run_coroutine

TF_LINE = ("F0000 00:00:1700000000.000000   4242 cuda_dnn.cc:1234] Check failed: status == "
           "CUDNN_STATUS_SUCCESS (7 vs. 0)Failed to set cuDNN stream.")


def _mount_tmpfs(path: Path, size: str) -> None:
    path.mkdir(parents=True, exist_ok=True)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(path)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"mounting a tmpfs is not permitted here ({(r.stderr or r.stdout).strip()}); the full-disk "
                    "attack needs a small real filesystem")


def _umount(path: Path) -> None:
    subprocess.run(["umount", "-l", str(path)], capture_output=True)


def _fill(path: Path) -> int:
    """Fill the filesystem of ``path``; returns the bytes written."""
    n = 0
    fd = os.open(path / "filler", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        while True:
            n += os.write(fd, b"\0" * 4096)
    except OSError:
        pass
    finally:
        os.close(fd)
    return n


@pytest.mark.kernel
def test_full_disk_then_graceful_restart_reports_no_crash(tmp_path):
    """The attack: the disk fills up, then the kernel is restarted gracefully. Before the fix
    ``meta.json`` could not be updated (a 0-byte ``meta.json.tmp`` was left) and the next
    kernel reported "the previous kernel died ... It was running cell In [3]"."""
    from jupyter_client.manager import AsyncKernelManager

    from helpers.kernel_session import restart_and_wait, run_cells

    env = kernel_env(tmp_path)
    records = Path(env["JUPYTER_RUNTIME_DIR"]) / "cudnn-magic"
    _mount_tmpfs(records, "1m")
    try:
        async def go():
            km = AsyncKernelManager(kernel_name="python3")
            await km.start_kernel(env=env, cwd=str(tmp_path))
            try:
                nb, died = await run_cells(km, ["%load_ext cudnn_magic", "import os\nos.write(2, b'before the disk fills\\n')",
                                           "x = 1"])
                assert not died, outputs_text(nb.cells[0])
                filled = _fill(records)
                nb, died = await run_cells(km, ["os.write(2, b'x' * 5000)\nprint('cell on a full disk')",
                                           "print('another cell')"])
                assert not died and "cell on a full disk" in outputs_text(nb.cells[0])
                time.sleep(2.5)  # noqa: ASYNC251 - the helper tries to refresh meta.json (every 2 s): it fails
                await restart_and_wait(km, now=False)  # graceful, as JupyterLab's Restart Kernel
                nb2, _died2 = await run_cells(km, [
                    "%load_ext cudnn_magic",
                    "import cudnn_magic.shell.crash_notice as _c\nprint('SHOWN', _c.shown_record())"])
                return filled, outputs_text(nb2.cells[0]), outputs_text(nb2.cells[1])
            finally:
                await km.shutdown_kernel(now=True)

        filled, load_out, shown = run_coroutine(go())
        assert filled > 0
        assert "previous kernel died" not in load_out, load_out
        assert "SHOWN None" in shown, shown
        leftovers = [p.name for p in records.rglob("*") if p.name.endswith(".tmp")]
        assert leftovers == [], leftovers
    finally:
        _umount(records)


@pytest.mark.kernel
def test_no_file_is_written_through_a_link_planted_in_the_records_directory(tmp_path):
    """The attack: ``<key>/.connection.<pid>`` was opened without ``O_NOFOLLOW | O_EXCL``, so a
    symlink planted there was written through. Links are planted at every predictable name
    the extension creates for a kernel: the connection note, the faulthandler file, the
    cleanup stamp (dangling, so following it would create its target)."""
    ks = KernelSession(tmp_path)
    try:
        pid = ks.km.provisioner.process.pid
        key = Path(ks.km.connection_file).name[:-len(".json")]
        root = Path(kernel_env(tmp_path)["JUPYTER_RUNTIME_DIR"]) / "cudnn-magic"
        keydir = root / key
        keydir.mkdir(parents=True, mode=0o700)
        os.chmod(root, 0o700)
        victims = {name: tmp_path / f"victim-{i}" for i, name in
                   enumerate((f".connection.{pid}", f"faulthandler-{pid}.pending"))}
        for name, victim in victims.items():
            victim.write_text("keep me")
            os.symlink(victim, keydir / name)
        created_by_link = tmp_path / "created-by-link"
        os.symlink(created_by_link, root / ".cleanup-stamp")
        os.utime(root / ".cleanup-stamp", (0, 0), follow_symlinks=False)  # due: the cleanup runs now
        c = ks.run("%load_ext cudnn_magic\nimport os, glob\n"
                   "from cudnn_magic.shell.annotate import annotator\n"
                   "print('RECORD', annotator().tee.directory)")
        assert c.reply["status"] == "ok", c.text()
        for name, victim in victims.items():
            assert victim.read_text() == "keep me", f"{name} was written through"
        assert not created_by_link.exists()
        conn = keydir / "connection"
        assert conn.is_file() and not conn.is_symlink() and conn.read_text() == os.path.abspath(ks.km.connection_file)
        # faulthandler still got its own file (the planted link was replaced, not followed)
        ks.run("pass")  # the file moves into the record at the next cell
        record = Path(c.stream("stdout").split("RECORD", 1)[1].strip())
        fh = record / "faulthandler.log"
        assert fh.is_file() and not fh.is_symlink()
        stamp = root / ".cleanup-stamp"
        assert stamp.is_file() and not stamp.is_symlink()  # the planted link was replaced
        for p in [record, *record.iterdir(), keydir, *keydir.iterdir()]:
            assert not p.is_symlink() or p.name in victims, p
    finally:
        ks.close()


def _crashes(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO), "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime")}
    return subprocess.run([sys.executable, "-m", "cudnn_magic", "crashes", *args], capture_output=True, text=True,
                          env=env, timeout=60)


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def _record(root: Path, key: str) -> Path:
    pid = _dead_pid()
    d = root / key / f"{time.time_ns()}-{pid}"
    d.mkdir(parents=True, mode=0o700)
    (d / "meta.json").write_text(json.dumps({"version": 1, "kernel_pid": pid, "clean_exit": False,
                                             "kernel_exited": time.time() - 1, "offset": 100}))
    return d


@pytest.mark.parametrize("key", ["../../x", "..", "/etc", "a/b", "", ".hidden", "x\0y"])
def test_crashes_key_must_be_one_path_component(tmp_path, key):
    """The attack: ``cudnn-magic crashes --key ../../x`` (or an absolute path) read records
    outside the records root."""
    outside = tmp_path / "outside"
    _record(outside, "x")  # what ../../x would reach from <runtime>/cudnn-magic/
    if key == "x\0y":
        import io

        from cudnn_magic.cli.crashes import cli_crashes

        err = io.StringIO()
        assert cli_crashes(out=io.StringIO(), key=key, err=err) == 2 and "--key" in err.getvalue()
        return
    p = _crashes(tmp_path, "--key", key)
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    assert "--key" in p.stderr and "Traceback" not in p.stderr and p.stdout == ""


def test_a_symlinked_log_or_record_is_not_followed(tmp_path):
    """The attack: a record whose log segment is a symlink to another file made ``crashes``
    print that file's contents."""
    root = tmp_path / "runtime" / "cudnn-magic"
    secret = tmp_path / "secret.txt"
    secret.write_text("TOPSECRET " + TF_LINE + "\n")
    d = _record(root, "k")
    os.symlink(secret, d / "fd2.000000000000.log")
    other = _record(tmp_path / "elsewhere", "k2")
    (other / "fd2.000000000000.log").write_text("ELSEWHERE " + TF_LINE + "\n")
    os.symlink(other, root / "k" / f"{time.time_ns()}-{_dead_pid()}")  # a linked instance directory
    os.symlink(tmp_path / "elsewhere" / "k2", root / "k3")  # a linked key directory
    for args in (("--key", "k"), ("--key", "k3"), ()):
        p = _crashes(tmp_path, *args)
        assert p.returncode == 0, p.stderr
        assert "TOPSECRET" not in p.stdout and "ELSEWHERE" not in p.stdout, p.stdout
    p = _crashes(tmp_path, "--key", "k", "--json")
    recs = json.loads(p.stdout)
    assert len(recs) == 1 and any("not a regular file" in x for x in recs[0]["problems"]), recs
