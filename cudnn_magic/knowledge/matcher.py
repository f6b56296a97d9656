"""The matcher: every signature of every family, matched in linear time (:func:`scan`), and the
prefilter that keeps only the lines a warning check needs (:func:`keyword_lines`). Pure.

How matching stays linear (:func:`scan`):

1. The text is encoded once and lower-cased as bytes (ASCII-only lowering, so offsets stay
   put), and every signature keyword (a plain lower-case literal) is located with
   ``bytes.find`` - C speed, no regex over the whole input. Each keyword keeps at most its
   first :data:`HITS_PER_KEYWORD_HEAD` and last :data:`HITS_PER_KEYWORD_TAIL` occurrences, so a
   log that repeats one line a million times costs the same as one that prints it a few times.
2. Only the lines holding a keyword are decoded, cut to a bounded window around the keyword
   (:data:`MAX_LINE`), and only the signatures owning that keyword run their regexes on it.
   Patterns use bounded repetition only (no nested quantifiers), so each costs O(line).
3. Logs pasted hard-wrapped at a fixed column (``CUDNN_STAT`` / ``US_INTERNAL_ERROR``) are
   matched again on copies with the line breaks joined (once without and once with a space),
   for inputs up to :data:`MAX_JOIN_BYTES`; evidence is quoted from the original lines.
"""

from __future__ import annotations

import bisect
import importlib
import itertools
import re
from collections.abc import Iterable, Iterator
from typing import Callable, cast

from ..fixes.catalogue import ADVICE
from .signature import Hit, Signature
from .status_codes import status_by_name

#: Stable fix ids a diagnosis may offer, with their one-line advice (docs/ids.md:
#: "Fix ids are the developers' to define; keep them stable"): the fix catalogue's ADVICE, one
#: table for every fix (cudnn_magic.fixes.catalogue). Every Fix made by the diagnosis engine uses one.
FIX_IDS = ADVICE

MAX_LINE = 2000  #: a longer line is cut to a window of this size around each keyword hit
HITS_PER_KEYWORD_HEAD = 32  #: first occurrences of one keyword examined
HITS_PER_KEYWORD_TAIL = 256  #: last occurrences of one keyword examined (decisive lines come late)
MAX_JOIN_BYTES = 4 * 1024 * 1024  #: inputs up to this size are also matched with line-wraps joined
EVIDENCE_CHARS = 400  #: evidence lines are cut to this many characters


FAMILIES: tuple[str, ...] = ("stream", "versions", "loading", "builds", "init", "oom", "driver", "arch", "status",
                             "calls", "warnings", "tensorrt", "bindings", "hints", "cpu_builds", "unnamed")

_CACHE: dict[str, object] = {}


def signatures() -> tuple[Signature, ...]:
    """Every signature of every family, specific ones before generic ones (loaded once)."""
    sigs = _CACHE.get("sigs")
    if sigs is None:
        out: list[Signature] = []
        for fam in FAMILIES:
            mod = importlib.import_module(f"{__package__}.{fam}")
            out.extend(mod.SIGNATURES)
        out.sort(key=lambda s: s.generic)  # stable: family order kept, generic ones last
        sigs = tuple(out)
        _CACHE["sigs"] = sigs
        index: dict[bytes, list[int]] = {}
        for i, s in enumerate(sigs):
            for k in s.keywords:
                index.setdefault(k.encode("utf-8"), []).append(i)
        _CACHE["index"] = {k: tuple(v) for k, v in index.items()}
    return sigs  # type: ignore[return-value]


def _keyword_index() -> dict[bytes, tuple[int, ...]]:
    signatures()
    return _CACHE["index"]  # type: ignore[return-value]


def _positions(low: bytes, kw: bytes) -> list[int]:
    """First HEAD and last TAIL offsets of ``kw`` in ``low`` (C-speed finds, bounded count)."""
    out: list[int] = []
    p = low.find(kw)
    while p >= 0 and len(out) < HITS_PER_KEYWORD_HEAD:
        out.append(p)
        p = low.find(kw, p + 1)
    if p < 0:
        return out
    tail: list[int] = []
    end = len(low)
    floor = out[-1] + 1 if out else 0
    while len(tail) < HITS_PER_KEYWORD_TAIL:
        q = low.rfind(kw, floor, end)
        if q < 0:
            break
        tail.append(q)
        end = q + len(kw) - 1
        if end <= floor:
            break
    out.extend(reversed(tail))
    return out


