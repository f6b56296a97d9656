"""NVIDIA's ``cuda-pathfinder`` (``cuda.pathfinder.load_nvidia_dynamic_lib("cudnn")``): how it finds
cuDNN, read from the installed package, and which installed distributions load cuDNN through it.

cuda-pathfinder knows cuDNN from 1.7.0 on. Its order for a library (``_dynamic_libs/
load_nvidia_dynamic_lib.py`` ``_load_lib_no_cache``, the same in 1.7.0-1.9.1; ``search_steps.py``
``EARLY_FIND_STEPS``/``LATE_FIND_STEPS``):

1. the NVIDIA wheels: the descriptor's ``site_packages_linux`` folder (``nvidia/cudnn/lib``) below
   each of ``site.getsitepackages()`` with the user site inserted (index 1 in a venv, 0 outside
   one): ``sys.path`` is NOT searched;
2. conda: ``$CONDA_PREFIX/lib64``, then ``$CONDA_PREFIX/lib``;
3. (checked after 1-2, and it wins over them) a copy already loaded:
   ``ctypes.CDLL("libcudnn.so.9", RTLD_NOLOAD)``;
4. the one found in 1-2, loaded by path (``RTLD_NOW | RTLD_GLOBAL``);
5. the OS loader: ``dlopen("libcudnn.so.9")`` (``LD_LIBRARY_PATH``, the ld.so cache, the default
   directories);
6. the descriptor's ``install_root_env_vars_linux`` (``CUDNN_PATH``: ``lib``, then ``lib64``);
7. ``$CUDA_PATH``, else ``$CUDA_HOME`` (``lib64``, then ``lib``).

So wheels come BEFORE ``LD_LIBRARY_PATH``, the opposite of glibc's own order. Before loading it,
cuda-pathfinder loads the descriptor's ``dependencies`` (``cublasLt``) and raises
``DynamicLibNotFoundError`` when one is missing, even when cuDNN itself is found.

The descriptor's fields are read from the installed ``descriptor_catalog.py`` with :mod:`ast`; the
order is data (:data:`ORDER`) with that source. Nothing is imported or loaded here.
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass, field

from packaging.version import InvalidVersion, Version

from ...model import Resolution
from ...util.files import read_regular
from .. import filefacts
from ..loader import resolve_pathfinder

__all__ = ["ORDER", "PathfinderSpec", "calls_pathfinder_for_cudnn", "pathfinder_pick", "read_pathfinder"]

#: The order of ``load_nvidia_dynamic_lib`` (module docstring), as step names.
ORDER = ("site-packages", "conda", "was-already-loaded-from-elsewhere", "system-search", "CUDNN_PATH", "CUDA_PATH")
ORDER_SOURCE = ("cuda-pathfinder 1.7-1.9 cuda/pathfinder/_dynamic_libs/load_nvidia_dynamic_lib.py _load_lib_no_cache "
                "and search_steps.py EARLY_FIND_STEPS / LATE_FIND_STEPS")
_CALL = re.compile(rb"load_nvidia_dynamic_lib\(\s*['\"]cudnn['\"]\s*\)")


@dataclass(frozen=True)
class PathfinderSpec:
    """cuDNN as the installed cuda-pathfinder describes it.

    Attributes:
        version: the cuda-pathfinder version.
        sonames: ``linux_sonames`` (``("libcudnn.so.9",)``: cuDNN 8 is never found).
        site_dirs: ``site_packages_linux`` (``("nvidia/cudnn/lib",)``).
        env_vars: ``install_root_env_vars_linux`` (``("CUDNN_PATH",)``) and ``env_rel_dirs`` below them.
        anchor_rel_dirs: below ``$CONDA_PREFIX`` and ``$CUDA_PATH``/``$CUDA_HOME`` (``("lib64", "lib")``).
        dependencies: loaded first, required (``("cublasLt",)``).
        source: the file the descriptor was read from.
    """

    version: str
    sonames: tuple[str, ...]
    site_dirs: tuple[str, ...]
    env_vars: tuple[str, ...] = ("CUDNN_PATH",)
    env_rel_dirs: tuple[str, ...] = ("lib", "lib64")
    anchor_rel_dirs: tuple[str, ...] = ("lib64", "lib")
    dependencies: tuple[str, ...] = ()
    source: str = ""
    order: tuple[str, ...] = field(default=ORDER)


def _kwargs_of(call: ast.Call) -> dict[str, object]:
    out: dict[str, object] = {}
    for kw in call.keywords:
        if kw.arg is None:
            continue
        try:
            out[kw.arg] = ast.literal_eval(kw.value)
        except (ValueError, SyntaxError, TypeError):
            continue
    return out


def read_pathfinder(site: str, name: str = "cudnn") -> PathfinderSpec | str:
    """The descriptor of library ``name`` (cuDNN by default; ``cublasLt``, its dependency) in the
    cuda-pathfinder installed in ``site`` (the folder holding ``cuda/pathfinder`` and its
    ``.dist-info``), or a sentence saying why there is none. Never raises."""
    try:
        infos = [e for e in os.listdir(site) if re.match(r"cuda_pathfinder-[^-]+\.dist-info$", e)]
    except OSError as exc:
        return f"cannot list {site}: {exc.strerror or exc}"
    if not infos:
        return "cuda-pathfinder is not installed here"
    version = infos[0][len("cuda_pathfinder-"):-len(".dist-info")]
    try:
        if Version(version) < Version("1.7.0"):
            return f"cuda-pathfinder {version} does not know cuDNN (1.7.0 and later do)"
    except InvalidVersion:
        return f"cuda-pathfinder version {version!r} not understood"
    cat = os.path.join(site, "cuda", "pathfinder", "_dynamic_libs", "descriptor_catalog.py")
    found = _catalog(cat)
    if isinstance(found, str):
        return found
    kw = found.get(name)
    if kw is None:
        return f"cuda-pathfinder {version}: no {name} descriptor in {cat}"
    return PathfinderSpec(
        version=version, sonames=tuple(kw.get("linux_sonames", ())),
        site_dirs=tuple(kw.get("site_packages_linux", ())),
        env_vars=tuple(kw.get("install_root_env_vars_linux", ("CUDNN_PATH",))),
        env_rel_dirs=tuple(kw.get("install_root_env_rel_dirs_linux", ("lib", "lib64"))),
        anchor_rel_dirs=tuple(kw.get("anchor_rel_dirs_linux", ("lib64", "lib"))),
        dependencies=tuple(kw.get("dependencies", ())),
        source=f"cuda-pathfinder {version} cuda/pathfinder/_dynamic_libs/descriptor_catalog.py")


#: The ``DescriptorSpec`` keywords read (each a sequence of strings).
_FIELDS = ("linux_sonames", "site_packages_linux", "install_root_env_vars_linux", "install_root_env_rel_dirs_linux",
           "anchor_rel_dirs_linux", "dependencies")
#: Raised whenever what :func:`_read_catalog` keeps of a file changes (the kind it is stored under).
READER_VERSION = 1
_FACT = f"pathfinder-catalog-{READER_VERSION}"
_memo: dict[tuple[str, int, int, int, int], dict[str, dict[str, tuple[str, ...]]] | str] = {}


def _catalog(cat: str) -> dict[str, dict[str, tuple[str, ...]]] | str:
    """Every library's descriptor in the catalogue file ``cat``: name -> {keyword: strings}, or
    why it could not be read. Parsing the file with :mod:`ast` costs a few ms and a check asks for
    two libraries per consumer, so what was read is kept per file identity (device, inode, size,
    mtime in ns) in this process and on disk (:mod:`cudnn_magic.probes.filefacts`). Never raises."""
    try:
        st = os.stat(cat)
    except (OSError, ValueError) as exc:
        return f"could not read {cat}: {type(exc).__name__}: {exc}"
    key = (cat, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    found = _memo.get(key)
    if found is not None:
        return found
    kept = filefacts.get(cat, st, _FACT)
    if isinstance(kept, dict) and all(
            isinstance(v, dict) and all(k in _FIELDS and isinstance(x, list) and all(isinstance(i, str) for i in x)
                                        for k, x in v.items()) for v in kept.values()):
        found = {n: {k: tuple(x) for k, x in v.items()} for n, v in kept.items()}
    else:
        found = _read_catalog(cat)
        if isinstance(found, str):
            return found  # a read that failed is tried again next time
        filefacts.put(cat, st, _FACT, {n: {k: list(x) for k, x in v.items()} for n, v in found.items()})
    if not filefacts.racy(st):  # a file changed within the timestamps' granularity is read every time
        if len(_memo) >= 64:
            _memo.clear()
        _memo[key] = found
    return found


def _read_catalog(cat: str) -> dict[str, dict[str, tuple[str, ...]]] | str:
    """:func:`_catalog`'s reading of the file itself (the first descriptor of each name)."""
    try:
        tree = ast.parse(read_regular(cat, 4 << 20).decode("utf-8", "replace"), filename=cat)
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return f"could not read {cat}: {type(exc).__name__}: {exc}"
    out: dict[str, dict[str, tuple[str, ...]]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "DescriptorSpec":
            kw = _kwargs_of(node)
            name = kw.get("name")
            if not isinstance(name, str) or name in out:
                continue
            out[name] = {k: tuple(v) for k, v in kw.items() if k in _FIELDS and isinstance(v, (list, tuple))
                         and all(isinstance(i, str) for i in v)}
    return out


def pathfinder_pick(site: str, consumer: str, *, environ: dict[str, str] | None = None,
                    ldcache: dict[str, list[str]] | None = None, mapped: list[str] | tuple[str, ...] = (),
                    site_dirs: list[str] | None = None) -> tuple[Resolution | None, str]:
    """What ``load_nvidia_dynamic_lib("cudnn")`` of the cuda-pathfinder in ``site`` would load for
    ``consumer`` (:func:`cudnn_magic.probes.loader.resolve_pathfinder`), with its required
    dependencies (``cublasLt``) found the same way first: when one is not found, it raises, and the
    resolution says so (picked None). Returns (resolution or None when this pathfinder does not
    know cuDNN, a note). Never raises."""

    spec = read_pathfinder(site)
    if isinstance(spec, str):
        return None, spec
    kw = {"environ": environ, "ldcache": ldcache, "mapped": mapped, "site_dirs": site_dirs}
    for dep in spec.dependencies:
        dspec = read_pathfinder(site, dep)
        if isinstance(dspec, str):
            continue
        d = resolve_pathfinder(dspec, consumer, **kw)  # type: ignore[arg-type]
        if d.picked is None:
            return Resolution(consumer, None, spec.sonames[0] if spec.sonames else "libcudnn.so.9", None,
                              f"cuda-pathfinder raises DynamicLibNotFoundError: it loads {dep} first "
                              f"({' or '.join(dspec.sonames)}) and finds none"), ""
    return resolve_pathfinder(spec, consumer, **kw), ""  # type: ignore[arg-type]


def calls_pathfinder_for_cudnn(paths: list[str], limit: int = 4 << 20) -> str | None:
    """The first of ``paths`` (a distribution's Python files) that calls
    ``load_nvidia_dynamic_lib("cudnn")``, or None. Reads at most ``limit`` bytes of each."""
    for p in paths:
        try:
            if _CALL.search(read_regular(p, limit)):
                return p
        except OSError:
            continue
    return None
