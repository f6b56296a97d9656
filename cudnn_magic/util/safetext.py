"""Display-safe text: what the extension puts in a terminal, a notebook or a Jupyter message.

Text from a log, an exception message, a file name or a record on disk may hold characters
that must never reach a display as they are:

* C0/C1 control characters and DEL (terminal escapes such as ``ESC ]8;;`` hyperlinks, ``ESC [2J``,
  a bell), except tab and (optionally) newline;
* Unicode bidirectional controls (U+202A-U+202E embeddings and overrides, U+2066-U+2069
  isolates, U+200E/U+200F marks, U+061C), which reorder what is shown so that text reads
  differently from what it is (the "Trojan Source" class, CVE-2021-42574);
* lone surrogates (U+D800-U+DFFF), which Python makes from undecodable bytes
  (``surrogateescape`` file names, ``json.loads('"\\ud800"')``) and which cannot be encoded as
  UTF-8: a Jupyter message holding one cannot be sent (jupyter_client's ``json_packer`` raises
  ``UnicodeEncodeError``).

Each is replaced by U+FFFD. Pure functions, standard library only.
"""

from __future__ import annotations

import re

__all__ = ["BIDI_CONTROLS", "safe_text"]

BIDI_CONTROLS = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
"""The Unicode bidirectional formatting characters (Unicode Standard Annex #9, table 4)."""

_BAD = "\x00-\x08\x0b-\x1f\x7f-\x9f" + BIDI_CONTROLS + "\ud800-\udfff"
_UNSAFE_NL = re.compile("[" + _BAD + "]")
_UNSAFE = re.compile("[\n" + _BAD + "]")


def safe_text(text: str, keep_newlines: bool = True, replacement: str = "\ufffd") -> str:
    """``text`` with control characters (tab kept; newline kept when ``keep_newlines``),
    bidirectional controls and lone surrogates replaced by ``replacement``. The result always
    encodes as UTF-8. About 1 µs for a short clean string (one regex search)."""
    pat = _UNSAFE_NL if keep_newlines else _UNSAFE
    if pat.search(text) is None:
        return text
    return pat.sub(replacement, text)
