"""Plain data shared by every layer: probes fill it, rules and the knowledge base read it,
renderers turn it into text, HTML and JSON.

Standard library only. Every class is a frozen dataclass so a report can be cached, compared
and sent across processes (``to_json()`` gives the JSON contract of docs/json.md).
"""

from __future__ import annotations

import dataclasses
import os.path
from dataclasses import dataclass, field
from typing import Any, Literal

from .display import Displayed

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
            "ld.so cache", "CUDA_HOME", "conda env", "system dir", "framework lib dir",
            "vendored by ctranslate2 4.4.0" for a copy a distribution ships in its own wheel);
            "mapped" for copies found in ``/proc/self/maps``.
        loaded: True when the file is mapped into this process.
        is_main: True for ``libcudnn.so*`` itself, False for ``libcudnn_*`` sub-libraries.
        error: what went wrong reading it (unreadable, not ELF, broken symlink), or None.
        reached_version: for a main library mapped in this process: the version that cuDNN
            calls through THIS copy reach here (``cudnnGetVersion`` on its ``RTLD_NOLOAD``
            handle). cuDNN 9's ``libcudnn.so.9`` is a shim that opens ``libcudnn_graph.so.9``
            by soname, and glibc hands it the one already loaded, so this can be another
            copy's version; ``version`` is always this file's own. None when not asked.
        bound_to: for a mapped main library: the sub-library files its calls are bound to in
            this process (by glibc's rule: an object already loaded with the requested soname
            is reused), confirmed by ``reached_version`` where it was asked.
        owner_evidence: how the owner was established ("RECORD lists it; sha256 matches",
            "RECORD lists it; size matches", "sha256 found in the RECORD of ...").
        load_order: position among the libraries loaded in this process (``dl_iterate_phdr``
            order, 0 first), for mapped copies; None otherwise.
        found_in: the folder the file was found in when that is not its real folder (a folder
            of soname symbolic links pointing elsewhere); None otherwise. The loader opens the
            file through that folder, so that folder is judged as one release.
        replaced: for a mapped copy: why the file at ``path`` now is not the file mapped (replaced
            or removed on disk since it was loaded, e.g. by ``pip install -U``), with the release
            the file there now holds; None when it is the one mapped. ``version`` is then the
            mapped copy's own (``probes/replaced.py``), never the new file's.
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
    reached_version: str | None = None
    bound_to: tuple[str, ...] = ()
    owner_evidence: str | None = None
    load_order: int | None = None
    found_in: str | None = None
    replaced: str | None = None

    @property
    def directory(self) -> str:
        return os.path.dirname(self.path)


@dataclass(frozen=True)
class CudnnInUse:
    """The cuDNN copy that a library linking ``libcudnn.so.N`` by soname binds to in this
    process, measured in-process without loading anything (glibc's rules, ``ld.so(8)`` and
    ``dlopen(3)``: an object already loaded with the requested soname is reused; symbol
    references are looked up in the global scope first, then in the library's own
    dependencies; ``RTLD_DEEPBIND`` aside).

    Attributes:
        path: the main library (``libcudnn.so.9``) whose ``cudnnGetVersion`` such a library
            binds to (``dlvsym(RTLD_DEFAULT, ...)`` + ``dladdr`` when a copy is in the global
            scope, else the first copy loaded, in ``dl_iterate_phdr`` order).
        version: that file's own version (``"9.12.0"``), or None when unknown.
        why: the rule and the facts that decided it, in plain words.
        soname: ``libcudnn.so.9`` (or ``.8``).
        reached_version: the version cuDNN calls through it reach (its shim may be bound to
            another copy's ``libcudnn_graph``), None when not asked.
        sublibraries: the sub-library files its calls are bound to.
        ld_library_path_entry: the ``LD_LIBRARY_PATH`` entry (as the user wrote it) the file
            lies in, or None.
    """

    path: str
    version: str | None
    why: str
    soname: str = "libcudnn.so.9"
    reached_version: str | None = None
    sublibraries: tuple[str, ...] = ()
    ld_library_path_entry: str | None = None


