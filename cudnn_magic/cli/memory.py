"""``cudnn-magic memory [--json] [--watch SECONDS]``: GPU memory per GPU and process (the
engine is :mod:`cudnn_magic.engines.memory`)."""

from __future__ import annotations

import json
import time
from typing import TextIO

from ..engines.memory import _no_gpu_line, sample_within, snapshot_json
from ..model import MemorySnapshot
from ..render.memory import snapshot_text

__all__ = ["cli_memory"]


def cli_memory(as_json: bool, watch: float | None, out: TextIO) -> int:
    """``cudnn-magic memory [--json] [--watch SECONDS]``.

    Prints a table (or the JSON snapshot). With ``--watch``, samples every ``watch`` seconds
    until Ctrl-C: redrawn in place with ANSI escapes on a terminal, successive tables (or one
    JSON object per line) otherwise.

    Exit codes (as nvitop's): 0 measured (also when Ctrl-C ends ``--watch``), 1 nothing to measure
    (no driver, NVML not answering or failing: one line, or the JSON with its ``error``, says
    why), 2 usage (argparse).
    """
    def emit(s: MemorySnapshot, first: bool) -> None:
        if as_json:
            out.write(json.dumps(snapshot_json(s), indent=None if watch else 2) + "\n")
        elif s.error and not s.gpus:
            out.write(_no_gpu_line(s) + "\n")
        else:
            text = snapshot_text(s)
            if watch and not first and tty:
                out.write("\x1b[H\x1b[J")  # cursor home, clear to end of screen
            elif watch and not first:
                out.write("\n")
            out.write(text + "\n")
        out.flush()

    tty = bool(getattr(out, "isatty", lambda: False)())
    try:
        s = sample_within()
        if watch and tty and not as_json:
            out.write("\x1b[H\x1b[J")
        emit(s, True)
        if s.error and not s.gpus:
            return 1
        if not watch or watch <= 0:
            return 0
        while True:
            time.sleep(watch)
            emit(sample_within(), False)
    except KeyboardInterrupt:
        return 0
    except BrokenPipeError:
        return 0
