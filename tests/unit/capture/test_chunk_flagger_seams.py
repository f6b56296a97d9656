"""``ChunkFlagger.holds``: the capture helper's flag of a chunk of fd-2 bytes that holds a warning
literal, whatever way the stream was cut into chunks.

Each ``write`` a native library makes can reach the helper as a chunk of its own (the helper
reads whatever the pipe holds), so a literal may arrive a few bytes at a time: spread over more
than two chunks, each shorter than the literal. The flag must still come (the chunk that
completes it), or a succeeding cell's warning ("Could not load dynamic library 'libcudnn.so.8'",
TensorFlow's ``dso_loader.cc``) would never be read back. Before, only the last chunk's bytes
were kept for the seam, so such a literal went unflagged. A chunk is flagged only when a
literal ends in it: one that ended in an earlier chunk (still in the seam) does not flag the next
chunk again (that would move the flag, and the kernel's read, past where the literals are).

And the kernel's use of the flag: the flag is the end of the last chunk that held a literal, so
no literal of the cell ends after it (``keyword_lines(before=...)``, tests/unit/knowledge/test_keyword_lines_before.py).
"""

from __future__ import annotations

import random

from cudnn_magic.capture.fastfind import ChunkFlagger
from cudnn_magic.knowledge.literals import WARNING_LITERALS

LITS = tuple(x.lower() for x in WARNING_LITERALS)
STEP = b"W0000 00:00:1700000000.100000   4242 gpu_timer.cc:114] Skipping the delay kernel\n"


def literal_ends(stream: bytes) -> list[int]:
    low = stream.lower()
    out = []
    for lit in LITS:
        p = low.find(lit)
        while p >= 0:
            out.append(p + len(lit))
            p = low.find(lit, p + 1)
    return sorted(out)


def flagged_offsets(stream: bytes, cuts: list[int]) -> list[int]:
    """The helper's ``flagged`` after each chunk: the end of the last chunk that held a literal."""
    f = ChunkFlagger(WARNING_LITERALS)
    flagged, out = 0, []
    for a, b in zip([0, *cuts], [*cuts, len(stream)]):
        if f.holds(stream[a:b]):
            flagged = b
        out.append(flagged)
    return out


def check(stream: bytes, cuts: list[int]) -> None:
    """After every chunk: a literal ended so far <=> something is flagged, and no literal ends
    after the flag; a flagged chunk holds (or completes) one."""
    ends = literal_ends(stream)
    bounds = [*cuts, len(stream)]
    starts = [0, *cuts]
    for i, flagged in enumerate(flagged_offsets(stream, cuts)):
        done = [e for e in ends if e <= bounds[i]]
        assert bool(done) == bool(flagged), (i, done, flagged)
        if done:
            assert flagged >= done[-1]
    prev = 0
    for i, flagged in enumerate(flagged_offsets(stream, cuts)):
        if flagged != prev:  # this chunk was flagged: a literal ends inside it
            assert any(starts[i] < e <= bounds[i] for e in ends)
        prev = flagged


def test_a_literal_written_a_few_bytes_at_a_time():
    stream = STEP + b"CUDAExecutionProvider failed\n" + STEP
    start = len(STEP)
    for step in (1, 2, 3, 5, 8, 13):
        cuts = list(range(start, start + 22, step))
        assert flagged_offsets(stream, cuts)[-1] > 0, step
        check(stream, cuts)


def test_could_not_load_dynamic_library_one_byte_at_a_time():
    line = b"2021-06-02 13:10:30: W dso_loader.cc:64] Could not load dynamic library 'libcudnn.so.8'\n"
    check(line, list(range(1, len(line))))
    assert flagged_offsets(line, list(range(1, len(line))))[-1] > 0


def test_random_streams_and_cuts():
    rng = random.Random(20261203)
    pieces = [STEP, b"I cuda_dnn.cc] Loaded cuDNN version 8906\n", b"Cannot dlopen some GPU libraries.", b"q" * 300,
              b"\n", b"JAXLIB", b"zlibwapi.dll", b"CUDAExecutionProvider", b"cuda backend"]
    for _ in range(300):
        stream = b"".join(rng.choice(pieces) for _ in range(rng.randint(1, 25)))
        n = rng.randint(0, 40)
        cuts = sorted({rng.randint(1, len(stream) - 1) for _ in range(n)}) if len(stream) > 1 else []
        check(stream, cuts)
