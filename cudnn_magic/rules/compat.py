"""Each framework's own rule for the runtime cuDNN it accepts, given the cuDNN it was compiled
against (docs/facts.md "Which runtime cuDNN each framework accepts"): :data:`RULES` in words,
:func:`judge` as code, :func:`checker_for_tensorflow` for TensorFlow's three eras. Pure."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from packaging.version import InvalidVersion, Version

from ..model import Verdict
from .cudnn_version import CudnnVersion, try_parse

Checker = Literal["tensorflow", "tensorflow-legacy", "tensorflow-compat-version", "xla", "pytorch", "jax", "cupy",
                  "onnxruntime", "nvidia"]


@dataclass(frozen=True)
class Judgement:
    """A verdict by one checker's rule: ``ok`` True/False, or None when it cannot decide."""

    ok: bool | None
    rule: str
    detail: str

    @property
    def verdict(self) -> Verdict:
        return "unknown" if self.ok is None else "ok" if self.ok else "mismatch"


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
        "<= the runtime number (908 <= 90100 for a 9.8.0 build on 9.1.0, so any cuDNN 9 passes), refuses 9.10.0 "
        "unless built with it, and (in jax-cuda12-pjrt 0.10.2 and later) refuses cuDNN below 9.10.1 when cuBLAS is 12.9 "
        "or newer and more than one local device is visible; then, when the GPU backend creates its cuDNN handle, XLA's C++ side "
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
        which = "compiled-against" if src.minor is None else "runtime"
        return Judgement(None, rule, f"majors agree ({rt.major}); the {which} minor is not known")
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
