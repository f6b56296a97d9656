"""Each installed framework's compiled-against cuDNN and CUDA, read without importing it.

:func:`probe_frameworks` finds TensorFlow, PyTorch, JAX, CuPy and ONNX Runtime on ``sys.path``
(or on the ``paths`` given), reads what each build says about cuDNN from plain files, and returns
one :class:`~cudnn_magic.model.FrameworkBuild` per framework plus notes on what it could not
read. It never raises, never executes a framework's Python code and never loads a cuDNN into
the process unless the framework is already imported or the caller asks for
``import_frameworks=True``. Verdicts are left to the check engine.

Where each fact comes from (docs/facts.md "Where each framework's compiled-against versions come
from"):

* TensorFlow: ``tensorflow/python/platform/build_info.py`` parsed with :mod:`ast` (TF's
  ``tensorflow/tools/build_info/gen_build_info.py`` writes it): a
  ``collections.OrderedDict([...])`` since TF 2.4, a plain ``{...}`` in 2.3, module constants
  (``is_cuda_build``, ``cuda_version_number``, ``cudnn_version_number``) in 1.x. It gives the
  cuDNN major only (``'9'``; Windows builds write ``'64_8'``); the minor comes from TensorFlow's
  tested build configurations (``rules.build_tables.tf_tested_build``, tensorflow/docs
  ``site/en/install/source.md``) when the majors agree, else from the ``[and-cuda]`` pin
  ``nvidia-cudnn-cu12>=9.3.0.75`` (its lower bound).
* PyTorch: the wheel's ``Requires-Dist: nvidia-cudnn-cu12==9.10.2.21`` (torch 2.9.1) /
  ``nvidia-cudnn-cu13==9.24.0.43`` (2.14.1), ``torch/version.py`` (``cuda``, ``hip``,
  ``__version__``), a cuDNN bundled in ``torch/lib`` (wheels before the pip-dependency era);
  once torch is imported, ``torch.backends.cudnn.version()`` and
  ``torch._C._cudnn.getCompileVersion()``.
* JAX: ``jax_cuda12_plugin/_versions*.so`` (or ``jax_cuda13_plugin``) loaded by file location
  (5 ms; no ``jax``/``jaxlib`` import, no ``__init__`` run, no cuDNN loaded: the plugin reaches
  cuDNN through lazy stubs) -> ``cudnn_build_version()`` (90800) and
  ``cuda_runtime_build_version()`` (12090). Old CUDA ``jaxlib`` wheels say it in their local
  version tag (``0.4.28+cuda12.cudnn89``).
* CuPy: 14 and later have no cuDNN module (CuPy ``docs/source/upgrade.rst``); 13 and older ship
  ``cupy_backends/cuda/libs/cudnn*.so`` (NEEDs ``libcudnn.so.8``) and record the cuDNN the wheel
  was built for in ``cupy/.data/_wheel.json`` (``{"cudnn": {"version": "8.8.1", ...}}``, read by
  ``cupy/_environment.py`` ``_preload_library``). Importing ``cupy_backends.cuda.libs.cudnn``
  would load libcudnn, so that happens only when already imported or asked for.
* ONNX Runtime: ``onnxruntime/capi/build_and_package_info.py`` (``package_name``,
  ``cuda_version``, ``cudnn_version`` in newer releases; written by ONNX Runtime's
  ``setup.py``) and the CUDA execution provider requirements table
  (onnxruntime.ai/docs/execution-providers/CUDA-ExecutionProvider.html): 1.19 and later are
  built with cuDNN 9; 1.18.1 has CUDA 12 + cuDNN 9 packages besides the default CUDA 11.8 +
  cuDNN 8 ones; 1.5 to 1.18.0 use cuDNN 8; 1.0 to 1.4 cuDNN 7.6.

Speed: with nothing imported the probe lists a few directories and reads a few small files
(no ``importlib.metadata``, whose import alone takes 70-120 ms, and no ``distributions()``
scan). Distribution metadata is read straight from the ``*.dist-info`` directory beside the
package (PEP 376/627).

The package: :mod:`.common` (readers and discovery), one module per framework
(:mod:`.tensorflow`, :mod:`.pytorch`, :mod:`.jax`, :mod:`.cupy`, :mod:`.onnxruntime`), the
cuDNN consumers beyond them (:mod:`.ctranslate2`, :mod:`.paddle`, :mod:`.mxnet`, :mod:`.tensorrt`,
:mod:`.pathfinder_consumers`; their types and shared helpers :mod:`.consumer_facts`, their
registry :mod:`.extra`) and the generic scan of every library that needs cuDNN (:mod:`.generic`).
"""

from __future__ import annotations

import importlib
from typing import Callable

from ...model import FrameworkBuild
from ...rules.consumer_table import framework_probes
from .common import DistInfo, _Finder, module_constants, read_dist_metadata, read_tf_build_info

__all__ = ["DistInfo", "module_constants", "probe_frameworks", "read_dist_metadata", "read_tf_build_info"]


def _probe_of(entry: str) -> Callable[[_Finder, bool, list[str]], list[FrameworkBuild]]:
    """The probe function ``module:function`` of this package (the consumer table's ``probe``)."""
    mod, fn = entry.split(":")
    return getattr(importlib.import_module(f".{mod}", __name__), fn)  # type: ignore[no-any-return]


#: (name, probe) of every framework in the consumer table (:mod:`cudnn_magic.rules.consumer_table`).
_PROBES: tuple[tuple[str, Callable[[_Finder, bool, list[str]], list[FrameworkBuild]]], ...] = tuple(
    (c.name, _probe_of(c.probe)) for c in framework_probes())


def probe_frameworks(import_frameworks: bool = False, *, paths: list[str] | None = None
                     ) -> tuple[list[FrameworkBuild], list[str]]:
    """Installed frameworks' compiled-against cuDNN/CUDA without importing them (unless already
    imported, or ``import_frameworks=True``).

    Args:
        import_frameworks: import TensorFlow, PyTorch, JAX, ONNX Runtime and CuPy's cuDNN module
            for the answers only a live framework gives (``torch.backends.cudnn.version()``,
            CuPy's ``getVersion()``...). Importing may load libcudnn into this process.
        paths: directories to search instead of ``sys.path`` (tests; another environment).

    Returns:
        (builds, notes): one :class:`FrameworkBuild` per framework found (CPU-only builds
        included, with ``cudnn_compiled`` None), and plain sentences on what could not be read.
        Verdict fields stay at their defaults: the check engine fills them. Never raises.
    """
    builds: list[FrameworkBuild] = []
    notes: list[str] = []
    try:
        finder = _Finder(list(paths) if paths is not None else None)
    except Exception as exc:  # noqa: BLE001
        return [], [f"frameworks probe could not start: {type(exc).__name__}: {exc}"]
    for label, probe in _PROBES:
        try:
            builds.extend(probe(finder, import_frameworks, notes))
        except Exception as exc:  # noqa: BLE001 - a probe never raises into the cell
            notes.append(f"{label}: probe failed: {type(exc).__name__}: {exc}")
    return builds, notes
