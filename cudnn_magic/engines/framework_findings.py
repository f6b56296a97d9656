"""Findings about each framework beyond the copy its loader picks: the framework's own rule as its
installed files state it (JAX's multi-GPU refusal), a consumer that another framework's copy
serves in one process, a CPU build on a GPU machine, the driver floor of its CUDA and the compute
capabilities of the cuDNN in use. Engines' helpers for :func:`cudnn_magic.engines.check.judge_report`: no
probing, no IPython.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable
from typing import Any, NamedTuple

from ..model import Finding, Fix, FrameworkBuild, Gpu, Unavailable
from ..rules.compat import Judgement, judge
from ..rules.consumer_table import by_name
from ..rules.cudnn_version import try_parse
from ..rules.gpu import cudnn_compute_capability_range, driver_at_least, driver_floor
from ..rules.gpu_builds import gpu_build

__all__ = ["WheelShadow", "cpu_build_findings", "driver_findings", "env_wheel_shadowed", "own_rule", "served_by_another",
           "visible_gpus", "wheel_shadows"]


def visible_gpus(environ: dict[str, str] | None, gpus: tuple[Gpu, ...], fw: FrameworkBuild) -> int:
    """How many devices a framework's process would see: JAX's ``JAX_CUDA_VISIBLE_DEVICES`` (its
    ``jax_cuda_visible_devices`` flag) when set, else ``CUDA_VISIBLE_DEVICES``, else every GPU NVML
    lists."""
    env = environ or {}
    for var in (("JAX_CUDA_VISIBLE_DEVICES",) if fw.checker == "jax" else ()) + ("CUDA_VISIBLE_DEVICES",):
        v = env.get(var)
        if v is not None and v != "all":
            return len([x for x in v.split(",") if x.strip()]) if v.strip() else 0
    return len(gpus)


def own_rule(fw: FrameworkBuild, j: Any, runtime: str | None, environ: dict[str, str] | None,
             gpus: tuple[Gpu, ...]) -> Any:
    """The judgement with the framework's own rule as its installed files state it
    (``fw.own_rule``): quoted first, and JAX's multi-GPU refusal applied when the facts are here
    (its plugin refuses cuDNN below 9.10.1 with cuBLAS 12.9+ on more than one visible device)."""
    if not fw.own_rule:
        return j

    rule = fw.own_rule + "; " + j.rule
    facts = dict(fw.facts)
    rt = try_parse(runtime) if runtime else None
    multi = facts.get("multi_gpu_rule", "").split()
    cublas = try_parse(facts.get("cublas")) if facts.get("cublas") else None
    if j.ok is not False and rt is not None and rt.encoded is not None and len(multi) == 3 and cublas is not None:
        floor, cublas_min, more = (int(x) for x in multi)
        cb = cublas.major * 10000 + (cublas.minor or 0) * 100 + (cublas.patch or 0)
        n = visible_gpus(environ, gpus, fw)
        if rt.encoded < floor and cb >= cublas_min and n > more:
            return Judgement(False, rule, f"cuDNN {rt} is below {floor // 10000}.{floor // 100 % 100}.{floor % 100}, with "
                             f"cuBLAS {cublas} and {n} visible GPUs: JAX's plugin refuses it when the CUDA plugin "
                             f"initializes (\"cuDNN < 9.10.0 ({rt.encoded} found) had an issue that caused some multi-GPU "
                             "matmuls ... to be functionally incorrect\")")
    return Judgement(j.ok, rule, j.detail)


def served_by_another(judged: list[FrameworkBuild], findings: list[Finding]
                      ) -> tuple[list[FrameworkBuild], list[Finding]]:
    """A framework whose own search finds no cuDNN (``cudnn-library-not-found``) while another
    installed framework loads a copy with that soname that satisfies its rule: in one process the
    loader reuses a copy already mapped (glibc ``_dl_name_match_p``), so it works when that one is
    imported first (ONNX Runtime beside PyTorch). The finding then says so, as a warning, with the
    import order as its fix, and the row's detail says the same. Returns (rows, findings)."""

    out: list[Finding] = []
    rows = list(judged)
    for f in findings:
        fw = next((x for x in judged if f.id == "cudnn-library-not-found"
                   and f.title == f"{x.name} will find no {x.cudnn_soname}"), None)
        giver = None
        if fw is not None:
            giver = next((g for g in judged if g is not fw and g.cudnn_soname == fw.cudnn_soname and g.cudnn_used_path
                          and g.cudnn_used and judge(fw.checker, g.cudnn_used, fw.cudnn_compiled).ok), None)  # type: ignore[arg-type]
        if fw is None or giver is None:
            out.append(f)
            continue
        entry = by_name(giver.name)
        imp = f"import {entry.import_name if entry is not None and entry.import_name else giver.distribution}"
        how = f" How it loads cuDNN: {fw.loading}." if fw.loading else ""
        title = (f"{fw.name} finds no {fw.cudnn_soname} by its own search; {giver.name}'s {giver.cudnn_used} serves it "
                 f"when {giver.name} is imported first")
        rows = [dataclasses.replace(r, detail=title + ".") if r is fw else r for r in rows]
        out.append(Finding(
            "cudnn-library-not-found", "warning", title,
            f"{fw.name} {fw.version}'s own search (LD_LIBRARY_PATH, the ld.so cache, the default directories"
            f"{', its RUNPATH' if fw.consumer_library else ''}) finds no {fw.cudnn_soname}. {giver.name} {giver.version} "
            f"loads {giver.cudnn_used_path} (cuDNN {giver.cudnn_used}), and once it is mapped the loader hands that copy "
            f"to every later request for {fw.cudnn_soname}: {imp} before {fw.name}'s first GPU use and it runs on it "
            f"(cuDNN {giver.cudnn_used} satisfies its rule).{how}",
            (Fix("import-order", f"{imp} before using {fw.name} on the GPU",
                 f"{imp} at the top of the notebook, before the first {fw.name} GPU session or call, so its "
                 f"{fw.cudnn_soname} ({giver.cudnn_used_path}) is mapped for {fw.name} too", False, False,
                 "a change to your code"),)))
    return rows, out


