"""``%cudnn_check`` / ``cudnn-magic check``: run the probes, judge each framework, list findings.

:func:`run_check` reads the world (probes, which never raise) and hands the facts to
:func:`judge_report` (pure) for verdicts and findings. :func:`cached_report` serves the error
annotation: it re-probes only when the set of mapped ``libcudnn*`` files changed.
"""

from __future__ import annotations

import dataclasses
import os
import re
import sys
import threading
import time
from typing import Iterable

from .model import Driver, Finding, Fix, FrameworkBuild, Gpu, LibraryCopy, Report, Resolution, Unavailable
from .versions import (
    cudnn_compute_capability_range,
    driver_at_least,
    driver_floor,
    judge,
    try_parse,
)

# Finding ids beyond the diagnosis catalogue (spec/diagnoses.md); stable, listed in the README.
FINDING_IDS = {
    "cudnn-version-mismatch": "a framework's rule rejects the cuDNN it has loaded or will load",
    "cudnn-library-not-found": "a CUDA build of a framework will find no cuDNN with the soname it asks for",
    "cudnn-shadowed": "a directory earlier in the loader's search hides the cuDNN a framework ships with",
    "cudnn-multiple-copies-loaded": "libcudnn files from more than one directory are mapped in this process",
    "cudnn-sublibrary-load-failed": "sub-libraries of one directory have mixed versions, or one is missing",
    "cudnn-unusable-copy": "a file named like cuDNN that cannot be loaded (not ELF, unreadable, aborts)",
    "cuda-driver-too-old": "the driver is older than the CUDA runtime a framework was built with needs",
    "gpu-arch-unsupported": "a GPU's compute capability is outside what the cuDNN in use supports",
    "ld-library-path-changed-at-runtime": "os.environ['LD_LIBRARY_PATH'] differs from the value the loader read at start",
    "no-nvidia-driver": "NVML could not be loaded: no NVIDIA driver (GPU code will fall back to the CPU)",
}


def run_check(import_frameworks: bool = False, deep: bool = False, environ: dict[str, str] | None = None) -> Report:
    """Probe this process and machine and return the judged :class:`Report`. Never raises:
    a probe that fails adds a note instead. ``elapsed_s`` is in seconds."""
    t0 = time.perf_counter()
    notes: list[str] = []
    from .probes.installed import environ_at_start, probe_installed
    from .probes.loaded import probe_loaded

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

    loaded, n = _safe(probe_loaded, ((), ["mapped-library probe failed"]))
    notes += n
    mapped_real = {os.path.realpath(c.path) for c in loaded}
    inv = _safe(lambda: probe_installed(environ=environ, mapped=mapped_real), None)
    installed: list[LibraryCopy] = list(inv.copies) if inv else []
    ldcache = inv.ldcache if inv else {}
    notes += inv.notes if inv else ["on-disk inventory failed"]

    frameworks: list[FrameworkBuild] = []
    try:
        from .probes.frameworks import probe_frameworks

        fws, fnotes = probe_frameworks(import_frameworks=import_frameworks)
        frameworks, notes = list(fws), notes + list(fnotes)
        if import_frameworks:  # importing a framework may have mapped a cuDNN
            loaded, _ = _safe(probe_loaded, ((), []))
    except ImportError:
        notes.append("framework probe not available in this build")
    except Exception as exc:  # noqa: BLE001
        notes.append(f"framework probe failed: {type(exc).__name__}: {exc}")

    driver: Driver | Unavailable | None
    gpus: tuple[Gpu, ...] = ()
    try:
        from .probes.nvml import driver_and_gpus

        driver, gpus = driver_and_gpus()
    except ImportError:
        driver = Unavailable("NVML probe not available in this build")
    except Exception as exc:  # noqa: BLE001
        driver = Unavailable(f"NVML probe failed: {type(exc).__name__}: {exc}")

    deep_results = None
    if deep:
        # each copy WITH its sub-libraries and their dependencies, in child processes
        from .probes.subprocess_probe import deep_probe

        # copies the version query already found broken are probed too: they are the crashers
        mains = [c.path for c in installed if c.is_main]
        deep_results = deep_probe(mains, env=environ)
        for p, r in deep_results.items():
            soft = [f"{q.library}: {q.reason}" for q in r.problems if q.severity != "error"]
            if soft:
                notes.append(f"deep probe of {p}: " + "; ".join(soft))

    report = judge_report(
        loaded=tuple(loaded), installed=tuple(installed), frameworks=tuple(frameworks), driver=driver, gpus=gpus,
        ldcache=ldcache, environ=environ, notes=tuple(notes), deep_errors={p: r.error for p, r in (deep_results or {}).items() if r.error},
    )
    if runtime_ldp_change is not None:
        start_ldp, now_ldp = runtime_ldp_change
        report = dataclasses.replace(report, findings=report.findings + (Finding(
            "ld-library-path-changed-at-runtime", "warning",
            "LD_LIBRARY_PATH was changed after this process started; the dynamic loader ignores the change",
            f"The loader read LD_LIBRARY_PATH={start_ldp or '(empty)'} at start; os.environ now says "
            f"{now_ldp or '(empty)'}. Copies are resolved with the start value, as dlopen does.",
            (Fix("remove-shadowing-dir", "Set LD_LIBRARY_PATH where the kernel is started",
                 "put the value in the kernelspec \"env\" (kernel.json) or the shell that starts Jupyter, then "
                 "restart the kernel", True),),
        ),))
    return dataclasses.replace(report, elapsed_s=time.perf_counter() - t0)


