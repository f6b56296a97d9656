"""Where each sub-library a cuDNN 8 or 9 main library opens at run time would come from.

cuDNN 8 and 9 split the library: ``libcudnn.so.N`` is a small shim that ``dlopen``s its
sub-libraries by soname the first time a call needs one (measured on the real 8.9.7 main library
vendored by ctranslate2 4.4.0: ``cudnnGetVersion`` is forwarded to ``libcudnn_ops_infer.so.8``,
and without it the process aborts with "Could not load library libcudnn_ops_infer.so.8. Error:
libcudnn_ops_infer.so.8: cannot open shared object file"; the sonames and the
``cudnn*VersionCheck`` entry points are the strings in the file). The ``dlopen`` runs inside the
main library, so glibc searches with the main library as the requester and the consumer that
loaded it as the next link of the chain (:mod:`cudnn_magic.probes.loader`). Nothing is loaded
here: each sub-library is resolved like the loader would, and its version read from its name,
wheel or header.
"""

from __future__ import annotations

import os

from ..model import SublibraryPick
from . import libnames
from .loader import resolve_in_chain

__all__ = ["SUBLIBRARIES", "predict_sublibraries"]

#: (soname, what cuDNN uses it for, needed for the first convolution). cuDNN 8: the infer
#: libraries serve inference, the train ones back-propagation (cuDNN 8 API reference, "API
#: overview": ops/cnn/adv x infer/train). cuDNN 9: graph for every call, the engine libraries
#: to run anything, ops/cnn/adv for the legacy (cuDNN 8 style) API (cuDNN 9 API reference,
#: "cuDNN library configurations"); the JIT wheel ships only graph + engines_runtime_compiled.
SUBLIBRARIES: dict[int, tuple[tuple[str, str, bool], ...]] = {
    8: (
        ("libcudnn_ops_infer.so.8", "every call (tensor descriptors, cudnnCreate, version calls)", True),
        ("libcudnn_cnn_infer.so.8", "convolution (forward)", True),
        ("libcudnn_adv_infer.so.8", "RNN and multi-head attention (forward)", False),
        ("libcudnn_ops_train.so.8", "training ops (back-propagation)", False),
        ("libcudnn_cnn_train.so.8", "convolution back-propagation", False),
        ("libcudnn_adv_train.so.8", "RNN and attention back-propagation", False),
    ),
    9: (
        ("libcudnn_graph.so.9", "every call (the graph API and version calls)", True),
        ("libcudnn_engines_precompiled.so.9", "precompiled engines (runs operations)", False),
        ("libcudnn_engines_runtime_compiled.so.9", "runtime-compiled engines (runs operations)", False),
        ("libcudnn_heuristic.so.9", "engine heuristics", False),
        ("libcudnn_ops.so.9", "legacy ops API (tensor descriptors, cudnnCreate in cuDNN 8 style code)", False),
        ("libcudnn_cnn.so.9", "legacy convolution API (cudnnConvolutionForward)", False),
        ("libcudnn_adv.so.9", "legacy RNN and attention API", False),
    ),
}
_ENGINES_9 = ("libcudnn_engines_precompiled.so.9", "libcudnn_engines_runtime_compiled.so.9")
_LEGACY_9 = ("libcudnn_ops.so.9", "libcudnn_cnn.so.9")


def main_major(path: str) -> int | None:
    """cuDNN major of a main library file (``libcudnn.so.9``, ``libcudnn-463fd6d5.so.8.9.7``)."""
    p = libnames.parse_name(os.path.basename(path))
    return p[1] if p and p[0] == "cudnn" else None


def _version(path: str) -> str | None:
    from .installed import static_version  # start-up cost: only this probe path needs it
    from .owners import owner_of

    try:
        real = os.path.realpath(path)
        return static_version(real, owner_of(path))[0]
    except Exception:  # noqa: BLE001 - a version we cannot read is simply unknown
        return None


def predict_sublibraries(main: str, chain: list[str], *, consumer: str, environ: dict[str, str] | None = None,
                         ldcache: dict[str, list[str]] | None = None, mapped: list[str] | tuple[str, ...] = (),
                         legacy_api: bool = False, major: int | None = None) -> tuple[SublibraryPick, ...]:
    """Resolve every sub-library of the cuDNN main library ``main`` as its ``dlopen`` would.

    Args:
        main: path of the main library (``libcudnn.so.9`` or a vendored copy).
        chain: the objects that loaded ``main``, nearest first (the consumer, its loader, ...).
        consumer: display name for the resolutions.
        environ: the start environment (``LD_LIBRARY_PATH``); ``ldcache`` the parsed ld.so cache.
        mapped: files mapped in the process the prediction is for (``()`` for a fresh one).
        legacy_api: the consumer calls cuDNN 9's legacy API (``cudnnConvolutionForward``), so
            ``libcudnn_ops.so.9`` and ``libcudnn_cnn.so.9`` are required too.
        major: cuDNN major, when the file name does not say.

    Returns:
        One :class:`SublibraryPick` per sub-library, in the order cuDNN documents them; ``()``
        for cuDNN 7 and older (one monolithic library). cuDNN 9's two engine libraries are
        marked required only when neither is found (either one runs operations).
    """
    major = major if major is not None else main_major(main)
    table = SUBLIBRARIES.get(major or 0)
    if not table:
        return ()
    picks: list[SublibraryPick] = []
    for soname, purpose, required in table:
        if major == 9 and legacy_api and soname in _LEGACY_9:
            required = True
        res = resolve_in_chain(soname, consumer, main, chain, environ=environ, ldcache=ldcache, mapped=mapped)
        version = _version(res.picked) if res.picked else None
        picks.append(SublibraryPick(soname, res.picked, version, res.reason, required, purpose))
    if major == 9 and not any(p.path for p in picks if p.soname in _ENGINES_9):
        picks = [SublibraryPick(p.soname, p.path, p.version, p.why, True, p.purpose + "; one engine library is needed")
                 if p.soname in _ENGINES_9 else p for p in picks]
    return tuple(picks)
