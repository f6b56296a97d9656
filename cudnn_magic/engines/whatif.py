"""What-if: the cuDNN findings an install would cause, predicted before it runs.

:func:`what_if` runs it end to end: pip's own resolution (``pip install --dry-run --report``,
:mod:`cudnn_magic.probes.pip_report`), the installed distributions (``pip inspect``) with their
``RECORD`` files and the hashes of the files two of them list, the frameworks found on disk,
the driver and GPUs; then :func:`predict`, which is pure: it builds the environment as it would
be after the install (installed distributions, minus the ones pip replaces, plus the new ones)
and judges it with the SAME code as ``%cudnn_check``:
:func:`cudnn_magic.probes.owners.find_overwritten_wheels` for wheels that overwrite each other
and :func:`cudnn_magic.engines.check.judge_report` for each framework's rule, the loader's pick,
``cudnn-wheel-overwritten`` and the driver floors; the consumer check
(:mod:`cudnn_magic.engines.consumer_check`) runs on both environments. The environment as it is
now goes through the same model, so predicted findings are compared with present ones judged
the same way. Nothing is installed; no IPython or widgets here.

Which files a wheel that is not installed yet will write: pip's report carries the metadata
(name, version, ``Requires-Dist``) and the download URL, not the ``RECORD``, and with PyPI's PEP 658
metadata pip does not even download the wheel. So the wheel's own ``RECORD`` is read from where pip
would fetch it (:mod:`cudnn_magic.probes.wheel_record`: a local file, or a few byte ranges over
HTTP), with every file's real sha256 and size: a 9.1 wheel writes the names it has, not the ones a
9.24 wheel left (they stay, their old owner's), and a cuDNN 8 wheel writes no ``libcudnn.so.9``.
pip writes the new files last, so they are the new distribution's; pip's uninstall of a replaced
wheel deletes every file its ``RECORD`` lists, another wheel's shared copy included. Only when
the ``RECORD`` cannot be read (a server without byte ranges, credentials) are the names predicted
from the installed distributions that write the same folder (:data:`CUDNN_FOLDERS`), else the two
files every cuDNN wheel of that major has, and a note says so.
"""

from __future__ import annotations

import dataclasses
import os
import re
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from ..fixes.solver import solve_cudnn
from ..model import Driver, Finding, FrameworkBuild, Gpu, LibraryCopy, Report, Unavailable
from ..model.prevention import Change, WhatIf
from ..probes import libnames
from ..probes.frameworks import probe_frameworks
from ..probes.nvml import driver_and_gpus_within
from ..probes.owners import DistRecord, RecordEntry, digest_if_small, find_overwritten_wheels, read_record
from ..probes.pip_report import (
    Installed,
    PipError,
    PipPlan,
    _same_interpreter,
    installed_here,
    pip_dry_run,
    pip_inspect,
    split_requirements,
)
from ..probes.wheel_record import planned_records
from ..probes.wheel_stage import stage_consumer_wheels
from ..rules.build_tables import tf_tested_build
from ..rules.compat import checker_for_tensorflow, judge
from ..rules.consumer_table import CONSUMERS
from ..rules.cudnn_version import try_parse
from ..rules.wheel_folders import CUDNN_FOLDERS, canonical, cudnn_folder
from .check import judge_report
from .consumer_check import check_consumers

# Distribution name -> (framework name, checker key of rules.compat.RULES), from the consumer table's
# wheel_distributions; TensorFlow's checker depends on its version (rules.compat.checker_for_tensorflow).
_FRAMEWORK_DISTS: dict[str, tuple[str, str]] = {d: (c.name, c.checker) for c in CONSUMERS for d in c.wheel_distributions}
_CUDNN_PIN = re.compile(r"^\s*(nvidia-cudnn(?:-jit)?-cu(\d+))\b", re.IGNORECASE)


@dataclass(frozen=True)
class Environment:
    """An environment as the rules see it: the distributions (name -> version), the cuDNN
    distributions' records, the file hashes that decide whose files are on disk, and the
    framework builds."""

    versions: Mapping[str, str]
    records: tuple[DistRecord, ...]
    observed: Mapping[str, str]
    frameworks: tuple[FrameworkBuild, ...]
    #: ``.dist-info`` folders of later copies of a name found earlier on ``sys.path``: on disk, but
    #: pip neither sees nor replaces them (pip's environment is the first of each name).
    shadowed: tuple[str, ...] = ()


