"""Fixes and the undo journal, attacked: undo trusts nothing in the journal, and two kernels
editing one kernel.json at once never lose an edit in silence.

The journal is a file anything running as the user can write. Each forged record here asks
undo for something the fix never does: run a program, read or delete a file outside the
kernelspec (through ``..`` or a symlink), set ``LD_PRELOAD`` in a kernel. Each is run through the
real CLI or a real kernel, with real kernelspecs that jupyter_client finds.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.kernel_session import KernelSession
from helpers.support import REPO


@pytest.fixture
def home(tmp_path):
    """Isolated JUPYTER_PATH (one kernelspec ``k``), data dir and undo journal; the env for
    child processes."""
    for sub in ("jp/kernels/k", "data", "runtime", "state", "config"):
        (tmp_path / sub).mkdir(parents=True)
    spec = {"argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            "display_name": "k", "language": "python", "env": {"KEEP": "1"}}
    (tmp_path / "jp/kernels/k/kernel.json").write_text(json.dumps(spec, indent=1) + "\n")
    env = {**{k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"},
           "PYTHONPATH": str(REPO), "JUPYTER_PATH": str(tmp_path / "jp"), "JUPYTER_DATA_DIR": str(tmp_path / "data"),
           "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"), "JUPYTER_CONFIG_DIR": str(tmp_path / "config"),
           "CUDNN_MAGIC_STATE_DIR": str(tmp_path / "state")}
    env.pop("JUPYTER_PREFER_ENV_PATH", None)
    return tmp_path, env


def _journal(tmp: Path, fix_id: str, records: list) -> None:
    (tmp / "state" / "undo.json").write_text(json.dumps({fix_id: [{"time": 1, "records": records}]}))


def _undo(env: dict, fix_id: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cudnn_magic", "fix", fix_id, "--undo"], capture_output=True,
                          text=True, env=env, timeout=120)


def test_a_journal_pip_record_cannot_run_a_script_dressed_as_a_venv_python(home):
    """The attack: a ``pip`` record naming ``fakevenv/bin/python3`` (a shell script, with a
    ``pyvenv.cfg`` one folder up) was executed by ``cudnn-magic fix --undo``."""
    tmp, env = home
    marker = tmp / "it-ran"
    script = tmp / "fakevenv" / "bin" / "python3"
    script.parent.mkdir(parents=True)
    script.write_text(f"#!/bin/sh\ntouch {marker}\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    (tmp / "fakevenv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    _journal(tmp, "install-matching-cudnn",
             [{"kind": "pip", "python": str(script), "package": "nvidia-cudnn-cu12", "previous": None}])
    p = _undo(env, "install-matching-cudnn")
    assert not marker.exists(), "the script ran"
    assert p.returncode != 0 and "refused" in p.stdout + p.stderr, p.stdout + p.stderr
    assert "nothing was touched" in p.stdout + p.stderr


def test_a_journal_kernelspec_record_cannot_read_or_delete_files_outside_it(home):
    """The attack: a ``kernelspec`` record whose backup is ``kernel.json.cudnn-magic-backup-/../../x``
    (or a symlink with a proper backup name) made undo copy any file into ``kernel.json`` and
    delete it."""
    tmp, env = home
    kj = tmp / "jp/kernels/k/kernel.json"
    before = kj.read_bytes()
    sha = hashlib.sha256(before).hexdigest()
    victim = tmp / "jp" / "kernels" / "victim"  # where .../k/kernel.json.cudnn-magic-backup-/../../victim leads
    (kj.parent / "kernel.json.cudnn-magic-backup-").mkdir()  # so that the kernel resolves that path
    victim.write_text('{"argv": ["/tmp/evil"], "env": {}}')
    secret = tmp / "secret.json"
    secret.write_text('{"argv": ["/tmp/evil"], "display_name": "SECRET", "env": {}}')
    link = kj.parent / "kernel.json.cudnn-magic-backup-20260101-000000"
    os.symlink(secret, link)
    for backup in (str(kj) + ".cudnn-magic-backup-/../../victim", str(link), str(tmp / "secret.json")):
        _journal(tmp, "remove-shadowing-dir",
                 [{"kind": "kernelspec", "path": str(kj), "backup": backup, "after_sha256": sha}])
        p = _undo(env, "remove-shadowing-dir")
        assert p.returncode != 0 and "refused" in p.stdout + p.stderr, (backup, p.stdout, p.stderr)
        assert kj.read_bytes() == before, backup
    assert victim.exists() and secret.exists() and link.is_symlink()
    # a path that is no kernelspec jupyter_client knows is refused too
    other = tmp / "not-a-kernelspec" / "kernel.json"
    other.parent.mkdir()
    other.write_text("{}")
    _journal(tmp, "remove-shadowing-dir",
             [{"kind": "kernelspec", "path": str(other), "backup": None, "created": [str(other)],
               "created_dir": str(other.parent), "after_sha256": hashlib.sha256(b"{}").hexdigest()}])
    p = _undo(env, "remove-shadowing-dir")
    assert p.returncode != 0 and "not the kernel.json of a kernelspec jupyter_client knows" in p.stdout + p.stderr
    assert other.exists()


def test_a_genuine_backup_that_changes_more_than_the_fix_is_refused(home):
    """A backup with the right name beside the right kernel.json, but holding another argv:
    undo only restores the variables the fix itself set."""
    tmp, env = home
    kj = tmp / "jp/kernels/k/kernel.json"
    sha = hashlib.sha256(kj.read_bytes()).hexdigest()
    forged = json.loads(kj.read_text())
    forged["argv"] = ["/tmp/evil", "-f", "{connection_file}"]
    (kj.parent / "kernel.json.cudnn-magic-backup-20260101-000000").write_text(json.dumps(forged))
    _journal(tmp, "remove-shadowing-dir", [{"kind": "kernelspec", "path": str(kj), "after_sha256": sha,
                                            "backup": str(kj.parent / "kernel.json.cudnn-magic-backup-20260101-000000")}])
    p = _undo(env, "remove-shadowing-dir")
    assert p.returncode != 0 and "differs from" in p.stdout + p.stderr, p.stdout + p.stderr
    assert "/tmp/evil" not in kj.read_text()


@pytest.mark.kernel
def test_a_journal_environ_record_cannot_set_ld_preload_in_a_kernel(tmp_path):
    """The attack: an ``environ`` record set any variable in the kernel (``LD_PRELOAD``), so
    later subprocesses loaded that library. Undo restores only what the fix itself changed,
    in the process that changed it."""
    state = tmp_path / "state"
    state.mkdir()
    (state / "undo.json").write_text(json.dumps({"allow-memory-growth": [{"time": 1, "records": [
        {"kind": "environ", "name": "LD_PRELOAD", "previous": "/tmp/evil.so"}]}],
        "remove-shadowing-dir": [{"time": 1, "records": [
            {"kind": "environ", "name": "LD_LIBRARY_PATH", "previous": "/tmp/evil", "pid": 1}]}]}))
    ks = KernelSession(tmp_path, env={"CUDNN_MAGIC_STATE_DIR": str(state)})
    try:
        c = ks.run("%load_ext cudnn_magic\nr = %cudnn_fix --undo allow-memory-growth\nprint(r)\n"
                   "r2 = %cudnn_fix --undo remove-shadowing-dir\nprint(r2)\n"
                   "import os, subprocess\nprint('PRELOAD', repr(os.environ.get('LD_PRELOAD')))\n"
                   "print('LDPATH', repr(os.environ.get('LD_LIBRARY_PATH')))\n"
                   "print('CHILD', subprocess.run(['sh', '-c', 'echo \"[$LD_PRELOAD]\"'], capture_output=True, text=True).stdout)")
        out = c.stream("stdout")
        assert "PRELOAD None" in out and "CHILD []" in out, out
        assert "/tmp/evil" not in out.split("LDPATH", 1)[1], out
        assert "refused" in out and "LD_PRELOAD" in out, out
    finally:
        ks.close()


RACER = r"""
import json, os, sys, time
from cudnn_magic import fixes
from cudnn_magic.model import Report
which, go = sys.argv[1], sys.argv[2]
ctx = {"kernel_name": "k", which: True}
p = fixes.plan("allow-memory-growth", Report(), context=ctx)
assert p.applicable, p.reason
print("PLANNED", flush=True)
while not os.path.exists(go):
    pass
