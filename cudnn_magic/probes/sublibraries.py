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

import dataclasses
import os

from ..model import Resolution, SublibraryPick
from . import libnames
from .installed import static_version
from .loader import resolve_in_chain
from .owners import owner_of, ownership
from .scope import realpath

__all__ = ["ANSWERING", "SUBLIBRARIES", "answering_version", "predict_sublibraries"]

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
        # cuDNN 9.23 and later (the nvidia-cudnn-cu13 9.24.0.43 wheel's RECORD lists both)
        ("libcudnn_engines_tensor_ir.so.9", "tensor-IR engines (cuDNN 9.23 and later)", False),
        ("libcudnn_ext.so.9", "extension API (cuDNN 9.23 and later)", False),
    ),
}
_ENGINES_9 = ("libcudnn_engines_precompiled.so.9", "libcudnn_engines_runtime_compiled.so.9")
#: The sub-library a main library's version call is answered by (``cudnnGetVersion`` of cuDNN 9's
#: shim is the graph library's; cuDNN 8's main library forwards it to ``libcudnn_ops_infer``):
#: what a consumer that picks that main library really runs (:mod:`cudnn_magic.rules.folders`).
ANSWERING = {9: "libcudnn_graph.so.9", 8: "libcudnn_ops_infer.so.8"}
_LEGACY_9 = ("libcudnn_ops.so.9", "libcudnn_cnn.so.9")
_SINCE_9_23 = ("libcudnn_engines_tensor_ir.so.9", "libcudnn_ext.so.9")


def main_major(path: str) -> int | None:
    """cuDNN major of a main library file (``libcudnn.so.9``, ``libcudnn-463fd6d5.so.8.9.7``)."""
    p = libnames.parse_name(os.path.basename(path))
    return p[1] if p and p[0] == "cudnn" else None


def file_version(path: str) -> str | None:
    """The cuDNN version of the file ``path`` itself (name, constant, wheel, header: :func:`~cudnn_magic
    .probes.installed.static_version`), or None. Never raises."""
    return _version(path)


def _version(path: str) -> str | None:
    try:
        real = realpath(path)
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
    release = release_names(main)
    own = _version(main) if major == 9 else None
    known = {t[0] for t in table}
    rows = list(table)
    if release is not None:  # what this release ships, by its wheel's RECORD (newer releases may add files)
        rows += [(n, "listed by the wheel's RECORD", False) for n in release
                 if n not in known and libnames.soname_of(n) == n and not libnames.is_main(n)
                 and (libnames.parse_name(n) or ("", None, None))[1] == major]
    picks: list[SublibraryPick] = []
    for soname, purpose, required in rows:
        if major == 9 and legacy_api and soname in _LEGACY_9:
            required = True
        res = _resolve_sub(soname, main, chain, major, own, consumer=consumer, environ=environ, ldcache=ldcache,
                           mapped=mapped)
        if not required and not res.picked and (soname not in release if release is not None else soname in _SINCE_9_23):
            continue  # an optional file this release does not ship (or, unknown release, one only new ones ship)
        version = _version(res.picked) if res.picked else None
        picks.append(SublibraryPick(soname, res.picked, version, res.reason, required, purpose))
    if major == 9 and not any(p.path for p in picks if p.soname in _ENGINES_9):
        picks = [SublibraryPick(p.soname, p.path, p.version, p.why, True, p.purpose + "; one engine library is needed")
                 if p.soname in _ENGINES_9 else p for p in picks]
    return tuple(picks)


def sub_names(soname: str, major: int | None, main_version: str | None) -> list[str]:
    """The names a cuDNN 9 main library ``dlopen``s for one sub-library, in its order: its own full
    version, its major.minor, the soname, the bare ``.so`` (the shim's own message:
    ``Unable to load any of {libcudnn_graph.so.9.1.0, libcudnn_graph.so.9.1, libcudnn_graph.so.9,
    libcudnn_graph.so}``, seen with the 9.1.0 and 9.12.0 shims). cuDNN 8 asks for the soname only
    (``Could not load library libcudnn_ops_infer.so.8``)."""
    if major != 9 or not soname.endswith(".so.9"):
        return [soname]
    stem = soname[: -len(".9")]
    v = main_version.split(".") if main_version else []
    names = [f"{stem}.{'.'.join(v[:3])}", f"{stem}.{'.'.join(v[:2])}"] if len(v) >= 3 and v[0] == "9" else []
    return [*names, soname, stem]


def _resolve_sub(soname: str, main: str, chain: list[str], major: int | None, main_version: str | None, *,
                 consumer: str = "", environ: dict[str, str] | None = None, ldcache: dict[str, list[str]] | None = None,
                 mapped: list[str] | tuple[str, ...] = ()) -> Resolution:
    """The first of :func:`sub_names` the loader finds (each name's whole search before the next),
    reported under ``soname``; the soname's own miss when none is found."""
    miss = None
    for name in sub_names(soname, major, main_version):
        res = resolve_in_chain(name, consumer, main, chain, environ=environ, ldcache=ldcache, mapped=mapped)
        if res.picked:
            if name != soname:
                res = dataclasses.replace(res, soname=soname, reason=f"{res.reason} (as {name}, which the shim asks for "
                                                                      "before the soname)")
            return res
        if name == soname:
            miss = res
    return miss or resolve_in_chain(soname, consumer, main, chain, environ=environ, ldcache=ldcache, mapped=mapped)


def release_names(main: str) -> frozenset[str] | None:
    """The cuDNN file names the wheel that installed ``main`` lists beside it in its ``RECORD``
    (what that release ships: cuDNN 9.24's wheel lists ``libcudnn_engines_tensor_ir.so.9`` and
    ``libcudnn_ext.so.9``, 9.12's does not); None when no ``RECORD`` lists ``main``. Never raises."""

    try:
        own = ownership(main)
        if own.dist is None:
            return None
        folder = os.path.dirname(os.path.normpath(main))
        real_folder = os.path.dirname(realpath(main))
        out = set()
        for e in own.dist.entries:
            p = own.dist.abspath(e)
            if os.path.dirname(p) in (folder, real_folder) and os.path.basename(p).startswith("libcudnn"):
                out.add(os.path.basename(p))
        return frozenset(out)
    except Exception:  # noqa: BLE001 - unknown is an answer
        return None


def answering_version(main: str, chain: list[str], *, consumer: str = "", environ: dict[str, str] | None = None,
                      ldcache: dict[str, list[str]] | None = None, mapped: list[str] | tuple[str, ...] = (),
                      major: int | None = None) -> tuple[str | None, str | None]:
    """(version, file) of the ``libcudnn_graph.so.9`` that cuDNN 9's shim ``main`` opens, found as
    its ``dlopen`` would find it: the release a consumer that picks ``main`` really runs (the shim
    carries no code of its own and answers ``cudnnGetVersion`` with the graph library's number).
    ``(None, None)`` for other majors (cuDNN 8's main library is the API itself: its own version is
    judged, and sub-libraries older than it are a finding of their own), or when the loader would
    find none. Never raises."""
    try:
        major = major if major is not None else main_major(main)
        soname = ANSWERING.get(major or 0) if major == 9 else None
        if soname is None:
            return None, None
        res = _resolve_sub(soname, main, chain, major, _version(main), consumer=consumer, environ=environ, ldcache=ldcache,
                           mapped=mapped)
        if not res.picked:
            return None, None
        return _version(res.picked), res.picked
    except Exception:  # noqa: BLE001 - a probe never raises
        return None, None
