"""Advice: the words of the fix a diagnosis offers (:func:`offer`, one function per fix id,
named by its catalogue entry's ``offer``), and the advice-only plans of the registry in the
words of the diagnosis or finding that offered the fix; nothing here executes anything.

A diagnosis passes what it knows as ``a``: ``a.versions`` (what the error text said, keyed as
in :attr:`~cudnn_magic.model.Diagnosis.versions`), ``a.framework`` and ``a.hits`` (the matched
lines, ``(position, Hit)`` pairs); :class:`Facts` is the same without a diagnosis.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Callable

from ..model import Fix, Report, Unavailable
from ..model.fixes import FixPlan, Step
from ..rules.cuda_deps import WHEELS as DEP_WHEELS
from ..rules.cudnn_version import CudnnVersion, try_parse
from ..rules.gpu_builds import cuda_major, gpu_build
from ..rules.requirement import FIRST_WHEEL_CUDA, same_major_requirement
from .catalogue import FIXES, SPECS
from .frameworks import JAX, PYTORCH, TENSORFLOW, in_play


@dataclass
class Facts:
    """What is known without a diagnosis: the words of an error (``versions``), the framework."""

    versions: dict[str, str] = field(default_factory=dict)
    framework: str = ""
    hits: list[Any] = field(default_factory=list)


def offer(fid: str, a: Any, report: Report | None) -> Fix | None:
    """The :class:`~cudnn_magic.model.Fix` a diagnosis offers for ``fid``, worded from ``a``
    (module docstring) and the live ``report``; None when no text fits the facts, or the fix
    id's catalogue entry names no wording (only findings offer it)."""
    spec = SPECS.get(fid)
    if spec is None or not spec.offer:
        return None
    return globals()[spec.offer](fid, a, report)  # type: ignore[no-any-return]


# --------------------------------------------------------------------------- advice plans


def _advice(fid: str, title: str, snippet: str, notes: Iterable[str] = (), restart: bool = False) -> FixPlan:
    return FixPlan(fid, title, False, "advice only: nothing to run from here", (Step("advice", title, snippet=snippet),),
                   restart, tuple(notes))


def _diagnosis_advice(fid: str, notes: Iterable[str] = ()) -> Callable[[Report, dict[str, Any]], FixPlan]:
    """Planner for a fix that is advice only, in the words of the diagnosis: the diagnosis's own
    fix when the button came from one (``context["advice"]``: ``title``, ``action``,
    ``restart_required``), else :func:`offer` from the live facts."""
    notes = tuple(notes)

    def planner(report: Report, ctx: dict[str, Any]) -> FixPlan:
        adv = ctx.get("advice")
        if isinstance(adv, dict) and isinstance(adv.get("title"), str) and isinstance(adv.get("action"), str) \
                and adv["title"] and adv["action"]:
            return _advice(fid, adv["title"], adv["action"], notes, bool(adv.get("restart_required")))
        f = offer(fid, Facts(framework=str(ctx.get("framework") or "")), report)
        if f is None:
            return FixPlan(fid, FIXES[fid], False, "no advice text for this fix")
        return _advice(fid, f.title, f.action, notes, f.restart_required)

    return planner


def _finding_advice(fid: str) -> Callable[[Report, dict[str, Any]], FixPlan]:
    """Planner for an advice-only fix offered by ``%cudnn_check`` findings (the cuDNN consumer
    checks): the words of the button's own fix (``context["advice"]``), else of every finding of
    the report that offers this fix id."""

    def planner(report: Report, ctx: dict[str, Any]) -> FixPlan:
        adv = ctx.get("advice")
        if isinstance(adv, dict) and isinstance(adv.get("title"), str) and isinstance(adv.get("action"), str) \
                and adv["title"] and adv["action"]:
            return _advice(fid, adv["title"], adv["action"], (), bool(adv.get("restart_required")))
        offered = [(f, x) for f in report.findings for x in f.fixes if x.id == fid]
        if not offered:
            return FixPlan(fid, FIXES[fid], False, "no finding of the current report offers this fix")
        _f, x = offered[0]
        return _advice(fid, x.title, "\n".join(dict.fromkeys(y.action for _, y in offered)),
                       [f"{g.id}: {g.title}" for g, _ in offered], x.restart_required)

    return planner