def framework_from_metadata(name: str, version: str, requires_dist: Iterable[str]) -> FrameworkBuild | None:
    """A framework build described by its wheel's metadata alone (it is not installed yet):
    its cuDNN pins (``Requires-Dist``), the compiled-against cuDNN from the exact pin (PyTorch
    pins its build's cuDNN), else TensorFlow's tested-build table (``rules.build_tables.tf_tested_build``),
    else the pin's lower bound (JAX's plugin pins its build version as a lower bound); CUDA from
    the pinned wheel family (``-cu13``). None for a distribution that is no known framework."""
    n = canonical(name)
    if n not in _FRAMEWORK_DISTS:
        return None
    label, checker = _FRAMEWORK_DISTS[n]
    pins = tuple(r for r in requires_dist if _CUDNN_PIN.match(r))
    compiled = source = cuda = None
    for pin in pins:
        m = _CUDNN_PIN.match(pin)
        cuda = cuda or (m.group(2) if m else None)
        for op, ver in re.findall(r"(==|>=|~=)\s*([0-9][0-9.]*)", pin):
            if op == "==" and compiled is None:
                compiled, source = ".".join(ver.split(".")[:3]), f"exact pin {pin.split(';')[0].strip()} (wheel metadata)"
    if label == "TensorFlow":
        checker = checker_for_tensorflow(version)
        tested = tf_tested_build(version)
        if tested and compiled is None:
            compiled, source = tested[0], "TensorFlow tested build table (wheel not installed yet)"
            cuda = cuda or tested[1]
    if compiled is None:
        for pin in pins:
            lo = re.search(r"(?:>=|~=)\s*([0-9][0-9.]*)", pin)
            if lo and try_parse(lo.group(1)):
                compiled = ".".join(lo.group(1).split(".")[:3])
                source = f"lower bound of {pin.split(';')[0].strip()} (wheel metadata)"
                break
    if compiled is None:
        return FrameworkBuild(label, n, version, pins=pins, checker=checker,
                              detail="its metadata pins no cuDNN wheel: compiled-against cuDNN not known before install")
    return FrameworkBuild(label, n, version, cudnn_compiled=compiled, cudnn_compiled_source=source,
                          cuda_compiled=cuda, pins=pins, checker=checker)


def _predicted_record(name: str, version: str, site: str, current: Sequence[DistRecord],
                      files: Sequence[RecordEntry] | None = None) -> DistRecord | None:
    """The new distribution's record: its wheel's own ``RECORD`` entries when read (``files``,
    :func:`cudnn_magic.probes.wheel_record.planned_records`: real paths, sha256 and sizes), else the
    names its folder holds now (module docstring), with a placeholder digest."""
    if files is not None:
        return DistRecord(canonical(name), version, site, tuple(files))
    folder = cudnn_folder(name)
    if folder is None:
        return None
    prefix = folder + "/"
    names: dict[str, None] = {}
    for d in current:
        if os.path.normpath(d.root) != os.path.normpath(site):
            continue
        for e in d.entries:
            if e.path.replace(os.sep, "/").startswith(prefix):
                names[e.path.replace(os.sep, "/")] = None
    if not names:
        major = version.split(".")[0] if version.split(".")[0].isdigit() else "9"
        names = {f"{prefix}lib/libcudnn.so.{major}": None, f"{prefix}lib/libcudnn_graph.so.{major}": None}
    digest = f"sha256=predicted:{canonical(name)}=={version}"
    return DistRecord(canonical(name), version, site, tuple(RecordEntry(p, digest) for p in names))


