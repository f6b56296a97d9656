"""Error text + captured log lines + live facts -> ranked catalogue diagnoses. Pure.

Imports only the standard library, ``packaging`` and ``cudnn_magic.model`` / ``versions`` /
``knowledge`` (with ``knowledge.status``) (docs/how-it-is-built.md). Evidence order follows
docs/ids.md: live facts, then native log lines, then the Python exception. The
knowledge base (:mod:`cudnn_magic.knowledge`) finds the wordings; this module weighs them,
refines the generic ``cudnn-init-failed`` with facts when they decide it, writes the titles with
the versions, and computes the fixes (stable ids: :data:`FIX_IDS`).
"""

from __future__ import annotations

import os.path
import re
import shlex
from dataclasses import dataclass, field, replace

from ..fixes.advice import offer
from ..fixes.catalogue import RUNNABLE, SPECS
from ..fixes.frameworks import fits, in_play, raising_framework
from ..knowledge.calls import REFINES as CALL_REFINES
from ..knowledge.calls import TITLES as CALL_TITLES
from ..knowledge.calls import call_role
from ..knowledge.matcher import FIX_IDS, scan
from ..knowledge.signature import Hit
from ..knowledge.status_codes import CUDNN8_STATUS, CUDNN9_STATUS, status_by_name
from ..model import CudnnInUse, Diagnosis, Driver, Fix, Report, Unavailable
from ..rules.compat import judge
from ..rules.consumers import CONSUMER_CHECKERS
from ..rules.cudnn_version import CudnnVersion, try_parse
from ..rules.gpu import driver_at_least, driver_floor
from .diagnosis_catalogue import CATALOGUE
from .joins import age, join_cpu_build, join_unnamed_library
from .replaced import now_on_disk

__all__ = ["CATALOGUE", "FIX_IDS", "diagnose", "fix_advice", "gpu_unused_warnings"]

# Signals that are GPU problems but not cuDNN ones: alone they never make a cuDNN diagnosis
# nor count as the "cuDNN failure" that needs_context signatures need.
_PLAIN_GPU = frozenset({"cuda-error-out-of-memory", "tf-resource-exhausted", "torch-cuda-oom"})
_GENERIC_IDS = frozenset({"cudnn-init-failed"})
_SAFE = re.compile(r"[^\w.+\-(), /:]")


def diagnose(exception: str = "", log: str | bytes = "", report: Report | None = None, *,
             exc_type: str | None = None, traceback: str = "") -> list[Diagnosis]:
    """Explain a failure: strongest diagnosis first, [] when nothing cuDNN-related.

    Args:
        exception: ``str(exc)`` or "Type: message".
        log: native stderr captured during the cell, or a whole pasted/CI log; ``str``, or
            UTF-8 ``bytes`` as read from a file (scanned in place, never decoded whole).
        report: live facts (``%cudnn_check``'s Report) of THIS process, or None (a pasted log
            from elsewhere: then only the text decides).
        exc_type: the exception's type name, when known.
        traceback: the formatted Python traceback, when available.

    Returns:
        Diagnoses (docs/ids.md ids), strongest first. Never raises: an internal
        error is logged at debug level and gives [].
    """
    try:
        exc = exception if isinstance(exception, str) else ""
        if len(exc) > MAX_EXCEPTION_CHARS:  # the decisive words are at the ends of a message
            half = MAX_EXCEPTION_CHARS // 2
            exc = exc[:half] + "\n" + exc[-half:]
        if isinstance(traceback, str) and len(traceback) > MAX_EXCEPTION_CHARS:
            traceback = traceback[-MAX_EXCEPTION_CHARS:]
        if exc_type and exc_type not in exc[:200]:
            exc = f"{exc_type}: {exc}"
        hits: list[Hit] = []
        for src, text in (("log", log), ("exception", exc), ("traceback", traceback)):
            if text and (isinstance(text, str) or (src == "log" and isinstance(text, bytes))):
                found = scan(text, src)
                if src == "traceback":  # the traceback repeats the message (its raise line): quote it once
                    in_exc = {id(h.signature) for h in hits if h.source == "exception"}
                    found = [h for h in found if id(h.signature) not in in_exc]
                hits.extend(found)
        if isinstance(log, bytes):  # only the ends are read for the context: never decode it all
            log = (log[:65_536] + b"\n" + log[-65_536:]).decode("utf-8", "replace")
        context = _Context.build(exc, log if isinstance(log, str) else "", traceback or "")
        return _build(hits, report, context, warnings=False)
    except Exception:  # never harm the session
        import logging  # start-up cost (logging with traceback and string): only when diagnose itself failed

        logging.getLogger("cudnn_magic").debug("diagnose failed", exc_info=True)
        return []


