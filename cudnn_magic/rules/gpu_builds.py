"""The CUDA build that replaces a framework's CPU-only build: the exact pip command for a CUDA
major, per framework, from each project's install documentation. Pure: packaging only.

One table serves the check's ``framework-cpu-build`` finding and the diagnosis of the same id, so
both name the same command. Which CUDA major: the one the NVIDIA driver supports (NVML's CUDA
driver version, or the ``CUDA Version`` in ``nvidia-smi``'s header); a CUDA 12 wheel runs on any
driver that supports CUDA 12.0 or newer (CUDA minor-version compatibility, NVIDIA's CUDA
compatibility guide), so the newest index of that major no newer than the driver's CUDA is picked,
else the oldest of the major.

Sources:

* PyTorch: https://pytorch.org/get-started/locally/ and the release compatibility matrix in
  pytorch/pytorch RELEASE.md (which CUDA variants each release was built for); the wheels of a
  variant are on ``https://download.pytorch.org/whl/cuXYZ``. PyPI's own ``torch`` is a CUDA build on
  Linux and a CPU build on Windows and macOS; macOS has no CUDA build.
* TensorFlow: https://www.tensorflow.org/install/pip (``tensorflow[and-cuda]``, Linux, TF >= 2.14;
  "TensorFlow 2.10 was the last TensorFlow release that supported GPU on native-Windows").
* JAX: https://docs.jax.dev/en/latest/installation.html (``jax[cuda12]``, ``jax[cuda13]``; CUDA 11
  support ended with jax 0.4.25, ``jax[cuda11_pip]`` from the jax_cuda_releases page).
* ONNX Runtime: https://onnxruntime.ai/docs/install/ (``onnxruntime-gpu``: CUDA 12 on PyPI since
  1.19; CUDA 11 builds on the onnxruntime-cuda-11 feed). Both wheels provide the ``onnxruntime``
  module, so the CPU one is removed first.
* PaddlePaddle: https://www.paddlepaddle.org.cn/install/quick (``paddlepaddle-gpu`` from
  ``https://www.paddlepaddle.org.cn/packages/stable/cuXYZ/``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from packaging.version import InvalidVersion, Version

__all__ = ["PYTORCH_CUDA_VARIANTS", "GpuBuild", "cuda_major", "gpu_build"]

#: CUDA variants each PyTorch release was built for (pytorch/pytorch RELEASE.md, "Release
#: Compatibility Matrix"); a release newer than the table gets the newest row's variants.
PYTORCH_CUDA_VARIANTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("1.12", ("11.3", "11.6")),
    ("1.13", ("11.6", "11.7")),
    ("2.0", ("11.7", "11.8")),
    ("2.1", ("11.8", "12.1")),
    ("2.2", ("11.8", "12.1")),
    ("2.3", ("11.8", "12.1")),
    ("2.4", ("11.8", "12.1", "12.4")),
    ("2.5", ("11.8", "12.1", "12.4")),
    ("2.6", ("11.8", "12.4", "12.6")),
    ("2.7", ("11.8", "12.6", "12.8")),
    ("2.8", ("12.6", "12.8", "12.9")),
    ("2.9", ("12.6", "12.8", "13.0")),
)

_PADDLE_VARIANT = {11: "cu118", 12: "cu126"}


@dataclass(frozen=True)
class GpuBuild:
    """How to replace a CPU-only build.

    Attributes:
        command: the shell command (empty when no CUDA build exists for that platform).
        note: why this one, or why none exists (the source's words).
    """

    command: str
    note: str


def cuda_major(version: str | None) -> int | None:
    """The major of a CUDA version string ("12.4" -> 12), None when it is not one."""
    m = re.match(r"\s*(\d{1,2})(?:\.\d{1,2})?", version or "")
    return int(m.group(1)) if m else None


def _release(version: str | None) -> Version | None:
    try:
        return Version((version or "").split("+", 1)[0]) if version else None
    except InvalidVersion:
        return None


def _pick(variants: tuple[str, ...], driver_cuda: str | None, major: int) -> str | None:
    """The newest variant of ``major`` not newer than the driver's CUDA, else the oldest of it."""
    same = [v for v in variants if cuda_major(v) == major]
    if not same:
        return None
    try:
        limit = Version(driver_cuda) if driver_cuda and "." in driver_cuda else None
    except InvalidVersion:
        limit = None
    fitting = [v for v in same if limit is None or Version(v) <= limit]
    return (fitting or same[:1])[-1]


def gpu_build(framework: str, version: str | None = None, driver_cuda: str | None = None,
              platform: str = "linux") -> GpuBuild | None:
    """The CUDA build of ``framework`` for the driver's CUDA ``driver_cuda`` ("12.4"; None:
    unknown, CUDA 12 assumed), on ``platform`` (``sys.platform``-style: "linux", "win32",
    "darwin").

    Returns:
        The :class:`GpuBuild`, or None for a framework this table does not know.
    """
    major = cuda_major(driver_cuda) or 12
    rel = _release(version)
    same = f"=={rel}" if rel is not None else ""
    if platform.startswith("darwin"):
        return GpuBuild("", f"{framework} has no CUDA build for macOS: NVIDIA's CUDA does not run there")
    if framework == "PyTorch":
        variants, later = PYTORCH_CUDA_VARIANTS[-1][1], ""
        if rel is not None:
            for minor, row in PYTORCH_CUDA_VARIANTS:
                if Version(minor) == Version(f"{rel.major}.{rel.minor}"):
                    variants = row
                    break
            else:
                if Version(f"{rel.major}.{rel.minor}") > Version(PYTORCH_CUDA_VARIANTS[-1][0]):
                    later = (f" (PyTorch {rel.major}.{rel.minor} is newer than this table: pytorch.org's selector "
                             "lists its CUDA builds)")
        tag = _pick(variants, driver_cuda, major)
        if tag is None and rel is None:  # any release will do: the newest one built for this CUDA major
            for _, row in reversed(PYTORCH_CUDA_VARIANTS):
                tag = _pick(row, driver_cuda, major)
                if tag is not None:
                    break
        if tag is None:
            return GpuBuild("", f"PyTorch {rel or ''} was built for CUDA {', '.join(variants)}, none of CUDA {major}: "
                                "a newer driver (or another PyTorch release) is needed".replace("  ", " "))
        index = "https://download.pytorch.org/whl/cu" + tag.replace(".", "")
        return GpuBuild(f'python -m pip install --force-reinstall "torch{same}" --index-url {index}',
                        f"the CUDA {tag} build of the same release instead of the +cpu wheel (pytorch.org's selector); "
                        "install torchvision and torchaudio from the same index if they are installed" + later)
    if framework == "TensorFlow":
        if platform.startswith("win"):
            return GpuBuild("", "TensorFlow 2.10 was the last release with GPU support on native Windows: use WSL2 "
                                "(then pip install \"tensorflow[and-cuda]\") or TensorFlow <= 2.10 with its CUDA 11.2")
        return GpuBuild(f'python -m pip uninstall -y tensorflow-cpu && python -m pip install "tensorflow[and-cuda]{same}"',
                        "tensorflow[and-cuda] (TensorFlow >= 2.14, Linux) brings its CUDA and cuDNN wheels")
    if framework == "JAX":
        if major <= 11:
            return GpuBuild('python -m pip install -U "jax[cuda11_pip]==0.4.25" -f '
                            "https://storage.googleapis.com/jax-releases/jax_cuda_releases.html",
                            "JAX's last release for CUDA 11 is 0.4.25; a driver for CUDA 12 allows jax[cuda12]")
        extra = "cuda13" if major >= 13 else "cuda12"
        return GpuBuild(f'python -m pip install -U "jax[{extra}]"',
                        f"the CUDA plugin (jax-{extra}-plugin) with its CUDA and cuDNN wheels")
    if framework == "ONNX Runtime":
        first = "python -m pip uninstall -y onnxruntime && python -m pip install "
        both = "the CPU wheel and onnxruntime-gpu both provide the onnxruntime module: the CPU one goes first"
        feed = "https://aiinfra.pkgs.visualstudio.com/PublicPackages/_packaging/onnxruntime-cuda-{}/pypi/simple/"
        old = rel is not None and rel < Version("1.19")  # PyPI's onnxruntime-gpu was CUDA 11 before 1.19, 12 after
        if major <= 11 and not old:
            return GpuBuild(f"{first}onnxruntime-gpu{same} --index-url {feed.format(11)}",
                            f"onnxruntime-gpu for CUDA 11 comes from its own feed since 1.19; {both}")
        if major >= 12 and old:
            return GpuBuild(f"{first}onnxruntime-gpu{same} --index-url {feed.format(12)}",
                            f"onnxruntime-gpu for CUDA 12 came from its own feed before 1.19; {both}")
        return GpuBuild(f"{first}onnxruntime-gpu{same}", both)
    if framework == "PaddlePaddle":
        first = "python -m pip uninstall -y paddlepaddle && python -m pip install paddlepaddle-gpu"
        if rel is None or rel < Version("3"):
            return GpuBuild(f"{first}{same}", "PyPI's paddlepaddle-gpu (CUDA 11.8 for 2.5-2.6); PaddlePaddle's install page "
                                              "lists its builds for other CUDA versions")
        tag = _PADDLE_VARIANT.get(major, "cu126")
        return GpuBuild(f"{first}{same} -i https://www.paddlepaddle.org.cn/packages/stable/{tag}/",
                        f"the {tag} build from PaddlePaddle's own index")
    if framework == "CTranslate2":
        return GpuBuild(f'python -m pip install --force-reinstall "ctranslate2{same}"',
                        "CTranslate2's PyPI wheels for Linux and Windows are CUDA builds (CUDA 12 since 4.0)")
    if framework == "MXNet":
        return GpuBuild('python -m pip uninstall -y mxnet && python -m pip install mxnet-cu112',
                        "MXNet's last CUDA builds are mxnet-cu112 / mxnet-cu117 1.9.1 (the project is retired)")
    return None
