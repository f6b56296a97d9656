"""The one table of cuDNN consumers: one entry per framework or consumer, read by the probes (which
probe finds it), the what-if (which wheels are it), the ownership scan (which distributions matter),
the fix planners (its import statement, its GPU build), the consumer findings and the renderers.
Pure data: standard library only.

Adding a consumer is one :class:`Consumer` entry here plus its probe (a function
``probe(scan, paths, top, notes) -> list[ConsumerFacts]`` in a module of
:mod:`cudnn_magic.probes.frameworks`, or, for one of the big frameworks, ``_probe_x(finder,
import_frameworks, notes) -> list[FrameworkBuild]``); ``tests/unit/rules/test_consumer_rules.py`` checks that
every entry's probe and rule exist and that every reader uses the table. How each consumer loads
cuDNN is data in its entry (``loads``), with the source it was read from; the loader model
(:mod:`cudnn_magic.probes.loader`) carries the steps (glibc's search, a consumer's own preloads,
cuda-pathfinder's order).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CONSUMERS", "Consumer", "by_distribution", "by_name", "consumer_probes", "framework_probes", "names"]


@dataclass(frozen=True)
class Consumer:
    """One framework or consumer of cuDNN.

    Attributes:
        name: the row's name in the report ("PyTorch").
        distributions: the PEP 503 names of the distributions that install it.
        wheel_distributions: those whose wheel metadata says which cuDNN it needs (what the
            what-if reads before the wheel is installed); ``()`` when none does.
        import_name: the top-level module (``import torch``).
        checker: its rule's key in :data:`cudnn_magic.rules.compat.RULES` or
            :data:`cudnn_magic.rules.consumers.CONSUMER_RULES` (a checker that depends on the
            version, TensorFlow's, names its newest).
        loads: how it loads cuDNN, in words, with the source.
        compiled_from: where its compiled-against cuDNN is read.
        gpu_build: the install command of its GPU build, for a CPU build on a GPU machine ("").
        probe: ``module:function`` in :mod:`cudnn_magic.probes.frameworks` that finds it.
        kind: ``"framework"`` (found by ``probe_frameworks``: the rows judged by
            :func:`cudnn_magic.engines.check.judge_report`) or ``"consumer"`` (found by
            ``probe_extra_frameworks`` over the environment scan, judged by
            :mod:`cudnn_magic.engines.consumer_check`).
    """

    name: str
    distributions: tuple[str, ...]
    import_name: str
    checker: str
    loads: str
    compiled_from: str
    probe: str
    kind: str = "framework"
    wheel_distributions: tuple[str, ...] = ()
    gpu_build: str = ""


CONSUMERS: tuple[Consumer, ...] = (
    Consumer(
        "TensorFlow", ("tensorflow", "tensorflow-gpu", "tf-nightly", "tf-nightly-gpu", "tensorflow-cpu", "tf-nightly-cpu",
                       "tensorflow-intel", "intel-tensorflow", "tensorflow-cpu-aws", "tensorflow-aarch64", "tensorflow-rocm",
                       "tensorflow-macos"),
        "tensorflow", "tensorflow",
        "libtensorflow_framework.so.2 dlopens libcudnn.so.N when the GPU starts (its RUNPATH $ORIGIN/../nvidia/cudnn/lib "
        "comes after LD_LIBRARY_PATH); XLA's cuda_dnn.cc checks the version",
        "tensorflow/python/platform/build_info.py (the major), the tested-build table or the [and-cuda] pin",
        "tensorflow:_probe_tensorflow", wheel_distributions=("tensorflow", "tf-nightly"),
        gpu_build="pip install 'tensorflow[and-cuda]' instead of tensorflow-cpu"),
    Consumer(
        "PyTorch", ("torch", "pytorch", "torch-nightly"), "torch", "pytorch",
        "torch/__init__.py preloads the first nvidia/cudnn/lib/libcudnn.so.*[0-9] on sys.path (read per release from the "
        "installed file, probes/frameworks/torch_preload.py), then libtorch_cuda.so NEEDs libcudnn.so.N (RPATH "
        "$ORIGIN/../../nvidia/cudnn/lib)",
        "the wheel's nvidia-cudnn-cuNN pin, a cuDNN bundled in torch/lib, or torch._C._cudnn.getCompileVersion()",
        "pytorch:_probe_torch", wheel_distributions=("torch",),
        gpu_build="pip install torch (a CUDA build; pytorch.org's selector for another CUDA), not the +cpu wheel"),
    Consumer(
        "JAX", ("jax-cuda12-plugin", "jax-cuda13-plugin", "jax", "jaxlib"), "jax", "jax",
        "its CUDA plugin loads nvidia.cudnn.__path__[0]/lib/libcudnn.so.9 by path when it initializes, then "
        "xla_cuda_plugin.so dlopens libcudnn.so.9 (RPATH before LD_LIBRARY_PATH) (probes/frameworks/jax_plugin.py)",
        "jax_cudaNN_plugin._versions.cudnn_build_version(), or the plugin's pin",
        "jax:_probe_jax", wheel_distributions=("jax-cuda12-plugin", "jax-cuda13-plugin"),
        gpu_build="pip install -U 'jax[cuda12]' (or 'jax[cuda13]'): the CUDA plugin"),
    Consumer(
        "CuPy", ("cupy-cuda12x", "cupy-cuda13x", "cupy-cuda11x", "cupy"), "cupy", "cupy",
        "cupy_backends/cuda/libs/cudnn*.so NEEDs libcudnn.so.8 (CuPy 13 and older; 14 dropped cuDNN)",
        "cupy/.data/_wheel.json", "cupy:_probe_cupy", wheel_distributions=("cupy-cuda12x", "cupy-cuda13x")),
    Consumer(
        "ONNX Runtime", ("onnxruntime-gpu", "ort-nightly-gpu", "onnxruntime-training", "onnxruntime", "ort-nightly",
                         "onnxruntime-directml", "onnxruntime-openvino", "onnxruntime-rocm", "onnxruntime-qnn"),
        "onnxruntime", "onnxruntime",
        "capi/libonnxruntime_providers_cuda.so: DT_NEEDED libcudnn.so.N up to 1.27, a dlopen at session creation since "
        "1.28 (read from the provider file); onnxruntime.preload_dlls() loads its site's nvidia/cudnn/lib copy",
        "capi/build_and_package_info.py, else the CUDA EP requirements table",
        "onnxruntime:_probe_onnxruntime", wheel_distributions=("onnxruntime-gpu",),
        gpu_build="pip uninstall -y onnxruntime && pip install onnxruntime-gpu"),
    Consumer(
        "CTranslate2", ("ctranslate2",), "ctranslate2", "ctranslate2",
        "libctranslate2-*.so NEEDs the cuDNN main library its wheel vendors (ctranslate2.libs, found by _ext.so's RPATH)",
        "the vendored file's name, and the release build table", "ctranslate2:probe", kind="consumer"),
    Consumer(
        "PaddlePaddle", ("paddlepaddle-gpu", "paddlepaddle"), "paddle", "paddle",
        "libpaddle.so dlopens FLAGS_cudnn_dir/libcudnn.so[.N], then the plain name, then /usr/local/cuda/lib64",
        "paddle/version/__init__.py", "paddle:probe", kind="consumer"),
    Consumer(
        "MXNet", ("mxnet", "mxnet-cu112", "mxnet-cu110", "mxnet-cu102", "mxnet-cu101"), "mxnet", "mxnet",
        "libmxnet.so NEEDs libcudnn.so.N", "the soname libmxnet.so NEEDs; CUDA from the distribution name",
        "mxnet:probe", kind="consumer"),
    Consumer(
        "TensorRT", ("tensorrt", "tensorrt-cu12", "tensorrt-cu13", "tensorrt-libs", "tensorrt-cu12-libs",
                     "tensorrt-cu13-libs"), "tensorrt", "tensorrt",
        "TensorRT 10+: only two plugins dlopen libcudnn.so.8; 8.x NEEDs libcudnn.so.8", "the plugin library's strings",
        "tensorrt:probe", kind="consumer"),
    Consumer(
        "cuda-pathfinder consumers", (), "", "soname",
        "cuda.pathfinder.load_nvidia_dynamic_lib(\"cudnn\"): the NVIDIA wheels first, a mapped copy wins, then the OS "
        "loader, CUDNN_PATH, CUDA_PATH (probes/frameworks/pathfinder.py, read from the installed cuda-pathfinder)",
        "cuDNN 9 (its descriptor's only soname)", "pathfinder_consumers:probe", kind="consumer"),
)


def by_name(name: str) -> Consumer | None:
    """The entry whose ``name`` is ``name``."""
    return next((c for c in CONSUMERS if c.name == name), None)


def by_distribution(dist: str) -> Consumer | None:
    """The entry that ``dist`` (any spelling: PEP 503-normalised here) installs."""
    n = "-".join(dist.replace("_", "-").replace(".", "-").lower().split("-"))
    return next((c for c in CONSUMERS if n in c.distributions), None)


def framework_probes() -> tuple[Consumer, ...]:
    """The entries found by ``probe_frameworks`` (in report order)."""
    return tuple(c for c in CONSUMERS if c.kind == "framework")


def consumer_probes() -> tuple[Consumer, ...]:
    """The entries found over the environment scan by ``probe_extra_frameworks``."""
    return tuple(c for c in CONSUMERS if c.kind == "consumer")


def names() -> str:
    """The consumers by name, for "none installed (...)" lines."""
    return ", ".join(c.name for c in CONSUMERS if c.import_name)
