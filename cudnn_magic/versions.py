"""cuDNN version parsing and each framework's own compatibility rule. Pure: stdlib + packaging.

Encodings (per cuDNN's ``cudnn_version.h`` and NVIDIA's "Version Checking Against
CUDNN_VERSION"):

* cuDNN up to 8.x: ``CUDNN_VERSION = major*1000 + minor*100 + patch`` (8.9.6 -> 8906).
* cuDNN 9.x and later: ``major*10000 + minor*100 + patch`` (9.10.2 -> 91002).

Rules (FACTS.md "Which runtime cuDNN each framework accepts"): see :data:`RULES`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from packaging.version import InvalidVersion, Version

Checker = Literal["tensorflow", "tensorflow-legacy", "tensorflow-compat-version", "xla", "pytorch", "jax", "cupy", "onnxruntime", "nvidia"]


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
    if isinstance(value, bool):
        raise ValueError(f"not a cuDNN version: {value!r}")
    if isinstance(value, int):
        return CudnnVersion.from_int(value)
    if isinstance(value, (tuple, list)):
        nums = [int(x) for x in value]
        if not 1 <= len(nums) <= 4:
            raise ValueError(f"not a cuDNN version: {value!r}")
        return CudnnVersion(*nums)  # type: ignore[arg-type]
    if not isinstance(value, str):
        raise ValueError(f"not a cuDNN version: {value!r}")
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


@dataclass(frozen=True)
class Judgement:
    """A verdict by one checker's rule: ``ok`` True/False, or None when it cannot decide."""

    ok: bool | None
    rule: str
    detail: str

    @property
    def verdict(self) -> str:
        return {True: "ok", False: "mismatch", None: "unknown"}[self.ok]


RULES: dict[str, str] = {
    "tensorflow": (
        "same major, runtime minor >= compiled minor "
        "(XLA cuda_dnn.cc IsSourceCompatibleWithCudnnLibrary, TensorFlow 2.2 and later)"
    ),
    "xla": (
        "same major, runtime minor >= compiled minor "
        "(XLA cuda_dnn.cc IsSourceCompatibleWithCudnnLibrary)"
    ),
    "tensorflow-legacy": (
        "same major; same minor, or compiled major >= 7 and runtime minor >= compiled minor "
        "(TensorFlow 1.x-2.1 stream_executor/cuda/cudnn_version.cc)"
    ),
    "tensorflow-compat-version": (
        "same major and minor (\"compatibility version\" major*1000+minor*100 must be equal; TensorFlow before "
        "1.13, stream_executor/cuda/cuda_dnn.cc)"
    ),
    "pytorch": (
        "same major; below cuDNN 7 same minor, else runtime minor >= compiled minor "
        "(torch/backends/cudnn/__init__.py _init)"
    ),
    "jax": (
        "two checks. When the CUDA plugin initializes, JAX's Python side (jax_plugins/xla_cuda12/__init__.py, or "
        "xla_cuda13; jax_plugins/cuda in JAX's source) _check_cuda_versions passes when cudnn_build_version // 100 "
        "<= the runtime number (908 <= 90100 for a 9.8.0 build on 9.1.0, so any cuDNN 9 passes) and refuses 9.10.0 "
        "unless built with it; then, when the GPU backend creates its cuDNN handle, XLA's C++ side "
        "(xla/stream_executor/cuda/cuda_dnn.cc CudnnSupport::Init, IsSourceCompatibleWithCudnnLibrary) requires the "
        "same major and runtime minor >= build minor. The verdict follows the strict C++ rule"
    ),
    "cupy": (
        "CuPy 13 and older does not check (it prints both versions); judged by NVIDIA's rule: "
        "same major, runtime minor >= compiled minor; 9.10.0 broke backward compatibility"
    ),
    "onnxruntime": "same cuDNN major as the ONNX Runtime GPU release was built for (ONNX Runtime CUDA EP requirements)",
    "nvidia": (
        "same major, runtime minor >= compiled minor; 9.10.0 broke backward compatibility "
        "(NVIDIA cuDNN API compatibility page)"
    ),
}


def checker_for_tensorflow(tf_version: str | None) -> Checker:
    """TensorFlow before 1.13 compared "compatibility versions" (major.minor equal); 1.13 to 2.1
    used cudnn_version.cc's rule; 2.2 and later XLA's."""
    if tf_version:
        try:
            rel = Version(tf_version).release[:2]
            if rel < (1, 13):
                return "tensorflow-compat-version"
            if rel < (2, 2):
                return "tensorflow-legacy"
        except InvalidVersion:
            pass
    return "tensorflow"


