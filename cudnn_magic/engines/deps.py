"""Findings for a cuDNN copy that fails to load in a child process (the deep probe): a missing
library cuDNN needs gets the advice that would make that very name resolve here
(:func:`cudnn_magic.rules.cuda_deps.dep_advice`, from the copy's own RUNPATH and the start
``LD_LIBRARY_PATH``); anything else, a reinstall of the copy."""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Mapping

from ..model import Finding, Fix, LibraryCopy
from ..probes.loader import elf_facts, expand_entry
from ..rules.cuda_deps import dep_advice

_MISSING = re.compile(r"(lib(?:nvrtc|cublasLt|cublas|z|nvJitLink)[\w.-]*\.so[\w.]*): cannot open shared object")


def _runpath_dirs(cudnn_path: str) -> list[str]:
    """The RUNPATH (else RPATH) folders of the cuDNN files in ``cudnn_path``'s folder, ``$ORIGIN``
    expanded: where their own ``dlopen`` and ``DT_NEEDED`` requests are searched."""
    folder = os.path.dirname(cudnn_path)
    out: list[str] = []
    for f in [cudnn_path, *sorted(glob.glob(os.path.join(glob.escape(folder), "libcudnn_*.so*")))]:
        dyn = elf_facts(f)
        if isinstance(dyn, str):
            continue
        for e in dyn.runpath or dyn.rpath:
            d = expand_entry(e, folder)[0]
            if d not in out:
                out.append(d)
    return out


def deep_error_findings(deep_errors: dict[str, str], by_path: dict[str, LibraryCopy], environ: dict[str, str],
                        sites: list[str]) -> list[Finding]:
    """One ``cudnn-sublibrary-load-failed`` finding per copy that failed to load in a child process.
    ``install-cudnn-deps`` is applicable only when a pip install alone makes the missing name resolve
    (the wheel's folder is on the copy's RUNPATH or the start ``LD_LIBRARY_PATH``); otherwise its
    action says exactly what would (the link for an unversioned name, ``LD_LIBRARY_PATH``, the
    system package). Reads the copies' dynamic sections; never raises."""
    out: list[Finding] = []
    for path, err in deep_errors.items():
        owner = by_path.get(path, LibraryCopy(path, "", "")).owner
        m = _MISSING.search(err)
        if m:  # cuDNN itself is complete; a library it needs is not on the loader's path
            runpath = _runpath_dirs(path)
            ldp = [e for e in environ.get("LD_LIBRARY_PATH", "").split(":") if e]
            cuda = 13 if "cu13" in owner or any(d.rstrip("/").endswith("cu13/lib") for d in runpath) else 12
            adv = dep_advice(m.group(1), cuda, [*ldp, *runpath], sites, f"the cuDNN in {os.path.dirname(path)}")
            fix = Fix("install-cudnn-deps", f"Make {adv.name}, which cuDNN's sub-libraries open, resolvable",
                      f"{adv.action}   # {adv.why}", True, adv.pip_resolves,
                      "" if adv.pip_resolves else "a pip install alone would not make the name resolve")
        else:
            fix = Fix("reinstall-cudnn", "Reinstall this cuDNN so all its sub-libraries are present",
                      f"reinstall the package that owns {path} ({owner})", True)
        out.append(Finding(
            "cudnn-sublibrary-load-failed", "error", f"Loading {path} fails",
            f"In a child process: {err}. A framework that picks this copy fails or kills the kernel.", (fix,),
        ))
    return out


def deep_soft_findings(results: Mapping[str, object], by_path: Mapping[str, LibraryCopy]
                       ) -> tuple[list[Finding], list[str], list[str]]:
    """What the deep probe found that is not a broken copy, from each copy's
    :class:`~cudnn_magic.probes.subprocess_probe.DeepResult` problems, as
    ``(findings, copy notes, notes)``:

    * ``absent-aborts`` (a sub-library the package does not ship, and this release's
      ``libcudnn.so.9`` aborts the process on a call it serves): one ``cudnn-sublibrary-load-failed``
      WARNING per copy, with no reinstall (the package is whole: reinstalling brings the same files);
    * ``absent-optional`` (not shipped; the call returned ``..._SUBLIBRARY_UNAVAILABLE``): one
      sentence per copy for the copies' section;
    * anything else of severity "note" (``no-driver``): one "could not read" note per copy.
    """
    findings: list[Finding] = []
    copy_notes: list[str] = []
    notes: list[str] = []
    for path, r in results.items():
        problems = [q for q in getattr(r, "problems", ()) if q.severity != "error"]
        aborts = [q for q in problems if q.kind == "absent-aborts"]
        absent = [q for q in problems if q.kind == "absent-optional"]
        rest = [q for q in problems if q.kind not in ("absent-aborts", "absent-optional")]
        copy = by_path.get(path)
        release = f"cuDNN {copy.version}" if copy and copy.version else "this cuDNN"
        for q in aborts:
            findings.append(Finding(
                "cudnn-sublibrary-load-failed", "warning",
                f"{path} ({release}) ends the process on calls its package does not ship",
                f"{q.library}: {q.reason}. The package ({copy.owner if copy and copy.owner else 'its owner'}) is whole: "
                "it ships the graph API only. A framework that picks this copy and calls the cuDNN API of that "
                "sub-library (the legacy API: tensor descriptors, convolutions) is killed (SIGABRT); newer cuDNN "
                "releases return CUDNN_STATUS_NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE there instead.", ()))
        if absent:
            libs = ", ".join(q.library for q in absent)
            codes = sorted({m.group(1) for q in absent for m in [re.search(r"returned (\w+)", q.reason)] if m})
            copy_notes.append(f"{path} ({release}): {libs} not shipped in this package (their version checks returned "
                              f"{', '.join(codes) or 'an error'}): the cuDNN API calls they serve are unavailable, "
                              "the graph API works.")
        if rest:
            notes.append(f"deep probe of {path}: " + "; ".join(f"{q.library}: {q.reason}" for q in rest))
    return findings, copy_notes, notes