def _safe(fn, default):  # type: ignore[no-untyped-def]
    try:
        return fn()
    except Exception:  # noqa: BLE001 - probes never raise into the cell
        return default


def judge_report(*, loaded: tuple[LibraryCopy, ...], installed: tuple[LibraryCopy, ...],
                 frameworks: tuple[FrameworkBuild, ...], driver: Driver | Unavailable | None, gpus: tuple[Gpu, ...],
                 ldcache: dict[str, list[str]] | None = None, environ: dict[str, str] | None = None,
                 notes: tuple[str, ...] = (), deep_errors: dict[str, str] | None = None) -> Report:
    """Verdicts per framework and findings, from facts already gathered (no probing here
    except reading ELF RUNPATHs for loader resolution)."""
    from .probes.installed import resolve

    findings: list[Finding] = []
    by_path = {c.path: c for c in installed}
    for c in loaded:
        by_path.setdefault(os.path.realpath(c.path), c)
    mapped_paths = [c.path for c in loaded]
    resolutions: list[Resolution] = []
    judged: list[FrameworkBuild] = []
    for fw in frameworks:
        fw, res, fnds = _judge_framework(fw, loaded, by_path, mapped_paths, ldcache, environ, gpus, resolve)
        judged.append(fw)
        if res is not None:
            resolutions.append(res)
        findings += fnds

    # More than one directory of main libraries mapped.
    main_dirs = sorted({c.directory for c in loaded if c.is_main})
    if len(main_dirs) > 1:
        findings.append(Finding(
            "cudnn-multiple-copies-loaded", "warning",
            f"cuDNN is mapped from {len(main_dirs)} directories in this process",
            "Copies from " + ", ".join(main_dirs) + " are all mapped. Whichever libcudnn_graph loaded first answers "
            "for all of them, so a framework may run against a cuDNN other than the one it shipped with. Usually the "
            "cause is import order (each framework preloads its own copy).",
            (Fix("import-order", "Import the framework whose cuDNN you need first, or use one cuDNN wheel for all",
                 "Restart the kernel and import the framework with the newest cuDNN requirement first.", True),),
        ))
    findings += _sublibrary_findings(loaded, installed)
    for c in installed:
        if c.error:
            findings.append(Finding(
                "cudnn-unusable-copy", "warning", f"{c.path} cannot be used",
                f"{c.error}. Found via {c.source}; if the loader picks it, the framework fails to load cuDNN.",
                (Fix("remove-shadowing-dir", f"Remove {c.path} or its directory from the search path",
                     f"rm {c.path}   # or take {c.directory} out of LD_LIBRARY_PATH", False),),
            ))
    for path, err in (deep_errors or {}).items():
        owner = by_path.get(path, LibraryCopy(path, "", "")).owner
        missing_dep = re.search(r"(lib(?:nvrtc|cublas|cublasLt|z|nvJitLink)[\w.-]*\.so[\w.]*): cannot open shared object", err)
        if missing_dep:  # cuDNN itself is complete; a library it needs is not on the loader's path
            fix = Fix("install-cudnn-deps", f"Install {missing_dep.group(1)}, which cuDNN's sub-libraries need",
                      f"{missing_dep.group(1)} is missing: install the matching CUDA library (pip: nvidia-cuda-nvrtc-cuXX / "
                      "nvidia-cublas-cuXX; system: the CUDA toolkit's package) into the same environment", True)
        else:
            fix = Fix("reinstall-cudnn", "Reinstall this cuDNN so all its sub-libraries are present",
                      f"reinstall the package that owns {path} ({owner})", True)
        findings.append(Finding(
            "cudnn-sublibrary-load-failed", "error", f"Loading {path} fails",
            f"In a child process: {err}. A framework that picks this copy fails or kills the kernel.", (fix,),
        ))
    findings += _driver_findings(driver, gpus, judged, loaded)
    return Report(
        cudnn_loaded=tuple(sorted(loaded, key=lambda c: (not c.is_main, c.directory, c.name))),
        cudnn_installed=installed, frameworks=tuple(judged), resolutions=tuple(resolutions), driver=driver,
        gpus=gpus, findings=tuple(findings), notes=notes, platform=sys.platform,
    )