def _decode(b: bytes) -> str:
    return b.decode("utf-8", "replace")


# C0/C1 controls, bidirectional controls (U+061C, U+200E/F, U+202A-E, U+2066-9) and lone
# surrogates: see cudnn_magic.util.safetext
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _evidence(line: str) -> str:
    # Control characters (ANSI/OSC escapes from a log) never reach a terminal or a page.
    line = _CONTROL.sub(" ", line.replace("\r", " ")).strip()  # strip after: an escape at the start leaves no space
    if len(line) > EVIDENCE_CHARS:
        line = line[: EVIDENCE_CHARS - 1] + "…"
    return line


def _match_line(line: str, sig_ids: Iterable[int], sigs: tuple[Signature, ...], source: str, base: int,
                following: Callable[[], list[str]], warnings: bool, windowed: bool) -> list[Hit]:
    hits: list[Hit] = []
    claimed = False
    for i in sorted(set(sig_ids)):
        s = sigs[i]
        if s.warning_only and not warnings:
            continue
        if s.generic and claimed:
            continue
        m = None
        for p in s.patterns:
            m = p.search(line)
            if m:
                break
        if not m:
            continue
        groups = {k: v for k, v in m.groupdict().items() if v is not None}
        if s.extras:
            texts = [line] + (following() if s.window else [])
            for ex in s.extras:
                for t in texts:
                    em = ex.search(t)
                    if em:
                        for k, v in em.groupdict().items():
                            if v is not None:
                                groups.setdefault(k, v)
                        break
        diagnosis, weight = s.diagnosis, s.weight
        if s.refine is not None:
            try:
                r = s.refine(groups, line)
            except Exception:  # noqa: BLE001 - a knowledge entry never breaks the scan
                r = None
            if r is not None:
                diagnosis, weight = r  # type: ignore[assignment]
                if diagnosis is None:
                    continue
        if not s.generic and not s.supports and weight > 0:
            claimed = True  # markers (weight 0) never hide the status name on their line
        quoted = line[max(0, m.start() - 120): m.end() + 200] if windowed else line
        b0 = base + len(line[: m.start()].encode("utf-8", "surrogatepass"))
        b1 = b0 + len(m.group(0).encode("utf-8", "surrogatepass"))
        hits.append(Hit(s, diagnosis, weight, _evidence(quoted), groups, source, b0, (b0, b1)))
    return hits


def scan(text: str | bytes, source: str = "log", *, warnings: bool = False, joined: bool = True) -> list[Hit]:
    """Match every signature against ``text``; linear in its size. Never raises.

    Args:
        text: a log, an exception message or a traceback (any size; garbage is fine), as
            ``str`` or as UTF-8 ``bytes`` (not decoded: a 50 MB log is scanned without a copy).
        source: label stored in each :class:`Hit`.
        warnings: also use ``warning_only`` signatures (for cells that succeeded).
        joined: also look for lines split by a hard wrap (pasted logs); ``False`` for text a
            program wrote itself (a cell's fd-2 output).

    Returns:
        Hits in text order. Lines split by a hard wrap are found too (see module docstring).
    """
    if not text:
        return []
    try:
        data = text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass")
        hits = _scan_chunked(data, source, warnings) if len(data) > SCAN_CHUNK else _scan_data(data, source, warnings)
        if joined and len(data) <= MAX_JOIN_BYTES and b"\n" in data and _maybe_wrapped(data, hits):
            joined_hits, covered = _scan_joined(data, source, warnings, hits)
            if joined_hits:
                # a match cut short by the wrap ("compiled with: 8." / "8.1.0") is superseded by
                # the whole match of the same signature over the joined lines
                hits = [h for h in hits if not any(
                    name == h.signature.name and a <= h.position < b for name, a, b in covered)]
                hits.extend(joined_hits)
                hits.sort(key=lambda h: h.position)  # text order, joined matches at their first line
        return hits
    except Exception:
        import logging  # start-up cost (logging with traceback and string): only when the scan itself failed

        logging.getLogger("cudnn_magic").debug("knowledge scan failed", exc_info=True)
        return []


