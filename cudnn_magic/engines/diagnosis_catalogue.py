"""The diagnosis catalogue: every id a diagnosis carries, with its generic title, summary and fixes.

The ids are a public contract (docs/ids.md; ``cudnn-magic explain --json``, the
annotation, ``%cudnn_explain``): add one only when a real report needs it, never rename one. A
diagnosis whose evidence has no wording of its own (a status refined by facts) shows these texts;
the knowledge tables (:mod:`cudnn_magic.knowledge`) give the specific ones. Fix ids are the fix
catalogue's (:mod:`cudnn_magic.fixes.catalogue`). Pure data.
"""

from __future__ import annotations

__all__ = ["CATALOGUE"]

#: id -> (title, summary, fix ids strongest first)
CATALOGUE: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "cudnn-version-mismatch": (
        "The cuDNN loaded is not compatible with the one the framework was built with",
        ("The framework was built against another cuDNN release than the one loaded at runtime "
         "(older minor, other major, or a release missing functions it calls)."),
        ("install-matching-cudnn", "remove-shadowing-dir", "import-order"),
    ),
    "cudnn-library-not-found": (
        "The cuDNN library could not be found or opened",
        ("The dynamic loader (or the framework's own loader) could not open cuDNN; some "
         "frameworks then quietly run on the CPU."),
        ("install-matching-cudnn", "remove-shadowing-dir"),
    ),
    "cudnn-sublibrary-load-failed": (
        "A cuDNN sub-library (or one of its dependencies) could not be loaded",
        ("cuDNN loads its sub-libraries on first use; one of them or one of its own "
         "dependencies was missing, or sub-libraries of different releases were mixed."),
        ("reinstall-cudnn", "remove-shadowing-dir", "install-cudnn-deps"),
    ),
    "cudnn-init-failed": (
        "cuDNN failed to initialize",
        ("cuDNN or the framework's DNN support failed to initialize. Usual causes: a cuDNN that "
         "does not match the framework's build, GPU memory already taken (TensorFlow and JAX "
         "preallocate it), or a driver too old; the evidence below does not single one out yet. "
         "What decides it: the cuDNN mapped in the process vs the framework's build, free GPU "
         "memory, and the driver version (run %cudnn_check)."),
        ("allow-memory-growth", "install-matching-cudnn", "upgrade-driver", "restart-kernel"),
    ),
    "gpu-out-of-memory": (
        "The GPU ran out of memory for cuDNN",
        ("GPU memory ran out, often because a framework preallocated most of it and left cuDNN "
         "no room for its handle or workspace."),
        ("allow-memory-growth", "free-gpu-memory", "restart-kernel"),
    ),
    "cuda-driver-too-old": (
        "The NVIDIA driver is too old for this CUDA/cuDNN release",
        "The NVIDIA driver is older than the CUDA runtime or cuDNN release requires.",
        ("upgrade-driver",),
    ),
    "cudnn-stream-set-failed": (
        "cudnnSetStream failed after an earlier CUDA error",
        "cuDNN could not attach to the CUDA stream because the context was already broken.",
        ("restart-kernel", "free-gpu-memory"),
    ),
    "cudnn-execution-failed": (
        "A cuDNN kernel failed to launch or run",
        ("cuDNN could not launch or finish its kernel: operands on the CPU, a build without "
         "kernels for this GPU, or memory."),
        ("same-device", "restart-kernel", "cudnn-fallback"),
    ),
    "cudnn-unsupported-config": (
        "cuDNN does not support this configuration",
        ("cuDNN has no engine or algorithm for this problem (layout, data type, size limits, "
         "non-contiguous input)."),
        ("make-contiguous", "disable-cudnn-benchmark", "cudnn-fallback"),
    ),
    "cudnn-bad-param": (
        "cuDNN rejected the arguments (BAD_PARAM)",
        ("cuDNN rejected the call's arguments: usually shapes (an input smaller than the "
         "kernel) or descriptors built for another cuDNN major."),
        ("check-shapes", "cudnn-fallback"),
    ),
    "tensors-on-different-devices": (
        "The operands of one cuDNN call live on different GPUs",
        ("cuDNN returned MAPPING_ERROR: the tensors of one call are on different devices, or "
         "the current device is not theirs."),
        ("same-device",),
    ),
    "cudnn-internal-error": (
        "cuDNN reported an internal error",
        ("CUDNN_STATUS_INTERNAL_ERROR outside handle creation: oversized problems, the wrong "
         "current device, or library bugs; GPU memory that ran out can end the same way."),
        ("disable-cudnn-benchmark", "free-gpu-memory", "cudnn-fallback"),
    ),
    "gpu-arch-unsupported": (
        "This GPU is not supported by the cuDNN or framework build in use",
        "This GPU's compute capability is not supported by the cuDNN or framework build in use.",
        ("install-cuda-build", "install-matching-cudnn"),
    ),
    "framework-cpu-build": (
        "The framework is a CPU-only build: it has no CUDA and no cuDNN",
        ("The framework build in use has no CUDA support (a CPU-only wheel or a build without CUDA), so it "
         "cannot use the GPU or cuDNN; installing CUDA or cuDNN does not change it, its CUDA build does."),
        ("install-cudnn-build",),
    ),
    "unnamed-library-load-failed": (
        "A native library failed to load, and the message does not say which",
        ("A DLL or shared object that a module needs could not be loaded and the text names none: cuDNN is "
         "one candidate among several. The live facts of this environment (cudnn-magic explain --facts, "
         "%cudnn_check) say whether cuDNN is the one missing."),
        (),
    ),
}
