"""cuDNN status numbers and names (docs/facts.md "Status codes", read back from the real 9.28 and 8.9.6 libraries)."""

from __future__ import annotations

import pytest

from cudnn_magic.knowledge.status_codes import CUDNN8_STATUS, CUDNN9_STATUS, decode_status, diagnosis_for_status, status_by_name

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
