"""Parse a magic's argument line: every bad line is a one-line ``UsageError``; and
:func:`usage_error`, the one-line ``UsageError`` of input that parses but cannot be used. (The
seconds types shared with the command line are in :mod:`cudnn_magic.util.options`.)

Bad input to any of our magics fails the cell with ``UsageError`` (IPython shows
``UsageError: MESSAGE`` on one line, no traceback; the reply's status is "error", so Run All
stops there); what a check finds, and what could not be read or reached, is the cell's output."""

from __future__ import annotations

from typing import Any, Callable

from IPython.core import magic_arguments
from IPython.core.error import UsageError

from ..util.safetext import safe_text


def parse_magic_line(magic: Callable[..., Any], line: str) -> Any:
    """``magic_arguments.parse_argstring`` that also turns shlex's ``ValueError`` (an unbalanced
    quote: ``No closing quotation``) into ``UsageError``, so the user never sees our traceback."""
    try:
        return magic_arguments.parse_argstring(magic, line)
    except ValueError as exc:
        raise UsageError(f"cannot parse the arguments ({exc}): {line.strip()[:200]}") from None


def usage_error(message: str) -> UsageError:
    """The ``UsageError`` for ``message``, made one display-safe line (control characters,
    newlines included, replaced: paths and requirements quoted in it are the user's text)."""
    return UsageError(safe_text(message, keep_newlines=False))
