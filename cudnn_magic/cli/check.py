"""``cudnn-magic check [--json] [--import-frameworks] [--deep] [--load PATH]``: the report of
this environment; exit 1 when a finding has severity "error". :mod:`.main` sends ``--what-if
REQS`` to :mod:`.whatif`, ``--against FILE`` to :mod:`.manifest`, ``--dask ADDRESS`` and
``--ray ADDRESS [--runtime-env JSON|FILE]`` to :mod:`.cluster` and ``--pid PID`` to
:mod:`.process` (their own exit codes)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TextIO

from ..engines.check import run_check
from ..probes.loaded import load_like_a_framework
from ..render.report import report_json, report_text

__all__ = ["cli_check"]


def cli_check(args: argparse.Namespace, out: TextIO) -> int:
    """Load each ``--load`` library first (as a framework would), then run the check and print
    the report (text, or JSON with ``--json``); exit 1 when a finding is an error, 2 when a
    library does not load."""
    for path in args.load:
        err = load_like_a_framework(path)
        if err:
            print(f"cudnn-magic: could not load {path}: {err}", file=sys.stderr)
            return 2
    report = run_check(import_frameworks=args.import_frameworks, deep=args.deep)
    if args.json:
        json.dump(report_json(report), out, indent=2)
        out.write("\n")
    else:
        out.write(report_text(report, where="process"))
        out.write("\n")
    return 1 if report.worst_severity == "error" else 0
