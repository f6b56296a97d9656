"""``bytes.find`` through the C library's ``memmem``, for the per-cell warning check.

A succeeding cell that wrote a megabyte to fd 2 is searched for a few literals
(:data:`cudnn_magic.knowledge.WARNING_LITERALS`). CPython's ``bytes.find`` does about 0.3 to
1 ms per literal and MiB here; glibc's ``memmem`` (two-way search with SIMD first-byte
skipping) does the same in 0.05 to 0.2 ms, so the whole check of 1 MiB drops from about 4 ms to
under 1 ms (``benchmarks/bench_cell_overhead.py``). Where ``memmem`` is missing the finder is
``None`` and callers keep ``bytes.find``.

The haystack is passed by address (``ctypes.c_char_p`` of a ``bytes`` object points at its own
buffer, no copy); ``bytes`` are immutable and the caller holds a reference for the call.
"""

from __future__ import annotations

import ctypes
from typing import Callable

Finder = Callable[[bytes, bytes, int], int]

SMALL = 16 << 10
"""Haystacks shorter than this (16 KiB) are searched with ``bytes.find``."""

_FINDER: Finder | None = None
_TRIED = False


def memmem_finder() -> Finder | None:
    """``find(haystack, needle, start) -> offset or -1`` (like ``haystack.find(needle, start)``)
    using the C library's ``memmem``, or ``None`` when it is not available. Never raises."""
    global _FINDER, _TRIED
    if _TRIED:
        return _FINDER
    _TRIED = True
    try:
        fn = ctypes.CDLL(None).memmem
    except (OSError, AttributeError, TypeError):
        return None
    fn.restype = ctypes.c_void_p
    fn.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t]
    c_char_p, c_void_p, cast = ctypes.c_char_p, ctypes.c_void_p, ctypes.cast

    def find(haystack: bytes, needle: bytes, start: int = 0) -> int:
        n = len(haystack)
        if n - start < SMALL or type(haystack) is not bytes or not needle or start < 0:
            return haystack.find(needle, start)  # below a few KiB the ctypes call costs more
        base: int = cast(c_char_p(haystack), c_void_p).value  # type: ignore[assignment]  # a bytes buffer is never NULL
        hit = fn(base + start, n - start, needle, len(needle))
        return -1 if not hit else hit - base

    try:  # it must agree with bytes.find before it is trusted
        probe = b"xx cuDNN abc cudnn" * 3
        if [find(probe, b"cudnn", s) for s in (0, 14, 40)] != [probe.find(b"cudnn", s) for s in (0, 14, 40)]:
            return None
    except Exception:  # noqa: BLE001
        return None
    _FINDER = find
    return find


class ChunkFlagger:
    """Tells whether a stream of chunks holds any of ``literals`` (ASCII case folded, as
    :func:`cudnn_magic.knowledge.matcher.keyword_lines` folds it), one chunk at a time: a literal
    inside a chunk, or cut between it and the one before. The capture helper flags each chunk
    this way (:data:`cudnn_magic.capture.protocol.FLAGGED_AT`), so a succeeding cell whose output
    holds no warning literal is not read back at all. The search is :func:`memmem_finder`'s."""

    def __init__(self, literals: tuple[bytes, ...]) -> None:
        self.literals = tuple(x.lower() for x in literals if x)
        self._keep = max(map(len, self.literals), default=1) - 1
        self._tail = b""
        self._find = memmem_finder() if self.literals else None

    def holds(self, chunk: bytes) -> bool:
        """The next chunk of the stream holds a literal (or completes one the last chunk began)."""
        low = chunk.lower()
        keep = self._keep
        held = len(self._tail)
        seam = self._tail + low[:keep]
        # the stream's last bytes, not only this chunk's: a literal may span several short chunks
        self._tail = ((self._tail + low)[-keep:] if len(low) < keep else low[-keep:]) if keep else b""
        find = self._find
        # in the seam, only a literal that ends in this chunk (one that ended before was flagged then)
        return any(seam.find(f, max(0, held - len(f) + 1)) >= 0 or (find(low, f, 0) if find else low.find(f)) >= 0
                   for f in self.literals)


__all__ = ["ChunkFlagger", "Finder", "memmem_finder"]
