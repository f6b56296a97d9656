"""``keyword_lines(data, before=B)``: the capture helper's flag bounds the search of a succeeding
cell's fd-2 bytes, and the answer is the same as over the whole bytes.

The helper flags the log offset just past the last chunk that held a warning literal
(``capture/protocol.py`` ``FLAGGED_AT``); the kernel passes it on as ``before`` so that a cell
whose literals sit in its first lines (TensorFlow's start-up lines name cuDNN, then a megabyte of
training-step lines follows) is lower-cased and searched over its first chunk, not the whole
megabyte. What must hold: for every ``B`` at or past the end of the last literal, the lines found
(with the lines a windowed signature reads after its keyword, lines cut at ``MAX_LINE``, the
first and last ``WARNING_MAX_LINES // 2`` occurrences of a common literal, and the tail) are
byte for byte those found without ``B``.
"""

from __future__ import annotations

import random

import pytest

from cudnn_magic.knowledge.matcher import (
    MAX_LINE,
    WARNING_LITERALS,
    WARNING_MAX_LINES,
    _reach,
    _windowed_keywords,
    keyword_lines,
)

#: TensorFlow's start-up lines (they name cuDNN) and per-step lines that hold no literal, as a
#: TensorFlow 2.15 training run writes them to fd 2 (``cuda_dnn.cc``, ``gpu_timer.cc``).
STARTUP = (b"2023-12-12 16:48:40.200000: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1929] Created device "
           b"/job:localhost/replica:0/task:0/device:GPU:0 with 22290 MB memory:  -> device: 0, name: NVIDIA A10G\n"
           b"2023-12-12 16:48:41.000000: I external/local_xla/xla/stream_executor/cuda/cuda_dnn.cc:531] "
           b"Loaded cuDNN version 8906\n")
STEP = b"W0000 00:00:1700000000.100000   4242 gpu_timer.cc:114] Skipping the delay kernel, measurement accuracy will be reduced\n"
#: JAX's warning whose signature reads the 6 lines after its keyword (the versions).
JAX = (b"W external/xla/xla/stream_executor/cuda/cuda_dnn.cc:1] Outdated cuDNN installation found.\n"
       b"Version JAX was built against: 8907\nMinimum supported: 8900\nInstalled version: 8600\n"
       b"The local installation version must be no lower than 8900.\nline 5\nline 6\nline 7\n")


def last_literal_end(data: bytes) -> int:
    """The end of the last occurrence of any warning literal (0 when none): the least ``before``."""
    low = data.lower()
    ends = [low.rfind(lit) + len(lit) for lit in WARNING_LITERALS if low.rfind(lit) >= 0]
    return max(ends, default=0)


def same_for_every_bound(data: bytes, **kw: object) -> bytes:
    whole = keyword_lines(data, **kw)  # type: ignore[arg-type]
    least = last_literal_end(data)
    for b in {least, least + 1, least + 17, least + MAX_LINE, least + _reach(_windowed_keywords()) - 1,
              len(data) - 1, len(data), len(data) + 5}:
        if b >= least:
            assert keyword_lines(data, before=b, **kw) == whole, (b, least, len(data))  # type: ignore[arg-type]
    return whole


def test_a_tensorflow_megabyte_is_searched_over_its_start():
    data = STARTUP + STEP * ((1 << 20) // len(STEP))
    got = same_for_every_bound(data)
    assert b"Loaded cuDNN version 8906" in got
    assert got.endswith(STEP)  # the tail (which framework printed it) is kept
    assert last_literal_end(data) == len(STARTUP) - len(b" version 8906\n")  # the bound really is near the start here


def test_a_windowed_keyword_keeps_its_lines_past_the_bound():
    data = STEP * 50 + JAX + STEP * 50
    got = same_for_every_bound(data, tail=0)
    assert b"Installed version: 8600" in got  # a line after the keyword, not holding a literal


def test_a_window_of_long_lines_reaches_far_past_the_bound():
    """The 6 lines a JAX signature reads may each be up to MAX_LINE long: the search must reach
    that far past the last literal (about 12 KB here), not only to the end of its line."""
    filler = b"".join(b"%d " % i + b"y" * (MAX_LINE - 10) + b"\n" for i in range(5))
    data = STEP * 20 + JAX.split(b"\n", 1)[0] + b"\n" + filler + b"sixth line after the keyword\n" + STEP * 20
    got = same_for_every_bound(data, tail=0)
    assert b"sixth line after the keyword" in got


def test_a_window_that_runs_to_the_end_of_the_data():
    data = STEP * 3 + JAX.rsplit(b"\n", 4)[0]  # the window is cut by the end of the bytes
    same_for_every_bound(data)
    same_for_every_bound(data, tail=0)


@pytest.mark.parametrize("where", ["start", "middle", "end"])
def test_long_lines_around_a_literal(where):
    """A literal inside a line longer than MAX_LINE keeps a window of it, whatever the bound."""
    long = b"x" * (3 * MAX_LINE)
    hit = b"could not load dynamic library 'libcudnn.so.8'"
    line = {"start": hit + long, "middle": long + hit + long, "end": long + hit}[where]
    data = STEP * 5 + line + b"\n" + STEP * 5
    got = same_for_every_bound(data, tail=0)
    assert hit in got.lower() or hit in got


def test_a_common_literal_keeps_its_first_and_last_lines():
    """More than WARNING_MAX_LINES lines hold the literal: the last ones are found from the end
    of what is searched, which the bound must still cover."""
    data = b"".join(b"I step %d: cuDNN autotune\n" % i for i in range(WARNING_MAX_LINES + 300)) + STEP * 400
    got = same_for_every_bound(data, tail=0)
    assert b"step 0:" in got and b"step %d:" % (WARNING_MAX_LINES + 299) in got


def test_no_literal_before_the_bound_finds_nothing():
    data = STEP * 1000
    assert keyword_lines(data, before=0) == keyword_lines(data) == b""


def test_random_logs_agree():
    """Random mixes of the pieces above (and literals cut by nothing, at the very ends)."""
    rng = random.Random(20261203)
    pieces = [STEP, STARTUP, JAX, b"\n", b"x" * (MAX_LINE + 5) + b"\n", b"GPU device: 0\n",
              b"Cannot dlopen some GPU libraries.", b"jaxlib", b"plain words\n" * 30]
    for _ in range(200):
        data = b"".join(rng.choice(pieces) for _ in range(rng.randint(1, 60)))
        same_for_every_bound(data)
        same_for_every_bound(data, tail=0)
