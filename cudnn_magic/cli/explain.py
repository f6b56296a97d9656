"""``cudnn-magic explain [FILE|-] [--json] [--facts]``: explain a cuDNN error from a log."""

from __future__ import annotations

import argparse
import os
import sys
from typing import BinaryIO, Callable, TextIO

from ..engines.diagnose import diagnose
from ..model import Report
from ..render.diagnosis import diagnoses_json, diagnoses_text
from ..util.textinput import SAMPLE, binary_kind, describe, from_utf16

__all__ = ["cli_explain"]


def _read_log(fh: BinaryIO) -> bytes:
    """The whole input, unless its first 64 KiB already show it is a binary (an executable, a
    shared library, an archive): then only those, so a 279 MB browser binary is refused at once
    instead of read whole."""
    head = fh.read(SAMPLE)
    if head[:2] in (b"\xff\xfe", b"\xfe\xff"):  # a UTF-16 log (PowerShell's >): read whole, as UTF-8
        return from_utf16(head + fh.read())
    if len(head) < SAMPLE or binary_kind(head):
        return head  # the end already (a terminal's Ctrl-D is not sticky: never read past it), or a binary
    try:
        seekable = fh.seekable()
    except (OSError, ValueError):
        seekable = False
    if seekable:  # a file: read whole in one piece (head + rest would hold the log twice at once)
        try:
            fh.seek(0)
            return fh.read()
        except OSError:
            pass
    import io  # a pipe: the rest in pieces, into one growing buffer whose bytes are returned as they are

    buf = io.BytesIO()
    buf.write(head)
    del head
    while True:
        more = fh.read(1 << 20)
        if not more:
            break
        buf.write(more)
    return buf.getvalue()


def cli_explain(args: argparse.Namespace, out: TextIO, live_report: Callable[[], Report] | None = None) -> int:
    """Explain the log ``args.file`` (``-``: standard input) on ``out``; with ``--facts``, with
    ``live_report()`` (this machine's check report: :mod:`.main` passes a function that loads the
    probes only then). Exit 0 when it ran, 2 for a file that cannot be read or is binary."""
    if args.file == "-":
        name = "standard input"
        try:
            at_terminal = sys.stdin.isatty()
        except (AttributeError, ValueError):
            at_terminal = False
        if at_terminal:
            print("cudnn-magic explain: paste the log or error message, then press Ctrl-D on a new line "
                  "(or give a file: cudnn-magic explain LOG).", file=sys.stderr, flush=True)
        data = _read_log(sys.stdin.buffer)
    else:
        name = args.file
        try:
            with open(args.file, "rb") as fh:
                data = _read_log(fh)
        except OSError as exc:
            print(f"cudnn-magic: cannot read {args.file}: {exc.strerror or exc}", file=sys.stderr)
            return 2
    info = describe(data)
    if info["kind"] == "binary" and args.file != "-":
        try:
            info["bytes"] = os.path.getsize(args.file)  # only its head was read
        except OSError:
            pass
    if info["kind"] != "text":
        if args.json:
            import json  # start-up cost: only --json writes JSON (text is what a pasted line gets)

            json.dump({"diagnoses": [], "input": info}, out, indent=2)
            out.write("\n")
        print(f"cudnn-magic: {name}: {info['detail']}: nothing to explain.", file=sys.stderr)
        return 2 if info["kind"] == "binary" else 0
    report = None
    if args.facts and live_report is not None:
        report = live_report()
    diagnoses = diagnose(exception="", log=data, report=report)  # bytes: scanned without a decoded copy
    del data
    if args.json:
        import json  # start-up cost: as above

        json.dump(dict(diagnoses_json(diagnoses), input=info), out, indent=2)
        out.write("\n")
    else:
        out.write(diagnoses_text(diagnoses, where="process") or "No cuDNN-related error found in the input.")
        out.write("\n")
    return 0