def gpu_unused_warnings(log: str, report: Report | None = None, *, joined: bool = True) -> list[Diagnosis]:
    """Warnings for a cell that SUCCEEDED but printed that the GPU will be skipped.

    TensorFlow "Cannot dlopen some GPU libraries ... Skipping registering GPU devices" (when a
    cuDNN library is among the missing ones, or none is named), ONNX Runtime "Failed to create
    CUDAExecutionProvider", JAX "CUDA backend failed to initialize" with a cuDNN reason, JAX
    "a CUDA-enabled jaxlib is not installed" and ONNX Runtime's CPU build ("Specified provider
    'CUDAExecutionProvider' is not in available provider names": ``framework-cpu-build``),
    TensorFlow ignoring a GPU for its compute capability, TensorRT's and OpenCV's "loaded another
    cuDNN" warnings, and cuDNN version/loading lines printed without an exception.

    ``joined=False`` skips the search for lines split by a hard wrap (a cell's own output,
    not a paste).

    Returns:
        Warning diagnoses (catalogue ids, usually ``cudnn-library-not-found``,
        ``cudnn-version-mismatch`` or ``framework-cpu-build``), or []. Never raises.
    """
    try:
        if not log or not isinstance(log, str):
            return []
        hits = scan(log, "log", warnings=True, joined=joined)
        relevant = {"cudnn-library-not-found", "cudnn-version-mismatch", "cudnn-sublibrary-load-failed",
                    "gpu-arch-unsupported", "framework-cpu-build"}
        if not any((h.signature.warning and h.weight > 0) or (h.diagnosis in relevant and h.weight >= 80)
                   for h in hits):
            return []
        context = _Context.build("", log, "")
        out = _build(hits, report, context, warnings=True)
        return [d for d in out if d.id in relevant]
    except Exception:
        import logging  # start-up cost: as in diagnose, only on a failure

        logging.getLogger("cudnn_magic").debug("gpu_unused_warnings failed", exc_info=True)
        return []


#: a path of the platform whose CUDA builds differ: macOS home folders, Windows drive letters
_PLATFORM_PATHS = ((re.compile(r"(?:^|[\s\"'(=])/Users/[^/\n]{1,60}/", re.MULTILINE), "darwin"),
                   (re.compile(r"(?:^|[\s\"'(=])[A-Za-z]:\\[^\\\s]{1,60}\\", re.MULTILINE), "win32"))


@dataclass
class _Context:
    """Hints taken from all the text (which framework printed it, on which platform)."""

    framework: str = ""
    platform: str = ""

    @classmethod
    def build(cls, exc: str, log_text: str, tb: str) -> _Context:
        # the exception's type, the innermost framework frame, then the words (bounded work)
        text = "\n".join((exc[:65_536], tb[-65_536:], log_text[:65_536], log_text[-65_536:]))
        platform = next((p for rx, p in _PLATFORM_PATHS if rx.search(text)), "")
        return cls(raising_framework(exc, tb, log_text), platform)


@dataclass
class _Agg:
    id: str
    score: float = 0.0
    hits: list[tuple[float, Hit]] = field(default_factory=list)
    support: list[Hit] = field(default_factory=list)
    facts: list[str] = field(default_factory=list)
    versions: dict[str, str] = field(default_factory=dict)
    fact_fixes: list[Fix] = field(default_factory=list)
    framework: str = ""
    platform: str = ""  #: the platform the text's paths show ("win32", "darwin"), "" unknown
    title: str = ""  #: a title set by a refinement (the call that failed), formatted with the versions
    suppressed: set[str] = field(default_factory=set)  # fix ids the live facts show would change nothing

    def add(self, weight: float, hit: Hit | None) -> None:
        self.score = max(self.score, weight)
        if hit is not None:
            self.hits.append((weight, hit))


def _is_core(h: Hit) -> bool:
    s = h.signature
    return h.weight > 0 and not s.needs_context and not s.supports and s.name not in _PLAIN_GPU


def _build(hits: list[Hit], report: Report | None, ctx: _Context, warnings: bool) -> list[Diagnosis]:
    # A needs_context wording counts next to a cuDNN failure, or where the failing code path is
    # shown to run inside cuDNN ("no kernel image is available" raised in _cudnn_rnn_flatten_weight).
    core = any(_is_core(h) or h.signature.cudnn_path for h in hits)
    kept: list[Hit] = []
    for h in hits:
        if h.signature.needs_context and not core:
            continue
        kept.append(h)
    kept = _drop_refuted(_drop_unnamed_loads(kept))

    aggs: dict[str, _Agg] = {}

    def agg(i: str) -> _Agg:
        if i not in aggs:
            aggs[i] = _Agg(i)
        return aggs[i]

    supports: list[Hit] = []
    weighed: list[tuple[float, Hit]] = []
    for h in kept:
        if h.signature.supports or h.weight <= 0:
            supports.append(h)
            continue
        bonus = 2.0 if h.source == "log" else 0.0
        weighed.append((h.weight + bonus, h))
        agg(h.diagnosis).add(h.weight + bonus, h)
        for other, w in h.signature.also:
            if other != h.diagnosis:
                agg(other).add(w, h)
        if h.diagnosis != h.signature.diagnosis and not h.signature.generic:
            agg(h.signature.diagnosis).add(min(h.signature.weight, h.weight - 10), h)
    if not aggs:
        return []
    for h in supports:
        for i in h.signature.supports:
            if i in aggs:
                aggs[i].support.append(h)

    for a in aggs.values():
        a.hits.sort(key=lambda wh: (-wh[0], -wh[1].position))
        distinct = {h.line for _, h in a.hits if h.diagnosis == a.id}
        a.score += min(3.0, max(0, len(distinct) - 1) * 1.0)
    _corroborate(aggs, weighed)
    _refine_by_call(aggs, supports)
    for a in aggs.values():
        a.hits.sort(key=lambda wh: (-wh[0], -wh[1].position))
        a.versions = _versions(a)
        a.framework = _framework(a, ctx)
        a.platform = ctx.platform

    if report is not None:
        _refine_with_facts(aggs, report)

    out: list[Diagnosis] = []
    for a in sorted(aggs.values(), key=lambda a: -a.score):
        out.append(_diagnosis(a, report))
    return out


