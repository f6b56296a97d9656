"""``cudnn-magic check --pid PID [--json]``: the check of another running process (the engine is
:mod:`cudnn_magic.engines.process`)."""

from __future__ import annotations

import json
import sys
from typing import TextIO

from ..engines.process import ProcessCheckError, check_process

__all__ = ["cli_process"]


def cli_process(pid: str, as_json: bool = False, out: TextIO | None = None) -> int:
    """Write the report of process ``pid`` (or its JSON) to ``out``; return 0, or 1 when a
    finding has severity "error", or 2 when the process cannot be checked (exited, another
    user's, not a process id): then one line on stderr."""
    out = out or sys.stdout
    try:
        rep = check_process(pid)
    except ProcessCheckError as exc:
        print(f"cudnn-magic: {exc}", file=sys.stderr)
        return 2
    if as_json:
        json.dump(rep.to_json(), out, indent=2, default=str)
    else:
        out.write(rep.text())
    out.write("\n")
    return rep.exit_code
