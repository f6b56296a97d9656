"""Hostile input never hangs, never runs, never reaches a terminal raw (found by review)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

import pytest

from helpers.support import REPO


@pytest.mark.timeout(120)  # a hang guard, not a speed assertion (benchmarks/ measures speed)
def test_multi_megabyte_single_line_message_is_diagnosed_not_hung():
    from cudnn_magic.engines.diagnose import diagnose

    msg = "Could not create cudnn handle: " + "CUDNN_STATUS_INTERNAL_ERROR " * 300_000  # 8.4 MB, one line
    d = diagnose(exception=f"RuntimeError: {msg}", log=msg)
    assert d and d[0].id in ("cudnn-init-failed", "cudnn-internal-error")


def test_terminal_escapes_in_a_log_never_reach_the_evidence():
    from cudnn_magic.engines.diagnose import diagnose
    from cudnn_magic.render.diagnosis import diagnoses_text

    log = "\x1b]0;PWNED\x07\x1b[2JCould not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR \x1b]8;;http://x\x1b\\click"
    text = diagnoses_text(diagnose(log=log))
    assert "cudnn" in text and "\x1b" not in text and "\x07" not in text


def test_undo_journal_cannot_name_a_program_to_run(tmp_path):
    evil = tmp_path / "evil.sh"
    marker = tmp_path / "ran"
    evil.write_text(f"#!/bin/sh\ntouch {marker}\n")
    evil.chmod(evil.stat().st_mode | stat.S_IEXEC)
    state = tmp_path / "state"
    state.mkdir()
    (state / "undo.json").write_text(json.dumps({"install-matching-cudnn": [{"time": 1, "records": [
        {"kind": "pip", "python": str(evil), "package": "nvidia-cudnn-cu12", "previous": None}]}],
        "remove-shadowing-dir": [{"time": 1, "records": [
            {"kind": "kernelspec", "path": str(tmp_path / "victim.txt"), "backup": None, "after_sha256": "x",
             "created": [str(tmp_path / "victim.txt")]}]}]}))
    (tmp_path / "victim.txt").write_text("keep me")
    env = {**os.environ, "CUDNN_MAGIC_STATE_DIR": str(state), "PYTHONPATH": str(REPO)}
    for fix_id in ("install-matching-cudnn", "remove-shadowing-dir"):
        p = subprocess.run([sys.executable, "-m", "cudnn_magic", "fix", fix_id, "--undo"], capture_output=True,
                           text=True, env=env, timeout=60)
        assert p.returncode != 0, p.stdout
    assert not marker.exists()
    assert (tmp_path / "victim.txt").read_text() == "keep me"


def _terminal_shell(cells: list[str]) -> str:
    """Run ``cells`` in a fresh terminal IPython with the extension loaded; stdout + stderr."""
    code = (
        "import sys\n"
        "from IPython.core.interactiveshell import InteractiveShell\n"
        "ip = InteractiveShell.instance(colors='nocolor')\n"
        "ip.run_line_magic('load_ext', 'cudnn_magic')\n"
        "for c in sys.argv[1:]:\n"
        "    ip.run_cell(c)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    p = subprocess.run([sys.executable, "-c", code, *cells], capture_output=True, text=True, env=env, timeout=120)
    return p.stdout + p.stderr


def test_unbalanced_quotes_are_a_usage_error_not_our_traceback():
    out = _terminal_shell(['%cudnn_fix "x', '%cudnn_check "x', '%gpu_memory "x'])
    assert out.count("UsageError") == 3 and "Traceback" not in out, out


def test_unknown_options_and_bad_timeouts_are_usage_errors_and_a_missing_client_is_named():
    """A fresh-user trial found these accepted in silence (or explained as log text)."""
    out = _terminal_shell([
        "%cudnn_explain --bogus", "%%cudnn_explain --bogus\nCUDNN_STATUS_INTERNAL_ERROR",
        "%cudnn_check --timeout -5", "%cudnn_check --dask tcp://127.0.0.1:1 --timeout nan",
        "%cudnn_check --dask nosuchvar",
        'ex = %cudnn_explain --facts CUDNN_STATUS_INTERNAL_ERROR\nprint("ALIVE", len(ex.diagnoses))',
        'ex = %cudnn_explain ---- CUDNN_STATUS_INTERNAL_ERROR\nprint("DASHES", len(ex.diagnoses))',
    ])
    assert out.count("UsageError") == 5 and "Traceback" not in out, out
    assert "unknown option '--bogus'" in out and "the timeout must be more than 0" in out
    assert "UsageError: no variable 'nosuchvar' in this kernel" in out  # bad input fails the cell
    assert "ALIVE 1" in out and "DASHES 1" in out, out


def test_cli_timeout_and_crashes_key_messages(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO), "JUPYTER_RUNTIME_DIR": str(tmp_path)}
    p = subprocess.run([sys.executable, "-m", "cudnn_magic", "check", "--dask", "tcp://127.0.0.1:1", "--timeout", "-1"],
                       capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode == 2 and "the timeout must be more than 0" in p.stderr and "Traceback" not in p.stderr
    p = subprocess.run([sys.executable, "-m", "cudnn_magic", "crashes", "--key", "nosuch"],
                       capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode == 2 and "no records with key 'nosuch'" in p.stderr and p.stdout == "", p.stdout + p.stderr