def _after_uninstall(records: Sequence[DistRecord], removed: set[str]) -> tuple[list[DistRecord], list[str]]:
    """``records`` without the files pip's uninstall deletes (``removed``, absolute paths): pip
    removes every path the old ``RECORD`` lists, whoever else lists it too (pip's
    ``req_uninstall.UninstallPathSet``), so another wheel's copy of a shared file is gone unless the
    new wheel writes it again. Returns the records and one note per distribution that loses files."""
    out: list[DistRecord] = []
    notes: list[str] = []
    for d in records:
        keep = tuple(e for e in d.entries if d.abspath(e) not in removed)
        lost = [e for e in d.entries if d.abspath(e) in removed and ".dist-info/" not in e.path]
        if lost:
            names = ", ".join(sorted(os.path.basename(e.path) for e in lost)[:4]) + (" ..." if len(lost) > 4 else "")
            notes.append(f"pip's uninstall of the replaced wheel deletes {len(lost)} file(s) {d.label} also lists "
                         f"({names}); they would be missing")
            d = dataclasses.replace(d, entries=keep)
        out.append(d)
    return out, notes


def _copies(records: Iterable[DistRecord], overwrites) -> tuple[LibraryCopy, ...]:  # type: ignore[no-untyped-def]
    present_of: dict[str, tuple[str, str] | None] = {}
    for ow in overwrites:
        for p in ow.files:
            present_of[p] = ow.present
    out: dict[str, LibraryCopy] = {}
    for d in records:
        for e in d.entries:
            base = os.path.basename(e.path)
            if "/lib/" not in "/" + e.path.replace(os.sep, "/") or not libnames.is_cudnn_name(base):
                continue
            path = d.abspath(e)
            who = present_of.get(path, (d.name, d.version)) if path in present_of else (d.name, d.version)
            if who is None:  # the hashes decide nothing: keep the later record's claim
                who = (d.name, d.version)
            version = libnames.pip_dist_version_to_cudnn(who[1]) or ".".join(who[1].split(".")[:3])
            out[path] = LibraryCopy(path, base, libnames.soname_of(base), version, "wheel version (predicted)",
                                    f"pip: {who[0]} {who[1]}", "pip wheel", False, libnames.is_main(base))
    return tuple(out.values())


def judge_environment(env: Environment, *, driver: Driver | Unavailable | None, gpus: tuple[Gpu, ...],
                      environ: Mapping[str, str] | None = None, new_frameworks: Iterable[str] = ()) -> Report:
    """Judge an environment (present or predicted) with the check's own rules, for a fresh
    process (nothing mapped yet). ``new_frameworks`` names frameworks whose native library is not
    on disk yet: the copy they load is taken as their pinned wheel's folder (their RUNPATH points
    there: docs/facts.md), judged by their rule (``rules.compat.judge``)."""
    overwrites = find_overwritten_wheels(env.records, env.observed)
    copies = _copies(env.records, overwrites)
    report = judge_report(loaded=(), installed=copies, frameworks=tuple(env.frameworks), driver=driver, gpus=gpus,
                          environ=dict(environ or {"LD_LIBRARY_PATH": ""}), in_use=(), overwrites=overwrites,
                          files_on_disk=False)
    fresh = set(new_frameworks)
    if not fresh:
        return report
    by_path = {c.path: c for c in copies}
    rows = list(report.frameworks)
    findings = list(report.findings)
    for i, fw in enumerate(rows):
        if fw.distribution not in fresh or not fw.cudnn_compiled:
            continue
        findings = [f for f in findings if not (f.id in ("cudnn-library-not-found", "cudnn-version-mismatch", "cudnn-shadowed")
                                                and f.title.startswith(fw.name))]
        pinned = {canonical(m.group(1)) for m in (_CUDNN_PIN.match(p) for p in fw.pins) if m}
        own = next((by_path[d.abspath(e)] for d in env.records if canonical(d.name) in pinned for e in d.entries
                    if d.abspath(e) in by_path and by_path[d.abspath(e)].is_main), None)
        if own is None:
            rows[i] = dataclasses.replace(fw, verdict="unknown", detail="its pinned cuDNN wheel is not in the predicted "
                                                                        "environment; the copy it loads is read from its "
                                                                        "library once installed")
            continue
        j = judge(fw.checker, own.version, fw.cudnn_compiled)  # type: ignore[arg-type]
        rows[i] = dataclasses.replace(fw, cudnn_soname=own.soname, cudnn_used=own.version, cudnn_used_path=own.path,
                                      verdict=j.verdict, rule=j.rule,
                                      detail=f"{j.detail} (its wheel's RUNPATH folder {os.path.dirname(own.path)}, "
                                             f"{own.owner})")
        if j.verdict == "mismatch":
            findings.append(Finding("cudnn-version-mismatch", "error",
                                    f"{fw.name} {fw.version} was built with cuDNN {fw.cudnn_compiled}, but will load {own.version}",
                                    f"{j.detail}. The copy is {own.path} ({own.owner}). Rule: {j.rule}.", ()))
    return dataclasses.replace(report, frameworks=tuple(rows), findings=tuple(findings))


