"""Option values shared by the magics (:mod:`cudnn_magic.shell`) and the command line
(:mod:`cudnn_magic.cli`): seconds within a range. No IPython, no argv: argparse's
``ArgumentTypeError`` is the error both parsers turn into a one-line usage message."""

from __future__ import annotations

import argparse
import math
from typing import Any


def parse_seconds(text: object, low: float, high: float, what: str, *, low_open: bool = False) -> float:
    """Parse a number of seconds within [``low``, ``high``] (``(low, high]`` with ``low_open``).

    Raises:
        argparse.ArgumentTypeError: not a number, not finite, or out of range (argparse and
            IPython's magic_arguments turn it into a one-line usage error).
    """
    try:
        value = float(text)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    ok = math.isfinite(value) and (low < value if low_open else low <= value) and value <= high
    if not ok:
        bound = f"more than {low:g} and at most {high:g}" if low_open else f"between {low:g} and {high:g}"
        raise argparse.ArgumentTypeError(f"{what} must be {bound} seconds, got {text}")
    return value


def positive_count(text: object) -> int:
    """A count of at least 1 (``cudnn-magic crashes --last N``).

    Raises:
        argparse.ArgumentTypeError: not a whole number, or less than 1.
    """
    try:
        value = int(str(text).strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


MIN_INTERVAL_S = 0.1  #: shortest sampling interval accepted, seconds
MAX_INTERVAL_S = 3600.0  #: longest sampling interval accepted, seconds


def interval_seconds(text: object) -> float:
    """Parse a sampling interval in seconds (``--interval``/``--watch``).

    Raises:
        argparse.ArgumentTypeError: not a number, not finite, or outside
            [:data:`MIN_INTERVAL_S`, :data:`MAX_INTERVAL_S`] (argparse and IPython's
            magic_arguments turn it into a one-line usage error).
    """
    return parse_seconds(text, MIN_INTERVAL_S, MAX_INTERVAL_S, "the interval")


MAX_TIMEOUT_S = 86400.0  #: longest per-worker timeout accepted (``--timeout``), seconds


def timeout_seconds(text: object) -> float:
    """``--timeout SECONDS`` of ``%cudnn_check --dask`` and ``cudnn-magic check --dask``: more
    than 0, at most :data:`MAX_TIMEOUT_S`. Raises ``argparse.ArgumentTypeError``."""
    return parse_seconds(text, 0.0, MAX_TIMEOUT_S, "the timeout", low_open=True)


def fix_context(args: argparse.Namespace) -> dict[str, Any]:
    """The ``context`` of :func:`cudnn_magic.fixes.plan` from parsed ``%cudnn_fix`` /
    ``cudnn-magic fix`` options (``--for``, ``--dir``, ``--kernel``; absent ones left out)."""
    ctx: dict[str, Any] = {}
    if getattr(args, "framework", None):
        ctx["framework"] = args.framework
    if getattr(args, "dir", None):
        ctx["directory"] = args.dir
    if getattr(args, "kernel", None):
        ctx["kernel_name"] = args.kernel
    return ctx
