"""What JAX's CUDA plugin does with cuDNN, read from the installed
``jax_plugins/xla_cuda12/__init__.py`` (or ``xla_cuda13``) with :mod:`ast` and :mod:`re`, never run.

Read in jax-cuda12-pjrt 0.10.2 (the 0.12.0.1 cuda12 and cuda13 files are the same as far as cuDNN
goes; ``tests/fixtures/jax_plugins/`` holds them):

* ``initialize()`` calls ``_load_nvidia_libraries()``, which ``_load("cudnn", ["libcudnn.so.9"])``s:
  ``importlib.import_module("nvidia.cudnn")`` and ``ctypes.cdll.LoadLibrary`` of
  ``nvidia.cudnn.__path__[0]/lib/libcudnn.so.9`` (default, local scope; a failure is ignored, there
  is no fallback by name). ``nvidia`` is a namespace package, so ``__path__[0]`` is the
  ``nvidia/cudnn`` folder of the first ``sys.path`` entry that has one. The file loaded keeps its
  SONAME, so the plugin's later ``dlopen("libcudnn.so.9")`` (TSL's ``dso_loader.cc``, from
  ``xla_cuda_plugin.so`` with its RPATH ``$ORIGIN/../../nvidia/cudnn/lib``) gets it: a preload, as
  PyTorch's (:mod:`.torch_preload`).
* ``_check_cuda_versions`` (when the plugin initializes): the general cuDNN check compares
  ``cudnn_build_version // 100`` with the unscaled runtime number, so it passes any cuDNN 9; it
  refuses 9.10.0 (``cudnn_version == 91000``) unless built with it, and refuses cuDNN below 9.10.1
  (``cudnn_version < 91001``) when cuBLAS is 12.9 or newer (``cublas_version >= 120900``) and more
  than one local device is visible (``local_device_count > 1``: JAX's ``jax_cuda_visible_devices``
  when set, else the driver's device count, which honours ``CUDA_VISIBLE_DEVICES``).

:func:`read_plugin` returns those facts as the installed file states them, so the rule the report
quotes is that file's.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass

from ...model import Preload
from ...util.files import read_regular

__all__ = ["PluginFacts", "jax_preload", "read_plugin"]

_MAX = 2 << 20


@dataclass(frozen=True)
class PluginFacts:
    """What one installed plugin ``__init__.py`` says about cuDNN.

    Attributes:
        path: the file read.
        preload: the soname ``_load("cudnn", [...])`` loads from ``nvidia.cudnn``'s folder, or "".
        refuses: cuDNN version numbers it refuses unless built with them (``(91000,)``).
        multi_gpu: (cuDNN floor, cuBLAS minimum, devices more than): it refuses a runtime below the
            floor when cuBLAS is at least the minimum and more than that many devices are visible;
            None when the file has no such check.
        rule: the rule in words, as this file has it, with its source.
    """

    path: str
    preload: str
    refuses: tuple[int, ...]
    multi_gpu: tuple[int, int, int] | None
    rule: str


def _v(n: int) -> str:
    return f"{n // 10000}.{n // 100 % 100}.{n % 100}"


def read_plugin(init_path: str) -> PluginFacts | str:
    """The :class:`PluginFacts` of a ``jax_plugins/xla_cudaNN/__init__.py``, or a sentence saying
    why it could not be read. Never raises."""
    try:
        data = read_regular(init_path, _MAX + 1)
        if len(data) > _MAX:
            return f"{init_path} is larger than {_MAX} bytes"
        text = data.decode("utf-8", "replace")
        tree = ast.parse(text, filename=init_path)
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return f"could not read {init_path}: {type(exc).__name__}: {exc}"
    preload = ""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "_load" and len(node.args) >= 2:
            a0, a1 = node.args[0], node.args[1]
            if isinstance(a0, ast.Constant) and a0.value == "cudnn" and isinstance(a1, (ast.List, ast.Tuple)):
                names = [e.value for e in a1.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
                preload = next((n for n in names if n.startswith("libcudnn")), "")
    refuses = tuple(int(m) for m in re.findall(
        r"cudnn_version\s*==\s*(\d{5,})\s*\n?\s*and\s+cuda_versions\.cudnn_build_version\(\)\s*!=", text))
    multi = None
    m = re.search(r"cudnn_version\s*<\s*(\d{5,}).{0,200}?cublas_version\s*>=\s*(\d{5,}).{0,120}?local_device_count\s*>\s*(\d+)",
                  text, re.DOTALL)
    if m:
        multi = (int(m.group(1)), int(m.group(2)), int(m.group(3)))
    scaled = bool(re.search(r'"cuDNN",\s*cuda_versions\.cudnn_get_version,\s*cuda_versions\.cudnn_build_version,'
                            r'(?:\s*#[^\n]*\n)*\s*scale_for_comparison=100', text))
    name = "/".join(init_path.replace(os.sep, "/").split("/")[-3:])
    parts = []
    if scaled:
        parts.append("passes when cudnn_build_version // 100 <= the runtime number (any cuDNN 9 passes)")
    for r in refuses:
        parts.append(f"refuses {_v(r)} unless built with it")
    if multi:
        floor, cublas, more = multi
        parts.append(f"refuses cuDNN below {_v(floor)} when cuBLAS is {cublas // 10000}.{cublas // 100 % 100} or newer "
                     f"and more than {more} local device{'s are' if more != 1 else ' is'} visible "
                     "(jax_cuda_visible_devices, else the driver's device count)")
    rule = (f"JAX's Python side ({name} _check_cuda_versions, when the CUDA plugin initializes): " + "; ".join(parts)
            if parts else f"{name}: no cuDNN check found")
    return PluginFacts(init_path, preload, refuses, multi, rule)


def _package_dir(entries: list[str], name: str) -> str | None:
    """``pkg.__path__[0]`` for a top-level ``name`` the way Python's path finder resolves it:
    a regular package (``name/__init__.py``) in any entry wins, wherever it stands; else a
    namespace package over every entry's ``name/`` folder, the first in order."""
    regular = next((os.path.join(e, name) for e in entries if os.path.isfile(os.path.join(e, name, "__init__.py"))), None)
    if regular is not None:
        return regular
    return next((os.path.join(e, name) for e in entries if os.path.isdir(os.path.join(e, name))), None)


