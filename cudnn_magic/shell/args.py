"""Parse a magic's argument line: every bad line is a one-line ``UsageError``. (The seconds
types shared with the command line are in :mod:`cudnn_magic.util.options`.)"""

from __future__ import annotations

from typing import Any, Callable

from IPython.core import magic_arguments
from IPython.core.error import UsageError


def parse_magic_line(magic: Callable[..., Any], line: str) -> Any:
    """``magic_arguments.parse_argstring`` that also turns shlex's ``ValueError`` (an unbalanced
    quote: ``No closing quotation``) into ``UsageError``, so the user never sees our traceback."""
    try:
        return magic_arguments.parse_argstring(magic, line)
    except ValueError as exc:
        raise UsageError(f"cannot parse the arguments ({exc}): {line.strip()[:200]}") from None