def judge(checker: Checker, runtime: object, compiled: object) -> Judgement:
    """Judge a runtime cuDNN against a compiled-against one by ``checker``'s own rule.

    Args:
        checker: key of :data:`RULES`.
        runtime: the loaded (or to-be-loaded) cuDNN, any encoding.
        compiled: the compiled-against cuDNN, any encoding ("9" means the major only).

    Returns:
        A :class:`Judgement`; ``ok`` is None when either version is missing, or when only the
        majors are known and they agree (the minor could still be too old).
    """
    rule = RULES[checker]
    rt = try_parse(runtime) if runtime is not None else None
    src = try_parse(compiled) if compiled is not None else None
    if rt is None or src is None:
        missing = "runtime" if rt is None else "compiled-against"
        return Judgement(None, rule, f"the {missing} cuDNN version is not known")
    if rt.major != src.major:
        if checker == "jax":
            return Judgement(False, rule, _jax_two_checks(rt, src).replace(
                f"is older than the {src.short()}", f"is a different major version than the {src.short()}"))
        return Judgement(
            False, rule, f"cuDNN {rt} is a different major version than the {src.short()} it was built with"
        )
    if checker == "onnxruntime":
        return Judgement(True, rule, f"cuDNN {rt} has the major version {src.major} it needs")
    if checker == "jax" and (rt.major, rt.minor, rt.patch) == (9, 10, 0) and (src.major, src.minor, src.patch) != (9, 10, 0):
        return Judgement(False, rule, "cuDNN 9.10.0 broke backward compatibility; JAX's Python-side check refuses it "
                                      "when the CUDA plugin initializes (use 9.10.1 or later)")
    if checker in ("nvidia", "cupy") and (rt.major, rt.minor, rt.patch) == (9, 10, 0) and src.minor is not None \
            and src.minor < 10:  # CuPy is judged by NVIDIA's rule, and the solver excludes 9.10.0 for it too
        return Judgement(False, rule, "cuDNN 9.10.0 broke backward compatibility with older builds (fixed in 9.10.1)")
    if src.minor is None or rt.minor is None:
        return Judgement(None, rule, f"majors agree ({rt.major}); the compiled-against minor is not known")
    exact_minor = (
        checker == "tensorflow-compat-version"
        or (checker == "tensorflow-legacy" and src.major < 7)
        or (checker == "pytorch" and src.major < 7)
    )
    if exact_minor:
        if rt.minor == src.minor:
            return Judgement(True, rule, f"cuDNN {rt} matches the {src.short()} it was built with")
        return Judgement(
            False, rule, f"cuDNN {rt} is not the {src.short()} it was built with (this era needs the same minor)"
        )
    if rt.minor >= src.minor:
        return Judgement(True, rule, f"cuDNN {rt} is {src.short()} or newer within major {src.major}")
    if checker == "jax":
        return Judgement(False, rule, _jax_two_checks(rt, src))
    return Judgement(False, rule, f"cuDNN {rt} is older than the {src.short()} it was built with")


def _jax_two_checks(rt: CudnnVersion, src: CudnnVersion) -> str:
    """Which of JAX's two checks refuses ``rt`` for a build with ``src``, and when."""
    build = src.encoded if src.encoded is not None else None
    runtime = rt.encoded
    py = ""
    if build is not None and runtime is not None:
        passed = build // 100 <= runtime
        py = (f"; JAX's Python-side check {'passes' if passed else 'refuses'} it when the CUDA plugin initializes "
              f"(cudnn_build_version // 100 = {build // 100} {'<=' if passed else '>'} {runtime})")
    return (f"cuDNN {rt} is older than the {src.short()} it was built with{py}; XLA's C++ check refuses it when the "
            "GPU backend creates its cuDNN handle (\"Loaded runtime CuDNN library: "
            f"{rt} but source was compiled with: {src}\")")


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


# Minimum Linux driver for each CUDA major (NVIDIA CUDA minor-version compatibility page).
CUDA_DRIVER_FLOOR_LINUX: dict[int, str] = {13: "580", 12: "525.60.13", 11: "450.80.02"}
CUDA_DRIVER_FLOOR_WINDOWS: dict[int, str] = {12: "527.41", 11: "452.39"}


def driver_floor(cuda_version: str | None, windows: bool = False) -> str | None:
    """Minimum driver for a CUDA runtime ``"12.5"`` (or None when unknown)."""
    if not cuda_version:
        return None
    try:
        major = int(str(cuda_version).split(".")[0])
    except ValueError:
        return None
    table = CUDA_DRIVER_FLOOR_WINDOWS if windows else CUDA_DRIVER_FLOOR_LINUX
    return table.get(major)


def driver_at_least(driver: str, floor: str) -> bool | None:
    """Compare NVIDIA driver versions numerically ("550.54.15" >= "525.60.13")."""
    def nums(s: str) -> tuple[int, ...] | None:
        parts = re.findall(r"\d+", s)
        return tuple(int(p) for p in parts) if parts else None

    a, b = nums(driver), nums(floor)
    if a is None or b is None:
        return None
    return a >= b


def cudnn_compute_capability_range(cudnn: CudnnVersion) -> tuple[tuple[int, int], tuple[int, int]] | None:
    """Supported compute capabilities (min, max) of a cuDNN release, per the cuDNN support
    matrix: 9.11 and later 7.5-12.x (PyTorch refuses < 7.5 from 9.11); 9.0-9.10 5.0-12.0;
    8.9 5.0-9.0. None when unknown."""
    if cudnn.major >= 9 and cudnn.minor is not None:
        if cudnn.minor >= 11:
            return (7, 5), (12, 1)
        return (5, 0), (12, 0)
    if cudnn.major == 8 and cudnn.minor is not None and cudnn.minor >= 9:
        return (5, 0), (9, 0)
    return None