def predict(installs: Sequence[tuple[str, str, Sequence[str]]], now: Environment, *, site: str,
            driver: Driver | Unavailable | None = None, gpus: tuple[Gpu, ...] = (),
            environ: Mapping[str, str] | None = None, requirements: Sequence[str] = (),
            notes: Sequence[str] = (), files: Mapping[str, Sequence[RecordEntry]] | None = None) -> WhatIf:
    """The environment after installing ``installs`` and its findings next to the present ones.

    Args:
        installs: ``(name, version, requires_dist)`` of each distribution pip's report says it
            would install (:class:`cudnn_magic.probes.pip_report.PlannedInstall`).
        now: the environment as it is (:func:`Environment` from ``pip inspect`` and the RECORDs).
        site: the site-packages pip installs into (absolute).
        driver, gpus: from NVML (for ``cuda-driver-too-old`` and ``gpu-arch-unsupported``).
        environ: the environment variables a fresh process starts with (``LD_LIBRARY_PATH``).
        files: {canonical name: ``RECORD`` entries} of the new wheels whose own file list was read
            (:func:`cudnn_magic.probes.wheel_record.planned_records`); the others are predicted from
            the names their folder holds now.

    Returns:
        :class:`WhatIf` (``safer`` is left None: finding one needs pip again, see
        :func:`safer_candidates`).
    """
    t0 = time.perf_counter()
    versions = {canonical(k): v for k, v in now.versions.items()}
    changes = tuple(Change(canonical(n), v, versions.get(canonical(n))) for n, v, _ in installs)
    replaced = {c.name for c in changes}
    files = {canonical(k): tuple(v) for k, v in (files or {}).items()}
    hidden = {os.path.normpath(p) for p in now.shadowed}
    pip_replaces = lambda d: canonical(d.name) in replaced and os.path.normpath(d.dist_info) not in hidden  # noqa: E731
    records = [d for d in now.records if not pip_replaces(d)]
    observed = dict(now.observed)
    notes = list(notes)
    new_records = [(n, v, _predicted_record(n, v, site, records, files.get(canonical(n)))) for n, v, _ in installs]
    # files pip's uninstall of a replaced wheel deletes: its RECORD's paths the new wheel does not write
    removed: set[str] = set()
    for d in now.records:
        if pip_replaces(d) and canonical(d.name) in files:
            new = next((r for n, _, r in new_records if canonical(n) == canonical(d.name) and r is not None), None)
            written = {new.abspath(e) for e in new.entries} if new is not None else set()
            removed |= {d.abspath(e) for e in d.entries} - written
    if removed:
        records, lost = _after_uninstall(records, removed)
        notes += lost
        for p in removed:
            observed.pop(p, None)
    for _n, _v, rec in new_records:
        if rec is not None:
            records.append(rec)
            for e in rec.entries:
                observed[rec.abspath(e)] = e.digest or ""
    new_fw_dists: list[str] = []
    fws = {fw.distribution: fw for fw in now.frameworks}
    for n, v, req in installs:
        fw = framework_from_metadata(n, v, req)
        if fw is None:
            continue
        old = fws.get(fw.distribution)
        if old is not None and old.consumer_library and os.path.exists(old.consumer_library):
            fw = dataclasses.replace(fw, consumer_library=old.consumer_library)  # pip rewrites it at the same place
        else:
            new_fw_dists.append(fw.distribution)
        fws[fw.distribution] = fw
    after = Environment({**versions, **{c.name: c.new for c in changes}}, tuple(records), observed, tuple(fws.values()),
                        now.shadowed)
    present = judge_environment(now, driver=driver, gpus=gpus, environ=environ)
    predicted = judge_environment(after, driver=driver, gpus=gpus, environ=environ, new_frameworks=new_fw_dists)
    ort = onnxruntime_over_gpu(changes, after.versions)
    if ort is not None:
        predicted = dataclasses.replace(predicted, findings=(*predicted.findings, ort))
    key = lambda f: (f.id, f.title)  # noqa: E731
    before = {key(f) for f in present.findings}
    later = {key(f) for f in predicted.findings}
    return WhatIf(tuple(requirements), changes, present, predicted,
                  tuple(f for f in predicted.findings if key(f) not in before),
                  tuple(f for f in present.findings if key(f) not in later),
                  notes=tuple(notes), rules_s=time.perf_counter() - t0)


