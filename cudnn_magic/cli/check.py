"""``cudnn-magic check [--json] [--import-frameworks] [--deep] [--load PATH] [--dask ADDRESS]``:
the report of this environment; exit 1 when a finding has severity "error".
``--what-if REQS`` goes to :mod:`.whatif`, ``--against FILE`` to :mod:`.manifest` (their own exit
codes)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TextIO

from ..engines.check import run_check
from ..render.report import report_json, report_text

__all__ = ["cli_check"]


def cli_check(args: argparse.Namespace, out: TextIO) -> int:
    if args.what_if is not None:
        from .whatif import cli_what_if  # start-up cost: pip's report and the what-if engine only when asked

        return cli_what_if(args, out)
    if args.against is not None:
        from .manifest import cli_against  # start-up cost (as above)

        return cli_against(args, out)
    if args.dask:
        from .cluster import cli_cluster  # start-up cost: only --dask needs the cluster code

        return cli_cluster(args.dask, timeout=args.timeout, as_json=args.json, out=out)
    if args.load:
        from ..probes.loaded import load_like_a_framework  # start-up cost: only --load needs it (ctypes)

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