def _drop_unnamed_loads(kept: list[Hit]) -> list[Hit]:
    """Which library is missing decides: a wording that says the GPU libraries or provider failed
    to load without naming which (``unnamed_load``) is no cuDNN matter when the text names only
    non-cuDNN libraries as the missing ones (libcublasLt, libcufft, libnvinfer, ...)."""
    named = {h.signature.names_missing for h in kept if h.signature.names_missing}
    if "other" in named and "cudnn" not in named:
        return [h for h in kept if not h.signature.unnamed_load]
    return kept


def _drop_refuted(kept: list[Hit]) -> list[Hit]:
    """A marker that shows a claim is not so (``Signature.refutes``: JAX's "CUDA backend failed to
    initialize" means its CUDA plugin is installed) drops that claim's hits of the same framework."""
    refuted = {(i, h.signature.framework) for h in kept for i in h.signature.refutes}
    if not refuted:
        return kept
    return [h for h in kept if (h.diagnosis, h.signature.framework) not in refuted]


def _corroborate(aggs: dict[str, _Agg], weighed: list[tuple[float, Hit]]) -> None:
    """When a wording leaves two ids possible (its own and an ``also`` one), the one that other,
    decisive evidence supports comes first: "Unable to find a valid cuDNN algorithm" next to "CUDA
    out of memory" is memory. Decisive means a hit of that id which does not itself list the
    first id as an alternative (two ambiguous wordings never promote each other), and never the
    generic ``cudnn-init-failed``. It comes first also when the ambiguous wording was repeated
    (its id's score holds a bonus for each distinct line, up to 3: four "cudnn PoolForward launch
    failed" lines next to one "OOM when allocating tensor" are still memory); the bonus that
    decisive lines of the ambiguous wording's own id earn is not outbid."""
    direct: dict[str, list[Hit]] = {}
    for _, h in weighed:
        direct.setdefault(h.diagnosis, []).append(h)
    for w, h in weighed:
        for other, _ in h.signature.also:
            if other == h.diagnosis or other in _GENERIC_IDS or other not in aggs:
                continue
            if any(all(alt != h.diagnosis for alt, _ in d.signature.also) for d in direct.get(other, ())):
                # above the ambiguous wordings with their repetition bonus (as _build gives it),
                # not above the id's other, decisive evidence
                lines = {x.line for x in direct.get(h.diagnosis, ()) if any(o == other for o, _ in x.signature.also)}
                aggs[other].score = max(aggs[other].score, w + min(3.0, max(0, len(lines) - 1) * 1.0) + 1.0)


def _refine_by_call(aggs: dict[str, _Agg], markers: list[Hit]) -> None:
    """The failing call decides what a bare status means (:data:`cudnn_magic.knowledge.calls.REFINES`):
    ``CUDNN_STATUS_INTERNAL_ERROR`` from ``cudnnCreate`` is a handle that could not be created
    (``cudnn-init-failed``), from ``cudnnSetStream`` a broken context. Only ids that stand on a
    bare status name or number are refined; the status's own id stays, ranked after."""
    for m in markers:
        role = call_role(m.groups.get("call", ""))
        table = CALL_REFINES.get(role or "")
        if not table:
            continue
        for a in list(aggs.values()):
            if a.id not in table or not a.hits:
                continue
            own = [h for _, h in a.hits if h.diagnosis == a.id]
            if not own or not all(h.signature.generic for h in own):
                continue  # a wording of its own (not just a status) keeps its meaning
            to, how = table[a.id]
            t = aggs.get(to) or aggs.setdefault(to, _Agg(to))
            score = a.score + 5.0 if how == "first" else a.score - 6.0
            t.score = max(t.score, score)
            for h in (own[0], m):
                if all(h is not x for _, x in t.hits):
                    t.hits.append((score if h is own[0] else score - 0.5, h))
            if not t.title:
                t.title = CALL_TITLES.get(role or "", "")


# --------------------------------------------------------------------------- versions


def _clean(value: str) -> str:
    return _SAFE.sub("", str(value))[:80].rstrip(".,: ")