def _judge_framework(fw, loaded, by_path, mapped_paths, ldcache, environ, gpus, resolve):  # type: ignore[no-untyped-def]
    from .versions import RULES

    rule = RULES.get(fw.checker, RULES["nvidia"])
    if not fw.cudnn_compiled and not fw.cudnn_soname:
        detail = fw.detail or "not a CUDA build with cuDNN: nothing to check"
        return dataclasses.replace(fw, verdict="not-applicable", rule=rule, detail=detail), None, []
    src = try_parse(fw.cudnn_compiled) if fw.cudnn_compiled else None
    soname = fw.cudnn_soname or (f"libcudnn.so.{src.major}" if src else None)
    if soname is None:
        return dataclasses.replace(fw, verdict="unknown", rule=rule, detail="compiled-against cuDNN not known"), None, []
    res = resolve(soname, fw.name, fw.consumer_library, environ=environ, ldcache=ldcache, mapped=mapped_paths)
    used: LibraryCopy | None = by_path.get(res.picked) if res.picked else None
    if used is None and res.picked:
        used = by_path.get(os.path.realpath(res.picked))
    runtime = fw.cudnn_runtime or (used.version if used else None)
    how = ("reported by the framework" if fw.cudnn_runtime else
           ("mapped in this process" if res.reason.startswith("already mapped") else f"the loader will pick it ({res.reason})"))
    findings: list[Finding] = []
    if runtime is None and used is None:
        sev = "error" if gpus else "warning"
        fix = _install_fix(fw)
        detail = (f"{fw.name} {fw.version} asks for {soname}, and the loader's search finds none (LD_LIBRARY_PATH, "
                  f"{'its RUNPATH, ' if fw.consumer_library else ''}ld.so cache, default dirs). Its GPU code will not run.")
        findings.append(Finding("cudnn-library-not-found", sev, f"{fw.name} will find no {soname}", detail,
                                (fix,) if fix else ()))
        return dataclasses.replace(fw, cudnn_soname=soname, verdict="mismatch" if gpus else "unknown", rule=rule,
                                   detail=detail), res, findings
    j = judge(fw.checker, runtime, fw.cudnn_compiled)  # type: ignore[arg-type]
    verdict = j.verdict
    detail = f"{j.detail} ({how})."
    fw2 = dataclasses.replace(fw, cudnn_soname=soname, cudnn_used=runtime, cudnn_used_path=used.path if used else res.picked,
                              verdict=verdict, rule=j.rule, detail=detail)
    # Shadowing: the pick came before the framework's own RUNPATH copy, and the versions differ.
    own = [p for p in res.shadowed if "RUNPATH" not in res.reason]
    shadow_note = ""
    if res.reason.startswith(("LD_LIBRARY_PATH", "ld.so cache", "default dir")) and own:
        other = by_path.get(own[0])
        if other and other.version != runtime:
            shadow_note = (f" {res.picked} ({res.reason}) comes before {own[0]} (cuDNN {other.version}) in the "
                           f"loader's search, so it wins.")
            findings.append(Finding(
                "cudnn-shadowed", "warning" if verdict == "ok" else "error",
                f"{os.path.dirname(res.picked or '')} shadows the cuDNN {other.version} that {fw.name} ships with",
                shadow_note.strip(), (_shadow_fix(res),),
            ))
    if verdict == "mismatch":
        fixes = [f for f in (_shadow_fix(res) if shadow_note else None, _install_fix(fw)) if f]
        title = (f"{fw.name} {fw.version} was built with cuDNN {fw.cudnn_compiled}, but "
                 f"{'loads' if how.startswith(('mapped', 'reported')) else 'will load'} {runtime}")
        findings.append(Finding("cudnn-version-mismatch", "error", title, j.detail + "." + shadow_note
                                + f" Rule: {j.rule}.", tuple(fixes)))
        fw2 = dataclasses.replace(fw2, detail=detail + shadow_note)
    return fw2, res, findings