_ORT_GPU = ("onnxruntime-gpu", "ort-nightly-gpu")
_ORT_CPU = ("onnxruntime", "ort-nightly")


def onnxruntime_over_gpu(changes: Sequence[Change], versions: Mapping[str, str]) -> Finding | None:
    """``onnxruntime-cpu-over-gpu``, predicted: the install adds or moves the CPU ``onnxruntime``
    while ``onnxruntime-gpu`` stays (faster-whisper, rembg and others depend on ``onnxruntime``).
    Both wheels write ``onnxruntime/`` and pip removes neither (their names differ), so the wheel
    written last is the one ``import onnxruntime`` loads (the check decides it afterwards from the
    pybind module's ``RECORD`` hash, :mod:`cudnn_magic.probes.frameworks.onnxruntime`)."""
    names = {canonical(k): v for k, v in versions.items()}
    moved = {c.name for c in changes}
    gpu = next((n for n in _ORT_GPU if n in names), None)
    cpu = next((n for n in _ORT_CPU if n in names), None)
    if gpu is None or cpu is None or cpu not in moved:
        return None
    also = f" (and {gpu} {names[gpu]} in the same install: whichever pip writes last wins)" if gpu in moved else ""
    return Finding(
        "onnxruntime-cpu-over-gpu", "error",
        f"The CPU {cpu} {names[cpu]} would be written over {gpu} {names[gpu]}: ONNX Runtime would have no CUDA provider",
        f"This install brings {cpu} {names[cpu]}{also}. Both distributions install onnxruntime/; pip removes neither "
        f"(their names differ) and writes the CPU wheel's files over the GPU one's, so import onnxruntime loads the CPU "
        "build (CPU and Azure providers only) and no cuDNN is used. Install with --no-deps and add the GPU wheel's "
        "requirements yourself, or reinstall the GPU wheel afterwards (pip uninstall -y onnxruntime && pip install "
        f"--force-reinstall --no-deps {gpu}=={names[gpu]}).", ())


def safer_candidates(result: WhatIf) -> list[tuple[str, str]]:
    """Requirements that may avoid the predicted errors, each with why, computed with
    ``packaging`` (never resolved here: the caller asks pip with a second what-if and keeps
    only one predicted to be error-free).

    * The one cuDNN requirement every predicted framework accepts
      (:func:`cudnn_magic.fixes.solver.solve_cudnn`, as ``install-matching-cudnn`` computes it).
    * For a cuDNN wheel of another CUDA family than the one already writing the same folder,
      the installed family's wheel with the same version specifier, never below the installed
      version (:func:`_same_family`), then that wheel kept as it is (``>=`` installed)."""
    out: list[tuple[str, str]] = []
    sol = solve_cudnn(result.predicted.frameworks)
    if sol.requirement:
        out.append((sol.requirement, ("the one cuDNN wheel requirement every framework's rule and pin accepts "
                                      "(as install-matching-cudnn computes it)")))
    for f in result.introduced:
        if f.id != "cudnn-wheel-overwritten":
            continue
        for word in result.requirements:
            try:
                r = Requirement(word)
            except InvalidRequirement:
                continue
            folder = cudnn_folder(r.name)
            if folder is None:
                continue
            for ow in result.predicted.wheels_overwritten:
                for n, v in ow.distributions:
                    if canonical(n) != canonical(r.name) and cudnn_folder(n) == folder:
                        for text, why in _same_family(canonical(n), v, r.specifier, folder):
                            if (text, why) not in out:
                                out.append((text, why))
    return out


