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
from typing import Callable, Optional

Finder = Callable[[bytes, bytes, int], int]

SMALL = 16 << 10
"""Haystacks shorter than this (16 KiB) are searched with ``bytes.find``."""

_FINDER: Optional[Finder] = None
_TRIED = False


def memmem_finder() -> Optional[Finder]:
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
        base = cast(c_char_p(haystack), c_void_p).value
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


__all__ = ["Finder", "memmem_finder"]
