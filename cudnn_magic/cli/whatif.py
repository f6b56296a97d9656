"""``cudnn-magic check --what-if REQS [--json]``: what ``pip install REQS`` would do to
cuDNN, predicted with pip's own dry run (nothing is installed). :mod:`cudnn_magic.cli.check`
dispatches here; the engine is :mod:`cudnn_magic.engines.whatif` through
:func:`cudnn_magic.engines.whatif.what_if`.

Exit codes: 0 no predicted error, 1 a predicted finding is an error, 2 bad input (unparsable
requirement, unreachable index, pip too old, resolver conflict; one line on stderr, nothing
installed).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TextIO

from ..engines.whatif import what_if
from ..probes.pip_report import PipError
from ..render.whatif import whatif_json, whatif_text

__all__ = ["cli_what_if"]


def cli_what_if(args: argparse.Namespace, out: TextIO) -> int:
    """Print the prediction for ``args.what_if`` (text, or JSON with ``args.json``); the exit
    code above."""
    result = what_if(args.what_if)
    if isinstance(result, PipError):
        print(f"cudnn-magic: what-if: {result.message}", file=sys.stderr)
        if args.json:
            json.dump({"error": {"kind": result.kind, "message": result.message}}, out, indent=2)
            out.write("\n")
        return 2
    if args.json:
        json.dump(whatif_json(result), out, indent=2)
        out.write("\n")
    else:
        out.write(whatif_text(result))
    return 1 if result.error else 0