def _same_family(name: str, installed: str, spec: SpecifierSet, folder: str) -> list[tuple[str, str]]:
    """The installed family's requirements for ``spec``, never below the installed version
    (a "safer" requirement that downgrades the cuDNN already there is no safer: it moves every
    framework built against it). ``packaging.specifiers`` decides: an exact pin below
    ``installed`` is dropped, a range is narrowed to ``>=installed``; then ``name>=installed``
    (keep what is there)."""
    out: list[tuple[str, str]] = []
    try:
        have = Version(installed)
    except InvalidVersion:
        return out
    exact = [Version(s.version) for s in spec if s.operator in ("==", "===") and "*" not in s.version
             and _is_version(s.version)]
    if exact and all(e >= have for e in exact):
        out.append((f"{name}{spec}", (f"{name} already writes {folder}: the same release for its CUDA family "
                                      "overwrites nothing of another family")))
    elif not exact and not any(s.operator in ("==", "===") for s in spec):
        narrowed = SpecifierSet(str(spec)) & SpecifierSet(f">={installed}")
        out.append((f"{name}{narrowed}", (f"{name} already writes {folder}: its CUDA family at the requested "
                                          f"versions, not below the installed {installed}, overwrites nothing of "
                                          "another family")))
    out.append((f"{name}>={installed}", (f"keep {name} {installed} (it already writes {folder}; never a downgrade) "
                                         "instead of adding another CUDA family's wheel over it")))
    return out


def _is_version(text: str) -> bool:
    try:
        Version(text)
    except InvalidVersion:
        return False
    return True


def downgrades(changes: Iterable[Change]) -> list[Change]:
    """The cuDNN wheels (:func:`cudnn_folder`) ``changes`` would move to an older version than
    installed (``packaging.version``); a safer requirement must have none."""
    out = []
    for c in changes:
        if cudnn_folder(c.name) and c.old:
            try:
                if Version(c.new) < Version(c.old):
                    out.append(c)
            except InvalidVersion:
                continue
    return out


__all__ = ["CUDNN_FOLDERS", "Change", "Environment", "WhatIf", "cudnn_folder", "downgrades", "framework_from_metadata",
           "judge_environment", "onnxruntime_over_gpu", "predict", "safer_candidates"]


# --------------------------------------------------------------------------- the what-if, end to end


def environment_now(installed: Installed) -> Environment:
    """The present :class:`cudnn_magic.engines.whatif.Environment` of an environment ``pip inspect``
    described: versions, the ``RECORD`` of every cuDNN wheel (``owners.read_record``), the sha256
    of the files two of them list (small files only, ``owners.digest_if_small``), and the
    frameworks found on disk in its site folders (``frameworks.probe_frameworks(paths=...)``).
    Never raises (what it cannot read is left out)."""
    versions = {canonical(d.name): d.version for d in installed.dists}
    records = []
    seen_infos: set[str] = set()
    for d in installed.dists:
        if cudnn_folder(d.name) and d.dist_info:
            rec = read_record(d.dist_info)
            seen_infos.add(os.path.normpath(d.dist_info))
            if rec is not None:
                records.append(rec)
    # a later copy of a name already found on sys.path: pip neither sees nor replaces it, but its
    # files are on disk (a framework's own folder, further down sys.path)
    shadowed: list[str] = []
    for site in installed.site_dirs:
        try:
            names = sorted(os.listdir(site))
        except OSError:
            continue
        for entry in names:
            info = os.path.normpath(os.path.join(site, entry))
            if not entry.endswith(".dist-info") or info in seen_infos or not cudnn_folder(entry.split("-", 1)[0]):
                continue
            rec = read_record(info)
            if rec is not None:
                seen_infos.add(info)
                records.append(dataclasses.replace(rec, dist_info=info))
                shadowed.append(info)
    seen: dict[str, int] = {}
    for r in records:
        for e in r.entries:
            seen[r.abspath(e)] = seen.get(r.abspath(e), 0) + 1
    observed = {}
    for p, n in seen.items():
        if n > 1 and ".dist-info" not in p:
            dg = digest_if_small(p)
            if dg is not None:
                observed[p] = dg
    fws: list = []
    try:
        fws, _ = probe_frameworks(paths=list(installed.site_dirs))
    except Exception:  # noqa: BLE001 - a probe never raises
        fws = []
    return Environment(versions, tuple(records), observed, tuple(fws), tuple(shadowed))


