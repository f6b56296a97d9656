"""knowledge.matcher.keyword_lines (the capture's prefilter of a succeeding cell's fd-2 output,
before diagnose.gpu_unused_warnings) at its edges.

The rule, from its docstring and docs/performance.md (a cell that printed a megabyte of ordinary
log costs a few passes over its bytes): the lines holding a warning literal (case-insensitive),
in their original order, joined by newlines; the lines after one holding a windowed signature's
keyword (JAX's "Outdated cuDNN installation found." is followed by 6 lines that carry the
versions: knowledge/versions.py ``jax-outdated-cudnn``, JAX ``jax_plugins/cuda/__init__.py``
``_check_cuda_versions``); the whole lines within the last ``tail`` bytes (which framework
printed it); nothing when no line holds a literal. A literal on more than
``WARNING_MAX_LINES`` (2048) lines keeps its first 1024 and last 1024 lines; a line longer than
``MAX_LINE`` (2000 bytes) is cut to a window around the literal (at most ``MAX_LINE`` bytes
each side).
"""

from __future__ import annotations

import pytest

from cudnn_magic.engines.diagnose import gpu_unused_warnings
from cudnn_magic.knowledge.matcher import MAX_LINE, WARNING_LITERALS, WARNING_MAX_LINES, keyword_lines

CELL = b"I cudnn line\nplain 1\nplain 2\nend of cell\n"  # 13 + 8 + 8 + 12 bytes


@pytest.mark.parametrize("data", [b"", b"plain\nlog\n", b"\n\n\n", b"cud nn\n"])
def test_no_literal_no_lines(data):
    assert keyword_lines(data) == b""
    assert keyword_lines(data, tail=0) == b""


@pytest.mark.parametrize("line", [b"Loaded cuDNN version 8907", b"CUDNN_STATUS_SUCCESS", b"could not LOAD DYNAMIC LIBRARY "
                                  b"'libcudnn.so.8'", b"Skipping registering GPU devices...", b"Unable to register cuDNN factory",
                                  b"jaxlib 0.4.30", b"CUDAExecutionProvider", b"zlibwapi.dll", b"Cannot dlopen some GPU libraries"])
def test_each_literal_case_insensitive(line):
    data = b"plain\n" + line + b"\nplain\n"
    assert keyword_lines(data, tail=0) == line


def test_the_literals_are_the_warning_ones():
    # the literals are the first words of the warnings gpu_unused_warnings knows (lower case: the
    # search lower-cases the text once)
    assert all(lit == lit.lower() for lit in WARNING_LITERALS)
    assert set(WARNING_LITERALS) >= {b"cudnn", b"load dynamic librar", b"gpu librar", b"gpu device",
                                      b"cudaexecutionprovider", b"cuda backend", b"jaxlib", b"zlibwapi"}


def test_lines_keep_their_order_and_a_line_with_two_literals_comes_once():
    data = b"a\ncuda backend failed\nb\njaxlib and cudnn\nc\ncudnn again\n"
    assert keyword_lines(data, tail=0) == b"cuda backend failed\njaxlib and cudnn\ncudnn again"


TAILS = [
    # tail bytes, output: whole lines within the last `tail` bytes join the literal lines
    (0, b"I cudnn line"),
    (11, b"I cudnn line"),  # "end of cell\n" is 12 bytes: not whole within 11
    (12, b"I cudnn line\nend of cell\n"),  # exactly the last line
    (13, b"I cudnn line\nend of cell\n"),
    (20, b"I cudnn line\nplain 2\nend of cell\n"),
    (41, CELL),  # everything: the literal line and the tail merge
    (1000, CELL),
]


@pytest.mark.parametrize("tail, out", TAILS, ids=[str(t) for t, _ in TAILS])
def test_tail_keeps_whole_lines(tail, out):
    assert len(CELL) == 41
    assert keyword_lines(CELL, tail=tail) == out


