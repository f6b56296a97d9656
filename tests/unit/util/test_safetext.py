"""Text the extension shows never carries bidirectional controls (U+202E and kin)
or lone surrogates, as it never carries terminal escapes: a log line from a library, a file
name or an exception message cannot reorder what the user reads (the "Trojan Source" class,
CVE-2021-42574) or make a Jupyter message unsendable."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from cudnn_magic.util.safetext import BIDI_CONTROLS, safe_text
from helpers.support import REPO

LINE = ("E0000 00:00:1700000000.000000   4242 cuda_dnn.cc:535] Could not create cudnn handle: "
        "CUDNN_STATUS_NOT_INITIALIZED \u202edesserp-yllufsseccus\u202c \u2066x\u2069 \u200f")


def _explain(tmp_path, text: str, *args: str) -> subprocess.CompletedProcess:
    f = tmp_path / "log.txt"
    f.write_bytes(text.encode("utf-8", "surrogateescape"))
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONIOENCODING": "utf-8"}
    return subprocess.run([sys.executable, "-m", "cudnn_magic", "explain", *args, str(f)], capture_output=True,
                          env=env, timeout=120)


@pytest.mark.parametrize("args", [(), ("--json",)])
def test_explain_output_strips_bidi_controls(tmp_path, args):
    p = _explain(tmp_path, LINE + "\n", *args)
    assert p.returncode == 0, p.stderr
    out = p.stdout.decode("utf-8")
    if args:
        out = json.dumps(json.loads(out), ensure_ascii=False)
    assert "cudnn" in out.lower()
    assert not any(c in out for c in BIDI_CONTROLS), [hex(ord(c)) for c in out if c in BIDI_CONTROLS]


def test_crash_report_and_annotation_text_strip_bidi_controls_and_surrogates(tmp_path):
    from cudnn_magic.engines.crash import _safe_text
    from cudnn_magic.shell.annotate import _display_safe_log

    raw = (LINE + "\n").encode() + b"bad byte \xff and \xed\xa0\x80\n"
    for text in (_safe_text(raw), _display_safe_log(raw.decode("utf-8", "surrogateescape"))):
        assert "Could not create cudnn handle" in text
        assert not any(c in text for c in BIDI_CONTROLS)
        text.encode("utf-8")  # no lone surrogate left: always sendable


def test_safe_text_keeps_tabs_and_newlines_and_replaces_the_rest():
    s = "a\tb\nc\x1b[31md\u202ee\x7f" + "\ud800"
    assert safe_text(s) == "a\tb\nc\ufffd[31md\ufffde\ufffd\ufffd"
    assert safe_text(s, keep_newlines=False).count("\n") == 0
    assert safe_text("plain é ü 中文") == "plain é ü 中文"
