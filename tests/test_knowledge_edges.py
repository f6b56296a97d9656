"""The knowledge scan at its edges: status names, CamelCase names and bare numbers (the 1000
boundary between cuDNN 8 and 9 numbering), cudnn_frontend error codes, SUCCESS that is and is not
an error, evidence quoting (controls, bounds) and hard-wrapped pastes (issue 20: mutation testing).

Sources: FACTS.md "Status codes" (cuDNN 8 numbers 0..14, cuDNN 9 the thousands); cuDNN's
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