def _decode_version(raw: str) -> CudnnVersion | None:
    v = try_parse(raw.strip())
    if v is None or v.major > 99:
        return None
    return v


def _versions(a: _Agg) -> dict[str, str]:
    out: dict[str, str] = {}
    ordered = [h for _, h in a.hits if h.diagnosis == a.id] + [h for _, h in a.hits] + a.support
    for h in ordered:
        for k, raw in h.groups.items():
            if k in out or not raw:
                continue
            if k in ("loaded", "compiled", "minimum"):
                v = _decode_version(raw)
                if v is not None:
                    out[k] = str(v)
            elif k in ("loaded_compat", "compiled_compat"):
                v = _decode_version(raw)
                if v is not None:
                    out[k] = v.short()
            elif k == "status":
                st = status_by_name(raw) if raw.upper().startswith("CUDNN_STATUS_") else None
                out["status"] = _clean(raw)
                # a name in both numberings (BAD_PARAM is 3 in cuDNN 8, 2000 in 9) has no single code
                in8 = raw.upper() in CUDNN8_STATUS.values()
                in9 = raw.upper() in CUDNN9_STATUS.values()
                if st is not None and st.code is not None and "status_code" not in out and in8 != in9:
                    out["status_code"] = str(st.code)
            elif k in ("driver", "status_code", "soname", "library", "symbol", "dependency", "required",
                       "cuda", "min_sm", "compute_capability", "descriptor", "shape", "cuda_error",
                       "other_library", "mode", "driver_cuda", "error_code", "call", "op", "fe_code", "module",
                       "header", "version"):
                out[k] = _clean(raw)
            elif k in ("free", "total"):
                out[f"{k}_bytes"] = _clean(raw)
    return out


def _framework(a: _Agg, ctx: _Context) -> str:
    for _, h in a.hits:
        s = h.signature
        if s.framework and s.framework != "TensorFlow/XLA":
            return s.framework
        if s.framework == "TensorFlow/XLA":
            # TF <= 2.14 logs "tensorflow/stream_executor" or "tensorflow/compiler/xla"; TF >= 2.15
            # vendors XLA as "external/local_xla"; jaxlib builds log "external/xla"; the absl
            # format ("E0607 ... cuda_dnn.cc:522]") carries no path.
            low = h.line.lower()
            if "tensorflow/" in low or "local_xla" in low:
                return "TensorFlow"
            if "external/xla" in low:
                return "JAX"
            if ctx.framework:
                return ctx.framework
            return "TensorFlow/JAX (XLA)"
    return ctx.framework


def _relation(loaded: str | None, compiled: str | None, framework: str) -> str:
    rt, src = try_parse(loaded) if loaded else None, try_parse(compiled) if compiled else None
    if rt is None or src is None:
        return "is not compatible with"
    if rt.major != src.major:
        return "is a different major version than"
    if src.minor is not None and rt.minor is not None:
        if rt.minor < src.minor or (rt.minor == src.minor and (rt.patch or 0) < (src.patch or 0)):
            return "is older than"
        if rt.minor != src.minor:
            return "is a different minor release than"
    checker = "pytorch" if framework == "PyTorch" else "tensorflow"
    j = judge(checker, rt, src)  # type: ignore[arg-type]
    return "is older than" if j.ok is False else "is not accepted by the check against"


# --------------------------------------------------------------------------- facts


#: Which diagnoses a %cudnn_check finding of the consumer check speaks to.
_CONSUMER_FINDING_FOR = {
    "cudnn-sublibrary-load-failed": ("cudnn-sublibrary-load-failed", "cudnn-library-not-found"),
    "cudnn-consumer-clash": ("cudnn-sublibrary-load-failed", "cudnn-library-not-found", "cudnn-version-mismatch"),
    "cudnn-import-order": ("cudnn-sublibrary-load-failed", "cudnn-version-mismatch", "cudnn-library-not-found"),
}


def _consumer_facts(aggs: dict[str, _Agg], report: Report) -> None:
    consumer_titles = {f"{fw.name} {fw.version}" for fw in report.frameworks if fw.checker in CONSUMER_CHECKERS}
    for f in report.findings:
        targets = _CONSUMER_FINDING_FOR.get(f.id, ())
        if f.id == "cudnn-sublibrary-load-failed" and not any(f.title.startswith(t) for t in consumer_titles):
            continue  # the check's own directory findings: the generic text already covers them
        for a in aggs.values():
            if a.id in targets:
                line = f"fact: {f.title}"
                if line not in a.facts:
                    a.facts.append(line)
                    a.fact_fixes.extend(x for x in f.fixes if x.id in FIX_IDS and all(x.id != y.id for y in a.fact_fixes))


def _facts_usable(report: Report) -> bool:
    return bool(report.cudnn_loaded or report.gpus or isinstance(report.driver, Driver)
                or any(fw.verdict in ("ok", "mismatch") for fw in report.frameworks))


def _gib(n: int | None) -> str:
    return "?" if n is None else f"{n / 2**30:.1f} GiB" if n >= 2**30 else f"{n / 2**20:.0f} MiB"