# --------------------------------------------------------------------------- what a diagnosis offers


def _cuda_major_for(v: CudnnVersion, a: Any, report: Report | None) -> int | None:
    """Which CUDA major's cuDNN wheel to name: known CUDA first, else the usual pairing; None when
    no wheel exists for that CUDA (PyPI: nvidia-cudnn-cu11 from 8.5, -cu12, -cu13 from 9.12; none
    for CUDA 10 or older, and no cuDNN 8 wheel past CUDA 12, as rules.requirement.wheel_family)."""
    cuda = a.versions.get("cuda")
    if not cuda and report is not None:
        for fw in report.frameworks:
            if fw.cuda_compiled:
                cuda = fw.cuda_compiled
                break
    if cuda:
        try:
            major = int(str(cuda).split(".")[0])
        except ValueError:
            pass
        else:
            if major < FIRST_WHEEL_CUDA:
                return None
            return 12 if v.major == 8 and major > 12 else major
    if v.major >= 9:
        return 12
    if v.major == 8 and v.minor is not None:
        if v.minor >= 9:
            return 12
        if v.minor >= 5:
            return 11
    return None


def _target_cudnn(a: Any) -> CudnnVersion | None:
    for key in ("minimum", "compiled"):
        v = try_parse(a.versions[key]) if key in a.versions else None
        if v is not None:
            return v
    for key in ("soname", "library", "required"):
        m = re.search(r"(?:\.so\.|64_|^)(\d{1,2})(?:\.|$|\.dll)", a.versions.get(key, ""))
        if m:
            return CudnnVersion(int(m.group(1)))
    return None


def install_matching_cudnn(fid: str, a: Any, report: Report | None) -> Fix | None:
    """``install-matching-cudnn``, worded for this diagnosis."""
    v = _target_cudnn(a)
    if v is None and a.framework in _NATIVE_CUDNN_ADVICE:
        title, action = _NATIVE_CUDNN_ADVICE[a.framework]
        return Fix(fid, title, action, restart_required=True, applicable=False,
                   reason="the needed version is not known from the text")
    if v is None:
        return Fix(fid, "Install the cuDNN release the framework was built for",
                   "Install the cuDNN major/minor your framework build expects (see %cudnn_check), "
                   "e.g. the framework's own CUDA extra: pip install \"tensorflow[and-cuda]\" / "
                   "\"jax[cuda12]\", or the PyTorch wheel that bundles cuDNN.",
                   restart_required=True, applicable=False, reason="the needed version is not known from the text")

    cuda = _cuda_major_for(v, a, report)
    if cuda is not None and (v.major >= 9 or (v.major == 8 and (v.minor or 0) >= 5)):
        req = same_major_requirement(f"nvidia-cudnn-cu{cuda}", v)
        if req:
            return Fix(fid, f"Install cuDNN {v.short()} or newer within {v.major}.x ({req})",
                       f"python -m pip install \"{req}\"",
                       restart_required=True, applicable=True)
    req = same_major_requirement("cudnn", v)
    if req:
        return Fix(fid, f"Install cuDNN {v.short()} (or newer within {v.major}.x)",
                   f"conda install -c conda-forge \"{req}\"   "
                   f"# or NVIDIA's cuDNN {v.short()} archive for your CUDA version",
                   restart_required=True, applicable=False,
                   reason="no pip wheel of this cuDNN release; install it system-wide or with conda")
    return None


