"""Live facts joined with the two diagnoses whose text cannot decide alone. Pure: the model only.

* ``unnamed-library-load-failed`` (a DLL or shared object failed to load, the message names none):
  the check's own search of every cuDNN consumer (:attr:`~cudnn_magic.model.Report.findings`
  ``cudnn-library-not-found``/``cudnn-sublibrary-load-failed``, the consumers whose cuDNN the loader
  will not find) says whether cuDNN is what is missing. When it is, the cuDNN diagnosis comes first
  with the finding's words and fixes; when every consumer finds its cuDNN, the fact says the missing
  library is another one, and no cuDNN claim is made.
* ``framework-cpu-build``: the framework row of this environment says whether the build really is
  CPU-only (``FrameworkBuild.cpu_build``, read from its files), and NVML whether a GPU and driver are
  here at all (without them a CUDA build would not use a GPU either: the fix is then not offered,
  :func:`cudnn_magic.fixes.advice.install_cudnn_build`).

Called by :func:`cudnn_magic.engines.diagnose.diagnose` with its aggregates (``aggs``: id -> aggregate with
``score``, ``facts``, ``fact_fixes``, ``framework``, ``title``) and a factory for a new one.
"""

from __future__ import annotations

from typing import Any, Callable

from ..model import Driver, Report, Unavailable
from ..rules.cudnn_version import try_parse

__all__ = ["age", "join_cpu_build", "join_unnamed_library"]

_CUDNN_FINDINGS = ("cudnn-library-not-found", "cudnn-sublibrary-load-failed")


def age(loaded: str | None, compiled: str | None) -> str:
    """How the loaded cuDNN release compares with the one built against, as a title word: "older
    than", "newer than", "the same release as", "another major than"; "" when either is unknown."""

    rt, src = try_parse(loaded) if loaded else None, try_parse(compiled) if compiled else None
    if rt is None or src is None:
        return ""
    if rt.major != src.major:
        return "another major than"
    a, b = (rt.minor or 0, rt.patch or 0), (src.minor or 0, src.patch or 0)
    return "older than" if a < b else "newer than" if a > b else "the same release as"


def _braces(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")  # a title is a str.format template


def join_unnamed_library(aggs: dict[str, Any], report: Report, new_agg: Callable[[str], Any]) -> None:
    """Say whether cuDNN is the library an unnamed load failure misses (module docstring)."""
    a = aggs.get("unnamed-library-load-failed")
    if a is None:
        return
    missing = [f for f in report.findings if f.id in _CUDNN_FINDINGS]
    unfound = [c for c in report.consumers if c.picked is None]
    if missing or unfound:
        sub_only = bool(missing) and all(f.id == "cudnn-sublibrary-load-failed" for f in missing)
        tid = "cudnn-sublibrary-load-failed" if sub_only else "cudnn-library-not-found"
        t = aggs.get(tid) or aggs.setdefault(tid, new_agg(tid))
        lines = [f"fact: {f.title}. {f.detail}".strip() for f in missing[:3]]
        lines += [f"fact: {c.distribution} ({c.path}) asks for {c.soname} ({c.how}); the loader's search finds none"
                  for c in unfound[:3] if not any(c.soname in ln for ln in lines)]
        for line in lines:
            line = line if len(line) <= 900 else line[:897] + "..."
            if line not in t.facts:
                t.facts.append(line)
        for f in missing:
            t.fact_fixes.extend(x for x in f.fixes if all(x.id != y.id for y in t.fact_fixes))
        if not t.title:
            what = missing[0].title if missing else f"{unfound[0].distribution} finds no {unfound[0].soname}"
            t.title = _braces(f"The library that failed to load is cuDNN: {what}")
        t.score = max(t.score, a.score + 10.0)
        a.facts.append("fact: this environment's loader search finds a cuDNN consumer without its cuDNN "
                       f"({len(missing) + len(unfound)} found): cuDNN is the likely missing DLL")
        return
    found = [c for c in report.consumers if c.picked]
    if found:
        names = ", ".join(dict.fromkeys(f"{c.distribution} -> {c.picked}" for c in found[:4]))
        a.facts.append(f"fact: every cuDNN consumer here finds its cuDNN ({names}): the library that failed to "
                       "load is not cuDNN (the CUDA runtime, the MSVC runtime, zlib, or another dependency)")
    elif report.frameworks or report.cudnn_installed:
        a.facts.append("fact: no cuDNN consumer of this environment asks for a cuDNN it cannot find")


def join_cpu_build(aggs: dict[str, Any], report: Report) -> None:
    """Confirm or contradict a CPU build with this environment's framework row; say whether a GPU
    and driver are here (module docstring)."""
    a = aggs.get("framework-cpu-build")
    if a is None:
        return
    row = next((b for b in report.frameworks if b.name == a.framework), None)
    if row is not None and row.cpu_build:
        a.facts.append(f"fact: {row.name} {row.version} here is a CPU-only build"
                       + (f" ({row.cudnn_compiled_source})" if row.cudnn_compiled_source else ""))
        a.score += 5.0
    elif row is not None:
        a.facts.append(f"note: {row.name} {row.version} in this environment is a CUDA build"
                       + (f" (CUDA {row.cuda_compiled})" if row.cuda_compiled else "")
                       + ": the message came from another environment, or this kernel imports another copy")
    drv = report.driver
    if not report.gpus and (drv is None or isinstance(drv, Unavailable)):
        why = drv.reason.split(":", 1)[0] if isinstance(drv, Unavailable) else "NVML found no GPU"
        a.facts.append(f"fact: no NVIDIA GPU or driver on this machine ({why}): a CUDA build would not use a GPU "
                       "here either; run on the CPU (device='cpu', map_location='cpu') or on a machine with one")
    elif isinstance(drv, Driver) and drv.version:
        gpu = report.gpus[0].name if report.gpus else "no GPU listed"
        a.facts.append(f"fact: NVIDIA driver {drv.version}"
                       + (f" supports CUDA {drv.cuda_driver_version}" if drv.cuda_driver_version else "")
                       + f"; GPU 0: {gpu}")
