"""Issue 28, item 9: a crash record of another user is never shown as this kernel's crash.

The attack: a record directory under this kernel's key that another uid owns, or that group or
others may write (mode 0777: anyone could have planted or edited it), or a record file in it that
is another user's or writable by others. Before the fix such a record was read and shown at
``%load_ext`` as the previous kernel's death. Now every record folder and file is opened with
``O_NOFOLLOW`` and checked with ``fstat`` (``st_uid == os.getuid()``, no group/other write bit);
the others are refused silently, with a debug log line.

The suite runs as root, so ``os.chown`` to ``nobody`` (65534) is real; without that privilege the
chown cases are skipped with the reason (the mode cases still run).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from cudnn_magic.engines import crash
from test_crash_unit import TF_LINE, _child, make_record

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
    """End to end: a shell child (the process key, as in test_crash_unit) loads the extension
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