def cpu_build_findings(frameworks: Iterable[FrameworkBuild], gpus: tuple[Gpu, ...], driver: Any = None,
                       platform: str = "linux") -> list[Finding]:
    """``framework-cpu-build``: a CPU build where NVML sees a GPU (it will not use it). The fix is the
    framework's CUDA build for the CUDA major the driver supports (NVML's CUDA driver version), the
    command from :func:`cudnn_magic.rules.gpu_builds.gpu_build` (one table with the diagnosis of the
    same id); the consumer table's words where that table does not know the framework."""
    if not gpus:
        return []
    out = []
    driver_cuda = getattr(driver, "cuda_driver_version", None)
    for fw in frameworks:
        if not fw.cpu_build or fw.problems:
            continue
        entry = by_name(fw.name)
        build = gpu_build(fw.name, fw.version, driver_cuda, platform)
        if build is not None:
            fix = f"{build.command}   # {build.note}" if build.command else build.note
        else:
            fix = entry.gpu_build if entry is not None else ""
        out.append(Finding(
            "framework-cpu-build", "warning", f"{fw.name} {fw.version} is a CPU build: it will not use the GPU",
            f"{fw.name} {fw.version} was built without CUDA and cuDNN ({fw.cudnn_compiled_source or 'its build says so'}); "
            f"{len(gpus)} NVIDIA GPU{'s are' if len(gpus) != 1 else ' is'} here. Its GPU calls fail (PyTorch: "
            "\"Torch not compiled with CUDA enabled\") or it runs on the CPU.",
            (Fix("install-cudnn-build", f"Install the GPU build of {fw.name}", fix, True, False,
                 "advice only: a different build"),) if fix else ()))
    return out


def driver_findings(driver, gpus, frameworks, loaded) -> list[Finding]:  # type: ignore[no-untyped-def]
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
                cc = "{}.{}".format(*gpu.compute_capability)
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


def _shadow_fix(entry: str, own_dir: str | None = None) -> Fix:
    """``remove-shadowing-dir`` for the LD_LIBRARY_PATH ``entry`` (``own_dir``: where the right copy is)."""
    return Fix("remove-shadowing-dir", f"Take {entry} out of LD_LIBRARY_PATH",
               f"Remove the LD_LIBRARY_PATH entry {entry} for this kernel (kernel.json \"env\" or the shell that starts "
               f"Jupyter), then start the kernel fresh"
               + (f"; the framework then finds its own copy in {own_dir}" if own_dir else "") + ".", True, True)


class WheelShadow(NamedTuple):
    """An ``LD_LIBRARY_PATH`` entry holding another release of a soname this environment's own
    pip wheel ships (:func:`wheel_shadows`).

    Attributes:
        copy: the environment's own copy (a :class:`~cudnn_magic.model.LibraryCopy`, main library).
        entry: the ``LD_LIBRARY_PATH`` entry as written in the variable (a folder reached through
            a symbolic link keeps its name: what a fix takes out must match the variable's text).
        picked: the file a load by name gets (or has mapped) from that entry.
        version: that file's cuDNN version ("9.12.0").
        mapped: True when ``picked`` is already mapped in this process, False when a fresh load
            by name would get it.
    """

    copy: Any
    entry: str
    picked: str
    version: str
    mapped: bool


