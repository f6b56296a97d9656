"""``%cudnn_check`` / ``cudnn-magic check``: run the probes, judge each framework, list findings.

:func:`run_check` reads the world (probes, which never raise) and hands the facts to
:func:`judge_report` (pure) for verdicts and findings. :func:`cached_report` serves the error
annotation: it re-probes only when the set of mapped ``libcudnn*`` files changed.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import threading
import time
from collections.abc import Iterable
from typing import Any

from ..fixes.pip_replay import found_by_name_advice, pip_fix_blocker
from ..model import (
    CudnnInUse,
    Driver,
    Finding,
    Fix,
    FrameworkBuild,
    Gpu,
    LibraryCopy,
    Preload,
    Report,
    Resolution,
    Severity,
    Unavailable,
    WheelOverwrite,
)
from ..probes import libnames
from ..probes.frameworks import probe_frameworks
from ..probes.installed import consumer_dirs, probe_installed, resolve
from ..probes.loaded import MappedState, bound_cudnn, mapped_cudnn_paths, probe_mapped
from ..probes.loader import default_dirs, environ_at_start, resolve_in_chain, search_steps
from ..probes.nvml import driver_and_gpus_within
from ..probes.owners import probe_overwritten_wheels
from ..probes.scope import check_scope, realpath
from ..probes.sublibraries import answering_version, file_version
from ..probes.subprocess_probe import deep_probe
from ..probes.toolkit import probe_toolkits
from ..rules.compat import RULES, judge
from ..rules.consumers import CONSUMER_CHECKERS
from ..rules.consumers import CONSUMER_FINDING_IDS as _CONSUMER_FINDING_IDS
from ..rules.cudnn_version import try_parse
from ..rules.folders import folder_findings
from ..rules.requirement import cudnn_requirement
from ..util import pyenv
from ..util.files import collect_skipped, regular_dist_version
from .consumer_check import check_consumers
from .deps import deep_error_findings, deep_soft_findings
from .framework_findings import (
    _shadow_fix,
    cpu_build_findings,
    driver_findings,
    env_wheel_shadowed,
    own_rule,
    served_by_another,
)
from .overwrites import canonical_name as _canonical_name
from .overwrites import overwrite_findings
from .overwrites import pinned_names as _pinned_names
from .overwrites import requirement as _requirement
from .replaced import replaced_findings

# Finding ids beside the diagnosis catalogue (diagnose.CATALOGUE); stable, listed in docs/ids.md.
FINDING_IDS = {
    "cudnn-version-mismatch": "a framework's rule rejects the cuDNN it has loaded or will load",
    "cudnn-library-not-found": "a CUDA build of a framework will find no cuDNN with the soname it asks for",
    "cudnn-shadowed": "a directory earlier in the loader's search hides the cuDNN a framework ships with",
    "cudnn-multiple-copies-loaded": "libcudnn files from more than one directory are mapped in this process",
    "cudnn-replaced-on-disk": "mapped cuDNN files were replaced or removed on disk since they were loaded (pip install -U)",
    "cudnn-wheel-overwritten": "two installed distributions list the same cuDNN files; the later install overwrote "
                               "the earlier one's (pip check says nothing)",
    "cudnn-sublibrary-load-failed": "sub-libraries of one directory have mixed versions, or one is missing",
    "cudnn-unusable-copy": "a file named like cuDNN that cannot be loaded (not ELF, unreadable, aborts)",
    "cuda-driver-too-old": "the driver is older than the CUDA runtime a framework was built with needs",
    "gpu-arch-unsupported": "a GPU's compute capability is outside what the cuDNN in use supports",
    "ld-library-path-changed-at-runtime": "os.environ['LD_LIBRARY_PATH'] differs from the value the loader read at start",
    "no-nvidia-driver": "NVML could not be loaded: no NVIDIA driver (GPU code will fall back to the CPU)",
    "onnxruntime-cpu-over-gpu": "the CPU onnxruntime wheel was installed over onnxruntime-gpu: ONNX Runtime has no CUDA "
                                "provider",
    "framework-cpu-build": "a framework is a CPU build (no CUDA, no cuDNN) on a machine with an NVIDIA GPU",
}
FINDING_IDS.update(_CONSUMER_FINDING_IDS)


def run_check(import_frameworks: bool = False, deep: bool = False, environ: dict[str, str] | None = None,
              frameworks: tuple[FrameworkBuild, ...] | None = None, mapped: Any = None) -> Report:
    """Probe this process and machine and return the judged :class:`Report`. Never raises:
    a probe that fails adds a note instead. ``elapsed_s`` is in seconds.

    ``frameworks`` judges these framework builds instead of probing the installed ones (a
    framework's native library built as a stand-in, or a build described by hand). Every file
    found on disk that a probe did not read because it is not a regular file (a FIFO named like a
    library, a ``RECORD``, a header) or is too large gets a note "skipped PATH: why".

    ``mapped`` (a :class:`~cudnn_magic.probes.loaded.MappedState`) is what another process mapped
    (:mod:`cudnn_magic.engines.process`, inside :func:`cudnn_magic.util.pyenv.checking`), used instead of
    probing this one; then nothing is read from this process's own memory."""

    with collect_skipped() as skipped, check_scope():
        report = _run_check(import_frameworks, deep, environ, frameworks, mapped)
    if not skipped:
        return report
    extra = tuple(f"skipped {p}: {why}" for p, why in sorted(skipped.items()))
    return dataclasses.replace(report, notes=tuple(report.notes) + extra)


def _run_check(import_frameworks: bool, deep: bool, environ: dict[str, str] | None,
               frameworks: tuple[FrameworkBuild, ...] | None, mapped: Any = None) -> Report:
    t0 = time.perf_counter()
    notes: list[str] = []

    runtime_ldp_change: tuple[str, str] | None = None
    if environ is None:
        # The loader uses LD_LIBRARY_PATH as it was at process start, not os.environ now.
        start = environ_at_start()
        environ = dict(os.environ)
        if start is not None:
            now_ldp, start_ldp = os.environ.get("LD_LIBRARY_PATH", ""), start.get("LD_LIBRARY_PATH", "")
            if now_ldp != start_ldp:
                runtime_ldp_change = (start_ldp, now_ldp)
            environ["LD_LIBRARY_PATH"] = start_ldp

    ldp = environ.get("LD_LIBRARY_PATH", "")
    mapped_state = mapped if mapped is not None else _safe(lambda: probe_mapped(ld_library_path=ldp),
                                                           MappedState(notes=["mapped-library probe failed"]))
    loaded = mapped_state.copies
    notes += mapped_state.notes
    judged_fws: list[FrameworkBuild] = list(frameworks) if frameworks is not None else []
    if frameworks is None:
        try:
            fws, fnotes = probe_frameworks(import_frameworks=import_frameworks)
            judged_fws, notes = list(fws), notes + list(fnotes)
            if import_frameworks:  # importing a framework may have mapped a cuDNN
                mapped_state = _safe(lambda: probe_mapped(ld_library_path=ldp), mapped_state)
                loaded = mapped_state.copies
        except ImportError:
            notes.append("framework probe not available in this build")
        except Exception as exc:  # noqa: BLE001
            notes.append(f"framework probe failed: {type(exc).__name__}: {exc}")

    # The folder of every mapped copy, and each framework's RPATH/RUNPATH folders, are listed
    # too: they may lie on no search path.
    extra: list[str | tuple[str, str]] = [c.directory for c in loaded]
    for fw in judged_fws:
        if fw.consumer_library:
            extra += consumer_dirs(fw.consumer_library)
    # A mapped copy replaced on disk since it was loaded (another inode at its path, or its file
    # deleted: ``replaced``) is not the file at its path now: that file is another copy on disk.
    mapped_real = {realpath(c.path) for c in loaded if not c.replaced}
    extra_dirs = tuple(dict.fromkeys(extra))
    # A framework library already loaded has bound its cuDNN calls: read where (its GOT).
    bindings: dict[str, dict[str, tuple[str, ...]]] = {}
    for fw in judged_fws:
        if fw.consumer_library and loaded and mapped is None:  # a GOT is read in this process only
            got = _safe(lambda lib=fw.consumer_library: bound_cudnn(lib), None)
            if got:
                bindings[fw.consumer_library] = got
    inv = _safe(lambda: probe_installed(environ=environ, mapped=mapped_real, extra_dirs=extra_dirs), None)
    installed: list[LibraryCopy] = list(inv.copies) if inv else []
    ldcache = inv.ldcache if inv else {}
    notes += inv.notes if inv else ["on-disk inventory failed"]
    overwrites, onotes = _safe(probe_overwritten_wheels, ((), ["overwritten-wheel check failed"]))
    notes += onotes

    driver: Driver | Unavailable | None
    gpus: tuple[Gpu, ...] = ()
    try:
        driver, gpus = driver_and_gpus_within()  # a hung driver never hangs the cell
    except ImportError:
        driver = Unavailable("NVML probe not available in this build")
    except Exception as exc:  # noqa: BLE001
        driver = Unavailable(f"NVML probe failed: {type(exc).__name__}: {exc}")

    # Every other cuDNN consumer of the environment (CTranslate2, PaddlePaddle, MXNet, TensorRT,
    # any library that NEEDs libcudnn*): judged rows, vendored copies, findings.
    consumer_report = None
    try:
        consumer_report = check_consumers(frameworks=judged_fws, loaded=tuple(loaded), installed=tuple(installed),
                                          environ=environ, ldcache=ldcache, gpus=bool(gpus))
        installed += consumer_report.copies
        loaded = tuple(consumer_report.with_owners(loaded))
        judged_fws += consumer_report.frameworks
        notes += consumer_report.notes
    except Exception as exc:  # noqa: BLE001
        notes.append(f"cuDNN consumer scan failed: {type(exc).__name__}: {exc}")

    deep_results = None
    deep_found: list[Finding] = []
    copy_notes: list[str] = []
    if deep:
        # each copy WITH its sub-libraries and their dependencies, in child processes
        # copies the version query already found broken are probed too: they are the crashers
        mains = [c.path for c in installed if c.is_main]
        deep_results = deep_probe(mains, env=environ)
        deep_found, copy_notes, deep_notes = deep_soft_findings(deep_results, {c.path: c for c in installed})
        notes += deep_notes

    report = judge_report(
        loaded=tuple(loaded), installed=tuple(installed), frameworks=tuple(judged_fws), driver=driver, gpus=gpus,
        ldcache=ldcache, environ=environ, notes=tuple(notes),
        deep_errors={p: r.error for p, r in (deep_results or {}).items() if r.error},
        in_use=mapped_state.in_use, overwrites=overwrites, bindings=bindings,
        folders=inv.present if inv else None, listed=inv.listed if inv else None,
    )
    if consumer_report is not None:
        report = dataclasses.replace(report, consumers=tuple(consumer_report.consumers),
                                     findings=report.findings + tuple(consumer_report.findings),
                                     resolutions=report.resolutions + tuple(consumer_report.resolutions))

    if deep_found or copy_notes:
        report = dataclasses.replace(report, findings=report.findings + tuple(deep_found), copy_notes=tuple(copy_notes))
    report = dataclasses.replace(report, cuda_toolkits=_safe(lambda: probe_toolkits(environ), ()))
    if runtime_ldp_change is not None:
        start_ldp, now_ldp = runtime_ldp_change
        report = dataclasses.replace(report, findings=(*report.findings, Finding(
            "ld-library-path-changed-at-runtime", "warning",
            "LD_LIBRARY_PATH was changed after this process started; the dynamic loader ignores the change",
            f"The loader read LD_LIBRARY_PATH={start_ldp or '(empty)'} at start; os.environ now says "
            f"{now_ldp or '(empty)'}. Copies are resolved with the start value, as dlopen does.",
            (Fix("remove-shadowing-dir", "Set LD_LIBRARY_PATH where the kernel is started",
                 "put the value in the kernelspec \"env\" (kernel.json) or the shell that starts Jupyter, then "
                 "restart the kernel", True),),
        )))
    return dataclasses.replace(report, elapsed_s=time.perf_counter() - t0)


def _safe(fn, default):  # type: ignore[no-untyped-def]
    try:
        return fn()
    except Exception:  # noqa: BLE001 - probes never raise into the cell
        return default


def judge_report(*, loaded: tuple[LibraryCopy, ...], installed: tuple[LibraryCopy, ...],
                 frameworks: tuple[FrameworkBuild, ...], driver: Driver | Unavailable | None, gpus: tuple[Gpu, ...],
                 ldcache: dict[str, list[str]] | None = None, environ: dict[str, str] | None = None,
                 notes: tuple[str, ...] = (), deep_errors: dict[str, str] | None = None,
                 in_use: tuple[CudnnInUse, ...] | None = None,
                 overwrites: tuple[WheelOverwrite, ...] = (),
                 bindings: dict[str, dict[str, tuple[str, ...]]] | None = None,
                 folders: dict[str, tuple[tuple[str, str], ...]] | None = None,
                 listed: dict[str, tuple[str, tuple[str, ...]]] | None = None, files_on_disk: bool = True) -> Report:
    """Verdicts per framework and findings, from facts already gathered (no probing here
    except reading ELF RPATH/RUNPATHs for loader resolution).

    Args:
        loaded: the mapped copies (load order), each with its own file's version.
        installed: the copies on disk (including the folders of mapped copies).
        in_use: the copy in use per soname (:func:`cudnn_magic.probes.loaded.probe_mapped`);
            None derives it from ``loaded`` alone: the first main library loaded per soname.
        overwrites: files two installed distributions both list
            (:func:`cudnn_magic.probes.owners.probe_overwritten_wheels`).
        bindings: for framework libraries already loaded, where their cuDNN calls are bound
            now, ``{consumer library: {file: symbols}}``
            (:func:`cudnn_magic.probes.loaded.bound_cudnn`); a library bound before another
            copy arrived keeps its copy, whatever a new library would bind to.
        folders: folder -> (name, real path) of the cuDNN files on disk there, and ``listed``:
            folder -> (owner, names its wheel's RECORD lists there) (the inventory's
            ``present``/``listed``), to judge each folder as one release per major.
        files_on_disk: the copies' files are the ones on disk, so the release that answers a
            picked main library's version call is read from them
            (:func:`cudnn_magic.probes.sublibraries.answering_version`); False for the what-if's
            predicted environment, whose files pip has not written yet (``installed`` says what they will be).
    """

    findings: list[Finding] = []
    by_path = {c.path: c for c in installed}
    for c in loaded:
        by_path[realpath(c.path)] = c  # a mapped row carries what this process adds (reached version)
    if in_use is None:
        in_use = _first_loaded_in_use(loaded, (environ or os.environ).get("LD_LIBRARY_PATH", ""))
    ctx = _Ctx(by_path=by_path, installed=installed, environ=environ, ldcache=ldcache or {}, gpus=gpus,
               in_use={u.soname: u for u in in_use}, resolve=resolve, bindings=dict(bindings or {}),
               answering=answering_version if files_on_disk else None, mapped=tuple(c.path for c in loaded))
    resolutions: list[Resolution] = []
    judged: list[FrameworkBuild] = []
    for fw in frameworks:
        fw, res, fnds = _judge_framework(fw, ctx)
        judged.append(fw)
        if res is not None:
            resolutions.append(res)
        findings += list(fw.problems) + fnds
    judged, findings = served_by_another(judged, findings)

    findings += replaced_findings(loaded) + _multiple_copies_findings(loaded, in_use)
    findings += _sublibrary_findings(loaded, installed, folders, listed, environ, ldcache)
    findings += overwrite_findings(overwrites, judged, ctx.own_dirs)
    for c in installed:
        if c.error:
            findings.append(Finding(
                "cudnn-unusable-copy", "warning", f"{c.path} cannot be used",
                f"{c.error}. Found via {c.source}; if the loader picks it, the framework fails to load cuDNN.",
                (Fix("remove-shadowing-dir", f"Remove {c.path} or its directory from the search path",
                     f"rm {c.path}   # or take {c.directory} out of LD_LIBRARY_PATH", False),),
            ))
    sites = pyenv.purelib_dirs()
    start_env = dict(environ if environ is not None else (environ_at_start() or os.environ))
    findings += deep_error_findings(deep_errors or {}, by_path, start_env, sorted(sites))
    findings += driver_findings(driver, gpus, judged, loaded)
    findings += cpu_build_findings(judged, gpus, driver, sys.platform)
    # an older copy on LD_LIBRARY_PATH that hides this environment's own wheel, with no framework to
    # say it: mapped already, or what a plain load by name would get
    findings += env_wheel_shadowed(installed, findings, resolve, environ, ldcache, sites, in_use)
    mapped_sonames = {u.soname for u in in_use}
    by_name = tuple(resolve(so, "a program that loads it by name", None, environ=environ, ldcache=ldcache)
                    for so in sorted({c.soname for c in installed if c.is_main and c.soname}, reverse=True)
                    if so not in mapped_sonames)
    return Report(
        cudnn_loaded=tuple(sorted(loaded, key=lambda c: (not c.is_main, c.load_order if c.load_order is not None else 1 << 30,
                                                          c.directory, c.name))),
        cudnn_installed=installed, frameworks=tuple(judged), resolutions=tuple(resolutions), driver=driver,
        gpus=gpus, findings=tuple(findings), notes=notes, platform=sys.platform,
        cudnn_in_use=in_use[0] if in_use else None, cudnn_in_use_by_soname=tuple(in_use),
        wheels_overwritten=tuple(overwrites), cudnn_by_name=by_name,
    )


@dataclasses.dataclass
class _Ctx:
    by_path: dict[str, LibraryCopy]
    installed: tuple[LibraryCopy, ...]
    environ: dict[str, str] | None
    ldcache: dict[str, list[str]]
    gpus: tuple[Gpu, ...]
    in_use: dict[str, CudnnInUse]
    resolve: Any
    own_dirs: dict[str, str] = dataclasses.field(default_factory=dict)  # framework name -> its own copy's folder
    bindings: dict[str, dict[str, tuple[str, ...]]] = dataclasses.field(default_factory=dict)
    answering: Any = None  # probes.sublibraries.answering_version: the release a picked main library runs
    mapped: tuple[str, ...] = ()  # the cuDNN files mapped in this process (a mapped graph library serves a new shim)


def _first_loaded_in_use(loaded: Iterable[LibraryCopy], ld_library_path: str) -> tuple[CudnnInUse, ...]:
    """Without the in-process measurement: the first main library loaded per soname (glibc
    reuses it when nothing is in the global scope)."""
    out: list[CudnnInUse] = []
    mains = sorted((c for c in loaded if c.is_main), key=lambda c: c.load_order if c.load_order is not None else 1 << 30)
    for so in dict.fromkeys(c.soname for c in mains):
        c = next(m for m in mains if m.soname == so)
        entry = next((e for e in ld_library_path.split(":") if e and realpath(e) == realpath(c.directory)), None)
        out.append(CudnnInUse(c.path, c.version, f"it is the first {so} mapped (no in-process measurement)", so,
                              c.reached_version, c.bound_to, entry))
    return tuple(out)


def _dist_of(owner: str) -> tuple[str, str] | None:
    if owner.startswith("pip: "):
        bits = owner.split()
        if len(bits) == 3:
            return _canonical_name(bits[1]), bits[2]
    return None


def _own_copy(fw: FrameworkBuild, soname: str, ctx: _Ctx) -> LibraryCopy | None:
    """The copy ``fw`` ships with or points to: the hit of its library's RPATH/RUNPATH (with
    nothing on LD_LIBRARY_PATH and nothing mapped), else the copy on disk whose files belong
    (by RECORD hash) to the cuDNN distribution it pins."""
    if fw.consumer_library:
        r = ctx.resolve(soname, fw.name, fw.consumer_library, environ={"LD_LIBRARY_PATH": ""}, ldcache={})
        if r.picked and r.reason.startswith(("RPATH", "RUNPATH")):
            return ctx.by_path.get(r.picked) or ctx.by_path.get(realpath(r.picked)) or LibraryCopy(
                r.picked, os.path.basename(r.picked), soname, source=r.reason)
    pinned = {n for n in _pinned_names(fw) if n.startswith("nvidia-cudnn")}
    for c in ctx.installed:
        d = _dist_of(c.owner)
        if c.is_main and c.soname == soname and d and d[0] in pinned:
            return c
    return None


def _where(path: str, entry: str | None, owner: str | None) -> str:
    if entry:
        return f"LD_LIBRARY_PATH entry {entry}"
    return f"{os.path.dirname(path)}" + (f" ({owner})" if owner and owner != "system" else "")


def _judge_framework(fw: FrameworkBuild, ctx: _Ctx):  # type: ignore[no-untyped-def]
    if fw.checker in CONSUMER_CHECKERS:  # judged by consumer_check with its own loader model
        return fw, None, []
    rule = RULES.get(fw.checker, RULES["nvidia"])
    if fw.own_rule:
        rule = fw.own_rule + "; " + rule
    if not fw.cudnn_compiled and not fw.cudnn_soname:
        detail = fw.detail or "not a CUDA build with cuDNN: nothing to check"
        return dataclasses.replace(fw, verdict="not-applicable", rule=rule, detail=detail), None, []
    src = try_parse(fw.cudnn_compiled) if fw.cudnn_compiled else None
    soname = fw.cudnn_soname or (f"libcudnn.so.{src.major}" if src else None)
    if soname is None:
        return dataclasses.replace(fw, verdict="unknown", rule=rule, detail="compiled-against cuDNN not known"), None, []
    search = ctx.resolve(soname, fw.name, fw.consumer_library, environ=ctx.environ, ldcache=ctx.ldcache,
                         preloads=fw.preloads)
    own = _own_copy(fw, soname, ctx)
    if own is not None:
        ctx.own_dirs[fw.name] = own.directory
    pick = _pick(fw, soname, search, own, ctx)
    res, iu, used, runtime, how, entry, mapped = pick.res, pick.in_use, pick.used, pick.runtime, pick.how, pick.entry, pick.mapped
    split = pick.split
    preload = _preload_of(fw, picked_path=iu.path if iu is not None else res.picked)
    findings: list[Finding] = []
    if runtime is None and used is None and iu is None:
        return _not_found(fw, soname, rule, res, ctx)
    j = judge(fw.checker, runtime, fw.cudnn_compiled)  # type: ignore[arg-type]
    j = own_rule(fw, j, runtime, ctx.environ, ctx.gpus)
    verdict = j.verdict
    detail = f"{j.detail} ({how})." + split
    picked_path = iu.path if iu is not None else res.picked
    fw2 = dataclasses.replace(fw, cudnn_soname=soname, cudnn_used=runtime, cudnn_used_path=picked_path,
                              verdict=verdict, rule=j.rule, detail=detail)
    own_ok = bool(own is not None and own.version  # a framework row's checker is one of rules.compat's
                  and judge(fw.checker, own.version, fw.cudnn_compiled).ok)  # type: ignore[arg-type]
    other_won = own is not None and picked_path is not None and realpath(picked_path) != realpath(own.path)
    cause = ""
    fixes: list[Fix] = []
    if other_won and own is not None and own.version != runtime:
        where = _where(picked_path or "", entry, used.owner if used else None)
        # Mapped, and the loader's own search picks that same copy: it was found by search order
        # (LD_LIBRARY_PATH before a RUNPATH), not because something else loaded it first.
        by_search = bool(mapped and search.picked and realpath(search.picked) == realpath(picked_path or ""))
        if preload is not None:
            cause = (f"cuDNN {runtime} from {os.path.dirname(preload.path)} is "
                     f"{'the copy mapped' if mapped else 'what it will load'}: {preload.why}, before "
                     f"{os.path.basename(fw.consumer_library or '') or fw.name}'s own lookup; {fw.name}'s own "
                     f"{own.version or '?'} ({own.path}" + (f", {own.owner}" if own.owner != "system" else "") + ")"
                     + (" would satisfy it." if own_ok else " would not satisfy it either."))
        elif mapped and by_search:
            cause = (f"cuDNN {runtime} from {where} is the copy mapped: the loader searches {search.reason.split(' entry')[0]} "
                     f"before the RUNPATH of {os.path.basename(fw.consumer_library or '') or fw.name}, so it "
                     f"took that one; {fw.name}'s own {own.version or '?'} ({own.path}"
                     + (f", {own.owner}" if own.owner != "system" else "") + ")"
                     + (" would satisfy it." if own_ok else " would not satisfy it either."))
        elif mapped:
            cause = (f"cuDNN {runtime} from {where} was loaded into this process first, and glibc binds every later "
                     f"{soname} user to it; {fw.name}'s own {own.version or '?'} ({own.path}"
                     + (f", {own.owner}" if own.owner != "system" else "") + ")"
                     + (" would satisfy it." if own_ok else " would not satisfy it either."))
        else:
            order = ("LD_LIBRARY_PATH is searched before a RUNPATH" if entry and own.source.startswith("RUNPATH")
                     else "it comes first in the loader's search")
            cause = (f"cuDNN {runtime} from {where} is what the loader will find first ({order}); {fw.name}'s own "
                     f"{own.version or '?'} ({own.path}" + (f", {own.owner}" if own.owner != "system" else "") + ")"
                     + (" would satisfy it." if own_ok else " would not satisfy it either."))
        if own_ok and preload is not None:
            fixes += _sys_path_fixes(preload, own.directory, fw, ctx)
        elif own_ok:
            if entry:
                fixes.append(_shadow_fix(entry, own.directory))
            if mapped and not by_search:  # another load came first: the order of loads is the cause
                fixes.append(Fix("restart-kernel", "Restart the kernel so no cuDNN is mapped yet",
                                 "restart, then let the framework load its own cuDNN first (after the change above, or "
                                 "by importing it before anything else that loads cuDNN)", True, True))
                fixes.append(Fix("import-order", f"Import {fw.name} before whatever loads the other cuDNN",
                                 f"in a fresh kernel, import {fw.name} first so its own cuDNN {own.version} is the first "
                                 f"{soname} loaded", True, False, "a change to your code"))
        if preload is not None and not mapped:
            findings.append(Finding(
                "cudnn-shadowed", "warning" if verdict == "ok" else "error",
                f"sys.path entry {_sys_path_entry(preload)} shadows the cuDNN {own.version} that {fw.name} ships with",
                cause, _sys_path_fixes(preload, own.directory, fw, ctx) if own_ok else (),
            ))
        elif not mapped and entry:
            findings.append(Finding(
                "cudnn-shadowed", "warning" if verdict == "ok" else "error",
                f"LD_LIBRARY_PATH entry {entry} shadows the cuDNN {own.version} that {fw.name} ships with",
                cause, (_shadow_fix(entry, own.directory),) if own_ok else (),
            ))
    if verdict == "mismatch":
        if not (other_won and own_ok):
            inst = _install_fix(fw, ctx)
            if inst is not None and inst.applicable:
                fixes.append(inst)
            elif inst is not None:  # a satisfying cuDNN is installed, yet another copy is in use
                cause = (cause + " " if cause else "") + inst.reason.replace(": pip would change nothing", "") + (
                    f", but cuDNN {runtime} is the one in use." if runtime else ".")
                if mapped:
                    fixes += [Fix("restart-kernel", "Restart the kernel so no cuDNN is mapped yet",
                                  "restart, then import this framework before anything else that loads cuDNN", True, True),
                              Fix("import-order", f"Import {fw.name} first", f"in a fresh kernel, import {fw.name} first",
                                  True, False, "a change to your code")]
                if entry:
                    fixes.insert(0, _shadow_fix(entry))
        title = (f"{fw.name} {fw.version} was built with cuDNN {fw.cudnn_compiled}, but "
                 f"{'loads' if how.startswith(('mapped', 'reported')) else 'will load'} {runtime}")
        findings.append(Finding("cudnn-version-mismatch", "error", title,
                                j.detail + "." + (" " + cause if cause else "") + f" Rule: {j.rule}.", tuple(fixes)))
        fw2 = dataclasses.replace(fw2, detail=detail + (" " + cause if cause else ""))
    return fw2, res, findings


@dataclasses.dataclass(frozen=True)
class _Pick:
    """The copy a framework gets for ``soname``, and how that is known: ``in_use`` when one is
    mapped already (``mapped`` True: reported by the framework, bound in its GOT, or glibc reuses
    the first loaded), else the loader's search ``res``; ``used`` the copy's row, ``runtime`` the
    release it runs, ``how`` the words for the report, ``entry`` the LD_LIBRARY_PATH entry it lies
    in, ``split`` a sentence when its calls are bound into several copies."""

    res: Resolution
    in_use: CudnnInUse | None
    used: LibraryCopy | None
    runtime: str | None
    how: str
    entry: str | None
    mapped: bool
    split: str = ""


def _pick(fw: FrameworkBuild, soname: str, search: Resolution, own: LibraryCopy | None, ctx: _Ctx) -> _Pick:
    """The copy ``fw`` gets for ``soname``: the one its calls are bound to or glibc reuses, else
    the loader's ``search`` (with the release the picked shim's graph library answers)."""
    iu = ctx.in_use.get(soname)
    entry: str | None = None
    bound = {f: syms for f, syms in ctx.bindings.get(fw.consumer_library or "", {}).items()
             if libnames.is_main(os.path.basename(f))}
    split = ""
    if bound:
        # Measured: this library's cuDNN calls are bound already (GOT); that is its copy.
        ranked = sorted(bound.items(), key=lambda kv: -len(kv[1]))
        path0 = ranked[0][0]
        c0 = ctx.by_path.get(path0)
        entry = next((e for e in (ctx.environ or {}).get("LD_LIBRARY_PATH", "").split(":")
                      if e and realpath(e) == os.path.dirname(path0)), None)
        if len(ranked) > 1:
            split = (" Its cuDNN calls are split between copies: " + "; ".join(
                f"{len(syms)} bound to {f}" for f, syms in ranked) + ".")
        iu = CudnnInUse(path0, c0.version if c0 else None,
                        f"bound in this process: {os.path.basename(fw.consumer_library or '')}'s "
                        f"{', '.join(ranked[0][1][:3])} GOT entries point into it", soname,
                        c0.reached_version if c0 else None, c0.bound_to if c0 else (), entry)
    if iu is not None:
        used = ctx.by_path.get(iu.path)
        runtime = fw.cudnn_runtime or iu.reached_version or iu.version
        scope = ("in the global scope" if iu.why.startswith("dlvsym") else
                 "its cuDNN calls are bound there, read from its GOT" if iu.why.startswith("bound in this process") else
                 f"the first {soname} loaded")
        entry = iu.ld_library_path_entry
        hidden = tuple(dict.fromkeys(p for p in ((own.path if own else None), search.picked) if p and p != iu.path))
        res = Resolution(fw.name, fw.consumer_library, soname, iu.path,
                         f"already mapped in this process: {scope}"
                         + (f"; from LD_LIBRARY_PATH entry {entry}" if entry else ""), hidden)
        how = "reported by the framework" if fw.cudnn_runtime else "mapped in this process"
        mapped = True
    else:
        res = search
        used = ctx.by_path.get(res.picked) if res.picked else None
        if used is None and res.picked:
            used = ctx.by_path.get(realpath(res.picked))
        ans_v, ans_path = (None, None)
        if res.picked and ctx.answering is not None:
            chain = [] if res.reason.startswith("preloaded") or not fw.consumer_library else [fw.consumer_library]
            ans_v, ans_path = ctx.answering(res.opened or res.picked, chain, consumer=fw.name, environ=ctx.environ,
                                            ldcache=ctx.ldcache, mapped=ctx.mapped)
        runtime = fw.cudnn_runtime or ans_v or (used.version if used else None)
        how = "reported by the framework" if fw.cudnn_runtime else f"the loader will pick it ({res.reason})"
        if not fw.cudnn_runtime and ans_v and used is not None and used.version and ans_v != used.version:
            how += (f"; that {os.path.basename(res.picked or '')} is {used.version}'s, but the "
                    f"{os.path.basename(ans_path or '')} it opens ({ans_path}) is {ans_v}'s and answers its calls")
        if res.reason.startswith("LD_LIBRARY_PATH entry "):
            entry = res.reason[len("LD_LIBRARY_PATH entry "):]
        mapped = False
    return _Pick(res, iu, used, runtime, how, entry, mapped, split)


def _not_found(fw: FrameworkBuild, soname: str, rule: str, res: Resolution, ctx: _Ctx
               ) -> tuple[FrameworkBuild, Resolution, list[Finding]]:
    """``fw`` asks for ``soname`` and the loader finds none: an error with a GPU (its GPU code
    will not run), and the pip fix only where it would help (else why not, and what would)."""
    findings: list[Finding] = []
    sev: Severity = "error" if ctx.gpus else "warning"
    fix = _install_fix(fw, ctx)
    detail = (f"{fw.name} {fw.version} asks for {soname}, and the loader's search finds none (LD_LIBRARY_PATH, "
              f"{'its RUNPATH, ' if fw.consumer_library else ''}ld.so cache, default dirs). Its GPU code will not run.")
    fixes = [fix] if fix and fix.applicable else []
    if fix is not None and not fix.applicable and "pip would change nothing" not in fix.reason:
        # the pip fix alone would not help (nothing looks in the wheel's folder): say why, and what does
        detail += f" Installing the cuDNN wheel alone would not help: {fix.reason}."
        adv = _found_by_name(fw, fix)
        if adv:
            fixes.append(Fix("add-library-path", adv[0], adv[1], True, False, "advice: a change to the environment"))
    findings.append(Finding("cudnn-library-not-found", sev, f"{fw.name} will find no {soname}", detail, tuple(fixes)))
    return dataclasses.replace(fw, cudnn_soname=soname, verdict="mismatch" if ctx.gpus else "unknown", rule=rule,
                               detail=detail), res, findings


def _preload_of(fw: FrameworkBuild, picked_path: str | None) -> Preload | None:
    """The preload of ``fw`` (its own code loads it by path) that is the copy it gets."""
    if not picked_path:
        return None
    real = realpath(picked_path)
    return next((p for p in fw.preloads if realpath(p.path) == real), None)


def _sys_path_entry(preload: Preload) -> str:
    """The ``sys.path`` entry a preload was found in, else its folder."""
    return preload.sys_path_entry or os.path.dirname(preload.path)


def _sys_path_fix(preload: Preload, own_dir: str | None = None) -> Fix:
    entry = _sys_path_entry(preload)
    return Fix("remove-sys-path-dir", f"Take {entry} off sys.path",
               f"Remove {entry} from sys.path where the kernel starts: PYTHONPATH in the kernelspec \"env\" (kernel.json) "
               "or the shell that starts Jupyter, or the .pth file that adds it; then start the kernel fresh"
               + (f". PyTorch then preloads its own copy in {own_dir}" if own_dir else "") + ".", True, False,
               "advice only: where sys.path comes from is outside this kernel")


def _sys_path_fixes(preload: Preload, own_dir: str | None, fw: FrameworkBuild, ctx: _Ctx | None) -> tuple[Fix, ...]:
    """The fix for a preload found on a ``sys.path`` entry: when the entry is this environment's own
    site-packages (``sysconfig`` purelib/platlib), the copy there is a wheel pip manages, so the pip
    fix that upgrades it in place (taking site-packages off ``sys.path`` is no fix); else taking the
    entry off ``sys.path``."""
    entry = realpath(_sys_path_entry(preload))
    own_sites = pyenv.purelib_dirs()
    if entry in own_sites:
        inst = _install_fix(fw, ctx)
        return (inst,) if inst is not None else ()
    return (_sys_path_fix(preload, own_dir),)


def _pip_sees(dist: str) -> str | None:
    """The version of ``dist`` pip sees for this interpreter: the first ``.dist-info`` of that
    name on ``sys.path`` (importlib.metadata, as pip's own environment model reads it)."""

    return regular_dist_version(dist)  # None: not installed, or unreadable (a FIFO) metadata


def _install_fix(fw: FrameworkBuild, ctx: _Ctx | None = None) -> Fix | None:
    """The pip fix for ``fw``; not applicable (with the reason) when a distribution whose files
    are on disk already satisfies the requirement, since pip would change nothing then."""

    req = cudnn_requirement(fw)
    if req is None:
        return None
    fix = Fix("install-matching-cudnn", f"Install {req}", f"{pyenv.executable()} -m pip install '{req}'",
              restart_required=True, applicable=True)
    r = _requirement(req)
    if r is None:
        return fix
    seen = _pip_sees(r.name)  # a copy of the name further down sys.path is not the one pip would replace
    for c in (ctx.installed if ctx else ()):
        d = _dist_of(c.owner)
        if d and d[0] == _canonical_name(r.name) and r.specifier.contains(d[1], prereleases=True) \
                and (seen is None or seen == d[1]):
            return dataclasses.replace(fix, applicable=False, reason=(
                f"{d[0]} {d[1]} is installed (its files are in {c.directory}) and satisfies {req}: pip would change "
                "nothing"))
    blocker = _pip_blocker(fw, req, ctx)
    if blocker:
        return dataclasses.replace(fix, applicable=False, reason=blocker)
    return fix


def _found_by_name(fw: FrameworkBuild, fix: Fix) -> tuple[str, str] | None:

    req = fix.title[len("Install "):] if fix.title.startswith("Install ") else ""
    return found_by_name_advice(fw, req, pyenv.purelib()) if req else None


def _pip_blocker(fw: FrameworkBuild, req: str, ctx: _Ctx | None) -> str | None:
    """Why installing ``req`` would not change ``fw``'s finding (:mod:`cudnn_magic.fixes.pip_replay`:
    it overwrites another family's files, or lands where ``fw``'s loader never looks)."""

    try:
        soname = fw.cudnn_soname or ""
        dirs = [st.directory for st in search_steps(fw.consumer_library, [], environ=ctx.environ if ctx else None)] \
            if fw.consumer_library else []
        dirs += [os.path.dirname(p) for p in (ctx.ldcache.get(soname, []) if ctx else [])] + list(default_dirs())
        return pip_fix_blocker(fw, req, ctx.installed if ctx else (), purelib=pyenv.purelib(),
                               search_dirs=dirs if fw.consumer_library else None)
    except Exception:  # a probe that cannot tell leaves the fix as it was
        import logging  # start-up cost: only when the replay fails

        logging.getLogger("cudnn_magic").debug("the pip fix replay failed", exc_info=True)
        return None


def _multiple_copies_findings(loaded: Iterable[LibraryCopy], in_use: tuple[CudnnInUse, ...]) -> list[Finding]:
    loaded = list(loaded)
    mains = sorted((c for c in loaded if c.is_main), key=lambda c: c.load_order if c.load_order is not None else 1 << 30)
    dirs = list(dict.fromkeys(c.directory for c in mains))
    if len(dirs) == 1:
        # one main library, but sub-libraries of its major mapped from other folders (a folder of
        # soname links into two releases, or a sub-library the loader found elsewhere)
        majors = {c.soname.rsplit(".", 1)[-1] for c in mains}
        others = [c for c in loaded if not c.is_main and c.directory not in dirs and c.soname.rsplit(".", 1)[-1] in majors]
        if not others:
            return []
        m = mains[0]
        parts = [f"{m.name} from {m.directory} (cuDNN {m.version or '?'})"] + [
            f"{c.name} from {c.directory} (cuDNN {c.version or '?'})" for c in others]
        detail = ("Files of one cuDNN are mapped from different folders: " + "; ".join(parts) + ". The main library "
                  "opens its sub-libraries by soname, and the loader took these from another folder (a folder of "
                  "symbolic links into two releases, or one without its own sub-libraries): calls run the release of "
                  "the sub-libraries, and sub-libraries of different releases refuse each other.")
        return [Finding("cudnn-multiple-copies-loaded", "warning",
                        f"cuDNN files are mapped from {1 + len({c.directory for c in others})} directories in this process",
                        detail, (Fix("reinstall-cudnn", "Use one complete cuDNN folder",
                                     f"make {m.directory} hold one release's complete set (reinstall the package that "
                                     f"owns it{f' ({m.owner})' if m.owner != 'system' else ''}), or take the other "
                                     "folder off the loader's path", True),))]
    if len(dirs) < 2:
        return []
    parts = []
    for d in dirs:
        c = next(m for m in mains if m.directory == d)
        reach = (f"; its calls reach {c.reached_version}" if c.reached_version and c.reached_version != c.version else "")
        parts.append(f"{d} (cuDNN {c.version or '?'}{reach})")
    detail = (f"Copies from {', '.join(parts)} are mapped (in load order). A cuDNN 9 libcudnn.so.9 is a shim that opens "
              "libcudnn_graph.so.9 by soname, and glibc hands it the one loaded first, so calls through a later copy "
              "reach the first copy's sub-libraries.")
    fixes: list[Fix] = []
    if in_use:
        iu = in_use[0]
        detail += f" In use: {iu.path} (cuDNN {iu.version or '?'}): {iu.why}."
        if iu.ld_library_path_entry:
            fixes.append(_shadow_fix(iu.ld_library_path_entry))
    fixes.append(Fix("restart-kernel", "Restart the kernel to unload every copy",
                     "restart the kernel; then only what the next imports load is mapped", True, True))
    fixes.append(Fix("import-order", "Import the framework whose cuDNN you need first, or use one cuDNN wheel for all",
                     "Restart the kernel and import the framework with the newest cuDNN requirement first.", True, False,
                     "a change to your code"))
    return [Finding("cudnn-multiple-copies-loaded", "warning", f"cuDNN is mapped from {len(dirs)} directories in this process",
                    detail, tuple(fixes))]


def _sublibrary_findings(loaded: Iterable[LibraryCopy], installed: Iterable[LibraryCopy],
                         folders: dict[str, tuple[tuple[str, str], ...]] | None = None,
                         listed: dict[str, tuple[str, tuple[str, ...]]] | None = None,
                         environ: dict[str, str] | None = None, ldcache: dict[str, list[str]] | None = None
                         ) -> list[Finding]:
    """Completeness and mixed releases of each folder, per cuDNN major, judged from its own files
    on disk (:func:`cudnn_magic.rules.folders.folder_findings`; the inventory lists the folder of
    every mapped copy too): each file's own version, never the version an in-process call
    answered. ``folders``/``listed``: the inventory's ``present`` and ``listed``."""

    installed = list(installed)
    have = {c.path for c in installed}
    copies = installed + [c for c in loaded if c.path not in have]
    present = dict(folders or {})
    for c in copies:  # a folder the inventory could not list: what is on disk there now
        d = c.found_in or c.directory
        if d not in present:
            try:
                names = sorted(n for n in os.listdir(d) if libnames.is_cudnn_name(n))
            except OSError:
                names = []
            present[d] = tuple((n, realpath(os.path.join(d, n))) for n in names)
    # a shim with no graph library beside it: where the loader model says it finds one instead
    elsewhere: dict[str, tuple[str, str, str | None]] = {}
    for c in copies:
        d = c.found_in or c.directory
        if c.is_main and c.soname == "libcudnn.so.9" \
                and not any(n.startswith("libcudnn_graph.so.9") for n, _ in present.get(d, ())):
            shim = os.path.join(d, c.name) if c.found_in else c.path
            r = resolve_in_chain("libcudnn_graph.so.9", "", shim, [], environ=environ, ldcache=ldcache)
            if r.picked:
                elsewhere[c.path] = (r.picked, r.reason, file_version(r.picked))
    return folder_findings(copies, listed=listed, present=present, graph_elsewhere=elsewhere)


# --------------------------------------------------------------------------- cached report

_cache_lock = threading.Lock()
_cache: tuple[tuple[str, ...], Report] | None = None


def cached_report() -> Report | None:
    """The last report, re-probed when the set of mapped ``libcudnn*`` files changed (one read
    of ``/proc/self/maps``, about a millisecond). For the error annotation. Never raises."""
    global _cache
    try:
        key = tuple(mapped_cudnn_paths()[0])
        with _cache_lock:
            if _cache is not None and _cache[0] == key:
                return _cache[1]
        report = run_check()
        with _cache_lock:
            _cache = (key, report)
        return report
    except Exception:  # noqa: BLE001
        return None
