"""What ``explain`` accepts: a log is text; a shared library, an archive or random bytes is not.

Pure and standard-library only. :func:`binary_kind` looks at the first bytes for the magic
numbers of executable and archive formats, then at up to three 64 KiB samples (head, middle,
tail) for the share of control bytes. cuDNN's own libraries hold every ``CUDNN_STATUS_*`` name
as a string, so without this check ``cudnn-magic explain libcudnn_graph.so.9`` "found" seven
diagnoses.

Logs with a few stray NUL bytes stay logs: runs of 8 or more NULs (the padding a crashed writer
or a preallocated log file leaves) are not counted, and a sample is binary only when more than
:data:`CONTROL_SHARE` of its remaining bytes are control bytes (tab, newline, carriage return,
form feed, backspace and escape are text), or when it is mostly not UTF-8.

Magic numbers: ELF (``\\x7fELF``, System V ABI), PE/DOS (``MZ``, Microsoft PE format), Mach-O
(``feedface``/``feedfacf``/``cafebabe`` in both byte orders), ZIP (``PK\\x03\\x04``: wheels,
jars), gzip (``1f 8b``), bzip2 (``BZh``), xz (``fd 37 7a 58 5a 00``), zstd (``28 b5 2f fd``),
7-Zip, PNG, JPEG, PDF and SQLite headers.
"""

from __future__ import annotations

import re

__all__ = ["CONTROL_SHARE", "SAMPLE", "binary_kind", "describe", "from_utf16", "is_empty"]

SAMPLE = 64 << 10
"""Bytes per sample (64 KiB; head, middle and tail of the input)."""

CONTROL_SHARE = 0.10
"""A sample with more control bytes than this share (after NUL padding runs) is binary."""

_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x7fELF", "an ELF binary (shared library, executable or object file)"),
    (b"MZ", "a Windows PE/DOS binary (.exe or .dll)"),
    (b"\xfe\xed\xfa\xce", "a Mach-O binary"), (b"\xfe\xed\xfa\xcf", "a Mach-O binary"),
    (b"\xce\xfa\xed\xfe", "a Mach-O binary"), (b"\xcf\xfa\xed\xfe", "a Mach-O binary"),
    (b"\xca\xfe\xba\xbe", "a Mach-O universal binary or Java class"),
    (b"PK\x03\x04", "a zip archive (wheel, jar, zip)"),
    (b"\x1f\x8b", "a gzip archive"),
    (b"BZh", "a bzip2 archive"),
    (b"\xfd7zXZ\x00", "an xz archive"),
    (b"\x28\xb5\x2f\xfd", "a zstd archive"),
    (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive"),
    (b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"%PDF-", "a PDF document"),
    (b"SQLite format 3\x00", "an SQLite database"),
)

# Control bytes that do not occur in text (tab, LF, VT, FF, CR, backspace and ESC do).
_CONTROL = re.compile(rb"[\x00-\x07\x0e-\x1a\x1c-\x1f\x7f]")
_NUL_RUN = re.compile(rb"\x00{8,}")



def _b(x: bytes | bytearray | memoryview | str) -> bytes:
    return x.encode("utf-8", "surrogatepass") if isinstance(x, str) else bytes(x)


def _samples(data: bytes | bytearray | memoryview | str) -> list[bytes]:
    n = len(data)
    if n <= 3 * SAMPLE:
        return [_b(data)]
    mid = n // 2 - SAMPLE // 2
    return [_b(data[:SAMPLE]), _b(data[mid:mid + SAMPLE]), _b(data[n - SAMPLE:])]


def _mostly_not_utf8(sample: bytes) -> bool:
    """More than a third of the non-ASCII bytes cannot be decoded as UTF-8 (random bytes:
    nearly all; Latin-1 text: a few per line; UTF-8 text: none)."""
    high = sum(1 for b in sample if b >= 0x80) if len(sample) < 4096 else len(re.findall(rb"[\x80-\xff]", sample))
    if high < 64 or high * 4 < len(sample):
        return False  # too few to tell, or a text with a few accented words
    bad = sample.decode("utf-8", "replace").count("\ufffd")
    return bad * 3 > high


def binary_kind(data: bytes | bytearray | memoryview | str) -> str | None:
    """What kind of binary ``data`` is ("an ELF binary (...)", "binary data"), or None for text
    (a ``str`` is looked at as its UTF-8 bytes).

    Cost: one look at the first 16 bytes and a regex count over at most 192 KiB (about 1 ms),
    whatever the input size.
    """
    head = _b(data[:16])
    for magic, kind in _MAGIC:
        if head.startswith(magic):
            if magic == b"MZ" and not _looks_like_pe(data):
                continue  # a log line may start with "MZ"
            return kind
    for sample in _samples(data):
        body = _NUL_RUN.sub(b"", sample)
        if not body:
            continue
        if len(_CONTROL.findall(body)) > CONTROL_SHARE * len(body) or _mostly_not_utf8(body):
            return "binary data"
    return None


def _looks_like_pe(data: bytes | bytearray | memoryview | str) -> bool:
    """A DOS header whose ``e_lfanew`` (offset 0x3c) points at ``PE\\0\\0``, or at least a
    header full of NUL bytes (a DOS stub), not a line of text."""
    head = _b(data[:4096])
    if len(head) >= 0x40:
        off = int.from_bytes(head[0x3C:0x40], "little")
        if 0 < off < len(head) - 4 and head[off:off + 4] == b"PE\x00\x00":
            return True
    return head[:64].count(b"\x00") >= 8


_NON_SPACE_B = re.compile(rb"\S")
_NON_SPACE_S = re.compile(r"\S")


def is_empty(data: bytes | bytearray | memoryview | str) -> bool:
    """Nothing but white space (stops at the first other character: no copy of a large input)."""
    if isinstance(data, str):
        return _NON_SPACE_S.search(data) is None
    return _NON_SPACE_B.search(data) is None


def describe(data: bytes | bytearray | memoryview | str) -> dict[str, object]:
    """``{"kind": "text"|"empty"|"binary", "bytes": n, "detail": str|None}``: the ``input``
    object of ``cudnn-magic explain --json`` (``bytes`` counts characters for a ``str``)."""
    n = len(data)
    if is_empty(data):
        return {"kind": "empty", "bytes": n, "detail": "the input is empty" if not n else "the input holds only white space"}
    kind = binary_kind(data)
    if kind:
        return {"kind": "binary", "bytes": n, "detail": f"the input is {kind}, not a log"}
    return {"kind": "text", "bytes": n, "detail": None}


def from_utf16(data: bytes) -> bytes:
    """A UTF-16 text that starts with its byte-order mark (what Windows PowerShell 5's ``>`` and
    ``Out-File`` write, the Unicode Standard's U+FEFF as ``FF FE`` or ``FE FF``) re-encoded as
    UTF-8 (an unpaired surrogate becomes U+FFFD); any other input is returned as it is. Without this
    every other byte of such a log is NUL, and it reads as binary."""
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return data.decode("utf-16", "replace").encode("utf-8")
    return data
