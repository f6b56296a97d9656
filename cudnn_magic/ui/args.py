"""Parse a magic's argument line: every bad line is a one-line ``UsageError``; argument types
for seconds shared by the magics and the command line."""

from __future__ import annotations

from typing import Any, Callable


def parse_magic_line(magic: Callable[..., Any], line: str) -> Any:
    """``magic_arguments.parse_argstring`` that also turns shlex's ``ValueError`` (an unbalanced
    quote: ``No closing quotation``) into ``UsageError``, so the user never sees our traceback."""
    from IPython.core import magic_arguments
    from IPython.core.error import UsageError

    try:
        return magic_arguments.parse_argstring(magic, line)
    except ValueError as exc:
        raise UsageError(f"cannot parse the arguments ({exc}): {line.strip()[:200]}") from None


def parse_seconds(text: object, low: float, high: float, what: str, *, low_open: bool = False) -> float:
    """Parse a number of seconds within [``low``, ``high``] (``(low, high]`` with ``low_open``).

    Raises:
        argparse.ArgumentTypeError: not a number, not finite, or out of range (argparse and
            IPython's magic_arguments turn it into a one-line usage error).
    """
    import argparse
    import math

    try:
        value = float(text)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    ok = math.isfinite(value) and (low < value if low_open else low <= value) and value <= high
    if not ok:
        bound = f"more than {low:g} and at most {high:g}" if low_open else f"between {low:g} and {high:g}"
        raise argparse.ArgumentTypeError(f"{what} must be {bound} seconds, got {text}")
    return value


MAX_TIMEOUT_S = 86400.0  #: longest per-worker timeout accepted (``--timeout``), seconds


def timeout_seconds(text: object) -> float:
    """``--timeout SECONDS`` of ``%cudnn_check --dask`` and ``cudnn-magic check --dask``: more
    than 0, at most :data:`MAX_TIMEOUT_S`. Raises ``argparse.ArgumentTypeError``."""
    return parse_seconds(text, 0.0, MAX_TIMEOUT_S, "the timeout", low_open=True)