#: How to get cuDNN to a program that is not a Python framework, when the text names no version:
#: (title, action), by the knowledge tables' ``framework`` word.
_NATIVE_CUDNN_ADVICE: dict[str, tuple[str, str]] = {
    "a native build": (
        "Install cuDNN's development files where the build looks",
        ("Install cuDNN with its headers and the unversioned libcudnn.so link (NVIDIA's cudnn9-cuda-12 / "
         "libcudnn8-dev packages, or its tarball), then point the build at it: LIBRARY_PATH and CPATH (or the "
         "project's CUDNN_ROOT / CUDNN_INCLUDE_DIR / CUDNN_LIBRARY, Caffe's Makefile.config, darknet's "
         "Makefile), and LD_LIBRARY_PATH for running the result. A source written for another cuDNN major "
         "needs that major's release, or a release of the project written for this one.")),
    "cudarc (Rust)": (
        "Make cuDNN loadable under a name cudarc tries",
        ("Install cuDNN for the CUDA major cudarc was built for (NVIDIA's package, conda's cudnn, or the "
         "nvidia-cudnn-cuXX wheel) and put its lib folder on LD_LIBRARY_PATH (PATH on Windows); a cuDNN that "
         "has only libcudnn.so.9 needs its development package (which adds libcudnn.so) or a newer cudarc.")),
    "CUDA.jl (Julia)": (
        "Give CUDA.jl a cuDNN",
        ("In Julia: import Pkg; Pkg.add(\"cuDNN\") with a CUDA runtime it detects (CUDA.versioninfo()); for a "
         "local toolkit (CUDA.set_runtime_version!(local_toolkit=true)) install cuDNN into that toolkit.")),
    "Julia (Libdl)": (
        "Give Julia a complete cuDNN",
        ("Reinstall the cuDNN artifact (import Pkg; Pkg.add(\"cuDNN\"), or remove the broken artifact folder and "
         "instantiate again); on Windows the folder of the cuDNN DLLs and the DLLs they need must be loadable.")),
    "JavaCPP (Java)": (
        "Give JavaCPP the cuDNN its preset was built for",
        ("Add the org.bytedeco cuda preset's redist artifact (classifier <platform>-redist), which bundles cuDNN, "
         "or install the cuDNN major the preset names and put its folder on PATH / java.library.path.")),
}


def remove_shadowing_dir(fid: str, a: Any, report: Report | None) -> Fix | None:
    """``remove-shadowing-dir``, worded for this diagnosis."""
    return Fix(fid, "Keep other cuDNN copies off the library path",
               "Remove directories holding another libcudnn* from LD_LIBRARY_PATH (PATH on Windows) "
               "before starting Jupyter/Python, e.g. `unset LD_LIBRARY_PATH` for a test, then restart "
               "the kernel. %cudnn_check shows which copy is mapped and which it shadows.",
               restart_required=True, applicable=False, reason="the library path is read at process start")


def reinstall_cudnn(fid: str, a: Any, report: Report | None) -> Fix | None:
    """``reinstall-cudnn``, worded for this diagnosis."""
    v = _target_cudnn(a)
    major = v.major if v is not None else None
    if major is not None and major >= 8:
        cuda = 12 if major >= 9 else 11
        req = f"nvidia-cudnn-cu{cuda}>={major},<{major + 1}"
        from packaging.requirements import (  # start-up cost: only when this fix is worded
            InvalidRequirement,
            Requirement,
        )

        try:
            req = str(Requirement(req))
        except InvalidRequirement:
            req = None  # type: ignore[assignment]
        if req:
            return Fix(fid, f"Reinstall one complete cuDNN {major}",
                       f"python -m pip install --force-reinstall \"{req}\"   "
                       "# and remove other cuDNN copies from LD_LIBRARY_PATH",
                       restart_required=True, applicable=True)
    return Fix(fid, "Reinstall one complete cuDNN",
               "Reinstall cuDNN so all libcudnn_* sub-libraries come from the same release, and "
               "remove other cuDNN copies from LD_LIBRARY_PATH.",
               restart_required=True, applicable=False, reason="which cuDNN major is not known from the text")


def _wheel(stem: str, major: int) -> tuple[str, str]:
    """The pip requirement and site-packages folder of the CUDA ``major`` wheel of ``stem``
    (``nvrtc``, ``cublas``): :data:`cudnn_magic.rules.cuda_deps.WHEELS`, the ``-cu11`` names before."""
    if (stem, major) in DEP_WHEELS:
        return DEP_WHEELS[(stem, major)]
    name = {"nvrtc": "nvidia-cuda-nvrtc", "cublas": "nvidia-cublas"}[stem]
    return f"{name}-cu{major}", {"nvrtc": "nvidia/cuda_nvrtc/lib", "cublas": "nvidia/cublas/lib"}[stem]


