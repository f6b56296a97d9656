"""Text written to a stream that cannot take every character: the command line never fails on a
path, a log line or a name its output stream cannot encode.

``PYTHONIOENCODING=ascii``, ``LC_ALL=C`` (an ASCII ``sys.stdout`` unless Python's UTF-8 mode or
its C-locale coercion is on, PEP 538/540), a pipe into a program that set a legacy encoding: a
``print`` of ``café`` or of a file name holding bytes that are not UTF-8 (decoded by Python as lone
surrogates, ``surrogateescape``, PEP 383) raises ``UnicodeEncodeError`` under the stream's
``strict`` handler. Python's own ``sys.stderr`` uses ``backslashreplace`` for this; the command
line's streams use :data:`HANDLER`, which writes what cannot be encoded as Python escapes:
``\\xe9``, ``\\u2019``, ``\\U0001f600``, and an undecodable byte of a file name as the byte it was
(``\\xe9`` for ``surrogateescape``'s U+DCE9), so a path reads as ``ls -b`` or ``repr`` of bytes
would show it. Only what the stream cannot take is escaped; JSON output is written with
``ensure_ascii`` (:func:`json.dump`'s default), so it is valid JSON in any encoding.

Standard library only.
"""

from __future__ import annotations

import codecs
import contextlib
import io
from collections.abc import Iterator
from typing import Any

__all__ = ["HANDLER", "escape", "tolerant_streams"]

HANDLER = "cudnn_magic.escape"
"""The name of the codec error handler registered here (:func:`codecs.register_error`)."""


def escape(exc: UnicodeError) -> tuple[str, int]:
    """Codec error handler: each character the codec cannot encode as a Python escape; a lone
    surrogate U+DC80..U+DCFF (an undecodable byte, PEP 383) as that byte's ``\\xNN``.

    Raises:
        UnicodeError: ``exc`` itself when it is not a ``UnicodeEncodeError`` (decoding is not
            this handler's business).
    """
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    out = []
    for ch in exc.object[exc.start:exc.end]:
        o = ord(ch)
        if 0xDC80 <= o <= 0xDCFF:
            out.append(f"\\x{o - 0xDC00:02x}")
        elif o <= 0xFF:
            out.append(f"\\x{o:02x}")
        elif o <= 0xFFFF:
            out.append(f"\\u{o:04x}")
        else:
            out.append(f"\\U{o:08x}")
    return "".join(out), exc.end


codecs.register_error(HANDLER, escape)


@contextlib.contextmanager
def tolerant_streams(*streams: Any) -> Iterator[None]:
    """Within the block, each text stream among ``streams`` that Python can reconfigure
    (:class:`io.TextIOWrapper`: ``sys.stdout``, ``sys.stderr``) writes what its encoding cannot
    take through :data:`HANDLER`; its previous handler comes back afterwards. Other streams (a
    ``StringIO``, which takes every character) are left as they are. Never raises for a stream
    that cannot be reconfigured."""
    changed: list[tuple[Any, str | None]] = []
    for s in dict.fromkeys(streams):
        if isinstance(s, io.TextIOWrapper) and s.errors != HANDLER:
            try:
                before = s.errors
                s.reconfigure(errors=HANDLER)
                changed.append((s, before))
            except (ValueError, OSError, AttributeError):
                continue
    try:
        yield
    finally:
        for s, before in changed:
            with contextlib.suppress(ValueError, OSError, AttributeError):
                s.reconfigure(errors=before)