def _site_of(installed: Installed) -> str:
    """The site-packages pip installs into: where pip's own ``.dist-info`` lies."""
    for d in installed.dists:
        if d.name.lower() == "pip" and d.dist_info:
            return os.path.dirname(d.dist_info)
    return installed.site_dirs[0] if installed.site_dirs else ""


def _relocated(f: Finding, scratch: str, site: str) -> Finding:
    """A finding about a staged (scratch) wheel, with the scratch folder's paths written as the
    site-packages paths the install would give them."""
    if not scratch or not site:
        return f
    swap = lambda t: t.replace(scratch, site) if isinstance(t, str) else t  # noqa: E731
    fixes = tuple(dataclasses.replace(x, title=swap(x.title), action=swap(x.action)) for x in f.fixes)
    return dataclasses.replace(f, title=swap(f.title), detail=swap(f.detail), fixes=fixes)


def _with_consumers(result: WhatIf, plan: PipPlan, inst: Installed, *, gpus: bool, environ: dict[str, str]) -> WhatIf:
    """``result`` with the consumer check (:func:`cudnn_magic.engines.consumer_check.check_consumers`: CTranslate2,
    PaddlePaddle, MXNet, TensorRT, any library that NEEDs cuDNN) run on the environment now and on
    the environment after the install: the consumer wheels pip would install unpacked in a scratch
    folder scanned first (:func:`cudnn_magic.probes.wheel_stage.stage_consumer_wheels`), the
    ``.dist-info`` of what pip replaces left out, and the predicted framework rows for the clash
    rule. Its findings join both reports; ``introduced``/``resolved`` are recomputed. Never raises."""
    try:
        replaced = {c.name for c in result.changes if c.old}
        skip = frozenset(os.path.normpath(d.dist_info) for d in inst.dists
                         if d.dist_info and re.sub(r"[-_.]+", "-", d.name).lower() in replaced)
        sites = [d for d in inst.site_dirs if d]
        with tempfile.TemporaryDirectory(prefix="cudnn-magic-whatif-") as tmp:
            staged_site, _, notes = stage_consumer_wheels(plan.installs, tmp)
            now = check_consumers(frameworks=result.present.frameworks, installed=result.present.cudnn_installed,
                                  environ=environ, gpus=gpus, paths=sites, conda=False)
            after = check_consumers(frameworks=result.predicted.frameworks, installed=result.predicted.cudnn_installed,
                                    environ=environ, gpus=gpus, paths=([staged_site] if staged_site else []) + sites,
                                    conda=False, skip=skip)
        site = _site_of(inst)
        moved = [_relocated(f, staged_site or "", site) for f in after.findings]
        rows = [dataclasses.replace(fw, detail=fw.detail.replace(staged_site, site)) if staged_site and fw.detail else fw
                for fw in after.frameworks]
        present = dataclasses.replace(result.present, findings=result.present.findings + tuple(now.findings),
                                      frameworks=result.present.frameworks + tuple(now.frameworks))
        predicted = dataclasses.replace(result.predicted, findings=result.predicted.findings + tuple(moved),
                                        frameworks=result.predicted.frameworks + tuple(rows))
        key = lambda f: (f.id, f.title)  # noqa: E731
        before, later = {key(f) for f in present.findings}, {key(f) for f in predicted.findings}
        return dataclasses.replace(result, present=present, predicted=predicted,
                                   introduced=tuple(f for f in predicted.findings if key(f) not in before),
                                   resolved=tuple(f for f in present.findings if key(f) not in later),
                                   notes=result.notes + tuple(notes))
    except Exception as exc:  # noqa: BLE001 - the prediction stands without the consumer check
        note = f"consumer check of the prediction failed: {type(exc).__name__}: {exc}"
        return dataclasses.replace(result, notes=(*result.notes, note))


