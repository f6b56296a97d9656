"""Build tables: TensorFlow's tested build configurations (its CUDA and cuDNN per release), and
the CUDA version encoded as an integer (``12040`` -> ``"12.4"``). Pure data."""

from __future__ import annotations

from packaging.version import InvalidVersion, Version

# TensorFlow's tested build configurations (Linux), tensorflow/docs site/en/install/source.md.
# (first TF, last TF inclusive) -> (cuDNN, CUDA)
TF_TESTED_BUILDS: tuple[tuple[str, str, str, str], ...] = (
    ("2.18.0", "2.21.99", "9.3", "12.5"),
    ("2.16.1", "2.17.99", "8.9", "12.3"),
    ("2.15.0", "2.15.99", "8.9", "12.2"),
    ("2.14.0", "2.14.99", "8.7", "11.8"),
    ("2.12.0", "2.13.99", "8.6", "11.8"),
    ("2.5.0", "2.11.99", "8.1", "11.2"),
    ("2.4.0", "2.4.99", "8.0", "11.0"),
    ("2.1.0", "2.3.99", "7.6", "10.1"),
    ("1.13.1", "2.0.99", "7.4", "10.0"),
    ("1.5.0", "1.12.99", "7", "9"),
)


def tf_tested_build(tf_version: str) -> tuple[str, str] | None:
    """(cuDNN, CUDA) of TensorFlow's tested build configuration for ``tf_version``, or None.

    Source: tensorflow/docs ``site/en/install/source.md`` (Linux GPU table).
    """
    try:
        v = Version(tf_version)
    except InvalidVersion:
        return None
    rel = Version(".".join(str(x) for x in v.release))
    for first, last, cudnn, cuda in TF_TESTED_BUILDS:
        if Version(first) <= rel <= Version(last):
            return cudnn, cuda
    return None


def cuda_from_int(value: int) -> str:
    """Decode CUDA's ``major*1000 + minor*10`` encoding (12090 -> "12.9", 11080 -> "11.8")."""
    return f"{value // 1000}.{value % 1000 // 10}"