def test_tail_without_a_trailing_newline():
    assert keyword_lines(b"cudnn\nmiddle\nlast", tail=4) == b"cudnn\nlast"


LINE_CAP = [
    # lines holding the literal, which are kept (the first half and the last half of the cap)
    (WARNING_MAX_LINES - 1, None),
    (WARNING_MAX_LINES, None),  # at the cap: all
    (WARNING_MAX_LINES + 1, [WARNING_MAX_LINES // 2]),  # one over: the middle one is dropped
    (WARNING_MAX_LINES + 10, list(range(WARNING_MAX_LINES // 2, WARNING_MAX_LINES // 2 + 10))),
]


@pytest.mark.parametrize("n, dropped", LINE_CAP, ids=[str(n) for n, _ in LINE_CAP])
def test_a_literal_on_too_many_lines_keeps_the_first_and_the_last(n, dropped):
    assert WARNING_MAX_LINES == 2048
    data = b"".join(b"cudnn %d\n" % i for i in range(n))
    out = keyword_lines(data, tail=0).split(b"\n")
    kept = [int(x.split()[1]) for x in out]
    assert kept == [i for i in range(n) if i not in (dropped or ())]


def test_the_cap_is_per_literal():
    data = b"".join(b"cudnn %d\n" % i for i in range(WARNING_MAX_LINES + 1)) + b"jaxlib tail line\n"
    out = keyword_lines(data, tail=0).split(b"\n")
    assert len(out) == WARNING_MAX_LINES + 1 and out[-1] == b"jaxlib tail line"


LONG = [
    # bytes before the literal, bytes after it on the same line
    (50_000, 50_000),
    (0, 100_000),
    (100_000, 0),
    (MAX_LINE - 10, MAX_LINE - 10),
]


@pytest.mark.parametrize("before, after", LONG, ids=[f"{b}-{a}" for b, a in LONG])
def test_a_long_line_is_cut_to_a_window_around_the_literal(before, after):
    data = b"x" * before + b" cuDNN " + b"y" * after
    out = keyword_lines(data, tail=0)
    assert b" cuDNN " in out
    assert len(out) <= 2 * MAX_LINE + len(b" cuDNN ")  # at most MAX_LINE bytes each side of the literal
    assert len(out) <= len(data)
    assert data.find(out) >= 0  # one piece of the line, not rebuilt


def test_a_line_at_the_max_is_kept_whole():
    line = b"cudnn " + b"y" * (MAX_LINE - 7)
    assert len(line) < MAX_LINE
    assert keyword_lines(b"a\n" + line + b"\nb\n", tail=0) == line


JAX = (b"RuntimeError: Outdated cuDNN installation found.\nVersion JAX was built against: 8906\nMinimum supported: 8900\n"
       b"Installed version: 8600\nThe local installation version must be no lower than 8900.\nline 6\nline 7\nline 8\n")


def test_a_windowed_keyword_keeps_the_lines_after_it():
    out = keyword_lines(JAX, tail=0)
    assert out == JAX[: JAX.index(b"\nline 8")]  # the keyword's line and the 6 after it
    assert b"line 8" not in out


def test_a_window_stops_at_the_end_of_the_text():
    short = JAX[: JAX.index(b"line 6")]
    assert keyword_lines(short, tail=0) == short


def test_the_prefilter_keeps_what_the_warnings_need():
    # a succeeding cell's output: TensorFlow's "Cannot dlopen some GPU libraries" warning among
    # ordinary lines; the warning from the filtered lines is the one from the whole text
    text = ("epoch 1/3\n" * 500 + "W tensorflow/core/common_runtime/gpu/gpu_device.cc:2211] Cannot dlopen some GPU "
            "libraries. Please make sure the missing libraries mentioned above are installed properly if you would "
            "like to use GPU.\nSkipping registering GPU devices...\n" + "epoch 2/3\n" * 500)
    whole = [d.id for d in gpu_unused_warnings(text)]
    assert whole
    assert [d.id for d in gpu_unused_warnings(keyword_lines(text.encode()).decode())] == whole


HALF = MAX_LINE // 2
WINDOWS = [
    # text before the line, bytes of the line before the literal, after the literal's 5 bytes, text after the line;
    # the piece kept: from the line's start (or HALF bytes before the literal when more than MAX_LINE precede it)
    # to the line's end (or HALF bytes from the literal when more than MAX_LINE follow it)
    (b"", 10, 10, b"", "line", "line"),
    (b"prev line\n", 10, 10, b"\nnext line", "line", "line"),
    (b"prev line\n", MAX_LINE - 1, 10, b"", "line", "line"),
    (b"prev line\n", MAX_LINE + 1, 10, b"", "half", "line"),
    (b"", MAX_LINE + 1, 10, b"\nnext line", "half", "line"),
    (b"", 10, MAX_LINE - 6, b"\nnext line", "line", "line"),
    (b"", 10, MAX_LINE - 5, b"", "line", "line"),  # the rest of the text is MAX_LINE bytes: kept
    (b"", 10, HALF + 500, b"", "line", "line"),
    (b"", 10, MAX_LINE + 1, b"", "line", "half"),
    (b"", 10, MAX_LINE + 1, b"\nnext line", "line", "half"),
    (b"prev\n", 3 * MAX_LINE, 3 * MAX_LINE, b"\nnext", "half", "half"),
]


@pytest.mark.parametrize("lead, before, after, trail, start, end", WINDOWS,
                         ids=[f"{len(ln)}-{b}-{a}-{len(t)}" for ln, b, a, t, _, _ in WINDOWS])
def test_the_window_kept_of_a_line(lead, before, after, trail, start, end):
    data = lead + b"x" * before + b"cuDNN" + b"y" * after + trail
    p = len(lead) + before
    line_start, line_end = len(lead), p + 5 + after
    a = line_start if start == "line" else p - HALF
    b = line_end if end == "line" else p + HALF
    assert keyword_lines(data, tail=0) == data[a:b]


def test_an_empty_first_line_is_not_kept():
    assert keyword_lines(b"\ncudnn x\n", tail=0) == b"cudnn x"


@pytest.mark.parametrize("kind", [bytearray, memoryview])
def test_bytes_like_input(kind):
    data = b"plain\nLoaded cuDNN 9\nplain\n"
    assert keyword_lines(kind(data), tail=0) == b"Loaded cuDNN 9"


def test_the_window_is_the_keyword_line_own():
    # a windowed keyword elsewhere in the text gives no window to another literal line
    before = b"cudnn first\nafter first\n" + b"plain\n" * 5
    after = b"plain\n" * 5 + b"cudnn last\nafter last\n"
    out = keyword_lines(before + JAX + after, tail=0)
    assert b"after first" not in out and b"after last" not in out
    assert JAX[: JAX.index(b"\nline 8")] in out


def test_a_windowed_keyword_at_the_very_start():
    jax = JAX[len(b"RuntimeError: "):]
    assert keyword_lines(jax, tail=0) == jax[: jax.index(b"\nline 8")]


def test_empty_lines_count_in_a_window():
    jax = JAX.replace(b"\nMinimum supported", b"\n\nMinimum supported")
    assert keyword_lines(jax, tail=0) == jax[: jax.index(b"\nline 7")]


def test_a_window_stops_before_a_line_longer_than_max_line():
    first = b"RuntimeError: Outdated cuDNN installation found."
    data = first + b"\nVersion JAX was built against: 8906\n" + b"z" * (3 * MAX_LINE) + b"\nline after\n"
    assert keyword_lines(data, tail=0) == first + b"\nVersion JAX was built against: 8906"


def test_an_empty_line_between_two_kept_lines_is_left_out():
    assert keyword_lines(b"cudnn a\n\ncudnn b\n", tail=0) == b"cudnn a\ncudnn b"
