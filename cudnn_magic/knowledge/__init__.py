"""The diagnosis knowledge base: error signatures as data, matched in linear time. Pure.

Layout follows friendly-traceback (its ``runtime_errors`` package): one module per family
(:mod:`.versions`, :mod:`.loading`, :mod:`.builds`, :mod:`.init`, :mod:`.status`,
:mod:`.oom` (out-of-memory wordings), :mod:`.driver`, :mod:`.stream`, :mod:`.arch`, :mod:`.calls`, :mod:`.warnings`,
:mod:`.tensorrt` (TensorRT's own cuDNN checks), :mod:`.bindings` (Rust, Julia, Java and native builds),
:mod:`.hints` (install notes printed because cuDNN did not load), :mod:`.cpu_builds` (framework builds
without CUDA), :mod:`.unnamed` (a DLL that failed to load, unnamed)),
each a tuple ``SIGNATURES`` of declarative :class:`Signature` entries, with an optional
``refine`` callable as the escape hatch for the few that need logic. Matching never raises and
never runs anything from the text.

Besides wordings that point at a diagnosis, a family may hold *markers* (weight 0): facts about
the text that the ranking in :mod:`cudnn_magic.engines.diagnose` reads, never diagnoses of their own:
which cuDNN function failed (:mod:`.calls`, group ``call``), that the failing code path runs
inside cuDNN (``cudnn_path``), and which library a loader said it could not open
(``names_missing``).

The package: :mod:`.signature` (the :class:`Signature` and :class:`Hit` types), :mod:`.matcher`
(:func:`scan`, :func:`keyword_lines`, :func:`signatures`, :data:`FAMILIES`), one module per
family. This module only re-exports those names, on first use (a family module imports
:mod:`.signature` alone).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

#: Name -> the module of this package that defines it.
_HOMES = {
    "Signature": ".signature", "Hit": ".signature", "sig": ".signature", "Refine": ".signature",
    "scan": ".matcher", "keyword_lines": ".matcher", "signatures": ".matcher", "FAMILIES": ".matcher",
    "FIX_IDS": ".matcher", "WARNING_LITERALS": ".literals", "TRIGGERS": ".matcher", "MAX_LINE": ".matcher",
    "MAX_JOIN_BYTES": ".matcher", "EVIDENCE_CHARS": ".matcher", "HITS_PER_KEYWORD_HEAD": ".matcher",
    "HITS_PER_KEYWORD_TAIL": ".matcher", "WARNING_TAIL": ".matcher", "WARNING_MAX_LINES": ".matcher",
    "SCAN_CHUNK": ".matcher", "GATHER_LIMIT": ".matcher", "GATHER_PER_BYTES": ".matcher",
}

__all__ = sorted(_HOMES)  # noqa: PLE0605 - a list: the lazy re-export table's names



if TYPE_CHECKING:  # the names for type checkers and readers; at run time they load on first use (below)
    from .literals import WARNING_LITERALS as WARNING_LITERALS
    from .matcher import EVIDENCE_CHARS as EVIDENCE_CHARS
    from .matcher import FAMILIES as FAMILIES
    from .matcher import FIX_IDS as FIX_IDS
    from .matcher import GATHER_LIMIT as GATHER_LIMIT
    from .matcher import GATHER_PER_BYTES as GATHER_PER_BYTES
    from .matcher import HITS_PER_KEYWORD_HEAD as HITS_PER_KEYWORD_HEAD
    from .matcher import HITS_PER_KEYWORD_TAIL as HITS_PER_KEYWORD_TAIL
    from .matcher import MAX_JOIN_BYTES as MAX_JOIN_BYTES
    from .matcher import MAX_LINE as MAX_LINE
    from .matcher import SCAN_CHUNK as SCAN_CHUNK
    from .matcher import TRIGGERS as TRIGGERS
    from .matcher import WARNING_MAX_LINES as WARNING_MAX_LINES
    from .matcher import WARNING_TAIL as WARNING_TAIL
    from .matcher import keyword_lines as keyword_lines
    from .matcher import scan as scan
    from .matcher import signatures as signatures
    from .signature import Hit as Hit
    from .signature import Refine as Refine
    from .signature import Signature as Signature
    from .signature import sig as sig


if not TYPE_CHECKING:  # type checkers see the imports above; at run time names load on first use
    def __getattr__(name: str) -> Any:
        home = _HOMES.get(name)
        if home is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        return getattr(importlib.import_module(home, __name__), name)