@dataclass(frozen=True)
class WheelOverwrite:
    """Files that two or more installed distributions' ``RECORD`` files list at the same
    place: the later install overwrote the earlier one's files, and ``pip check`` says
    nothing (pip keeps no per-file ownership).

    Attributes:
        directory: the folder holding all the shared files (``.../nvidia/cudnn_jit``: its
            ``lib`` and ``include``).
        distributions: ``(name, version)`` of every distribution that lists them.
        present: the distribution whose ``RECORD`` hashes the files there now match, or None
            when the hashes decide nothing (see ``mixed``).
        files: absolute paths of the shared files.
        evidence: one line per hashed file: whose ``RECORD`` its sha256 matches.
        mixed: True when some files match one distribution and others another.
        sizes: bytes each distribution's ``RECORD`` lists in ``directory`` (what a
            ``--force-reinstall`` of it rewrites), aligned with ``distributions``.
        site: the folder the distributions are installed in (holding their ``.dist-info``): a
            site-packages, or a ``pip install --target`` folder.
    """

    directory: str
    distributions: tuple[tuple[str, str], ...]
    present: tuple[str, str] | None
    files: tuple[str, ...] = ()
    evidence: tuple[str, ...] = ()
    mixed: bool = False
    sizes: tuple[int, ...] = ()
    site: str = ""


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
        opened: the path the loader opens it by, when that is not ``picked`` (a symbolic link):
            glibc sets the object's ``$ORIGIN`` from it, so its sub-libraries are looked for there.
    """

    consumer: str
    consumer_library: str | None
    soname: str
    picked: str | None
    reason: str
    shadowed: tuple[str, ...] = ()
    opened: str | None = None


@dataclass(frozen=True)
class Preload:
    """A file a consumer's own code loads by full path before its native library asks for the
    soname (PyTorch's ``_preload_cuda_deps``, ``onnxruntime.preload_dlls()``): once loaded, glibc
    reuses it for any request of its SONAME (``_dl_name_match_p``), whatever RPATH or
    ``LD_LIBRARY_PATH`` say.

    Attributes:
        path: the file loaded (as the consumer names it).
        why: who loads it and how it was chosen, in words, with the source
            ("torch/__init__.py _preload_cuda_deps: the first nvidia/cudnn/lib/libcudnn.so.*[0-9] on
            sys.path, in sys.path entry /x").
        sys_path_entry: the ``sys.path`` entry it was found in, as written there, when the
            consumer searched ``sys.path`` for it (None otherwise).
    """

    path: str
    why: str
    sys_path_entry: str | None = None


@dataclass(frozen=True)
class SublibraryPick:
    """Where one cuDNN sub-library that a main library opens by soname at run time would come
    from, for one consumer (predicted from the loader's search, nothing is loaded).

    Attributes:
        soname: ``libcudnn_ops_infer.so.8``, ``libcudnn_graph.so.9``...
        path: the file the loader would open, or None when its search finds none.
        version: that file's cuDNN version ("8.9.7"), when its name, wheel or header says.
        why: the search step that found it ("already mapped in this process", "LD_LIBRARY_PATH
            entry /opt/cudnn/lib", "not found by the loader's search").
        required: needed for this consumer's first convolution (``libcudnn_ops_infer`` and
            ``libcudnn_cnn_infer`` for cuDNN 8; ``libcudnn_graph`` and an engine library for 9).
        purpose: what cuDNN uses it for, in words.
    """

    soname: str
    path: str | None
    version: str | None
    why: str
    required: bool = True
    purpose: str = ""


@dataclass(frozen=True)
class ConsumerLibrary:
    """One native library in the environment that uses cuDNN: it NEEDs a cuDNN soname, or its
    framework opens one with ``dlopen``.

    Attributes:
        path: the consumer's file (``.../ctranslate2.libs/libctranslate2-d3638643.so.4.4.0``).
        distribution: the distribution that installed it ("ctranslate2 4.4.0").
        soname: the cuDNN soname it asks for (``libcudnn.so.9``, ``libcudnn-463fd6d5.so.8.9.7``).
        how: how it asks ("DT_NEEDED", "dlopen by paddle/libs/libphi.so").
        picked: the main library the loader would pick, or None when none is found.
        picked_version: that file's cuDNN version.
        why: the search step that picked it (RPATH/RUNPATH entry and whose, ``LD_LIBRARY_PATH``,
            ld.so cache, "already mapped in this process").
        vendored: True when the pick is a copy the same distribution ships.
        framework: the framework row that judges this consumer (None: a row of its own).
        sublibraries: where each sub-library the picked main library opens would come from.
        searched: the directories the loader tries for the main library, in order, with why.
        sublibrary_searched: the directories tried for the sub-libraries (the main library is
            the requester there, so its RPATH and its loaders' count).
        blocked_by: other libraries it NEEDs that the loader cannot find and that nothing installed
            in the environment provides (``libnvinfer.so.10`` of ONNX Runtime's TensorRT provider when
            TensorRT is not installed): it cannot load at all, so its cuDNN is not judged.
    """

    path: str
    distribution: str
    soname: str
    how: str = "DT_NEEDED"
    picked: str | None = None
    picked_version: str | None = None
    why: str = ""
    vendored: bool = False
    framework: str | None = None
    sublibraries: tuple[SublibraryPick, ...] = ()
    searched: tuple[str, ...] = ()
    sublibrary_searched: tuple[str, ...] = ()
    blocked_by: tuple[str, ...] = ()


@dataclass(frozen=True)
class FrameworkBuild:
    """What one installed framework was compiled against, and its verdict.

    Attributes:
        name: "TensorFlow", "PyTorch", "JAX", "CuPy", "ONNX Runtime", "CTranslate2", "PaddlePaddle",
            "MXNet", "TensorRT", or a distribution name for any other cuDNN consumer.
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
        checker: key of ``rules.compat.RULES`` whose rule this framework applies (consumers judged
            by :mod:`cudnn_magic.rules.consumers` use its keys: "ctranslate2", "paddle", ...).
        pip_solvable: False when no cuDNN wheel is on this consumer's loader path (a vendored
            copy, a ``dlopen`` of a name pip wheels do not ship): the pip solver leaves it out.
        preloads: files the framework's own code loads by path before its native library asks
            for the soname (PyTorch's ``_preload_cuda_deps``), in order; the loader reuses one
            whose SONAME matches.
        loading: how it loads cuDNN, in words, with the source ("torch/__init__.py preloads the
            first nvidia/cudnn/lib/libcudnn.so.*[0-9] on sys.path, then libtorch_cuda.so's RPATH").
        problems: findings its probe established from the installed files alone (a CPU build
            installed over the GPU one), passed through to the report.
        own_rule: the framework's cuDNN rule as its installed files state it (JAX's plugin
            ``_check_cuda_versions``), quoted in the report before the rule of ``checker``.
        facts: other build facts its rule needs, as (key, value): ``("multi_gpu_rule", "91001
            120900 1")`` (JAX refuses cuDNN below 9.10.1 with cuBLAS 12.9+ on more than 1 device)
            and ``("cublas", "12.9.1")`` (the cuBLAS wheel it loads).
        cpu_build: a CPU build: no CUDA, no cuDNN (``torch 2.13.0+cpu``, ``tensorflow-cpu``, JAX
            without its CUDA plugin, the CPU ``onnxruntime``).
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
    pip_solvable: bool = True
    preloads: tuple[Preload, ...] = ()
    loading: str = ""
    problems: tuple[Finding, ...] = ()
    own_rule: str = ""
    facts: tuple[tuple[str, str], ...] = ()
    cpu_build: bool = False


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
    """One way to fix a finding or diagnosis (ids are stable; see docs/ids.md, "Fix ids").

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
class Diagnosis(Displayed):
    """One explanation of an error, from the catalogue of docs/ids.md.

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



@dataclass(frozen=True)
class CudaToolkit:
    """A CUDA toolkit on the machine (context: not the CUDA runtime a framework's wheels bring).

    Attributes:
        root: its folder (real path).
        version: "13.0", "12.4.131", or None when nothing in it says.
        version_source: "version.json", "version.txt", or the ``CUDART_VERSION`` header define.
        via: how it was found ("CUDA_HOME", "/usr/local/cuda -> /usr/local/cuda-13.0", "nvcc on PATH (...)").
        nvcc: the ``nvcc`` that belongs to it, when there is one.
    """

    root: str
    version: str | None
    version_source: str | None = None
    via: tuple[str, ...] = ()
    nvcc: str | None = None


@dataclass(frozen=True)
class Report(Displayed):
    """Everything ``%cudnn_check`` knows about this process and machine.

    ``consumers`` lists every native library of the environment that uses cuDNN (see
    :class:`ConsumerLibrary`). ``driver`` is None when NVML answered with no driver, an ``Unavailable`` when it could not
    be asked. ``notes`` lists what could not be read (never raised). ``elapsed_s`` is the time
    the probes took, in seconds. ``cuda_toolkits`` are the CUDA toolkits on the machine (context
    only: frameworks run the CUDA runtime their wheels bring). ``cudnn_in_use`` is the copy a library linking cuDNN by
    soname binds to (the newest major when several are mapped; every soname's in
    ``cudnn_in_use_by_soname``), None when no cuDNN is mapped. ``wheels_overwritten`` lists
    files that two installed distributions both claim. ``cudnn_by_name``: for each cuDNN soname on
    disk that nothing has mapped yet, what a program that loads it by name would get here (glibc's
    order: ``LD_LIBRARY_PATH``, the ``ld.so`` cache, the default folders). ``copy_notes``: what the
    deep probe learnt about a copy that is no problem (one sentence per copy: the sub-libraries its
    package does not ship), shown with the copies.
    """

    cudnn_loaded: tuple[LibraryCopy, ...] = ()
    cudnn_installed: tuple[LibraryCopy, ...] = ()
    frameworks: tuple[FrameworkBuild, ...] = ()
    consumers: tuple[ConsumerLibrary, ...] = ()
    resolutions: tuple[Resolution, ...] = ()
    driver: Driver | Unavailable | None = None
    gpus: tuple[Gpu, ...] = ()
    findings: tuple[Finding, ...] = ()
    notes: tuple[str, ...] = ()
    platform: str = ""
    elapsed_s: float = 0.0
    cudnn_in_use: CudnnInUse | None = None
    cudnn_in_use_by_soname: tuple[CudnnInUse, ...] = ()
    wheels_overwritten: tuple[WheelOverwrite, ...] = ()
    cuda_toolkits: tuple[CudaToolkit, ...] = ()
    cudnn_by_name: tuple[Resolution, ...] = ()
    copy_notes: tuple[str, ...] = ()

    @property
    def worst_severity(self) -> Severity | None:
        order = {"error": 0, "warning": 1, "info": 2}
        sev = sorted((f.severity for f in self.findings), key=order.__getitem__)
        return sev[0] if sev else None



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


class Diagnoses(Displayed, list):  # type: ignore[type-arg]
    """What ``cudnn_magic.explain()`` returns: a ``list`` of :class:`Diagnosis`, strongest
    first, that displays as the annotation does (HTML in notebooks, text in terminals).

    ``message`` says why the list is empty when that is worth saying ("the input is an ELF
    binary ..., not a log"); ``""`` otherwise.
    """

    def __init__(self, items: Any = (), message: str = "") -> None:
        super().__init__(items)
        self.message = message

