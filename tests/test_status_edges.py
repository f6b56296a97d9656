"""Status decoding at its edges: the 1000 boundary between cuDNN 8 and 9 numbering, each cuDNN 9
family, names looked up with and without their numbers (issue 20: mutation testing).

Sources: docs/facts.md "Status codes"; cuDNN 8 ``cudnn_ops_infer.h`` / cuDNN 9 ``cudnn_graph.h``
``cudnnStatus_t`` as read back with ``cudnnGetErrorString`` (docs/facts.md "Status codes").
"""

from __future__ import annotations

import pytest

from cudnn_magic.knowledge.status_codes import Status, decode_status, diagnosis_for_status, status_by_name

DECODE = [
    # code, major given, name, major used, diagnosis, known
    (0, None, "CUDNN_STATUS_SUCCESS", 8, None, True),
    (0, 9, "CUDNN_STATUS_SUCCESS", 9, None, True),
    (14, None, "CUDNN_STATUS_VERSION_MISMATCH", 8, "cudnn-sublibrary-load-failed", True),
    (15, None, "CUDNN_STATUS_UNKNOWN(15)", 8, None, False),
    (999, None, "CUDNN_STATUS_UNKNOWN(999)", 8, None, False),  # one below the cuDNN 9 numbering
    (1000, None, "CUDNN_STATUS_NOT_INITIALIZED family (unknown code 1000)", 9, None, False),  # at it: 1xxx has no diagnosis
    (1001, None, "CUDNN_STATUS_NOT_INITIALIZED", 9, "cudnn-init-failed", True),
    (1999, None, "CUDNN_STATUS_NOT_INITIALIZED family (unknown code 1999)", 9, None, False),
    (2000, None, "CUDNN_STATUS_BAD_PARAM", 9, "cudnn-bad-param", True),
    (2999, 9, "CUDNN_STATUS_BAD_PARAM family (unknown code 2999)", 9, "cudnn-bad-param", False),
    (3999, 9, "CUDNN_STATUS_NOT_SUPPORTED family (unknown code 3999)", 9, "cudnn-unsupported-config", False),
    (4999, 9, "CUDNN_STATUS_INTERNAL_ERROR family (unknown code 4999)", 9, "cudnn-internal-error", False),
    (5999, 9, "CUDNN_STATUS_EXECUTION_FAILED family (unknown code 5999)", 9, "cudnn-execution-failed", False),
    (6000, None, "CUDNN_STATUS_UNKNOWN(6000)", 9, None, False),  # one above the last family
    (3, 9, "CUDNN_STATUS_UNKNOWN(3)", 9, None, False),  # cuDNN 9 answers UNKNOWN for 1..14
    (3000, 8, "CUDNN_STATUS_UNKNOWN(3000)", 8, None, False),  # and cuDNN 8 for the thousands
    (3, 7, "CUDNN_STATUS_BAD_PARAM", 8, "cudnn-bad-param", True),  # 7 shares 8's numbering
    (3000, 10, "CUDNN_STATUS_NOT_SUPPORTED", 9, "cudnn-unsupported-config", True),  # 10 keeps 9's
    (2, 8, "CUDNN_STATUS_ALLOC_FAILED", 8, "gpu-out-of-memory", True),
]


@pytest.mark.parametrize("code, major, name, used, diag, known", DECODE, ids=[f"{c}-{m}" for c, m, *_ in DECODE])
def test_decode_at_each_boundary(code, major, name, used, diag, known):
    assert decode_status(code, major) == Status(name, code, used, diag, known)


NAMES = [
    # name as written, canonical, code, major, diagnosis, known
    ("CUDNN_STATUS_BAD_PARAM", "CUDNN_STATUS_BAD_PARAM", 3, 8, "cudnn-bad-param", True),  # in both: cuDNN 8's
    (" cudnn_status_bad_param ", "CUDNN_STATUS_BAD_PARAM", 3, 8, "cudnn-bad-param", True),
    ("CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED", "CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED", 1008, 9,
     "cudnn-sublibrary-load-failed", True),  # only in cuDNN 9
    ("CUDNN_STATUS_LICENSE_ERROR", "CUDNN_STATUS_LICENSE_ERROR", 10, 8, "cudnn-init-failed", True),  # only in 8
    ("CUDNN_STATUS_BAD_PARAM_SOMETHING_NEW", "CUDNN_STATUS_BAD_PARAM_SOMETHING_NEW", None, None, "cudnn-bad-param", True),
    ("CUDNN_STATUS_MADE_UP", "CUDNN_STATUS_MADE_UP", None, None, None, False),
]


@pytest.mark.parametrize("raw, name, code, major, diag, known", NAMES, ids=[n[0].strip() for n in NAMES])
def test_status_by_name(raw, name, code, major, diag, known):
    assert status_by_name(raw) == Status(name, code, major, diag, known)


@pytest.mark.parametrize("raw", ["BAD_PARAM", "CUDA_ERROR_OUT_OF_MEMORY", "", "CUDNN_STATUS"])
def test_not_a_status_name(raw):
    assert status_by_name(raw) is None


@pytest.mark.parametrize("name, diag", [
    ("CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH", "gpu-arch-unsupported"),  # specific before its family
    ("CUDNN_STATUS_NOT_SUPPORTED_SOMETHING", "cudnn-unsupported-config"),
    ("CUDNN_STATUS_INTERNAL_ERROR_X", "cudnn-internal-error"),
    ("CUDNN_STATUS_EXECUTION_FAILED_CUDART", "cudnn-execution-failed"),
    ("  cudnn_status_mapping_error\n", "tensors-on-different-devices"),
    ("cudnn_status_bad_param_x", "cudnn-bad-param"),
    ("CUDNN_STATUS_NOT_INITIALIZED_X", None), ("SOMETHING_ELSE", None),
])
def test_diagnosis_specific_first_then_family(name, diag):
    assert diagnosis_for_status(name) == diag
