"""The cuDNN status codes: names, numbers and which catalogue diagnosis each one points to. Pure.

cuDNN 8 numbers its ``cudnnStatus_t`` 0..14 (cuDNN 8 ``cudnn_ops_infer.h``); cuDNN 9 renumbered
them by thousands (``cudnn_graph.h``): 1xxx uncategorized, 2xxx the BAD_PARAM family, 3xxx the
NOT_SUPPORTED family, 4xxx the INTERNAL_ERROR family, 5xxx the EXECUTION_FAILED family. The
numbers below were read back from the real libraries with ``cudnnGetErrorString`` (shared
docs/facts.md "Status codes"): cuDNN 9 answers ``CUDNN_UNKNOWN_STATUS`` for 1..14
and cuDNN 8 for every 1000..5005 code, so a bare number is decoded with the cuDNN major (3 is
BAD_PARAM in cuDNN 8, 3000 is NOT_SUPPORTED in cuDNN 9). When the major is unknown the ranges
decide, since they do not overlap.

Its own module, apart from the wordings of :mod:`.status` (which compile their patterns on
import): a probe that decodes a child's status needs the table alone.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CUDNN8_STATUS", "CUDNN9_FAMILY", "CUDNN9_STATUS", "Status", "decode_status", "diagnosis_for_status",
           "status_by_name"]


#: cuDNN 8 (and 7) status numbers, per cuDNN 8 ``cudnnStatus_t`` / ``cudnnGetErrorString``.
CUDNN8_STATUS: dict[int, str] = {
    0: "CUDNN_STATUS_SUCCESS",
    1: "CUDNN_STATUS_NOT_INITIALIZED",
    2: "CUDNN_STATUS_ALLOC_FAILED",
    3: "CUDNN_STATUS_BAD_PARAM",
    4: "CUDNN_STATUS_INTERNAL_ERROR",
    5: "CUDNN_STATUS_INVALID_VALUE",
    6: "CUDNN_STATUS_ARCH_MISMATCH",
    7: "CUDNN_STATUS_MAPPING_ERROR",
    8: "CUDNN_STATUS_EXECUTION_FAILED",
    9: "CUDNN_STATUS_NOT_SUPPORTED",
    10: "CUDNN_STATUS_LICENSE_ERROR",
    11: "CUDNN_STATUS_RUNTIME_PREREQUISITE_MISSING",
    12: "CUDNN_STATUS_RUNTIME_IN_PROGRESS",
    13: "CUDNN_STATUS_RUNTIME_FP_OVERFLOW",
    14: "CUDNN_STATUS_VERSION_MISMATCH",
}

#: cuDNN 9 status numbers, per cuDNN 9 ``cudnn_graph.h`` (read back with cudnnGetErrorString).
CUDNN9_STATUS: dict[int, str] = {
    0: "CUDNN_STATUS_SUCCESS",
    1001: "CUDNN_STATUS_NOT_INITIALIZED",
    1002: "CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH",
    1003: "CUDNN_STATUS_SERIALIZATION_VERSION_MISMATCH",
    1004: "CUDNN_STATUS_DEPRECATED",
    1005: "CUDNN_STATUS_LICENSE_ERROR",
    1006: "CUDNN_STATUS_RUNTIME_IN_PROGRESS",
    1007: "CUDNN_STATUS_RUNTIME_FP_OVERFLOW",
    1008: "CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED",
    2000: "CUDNN_STATUS_BAD_PARAM",
    2001: "CUDNN_STATUS_INVALID_VALUE",
    2002: "CUDNN_STATUS_BAD_PARAM_NULL_POINTER",
    2003: "CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER",
    2004: "CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED",
    2005: "CUDNN_STATUS_BAD_PARAM_OUT_OF_BOUND",
    2006: "CUDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT",
    2007: "CUDNN_STATUS_BAD_PARAM_STREAM_MISMATCH",
    2008: "CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH",
    2009: "CUDNN_STATUS_BAD_PARAM_DUPLICATED_ENTRIES",
    2010: "CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE",
    2011: "CUDNN_STATUS_BAD_PARAM_CUDA_GRAPH_MISMATCH",
    2012: "CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE",
    3000: "CUDNN_STATUS_NOT_SUPPORTED",
    3001: "CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN",
    3002: "CUDNN_STATUS_NOT_SUPPORTED_SHAPE",
    3003: "CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE",
    3004: "CUDNN_STATUS_NOT_SUPPORTED_LAYOUT",
    3005: "CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER",
    3006: "CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDART",
    3007: "CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH",
    3008: "CUDNN_STATUS_NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING",
    3009: "CUDNN_STATUS_NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE",
    3010: "CUDNN_STATUS_NOT_SUPPORTED_SHARED_MEMORY_INSUFFICIENT",
    3011: "CUDNN_STATUS_NOT_SUPPORTED_PADDING",
    3012: "CUDNN_STATUS_NOT_SUPPORTED_BAD_LAUNCH_PARAM",
    3013: "CUDNN_STATUS_NOT_SUPPORTED_CUDA_GRAPH_NATIVE_API",
    3014: "CUDNN_STATUS_NOT_SUPPORTED_INVALID_DYNAMIC_SHAPE",
    4000: "CUDNN_STATUS_INTERNAL_ERROR",
    4001: "CUDNN_STATUS_INTERNAL_ERROR_COMPILATION_FAILED",
    4002: "CUDNN_STATUS_INTERNAL_ERROR_UNEXPECTED_VALUE",
    4003: "CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED",
    4004: "CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED",
    4005: "CUDNN_STATUS_INTERNAL_ERROR_BAD_LAUNCH_PARAM",
    4006: "CUDNN_STATUS_INTERNAL_ERROR_TEXTURE_CREATION_FAILED",
    5000: "CUDNN_STATUS_EXECUTION_FAILED",
    5001: "CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER",
    5002: "CUDNN_STATUS_EXECUTION_FAILED_CUBLAS",
    5003: "CUDNN_STATUS_EXECUTION_FAILED_CUDART",
    5004: "CUDNN_STATUS_EXECUTION_FAILED_CURAND",
}

#: cuDNN 9 families by thousands digit (cudnn_graph.h comments); an unknown sub-code keeps
#: its family's meaning.
CUDNN9_FAMILY: dict[int, str] = {
    1: "CUDNN_STATUS_NOT_INITIALIZED",  # 1xxx: uncategorized; the family base is 1001's
    2: "CUDNN_STATUS_BAD_PARAM",
    3: "CUDNN_STATUS_NOT_SUPPORTED",
    4: "CUDNN_STATUS_INTERNAL_ERROR",
    5: "CUDNN_STATUS_EXECUTION_FAILED",
}

# Which catalogue diagnosis (docs/ids.md) a status name points to. Specific names
# first; :func:`diagnosis_for_status` falls back on the family prefix.
_SPECIFIC: dict[str, str] = {
    "CUDNN_STATUS_NOT_INITIALIZED": "cudnn-init-failed",
    "CUDNN_STATUS_LICENSE_ERROR": "cudnn-init-failed",
    "CUDNN_STATUS_ALLOC_FAILED": "gpu-out-of-memory",
    "CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED": "gpu-out-of-memory",
    "CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED": "gpu-out-of-memory",
    "CUDNN_STATUS_INVALID_VALUE": "cudnn-bad-param",
    "CUDNN_STATUS_ARCH_MISMATCH": "gpu-arch-unsupported",
    "CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH": "gpu-arch-unsupported",
    "CUDNN_STATUS_MAPPING_ERROR": "tensors-on-different-devices",
    "CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER": "cuda-driver-too-old",
    "CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDART": "cudnn-version-mismatch",
    "CUDNN_STATUS_SERIALIZATION_VERSION_MISMATCH": "cudnn-version-mismatch",
    # cuDNN 8 VERSION_MISMATCH: "a version mismatch between cuDNN sub-libraries" (cuDNN 8 API
    # reference, cudnnOpsInferVersionCheck and friends).
    "CUDNN_STATUS_VERSION_MISMATCH": "cudnn-sublibrary-load-failed",
    "CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH": "cudnn-sublibrary-load-failed",
    "CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED": "cudnn-sublibrary-load-failed",
    "CUDNN_STATUS_NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE": "cudnn-sublibrary-load-failed",
    # cuDNN 8 RUNTIME_PREREQUISITE_MISSING: "a runtime library required by RNN calls
    # (libcuda.so or nvcuda.dll) cannot be found" (cuDNN 8 API reference).
    "CUDNN_STATUS_RUNTIME_PREREQUISITE_MISSING": "cudnn-sublibrary-load-failed",
    "CUDNN_STATUS_NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING": "cudnn-sublibrary-load-failed",
    "CUDNN_STATUS_RUNTIME_IN_PROGRESS": "cudnn-execution-failed",
    "CUDNN_STATUS_RUNTIME_FP_OVERFLOW": "cudnn-execution-failed",
    "CUDNN_STATUS_DEPRECATED": "cudnn-unsupported-config",
    # Old PyTorch (0.4) reported failures as "CuDNN error: CUDNN_STATUS_SUCCESS": the status
    # was not set, usually because initialization failed (a build/CUDA mismatch).
    "CUDNN_STATUS_SUCCESS": "cudnn-init-failed",
}

_FAMILY_PREFIX: tuple[tuple[str, str], ...] = (
    ("CUDNN_STATUS_BAD_PARAM", "cudnn-bad-param"),
    ("CUDNN_STATUS_NOT_SUPPORTED", "cudnn-unsupported-config"),
    ("CUDNN_STATUS_INTERNAL_ERROR", "cudnn-internal-error"),
    ("CUDNN_STATUS_EXECUTION_FAILED", "cudnn-execution-failed"),
)

_BY_NAME: dict[str, tuple[int | None, int | None]] = {}
for _code, _name in CUDNN8_STATUS.items():
    _BY_NAME.setdefault(_name, (None, None))
    _BY_NAME[_name] = (_code, _BY_NAME[_name][1])
for _code, _name in CUDNN9_STATUS.items():
    _BY_NAME.setdefault(_name, (None, None))
    _BY_NAME[_name] = (_BY_NAME[_name][0], _code)


@dataclass(frozen=True)
class Status:
    """A decoded cuDNN status.

    Attributes:
        name: ``CUDNN_STATUS_*`` name, or ``CUDNN_STATUS_UNKNOWN(<code>)``.
        code: the number, when known.
        major: the cuDNN major whose numbering was used (8 covers 7 and 8), or None.
        diagnosis: the catalogue id this status points to, or None (SUCCESS/unknown).
        known: False when the number is not a status of that cuDNN major.
    """

    name: str
    code: int | None
    major: int | None
    diagnosis: str | None
    known: bool = True


def diagnosis_for_status(name: str) -> str | None:
    """Catalogue id for a status name (specific names first, then the cuDNN 9 family prefix).

    Returns None for names that are not cuDNN statuses.
    """
    name = name.strip().upper()
    if name in _SPECIFIC:
        return _SPECIFIC[name]
    for prefix, diag in _FAMILY_PREFIX:
        if name.startswith(prefix):
            return diag
    return None


def status_by_name(name: str) -> Status | None:
    """Look up a status name (``CUDNN_STATUS_BAD_PARAM``); the code is the cuDNN 9 one when the
    name exists in both numberings' newer scheme only, else the cuDNN 8 one."""
    key = name.strip().upper()
    if not key.startswith("CUDNN_STATUS_"):
        return None
    c8, c9 = _BY_NAME.get(key, (None, None))
    diag = diagnosis_for_status(key)
    if c8 is None and c9 is None:
        return Status(key, None, None, diag, known=diag is not None)
    if c9 is not None and c8 is None:
        return Status(key, c9, 9, diag)
    return Status(key, c8, 8, diag)


def decode_status(code: int, major: int | None = None) -> Status:
    """Decode a bare status number.

    Args:
        code: the number printed (``3``, ``3000``, ``7`` from ``(7 vs. 0)``).
        major: the cuDNN major in use when known (from the log or the mapped library). cuDNN 7
            and 8 share one numbering; 9 and later use the thousands scheme.

    Returns:
        A :class:`Status`; ``known`` is False when the number is not a status of that major
        (e.g. 3 under cuDNN 9). A 1xxx-5xxx code outside the table keeps its family's meaning.
    """
    if major is None:
        major = 9 if code >= 1000 else 8
    table = CUDNN9_STATUS if major >= 9 else CUDNN8_STATUS
    name = table.get(code)
    if name is not None:
        return Status(name, code, 9 if major >= 9 else 8, diagnosis_for_status(name) if code else None)
    if major >= 9 and 1000 <= code < 6000:
        fam = CUDNN9_FAMILY[code // 1000]
        diag = diagnosis_for_status(fam) if code // 1000 != 1 else None
        return Status(f"{fam} family (unknown code {code})", code, 9, diag, known=False)
    return Status(f"CUDNN_STATUS_UNKNOWN({code})", code, major, None, known=False)
