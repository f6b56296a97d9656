"""The knowledge scan at its edges: status names, CamelCase names and bare numbers (the 1000
boundary between cuDNN 8 and 9 numbering), cudnn_frontend error codes, SUCCESS that is and is not
an error, evidence quoting (controls, bounds) and hard-wrapped pastes (issue 20: mutation testing).

Sources: docs/facts.md "Status codes" (cuDNN 8 numbers 0..14, cuDNN 9 the thousands); cuDNN's
``cudnnStatus_t`` names; cudnn_frontend ``graph_properties.h`` error_code_t; TensorFlow
cuda_dnn.cc "Check failed: status == CUDNN_STATUS_SUCCESS (N vs. 0)"; old PyTorch's
"CuDNN error: CUDNN_STATUS_SUCCESS" for an unset status; TensorFlow's
"Loaded runtime CuDNN library: X but source was compiled with: Y" (XLA cuda_dnn.cc).
"""

from __future__ import annotations

import pytest

from cudnn_magic.knowledge.matcher import EVIDENCE_CHARS, scan


def _hits(text, source="exception", **kw):
    return [(h.diagnosis, h.groups.get("status")) for h in scan(text, source, **kw)]


STATUS_TEXTS = [
    # text, (diagnosis, decoded status name) or [] for no hit
    ("Check failed: status == CUDNN_STATUS_SUCCESS (3 vs. 0)", [("cudnn-bad-param", "CUDNN_STATUS_BAD_PARAM")]),
    ("Check failed: status == CUDNN_STATUS_SUCCESS (3000 vs. 0)",
     [("cudnn-unsupported-config", "CUDNN_STATUS_NOT_SUPPORTED")]),
    ("Check failed: status == CUDNN_STATUS_SUCCESS (0 vs. 0)", []),  # 0 is success
    ("cuDNN error: 14", [("cudnn-sublibrary-load-failed", "CUDNN_STATUS_VERSION_MISMATCH")]),
    ("cuDNN error: 1001", [("cudnn-init-failed", "CUDNN_STATUS_NOT_INITIALIZED")]),  # cuDNN 9 numbering from 1000
    ("cuDNN status 4003", [("gpu-out-of-memory", "CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED")]),
    ("cuDNN status 5999", [("cudnn-execution-failed", "CUDNN_STATUS_EXECUTION_FAILED family (unknown code 5999)")]),
    ("cudnn error code 999", []), ("cudnn error code 15", []),  # no status of either numbering
    ("cudnnStatusArchMismatch", [("gpu-arch-unsupported", "CUDNN_STATUS_ARCH_MISMATCH")]),
    ("cudnnStatusBadParam raised", [("cudnn-bad-param", "CUDNN_STATUS_BAD_PARAM")]),
    ("cudnnStatusNotInitialized", [("cudnn-init-failed", "CUDNN_STATUS_NOT_INITIALIZED")]),
    ("CuDNN error: CUDNN_STATUS_SUCCESS", [("cudnn-init-failed", "CUDNN_STATUS_SUCCESS")]),  # old PyTorch
    ("cudnn call failed: CUDNN_STATUS_SUCCESS", [("cudnn-init-failed", "CUDNN_STATUS_SUCCESS")]),
    ("error: status != CUDNN_STATUS_SUCCESS", []),  # a comparison, not a status
    ("status == CUDNN_STATUS_SUCCESS failed", []),
    ("CUDNN_STATUS_SUCCESS", []),  # success without error words
    ("cuDNN error: CUDNN_STATUS_MADE_UP_NAME", []),
    ("cuDNN error: CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH",
     [("gpu-arch-unsupported", "CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH")]),
    ("CUDNN_FE failure 8: GRAPH_NOT_SUPPORTED", [("cudnn-unsupported-config", None)]),
    ("CUDNN_FE failure 3: HANDLE_ERROR", [("cudnn-init-failed", None)]),
    ("CUDNN_FE failure 11: CUDNN_BACKEND_API_FAILED", []),  # defers to the status printed with it
]


@pytest.mark.parametrize("text, expected", STATUS_TEXTS, ids=[t for t, _ in STATUS_TEXTS])
def test_status_wordings(text, expected):
    assert _hits(text) == expected