def _cuda_major_of(dep: str) -> int | None:
    """The CUDA major a library name carries (``libnvrtc.so.12`` -> 12, ``nvrtc64_120_0.dll`` -> 12,
    ``libnvrtc-builtins.so.12.4`` -> 12, ``cublas64_12.dll`` -> 12), or None (unversioned)."""
    m = re.search(r"\.so\.(\d{2})(?:\.|$)|64_(\d{2})\d?(?:_\d+)?\.dll$", dep)
    if not m:
        return None
    major = int(m.group(1) or m.group(2))
    return major if 10 <= major <= 19 else None


def install_cudnn_deps(fid: str, a: Any, report: Report | None) -> Fix | None:
    """``install-cudnn-deps``, worded for this diagnosis."""
    v = _target_cudnn(a)
    dep = a.versions.get("dependency", "").lower()
    cuda = 12 if v is None or v.major >= 9 else 11
    if dep == "nvrtc.so":
        # PyTorch's "Applied workaround for CuDNN issue, install nvrtc.so": its CUDA wheel already depends on
        # nvidia-cuda-nvrtc, which ships only libnvrtc.so.<major>, so installing it changes nothing; the
        # unversioned name cuDNN asks for must resolve (pytorch/pytorch#97041)
        return Fix(fid, "Make libnvrtc.so (unversioned) resolvable for cuDNN",
                   "In the folder that holds libnvrtc.so.<version> (site-packages/nvidia/cuda_nvrtc/lib for the pip "
                   "wheel, the CUDA toolkit's lib64 otherwise): ln -s libnvrtc.so.<version> libnvrtc.so, or install "
                   "the CUDA toolkit's NVRTC development package, which adds that link; then restart the kernel",
                   restart_required=True, applicable=False, reason="a symbolic link in the environment's files")
    named = _cuda_major_of(dep)
    if re.fullmatch(r"libnvrtc\.so", dep):
        # the unversioned name (cuDNN 8's sub-libraries and cuDNN 9's graph library carry it beside
        # libnvrtc.so.%d): no wheel ships it, so a pip install alone changes nothing
        versioned = f"libnvrtc.so.{cuda}" if cuda >= 12 else "libnvrtc.so.<version>"
        folder = _wheel("nvrtc", cuda)[1]
        return Fix(fid, "Make libnvrtc.so (unversioned) resolvable for cuDNN",
                   f"In the folder that holds {versioned} (site-packages/{folder} for the pip wheel, the CUDA "
                   f"toolkit's lib64 otherwise): ln -s {versioned} libnvrtc.so, or install the CUDA toolkit's NVRTC "
                   "development package, which adds that link; when that folder is not on cuDNN's RUNPATH (cuDNN 8's "
                   "wheels name nvidia/nvrtc/lib, a folder no wheel installs), also export LD_LIBRARY_PATH to it "
                   "before starting Jupyter; then restart the kernel",
                   restart_required=True, applicable=False, reason="a symbolic link in the environment's files")
    if "nvrtc" in dep:
        major = named or cuda
        req, folder = _wheel("nvrtc", major)
        if dep.endswith(".dll"):
            return Fix(fid, "Install NVRTC, which cuDNN's convolution sub-library loads",
                       f"python -m pip install {req}   # PyTorch adds the wheels' folders (site-packages\\nvidia\\"
                       "...\\bin) to the DLL search; otherwise put that folder on PATH",
                       restart_required=True, applicable=True)
        if v is not None and v.major < 9:
            # cuDNN 8.9.7's wheel: RUNPATH $ORIGIN/../../nvrtc/lib, not the nvidia/cuda_nvrtc/lib the NVRTC wheel fills
            return Fix(fid, "Install NVRTC and put its folder on LD_LIBRARY_PATH for cuDNN 8",
                       f"python -m pip install {req}, then export LD_LIBRARY_PATH=<site-packages>/{folder} before "
                       "starting Jupyter (or the program)",
                       restart_required=True, applicable=False,
                       reason="cuDNN 8's RUNPATH names no folder an NVRTC wheel installs into: LD_LIBRARY_PATH must")
        return Fix(fid, "Install NVRTC, which cuDNN's convolution sub-library loads",
                   f"python -m pip install {req}   # cuDNN's pip wheel finds it through its RUNPATH; a cuDNN "
                   f"installed otherwise also needs LD_LIBRARY_PATH=<site-packages>/{folder}",
                   restart_required=True, applicable=True)
    if "cublas" in dep:
        req, _folder = _wheel("cublas", named or cuda)
        return Fix(fid, "Install cuBLAS, which cuDNN needs", f"python -m pip install {req}",
                   restart_required=True, applicable=True)
    if re.match(r"libz\.so(\.|$)", dep):  # Linux: cuDNN 8 links libz.so.1 (cuDNN 8 Linux installation guide)
        return Fix(fid, "Install zlib (libz.so.1), which cuDNN 8 needs",
                   "sudo apt-get install zlib1g   # Debian/Ubuntu (dnf install zlib on Fedora/RHEL), "
                   "or conda install -c conda-forge zlib in a conda environment",
                   restart_required=True, applicable=False, reason="a system package")
    if "zlib" in dep or "zlibwapi" in " ".join(h.line.lower() for _, h in a.hits):
        return Fix(fid, "Install zlibwapi.dll next to the cuDNN DLLs",
                   "Put zlibwapi.dll (zlib 1.2.x, x64) in the cuDNN bin directory or another folder on PATH "
                   "(NVIDIA cuDNN 8 Windows installation guide).",
                   restart_required=True, applicable=False, reason="a Windows file copy")
    if "libcuda" in dep or "nvcuda" in dep:
        return Fix(fid, "Install the NVIDIA driver (libcuda)", "Install the NVIDIA driver; libcuda.so.1 comes with it.",
                   restart_required=True, applicable=False, reason="needs administrator rights")
    return Fix(fid, "Install the libraries cuDNN needs",
               "cuDNN needs libcublas/libcublasLt and libnvrtc of the same CUDA major: "
               f"python -m pip install nvidia-cublas-cu{cuda} nvidia-cuda-nvrtc-cu{cuda}",
               restart_required=True, applicable=True)


