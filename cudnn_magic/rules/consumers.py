"""The rules for cuDNN consumers beyond the five big frameworks, and for consumers that meet in
one process. Pure: standard library, :mod:`packaging` and :mod:`cudnn_magic.model` only.

Each framework's own rule, quoted with its source (:data:`CONSUMER_RULES`):

* CTranslate2: no version check of its own (its source never calls ``cudnnGetVersion``). The
  Linux wheels vendor the cuDNN main library they were built with, renamed by auditwheel, and
  ``NEED`` it by that name; the main library opens sub-libraries of its own major by soname.
  Build table from ``python/tools/prepare_build_environment_linux.sh`` at each tag and the
  CHANGELOG (:data:`CTRANSLATE2_BUILDS`).
* PaddlePaddle: ``paddle/phi/backends/gpu/gpu_resources.cc`` (``InitGpuProperties``,
  ``InitDnnHandle``).
* MXNet: ``src/base.cc`` ``Context::CuDNNLibChecks`` (MXNet 1.x).
* TensorRT: ``plugin/common/cudnnWrapper.cpp`` (TensorRT OSS 10.0-11.1) and the 10.0.0 / 10.7.0
  CHANGELOG entries.
* Any other consumer: the soname it NEEDs (NVIDIA's cuDNN API compatibility rule within it).
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from typing import Any

from packaging.version import InvalidVersion, Version

from ..fixes.catalogue import FINDING_WORDED
from ..model import ConsumerLibrary, Finding, Fix, FrameworkBuild, Severity, SublibraryPick
from .cudnn_version import try_parse

__all__ = [
    "CONSUMER_CHECKERS",
    "CONSUMER_FINDING_IDS",
    "CONSUMER_RULES",
    "CTRANSLATE2_BUILDS",
    "clash_findings",
    "ctranslate2_build",
    "judge_consumer",
    "sublibrary_problems",
]

CONSUMER_RULES: dict[str, str] = {
    "ctranslate2": (
        "no version check of its own: it calls the cuDNN main library its wheel vendors (auditwheel's "
        "libcudnn-HASH.so.X.Y.Z in ctranslate2.libs), which opens sub-libraries of the same major by soname; "
        "4.0-4.4 ship cuDNN 8.9.7 and need cuDNN 8 sub-libraries, 4.5.0-4.6.2 ship cuDNN 9.1.0 and need cuDNN 9 "
        "ones (\"no longer compatible with CUDNN 8\"), 4.6.3 and later are built without cuDNN "
        "(CTranslate2 CHANGELOG v4.5.0 and v4.6.3; python/tools/prepare_build_environment_linux.sh)"
    ),
    "paddle": (
        "on Linux it refuses to start only when both the driver's CUDA major and the loaded cuDNN major are older "
        "than its build; otherwise it warns (\"may cause serious incompatible bug\") when cudnnGetVersion() is below "
        "the CUDNN_VERSION it was built with (paddle/phi/backends/gpu/gpu_resources.cc InitGpuProperties, "
        "InitDnnHandle); it opens FLAGS_cudnn_dir/libcudnn.so[.N] first, then the plain name, then "
        "/usr/local/cuda/lib64 (paddle/phi/backends/dynload/dynamic_loader.cc GetCUDNNDsoHandle)"
    ),
    "mxnet": (
        "warns \"cuDNN lib mismatch: linked-against version X != compiled-against version Y\" when the runtime "
        "differs at all and never refuses (src/base.cc Context::CuDNNLibChecks; MXNET_CUDNN_LIB_CHECKING=0 "
        "silences it); the soname libmxnet.so NEEDs fixes the major"
    ),
    "tensorrt": (
        "TensorRT 10 and later need no cuDNN, except the plugins InstanceNormalization_TRT and "
        "GroupNormalizationPlugin, which dlopen libcudnn.so.8 themselves (plugin/common/cudnnWrapper.cpp, "
        "CUDNN_MAJOR 8 in TensorRT OSS 10.0-11.1; CHANGELOG 10.0.0: no load-time link on cuDNN) and are not "
        "supported on Blackwell (CHANGELOG 10.7.0); TensorRT 8.x uses libcudnn.so.8 (tactic source, plugins)"
    ),
    "soname": (
        "the soname it NEEDs fixes the cuDNN major (the dynamic loader accepts nothing else); any release of that "
        "major with a complete sub-library set runs it (NVIDIA cuDNN API compatibility: a minor release runs "
        "applications built with the same or an older minor; the minor it was built with is not recorded in the file)"
    ),
}
#: Checkers whose rows are judged here, not by :func:`cudnn_magic.engines.check.judge_report`.
CONSUMER_CHECKERS = frozenset(CONSUMER_RULES)

CONSUMER_FINDING_IDS = {
    "cudnn-consumer-clash": "two consumers in this environment need different cuDNN majors, and what is "
                            "installed for one leaves the other without its cuDNN",
    "cudnn-import-order": "consumers of one cuDNN major would get their sub-libraries from different copies: in one "
                          "kernel the first one loaded serves all, so import order decides",
}

#: CTranslate2 Linux wheels: (first, last) version -> (CUDA, cuDNN or None when built without).
#: Source: python/tools/prepare_build_environment_linux.sh at each tag (the cuda-nvcc and
#: libcudnn*-devel packages it installs, WITH_CUDNN=ON/OFF).
CTRANSLATE2_BUILDS: tuple[tuple[str, str, str, str | None], ...] = (
    ("3.0.0", "3.24.99", "11.2", "8.1.1"),
    ("4.0.0", "4.4.99", "12.2", "8.9.7"),
    ("4.5.0", "4.6.0", "12.2", "9.1.0"),
    ("4.6.1", "4.6.2", "12.4", "9.1.0"),
    ("4.6.3", "99", "12.8", None),
)


def ctranslate2_build(version: str) -> tuple[str, str | None] | None:
    """(CUDA, cuDNN or None) of CTranslate2 ``version``'s Linux wheels (:data:`CTRANSLATE2_BUILDS`);
    None for versions the table does not cover."""
    try:
        v = Version(Version(version).base_version)
    except InvalidVersion:
        return None
    for first, last, cuda, cudnn in CTRANSLATE2_BUILDS:
        if Version(first) <= v <= Version(last):
            return cuda, cudnn
    return None


def _v3(text: str | None) -> tuple[int, ...] | None:
    v = try_parse(text) if text else None
    if v is None or v.minor is None:
        return None
    return (v.major, v.minor, v.patch or 0)


@dataclass(frozen=True)
class SublibraryProblem:
    """What is wrong with the sub-libraries predicted for one consumer: ``missing`` required
    sonames, ``mixed`` (soname, version) pairs when they come from different releases, ``older``
    when a cuDNN 8 main library is newer than the sub-libraries it forwards to."""

    missing: tuple[str, ...] = ()
    mixed: tuple[tuple[str, str], ...] = ()
    older: tuple[tuple[str, str], ...] = ()

    def __bool__(self) -> bool:
        return bool(self.missing or self.mixed or self.older)


def sublibrary_problems(main_version: str | None, subs: tuple[SublibraryPick, ...]) -> SublibraryProblem:
    """Judge a predicted sub-library set. cuDNN's sub-libraries check each other's release
    (``cudnnOpsInferVersionCheck``, ``cudnnCnnInferVersionCheck``..., CUDNN_STATUS_VERSION_MISMATCH /
    SUBLIBRARY_VERSION_MISMATCH), so found ones must share major.minor.patch. A cuDNN 8 main
    library forwards each call to its sub-libraries (measured: its ``cudnnGetVersion`` answers the
    sub-library's number), so sub-libraries older than it lack calls it may forward. A cuDNN 9
    shim answers with whatever ``libcudnn_graph.so.9`` is loaded (docs/facts.md), so only the
    sub-libraries are compared."""
    missing = tuple(s.soname for s in subs if s.required and not s.path)
    found = [(s.soname, s.version) for s in subs if s.path and s.version]
    versions = {t for _, v in found if (t := _v3(v))}
    mixed = tuple((n, v) for n, v in found) if len(versions) > 1 else ()
    older: tuple[tuple[str, str], ...] = ()
    mv = _v3(main_version)
    if mv and mv[0] == 8 and not mixed and versions:
        sub_v = next(iter(versions))
        if sub_v < mv:
            older = tuple((n, v) for n, v in found)
    return SublibraryProblem(missing, mixed, older)


def _where_looked(c: ConsumerLibrary, sub: bool = False) -> str:
    steps = c.sublibrary_searched if sub else c.searched
    if not steps:
        return "the ld.so cache and the default directories"
    return "; ".join(steps[:6]) + ("; ..." if len(steps) > 6 else "") + "; then the ld.so cache and the default directories"


def _sev(gpus: bool) -> Severity:
    return "error" if gpus else "warning"


def _abort_words(major: int | None, soname: str) -> str:
    if major == 8:
        return f"\"Could not load library {soname}. Error: {soname}: cannot open shared object file\" and the process aborts"
    return f"\"Unable to load any of {{{soname}, ...}}\" / \"Invalid handle. Cannot load symbol ...\" and the process aborts"


@dataclass(frozen=True)
class Judged:
    """A consumer row after judging: the row (verdict, rule, detail filled) and its findings."""

    row: FrameworkBuild
    findings: tuple[Finding, ...] = ()


def judge_consumer(row: FrameworkBuild, consumers: list[ConsumerLibrary], *, gpus: bool,
                   disk_dirs: dict[str, list[tuple[str, str | None]]] | None = None,
                   optional: bool = False, upgrade: Fix | None = None, unknown: bool = False) -> Judged:
    """Judge one consumer row (CTranslate2, PaddlePaddle, MXNet, TensorRT or a generic
    distribution) from the loader's predicted picks for its consumer libraries.

    Args:
        row: the row with ``cudnn_compiled`` (what it was built with or the major its soname
            fixes), ``checker`` a key of :data:`CONSUMER_RULES`.
        consumers: its consumer libraries with their main-library pick and sub-library picks.
        gpus: a GPU is visible (errors instead of warnings).
        disk_dirs: soname -> [(directory, version)] of every copy on disk, to say where a
            missing library could come from.
        optional: only some features need cuDNN (TensorRT 10's two plugins): findings are
            warnings, the verdict stays "ok".
        upgrade: the fix that installs a release of this consumer agreeing with the rest.
        unknown: the probe could not tell whether it uses cuDNN (verdict "unknown", not
            "not-applicable", when it has no consumer libraries).
    """
    rule = CONSUMER_RULES.get(row.checker, CONSUMER_RULES["soname"])
    label = f"{row.name} {row.version}"
    if not consumers:
        detail = row.detail or f"{label} uses no cuDNN: nothing to check"
        return Judged(_replace(row, verdict="unknown" if unknown else "not-applicable", rule=rule, detail=detail))
    findings: list[Finding] = []
    c = consumers[0]
    disk_dirs = disk_dirs or {}
    sev = "warning" if optional else _sev(gpus)
    if c.picked is None:
        where = [d for d, _ in disk_dirs.get(c.soname, [])]
        fixes: list[Fix] = []
        if where:
            fixes.append(Fix("add-library-path", f"Put {where[0]} on LD_LIBRARY_PATH for this kernel",
                             f"add {where[0]} to LD_LIBRARY_PATH in the kernelspec \"env\" (kernel.json) or the shell that "
                             "starts Jupyter, then start the kernel fresh", True))
        if upgrade:
            fixes.append(upgrade)
        what = "those plugins fail" if optional else "its GPU code fails"
        detail = (f"{label} {c.how} asks for {c.soname}; the loader looks in {_where_looked(c)} and finds none"
                  + (f" (copies exist in {', '.join(where)}, which are not searched)" if where else "") + f", so {what}.")
        findings.append(Finding("cudnn-library-not-found", sev, f"{label} will find no {c.soname}", detail, tuple(fixes)))
        verdict = "ok" if optional else ("mismatch" if gpus else "unknown")
        return Judged(_replace(row, cudnn_soname=c.soname, verdict=verdict, rule=rule, detail=detail), tuple(findings))
    runtime = c.picked_version
    how_found = "its vendored copy" if c.vendored else f"{c.picked} ({c.why})"
    detail_parts = [f"cuDNN {runtime or '?'} from {how_found}."]
    verdict = "ok"
    cv, rv = try_parse(row.cudnn_compiled) if row.cudnn_compiled else None, try_parse(runtime) if runtime else None
    if cv is not None and rv is not None and cv.major != rv.major:
        verdict = "mismatch"
        findings.append(Finding("cudnn-version-mismatch", _sev(gpus), f"{label} was built with cuDNN {cv} but will load {rv}",
                                f"{c.picked} ({c.why}) is cuDNN {rv}; no cuDNN release runs code built for another major "
                                f"(NVIDIA cuDNN API compatibility). Rule: {rule}.", tuple(f for f in (upgrade,) if f)))
    elif row.checker == "paddle" and cv is not None and rv is not None and _v3(str(rv)) and _v3(str(cv)) \
            and _v3(str(rv)) < _v3(str(cv)):  # type: ignore[operator]
        verdict = "mismatch"
        findings.append(Finding("cudnn-version-mismatch", "warning",
                                f"{label} was built with cuDNN {cv} but will load the older {rv}",
                                f"PaddlePaddle prints \"The installed Paddle is compiled with CUDNN {cv.major}.{cv.minor}, but "
                                f"CUDNN version in your machine is {rv.major}.{rv.minor}, which may cause serious incompatible "
                                f"bug\" and runs; calls added after {rv} fail. Rule: {rule}.", ()))
    elif row.checker == "mxnet" and cv is not None and rv is not None and cv.minor is not None and str(cv) != str(rv):
        detail_parts.append(f"MXNet will print \"cuDNN lib mismatch\" ({rv} vs {cv}) and run.")
    problems = sublibrary_problems(runtime, c.sublibraries)
    major = rv.major if rv else (cv.major if cv else None)
    if problems.missing:
        verdict = "ok" if optional else "mismatch"
        fixes = []
        on_disk = [(d, v) for n in problems.missing for d, v in disk_dirs.get(n, [])]
        same = [(d, v) for d, v in on_disk if not runtime or not v or _v3(v) == _v3(runtime)]
        if same:
            fixes.append(Fix("add-library-path", f"Put {same[0][0]} on LD_LIBRARY_PATH for this kernel",
                             f"add {same[0][0]} (cuDNN {same[0][1] or '?'}) to LD_LIBRARY_PATH in the kernelspec \"env\" "
                             "(kernel.json) or the shell that starts Jupyter, then start the kernel fresh", True))
        if upgrade:
            fixes.append(upgrade)
        names = ", ".join(problems.missing)
        first = problems.missing[0]
        detail = (f"{label} uses cuDNN {runtime or '?'} from {how_found}; that main library opens its sub-libraries by "
                  f"soname at run time, and the loader would find no {names} (it looks in {_where_looked(c, sub=True)}). "
                  + ("Those plugins fail." if optional else
                     f"The first GPU convolution prints {_abort_words(major, first)}.")
                  + (f" Copies of another release exist in {', '.join(sorted({d for d, _ in on_disk}))}: cuDNN refuses "
                     "sub-libraries of another release." if on_disk and not same else ""))
        findings.append(Finding("cudnn-sublibrary-load-failed", sev,
                                f"{label}: cuDNN {runtime or ''} will not find {names}".replace("  ", " "), detail, tuple(fixes)))
        detail_parts.append(f"Its cuDNN {major or ''} sub-libraries will not load ({names} not found).".replace("  ", " "))
    if problems.mixed:
        verdict = "mismatch"
        listing = ", ".join(f"{n} {v}" for n, v in problems.mixed)
        findings.append(Finding("cudnn-sublibrary-load-failed", _sev(gpus),
                                f"{label}: its cuDNN sub-libraries would come from different releases",
                                f"{listing}. cuDNN's sub-libraries check each other's release (cudnn*VersionCheck: "
                                "CUDNN_STATUS_VERSION_MISMATCH / SUBLIBRARY_VERSION_MISMATCH"
                                + ("; measured with the real 9.12 and 9.24 wheels: SUBLIBRARY_VERSION_MISMATCH for "
                                   "libcudnn_ops/_adv, NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE or an abort for libcudnn_cnn, "
                                   "depending on which is older, and some pairs load: no mix is supported"
                                   if any(n.endswith(".so.9") for n, _ in problems.mixed) else "") + ").",
                                (Fix("reinstall-cudnn", "Use one cuDNN release for all sub-libraries",
                                     "remove the stray directory from LD_LIBRARY_PATH or reinstall the cuDNN whose files are "
                                     "mixed", True),)))
    elif problems.older:
        findings.append(Finding("cudnn-sublibrary-load-failed", "warning",
                                f"{label}: its cuDNN {runtime} main library would use older sub-libraries",
                                f"{', '.join(f'{n} {v}' for n, v in problems.older)}. A cuDNN 8 main library forwards every "
                                f"call to its sub-libraries; calls added after their release abort with \"Could not load "
                                f"symbol\".", ()))
    if verdict == "ok" and not problems:
        found = [s for s in c.sublibraries if s.path and s.required]
        if found:
            detail_parts.append("Its sub-libraries come from " + ", ".join(sorted({os.path.dirname(s.path or '') for s in found}))
                                + ".")
    return Judged(_replace(row, cudnn_soname=c.soname, cudnn_used=runtime, cudnn_used_path=c.picked, verdict=verdict,
                           rule=rule, detail=" ".join(detail_parts)), tuple(findings))


def _replace(row: FrameworkBuild, **kw: Any) -> FrameworkBuild:
    return dataclasses.replace(row, **kw)


# --------------------------------------------------------------------------- consumers in one process


@dataclass(frozen=True)
class ConsumerNeed:
    """One consumer as the clash analysis sees it: who (``label``), the cuDNN major it needs,
    and the sub-library picks predicted for a fresh process (nothing else imported)."""

    label: str
    major: int | None
    fresh: tuple[SublibraryPick, ...] = ()
    main: str | None = None
    upgrade: Fix | None = None


def _required_ok(subs: tuple[SublibraryPick, ...]) -> bool:
    return bool(subs) and all(s.path for s in subs if s.required)


def clash_findings(needs: list[ConsumerNeed], *, gpus: bool) -> list[Finding]:
    """Findings for consumers that meet in one kernel.

    * Different majors (``cudnn-consumer-clash``): cuDNN 8 and 9 have different sonames and load
      side by side (docs/facts.md), so import order does not matter; what breaks is a consumer whose
      major's sub-libraries nothing in the environment provides, while another consumer's major
      is served (the whisperX case: CTranslate2 4.4 with cuDNN 8 beside PyTorch with cuDNN 9).
    * Same major, different copies (``cudnn-import-order``): a sub-library soname that resolves to
      different files (or for one consumer only) in fresh processes; in one kernel the loader
      reuses whichever was loaded first, so import order decides who gets which.
    """
    out: list[Finding] = []
    by_major: dict[int, list[ConsumerNeed]] = {}
    for n in needs:
        if n.major is not None:
            by_major.setdefault(n.major, []).append(n)
    if len(by_major) > 1:
        served = {m: [n for n in ns if _required_ok(n.fresh)] for m, ns in by_major.items()}
        for m, ns in sorted(by_major.items()):
            broken = [n for n in ns if n.fresh and not _required_ok(n.fresh)]
            others = [(om, served[om]) for om in by_major if om != m and served[om]]
            if not broken or not others:
                continue
            om, ok_list = others[0]
            for b in broken:
                missing = ", ".join(s.soname for s in b.fresh if s.required and not s.path)
                fixes = [f for f in (b.upgrade,) if f]
                fixes.append(Fix("separate-kernels", f"Run {b.label} and {ok_list[0].label} in separate kernels",
                                 f"create a separate environment (python -m venv) for {b.label} with a cuDNN {m} "
                                 f"installation, and a kernel for it (python -m ipykernel install --user --name ...)", True))
                out.append(Finding(
                    "cudnn-consumer-clash", _sev(gpus),
                    f"{b.label} needs cuDNN {m}, but this environment's cuDNN is {om} (for "
                    f"{', '.join(n.label for n in ok_list)})",
                    f"{b.label} loads a cuDNN {m} main library whose sub-libraries ({missing}) nothing here provides; "
                    f"{', '.join(n.label for n in ok_list)} use cuDNN {om}. cuDNN {m} and {om} have different sonames and "
                    "load side by side in one process, so import order does not help: the versions must agree, or the "
                    "two must run in separate kernels.", tuple(fixes)))
    for _major, ns in sorted(by_major.items()):
        if len(ns) < 2:
            continue
        sonames = sorted({s.soname for n in ns for s in n.fresh if s.required})
        for soname in sonames:
            picks: dict[str, tuple[str | None, str | None]] = {}
            for n in ns:
                s = next((x for x in n.fresh if x.soname == soname), None)
                if s is not None:
                    picks[n.label] = (s.path, s.version)
            if len(picks) < 2:
                continue
            paths = {p for p, _ in picks.values()}
            if len(paths) < 2:
                continue
            found = {lbl: pv for lbl, pv in picks.items() if pv[0]}
            if not found:
                continue
            listing = "; ".join(f"{lbl}: {pv[0] or 'none found'}" + (f" ({pv[1]})" if pv[1] else "")
                                for lbl, pv in sorted(picks.items()))
            lacking = [lbl for lbl, pv in picks.items() if not pv[0]]
            newest = max(found.items(), key=lambda kv: _v3(kv[1][1]) or (0,))[0]
            text = (f"In a fresh process each would load {soname} from a different place ({listing}). In one kernel the "
                    f"loader reuses the {soname} that was loaded first, so the consumer imported (and used) first decides "
                    "which copy serves all of them"
                    + (f"; {', '.join(lacking)} work only if another consumer has loaded it first." if lacking else ".")
                    + " Sub-libraries of different releases refuse each other.")
            out.append(Finding(
                "cudnn-import-order", "warning", f"Import order decides which {soname} serves "
                + ", ".join(sorted(picks)), text,
                (Fix("import-order", f"Import {newest.rsplit(' ', 1)[0]} first",
                     f"restart the kernel and import {newest.rsplit(' ', 1)[0]} (and run one GPU operation) before the "
                     "others, so its copy is the one loaded", True),
                 Fix("add-library-path", f"Make every consumer find the same {soname}",
                     f"put {os.path.dirname(found[newest][0] or '')} on LD_LIBRARY_PATH in the kernelspec \"env\", then "
                     "start the kernel fresh", True),
                 Fix("separate-kernels", "Run them in separate kernels",
                     "one environment and kernel per consumer whose cuDNN differs", True))))
            break  # one finding per major is enough: the rest follows the same first load
    return out


def __getattr__(name: str) -> object:
    """``CONSUMER_FIX_IDS``: the fix catalogue's advice-only fixes worded by these findings
    (``fixes.catalogue.FINDING_WORDED``), looked up on use."""
    if name == "CONSUMER_FIX_IDS":
        return FINDING_WORDED
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