def nvidia_module_dir(module: str, sys_path: Iterable[str]) -> str | None:
    """``nvidia.<module>.__path__[0]`` as ``importlib.import_module`` would find it (None when the
    import would fail): ``nvidia`` is a namespace package over the NVIDIA wheels, unless one of them
    ships ``nvidia/__init__.py`` (``nvidia-cudnn-cu12`` 8.9.7 does), which makes it a regular package
    of that one folder."""
    entries = [os.path.abspath(os.fspath(e) or os.curdir) for e in sys_path if isinstance(e, (str, os.PathLike))]
    nv = _package_dir(entries, "nvidia")
    if nv is None:
        return None
    if os.path.isfile(os.path.join(nv, "__init__.py")):
        parents = [nv]
    else:
        parents = [os.path.join(e, "nvidia") for e in entries if os.path.isdir(os.path.join(e, "nvidia"))]
    return _package_dir(parents, module)


def jax_preload(soname: str, sys_path: Iterable[str]) -> Preload | None:
    """The file ``_load("cudnn", [soname])`` would load: ``nvidia.cudnn.__path__[0]/lib/<soname>``
    (:func:`nvidia_module_dir`); None when that folder has no such file (the load then fails
    silently and the plugin's own lookup decides) or ``nvidia.cudnn`` does not import."""
    sys_path = list(sys_path)
    folder = nvidia_module_dir("cudnn", sys_path)
    if folder is None:
        return None
    path = os.path.join(folder, "lib", soname)
    if not os.path.exists(path):
        return None
    entry = next((os.fspath(e) for e in sys_path if isinstance(e, (str, os.PathLike))
                  and folder.startswith(os.path.abspath(os.fspath(e) or os.curdir) + os.sep)), "")
    return Preload(os.path.abspath(path), f"JAX's CUDA plugin loads nvidia.cudnn.__path__[0]/lib/{soname} by path when it "
                   f"initializes (jax_plugins _load_nvidia_libraries), from sys.path entry {entry or '(working directory)'}",
                   entry)
