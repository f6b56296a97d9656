"""The shape of the knowledge: :class:`Signature` (one known error wording, as data, built with
:func:`sig`) and :class:`Hit` (a signature matched on one line). Pure."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping

__all__ = ["Hit", "Refine", "Signature", "sig"]


Refine = Callable[[Mapping[str, str], str], "tuple[str | None, float] | None"]


@dataclass(frozen=True)
class Signature:
    """One known error wording, as data.

    Attributes:
        name: unique signature name (``"tf-loaded-runtime"``).
        diagnosis: catalogue id (docs/ids.md) this wording points to.
        family: the module that holds it ("versions", "loading", ...).
        keywords: lower-case literals; a line is tried only when it holds one of them.
        patterns: compiled regexes (bounded repetition only); the first that matches wins.
            Named groups become ``versions`` entries: ``loaded``, ``compiled``, ``minimum``,
            ``driver``, ``status``, ``status_code``, ``soname``, ``library``, ...
        weight: strength of this evidence (100 = decisive), used for ranking.
        title: title template (``str.format`` with the decoded versions and ``framework``),
            used when all its fields are known; otherwise ``title_plain``.
        title_plain: title without versions.
        summary: why, in plain words (two or three sentences).
        fixes: fix ids (:data:`cudnn_magic.fixes.catalogue.ADVICE`), strongest first.
        also: other catalogue ids this evidence supports, with their weight.
        extras: regexes searched in the trigger line and the ``window`` lines after it, for
            fields printed on their own lines (JAX's "Installed version: 8907").
        window: how many following lines ``extras`` may look at.
        needs_context: only counts next to another cuDNN signature (e.g. "CUDA driver version
            is insufficient": alone it is not a cuDNN fault).
        supports: this line only adds evidence to these diagnoses when they are present.
        generic: skipped on a line already matched by a non-generic signature (the bare
            ``CUDNN_STATUS_*`` name inside "Could not create cudnn handle: ..." belongs to the
            handle signature).
        warning_only: used by ``gpu_unused_warnings`` only (a cell that succeeded).
        warning: the wording means a GPU will be silently skipped (``gpu_unused_warnings``).
        framework: the framework that prints it, when fixed ("TensorFlow", "PyTorch", ...).
        refine: escape hatch: ``refine(groups, line) -> (diagnosis or None, weight) | None``;
            None keeps the defaults, a None diagnosis drops the hit.
        source: where the wording comes from (cited in docs and tests).
        gate: a lower-case literal every matching line contains ("dnn" for lines that name
            cuDNN); it lets a keyword share a cheap trigger scan (see :data:`cudnn_magic.knowledge.matcher.TRIGGERS`).
        cudnn_path: the line shows the failing code runs inside cuDNN (a ``_cudnn_rnn`` or
            ``cudnn_convolution`` frame, a ``CudnnRNN`` op, a ``cudnn*`` call): it lets
            ``needs_context`` wordings count (``no kernel image is available`` raised there).
        names_missing: the wording names the library that could not be loaded: ``"cudnn"``
            (a libcudnn*/cudnn*64_*.dll file) or ``"other"`` (libcudart, libcublas, libcufft,
            libnvinfer, libcuda, ...).
        unnamed_load: the wording says GPU libraries or a provider failed to load without naming
            which (TensorFlow "Cannot dlopen some GPU libraries", ONNX Runtime "Failed to create
            CUDAExecutionProvider"): it is dropped when the text names only non-cuDNN libraries
            as the missing ones (``names_missing == "other"``).
        refutes: catalogue ids this wording shows are not so, for the same ``framework``: their
            hits are dropped when it is present (JAX's "CUDA backend failed to initialize" means
            its CUDA plugin is installed, so JAX's "a CUDA-enabled jaxlib is not installed",
            printed beside it, is no CPU build). Markers (weight 0) only.
    """

    name: str
    diagnosis: str
    family: str
    keywords: tuple[str, ...]
    patterns: tuple[re.Pattern[str], ...]
    weight: float
    title: str = ""
    title_plain: str = ""
    summary: str = ""
    fixes: tuple[str, ...] = ()
    also: tuple[tuple[str, float], ...] = ()
    extras: tuple[re.Pattern[str], ...] = ()
    window: int = 0
    needs_context: bool = False
    supports: tuple[str, ...] = ()
    generic: bool = False
    warning_only: bool = False
    warning: bool = False
    framework: str = ""
    refine: Refine | None = None
    source: str = ""
    gate: str = ""
    cudnn_path: bool = False
    names_missing: str = ""
    unnamed_load: bool = False
    refutes: tuple[str, ...] = ()


def sig(name: str, diagnosis: str, family: str, keywords: Iterable[str], patterns: Iterable[str],
        weight: float, *, extras: Iterable[str] = (), flags: int = re.IGNORECASE, **kw) -> Signature:
    """Build a :class:`Signature`, compiling ``patterns`` and ``extras`` (case-insensitive)."""
    return Signature(
        name=name, diagnosis=diagnosis, family=family,
        keywords=tuple(k.lower() for k in keywords),
        patterns=tuple(re.compile(p, flags) for p in patterns),
        extras=tuple(re.compile(p, flags) for p in extras),
        weight=weight, **kw,
    )


@dataclass(frozen=True)
class Hit:
    """One signature matched on one line.

    Attributes:
        signature: the :class:`Signature`.
        diagnosis: the catalogue id (after ``refine``).
        weight: strength (after ``refine``).
        line: the evidence, quoted from the original text (stripped, bounded).
        groups: the named groups that matched (raw strings from the text, not yet decoded).
        source: "log", "exception" or "traceback".
        position: byte offset of the match in its source text (later lines sort later).
        span: byte offsets (start, end) of the match.
    """

    signature: Signature
    diagnosis: str
    weight: float
    line: str
    groups: dict[str, str] = field(default_factory=dict)
    source: str = "log"
    position: int = 0
    span: tuple[int, int] = (0, 0)
