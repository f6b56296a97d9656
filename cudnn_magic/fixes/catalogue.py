"""The one table of fixes: every fix id, what it does, how it is offered and carried out.

A fix id (docs/ids.md "Fix ids": stable, add, never rename) is one :class:`FixSpec` in
:data:`CATALOGUE`. Everything else derives from it: the registry's ids and titles
(:data:`FIXES`, ``%cudnn_fix``/``cudnn-magic fix``), the ids a diagnosis may offer and their
one-line advice (:data:`ADVICE`, used by :mod:`cudnn_magic.knowledge` and
:mod:`cudnn_magic.engines.diagnose`), the ids the registry can carry out from a button
(:data:`RUNNABLE`), the buttons that only show advice (:data:`ADVICE_ONLY`), the fixes whose
plan shows the diagnosis's or the finding's own words. Adding a fix is one entry here plus its
planner in :mod:`cudnn_magic.fixes.planners` (and, when diagnoses offer it, its wording in
:mod:`cudnn_magic.fixes.advice`); ``tests/unit/fixes/test_fix_catalogue.py`` checks that every id used
anywhere is here and that every name given here exists.

Pure data: no imports beyond the standard library, so the knowledge tables can read it cheaply.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class FixSpec:
    """One fix.

    Attributes:
        id: the stable fix id.
        title: what the registry does for it (``%cudnn_fix``/``cudnn-magic fix``, docs/ids.md).
        advice: the one line a diagnosis shows about it; empty when no diagnosis offers it
            (only ``%cudnn_check`` findings do).
        runs: the registry can carry it out (a button's Apply, ``--yes``); otherwise its plan
            is advice (nothing is executed).
        button: "plan": the fix button computes the live plan at once (disabled, with the
            reason, when it cannot apply); "show": the button shows the advice on click.
        words: where an advice plan's words come from: "planner" (its planner writes them),
            "diagnosis" (the diagnosis that offered it, passed as ``context["advice"]``),
            "finding" (the ``%cudnn_check`` finding that offered it).
        planner: name of its planner in :mod:`cudnn_magic.fixes.planners` (``(report,
            context) -> FixPlan``); empty for "diagnosis"/"finding" words, whose planner is
            made from the words (:mod:`cudnn_magic.fixes.advice`).
        offer: name of the function in :mod:`cudnn_magic.fixes.advice` that words the fix a
            diagnosis offers (``(fid, agg, report) -> Fix | None``); empty when diagnoses
            only quote the fix of a finding.
        notes: extra lines an advice plan shows under the diagnosis's words.
        frameworks: the frameworks whose users the fix is for ("TensorFlow", "PyTorch", "JAX");
            empty: any. A diagnosis offers it only when one of them raised or, when none is
            known, is installed (:mod:`cudnn_magic.fixes.frameworks`).
    """

    id: str
    title: str
    advice: str
    runs: bool = False
    button: Literal["plan", "show"] = "plan"
    words: Literal["planner", "diagnosis", "finding"] = "planner"
    planner: str = ""
    offer: str = ""
    notes: tuple[str, ...] = ()
    frameworks: tuple[str, ...] = ()


CATALOGUE: tuple[FixSpec, ...] = (
    FixSpec(
        'install-matching-cudnn',
        title=("pip install (into the kernel's own environment) the one cuDNN wheel requirement that "
               "satisfies every installed framework's rule and pin, then restart"),
        advice=('install the cuDNN release the framework was built for (pip/conda requirement '
                'computed from the versions)'),
        runs=True, button='plan', words='planner', planner='install_plan',
        offer='install_matching_cudnn'),
    FixSpec(
        'remove-shadowing-dir',
        title=('take the directory that shadows the right cuDNN out of LD_LIBRARY_PATH (or put the '
               "wheel's directory first) in this kernel's kernelspec env, with a backup; applies on a"
               ' fresh kernel start'),
        advice=('take the directory holding another cuDNN off LD_LIBRARY_PATH (or PATH) so the '
                "framework's own copy loads"),
        runs=True, button='plan', words='planner', planner='remove_shadow_plan',
        offer='remove_shadowing_dir'),
    FixSpec(
        'reinstall-cudnn',
        title=('advice: the exact pip command that reinstalls the cuDNN distribution whose files are '
               'missing or of mixed releases'),
        advice=('reinstall one complete cuDNN so that all its sub-libraries come from the same '
                'release'),
        runs=False, button='show', words='planner', planner='reinstall_plan',
        offer='reinstall_cudnn'),
    FixSpec(
        'install-cudnn-deps',
        title=("advice: install the missing libraries cuDNN's sub-libraries need (libnvrtc, "
               'libcublas, zlib)'),
        advice=('install a library cuDNN itself needs (libnvrtc, libcublas, zlib/zlibwapi, libcuda)'),
        runs=False, button='show', words='diagnosis',
        offer='install_cudnn_deps',
        notes=(("cuDNN 9's sub-libraries load libcublas/libcublasLt, libnvrtc and libz; match the cuXX "
                'suffix to your CUDA major'),)),
    FixSpec(
        'allow-memory-growth',
        title=('let TensorFlow/JAX grow GPU memory instead of preallocating it (in-process when the '
               'framework has not initialized the GPU yet, else in the kernelspec env)'),
        advice=('stop TensorFlow/JAX from preallocating the GPU so cuDNN has room for its handle and '
                'workspace'),
        runs=True, button='plan', words='planner', planner='memory_plan',
        offer='allow_memory_growth', frameworks=('TensorFlow', 'JAX')),
    FixSpec(
        'free-gpu-memory',
        title=('advice: free GPU memory held by this kernel or another process'),
        advice=('free GPU memory: other processes, cached tensors, batch size'),
        runs=False, button='show', words='diagnosis',
        offer='free_gpu_memory'),
    FixSpec(
        'upgrade-driver',
        title=('advice: the minimum NVIDIA driver for the CUDA a framework was built with'),
        advice=('install an NVIDIA driver at least as new as the CUDA/cuDNN release needs'),
        runs=False, button='show', words='planner', planner='driver_plan',
        offer='upgrade_driver'),
    FixSpec(
        'restart-kernel',
        title=('restart this kernel (the notebook stays open; the Jupyter server restarts it)'),
        advice=('restart the kernel: the CUDA context is broken after an earlier error'),
        runs=True, button='plan', words='planner', planner='restart_plan',
        offer='restart_kernel'),
    FixSpec(
        'import-order',
        title=('advice: import the framework whose cuDNN you need first'),
        advice=('import the framework whose cuDNN should win first (the first libcudnn loaded serves '
                'the whole process)'),
        runs=False, button='show', words='planner', planner='import_order_plan',
        offer='import_order'),
    FixSpec(
        'one-venv-per-cuda',
        title=('advice: one virtual environment per CUDA major, when wheels of two CUDA majors '
               "overwrite each other's cuDNN files"),
        advice=(''),
        runs=False, button='plan', words='planner', planner='one_venv_plan'),
    FixSpec(
        'make-contiguous',
        title=('advice: make a non-contiguous PyTorch tensor contiguous'),
        advice=('call .contiguous() on the input before the cuDNN op'),
        runs=False, button='show', words='diagnosis',
        offer='make_contiguous', frameworks=('PyTorch',),
        notes=(('cuDNN kernels need dense memory; views made by .transpose(), .permute() or slicing are not'
                ' dense until .contiguous() copies them'),)),
    FixSpec(
        'same-device',
        title=('advice: move tensors and the module to one device'),
        advice=('move every operand (inputs, hidden state, weights) to the same GPU'),
        runs=False, button='show', words='planner', planner='same_device_plan',
        offer='same_device'),
    FixSpec(
        'check-shapes',
        title=("advice: check the input's shape against what the layer expects"),
        advice=('check input sizes against the kernel/descriptor (e.g. input smaller than the kernel)'),
        runs=False, button='show', words='diagnosis',
        offer='check_shapes',
        notes=('cuDNN reports bad shapes as CUDNN_STATUS_BAD_PARAM',)),
    FixSpec(
        'disable-cudnn-benchmark',
        title=('advice: turn off cuDNN autotuning (PyTorch cudnn.benchmark, TF_CUDNN_USE_AUTOTUNE)'),
        advice=('turn off cuDNN autotuning (torch.backends.cudnn.benchmark = False)'),
        runs=False, button='show', words='planner', planner='disable_benchmark_plan',
        offer='disable_cudnn_benchmark'),
    FixSpec(
        'cudnn-fallback',
        title=('advice: run the failing op without cuDNN (slower) to get past it or get a clearer '
               'error'),
        advice=('run the op without cuDNN (slower) to get past it or to get a clearer error'),
        runs=False, button='show', words='planner', planner='cudnn_fallback_plan',
        offer='cudnn_fallback'),
    FixSpec(
        'install-cuda-build',
        title=("advice: install a framework build with CUDA kernels for this GPU's compute capability"),
        advice=('install a framework build with CUDA kernels for this GPU'),
        runs=False, button='show', words='planner', planner='cuda_build_plan',
        offer='install_cuda_build'),
    FixSpec(
        'install-cudnn-build',
        title=('advice: install a framework build compiled with cuDNN support (its GPU wheel), or '
               'rebuild it with cuDNN found'),
        advice=('install a framework build compiled with cuDNN support (the GPU wheel or package, or '
                'rebuild with cuDNN found)'),
        runs=False, button='show', words='diagnosis',
        offer='install_cudnn_build',
        notes=(('a build compiled without cuDNN stays without it when cuDNN is installed later: the '
                'framework itself has to be the GPU build (or rebuilt with cuDNN found)'),)),
    FixSpec(
        'upgrade-consumer',
        title=('advice: install the release of a cuDNN consumer (CTranslate2, ...) whose cuDNN agrees'
               ' with the rest of the environment'),
        advice=('install the release of a cuDNN consumer (CTranslate2, ...) whose cuDNN agrees with '
                'the environment'),
        runs=False, button='plan', words='finding'),
    FixSpec(
        'add-library-path',
        title=('advice: put the directory holding the cuDNN a consumer cannot find on LD_LIBRARY_PATH'
               ' where the kernel starts (kernelspec env), then start the kernel fresh'),
        advice=('put the directory holding the cuDNN (or sub-library) a consumer cannot find on '
                'LD_LIBRARY_PATH'),
        runs=False, button='plan', words='finding'),
    FixSpec(
        'remove-sys-path-dir',
        title=('advice: take the folder whose nvidia/cudnn/lib PyTorch preloads off sys.path '
               '(PYTHONPATH in the kernelspec env or the shell, a .pth file), then start the kernel fresh'),
        advice=('take the folder holding another cuDNN wheel off sys.path (PYTHONPATH, a .pth file) so '
                "PyTorch preloads its own"),
        runs=False, button='plan', words='finding'),
    FixSpec(
        'separate-kernels',
        title=('advice: run consumers that need different cuDNN releases in separate kernels '
               '(separate environments)'),
        advice=('run consumers that need different cuDNN releases in separate kernels (environments)'),
        runs=False, button='plan', words='finding'),
)

SPECS: dict[str, FixSpec] = {s.id: s for s in CATALOGUE}
"""``fix id -> FixSpec``, in catalogue order."""

FIXES: dict[str, str] = {s.id: s.title for s in CATALOGUE}
"""Every fix id the registry knows, with its title (docs/ids.md "Fix ids")."""

ADVICE: dict[str, str] = {s.id: s.advice for s in CATALOGUE if s.advice}
"""The fix ids a diagnosis may offer, with their one-line advice."""

RUNNABLE: frozenset[str] = frozenset(s.id for s in CATALOGUE if s.runs)
"""Fix ids the registry can carry out from a button; every other id is advice."""

ADVICE_ONLY: frozenset[str] = frozenset(s.id for s in CATALOGUE if s.button == "show")
"""Fix ids whose button previews the advice on click; Apply stays disabled."""

DIAGNOSIS_WORDED: frozenset[str] = frozenset(s.id for s in CATALOGUE if s.words == "diagnosis")
"""Advice-only fixes whose plan shows the diagnosis's own words (``context["advice"]``)."""

FINDING_WORDED: dict[str, str] = {s.id: s.title for s in CATALOGUE if s.words == "finding"}
"""Advice-only fixes offered by ``%cudnn_check``'s cuDNN consumer findings, in their words."""

__all__ = [
    "ADVICE",
    "ADVICE_ONLY",
    "CATALOGUE",
    "DIAGNOSIS_WORDED",
    "FINDING_WORDED",
    "FIXES",
    "RUNNABLE",
    "SPECS",
    "FixSpec",
]