def _note_missing_driver(aggs: dict[str, _Agg], report: Report) -> None:
    """When NVML was asked and found no NVIDIA driver, a cuDNN handle can never be created here:
    say so on the diagnoses where that matters (the live report of this kernel only)."""
    reason = report.driver.reason if isinstance(report.driver, Unavailable) else ""
    if "not found" not in reason.lower() and "not loaded" not in reason.lower():
        return
    oom = aggs.get("gpu-out-of-memory")
    if oom is not None and len(aggs) > 1 and not any(h.signature.diagnosis == oom.id for _, h in oom.hits):
        # only inferred from a generic failure: with no GPU driver here, memory cannot have run out
        del aggs["gpu-out-of-memory"]
    for a in aggs.values():
        if a.id in ("cudnn-init-failed", "cudnn-internal-error", "cudnn-execution-failed", "gpu-out-of-memory"):
            a.facts.append(f"fact: no NVIDIA driver on this machine (NVML: {reason.split(':', 1)[0]}); cuDNN cannot "
                           "create a handle without a GPU and its driver")
            if not any(f.id == "upgrade-driver" for f in a.fact_fixes):
                a.fact_fixes.append(Fix("upgrade-driver", "Run on a machine with an NVIDIA GPU and driver",
                                        "install the NVIDIA driver (nvidia-smi must list the GPU), or select a GPU "
                                        "runtime (Colab: Runtime > Change runtime type)", restart_required=True))


def _join_replaced(aggs: dict[str, _Agg], report: Report) -> None:
    """cuDNN files replaced on disk under this kernel (``pip install -U`` after the first load): a
    sub-library the mapped copy has not opened yet is opened from the new files, another release
    than the one mapped. Said, with the restart, to the cuDNN load and version diagnoses."""
    gone = [c for c in report.cudnn_loaded if c.replaced and c.version]
    now = sorted({v for v in (now_on_disk(c) for c in gone) if v})
    if not gone or not now or {c.version for c in gone} == set(now):
        return
    line = (f"fact: this kernel runs cuDNN {gone[0].version} from files replaced on disk since they were loaded (cuDNN "
            f"{' and '.join(now)} there now); a sub-library it has not opened yet is opened from the new files, another "
            "release than the one mapped; a restart loads one release")
    for a in aggs.values():
        if a.id in ("cudnn-version-mismatch", "cudnn-init-failed", "cudnn-sublibrary-load-failed"):
            a.facts.append(line)
            if all(x.id != "restart-kernel" for x in a.fact_fixes):
                a.fact_fixes.append(Fix("restart-kernel", f"Restart the kernel to load cuDNN {' and '.join(now)}",
                                        "restart the kernel: the next load maps the files on disk now", True, True))