def what_if(requirements: str | Sequence[str], python: str | None = None, *, safer: bool = True,
            driver: Any = "probe", gpus: Any = None) -> WhatIf | PipError:
    """Predict what ``pip install REQUIREMENTS`` would do to cuDNN in ``python``'s environment
    (default: this interpreter): pip's dry run, and what is installed (this interpreter:
    ``importlib.metadata`` in-process; another one: its ``pip inspect``, run at the same time), then
    :func:`cudnn_magic.engines.whatif.predict`. When the prediction has an error and ``safer`` is set,
    the candidates of :func:`cudnn_magic.engines.whatif.safer_candidates` are tried with pip's dry run in
    turn, and the first one predicted error-free that moves no cuDNN wheel below its installed
    version (:func:`cudnn_magic.engines.whatif.downgrades`) and changes something is reported; one that
    pip would install nothing for is no advice ("install X instead" where X is there): then
    ``safer`` stays None and ``safer_why`` says to leave the environment as it is.

    Returns:
        :class:`cudnn_magic.model.WhatIf`, or :class:`PipError` (one clear line). Nothing is
        installed either way. Never raises.
    """
    try:
        python = python or sys.executable
        t0 = time.perf_counter()
        inst: Installed | PipError
        if _same_interpreter(python):
            plan, inst = pip_dry_run(requirements, python), installed_here()
        else:  # another environment: ask its own pip what is installed, at the same time
            with ThreadPoolExecutor(2) as pool:
                fut_plan = pool.submit(pip_dry_run, requirements, python)
                fut_inst = pool.submit(pip_inspect, python)
                plan, inst = fut_plan.result(), fut_inst.result()
        pip_s = time.perf_counter() - t0
        if isinstance(plan, PipError):
            return plan
        if isinstance(inst, PipError):
            return inst
        if driver == "probe":
            try:
                driver, gpus = driver_and_gpus_within()
            except Exception as exc:  # noqa: BLE001
                driver, gpus = Unavailable(f"NVML probe failed: {exc}"), ()
        now = environment_now(inst)
        split = split_requirements(requirements)
        words = tuple(split[0] + split[1]) if not isinstance(split, PipError) else ()
        notes = [f"resolved by pip {plan.pip_version} (install --dry-run --report) for {python}; nothing was installed"]
        files, file_notes = planned_records(plan.installs)
        result = predict([(p.name, p.version, p.requires_dist) for p in plan.installs], now, site=_site_of(inst),
                         driver=driver, gpus=tuple(gpus or ()), environ={"LD_LIBRARY_PATH": os.environ.get("LD_LIBRARY_PATH", "")},
                         requirements=words, notes=notes + file_notes, files=files)
        result = dataclasses.replace(result, pip_s=pip_s)
        result = _with_consumers(result, plan, inst, gpus=bool(gpus),
                                 environ={"LD_LIBRARY_PATH": os.environ.get("LD_LIBRARY_PATH", "")})
        if safer and result.introduces_error:
            opts = split[1] if not isinstance(split, PipError) else []
            unchanged = ""  # an error-free candidate pip would install nothing for: no advice to install it
            for cand, why in safer_candidates(result):
                alt = what_if([cand, *opts], python, safer=False, driver=driver, gpus=gpus)
                if isinstance(alt, PipError) or alt.error or downgrades(alt.changes):
                    continue
                if not alt.changes:
                    unchanged = unchanged or cand
                    continue
                changes = "; ".join(str(c) for c in alt.changes)
                return dataclasses.replace(result, safer=cand, safer_why=f"{why}; pip resolves it ({changes}) "
                                                                         "and the same rules predict no error")
            if unchanged:
                return dataclasses.replace(result, safer_why=(
                    f"nothing to install instead: the only error-free requirement found, {unchanged}, is "
                    "what is installed (pip would change nothing); leave the environment as it is, or give "
                    "the other cuDNN an environment of its own"))
        return result
    except Exception as exc:  # noqa: BLE001 - never raise into the cell
        return PipError("pip-failed", f"the what-if failed: {type(exc).__name__}: {exc}")