def test_a_bare_number_weighs_less_than_the_name_and_a_frontend_code_more():
    name = scan("cuDNN error: CUDNN_STATUS_BAD_PARAM", "exception")[0]
    number = scan("cuDNN error: 3", "exception")[0]
    camel = scan("cudnnStatusBadParam", "exception")[0]
    frontend = scan("CUDNN_FE failure 5: ATTRIBUTE_NOT_SET", "exception")[0]
    assert name.diagnosis == number.diagnosis == camel.diagnosis == frontend.diagnosis == "cudnn-bad-param"
    assert number.weight < name.weight == camel.weight < frontend.weight
    succ = scan("CuDNN error: CUDNN_STATUS_SUCCESS", "exception")[0]
    init = scan("cuDNN error: CUDNN_STATUS_NOT_INITIALIZED", "exception")[0]
    assert succ.weight < init.weight  # an unset status is weaker evidence than the status itself


@pytest.mark.parametrize("raw, quoted", [
    ("\x1b[31mCould not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR\x1b[0m\r",
     "[31mCould not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR [0m"),  # no leading space, no ESC
    ("   Could not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR\t ",
     "Could not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR"),
    ("\u202eCould not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR",
     "Could not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR"),  # a bidi control at the start
])
def test_evidence_is_quoted_without_controls_or_edge_spaces(raw, quoted):
    lines = [h.line for h in scan(raw, "log")]
    assert lines and all(line == quoted for line in lines)


@pytest.mark.parametrize("pad", [EVIDENCE_CHARS - 60, EVIDENCE_CHARS, 5000])
def test_evidence_is_bounded(pad):
    text = "x" * pad + " Could not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR"
    for h in scan(text, "log"):
        assert len(h.line) <= EVIDENCE_CHARS
        if len(text) <= EVIDENCE_CHARS:
            assert h.line == text
        else:
            assert h.line.endswith("…") or h.line.endswith("CUDNN_STATUS_INTERNAL_ERROR")


TF = ("E tensorflow/stream_executor/cuda/cuda_dnn.cc:359] Loaded runtime CuDNN library: 8.0.5 but source was compiled "
      "with: 8.1.0.  CuDNN library needs to have matching major version and equal or higher minor version.")


@pytest.mark.parametrize("cut", [TF.index("sour") + 4, TF.index(" compiled"), TF.index("8.1.0") + 2])
def test_a_hard_wrapped_paste_is_read_whole(cut):
    wrapped = TF[:cut] + "\n" + TF[cut:].lstrip(" ") if TF[cut] == " " else TF[:cut] + "\n" + TF[cut:]
    versions = [h.groups for h in scan(wrapped, "log") if h.signature.name == "tf-loaded-runtime"]
    assert {"loaded": "8.0.5", "compiled": "8.1.0"} in versions
    # a cell's own output is not a paste: only whole lines are matched
    alone = [h.groups for h in scan(wrapped, "log", joined=False) if h.signature.name == "tf-loaded-runtime"]
    assert {"loaded": "8.0.5", "compiled": "8.1.0"} not in alone


def test_unwrapped_lines_are_not_glued():
    text = "cuDNN error: CUDNN_STATUS_BAD_PARAM\nsomething else entirely: CUDNN_STATUS_MAPPING_ERROR"
    lines = {h.line for h in scan(text, "log")}
    assert lines == {"cuDNN error: CUDNN_STATUS_BAD_PARAM", "something else entirely: CUDNN_STATUS_MAPPING_ERROR"}


@pytest.mark.parametrize("source", ["log", "exception", "traceback"])
def test_bytes_and_text_read_alike(source):
    text = TF + "\nCould not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR\n"
    a = [(h.signature.name, h.line, h.groups, h.position) for h in scan(text, source)]
    b = [(h.signature.name, h.line, h.groups, h.position) for h in scan(text.encode(), source)]
    assert a == b and a
    assert all(h.source == source for h in scan(text, source))


# TensorFlow's "Memory usage: N bytes free, M bytes total" next to a handle failure: the GPU was
# nearly full when free < 256 MiB or free < 5% of total (knowledge/memory.py's thresholds, the
# cudnn handle needs workspace; TF cuda_dnn.cc logs the line).
MIB = 1 << 20


@pytest.mark.parametrize("free, total, full", [
    (256 * MIB - 1, 2048 * MIB, True), (256 * MIB, 2048 * MIB, False),  # the absolute floor (5 % of 2 GiB is less)
    (256 * MIB + 1, 2048 * MIB, False),
    (858_993_459, 16 * 1024 * MIB, True),  # 5 % of 16 GiB is 858,993,459.2 bytes: just below
    (858_993_460, 16 * 1024 * MIB, False),  # just above
    (0, 0, False), (5, 0, False),  # no total: nothing to judge
])
def test_memory_usage_line_at_the_nearly_full_edge(free, total, full):
    text = f"Memory usage: {free} bytes free, {total} bytes total"
    got = [(h.diagnosis, h.groups) for h in scan(text, "log") if h.signature.name == "tf-memory-usage"]
    assert got == ([("gpu-out-of-memory", {"free": str(free), "total": str(total)})] if full else [])