def allow_memory_growth(fid: str, a: Any, report: Report | None) -> Fix | None:
    """``allow-memory-growth``, worded for this diagnosis."""
    fw = a.framework
    if fw == "JAX":
        return Fix(fid, "Stop JAX from preallocating GPU memory",
                   "import os; os.environ[\"XLA_PYTHON_CLIENT_PREALLOCATE\"] = \"false\"   # before importing jax",
                   restart_required=True, applicable=True)
    return Fix(fid, "Let TensorFlow allocate GPU memory as needed",
               "import os; os.environ[\"TF_FORCE_GPU_ALLOW_GROWTH\"] = \"true\"   # before importing tensorflow\n"
               "# or: for g in tf.config.list_physical_devices('GPU'): tf.config.experimental.set_memory_growth(g, True)",
               restart_required=True, applicable=True)


#: what a process that preallocates keeps (TensorFlow's BFC allocator, XLA's client preallocation)
_RESERVED = ("TensorFlow and JAX keep the GPU memory they reserved until the process ends: memory they hold "
             "comes back only with a restart of the kernel.")


def free_gpu_memory(fid: str, a: Any, report: Report | None) -> Fix | None:
    """``free-gpu-memory``, worded for the frameworks in play (:func:`~.frameworks.in_play`): a
    PyTorch out-of-memory error is recoverable in the same kernel (the caching allocator,
    ``torch.cuda.empty_cache``); TensorFlow and JAX hold what they reserved until exit."""
    play = in_play(a.framework, report)
    if play == frozenset({PYTORCH}):
        return Fix(fid, "Free GPU memory in this kernel",
                   "PyTorch recovers from running out of memory: del the tensors and models you no longer "
                   "need (outputs and losses kept in lists too), then gc.collect(); torch.cuda.empty_cache() "
                   "(the caching allocator keeps freed blocks), or lower the batch size. "
                   "torch.cuda.memory_summary() shows what is held; %gpu_memory shows other processes.",
                   restart_required=False, applicable=False, reason="what to free is your choice")
    if play and play <= {TENSORFLOW, JAX}:
        return Fix(fid, "Free GPU memory",
                   "Stop other processes on the GPU (%gpu_memory shows them) or lower the batch size. " + _RESERVED,
                   restart_required=False, applicable=False, reason="what to free is your choice")
    return Fix(fid, "Free GPU memory",
               "Stop other processes on the GPU (%gpu_memory shows them), drop large objects (del x; "
               "gc.collect(); torch.cuda.empty_cache() in PyTorch), or lower the batch size. " + _RESERVED,
               restart_required=False, applicable=False, reason="what to free is your choice")