def _refine_with_facts(aggs: dict[str, _Agg], report: Report) -> None:
    """Refine the generic ``cudnn-init-failed`` (and weak ones) with the live facts.

    Only facts that were actually read count: a report with no GPU, no NVML and no cuDNN mapped
    (a CI machine explaining a pasted log) changes nothing.
    """
    a: _Agg | None  # the aggregate each step below refines
    _note_missing_driver(aggs, report)
    # what the text cannot decide alone: which library an unnamed load failure misses, a CPU build
    join_unnamed_library(aggs, report, _Agg)
    join_cpu_build(aggs, report)
    if not _facts_usable(report):
        return
    top = max(aggs.values(), key=lambda a: a.score)
    generic_top = top.id in _GENERIC_IDS or top.id in ("cudnn-internal-error", "cudnn-execution-failed",
                                                     "cudnn-unsupported-config")
    mapped = [lib for lib in report.cudnn_loaded if lib.is_main]
    u = report.cudnn_in_use
    if u is None and mapped:  # a report without the in-process measurement: the first mapped
        u = CudnnInUse(mapped[0].path, mapped[0].version, "first mapped", reached_version=mapped[0].reached_version)
    for lib in mapped[:3]:
        reach = (f"; calls through it reach {lib.reached_version}"
                 if lib.reached_version and lib.reached_version != lib.version else "")
        line = f"fact: {lib.name} {lib.version or '(version unknown)'} is mapped from {lib.path} ({lib.owner}){reach}"
        if lib.replaced:
            line += ("; its file was replaced on disk since it was loaded, and this kernel still runs the mapped copy "
                     f"({lib.replaced})")
        for a in aggs.values():
            if a.id in ("cudnn-version-mismatch", "cudnn-init-failed", "cudnn-library-not-found",
                        "cudnn-sublibrary-load-failed"):
                a.facts.append(line)
    _join_replaced(aggs, report)
    if u is not None:
        line = f"fact: the cuDNN in use is {u.version or '?'} at {u.path}" + (
            f" (its calls reach {u.reached_version})" if u.reached_version and u.reached_version != u.version else "")
        seen = {v for lib in mapped for v in (lib.version, lib.reached_version) if v}
        for a in aggs.values():
            if a.id in ("cudnn-version-mismatch", "cudnn-init-failed", "cudnn-library-not-found",
                        "cudnn-sublibrary-load-failed"):
                if len(mapped) > 1:
                    a.facts.append(line)
                logged = a.versions.get("loaded")
                if logged and seen and not any(v.startswith(logged) or logged.startswith(v) for v in seen):
                    # The log and the live facts disagree: say so instead of leaving two stories.
                    now = u.reached_version or u.version
                    a.facts.append(f"note: the log says cuDNN {logged} was loaded, but this kernel's cuDNN calls "
                                   f"reach {now}: the message came from another process, or a library loaded "
                                   "another copy privately (check with %cudnn_check)")
    # 1. a framework's compiled cuDNN vs the mapped one
    for fw in report.frameworks:
        if fw.verdict != "mismatch" or not fw.cudnn_used:
            continue
        if fw.checker in CONSUMER_CHECKERS and not any(
                f.id == "cudnn-version-mismatch" and f.title.startswith(f"{fw.name} {fw.version} ") for f in report.findings):
            continue  # a consumer row that fails for another reason (its sub-libraries), not its version
        line = (f"fact: {fw.name} {fw.version} was built with cuDNN {fw.cudnn_compiled or '?'}; "
                f"cuDNN {fw.cudnn_used} is in use ({fw.cudnn_used_path or 'path unknown'}). {fw.detail}").strip()
        a = aggs.get("cudnn-version-mismatch") or aggs.setdefault("cudnn-version-mismatch", _Agg("cudnn-version-mismatch"))
        a.facts.append(line)
        a.versions.setdefault("loaded", _clean(fw.cudnn_used))
        if fw.cudnn_compiled:
            a.versions.setdefault("compiled", _clean(fw.cudnn_compiled))
        a.framework = a.framework or fw.name
        if generic_top or a is top:
            a.score = max(a.score, top.score + 6)
        break
    # 2. GPU memory nearly full
    full = [g for g in report.gpus if g.free_bytes is not None and g.total_bytes
            and (g.free_bytes < 256 * 2**20 or g.free_bytes < 0.05 * g.total_bytes)]
    if full:
        g = full[0]
        line = f"fact: GPU {g.index} ({g.name}) has {_gib(g.free_bytes)} free of {_gib(g.total_bytes)}"
        a = aggs.get("gpu-out-of-memory")
        if a is None and generic_top:
            a = aggs.setdefault("gpu-out-of-memory", _Agg("gpu-out-of-memory"))
        if a is not None:
            a.facts.append(line)
            if generic_top or a is top:
                a.score = max(a.score, top.score + 4)
    # 2b. plenty of free memory on every GPU: an internal error is not memory running out here
    known = [g for g in report.gpus if g.free_bytes is not None and g.total_bytes]
    internal = aggs.get("cudnn-internal-error")
    if internal is not None and known and not full and all(
            (g.free_bytes or 0) >= 2**30 and (g.free_bytes or 0) >= 0.10 * (g.total_bytes or 0) for g in known):
        g = min(known, key=lambda g: g.free_bytes or 0)
        internal.facts.append(f"fact: GPU {g.index} ({g.name}) has {_gib(g.free_bytes)} free of {_gib(g.total_bytes)} "
                              + ("(the least free of the GPUs) " if len(known) > 1 else "")
                              + "now: GPU memory did not run out")
        internal.suppressed.add("free-gpu-memory")
    # 3. driver below the floor of the frameworks' CUDA
    drv = report.driver if isinstance(report.driver, Driver) else None
    if drv is not None and drv.version:
        cudas = [fw.cuda_compiled for fw in report.frameworks if fw.cuda_compiled]
        for cuda in cudas:
            floor = driver_floor(cuda, windows="win" in (report.platform or "").lower())
            if floor and driver_at_least(drv.version, floor) is False:
                line = f"fact: NVIDIA driver {drv.version} is below {floor}, the minimum for CUDA {cuda}"
                a = aggs.get("cuda-driver-too-old")
                if a is None and generic_top:
                    a = aggs.setdefault("cuda-driver-too-old", _Agg("cuda-driver-too-old"))
                if a is not None:
                    a.facts.append(line)
                    a.versions.setdefault("driver", _clean(drv.version))
                    a.versions.setdefault("required_driver", floor)
                    if generic_top or a is top:
                        a.score = max(a.score, top.score + 5)
                break
    # 4. what the cuDNN consumer check found (a CTranslate2 whose vendored cuDNN lacks its
    #    sub-libraries, consumers needing different majors...): its own words and fixes.
    _consumer_facts(aggs, report)
    # 5. the cause the live facts establish (check's findings: another copy loaded first or
    #    shadowing from LD_LIBRARY_PATH, wheels that overwrote each other), with its fixes.
    #    When another copy won while a satisfying cuDNN is installed, installing one more with
    #    pip changes nothing: that fix is not offered then.
    causal = {"cudnn-version-mismatch", "cudnn-shadowed", "cudnn-wheel-overwritten", "cudnn-multiple-copies-loaded"}
    targets = ("cudnn-version-mismatch", "cudnn-sublibrary-load-failed", "cudnn-init-failed", "cudnn-library-not-found")
    for f in report.findings:
        if f.id not in causal:
            continue
        other_won = any(x.id in ("remove-shadowing-dir", "restart-kernel") for x in f.fixes) and not any(
            x.id == "install-matching-cudnn" for x in f.fixes)
        for a in aggs.values():
            if a.id not in targets:
                continue
            line = f"fact: {f.title}. {f.detail}"
            if line not in a.facts:
                a.facts.append(line if len(line) <= 900 else line[:897] + "...")
            for x in f.fixes:
                if all(x.id != y.id for y in a.fact_fixes):
                    a.fact_fixes.append(x)
            if other_won and f.id in ("cudnn-version-mismatch", "cudnn-shadowed"):
                a.suppressed.add("install-matching-cudnn")
                if any(x.id == "remove-shadowing-dir" for x in f.fixes) and len({m.path for m in mapped}) == 1:
                    a.suppressed.add("import-order")  # one copy mapped, from LD_LIBRARY_PATH: no order changes it
            if any(x.id == "remove-sys-path-dir" for x in f.fixes):
                # the cause is a folder on sys.path that the framework's own code preloads: a restart does the same
                # again, it is imported first already, and its own cuDNN is installed; only that folder matters
                a.suppressed.update(("install-matching-cudnn", "restart-kernel", "import-order"))
                if not any(c.source == "LD_LIBRARY_PATH" for c in report.cudnn_installed):
                    a.suppressed.add("remove-shadowing-dir")  # no cuDNN on LD_LIBRARY_PATH: taking one off changes nothing
    if not any(f.id in causal for f in report.findings):
        for res in report.resolutions:  # a report without the check's findings (built by hand)
            if res.picked and res.shadowed:
                d = os.path.dirname(res.picked)
                # taking the folder off LD_LIBRARY_PATH changes the pick only when LD_LIBRARY_PATH
                # made it (not a RUNPATH, the ld.so cache or a copy already loaded)
                fix = Fix(
                    "remove-shadowing-dir", f"Take {d} off the library path",
                    f"{res.consumer} loads {res.soname} from {d} ({res.reason}), hiding "
                    f"{', '.join(res.shadowed[:3])}. Remove {shlex.quote(d)} from LD_LIBRARY_PATH before "
                    "starting Jupyter/Python, then restart the kernel.",
                    restart_required=True, applicable=True,
                ) if res.reason.startswith("LD_LIBRARY_PATH") else None
                for a in aggs.values():
                    if a.id in ("cudnn-version-mismatch", "cudnn-sublibrary-load-failed", "cudnn-init-failed"):
                        a.facts.append(f"fact: {res.consumer} picks {res.picked} ({res.reason}); it shadows "
                                       + ", ".join(res.shadowed[:3]))
                        if fix is not None:
                            a.fact_fixes.append(fix)
                break
        else:
            # No framework whose search shows it, no finding of the check: the mapped copy's own
            # LD_LIBRARY_PATH origin may still be the cause.
            _shadowing_without_framework(aggs, report, mapped)