@pytest.mark.parametrize("suffix, diagnosis", [
    ("(35): CUDA_ERROR_INSUFFICIENT_DRIVER", "cuda-driver-too-old"),  # by the CUDA error number
    (": cudaErrorInsufficientDriver", "cuda-driver-too-old"),
    (": CUDA driver version is insufficient for CUDA runtime version", "cuda-driver-too-old"),
    ("(2): CUDA_ERROR_OUT_OF_MEMORY", "gpu-out-of-memory"),
    (": cudaErrorMemoryAllocation", "gpu-out-of-memory"),
    (": out of memory", "gpu-out-of-memory"),
    ("(1): CUDA_ERROR_INVALID_VALUE", "cudnn-init-failed"),  # any other pending error
])
def test_xla_error_before_the_handle_names_the_pending_cuda_error(suffix, diagnosis):
    text = "There was an error before creating cudnn handle" + suffix
    hits = [h.diagnosis for h in scan(text, "log") if h.signature.name == "xla-error-before-cudnn-handle"]
    assert hits == [diagnosis]


# =========================================================================================
# knowledge.matcher: scan, _scan_chunked, _match_line, _trigger_groups, _evidence, _maybe_wrapped
# (issue 20: the survivors of the coordinator's mutmut run; rules from the matcher's module
# docstring and the docstrings of scan / _scan_chunked / _maybe_wrapped / TRIGGERS, each stated at
# its edge). A small SCAN_CHUNK stands in for the 4 MiB one, as in test_knowledge_mutation_edges.
import logging  # noqa: E402
import tracemalloc  # noqa: E402
from dataclasses import replace  # noqa: E402

from cudnn_magic.knowledge import matcher  # noqa: E402

HANDLE_MSG = "Could not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR"  # TF/XLA cuda_dnn.cc
LOADED = "Loaded runtime CuDNN library: 8.0.5 but source was compiled with: 8.1.0"  # XLA cuda_dnn.cc
LOADED_GROUPS = {"loaded": "8.0.5", "compiled": "8.1.0"}
SMALL_CHUNK = 4096


def _noise(n):
    return [f"noise line {i:05d} " + "z" * 40 for i in range(n)]


# _evidence: a quoted line of up to EVIDENCE_CHARS (400) characters is kept whole; a longer one is
# cut to exactly EVIDENCE_CHARS characters, the last of them "…" (matcher.EVIDENCE_CHARS).
@pytest.mark.parametrize("length", [EVIDENCE_CHARS - 1, EVIDENCE_CHARS, EVIDENCE_CHARS + 1, EVIDENCE_CHARS + 2])
def test_evidence_is_whole_up_to_400_characters_and_exactly_400_above(length):
    line = "x" * (length - len(HANDLE_MSG) - 1) + " " + HANDLE_MSG
    assert len(line) == length
    quoted = [h.line for h in scan(line, "log") if h.signature.name == "cudnn-create-handle"]
    if length <= EVIDENCE_CHARS:
        assert quoted == [line]
    else:
        assert quoted == [line[: EVIDENCE_CHARS - 1] + "…"] and len(quoted[0]) == EVIDENCE_CHARS


# _match_line: a line longer than MAX_LINE is quoted from 120 characters before the match (or from
# the line's first character when the match is nearer to it) to 200 after.
@pytest.mark.parametrize("before", [0, 1, 119, 120, 121])
def test_a_long_line_is_quoted_from_its_first_character_when_the_match_is_near_it(before):
    text = "a" * before + LOADED + "b" * 5000
    got = [(h.line, h.position) for h in scan(text, "log") if h.signature.name == "tf-loaded-runtime"]
    assert got == [("a" * min(before, 120) + LOADED + "b" * 200, before)]


# _match_line: a warning_only wording (TensorFlow gpu_device.cc "Ignoring visible gpu device", JAX
# xla_bridge.py "CUDA-enabled jaxlib is not installed") that is not asked for is skipped alone; the
# other wordings on the same line still count (a log flattened onto one line, "\n" escaped, as a
# JSON logger writes it); asked for, it is a specific wording and claims its line from the generic
# status name (Signature.generic). A cuDNN status name: cudnn_graph.h / docs/facts.md "Status codes".
TF_IGNORING = ("W Ignoring visible gpu device (device: 0, name: Tesla K80, pci bus id: 0000:01:00.0) with Cuda "
               "compute capability 3.5. The minimum required Cuda capability is 3.7.")
