"""cuDNN status numbers and names (docs/facts.md "Status codes", read back from the real 9.28 and 8.9.6 libraries)."""

from __future__ import annotations

import pytest

from cudnn_magic.knowledge.status_codes import (
    CUDNN8_STATUS,
    CUDNN9_STATUS,
    Status,
    decode_status,
    diagnosis_for_status,
    status_by_name,
)

CATALOGUE = {
    "cudnn-version-mismatch", "cudnn-library-not-found", "cudnn-sublibrary-load-failed", "cudnn-init-failed",
    "gpu-out-of-memory", "cuda-driver-too-old", "cudnn-stream-set-failed", "cudnn-execution-failed",
    "cudnn-unsupported-config", "cudnn-bad-param", "tensors-on-different-devices", "cudnn-internal-error",
    "gpu-arch-unsupported",
}


@pytest.mark.parametrize("code,major,name,diag", [
    (3, 8, "CUDNN_STATUS_BAD_PARAM", "cudnn-bad-param"),
    (3000, 9, "CUDNN_STATUS_NOT_SUPPORTED", "cudnn-unsupported-config"),
    (3, None, "CUDNN_STATUS_BAD_PARAM", "cudnn-bad-param"),
    (3000, None, "CUDNN_STATUS_NOT_SUPPORTED", "cudnn-unsupported-config"),
    (1, 8, "CUDNN_STATUS_NOT_INITIALIZED", "cudnn-init-failed"),
    (1001, 9, "CUDNN_STATUS_NOT_INITIALIZED", "cudnn-init-failed"),
    (2, 7, "CUDNN_STATUS_ALLOC_FAILED", "gpu-out-of-memory"),
    (4, 8, "CUDNN_STATUS_INTERNAL_ERROR", "cudnn-internal-error"),
    (4004, 9, "CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED", "gpu-out-of-memory"),
    (6, 8, "CUDNN_STATUS_ARCH_MISMATCH", "gpu-arch-unsupported"),
    (3007, 9, "CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH", "gpu-arch-unsupported"),
    (7, 8, "CUDNN_STATUS_MAPPING_ERROR", "tensors-on-different-devices"),
    (8, 8, "CUDNN_STATUS_EXECUTION_FAILED", "cudnn-execution-failed"),
    (5003, 9, "CUDNN_STATUS_EXECUTION_FAILED_CUDART", "cudnn-execution-failed"),
    (9, 8, "CUDNN_STATUS_NOT_SUPPORTED", "cudnn-unsupported-config"),
    (14, 8, "CUDNN_STATUS_VERSION_MISMATCH", "cudnn-sublibrary-load-failed"),
    (1002, 9, "CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH", "cudnn-sublibrary-load-failed"),
    (1008, 9, "CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED", "cudnn-sublibrary-load-failed"),
    (3005, 9, "CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER", "cuda-driver-too-old"),
    (2002, 9, "CUDNN_STATUS_BAD_PARAM_NULL_POINTER", "cudnn-bad-param"),
])
def test_decode_by_major(code, major, name, diag):
    st = decode_status(code, major)
    assert st.name == name and st.known and st.diagnosis == diag


def test_a_number_means_nothing_under_the_other_major():
    assert not decode_status(3, 9).known
    assert decode_status(3, 9).diagnosis is None
    assert not decode_status(3000, 8).known


def test_unknown_subcode_keeps_its_family():
    st = decode_status(3099, 9)
    assert not st.known and st.diagnosis == "cudnn-unsupported-config"
    assert decode_status(4077).diagnosis == "cudnn-internal-error"
    assert decode_status(5099).diagnosis == "cudnn-execution-failed"


def test_success_is_not_a_diagnosis_by_number():
    assert decode_status(0).diagnosis is None


def test_tables_match_facts():
    assert len(CUDNN8_STATUS) == 15 and max(CUDNN8_STATUS) == 14
    assert all(c == 0 or 1000 <= c < 6000 for c in CUDNN9_STATUS)
    for name in set(CUDNN8_STATUS.values()) | set(CUDNN9_STATUS.values()):
        if name != "CUDNN_STATUS_SUCCESS":
            assert diagnosis_for_status(name) in CATALOGUE, name


def test_by_name():
    assert status_by_name("CUDNN_STATUS_BAD_PARAM").code == 3
    assert status_by_name("cudnn_status_sublibrary_loading_failed").code == 1008
    assert status_by_name("NOT_A_STATUS") is None
    assert status_by_name("CUDNN_STATUS_BAD_PARAM_SOMETHING_NEW").diagnosis == "cudnn-bad-param"


# --------------------------------------------------------------------------------------------------
# Status decoding at its edges.
#
# Status decoding at its edges: the 1000 boundary between cuDNN 8 and 9 numbering, each cuDNN 9
# family, names looked up with and without their numbers.
# Sources: docs/facts.md "Status codes"; cuDNN 8 ``cudnn_ops_infer.h`` / cuDNN 9 ``cudnn_graph.h``
# ``cudnnStatus_t`` as read back with ``cudnnGetErrorString``.
# --------------------------------------------------------------------------------------------------


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