def _shadow_fix(res: Resolution) -> Fix:
    d = os.path.dirname(res.picked or "")
    return Fix("remove-shadowing-dir", f"Take {d} out of LD_LIBRARY_PATH",
               f"Remove {d} from LD_LIBRARY_PATH for this kernel (kernel.json \"env\" or the shell that starts "
               f"Jupyter), then restart the kernel.", True)


def cudnn_requirement(fw: FrameworkBuild) -> str | None:
    """The pip requirement for a cuDNN wheel that satisfies ``fw`` alone: its own exact pin
    when it has one (PyTorch wheels), else ``nvidia-cudnn-cuXX>=MAJOR.MINOR,<MAJOR+1`` with
    XX the CUDA major it was built for. Versions come from parsed values, never from logs."""
    for pin in fw.pins:
        if pin.startswith("nvidia-cudnn-cu") and ("==" in pin or ">=" in pin):
            return pin.split(";")[0].strip()
    v = try_parse(fw.cudnn_compiled) if fw.cudnn_compiled else None
    if v is None:
        return None
    cuda = (fw.cuda_compiled or "").split(".")[0]
    if not cuda.isdigit():
        cuda = "12" if v.major >= 9 else "11"
    if v.major == 8 and int(cuda) > 12:
        cuda = "12"
    low = f"{v.major}.{v.minor}" if v.minor is not None else f"{v.major}"
    return f"nvidia-cudnn-cu{cuda}>={low},<{v.major + 1}"


def _install_fix(fw: FrameworkBuild) -> Fix | None:
    req = cudnn_requirement(fw)
    if req is None:
        return None
    return Fix("install-matching-cudnn", f"Install {req}",
               f"{sys.executable} -m pip install '{req}'", restart_required=True)