def _shadowing_without_framework(aggs: dict[str, _Agg], report: Report, mapped: list) -> None:
    """No framework to resolve for, but the log's mismatch has a cause the live facts show: the
    mapped cuDNN came from an ``LD_LIBRARY_PATH`` entry, and this environment has its own cuDNN
    of the compiled-against release further down the loader's search. Then taking that entry off
    the path is the fix, and installing cuDNN again would change nothing (it is installed)."""
    a = aggs.get("cudnn-version-mismatch")
    compiled = try_parse(a.versions.get("compiled") or a.versions.get("minimum") or "") if a else None
    if a is None or compiled is None or compiled.minor is None:
        return
    for lib in mapped:
        if not any(c.path == lib.path and c.source == "LD_LIBRARY_PATH" for c in report.cudnn_installed):
            continue
        own = []
        for c in report.cudnn_installed:
            v = try_parse(c.version or "") if c.is_main and not c.loaded and c.source != "LD_LIBRARY_PATH" else None
            if v is not None and v.minor is not None and v.major == compiled.major and v.minor >= compiled.minor:
                own.append(c)
        if not own:
            continue
        d, c = os.path.dirname(lib.path), own[0]
        a.facts.append(f"fact: {lib.name} {lib.version} comes from the LD_LIBRARY_PATH entry {d}, which the loader "
                       f"searches before any library's RUNPATH; this environment's own {c.name} {c.version} "
                       f"({c.owner}, {c.directory}) would satisfy {compiled}")
        a.fact_fixes.append(Fix(
            "remove-shadowing-dir", f"Take {d} off LD_LIBRARY_PATH",
            f"Remove {shlex.quote(d)} from LD_LIBRARY_PATH where this kernel is started (the kernelspec's env, or "
            "the shell that starts Jupyter), then restart the kernel: cuDNN then comes from the framework's own "
            f"search (its RUNPATH, its wheel), not from {d}.",
            restart_required=True))
        a.suppressed.add("install-matching-cudnn")  # the matching cuDNN is installed: it is shadowed
        if len({m.path for m in mapped}) == 1:
            a.suppressed.add("import-order")  # one copy mapped: which framework comes first changes nothing
        return