def upgrade_driver(fid: str, a: Any, report: Report | None) -> Fix | None:
    """``upgrade-driver``, worded for this diagnosis."""
    need = a.versions.get("required_driver")
    have = a.versions.get("driver")
    title = f"Install an NVIDIA driver >= {need}" if need else "Install a newer NVIDIA driver"
    action = (f"Upgrade the NVIDIA driver{f' (now {have})' if have else ''}"
              f"{f' to {need} or newer' if need else ''}: CUDA 11.x needs >= 450.80.02, 12.x >= 525.60.13, "
              "13.x >= 580 (Linux).")
    return Fix(fid, title, action, restart_required=True, applicable=False, reason="needs administrator rights")


#: diagnoses after which the process's CUDA context is broken for good (a sticky CUDA error)
_STICKY = frozenset({"cudnn-stream-set-failed", "cudnn-execution-failed"})


def restart_kernel(fid: str, a: Any, report: Report | None) -> Fix | None:
    """``restart-kernel``, worded for this diagnosis: after a sticky CUDA error the context cannot
    recover; out of memory, only memory TensorFlow/JAX reserved needs it (None when PyTorch alone
    raised: its out-of-memory error is recoverable); otherwise the restart that makes a change take
    effect (a process keeps the cuDNN it loaded)."""
    diagnosis = getattr(a, "id", "")
    play = in_play(a.framework, report)
    if diagnosis == "gpu-out-of-memory":
        if play == frozenset({PYTORCH}):
            return None
        return Fix(fid, "Restart the kernel to release reserved GPU memory", _RESERVED,
                   restart_required=True, applicable=True)
    if diagnosis in _STICKY or not diagnosis:
        return Fix(fid, "Restart the kernel",
                   "Restart the kernel (the CUDA context cannot recover); to find the first failing op, "
                   "set CUDA_LAUNCH_BLOCKING=1 before starting.",
                   restart_required=True, applicable=True)
    return Fix(fid, "Restart the kernel",
               "Restart the kernel once the cause is fixed: a process keeps the cuDNN it loaded"
               + (" and the GPU memory TensorFlow/JAX reserved" if play is None or play & {TENSORFLOW, JAX} else "")
               + " until it ends.",
               restart_required=True, applicable=True)


def import_order(fid: str, a: Any, report: Report | None) -> Fix | None:
    """``import-order``, worded for this diagnosis."""
    return Fix(fid, "Import the framework whose cuDNN should win first",
               "The first libcudnn loaded serves the whole process: import the framework you need "
               "cuDNN for first (e.g. `import torch` before `import tensorflow`), in a fresh kernel.",
               restart_required=True, applicable=False, reason="a change to your code")


def make_contiguous(fid: str, a: Any, report: Report | None) -> Fix | None:
    """``make-contiguous``, worded for this diagnosis."""
    return Fix(fid, "Make the input contiguous", "x = x.contiguous()   # before the conv/RNN call",
               restart_required=False, applicable=False, reason="a change to your code")


def same_device(fid: str, a: Any, report: Report | None) -> Fix | None:
    """``same-device``, worded for this diagnosis."""
    return Fix(fid, "Put every operand on the same GPU",
               "model.to(device); x = x.to(device); h0 = h0.to(x.device)   # hidden states too",
               restart_required=False, applicable=False, reason="a change to your code")


def check_shapes(fid: str, a: Any, report: Report | None) -> Fix | None:
    """``check-shapes``, worded for this diagnosis."""
    return Fix(fid, "Check the input shapes",
               "Make each input at least as large as the kernel (pad it), and check channel counts and layout.",
               restart_required=False, applicable=False, reason="a change to your code")


