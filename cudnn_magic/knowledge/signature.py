"""The shape of the knowledge: :class:`Signature` (one known error wording, as data, built with
:func:`sig`) and :class:`Hit` (a signature matched on one line). Pure."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Callable

__all__ = ["Hit", "LazyPattern", "Refine", "Signature", "sig"]


Refine = Callable[[dict[str, str], str], "tuple[str | None, float] | None"]
"""``refine(groups, line)``: may add decoded fields to ``groups``; returns ``(diagnosis or None,
weight)``, or None to keep the defaults."""


@dataclass(frozen=True)
class Signature:
    """One known error wording, as data.

    Attributes:
        name: unique signature name (``"tf-loaded-runtime"``).
        diagnosis: catalogue id (docs/ids.md) this wording points to.
        family: the module that holds it ("versions", "loading", ...).
        keywords: lower-case literals; a line is tried only when it holds one of them.
        patterns: regexes (bounded repetition only; :class:`LazyPattern`: compiled on first use);
            the first that matches wins.
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
    patterns: tuple[re.Pattern[str] | LazyPattern, ...]
    weight: float
    title: str = ""
    title_plain: str = ""
    summary: str = ""
    fixes: tuple[str, ...] = ()
    also: tuple[tuple[str, float], ...] = ()
    extras: tuple[re.Pattern[str] | LazyPattern, ...] = ()
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


class LazyPattern:
    """A regular expression compiled on first use: what :func:`re.compile` returns, for every
    method and attribute (``search``, ``pattern``, ``flags``, ``groupindex``...), equal and hashed
    as the pattern. The knowledge base holds hundreds of wordings; a log that holds the keywords
    of a few compiles only theirs (a one-line ``cudnn-magic explain`` compiled every one: about
    40 ms of its 123; ``benchmarks/bench_explain.py``)."""

    __slots__ = ("_compiled", "_flags", "_source")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self._source, self._flags = pattern, flags
        self._compiled: re.Pattern[str] | None = None

    def compiled(self) -> re.Pattern[str]:
        c = self._compiled
        if c is None:
            c = self._compiled = re.compile(self._source, self._flags)
        return c

    @property
    def pattern(self) -> str:
        return self._source

    def search(self, string: str, *args: int) -> re.Match[str] | None:
        return self.compiled().search(string, *args)

    def match(self, string: str, *args: int) -> re.Match[str] | None:
        return self.compiled().match(string, *args)

    def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
        return getattr(self.compiled(), name)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LazyPattern):
            return (self._source, self._flags) == (other._source, other._flags)
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self._source, self._flags))

    def __repr__(self) -> str:
        return f"LazyPattern({self._source!r}, {self._flags!r})"


def sig(name: str, diagnosis: str, family: str, keywords: Iterable[str], patterns: Iterable[str],
        weight: float, *, extras: Iterable[str] = (), flags: int = re.IGNORECASE, **kw: Any) -> Signature:
    """Build a :class:`Signature`; ``patterns`` and ``extras`` (case-insensitive) are compiled when
    a line holding one of its ``keywords`` first needs them (:class:`LazyPattern`)."""
    return Signature(
        name=name, diagnosis=diagnosis, family=family,
        keywords=tuple(k.lower() for k in keywords),
        patterns=tuple(LazyPattern(p, flags) for p in patterns),
        extras=tuple(LazyPattern(p, flags) for p in extras),
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