from .literals import WARNING_LITERALS  # noqa: E402 - the data lives apart: the capture helper reads it

WARNING_TAIL = 1024  #: bytes of the end of the text kept with the lines (which framework printed it)
WARNING_MAX_LINES = 2048  #: lines kept at most per literal (the first half and the last half)


def _windowed_keywords() -> dict[bytes, int]:
    """Keywords of signatures with a ``window``, and that window (lines after the keyword's)."""
    out = cast("dict[bytes, int] | None", _CACHE.get("windowed"))
    if out is None:
        out = {}
        for s in signatures():
            if s.window:
                for k in s.keywords:
                    kw = k.encode("utf-8")
                    out[kw] = max(out.get(kw, 0), s.window)
        _CACHE["windowed"] = out
    return out


def _reach(windowed: dict[bytes, int]) -> int:
    """How far past the end of a literal :func:`keyword_lines` may look: the rest of its line
    (up to :data:`MAX_LINE`) and a windowed signature's lines after it (each up to ``MAX_LINE``
    and its newline)."""
    return (max(windowed.values(), default=0) + 1) * (MAX_LINE + 1) + 1


def keyword_lines(data: bytes, literals: Iterable[bytes] = WARNING_LITERALS, *, tail: int = WARNING_TAIL,
                  find: Callable[[bytes, bytes, int], int] | None = None, before: int | None = None) -> bytes:
    """The lines of ``data`` that hold one of ``literals`` (case-insensitive), plus the lines
    after one that also holds a windowed signature's keyword, plus the whole lines within the
    last ``tail`` bytes (a line that starts exactly ``tail`` bytes before the end included), in
    their original order, joined by newlines; ``b""`` when no line holds a literal.

    Found in bytes: one lower-casing pass and one search pass per literal, plus a bounded look
    for the line ends around each occurrence; nothing is decoded. A line longer than
    :data:`MAX_LINE` is cut to a window around the literal (more than ``MAX_LINE`` bytes of the
    line on one side of it keep ``MAX_LINE // 2`` of them; a signature's window stops before such
    a line); a literal on more than
    :data:`WARNING_MAX_LINES` lines keeps its first and last ones. Used on a succeeding cell's
    fd-2 output before :func:`cudnn_magic.engines.diagnose.gpu_unused_warnings`, so that a cell that
    printed a megabyte of ordinary log costs a few passes over its bytes
    (``benchmarks/bench_cell_overhead.py``). ``find(haystack, needle, start)`` replaces
    ``bytes.find`` for the literal passes (the capture passes the C library's ``memmem``).

    ``before``: no occurrence of a literal ends after this offset of ``data`` (the capture
    helper's flag: the end of the last chunk that held one). Only the bytes up to it, and the
    line ends and windows that can follow a literal there (:func:`_reach`), are lower-cased and
    searched; the result is the same as without it. A 1 MiB log whose literals sit in its
    start-up lines is then searched over its first chunk, not the whole MiB.
    """
    if not data:
        return b""
    n = len(data)
    windowed = _windowed_keywords()
    limit = n if before is None else min(n, max(0, before) + _reach(windowed))
    low = (data[:limit] if limit < n else data).lower() if isinstance(data, bytes) else bytes(data[:limit]).lower()
    if find is None:
        find = bytes.find
    spans: list[tuple[int, int]] = []
    half = WARNING_MAX_LINES // 2

    def line_at(p: int) -> tuple[int, int]:
        a = low.rfind(b"\n", max(0, p - MAX_LINE), p) + 1
        if a == 0 and p > MAX_LINE:
            a = p - MAX_LINE // 2
        b = low.find(b"\n", p, p + MAX_LINE)
        if b < 0:
            return a, (n if n - p <= MAX_LINE else p + MAX_LINE // 2)
        window = max((w for kw, w in windowed.items() if low.find(kw, a, b) >= 0), default=0)
        for _ in range(window):
            nxt = low.find(b"\n", b + 1, b + 1 + MAX_LINE)
            if nxt < 0:
                return a, n if n - b <= MAX_LINE else b
            b = nxt
        return a, b

    for lit in literals:
        found: list[tuple[int, int]] = []
        p = find(low, lit, 0)
        while p >= 0:
            a, b = line_at(p)
            found.append((a, b))
            if len(found) > half:  # very common here: keep the first and the last occurrences
                break
            p = find(low, lit, max(b, p + 1))
        if len(found) > half:
            del found[half:]
            last: list[tuple[int, int]] = []
            end, floor = n, found[-1][1]
            while len(last) < half:
                q = low.rfind(lit, floor, end)
                if q < 0:
                    break
                a, b = line_at(q)
                last.append((a, b))
                end = a
            found.extend(reversed(last))
        spans.extend(found)
    if not spans:
        return b""
    if tail:
        t = max(0, n - tail)
        nl = data.find(b"\n", t - 1) if t else -1  # t - 1: a line that starts exactly at the cut is whole
        t = t if t == 0 or nl < 0 else nl + 1
        if t < n:
            spans.append((t, n))
    spans.sort()
    merged: list[list[int]] = []
    for a, b in spans:
        if merged and a <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    return b"\n".join(data[a:b] for a, b in merged)


#: Inputs above this (256 KiB) are scanned line by line in line-aligned chunks of this size: each
#: chunk is lower-cased on its own, so a log needs about two chunks of memory beside itself
#: (``benchmarks/bench_explain.py --memory``: at most 2x the input from 1 MiB up). The wrapped-paste
#: pass (:data:`MAX_JOIN_BYTES`) does not depend on it.
SCAN_CHUNK = 256 * 1024


def _scan_chunked(data: bytes, source: str, warnings: bool) -> list[Hit]:
    """:func:`_scan_data` over line-aligned chunks of :data:`SCAN_CHUNK` bytes, so that a 50 MB
    log needs about two chunks of memory beside itself (the chunk and its lower-cased copy), not a
    lower-cased copy of the whole (``benchmarks/bench_explain.py`` measures the peak). A line longer than a chunk is cut
    with an overlap of :data:`MAX_LINE` bytes, so no keyword window is lost (a match in the
    overlap, seen by both chunks, counts once). As within one
    chunk, a line repeated in several chunks counts once, at its latest place, and each
    signature keeps at most its first :data:`HITS_PER_KEYWORD_HEAD` and last
    :data:`HITS_PER_KEYWORD_TAIL` hits."""
    n = len(data)
    hits: list[Hit] = []
    start = 0
    while start < n:
        stop = min(n, start + SCAN_CHUNK)
        cut = nxt = stop
        if stop < n:
            nl = data.rfind(b"\n", start + SCAN_CHUNK // 2, stop)
            if nl >= 0:
                cut = nxt = nl + 1
            else:
                nxt = stop - MAX_LINE
        for h in _scan_data(data[start:cut], source, warnings):
            hits.append(Hit(h.signature, h.diagnosis, h.weight, h.line, h.groups, h.source, h.position + start,
                            (h.span[0] + start, h.span[1] + start)))
        start = nxt
    # a match inside the overlap of a line longer than a chunk is found by both chunks: it is one
    # occurrence (the same span), quoted from the chunk that saw more of its line
    once: dict[tuple[str, tuple[int, int]], Hit] = {}
    for h in hits:
        key = (h.signature.name, h.span)
        if key not in once or len(h.line) > len(once[key].line):
            once[key] = h
    latest: dict[tuple[str, str, tuple[tuple[str, str], ...]], Hit] = {}
    for h in once.values():  # in text order: the later place wins
        latest[(h.signature.name, h.line.lower(), tuple(sorted(h.groups.items())))] = h
    by_sig: dict[str, list[Hit]] = {}
    for h in sorted(latest.values(), key=lambda h: h.position):
        by_sig.setdefault(h.signature.name, []).append(h)
    out: list[Hit] = []
    for group in by_sig.values():
        if len(group) > HITS_PER_KEYWORD_HEAD + HITS_PER_KEYWORD_TAIL:
            group = group[:HITS_PER_KEYWORD_HEAD] + group[-HITS_PER_KEYWORD_TAIL:]
        out.extend(group)
    out.sort(key=lambda h: h.position)
    return out


def _chunk_lines(data: bytes) -> Iterator[list[bytes]]:
    """The lines of ``data`` (without their ``\n`` or ``\r\n``), a list per line-aligned chunk of
    about :data:`SCAN_CHUNK` bytes; a line longer than a chunk comes in pieces of at most a chunk."""
    crlf = b"\r\n" in data
    n, start = len(data), 0
    while start < n:
        stop = min(n, start + SCAN_CHUNK)
        if stop < n:
            nl = data.rfind(b"\n", start, stop)
            stop = nl + 1 if nl >= 0 else stop
        lines = data[start:stop].split(b"\n")
        if crlf:
            lines = [x[:-1] if x.endswith(b"\r") else x for x in lines]
        yield lines
        start = stop


def _maybe_wrapped(data: bytes, hits: list[Hit]) -> bool:
    """Cheap test: a small paste (up to 64 KiB: always worth a second look), lines cut at one
    fixed column (two or more distinct lines of exactly the longest length, 40-400 bytes), or
    an input up to 256 KiB where line-by-line matching found nothing."""
    if len(data) <= 64 * 1024:
        return True
    # the lines a chunk at a time (no copy of the whole text, no list of all its lines: this runs
    # on every input up to MAX_JOIN_BYTES); distinct lines are told apart by their hash
    width = max(max(map(len, lines)) for lines in _chunk_lines(data))
    if 40 <= width <= 400:
        at: set[int] = set()
        long: set[int] = set()
        floor = width * 0.8
        for lines in _chunk_lines(data):
            near = {x for x in lines if len(x) >= floor}  # distinct, before hashing
            long.update(map(hash, near))
            at.update(hash(x) for x in near if len(x) == width)
        if len(at) >= 2 and len(at) * 2 >= len(long):
            return True
    if not any(not h.signature.generic and not h.signature.supports for h in hits):
        return len(data) <= 256 * 1024
    return False


#: Short literals that gate groups of keywords: each keyword is looked for only around the
#: occurrences of the first of these it contains (one C-speed count per trigger instead of one
#: scan per keyword). Keywords containing none of them are their own trigger.
TRIGGERS: tuple[bytes, ...] = (
    b"dnn", b"cuda", b"librar", b"gpu", b"memory", b"version", b"kernel", b"exhausted", b"engine",
    b"execution",
)
GATHER_LIMIT = 4096  #: occurrences of a trigger always gathered line by line ...
GATHER_PER_BYTES = 100  #: ... or one per this many bytes, whichever is more; above, per-keyword scans


def _trigger_groups() -> list[tuple[bytes, list[tuple[bytes, tuple[int, ...]]]]]:
    groups = _CACHE.get("groups")
    if groups is None:
        by: dict[bytes, list[tuple[bytes, tuple[int, ...]]]] = {}
        sigs = signatures()
        for kw, ids in _keyword_index().items():
            trig = next((t for t in TRIGGERS if t in kw), None)
            if trig is None:
                gates = {sigs[i].gate.encode() for i in ids}
                trig = gates.pop() if len(gates) == 1 and b"" not in gates else kw
            by.setdefault(trig, []).append((kw, ids))
        groups = list(by.items())
        _CACHE["groups"] = groups
    return groups  # type: ignore[return-value]


def _scan_data(data: bytes, source: str, warnings: bool) -> list[Hit]:
    low = data.lower()
    sigs = signatures()
    n = len(low)
    # A line's bounds: a bounded look each way (a line of up to MAX_LINE bytes on each side of the
    # keyword, nearly every line of a log); beyond that, the newline offsets, found once and
    # bisected, never a search along a long line (a multi-megabyte single-line message would
    # otherwise cost time quadratic in it).
    newlines: list[int] = []

    def bounds(p: int) -> tuple[int, int]:
        a = low.rfind(b"\n", max(0, p - MAX_LINE), p)
        b = low.find(b"\n", p, p + MAX_LINE)
        if (a >= 0 or p <= MAX_LINE) and (b >= 0 or p + MAX_LINE >= n):
            return a + 1, (b if b >= 0 else n)
        if not newlines:
            newlines.extend(m.start() for m in re.finditer(b"\n", low))
            newlines.append(n + 1)  # not empty even without a newline: found once
        i = bisect.bisect_left(newlines, p)
        return (newlines[i - 1] + 1 if i else 0), min(newlines[i], n)

    # line start -> (line end, {keyword offset: signature ids})
    cands: dict[int, tuple[int, dict[int, tuple[int, ...]]]] = {}

    def add(p: int, ids: tuple[int, ...]) -> None:
        ls, le = bounds(p)
        entry = cands.get(ls)
        if entry is None:
            entry = (le, {})
            cands[ls] = entry
        prev = entry[1].get(p)
        entry[1][p] = ids if prev is None else prev + ids

    limit = max(GATHER_LIMIT, n // GATHER_PER_BYTES)
    for trig, group in _trigger_groups():
        memo: dict[bytes, list[tuple[int, tuple[int, ...]]]] = {}
        p = low.find(trig)
        if p < 0:
            continue
        seen = 0
        while p >= 0:
            seen += 1
            if seen > limit:  # too common here: scan each keyword of the group instead
                for kw, ids in group:
                    if kw in low:
                        for q in _positions(low, kw):
                            add(q, ids)
                break
            ls, le = bounds(p)
            if le - ls <= MAX_LINE:
                a, b, nxt = ls, le, le
            else:
                a, b, nxt = max(ls, p - MAX_LINE // 2), min(le, p + MAX_LINE // 2), p + 1
            seg = low[a:b]
            found = memo.get(seg)
            if found is None:
                found = []
                for kw, ids in group:
                    q = seg.find(kw)
                    if q >= 0:
                        found.append((q, ids))
                memo[seg] = found
            for q, ids in found:
                add(a + q, ids)
            p = low.find(trig, nxt)
    hits: list[Hit] = []
    seen_lines: set[bytes] = set()
    # Last occurrence first: a line repeated many times is matched once, at its latest place.
    for ls in sorted(cands, reverse=True):
        le, offsets = cands[ls]
        windowed = le - ls > MAX_LINE
        if not windowed:
            content = low[ls:le]
            if content in seen_lines:
                continue
            seen_lines.add(content)
        if not windowed:
            ids_all: set[int] = set()
            for ids in offsets.values():
                ids_all.update(ids)
            windows = [(ls, le, ids_all)]
        else:
            windows = []
            for p in sorted(offsets):
                if windows and p + 300 <= windows[-1][1]:
                    windows[-1][2].update(offsets[p])
                    continue  # this keyword sits well inside the previous window
                windows.append((max(ls, p - 300), min(le, p + 700), set(offsets[p])))

        def following(end: int = le) -> list[str]:
            out, q = [], end
            for _ in range(6):
                if q >= n:
                    break
                nxt = low.find(b"\n", q + 1)
                nxt = n if nxt < 0 else nxt
                out.append(_decode(data[q + 1: min(nxt, q + 1 + MAX_LINE)]))
                q = nxt
            return out

        for a, b, window_ids in windows:
            line = _decode(data[a:b])
            hits.extend(_match_line(line, window_ids, sigs, source, a, following, warnings, windowed))
    hits.sort(key=lambda h: h.position)
    return hits


def _named_status(s: str) -> bool:
    """True for a cuDNN status name of cudnn_graph.h / cudnn.h (knowledge/status.py)."""
    st = status_by_name(s) if s else None
    return st is not None and st.code is not None


def _status_cut_at_wrap(h: Hit, joined: bytes, starts: list[int], sep: bytes) -> int | None:
    """For a joined match whose ``status`` is no cuDNN status name but begins with one that
    ends exactly at a line end (``CUDNN_STATUS_INTERNAL_`` cut at the wrap column, ``ERROR``
    alone on the next line, then ``Traceback ...``), the index of the first line that is not
    part of the match: the longest such name. None when the status needs no cut."""
    status = h.groups.get("status")
    if not status or status.isdigit() or _named_status(status):
        return None
    raw = status.encode("utf-8", "surrogatepass")
    pos = joined.find(raw, h.span[0], h.span[1])
    if pos < 0:
        return None
    cut, longest = None, pos
    for i in range(bisect.bisect_right(starts, pos), len(starts)):
        end = starts[i] - len(sep)  # where line i - 1 ends in the joined text
        if end >= pos + len(raw):
            break
        # an empty line ends where the line before it does: the cut stays before it
        if end > longest and _named_status(raw[: end - pos].decode("utf-8", "replace")):
            cut, longest = i, end
    return cut


#: Lines that start a message of their own, never the rest of a wrapped one: the shell's report
#: of a process killed by a signal (glibc's strsignal texts: "Aborted (core dumped)",
#: "Segmentation fault", ...) and Python's traceback header and fatal-error line. A name at the
#: end of the line before is whole: "undefined symbol: cudnnCreate" + "Aborted (core dumped)" is
#: not the symbol ``cudnnCreateAborted``.
_NEW_MESSAGE = re.compile(rb"(?:Aborted|Segmentation fault|Killed|Illegal instruction|Bus error|"
                          rb"Floating point exception|Fatal Python error)\b|Traceback \(most recent call last\)")


def _scan_joined(data: bytes, source: str, warnings: bool,
                 found: list[Hit]) -> tuple[list[Hit], list[tuple[str, int, int]]]:
    """Match again with line breaks removed, for logs pasted hard-wrapped at a fixed column.

    Only matches that cross a line break are kept (the others were found line by line), and
    the evidence quotes the original lines the match spans. Also returns, per kept hit, the
    original byte range of its lines (signature name, start, end).
    """
    text = data.replace(b"\r\n", b"\n")
    lines = text.split(b"\n")
    if len(lines) < 2:
        return [], []
    # offsets in the original bytes: a CRLF line is one byte longer there than in ``lines``
    orig = [0]
    orig.extend(itertools.accumulate(len(x) + 1 for x in data.split(b"\n")))
    width = max(map(len, lines))
    known = {(h.signature.name, tuple(sorted(h.groups.items()))) for h in found}
    out: list[Hit] = []
    covered: list[tuple[str, int, int]] = []
    for sep in (b"", b" "):
        joined = sep.join(lines)
        starts = [0]
        starts.extend(itertools.accumulate(len(x) + len(sep) for x in lines[:-1]))
        for h in _scan_data(joined, source, warnings):
            first = bisect.bisect_right(starts, h.span[0]) - 1
            last = bisect.bisect_right(starts, max(h.span[0], h.span[1] - 1)) - 1
            cut = _status_cut_at_wrap(h, joined, starts, sep)
            if cut is not None:
                # the status name ends with a line; what follows is the next message: match
                # again over the lines up to there (the refinement reads the whole name)
                again = [g for g in _scan_data(sep.join(lines[first:cut]), source, warnings)
                         if g.signature.name == h.signature.name]
                if not again:
                    continue
                h, last = again[0], cut - 1  # only its id, weight and fields are read below
            same = [f for f in found if f.signature.name == h.signature.name
                    and orig[first] <= f.position < orig[last + 1]]
            completes = any(len(f.groups) < len(h.groups) for f in same)
            if last <= first and not completes:
                continue  # neither crosses a line break nor completes a field: the line pass saw it
            if any(not lines[i].strip() or _NEW_MESSAGE.match(lines[i]) for i in range(first + 1, last + 1)):
                continue  # a hard wrap leaves no empty line inside a wrapped line, nor starts a new message
            if same and not completes and len(lines[first].rstrip()) < width - 1:
                # the line pass matched this line whole and it is not cut at the wrap column:
                # joining it to the next line would only glue unrelated text on
                continue
            key = (h.signature.name, tuple(sorted(h.groups.items())))
            if key in known:
                continue
            known.add(key)
            span = lines[first: min(last + 1, first + 8)]
            quoted = _evidence(_decode(sep.join(x.strip() for x in span)))
            out.append(Hit(h.signature, h.diagnosis, h.weight, quoted, h.groups, source,
                           orig[first], (orig[first], orig[last + 1])))
            covered.append((h.signature.name, orig[first], orig[last + 1]))
    return out, covered
