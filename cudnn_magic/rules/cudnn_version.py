"""cuDNN version parsing: :class:`CudnnVersion` from a header, a ``CUDNN_VERSION`` integer, a
tuple or a dotted string. Pure: stdlib + packaging.

Encodings (per cuDNN's ``cudnn_version.h`` and NVIDIA's "Version Checking Against
CUDNN_VERSION"):

* cuDNN up to 8.x: ``CUDNN_VERSION = major*1000 + minor*100 + patch`` (8.9.6 -> 8906).
* cuDNN 9.x and later: ``major*10000 + minor*100 + patch`` (9.10.2 -> 91002).

The rules that compare versions are :mod:`cudnn_magic.rules.compat`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class CudnnVersion:
    """A cuDNN version. ``minor``/``patch`` are None when the source gives only the major
    (TensorFlow's ``build_info.py`` says just ``'9'``)."""

    major: int
    minor: int | None = None
    patch: int | None = None
    build: int | None = None

    def __str__(self) -> str:
        parts = [self.major, self.minor, self.patch, self.build]
        return ".".join(str(p) for p in parts if p is not None)

    @property
    def encoded(self) -> int | None:
        """The integer ``cudnnGetVersion()`` returns for this version (None if partial)."""
        if self.minor is None or self.patch is None:
            return None
        if self.major >= 9:
            return self.major * 10000 + self.minor * 100 + self.patch
        return self.major * 1000 + self.minor * 100 + self.patch

    def short(self) -> str:
        """``major.minor`` (or just ``major``)."""
        return str(self.major) if self.minor is None else f"{self.major}.{self.minor}"

    @classmethod
    def from_int(cls, value: int) -> CudnnVersion:
        """Decode ``CUDNN_VERSION``/``cudnnGetVersion()``.

        ``value >= 10000`` uses the cuDNN 9 scheme (``major*10000 + minor*100 + patch``),
        ``value >= 1000`` the old one (``major*1000 + minor*100 + patch``), and a value below
        100 is a bare major. Raises ValueError for negative or unrepresentable numbers
        (100-999 matches neither encoding).
        """
        if value < 0:
            raise ValueError(f"negative cuDNN version {value}")
        if value >= 10000:
            return cls(value // 10000, value // 100 % 100, value % 100)
        if value >= 1000:
            return cls(value // 1000, value // 100 % 10, value % 100)
        if value < 100:
            return cls(value)
        raise ValueError(f"{value} is not a cuDNN version encoding")


_TUPLE = re.compile(r"^\(?\s*(\d+)\s*,\s*(\d+)\s*(?:,\s*(\d+)\s*)?\)?$")
_DOTTED = re.compile(r"^[vV]?(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:\.(\d+))?$")


def parse_cudnn_version(value: object) -> CudnnVersion:
    """Parse any encoding seen in the wild.

    Accepts ints (5005, 8906, 90100, 91002), digit strings, dotted strings ("8.9.4",
    "8.1.0.77", "9"), tuples and their text ("(8, 9, 2)"), and ``CudnnVersion``.

    Raises:
        ValueError: the value is not a cuDNN version in any known encoding.
    """
    if isinstance(value, CudnnVersion):
        return value
    # any value that is no cuDNN version is a ValueError (Raises above): callers catch that one
    if isinstance(value, bool):
        raise ValueError(f"not a cuDNN version: {value!r}")  # noqa: TRY004
    if isinstance(value, int):
        return CudnnVersion.from_int(value)
    if isinstance(value, (tuple, list)):
        nums = [int(x) for x in value]
        if not 1 <= len(nums) <= 4:
            raise ValueError(f"not a cuDNN version: {value!r}")
        return CudnnVersion(*nums)
    if not isinstance(value, str):
        raise ValueError(f"not a cuDNN version: {value!r}")  # noqa: TRY004
    text = value.strip()
    m = _TUPLE.match(text)
    if m:
        a, b, c = m.groups()
        return CudnnVersion(int(a), int(b), int(c) if c is not None else None)
    if text.isdigit():
        n = int(text)
        # "9" / "8" is a bare major; 4+ digit numbers are encodings.
        return CudnnVersion.from_int(n)
    m = _DOTTED.match(text)
    if m:
        a, b, c, d = (int(x) if x is not None else None for x in m.groups())
        return CudnnVersion(a, b, c, d)  # type: ignore[arg-type]
    raise ValueError(f"not a cuDNN version: {value!r}")


def try_parse(value: object) -> CudnnVersion | None:
    """Like :func:`parse_cudnn_version` but returns None instead of raising."""
    try:
        return parse_cudnn_version(value)
    except (ValueError, TypeError):
        return None