def disable_cudnn_benchmark(fid: str, a: Any, report: Report | None) -> Fix | None:
    """``disable-cudnn-benchmark``, worded for the frameworks in play: PyTorch's
    ``torch.backends.cudnn.benchmark``, TensorFlow's ``TF_CUDNN_USE_AUTOTUNE`` (read at import,
    tensorflow/core/util/use_cudnn.cc), XLA's ``--xla_gpu_autotune_level`` (JAX; 0 turns it off,
    xla/debug_options_flags.cc)."""
    play = in_play(a.framework, report)
    ways = []
    if play is None or PYTORCH in play:
        ways.append("torch.backends.cudnn.benchmark = False")
    if play is None or TENSORFLOW in play:
        ways.append('import os; os.environ["TF_CUDNN_USE_AUTOTUNE"] = "0"   # before importing tensorflow')
    if play is None or JAX in play:
        ways.append('import os; os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_gpu_autotune_level=0"'
                    "   # before importing jax")
    if not ways:
        return None
    if play is None or len(ways) > 1:
        labels = [w for w, f in zip(("PyTorch: ", "TensorFlow: ", "JAX: "), (PYTORCH, TENSORFLOW, JAX))
                  if play is None or f in play]
        ways = [f"{label}{w}" for label, w in zip(labels, ways)]
    return Fix(fid, "Turn off cuDNN autotuning", "\n".join(ways),
               restart_required=PYTORCH not in (play or {PYTORCH}), applicable=True)


def cudnn_fallback(fid: str, a: Any, report: Report | None) -> Fix | None:
    """``cudnn-fallback``, worded for this diagnosis."""
    fw = a.framework
    if "frontend" in " ".join(h.signature.name for _, h in a.hits):
        return Fix(fid, "Disable the cuDNN attention backend",
                   "torch.backends.cuda.enable_cudnn_sdp(False)", restart_required=False, applicable=True)
    if fw == JAX:
        return None  # XLA lowers GPU convolutions to cuDNN: JAX has no switch that runs them without it
    if fw == "TensorFlow":
        return Fix(fid, "Use the generic (non-cuDNN) kernel (slower)",
                   "Keras RNNs take the cuDNN kernel only with the default options: a non-default one "
                   "(e.g. recurrent_dropout>0, or tf.keras.layers.RNN(tf.keras.layers.LSTMCell(n))) selects "
                   "the generic kernel, which also runs on the CPU.",
                   restart_required=False, applicable=False, reason="a change to your code")
    return Fix(fid, "Run without cuDNN (slower)", "torch.backends.cudnn.enabled = False",
               restart_required=False, applicable=True)


def install_cudnn_build(fid: str, a: Any, report: Report | None) -> Fix | None:
    """``install-cudnn-build``, worded for this diagnosis: for a CPU-only build
    (``framework-cpu-build``) the exact command of the framework's CUDA build for the driver's CUDA
    major (:func:`cudnn_magic.rules.gpu_builds.gpu_build`); None where it would change nothing (the
    live facts show a CUDA build already, no NVIDIA GPU or driver, or no CUDA build exists for the
    platform)."""
    fw = a.framework
    if getattr(a, "id", "") == "framework-cpu-build":
        return _cuda_build_fix(fid, a, report)
    return Fix(fid, f"Install a {fw or 'framework'} build with cuDNN support",
               _CUDNN_BUILD_ADVICE.get(fw, _CUDNN_BUILD_ADVICE[""]),
               restart_required=True, applicable=False, reason="a different build of the framework")