def wheel_shadows(installed: Iterable[Any], resolve: Any, environ: Any, ldcache: Any, site_dirs: Iterable[str],
                  in_use: Iterable[Any] = ()) -> list[WheelShadow]:
    """Each cuDNN soname this environment's own pip wheel (a folder under ``site_dirs``) ships
    that an ``LD_LIBRARY_PATH`` entry of ``environ`` supplies at another release first: the copy
    already mapped from such an entry (``in_use``, :class:`~cudnn_magic.model.CudnnInUse` per
    soname, decides when there is one: every later load by that soname binds to it), else what a
    plain load by name gets (``resolve``: :func:`cudnn_magic.probes.installed.resolve`, glibc's
    order). The one model the check's ``cudnn-shadowed`` finding and the
    ``remove-shadowing-dir`` fix share, so the fix acts on what the check reports. Never raises
    for a copy it cannot judge: that copy is left out."""
    if not [e for e in ((environ or {}).get("LD_LIBRARY_PATH") or "").split(":") if e]:
        return []
    installed = list(installed)
    sites = tuple(site_dirs)
    in_use = tuple(in_use)
    version_of = {os.path.realpath(c.path): c.version for c in installed}
    out: list[WheelShadow] = []
    seen: set[str] = set()
    for c in installed:
        if not c.is_main or not c.soname or c.soname in seen or not str(c.owner).startswith("pip"):
            continue
        real = os.path.realpath(c.path)
        if not any(real.startswith(s + os.sep) for s in sites):
            continue
        mapped = next((u for u in in_use if u.soname == c.soname), None)
        if mapped is not None:
            if not mapped.ld_library_path_entry or os.path.realpath(mapped.path) == real:
                continue
            picked, other, written = mapped.path, mapped.version, mapped.ld_library_path_entry
        else:
            r = resolve(c.soname, "a program that loads it by name", None, environ=environ, ldcache=ldcache)
            if not r.picked or os.path.realpath(r.picked) == real or not r.reason.startswith("LD_LIBRARY_PATH"):
                continue
            picked, other = r.picked, version_of.get(os.path.realpath(r.picked))
            written = r.reason[len("LD_LIBRARY_PATH entry "):].split(" (its ", 1)[0] \
                if r.reason.startswith("LD_LIBRARY_PATH entry ") else None
        if not other or other == c.version:
            continue
        seen.add(c.soname)
        out.append(WheelShadow(c, written or os.path.dirname(picked), picked, other, mapped is not None))
    return out


def env_wheel_shadowed(installed: Iterable[Any], findings: Iterable[Finding], resolve: Any, environ: Any,
                       ldcache: Any, site_dirs: set[str], in_use: Iterable[Any] = ()) -> list[Finding]:
    """``cudnn-shadowed`` (warning) when no framework is there to say it: an ``LD_LIBRARY_PATH``
    entry holds another release of a cuDNN soname that this environment's own pip wheel ships, so
    whatever loads that soname by name (a plain ``dlopen``, a framework installed later whose
    RUNPATH comes after ``LD_LIBRARY_PATH``) gets the other one (without this, the check said OK
    while the same kernel's error was 9.12 loaded against 9.27 expected). The cases are
    :func:`wheel_shadows`'s. Empty when a framework's own finding already says it."""
    if any(f.id == "cudnn-shadowed" for f in findings):
        return []
    out: list[Finding] = []
    for w in wheel_shadows(installed, resolve, environ, ldcache, site_dirs, in_use):
        c, entry, other = w.copy, w.entry, w.version
        out.append(Finding(
            "cudnn-shadowed", "warning",
            f"LD_LIBRARY_PATH entry {entry} shadows this environment's cuDNN {c.version} ({c.owner})",
            (f"cuDNN {other} from {entry} is mapped in this process, and every later load of {c.soname} by name "
             "binds to it"
             if w.mapped else
             f"Whatever loads {c.soname} by name gets cuDNN {other} from {entry} first: a plain dlopen, and a "
             f"framework installed later into this environment, whose RUNPATH is searched after LD_LIBRARY_PATH")
            + f". This environment's own copy is {c.path}.",
            (_shadow_fix(entry, c.directory),)))
    return out