JAX_NO_CUDA = "An NVIDIA GPU may be present on this machine, but a CUDA-enabled jaxlib is not installed."
FLAT_STATUS = "\\nRuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED"


@pytest.mark.parametrize("text, warnings, names", [
    (TF_IGNORING + FLAT_STATUS, False, ["status-name"]),
    (TF_IGNORING + FLAT_STATUS, True, ["tf-ignoring-gpu-capability"]),  # asked for, it claims the line
    (JAX_NO_CUDA + FLAT_STATUS, False, ["status-name"]),
    (JAX_NO_CUDA + FLAT_STATUS, True, ["jax-no-cuda-jaxlib"]),
])
def test_a_warning_only_wording_not_asked_for_hides_nothing_else_on_its_line(text, warnings, names):
    assert [h.signature.name for h in scan(text, "log", warnings=warnings, joined=False)] == names


# _match_line: cudnn_frontend's error_code_t 11, CUDNN_BACKEND_API_FAILED, names no cause of its own
# and defers to the cuDNN status (knowledge/status.py FRONTEND_CODES); a status name on the same
# line is still read (cudnn_frontend graph_properties.h; cudnn_graph.h status names).
@pytest.mark.parametrize("text, expected", [
    ("CUDNN_FE failure 11: CUDNN_BACKEND_API_FAILED ; cudnn_status: CUDNN_STATUS_BAD_PARAM",
     [("status-name", "cudnn-bad-param")]),
    ("CUDNN_FE failure 11: CUDNN_BACKEND_API_FAILED ; cudnn_status: CUDNN_STATUS_NOT_SUPPORTED",
     [("status-name", "cudnn-unsupported-config")]),
    ("CUDNN_FE failure 11: CUDNN_BACKEND_API_FAILED", []),
])
def test_a_deferring_frontend_code_leaves_the_status_on_its_line(text, expected):
    assert [(h.signature.name, h.diagnosis) for h in scan(text, "exception")] == expected


# _match_line: a signature without a window (Signature.window = 0) reads its extra fields from its
# own line only: ONNX Runtime's older "Failed to create CUDAExecutionProvider. Please reference ..."
# has no requirement, and a newer one printed after it keeps its own (onnxruntime
# provider_bridge_ort.cc; knowledge/warnings.py ort-failed-cuda-ep).
def test_fields_of_a_signature_without_a_window_come_from_its_own_line():
    text = ("Failed to create CUDAExecutionProvider. Please reference https://onnxruntime.ai/docs/execution-providers/"
            "CUDA-ExecutionProvider.html#requirements to ensure all dependencies are met.\n"
            "Failed to create CUDAExecutionProvider. Require cuDNN 9.* and CUDA 12.*, and the latest MSVC runtime.\n")
    got = [h.groups for h in scan(text, "log", joined=False) if h.signature.name == "ort-failed-cuda-ep"]
    assert got == [{}, {"required": "9", "cuda": "12"}]


# _match_line: "a knowledge entry never breaks the scan" - a refinement that raises leaves the entry
# with its own diagnosis and weight, and the rest of the text is still matched.
def test_a_refinement_that_raises_keeps_the_entry_and_the_scan(monkeypatch):
    sigs = matcher.signatures()
    i = next(k for k, s in enumerate(sigs) if s.name == "cudnn-create-handle")

    def boom(groups, line):
        raise RuntimeError("a broken knowledge entry")

    monkeypatch.setitem(matcher._CACHE, "sigs", sigs[:i] + (replace(sigs[i], refine=boom),) + sigs[i + 1:])
    got = [(h.signature.name, h.diagnosis, h.weight) for h in scan(HANDLE_MSG + "\n" + LOADED, "log", joined=False)]
    assert got == [("cudnn-create-handle", sigs[i].diagnosis, sigs[i].weight),
                   ("tf-loaded-runtime", "cudnn-version-mismatch", sigs[next(
                       k for k, s in enumerate(sigs) if s.name == "tf-loaded-runtime")].weight)]


# scan: the default source label is "log" (scan's signature; Hit.source).
def test_the_default_source_is_log():
    assert [h.source for h in scan(LOADED)] == ["log"]
    assert [h.source for h in scan(LOADED.encode())] == ["log"]