def _cuda_build_fix(fid: str, a: Any, report: Report | None) -> Fix | None:
    fw = a.framework
    row = next((b for b in (report.frameworks if report is not None else ()) if b.name == fw), None)
    if row is not None and not row.cpu_build:
        return None  # the facts show a CUDA build: installing one changes nothing
    driver = getattr(report, "driver", None)
    if report is not None and not report.gpus and (driver is None or isinstance(driver, Unavailable)):
        return None  # no NVIDIA GPU or driver here: a CUDA build would not use a GPU either
    driver_cuda = getattr(driver, "cuda_driver_version", None) or a.versions.get("cuda")
    version = row.version if row is not None else _cpu_version(a)
    platform = (report.platform if report is not None and report.platform else "") or _platform_of(a)
    build = gpu_build(fw, version, driver_cuda, platform or "linux")
    if build is None:
        return Fix(fid, f"Install the CUDA build of {fw or 'the framework'}",
                   _CUDNN_BUILD_ADVICE.get(fw, _CUDNN_BUILD_ADVICE[""]),
                   restart_required=True, applicable=False, reason="a different build of the framework")
    if not build.command:
        return None  # no CUDA build for this platform: nothing to install (the note is in the summary's words)
    cuda = (f" for CUDA {cuda_major(driver_cuda)}" if cuda_major(driver_cuda)
            else " (CUDA 12 assumed: nvidia-smi's header says which)")
    where = "" if platform else " (Linux; on native Windows and macOS see the note)"
    return Fix(fid, f"Install the CUDA build of {fw}{cuda}",
               f"{build.command}   # {build.note}{where}", restart_required=True, applicable=False,
               reason="a different build of the framework (pip replaces it; check the command first)")


def _cpu_version(a: Any) -> str | None:
    """The framework's version as the text gave it ("2.1.0+cpu" -> "2.1.0"), or None."""
    v = a.versions.get("version", "")
    return v.split("+", 1)[0] if v else None


def _platform_of(a: Any) -> str:
    """The platform the text's paths show (the diagnosis's ``platform``: a drive letter is Windows,
    /Users/ macOS); "" unknown."""
    return str(getattr(a, "platform", "") or "")


def install_cuda_build(fid: str, a: Any, report: Report | None) -> Fix | None:
    """``install-cuda-build``, worded for this diagnosis."""
    fw = a.framework
    if fw == "JAX":
        return Fix(fid, "Install JAX with CUDA support", "python -m pip install -U \"jax[cuda12]\"",
                   restart_required=True, applicable=True)
    return Fix(fid, "Install a framework build with kernels for this GPU",
               "Install the framework's CUDA build that lists this GPU's compute capability "
               "(%cudnn_check shows the build's cuda_compute_capabilities).",
               restart_required=True, applicable=False, reason="depends on the framework and GPU")


#: How to get a build with cuDNN, per framework (its install documentation).
_CUDNN_BUILD_ADVICE: dict[str, str] = {
    "TensorFlow": "pip install \"tensorflow[and-cuda]\" (Linux; brings CUDA and cuDNN) instead of a CPU-only "
                  "tensorflow/tensorflow-cpu wheel, then restart the kernel",
    "PyTorch": "install a CUDA wheel of PyTorch (they bundle cuDNN; pytorch.org/get-started), or rebuild from "
               "source with cuDNN visible (CUDNN_INCLUDE_DIR/CUDNN_LIBRARY)",
    "MXNet": "pip install the CUDA build of MXNet for your CUDA version (mxnet-cu1xx wheels include cuDNN), or "
             "rebuild with USE_CUDNN=1",
    "Chainer/CuPy": "pip install the cupy-cuda1xx/cupy-cuda12x wheel for your CUDA and the nvidia-cudnn wheel "
                    "(python -m cupyx.tools.install_library --library cudnn for older CuPy), or reinstall CuPy "
                    "from source after cuDNN is installed",
    "Theano": "make cudnn.h and libcudnn visible to Theano: set [dnn] include_path and library_path in .theanorc "
              "(or CPATH/LIBRARY_PATH/LD_LIBRARY_PATH) to the cuDNN install",
    "OpenCV": "build OpenCV with -D WITH_CUDA=ON -D WITH_CUDNN=ON -D OPENCV_DNN_CUDA=ON (and CUDA_ARCH_BIN for this GPU); "
              "the opencv-python wheels from PyPI have no CUDA backend",
    "Deeplearning4j": "add the deeplearning4j-cuda-<CUDA version> dependency (the cuDNN helpers) matching nd4j-cuda, "
                      "with the cuDNN of that CUDA version on PATH/LD_LIBRARY_PATH (or the org.bytedeco cuda redist "
                      "artifact, which bundles it)",
    "": "install the framework's GPU build that includes cuDNN (or rebuild it with cuDNN found by the build), "
        "then restart the kernel",
}