# --------------------------------------------------------------------------- output


def _format(template: str, values: dict[str, str]) -> str | None:
    if not template:
        return None
    try:
        return template.format_map(values)
    except (KeyError, ValueError, IndexError):
        return None


MAX_EXCEPTION_CHARS = 256 * 1024  #: an exception message or traceback longer than this is cut to its ends

#: Fix ids the registry can apply from a button (the catalogue's ``runs``); every other id is advice.
APPLICABLE_FIX_IDS = RUNNABLE


def _diagnosis(a: _Agg, report: Report | None) -> Diagnosis:
    generic_title, generic_summary, generic_fixes = CATALOGUE.get(a.id, (a.id, "", ()))
    own = [h for _, h in a.hits if h.diagnosis == a.id and h.signature.diagnosis == a.id]
    values = dict(a.versions)
    fw = a.framework or "the framework"
    values["framework"] = fw
    values["relation"] = _relation(a.versions.get("loaded"), a.versions.get("compiled")
                                   or a.versions.get("minimum"), fw)
    values["age"] = age(a.versions.get("loaded"), a.versions.get("compiled"))
    if a.id == "cudnn-version-mismatch" and values["age"] == "newer than":
        # the loaded copy already satisfies ">= compiled within its major": installing that changes nothing
        a.suppressed.add("install-matching-cudnn")
        if fw in ("TensorRT", "OpenCV"):  # they only warn and run on a newer minor: nothing to change
            a.suppressed.update(("import-order", "remove-shadowing-dir"))
    title = summary = None
    fix_ids: list[str] = []
    if own:
        s = own[0].signature
        title = _format(s.title, values) or _format(s.title_plain, values)
        summary = s.summary or None
        fix_ids.extend(s.fixes)
    elif a.title:  # refined by the failing call: no wording of its own
        title = _format(a.title, values)
    if title is None and a.id == "cudnn-version-mismatch" and "loaded" in values and "compiled" in values:
        title = f"The cuDNN in use ({values['loaded']}) {values['relation']} the {values['compiled']} {fw} was built with"
    title = title or generic_title
    summary = summary or generic_summary
    fix_ids.extend(generic_fixes)
    evidence: list[str] = []
    for _, h in a.hits:
        if h.line not in evidence:
            evidence.append(h.line)
        if len(evidence) >= 6:
            break
    for h in sorted(a.support, key=lambda h: h.position)[:4]:
        if h.line not in evidence:
            evidence.append(h.line)
    evidence.extend(a.facts[:6])
    fixes: list[Fix] = [f for f in a.fact_fixes if f.id not in a.suppressed]
    seen = {f.id for f in fixes} | a.suppressed
    play = in_play(a.framework, report)
    for fid in fix_ids:
        if fid in seen or fid not in FIX_IDS or not fits(SPECS[fid].frameworks, play):
            continue
        f = offer(fid, a, report)
        if f is not None:
            fixes.append(f)
            seen.add(fid)
    versions = {k: v for k, v in a.versions.items() if v}
    # "applicable": the fix registry (cudnn_magic.fixes) can carry it out from a button; others are advice.
    # A fix marked not applicable for a reason of its own (e.g. the version to install is unknown) stays so.
    fixes = [replace(f, applicable=f.id in APPLICABLE_FIX_IDS and (f.applicable or not f.reason))
             if f.applicable != (f.id in APPLICABLE_FIX_IDS and (f.applicable or not f.reason)) else f
             for f in fixes]
    return Diagnosis(a.id, title, summary, tuple(evidence), versions, tuple(fixes), round(a.score, 2))


# --------------------------------------------------------------------------- fixes


def fix_advice(fix_id: str, versions: dict[str, str] | None = None, framework: str = "",
               report: Report | None = None) -> Fix | None:
    """The fix a diagnosis offers for ``fix_id``, from the given facts alone: the one place fix
    wording lives (:func:`cudnn_magic.fixes.plan` shows it for the advice-only fixes when no
    diagnosis is at hand, e.g. ``cudnn-magic fix check-shapes``).

    Args:
        fix_id: a fix id such as ``"make-contiguous"``.
        versions: what an error text said, keyed as in :attr:`Diagnosis.versions`
            (``dependency``, ``minimum``, ``compiled``, ``required_driver``, ...).
        framework: "TensorFlow", "PyTorch", "JAX", ... or "".
        report: live facts for the CUDA major of a wheel name, or None.

    Returns:
        The :class:`~cudnn_magic.model.Fix`, or None for an id this module has no text for.
    """
    return offer(fix_id, _Agg(id=fix_id, versions=dict(versions or {}), framework=framework), report)