# scan "Never raises": a failure inside the matcher gives no hits and one DEBUG record on the
# "cudnn_magic" logger, "knowledge scan failed", with the traceback (as diagnose.py logs its own).
def test_a_failure_inside_the_scan_is_logged_at_debug_and_gives_no_hits(monkeypatch, caplog):
    def broken(data, source, warnings):
        raise RuntimeError("matcher bug")

    monkeypatch.setattr(matcher, "_scan_data", broken)
    with caplog.at_level(logging.DEBUG, logger="cudnn_magic"):
        assert scan(LOADED, "log") == []
    got = [(r.name, r.levelno, r.getMessage(), bool(r.exc_info) and r.exc_info[0]) for r in caplog.records]
    assert got == [("cudnn_magic", logging.DEBUG, "knowledge scan failed", RuntimeError)]


# scan: a hard-wrapped paste of up to MAX_JOIN_BYTES is joined (matcher docstring, step 3), whether
# its line pass is one chunk or several (SCAN_CHUNK); one byte more is matched line by line only.
# Observable: a TensorFlow line cut after "but sour" gets its compiled version back. The limits are
# 4 MiB and 256 KiB in the product; 4 KiB and 1 KiB stand in for them.
def _wrapped_paste(size):
    head = "Loaded runtime CuDNN library: 8.0.5 but sour\nce was compiled with: 8.1.0\n"
    lines, n = [head.rstrip("\n")], len(head) - 1
    i = 0
    while n < size:
        lines.append(f"filler {i:05d} " + "z" * (i % 23))
        n, i = n + len(lines[-1]) + 1, i + 1
    data = "\n".join(lines).encode()[:size]
    assert len(data) == size
    return data