def _sublibrary_findings(loaded: Iterable[LibraryCopy], installed: Iterable[LibraryCopy]) -> list[Finding]:
    out: list[Finding] = []
    by_dir: dict[str, list[LibraryCopy]] = {}
    for c in list(loaded) + list(installed):
        group = by_dir.setdefault(c.directory, [])
        if all(g.path != c.path for g in group):
            group.append(c)
    for d, copies in sorted(by_dir.items()):
        versions = {c.version for c in copies if c.version}
        if len(versions) > 1:
            listing = ", ".join(f"{c.name} {c.version}" for c in copies if c.version)
            out.append(Finding(
                "cudnn-sublibrary-load-failed", "error", f"Mixed cuDNN versions in {d}",
                f"{listing}. cuDNN refuses sub-libraries of another release "
                "(CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH) or fails to find symbols.",
                (Fix("reinstall-cudnn", "Reinstall cuDNN so every file in the directory comes from one release",
                     f"remove the stray files in {d} and reinstall the package that owns it", True),),
            ))
        mains = [c for c in copies if c.is_main and c.soname == "libcudnn.so.9"
                 and not (c.error or "").startswith(("not a usable shared library", "unreadable"))]
        if mains and not any(c.name.startswith("libcudnn_graph.so.9") for c in copies):
            out.append(Finding(
                "cudnn-sublibrary-load-failed", "error", f"{mains[0].path} has no libcudnn_graph.so.9 beside it",
                "The first cuDNN call through this copy aborts the process (\"Invalid handle. Cannot load symbol "
                "cudnnGetVersion\") unless another libcudnn_graph.so.9 is already loaded.",
                (Fix("reinstall-cudnn", "Reinstall this cuDNN completely",
                     f"reinstall the package that owns {d} ({mains[0].owner})" if mains[0].owner != "system"
                     else f"{d} belongs to no package: remove {mains[0].path} or install a complete cuDNN there", True),),
            ))
    return out


def _driver_findings(driver, gpus, frameworks, loaded) -> list[Finding]:  # type: ignore[no-untyped-def]
    out: list[Finding] = []
    if isinstance(driver, Unavailable):
        out.append(Finding("no-nvidia-driver", "info", "No NVIDIA driver found",
                           f"{driver.reason}. Frameworks will run on the CPU; cuDNN cannot create a handle.", ()))
        return out
    if driver is None or not driver.version:
        return out
    for fw in frameworks:
        floor = driver_floor(fw.cuda_compiled)
        if floor and driver_at_least(driver.version, floor) is False:
            out.append(Finding(
                "cuda-driver-too-old", "error",
                f"Driver {driver.version} is too old for {fw.name}'s CUDA {fw.cuda_compiled}",
                f"CUDA {fw.cuda_compiled} needs driver {floor} or newer (NVIDIA CUDA minor-version compatibility).",
                (Fix("upgrade-driver", f"Upgrade the NVIDIA driver to {floor} or newer",
                     f"install NVIDIA driver >= {floor} on the host (not possible from a notebook)"),),
            ))
    used = [try_parse(c.version) for c in loaded if c.is_main and c.version]
    used += [try_parse(fw.cudnn_used) for fw in frameworks if fw.cudnn_used]
    for gpu in gpus:
        if not gpu.compute_capability:
            continue
        for v in {u for u in used if u}:
            rng = cudnn_compute_capability_range(v)
            if rng and not (rng[0] <= gpu.compute_capability <= rng[1]):
                cc = "%d.%d" % gpu.compute_capability
                out.append(Finding(
                    "gpu-arch-unsupported", "error", f"GPU {gpu.index} ({gpu.name}, compute capability {cc}) is not "
                    f"supported by cuDNN {v}",
                    f"cuDNN {v} supports compute capability {rng[0][0]}.{rng[0][1]} to {rng[1][0]}.{rng[1][1]} "
                    "(cuDNN support matrix).",
                    (Fix("install-matching-cudnn", "Use a cuDNN release that supports this GPU",
                         "for compute capability below 7.5 use cuDNN 9.10 or older (e.g. nvidia-cudnn-cu12==9.10.2.21)",
                         True),),
                ))
    return out


# --------------------------------------------------------------------------- cached report

_cache_lock = threading.Lock()
_cache: tuple[tuple[str, ...], Report] | None = None


def cached_report() -> Report | None:
    """The last report, re-probed when the set of mapped ``libcudnn*`` files changed (one read
    of ``/proc/self/maps``, about a millisecond). For the error annotation. Never raises."""
    global _cache
    try:
        from .probes.loaded import mapped_cudnn_paths

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
