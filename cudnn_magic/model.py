"""Plain data shared by every layer: probes fill it, rules and the knowledge base read it,
renderers turn it into text, HTML and JSON.

Standard library only. Every class is a frozen dataclass so a report can be cached, compared
and sent across processes (``to_json()`` gives the DESIGN.md JSON contract).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal

Severity = Literal["error", "warning", "info"]
Verdict = Literal["ok", "mismatch", "unknown", "not-applicable"]


@dataclass(frozen=True)
class Unavailable:
    """A fact a probe could not read, with the reason in plain words.

    Probes return this instead of raising, e.g. ``Unavailable("NVML Shared Library Not Found:
    no NVIDIA driver is installed")``.
    """

    reason: str

    def __str__(self) -> str:
        return f"unavailable: {self.reason}"

    def __bool__(self) -> bool:  # an Unavailable value is never a usable fact
        return False


@dataclass(frozen=True)
class LibraryCopy:
    """One cuDNN library file (main library or sub-library), mapped or on disk.

    Attributes:
        path: real path of the file (symlinks resolved).
        name: file name as found (e.g. ``libcudnn_graph.so.9``).
        soname: the soname the loader asks for (``libcudnn.so.9``), from the file name.
        version: ``"9.27.0"``-style string, or None when unknown.
        version_source: where the version came from ("cudnnGetVersion on the mapped copy",
            "file name", "cudnn_version.h", "child process cudnnGetVersion").
        owner: the package that owns the file: ``"pip: nvidia-cudnn-jit-cu12 9.27.0.42"``,
            ``"conda: cudnn 8.9.2"`` or ``"system"``.
        source: why we looked there for on-disk copies ("pip wheel", "LD_LIBRARY_PATH",
            "ld.so cache", "CUDA_HOME", "conda env", "system dir", "framework lib dir");
            "mapped" for copies found in ``/proc/self/maps``.
        loaded: True when the file is mapped into this process.
        is_main: True for ``libcudnn.so*`` itself, False for ``libcudnn_*`` sub-libraries.
        error: what went wrong reading it (unreadable, not ELF, broken symlink), or None.
    """

    path: str
    name: str
    soname: str
    version: str | None = None
    version_source: str | None = None
    owner: str = "system"
    source: str = "mapped"
    loaded: bool = False
    is_main: bool = True
    error: str | None = None

    @property
    def directory(self) -> str:
        import os.path

        return os.path.dirname(self.path)


@dataclass(frozen=True)
class Resolution:
    """Which cuDNN file the dynamic loader would pick for one consumer library.

    Attributes:
        consumer: the framework (or library) asking, e.g. "PyTorch".
        consumer_library: path of the ELF file whose dependency/dlopen is resolved.
        soname: the requested soname (``libcudnn.so.9``).
        picked: path the loader would pick, or None when nothing matches.
        reason: the search step that decided it ("LD_LIBRARY_PATH entry /opt/x",
            "RUNPATH $ORIGIN/../nvidia/cudnn/lib of libtorch_cuda.so", "ld.so cache",
            "already mapped in this process").
        shadowed: paths of other candidates this pick hides, in search order.
    """

    consumer: str
    consumer_library: str | None
    soname: str
    picked: str | None
    reason: str
    shadowed: tuple[str, ...] = ()


@dataclass(frozen=True)
class FrameworkBuild:
    """What one installed framework was compiled against, and its verdict.

    Attributes:
        name: "TensorFlow", "PyTorch", "JAX", "CuPy" or "ONNX Runtime".
        distribution: pip distribution name ("torch", "tensorflow", "jax-cuda12-plugin").
        version: the framework's version string.
        imported: True when the framework was already imported in this process.
        cudnn_compiled: compiled-against cuDNN ("9.3", "9.10.2", "9"), None when unknown or
            not a CUDA build.
        cudnn_compiled_source: where that came from (e.g. "build_info.py cudnn_version '9' +
            TensorFlow tested build table").
        cuda_compiled: compiled-against CUDA ("12.5.1"), or None.
        cudnn_runtime: cuDNN the framework itself reports at runtime (imported only), or None.
        cudnn_soname: the soname it loads ("libcudnn.so.9"), or None.
        consumer_library: the framework's native library that loads cuDNN, if found.
        cudnn_used: the cuDNN version judged (mapped copy, or the copy the loader will pick).
        cudnn_used_path: path of that copy.
        verdict: "ok", "mismatch", "unknown" or "not-applicable" (CPU build, no cuDNN).
        rule: the framework's own compatibility rule, quoted, with its source.
        detail: one sentence explaining the verdict.
        cuda_compute_capabilities: e.g. ("sm_60", "sm_90"), when the build says.
        pins: the cuDNN requirements in the distribution's metadata
            ("nvidia-cudnn-cu12==9.10.2.21").
        checker: key of ``versions.RULES`` whose rule this framework applies.
    """

    name: str
    distribution: str
    version: str
    imported: bool = False
    cudnn_compiled: str | None = None
    cudnn_compiled_source: str | None = None
    cuda_compiled: str | None = None
    cudnn_runtime: str | None = None
    cudnn_soname: str | None = None
    consumer_library: str | None = None
    cudnn_used: str | None = None
    cudnn_used_path: str | None = None
    verdict: Verdict = "unknown"
    rule: str = ""
    detail: str = ""
    cuda_compute_capabilities: tuple[str, ...] = ()
    pins: tuple[str, ...] = ()
    checker: str = "nvidia"


@dataclass(frozen=True)
class Gpu:
    """One GPU as NVML sees it. Memory in bytes.

    ``compute_capability`` is ``(major, minor)``; fields NVML cannot report are None.
    """

    index: int
    name: str
    uuid: str | None = None
    compute_capability: tuple[int, int] | None = None
    total_bytes: int | None = None
    used_bytes: int | None = None
    free_bytes: int | None = None
    error: str | None = None


@dataclass(frozen=True)
class Driver:
    """The NVIDIA driver as NVML reports it.

    Attributes:
        version: driver version string ("550.54.15").
        cuda_driver_version: the CUDA version the driver supports ("12.4"), from
            ``nvmlSystemGetCudaDriverVersion`` (encoded ``major*1000 + minor*10``).
    """

    version: str | None
    cuda_driver_version: str | None = None


@dataclass(frozen=True)
class Fix:
    """One way to fix a finding or diagnosis (ids are stable; see README "Fix ids").

    Attributes:
        id: stable fix id, e.g. "install-matching-cudnn".
        title: short imperative title ("Install nvidia-cudnn-cu12==9.3.0.75").
        action: exactly what to do: a command line, an environment change or a snippet.
        restart_required: the kernel must restart for it to take effect.
        applicable: True when it can be applied from here; False means advice only.
        reason: why it cannot be applied here, when ``applicable`` is False.
    """

    id: str
    title: str
    action: str
    restart_required: bool = False
    applicable: bool = False
    reason: str = ""


@dataclass(frozen=True)
class Finding:
    """A problem (or notable fact) found by ``check``: id, severity, plain text, fixes."""

    id: str
    severity: Severity
    title: str
    detail: str
    fixes: tuple[Fix, ...] = ()


@dataclass(frozen=True)
class Diagnosis:
    """One explanation of an error, from spec/diagnoses.md's catalogue.

    Attributes:
        id: catalogue id ("cudnn-version-mismatch", ...).
        title: one plain sentence ("The cuDNN loaded (8.0.5) is older than the 8.1 ...").
        summary: why, in two or three sentences.
        evidence: decisive lines quoted from the log or exception, then live facts.
        versions: structured versions extracted, e.g. {"loaded": "8.0.5", "compiled": "8.1.0"}.
        fixes: what to do, strongest first.
        score: ranking weight (higher is stronger); not part of the JSON contract.
    """

    id: str
    title: str
    summary: str
    evidence: tuple[str, ...] = ()
    versions: dict[str, str] = field(default_factory=dict)
    fixes: tuple[Fix, ...] = ()
    score: float = 0.0

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        from .render.diagnosis import diagnoses_html, diagnoses_text

        return {"text/plain": diagnoses_text([self]), "text/html": diagnoses_html([self])}

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        from .render.diagnosis import diagnoses_text

        p.text(diagnoses_text([self]).rstrip("\n"))


@dataclass(frozen=True)
class Report:
    """Everything ``%cudnn_check`` knows about this process and machine.

    ``driver`` is None when NVML answered with no driver, an ``Unavailable`` when it could not
    be asked. ``notes`` lists what could not be read (never raised). ``elapsed_s`` is the time
    the probes took, in seconds.
    """

    cudnn_loaded: tuple[LibraryCopy, ...] = ()
    cudnn_installed: tuple[LibraryCopy, ...] = ()
    frameworks: tuple[FrameworkBuild, ...] = ()
    resolutions: tuple[Resolution, ...] = ()
    driver: Driver | Unavailable | None = None
    gpus: tuple[Gpu, ...] = ()
    findings: tuple[Finding, ...] = ()
    notes: tuple[str, ...] = ()
    platform: str = ""
    elapsed_s: float = 0.0

    @property
    def worst_severity(self) -> Severity | None:
        order = {"error": 0, "warning": 1, "info": 2}
        sev = sorted((f.severity for f in self.findings), key=order.__getitem__)
        return sev[0] if sev else None

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        """HTML in notebooks, the text report elsewhere (``cudnn_magic.check()`` in a cell)."""
        from .render.report import report_html, report_text

        return {"text/plain": report_text(self), "text/html": report_html(self)}

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        from .render.report import report_text

        p.text(report_text(self))


@dataclass(frozen=True)
class ProcessMemory:
    """GPU memory used by one process, in bytes (None when NVML cannot say, e.g. MIG/WDDM)."""

    pid: int
    used_bytes: int | None
    this_kernel: bool = False
    name: str | None = None


@dataclass(frozen=True)
class GpuMemory:
    """Memory of one GPU (or MIG instance) at one instant, in bytes."""

    index: int
    name: str
    uuid: str | None = None
    total_bytes: int | None = None
    used_bytes: int | None = None
    free_bytes: int | None = None
    processes: tuple[ProcessMemory, ...] = ()
    this_kernel_bytes: int | None = None
    this_kernel_source: str | None = None
    error: str | None = None
    visible_index: int | None = None
    mig: bool = False


@dataclass(frozen=True)
class MemorySnapshot:
    """One sample of every visible GPU's memory; ``timestamp`` in seconds since the epoch."""

    gpus: tuple[GpuMemory, ...] = ()
    error: str | None = None
    timestamp: float = 0.0


def to_plain(obj: Any) -> Any:
    """Turn dataclasses (and tuples of them) into JSON-ready dicts and lists."""
    if isinstance(obj, Unavailable):
        return {"unavailable": obj.reason}
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_plain(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, (list, tuple)):
        return [to_plain(x) for x in obj]
    if isinstance(obj, dict):
        return {str(k): to_plain(v) for k, v in obj.items()}
    return obj


class Diagnoses(list):  # type: ignore[type-arg]
    """What ``cudnn_magic.explain()`` returns: a ``list`` of :class:`Diagnosis`, strongest
    first, that displays as the annotation does (HTML in notebooks, text in terminals).

    ``message`` says why the list is empty when that is worth saying ("the input is an ELF
    binary ..., not a log"); ``""`` otherwise.
    """

    def __init__(self, items: Any = (), message: str = "") -> None:
        super().__init__(items)
        self.message = message

    def _text(self) -> str:
        if not self:
            return self.message or "cudnn-magic: nothing cuDNN-related found."
        from .render.diagnosis import diagnoses_text

        return diagnoses_text(self).rstrip("\n")

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        if not self:
            import html

            return {"text/plain": self._text(), "text/html": f"<div class='cudnn-magic'>{html.escape(self._text())}</div>"}
        from .render.diagnosis import diagnoses_html

        return {"text/plain": self._text(), "text/html": diagnoses_html(self)}

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(self._text())