r = fixes.apply(p)
print(json.dumps({"ok": r.ok, "error": r.error}), flush=True)
"""


def test_two_kernels_applying_fixes_to_one_kernelspec_at_once_never_lose_an_edit(home):
    """The attack: two kernels apply a fix to one kernel.json at the same moment. Before the
    fix both reported "done" (10/10 trials), only one edit survived, and the journal lost an
    entry (5/10). Now the read-modify-write is locked: one wins, the other fails loudly and
    changes nothing; the journal holds exactly the winners; the JSON is never corrupt."""
    tmp, env = home
    kj = tmp / "jp/kernels/k/kernel.json"
    pristine = kj.read_bytes()
    script = tmp / "racer.py"
    script.write_text(RACER)
    wins = 0
    for trial in range(10):
        kj.write_bytes(pristine)
        go = tmp / f"go-{trial}"
        procs = [subprocess.Popen([sys.executable, str(script), which, str(go)], env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for which in ("tensorflow", "jax")]
        for p in procs:
            assert p.stdout.readline().strip() == "PLANNED", p.stderr.read()
        go.touch()
        results = [json.loads(p.communicate(timeout=120)[0].strip().splitlines()[-1]) for p in procs]
        oks = [r["ok"] for r in results]
        assert oks.count(True) == 1, (trial, results)
        loser = results[oks.index(False)]
        assert "changed since the preview" in loser["error"], loser
        spec = json.loads(kj.read_text())  # never corrupt
        set_vars = {"TF_FORCE_GPU_ALLOW_GROWTH", "XLA_PYTHON_CLIENT_PREALLOCATE"} & set(spec["env"])
        assert len(set_vars) == 1 and spec["env"]["KEEP"] == "1", spec
        wins += 1
        journal = json.loads((tmp / "state" / "undo.json").read_text())
        assert len(journal["allow-memory-growth"]) == wins, (trial, journal)
    backups = [p for p in kj.parent.iterdir() if ".cudnn-magic-backup-" in p.name]
    assert len(backups) == wins
    # the newest edit undoes cleanly, back to the pristine bytes
    p = _undo(env, "allow-memory-growth")
    assert p.returncode == 0, p.stdout + p.stderr
    assert kj.read_bytes() == pristine