@pytest.mark.parametrize("size, whole", [(SMALL_CHUNK - 1, True), (SMALL_CHUNK, True), (SMALL_CHUNK + 1, False)])
def test_a_wrapped_paste_is_joined_up_to_the_join_size_and_not_above(monkeypatch, size, whole):
    assert matcher.SCAN_CHUNK < matcher.MAX_JOIN_BYTES
    monkeypatch.setattr(matcher, "SCAN_CHUNK", SMALL_CHUNK // 4)  # chunked line pass: the join does not depend on it
    monkeypatch.setattr(matcher, "MAX_JOIN_BYTES", SMALL_CHUNK)
    got = [h.groups for h in scan(_wrapped_paste(size), "log") if h.signature.name == "tf-loaded-runtime"]
    assert got == ([LOADED_GROUPS] if whole else [{"loaded": "8.0.5"}])


# scan: the source label and `warnings` reach every hit of every path: line by line, a chunked input
# (above SCAN_CHUNK) and a hard-wrapped paste (joined); Hit.position / Hit.span are byte offsets of
# the whole input (Hit docstring).
def test_source_and_warnings_reach_the_hits_of_a_chunked_input(monkeypatch):
    monkeypatch.setattr(matcher, "SCAN_CHUNK", SMALL_CHUNK)
    lines = _noise(300)
    lines[40], lines[250] = TF_IGNORING, LOADED
    data = ("\n".join(lines) + "\n").encode()
    assert len(data) > 3 * SMALL_CHUNK
    got = [(h.signature.name, h.source, h.span) for h in scan(data, "exception", warnings=True)]
    p, q = data.find(b"Ignoring"), data.find(b"Loaded")
    assert [(n, s, sp[0]) for n, s, sp in got] == [("tf-ignoring-gpu-capability", "exception", p),
                                                  ("tf-loaded-runtime", "exception", q)]
    assert got[1][2] == (q, q + len(LOADED))
    assert [h.signature.name for h in scan(data, "exception")] == ["tf-loaded-runtime"]


def test_source_and_warnings_reach_the_hits_of_a_joined_paste():
    wrapped = "Loaded runtime CuDNN library: 8.0.5 but sour\nce was compiled with: 8.1.0\n"
    assert [(h.groups, h.source) for h in scan(wrapped, "traceback")] == [(LOADED_GROUPS, "traceback")]
    cut = TF_IGNORING.index("gpu device") + 4
    ignoring = TF_IGNORING[:cut] + "\n" + TF_IGNORING[cut:] + "\n"
    got = [h.groups for h in scan(ignoring, "log", warnings=True) if h.signature.name == "tf-ignoring-gpu-capability"]
    assert got == [{"compute_capability": "3.5", "min_sm": "3.7"}]


# scan: a wrapped match supersedes the cut match of the same signature on the lines it spans
# (covered = [first line, next line)); a hit of the same signature on the very next line is another
# message and stays.
def test_a_joined_match_supersedes_only_the_lines_it_spans():
    nxt = "Loaded runtime CuDNN library: 7.6.5 but source was compiled with: 8.0.0"
    text = "Loaded runtime CuDNN library: 8.0.5 but sour\nce was compiled with: 8.1.0\n" + nxt + "\n"
    got = sorted(((h.position, h.groups) for h in scan(text, "log") if h.signature.name == "tf-loaded-runtime"),
                 key=lambda x: x[0])  # scan appends a joined hit after the line-by-line ones
    assert got == [(0, LOADED_GROUPS), (text.index(nxt), {"loaded": "7.6.5", "compiled": "8.0.0"})]


# _scan_chunked: a line longer than a chunk is cut with an overlap of MAX_LINE bytes, also when
# shorter lines come before it (its chunks then hold no line end at all after the first).
@pytest.mark.parametrize("offset", [SMALL_CHUNK - 1500, SMALL_CHUNK - 30, SMALL_CHUNK + 2500])
@pytest.mark.parametrize("before", ["short line\n", "one\ntwo\nthree\n"])
def test_a_line_longer_than_a_chunk_after_short_lines_is_read(monkeypatch, offset, before):
    monkeypatch.setattr(matcher, "SCAN_CHUNK", SMALL_CHUNK)
    data = before.encode() + b"x" * offset + LOADED.encode() + b" " + b"y" * 6000
    got = [(h.signature.name, h.position, h.groups) for h in scan(data, "log")]
    assert got == [("tf-loaded-runtime", len(before) + offset, LOADED_GROUPS)]


# _scan_chunked: "a 50 MB log needs about one lower-cased chunk of memory beside itself, not a
# lower-cased copy of the whole" (its docstring; benchmarks/bench_explain.py measures the peak).
def test_a_chunked_scan_holds_about_one_chunk_beside_the_input(monkeypatch):
    monkeypatch.setattr(matcher, "SCAN_CHUNK", SMALL_CHUNK)
    monkeypatch.setattr(matcher, "MAX_JOIN_BYTES", SMALL_CHUNK)  # these equal-width lines would look hard-wrapped
    lines = _noise(4000)
    lines[2000] = LOADED
    data = ("\n".join(lines) + "\n").encode()
    assert len(data) > 50 * SMALL_CHUNK
    scan(data[:100], "log")  # the tables are built before measuring
    tracemalloc.start()
    try:
        hits = scan(data, "log")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [h.signature.name for h in hits] == ["tf-loaded-runtime"]
    assert peak < 10 * SMALL_CHUNK < len(data) // 5


# _scan_chunked reads like one scan of the whole: lines compared as the line-by-line scan compares
# them (a line's bytes, ASCII case folded), so two lines that differ in more than ASCII case ("ß"
# and "SS") are two lines; and the cap of HEAD + TAIL hits is per signature, so two signatures of
# 200 hits each keep all of theirs (matcher docstring, step 1).
def test_a_chunked_scan_keeps_lines_that_differ_beyond_ascii_case(monkeypatch):
    lines = _noise(200)
    lines[10], lines[190] = HANDLE_MSG + " on host straße", HANDLE_MSG + " on host STRASSE"
    data = ("\n".join(lines) + "\n").encode()
    whole = [(h.signature.name, h.position, h.line) for h in scan(data, "log", joined=False)]
    monkeypatch.setattr(matcher, "SCAN_CHUNK", SMALL_CHUNK)
    chunked = [(h.signature.name, h.position, h.line) for h in scan(data, "log")]
    assert chunked == whole and len(whole) == 2


def test_the_cap_over_chunks_is_per_signature(monkeypatch):
    monkeypatch.setattr(matcher, "SCAN_CHUNK", SMALL_CHUNK)
    n = 200
    assert n < HEAD + TAIL < 2 * n
    lines = [HANDLE_MSG + f" (case {k})" for k in range(n)]
    lines += [f"Loaded runtime CuDNN library: 8.0.{k} but source was compiled with: 8.1.0" for k in range(n)]
    data = ("\n".join(lines) + "\n").encode()
    names = [h.signature.name for h in scan(data, "log")]
    assert names.count("cudnn-create-handle") == n and names.count("tf-loaded-runtime") == n


# _maybe_wrapped: the fixed column of 40-400 bytes is measured without the line ends, so a Windows
# paste (CRLF) is judged like the same paste with LF ends (the LF table is in
# test_knowledge_mutation_edges; TensorFlow's line cut after "but sour").
def _crlf_paste(width, size=70 * 1024):
    parts = ("Loaded runtime CuDNN library: 8.0.5 but sour", "ce was compiled with: 8.1.0")
    if width < len(parts[0]):
        parts = (parts[0][:width], parts[0][width:] + parts[1])
    lines = [(f"{0:07d} noise " + "z" * width)[:width], *parts]
    i = 1
    while sum(len(x) + 2 for x in lines) < size:
        lines.append((f"{i:07d} noise " + "z" * width)[:width])
        i += 1
    return "\r\n".join(lines).encode()


@pytest.mark.parametrize("width, whole", [(39, False), (40, True), (400, True), (401, False)])
def test_a_crlf_paste_cut_at_a_fixed_column_is_judged_without_its_line_ends(width, whole):
    data = _crlf_paste(width)
    assert 64 * 1024 < len(data) <= matcher.MAX_JOIN_BYTES
    got = [sorted(h.groups) for h in scan(data, "log") if h.signature.name == "tf-loaded-runtime"]
    assert got == ([["compiled", "loaded"]] if whole else [["loaded"]])


# _trigger_groups (built once per process, so with cold tables here, as in a new kernel): a keyword
# is gathered around its trigger literal (TRIGGERS), else around the one gate literal its signatures
# share (Signature.gate), else around itself. When that literal is on more than GATHER_LIMIT (4096)
# lines, each keyword keeps its first HEAD (32) and last TAIL (256) lines; a rarer one keeps every
# line (matcher docstring, step 1). "dnn" gates XLA's "Loaded runtime CuDNN library" line,
# "algorithm" PyTorch's "no valid convolution algorithms available in CuDNN" (knowledge/status.py),
# and TensorFlow's "Could not find device for node: {{node CudnnRNN}}" (knowledge/init.py) is its own.
HEAD, TAIL = matcher.HITS_PER_KEYWORD_HEAD, matcher.HITS_PER_KEYWORD_TAIL
GATED = [
    ("tf-loaded-runtime", "Loaded runtime CuDNN library: 8.0.5 but source was compiled with: 8.1.0 (case {})",
     "cudnn ok {}", True),
    ("tf-loaded-runtime", "Loaded runtime CuDNN library: 8.0.5 but source was compiled with: 8.1.0 (case {})",
     "fine {}", False),
    ("no-valid-conv-algorithms", "RuntimeError: no valid convolution algorithms available in CuDNN (case {})",
     "algorithm ok {}", True),
    ("no-valid-conv-algorithms", "RuntimeError: no valid convolution algorithms available in CuDNN (case {})",
     "fine {}", False),
    ("tf-cudnn-op-without-device", "Could not find device for node: {{{{node CudnnRNN}}}} (case {})",
     "cudnn ok {}", False),
]


@pytest.mark.parametrize("name, line, filler, capped", GATED, ids=[f"{g[0]}-{g[2].split()[0]}" for g in GATED])
def test_each_keyword_is_gathered_around_its_trigger_gate_or_itself(monkeypatch, name, line, filler, capped):
    monkeypatch.setattr(matcher, "_CACHE", {})
    n = HEAD + TAIL + 12
    text = "\n".join([filler.format(i) for i in range(5000)] + [line.format(k) for k in range(n)])
    got = sorted(int(h.line.rsplit("case ", 1)[1].rstrip(")")) for h in scan(text, "log", joined=False)
                 if h.signature.name == name)
    assert got == (list(range(HEAD)) + list(range(n - TAIL, n)) if capped else list(range(n)))


# _scan_data: a trigger literal is gathered line by line while it is on at most GATHER_LIMIT (4096)
# lines (or one line per GATHER_PER_BYTES = 100 bytes of a larger input), counted once per line however
# often the line holds it; past them each keyword keeps its first HEAD and last TAIL lines (matcher
# docstring, step 1; TRIGGERS / GATHER_LIMIT comments). The handle line holds "dnn" twice ("cudnn",
# "CUDNN_STATUS_"); a line of exactly MAX_LINE bytes is still one line, a longer one is read in windows
# and each occurrence on it counts.
def _handle_cases(hits):
    return sorted(int(h.line.rsplit("case ", 1)[1].split(")")[0]) for h in hits if h.signature.name == "cudnn-create-handle")


@pytest.mark.parametrize("gathered", [HEAD - 1, HEAD, 40, 44, 45])
def test_the_first_gather_limit_lines_holding_a_trigger_are_always_gathered(gathered):
    # filler lines hold "dnn" once, then n handle lines: the first GATHER_LIMIT lines with the trigger are
    # gathered, so `gathered` handle lines are; past them each keyword keeps its first HEAD and last TAIL
    n = HEAD + TAIL + 12
    filler = [f"cudnn ok {i}" for i in range(matcher.GATHER_LIMIT - gathered)]
    text = "\n".join(filler + [HANDLE_MSG + f" (case {k})" for k in range(n)])
    assert len(text) // matcher.GATHER_PER_BYTES < matcher.GATHER_LIMIT
    expected = sorted(set(range(gathered)) | set(range(HEAD)) | set(range(n - TAIL, n)))
    assert _handle_cases(scan(text, "log", joined=False)) == expected


@pytest.mark.parametrize("width, capped", [(matcher.MAX_LINE - 1, False), (matcher.MAX_LINE, False),
                                           (matcher.MAX_LINE + 1, True)])
def test_a_line_of_up_to_max_line_bytes_counts_its_trigger_once(width, capped):
    # 30 lines of `width` bytes holding "cudnn" 300 times each, then n handle lines: 30 + n lines hold the
    # trigger (under GATHER_LIMIT), but 9000 occurrences on lines read in windows are more than it
    n = HEAD + TAIL + 12
    filler = [(f"{i:04d} " + "cudnn " * 300 + "z" * width)[:width] for i in range(30)]
    assert all(len(x) == width and x.count("dnn") == 300 for x in filler)
    text = "\n".join(filler + [HANDLE_MSG + f" (case {k})" for k in range(n)])
    assert 30 + n < matcher.GATHER_LIMIT < 30 * 300 and len(text) // matcher.GATHER_PER_BYTES < matcher.GATHER_LIMIT
    got = _handle_cases(scan(text, "log", joined=False))
    assert got == (list(range(HEAD)) + list(range(n - TAIL, n)) if capped else list(range(n)))


def test_every_occurrence_on_a_line_longer_than_max_line_is_gathered(monkeypatch):
    monkeypatch.setattr(matcher, "SCAN_CHUNK", 1 << 20)  # one pass (a chunked scan caps each signature's hits)
    n = HEAD + TAIL + 12
    text = "".join(HANDLE_MSG + f" (case {k}) " + " " * 1000 for k in range(n))  # one line, ~320 KB
    assert "\n" not in text and len(text) // matcher.GATHER_PER_BYTES < matcher.GATHER_LIMIT
    assert _handle_cases(scan(text, "log", joined=False)) == list(range(n))


# _scan_data: a line of up to MAX_LINE bytes repeated is matched once, at its latest place, and the
# lines before it are still read (matcher docstring, step 1: "a log that repeats one line a million
# times costs the same as one that prints it a few times").
@pytest.mark.parametrize("width", [len(HANDLE_MSG), matcher.MAX_LINE - 1, matcher.MAX_LINE])
def test_a_repeated_line_of_up_to_max_line_bytes_is_matched_once_and_earlier_lines_still(width):
    line = HANDLE_MSG + " " + "z" * (width - len(HANDLE_MSG) - 1) if width > len(HANDLE_MSG) else HANDLE_MSG
    text = f"{LOADED}\n{line}\nnoise\n{line}\n"
    got = [(h.signature.name, h.position) for h in scan(text, "log", joined=False)]
    assert got == [("tf-loaded-runtime", 0), ("cudnn-create-handle", text.rindex(line))]


# _scan_data: on a line longer than MAX_LINE each keyword is matched in a window of 300 bytes before
# and 700 after it; a keyword within 400 bytes of the previous window's keyword is matched in that
# window, a farther one in its own; every message on the line is found once.
@pytest.mark.parametrize("gap", [300, 400, 401, 900])
def test_each_message_on_a_long_line_is_found_once_whatever_the_gap(gap):
    buf = [" "] * 7000
    third = "Loaded runtime CuDNN library: 7.6.5 but source was compiled with: 8.0.0"
    algo = "RuntimeError: no valid convolution algorithms available in CuDNN"  # PyTorch 0.x; knowledge/status.py
    algo_at = 1000 + gap - algo.index("no valid")  # its keyword `gap` bytes after the first one
    for at, msg in ((1000, LOADED), (algo_at, algo), (3000, third)):
        buf[at: at + len(msg)] = msg
    text = "".join(buf)
    got = [(h.signature.name, h.position) for h in scan(text, "log", joined=False)]
    assert got == [("tf-loaded-runtime", 1000), ("no-valid-conv-algorithms", algo_at + algo.index("no valid")),
                   ("tf-loaded-runtime", 3000)]


# _scan_data: a window signature reads the 6 lines after its keyword's line, empty ones counted (JAX
# jax_plugins/cuda/__init__.py prints its versions on the lines after "Outdated cuDNN installation found.").
@pytest.mark.parametrize("empty, loaded", [(5, "8500"), (6, None)])
def test_a_window_counts_empty_lines(empty, loaded):
    text = "Outdated cuDNN installation found.\n" + "\n" * empty + "Installed version: 8500"
    hits = [h.groups for h in scan(text, "log", joined=False) if h.signature.name == "jax-outdated-cudnn"]
    assert [g.get("loaded") for g in hits] == [loaded]
