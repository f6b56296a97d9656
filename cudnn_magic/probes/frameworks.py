"""Each installed framework's compiled-against cuDNN and CUDA, read without importing it.

:func:`probe_frameworks` finds TensorFlow, PyTorch, JAX, CuPy and ONNX Runtime on ``sys.path``
(or on the ``paths`` given), reads what each build says about cuDNN from plain files, and returns
one :class:`~cudnn_magic.model.FrameworkBuild` per framework plus notes on what it could not
read. It never raises, never executes a framework's Python code and never loads a cuDNN into
the process unless the framework is already imported or the caller asks for
``import_frameworks=True``. Verdicts are left to the check engine.

Where each fact comes from (FACTS.md "Where each framework's compiled-against versions come
from"; research/native-lab-notes.md §2-§5):

* TensorFlow: ``tensorflow/python/platform/build_info.py`` parsed with :mod:`ast` (TF's
  ``tensorflow/tools/build_info/gen_build_info.py`` writes it): a
  ``collections.OrderedDict([...])`` since TF 2.4, a plain ``{...}`` in 2.3, module constants
  (``is_cuda_build``, ``cuda_version_number``, ``cudnn_version_number``) in 1.x. It gives the
  cuDNN major only (``'9'``; Windows builds write ``'64_8'``); the minor comes from TensorFlow's
  tested build configurations (``versions.tf_tested_build``, tensorflow/docs
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
"""

from __future__ import annotations

import ast
import importlib
import importlib.machinery
import importlib.util
import json
import os
import re
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from packaging.version import InvalidVersion, Version

from ..model import FrameworkBuild
from ..rules.build_tables import cuda_from_int, tf_tested_build
from ..rules.compat import checker_for_tensorflow
from ..rules.cudnn_version import CudnnVersion, try_parse

__all__ = ["probe_frameworks", "read_tf_build_info", "module_constants", "read_dist_metadata", "DistInfo"]

_MAX_PY_BYTES = 1 << 20  # build_info.py / version.py are a few hundred bytes; refuse anything huge
_MAX_META_BYTES = 4 << 20


# --------------------------------------------------------------------------------------------
# small readers (pure; no imports of the frameworks)
# --------------------------------------------------------------------------------------------


_SEP = re.compile(r"[-_.]+")


def _norm(name: str) -> str:
    """PEP 503 normalised distribution name."""
    return _SEP.sub("-", name).lower()


@dataclass
class DistInfo:
    """The few fields of a distribution's metadata this probe needs (``name`` PEP 503-normalised:
    the tensorflow-cpu wheel's METADATA says ``Name: tensorflow_cpu``).

    Read from ``*.dist-info/METADATA`` (core metadata, an RFC 822 header block) or
    ``*.egg-info/PKG-INFO`` + ``requires.txt``.
    """

    name: str
    version: str
    requires: list[str] = field(default_factory=list)
    path: str = ""


def _read_text(path: str, limit: int) -> str:
    with open(path, "rb") as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise ValueError(f"{path} is larger than {limit} bytes")
    return data.decode("utf-8", errors="replace")


def read_dist_metadata(info_dir: str) -> DistInfo:
    """Parse ``Name``, ``Version`` and every ``Requires-Dist`` of one ``*.dist-info`` or
    ``*.egg-info`` directory. Only the header block is read (it ends at the first blank line).

    Raises:
        OSError: the metadata file cannot be read.
        ValueError: it has no ``Name``/``Version`` header.
    """
    is_egg = info_dir.endswith(".egg-info")
    meta = os.path.join(info_dir, "PKG-INFO" if is_egg else "METADATA")
    text = _read_text(meta, _MAX_META_BYTES)
    headers: list[tuple[str, str]] = []
    for line in text.splitlines():
        if not line.strip():
            break
        if line[:1] in (" ", "\t") and headers:
            k, v = headers[-1]
            headers[-1] = (k, v + " " + line.strip())
            continue
        key, sep, value = line.partition(":")
        if sep:
            headers.append((key.strip().lower(), value.strip()))
    name = next((v for k, v in headers if k == "name"), "")
    version = next((v for k, v in headers if k == "version"), "")
    if not name or not version:
        raise ValueError(f"{meta} has no Name/Version header")
    requires = [v for k, v in headers if k == "requires-dist"]
    if is_egg:
        requires.extend(_egg_requires(os.path.join(info_dir, "requires.txt")))
    return DistInfo(name=_norm(name), version=version, requires=requires, path=info_dir)


def _egg_requires(path: str) -> list[str]:
    """``requires.txt`` lines as ``Requires-Dist`` strings (``[extra]`` sections become markers)."""
    try:
        text = _read_text(path, _MAX_META_BYTES)
    except (OSError, ValueError):
        return []
    out: list[str] = []
    section = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1]
            continue
        if section:
            extra, _, marker = section.partition(":")
            conds = [f'extra == "{extra}"'] if extra else []
            if marker:
                conds.append(marker)
            out.append(f"{line}; {' and '.join(conds)}")
        else:
            out.append(line)
    return out


def module_constants(path: str) -> tuple[dict[str, Any], ast.Module]:
    """Top-level ``NAME = <literal>`` (and ``NAME: T = <literal>``) assignments of a Python file,
    read with :mod:`ast` (the file is never executed).

    Raises:
        OSError: unreadable file. SyntaxError / ValueError: not Python, or too large.
    """
    text = _read_text(path, _MAX_PY_BYTES)
    tree = ast.parse(text, filename=path)
    consts: dict[str, Any] = {}
    for node in tree.body:
        targets: list[ast.expr]
        if isinstance(node, ast.Assign):
            targets, value = list(node.targets), node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        try:
            literal = ast.literal_eval(value)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            continue
        for t in targets:
            if isinstance(t, ast.Name):
                consts[t.id] = literal
    return consts, tree


def _dict_from_call(value: ast.expr) -> dict[str, Any] | None:
    """``{...}``, ``dict(...)``, ``OrderedDict([...])`` or ``collections.OrderedDict([...])``."""
    try:
        if isinstance(value, ast.Dict):
            out = ast.literal_eval(value)
            return out if isinstance(out, dict) else None
        if isinstance(value, ast.Call):
            f = value.func
            fname = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            if fname not in ("OrderedDict", "dict"):
                return None
            out: dict[str, Any] = {}
            for arg in value.args[:1]:
                items = ast.literal_eval(arg)
                out.update(dict(items))
            for kw in value.keywords:
                if kw.arg is not None:
                    out[kw.arg] = ast.literal_eval(kw.value)
            return out
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    return None


def read_tf_build_info(path: str) -> dict[str, Any]:
    """Read TensorFlow's ``python/platform/build_info.py`` without importing it.

    Handles the three shapes TensorFlow's ``gen_build_info.py`` has written:

    * TF 2.4 and later: ``build_info = collections.OrderedDict([('cuda_version', '12.5.1'),
      ('cudnn_version', '9'), ('is_cuda_build', True), ...])``;
    * TF 2.3: ``build_info = {'cuda_version': '10.1', 'cudnn_version': '7', ...}``;
    * TF 1.x: module constants ``is_cuda_build = True``, ``cuda_version_number = '10.0'``,
      ``cudnn_version_number = '7'`` (Linux wheels often carry only ``is_cuda_build``).

    Returns the build-info dict with 1.x names mapped to the 2.x keys (``cuda_version``,
    ``cudnn_version``). Raises OSError, SyntaxError or ValueError when the file is unreadable,
    not Python, or holds none of these shapes.
    """
    consts, tree = module_constants(path)
    info: dict[str, Any] | None = None
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "build_info" for t in node.targets):
            info = _dict_from_call(node.value)
            if info is None:
                raise ValueError("build_info is not a literal dict/OrderedDict")
    if info is None:
        info = {}
        for key in ("is_cuda_build", "is_rocm_build", "is_tensorrt_build", "cuda_compute_capabilities"):
            if key in consts:
                info[key] = consts[key]
        if "cuda_version_number" in consts:
            info["cuda_version"] = consts["cuda_version_number"]
        if "cudnn_version_number" in consts:
            info["cudnn_version"] = consts["cudnn_version_number"]
        for key in ("cuda_version", "cudnn_version"):
            if key in consts and key not in info:
                info[key] = consts[key]
        if not info:
            raise ValueError("no build_info dict and no is_cuda_build/cuda_version_number constants")
    return info


def _pin_specs(req: str) -> list[tuple[str, str]]:
    """[(op, version)] of a requirement string: ``nvidia-cudnn-cu12<10.0,>=9.3.0.75; extra ==
    "and-cuda"`` -> [('<', '10.0'), ('>=', '9.3.0.75')]. Markers are dropped."""
    spec = req.split(";", 1)[0]
    spec = re.sub(r"^\s*[A-Za-z0-9][A-Za-z0-9._-]*\s*(\[[^\]]*\])?", "", spec)
    spec = spec.strip().strip("()")
    return re.findall(r"(===|==|~=|>=|<=|!=|>|<)\s*([0-9][0-9A-Za-z.*+!-]*)", spec)


_CUDNN_WHEEL = re.compile(r"^nvidia-cudnn(-jit)?(-cu\d+)?$")


def _is_cudnn_req(req: str) -> bool:
    """``nvidia-cudnn-cu12``, ``nvidia-cudnn-cu13``, ``nvidia-cudnn-jit-cu12`` (not the frontend)."""
    m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", req)
    return bool(m) and bool(_CUDNN_WHEEL.match(_norm(m.group(1))))


def _release(version: str) -> tuple[int, ...] | None:
    """PEP 440 release tuple (``'2.22.0.dev20260115'`` -> (2, 22, 0)), or None."""
    try:
        return Version(version).release
    except (InvalidVersion, TypeError):
        return None


def _cudnn_pins(dist: DistInfo | None) -> tuple[str, ...]:
    if dist is None:
        return ()
    return tuple(r for r in dist.requires if _is_cudnn_req(r))


def _pin_version(pins: Iterable[str], ops: tuple[str, ...]) -> tuple[CudnnVersion, str] | None:
    """First pin whose specifier uses one of ``ops``: (parsed version, the pin text)."""
    for pin in pins:
        for op, ver in _pin_specs(pin):
            if op in ops:
                v = try_parse(ver.rstrip(".*"))
                if v is not None:
                    return v, pin
    return None


def _v3(v: CudnnVersion) -> str:
    """``major.minor.patch`` (drops the wheel's build number: 9.10.2.21 -> 9.10.2)."""
    return ".".join(str(p) for p in (v.major, v.minor, v.patch) if p is not None)


def _pin_name(pin: str) -> str:
    return pin.split(";", 1)[0].strip()


# --------------------------------------------------------------------------------------------
# discovery
# --------------------------------------------------------------------------------------------


class _Finder:
    """Finds packages and their ``*.dist-info`` on ``paths`` (or ``sys.path``), with
    per-call caches of directory listings."""

    def __init__(self, paths: list[str] | None) -> None:
        self.paths = paths
        self._listings: dict[str, list[str]] = {}

    def search_dirs(self) -> list[str]:
        entries = self.paths if self.paths is not None else sys.path
        return [os.path.abspath(p or os.curdir) for p in entries if isinstance(p, str)]

    def package_dirs(self, name: str) -> list[str]:
        """Directories of top-level package ``name`` (several for a namespace package), in the
        order the import system would search; never imports it (top-level ``find_spec`` does
        not execute the package, FACTS.md / lab notes §2)."""
        spec = None
        if self.paths is None:
            mod = sys.modules.get(name)
            locs = getattr(mod, "__path__", None) if mod is not None else None
            if locs:
                return [str(p) for p in locs]
            try:
                spec = importlib.util.find_spec(name)
            except (ImportError, ValueError, AttributeError):
                spec = None
        if spec is None:
            spec = importlib.machinery.PathFinder.find_spec(name, self.search_dirs())
        if spec is None:
            return []
        locs = spec.submodule_search_locations
        if locs:
            return [str(p) for p in locs]
        return []

    def listdir(self, d: str) -> list[str]:
        if d not in self._listings:
            try:
                self._listings[d] = os.listdir(d)
            except OSError:
                self._listings[d] = []
        return self._listings[d]

    def dists(self, names: Iterable[str], near: str | None = None) -> list[DistInfo]:
        """Metadata of the installed distributions among ``names`` (normalised), looked up first
        in the directory that holds ``near`` (the package's site dir), then on the search path.
        Order follows ``names``."""
        wanted = [_norm(n) for n in names]
        dirs: list[str] = []
        if near:
            dirs.append(os.path.dirname(os.path.abspath(near)))
        dirs += [d for d in self.search_dirs() if d not in dirs]
        found: dict[str, DistInfo] = {}
        for d in dirs:
            for entry in self.listdir(d):
                if not (entry.endswith(".dist-info") or entry.endswith(".egg-info")):
                    continue
                base = entry.rsplit(".", 1)[0]
                dname = _norm(base.split("-", 1)[0])
                if dname in wanted and dname not in found:
                    try:
                        found[dname] = read_dist_metadata(os.path.join(d, entry))
                    except (OSError, ValueError):
                        continue
            if found and near:
                break  # the dist-info beside the package is the one that installed it
        return [found[n] for n in wanted if n in found]


def _imported_module(name: str, pkg_dir: str | None) -> Any | None:
    """``sys.modules[name]`` when it is the package found at ``pkg_dir`` (same directory)."""
    mod = sys.modules.get(name)
    if mod is None:
        return None
    if pkg_dir is None:
        return mod
    locs = list(getattr(mod, "__path__", None) or [])
    f = getattr(mod, "__file__", None)
    if f:
        locs.append(os.path.dirname(f))
    try:
        want = os.path.realpath(pkg_dir)
        return mod if any(os.path.realpath(str(p)) == want for p in locs) else None
    except (OSError, ValueError):
        return None


def _import(name: str, pkg_dir: str | None, notes: list[str], label: str) -> Any | None:
    """Import ``name`` on request (``import_frameworks=True``); a failure becomes a note."""
    try:
        mod = importlib.import_module(name)
    except BaseException as exc:  # noqa: BLE001 - frameworks raise anything, even SystemExit
        if isinstance(exc, KeyboardInterrupt):
            raise
        notes.append(f"{label}: import {name} failed: {type(exc).__name__}: {exc}")
        return None
    if pkg_dir is not None and _imported_module(name, pkg_dir) is None:
        notes.append(f"{label}: import {name} loaded {getattr(mod, '__file__', '?')}, not the copy in {pkg_dir}")
        return None
    return mod


def _first_existing(base: str, rels: Iterable[str]) -> str | None:
    for rel in rels:
        p = os.path.join(base, rel)
        if os.path.exists(p):
            return os.path.abspath(p)
    return None


def _extension_path(pkg_dir: str, stem: str) -> str | None:
    """``<pkg_dir>/<stem><suffix>`` for this interpreter's extension suffixes."""
    for suf in importlib.machinery.EXTENSION_SUFFIXES:
        p = os.path.join(pkg_dir, stem + suf)
        if os.path.isfile(p):
            return p
    return None


def _load_extension(fullname: str, path: str) -> Any:
    """Load one extension module from ``path`` without importing its parent package (so no
    ``__init__.py`` runs) and without registering it in ``sys.modules``."""
    mod = sys.modules.get(fullname)
    if mod is not None:
        return mod
    loader = importlib.machinery.ExtensionFileLoader(fullname, path)
    spec = importlib.util.spec_from_file_location(fullname, path, loader=loader)
    if spec is None:
        raise ImportError(f"no spec for {path}")
    try:
        mod = importlib.util.module_from_spec(spec)
        loader.exec_module(mod)
    finally:
        # CPython files single-phase-init extensions in sys.modules by itself; take it out again
        # so a later real import goes through the package as usual.
        sys.modules.pop(fullname, None)
    return mod


def _call(fn: Callable[[], Any]) -> tuple[Any, str | None]:
    try:
        return fn(), None
    except Exception as exc:  # noqa: BLE001 - framework calls raise anything
        return None, f"{type(exc).__name__}: {exc}"


def _soname(v: CudnnVersion | None) -> str | None:
    return f"libcudnn.so.{v.major}" if v is not None else None


def _leftover(pkg: str, dist: DistInfo | None, label: str, notes: list[str]) -> bool:
    """True for a directory pip left behind after an uninstall (no ``__init__.py``, no
    ``*.dist-info``): it is noted, not reported as an installed framework."""
    if dist is not None or os.path.exists(os.path.join(pkg, "__init__.py")):
        return False
    notes.append(f"{label}: {pkg} has no __init__.py and no *.dist-info (left over from an uninstall?); ignored")
    return True


# --------------------------------------------------------------------------------------------
# TensorFlow
# --------------------------------------------------------------------------------------------

_TF_DISTS = (
    "tensorflow", "tensorflow-gpu", "tf-nightly", "tf-nightly-gpu", "tensorflow-cpu", "tf-nightly-cpu",
    "tensorflow-intel", "intel-tensorflow", "tensorflow-cpu-aws", "tensorflow-aarch64", "tensorflow-rocm",
    "tensorflow-macos",
)
# Which TF library calls dlopen("libcudnn.so.N"): tsl's dso_loader (tsl/platform/default/
# dso_loader.cc) is linked into libtensorflow_framework.so.2 (seen in the tensorflow-cpu 2.21.0
# wheel: its "dso_loader" strings are there, none in python/_pywrap_tensorflow_internal.so or
# libtensorflow_cc.so.2), and dlopen searches the RUNPATH of the calling object, which in CUDA
# wheels holds $ORIGIN/../nvidia/cudnn/lib. Fallbacks for other layouts follow.
_TF_CONSUMERS = (
    "libtensorflow_framework.so.2", "libtensorflow_framework.so.1", "libtensorflow_framework.so",
    "python/_pywrap_tensorflow_internal.so", "libtensorflow_cc.so.2",
)


def _tf_build_value(raw: Any) -> tuple[str, bool] | None:
    """A build_info value as text, without the ``64_`` prefix of Windows builds (and whether it
    had one); None when absent."""
    if raw is None or raw == "":
        return None
    s = str(raw).strip()
    m = re.fullmatch(r"64_(\d+)", s)
    return (m.group(1), True) if m else (s, False)


def _tf_cuda(raw: Any) -> str | None:
    """``'12.5.1'`` as is; Windows builds write ``'64_112'`` (-> ``'11.2'``)."""
    v = _tf_build_value(raw)
    if v is None:
        return None
    d, win = v
    return (f"{d[:-1]}.{d[-1]}" if len(d) >= 3 else d) if win else d


def _tf_cudnn(raw: Any) -> CudnnVersion | None:
    """``'9'``, ``'8'``, ``'64_8'`` (Windows), ``'8.1'`` -> CudnnVersion."""
    v = _tf_build_value(raw)
    if v is None:
        return None
    s = v[0]
    if s.isdigit() and len(s) <= 2:
        return CudnnVersion(int(s))
    return try_parse(s)


def _probe_tensorflow(f: _Finder, import_frameworks: bool, notes: list[str]) -> list[FrameworkBuild]:
    dirs = f.package_dirs("tensorflow")
    pkg = next((d for d in dirs if os.path.isdir(os.path.join(d, "python"))), dirs[0] if dirs else None)
    if pkg is None:
        return []
    dists = f.dists(_TF_DISTS, near=pkg)
    dist = dists[0] if dists else None
    if _leftover(pkg, dist, "TensorFlow", notes):
        return []
    if len(dists) > 1:
        notes.append(
            "TensorFlow: several distributions install tensorflow/ ("
            + ", ".join(f"{d.name} {d.version}" for d in dists)
            + "); the files on disk are from whichever was installed last"
        )
    version = dist.version if dist else "unknown"
    if dist is None:
        notes.append(f"TensorFlow: no *.dist-info found for {pkg}; version unknown")
    pins = _cudnn_pins(dist)
    mod = _imported_module("tensorflow", pkg)
    if mod is None and import_frameworks:
        mod = _import("tensorflow", pkg, notes, "TensorFlow")
    kw: dict[str, Any] = dict(
        name="TensorFlow", distribution=dist.name if dist else "tensorflow", version=version,
        imported=mod is not None, pins=pins, checker=checker_for_tensorflow(version if dist else None),
    )
    bi_path = os.path.join(pkg, "python", "platform", "build_info.py")
    try:
        info = read_tf_build_info(bi_path)
    except FileNotFoundError:
        notes.append(f"TensorFlow: {bi_path} is missing; compiled-against cuDNN unknown")
        return [FrameworkBuild(**kw)]
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        notes.append(f"TensorFlow: could not read {bi_path}: {type(exc).__name__}: {exc}")
        return [FrameworkBuild(**kw)]
    caps = info.get("cuda_compute_capabilities") or ()
    if isinstance(caps, (list, tuple)):
        kw["cuda_compute_capabilities"] = tuple(str(c) for c in caps)
    if info.get("is_rocm_build") is True:
        kw["cudnn_compiled_source"] = "build_info.py: is_rocm_build True (ROCm build: MIOpen, no cuDNN)"
        return [FrameworkBuild(**kw)]
    raw_cudnn = info.get("cudnn_version")
    is_cuda = info.get("is_cuda_build")
    if is_cuda is False or (is_cuda is None and raw_cudnn is None and "cuda_version" not in info):
        kw["cudnn_compiled_source"] = "build_info.py: is_cuda_build False (CPU-only build, no cuDNN)"
        return [FrameworkBuild(**kw)]
    kw["cuda_compiled"] = _tf_cuda(info.get("cuda_version"))
    kw["consumer_library"] = _first_existing(pkg, _TF_CONSUMERS)
    build_v = _tf_cudnn(raw_cudnn)
    tested = tf_tested_build(version) if dist else None
    tested_v = try_parse(tested[0]) if tested else None
    pin = _pin_version(pins, (">=", "==", "~=", "==="))
    compiled: CudnnVersion | None = None
    where = f"build_info.py cudnn_version {raw_cudnn!r}"
    if build_v is None:
        if raw_cudnn not in (None, ""):
            notes.append(f"TensorFlow: build_info.py cudnn_version {raw_cudnn!r} is not a cuDNN version")
        if tested_v is not None:
            compiled = tested_v
            source = (
                f"TensorFlow tested build table (cuDNN {tested[0]}, CUDA {tested[1]} for TF {version}); "
                "build_info.py gives no cuDNN version"
            )
            kw["cuda_compiled"] = kw["cuda_compiled"] or tested[1]
        else:
            source = "build_info.py says a CUDA build but gives no cuDNN version"
    elif build_v.minor is not None:
        compiled, source = build_v, where
    elif tested_v is not None and tested_v.major == build_v.major:
        compiled = tested_v
        source = f"{where} + TensorFlow tested build table (cuDNN {tested[0]}, CUDA {tested[1]} for TF {version})"
    elif pin is not None and pin[0].major == build_v.major:
        compiled = CudnnVersion(pin[0].major, pin[0].minor)
        source = f"{where} + tensorflow[and-cuda] pin {_pin_name(pin[1])} (lower bound)"
    else:
        compiled = build_v
        source = f"{where} (major only)"
    kw["cudnn_compiled"] = str(compiled) if compiled is not None else None
    kw["cudnn_compiled_source"] = source
    kw["cudnn_soname"] = _soname(compiled)
    return [FrameworkBuild(**kw)]


# --------------------------------------------------------------------------------------------
# PyTorch
# --------------------------------------------------------------------------------------------

_TORCH_CONSUMERS = ("lib/libtorch_cuda.so", "lib/libtorch_cuda_cpp.so", "lib/libtorch_cuda_cu.so", "lib/libtorch.so")
_BUNDLED = re.compile(r"^libcudnn(?:-[0-9a-f]{8})?\.so\.(\d+(?:\.\d+){0,3})$")


def _bundled_cudnn(pkg: str) -> tuple[CudnnVersion, str] | None:
    """A ``libcudnn.so.N[.x.y]`` shipped inside ``torch/lib`` (wheels before torch 1.13 bundled
    it; auditwheel names look like ``libcudnn-<hash>.so.8.0.5``): (version, file name)."""
    lib = os.path.join(pkg, "lib")
    try:
        names = sorted(os.listdir(lib), key=len, reverse=True)
    except OSError:
        return None
    for n in names:
        m = _BUNDLED.match(n)
        if m:
            v = try_parse(m.group(1)) if "." in m.group(1) else CudnnVersion(int(m.group(1)))
            if v is not None:
                return v, n
    return None


def _probe_torch(f: _Finder, import_frameworks: bool, notes: list[str]) -> list[FrameworkBuild]:
    dirs = f.package_dirs("torch")
    if not dirs:
        return []
    pkg = dirs[0]
    dists = f.dists(("torch", "pytorch", "torch-nightly"), near=pkg)
    dist = dists[0] if dists else None
    if _leftover(pkg, dist, "PyTorch", notes):
        return []
    consts: dict[str, Any] = {}
    vpath = os.path.join(pkg, "version.py")
    try:
        consts, _ = module_constants(vpath)
    except FileNotFoundError:
        notes.append(f"PyTorch: {vpath} is missing")
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        notes.append(f"PyTorch: could not read {vpath}: {type(exc).__name__}: {exc}")
    version = dist.version if dist else str(consts.get("__version__") or "unknown")
    pins = _cudnn_pins(dist)
    mod = _imported_module("torch", pkg)
    if mod is None and import_frameworks:
        mod = _import("torch", pkg, notes, "PyTorch")
    kw: dict[str, Any] = dict(
        name="PyTorch", distribution=dist.name if dist else "torch", version=version,
        imported=mod is not None, pins=pins, checker="pytorch",
    )
    cuda = consts.get("cuda")
    hip = consts.get("hip")
    kw["cuda_compiled"] = str(cuda) if cuda else None
    compiled: CudnnVersion | None = None
    source: str | None = None
    pin = _pin_version(pins, ("==", "==="))
    bundled = _bundled_cudnn(pkg)
    if pin is not None:
        compiled, source = pin[0], f"wheel pin {_pin_name(pin[1])} (torch METADATA)"
    elif bundled is not None:
        compiled, source = bundled[0], f"cuDNN bundled in torch/lib ({bundled[1]})"
    if mod is not None:
        rt, err = _call(lambda: importlib.import_module("torch.backends.cudnn").version())
        if err:
            notes.append(f"PyTorch: torch.backends.cudnn.version() failed: {err}")
        elif rt is not None:
            v = try_parse(rt)
            kw["cudnn_runtime"] = str(v) if v else str(rt)
        cc = getattr(getattr(mod, "_C", None), "_cudnn", None)
        if cc is not None and hasattr(cc, "getCompileVersion"):
            got, err = _call(cc.getCompileVersion)
            v = try_parse(tuple(got)) if isinstance(got, (tuple, list)) else try_parse(got) if got is not None else None
            if err:
                notes.append(f"PyTorch: torch._C._cudnn.getCompileVersion() failed: {err}")
            elif v is not None:
                compiled, source = v, "torch._C._cudnn.getCompileVersion() (torch is imported)"
        if not kw["cuda_compiled"]:
            c = getattr(getattr(mod, "version", None), "cuda", None)
            kw["cuda_compiled"] = str(c) if c else None
            cuda = cuda or c
    if compiled is None:
        if hip:
            source = f"ROCm build (torch/version.py hip {hip!r}: MIOpen, no cuDNN)"
        elif not cuda and ("+cpu" in version or "cuda" in consts):
            source = "CPU-only build (torch/version.py cuda is None)"
        elif cuda:
            source = None
            notes.append(
                f"PyTorch {version}: CUDA {cuda} build without a cuDNN wheel pin or bundled copy "
                "(conda or source build, or cuDNN linked statically); import torch "
                "(--import-frameworks) for torch._C._cudnn.getCompileVersion()"
            )
    kw["cudnn_compiled"] = _v3(compiled) if compiled is not None else None
    kw["cudnn_compiled_source"] = source
    if compiled is not None or cuda:
        kw["cudnn_soname"] = _soname(compiled)
        kw["consumer_library"] = _first_existing(pkg, _TORCH_CONSUMERS[:3])
    return [FrameworkBuild(**kw)]


# --------------------------------------------------------------------------------------------
# JAX
# --------------------------------------------------------------------------------------------


def _decode_int_cudnn(value: Any) -> CudnnVersion | None:
    return try_parse(int(value)) if isinstance(value, int) and not isinstance(value, bool) else try_parse(value)


def _jax_versions_module(path: str, fullname: str) -> tuple[dict[str, Any], str | None]:
    """Load the plugin's ``_versions`` extension by path and read the build versions."""
    try:
        mod = _load_extension(fullname, path)
    except Exception as exc:  # noqa: BLE001 - ImportError, OSError, anything a loader raises
        return {}, f"loading {path} failed: {type(exc).__name__}: {exc}"
    out: dict[str, Any] = {}
    for fn in ("cudnn_build_version", "cuda_runtime_build_version"):
        if hasattr(mod, fn):
            val, err = _call(getattr(mod, fn))
            if err is None:
                out[fn] = val
    out["_module"] = mod
    return out, None


def _probe_jax(f: _Finder, import_frameworks: bool, notes: list[str]) -> list[FrameworkBuild]:
    builds: list[FrameworkBuild] = []
    jax_dirs = f.package_dirs("jax")
    jax_dist = (f.dists(("jax",), near=jax_dirs[0]) or [None])[0] if jax_dirs else None
    jax_mod = _imported_module("jax", jax_dirs[0]) if jax_dirs else None
    if jax_mod is None and import_frameworks and jax_dirs:
        jax_mod = _import("jax", jax_dirs[0], notes, "JAX")
    plugin_dirs = f.package_dirs("jax_plugins")
    for cu in ("13", "12"):
        pdirs = f.package_dirs(f"jax_cuda{cu}_plugin")
        if not pdirs:
            continue
        pdir = pdirs[0]
        pdist = (f.dists((f"jax-cuda{cu}-plugin",), near=pdir) or [None])[0]
        version = jax_dist.version if jax_dist else (pdist.version if pdist else "unknown")
        if jax_dist and pdist and jax_dist.version != pdist.version:
            notes.append(f"JAX: jax {jax_dist.version} with jax-cuda{cu}-plugin {pdist.version} (versions differ)")
        pins = _cudnn_pins(pdist)
        kw: dict[str, Any] = dict(
            name="JAX", distribution=pdist.name if pdist else f"jax-cuda{cu}-plugin", version=version,
            imported=jax_mod is not None, pins=pins, checker="jax",
        )
        fullname = f"jax_cuda{cu}_plugin._versions"
        vpath = _extension_path(pdir, "_versions")
        compiled: CudnnVersion | None = None
        source: str | None = None
        if vpath is None:
            notes.append(f"JAX: no _versions extension in {pdir}")
        else:
            got, err = _jax_versions_module(vpath, fullname)
            if err:
                notes.append(f"JAX: {err}")
            raw = got.get("cudnn_build_version")
            if raw is not None:
                compiled = _decode_int_cudnn(raw)
                source = f"{fullname}.cudnn_build_version() = {raw}"
            rt_cuda = got.get("cuda_runtime_build_version")
            if isinstance(rt_cuda, int) and rt_cuda > 0:
                kw["cuda_compiled"] = cuda_from_int(rt_cuda)
            mod = got.get("_module")
            if import_frameworks and mod is not None and hasattr(mod, "cudnn_get_version"):
                rt, err = _call(mod.cudnn_get_version)
                v = _decode_int_cudnn(rt) if rt is not None else None
                if v is not None:
                    kw["cudnn_runtime"] = str(v)
                elif err:
                    notes.append(f"JAX: {fullname}.cudnn_get_version() failed: {err}")
        if compiled is None:
            pin = _pin_version(pins, (">=", "==", "~="))
            if pin is not None:
                compiled = CudnnVersion(pin[0].major, pin[0].minor)
                source = f"plugin pin {_pin_name(pin[1])} (lower bound; JAX pins its build version)"
        kw["cudnn_compiled"] = str(compiled) if compiled is not None else None
        kw["cudnn_compiled_source"] = source
        kw["cudnn_soname"] = _soname(compiled)
        consumer = None
        for d in plugin_dirs:
            consumer = _first_existing(d, (f"xla_cuda{cu}/xla_cuda_plugin.so",))
            if consumer:
                break
        kw["consumer_library"] = consumer
        builds.append(FrameworkBuild(**kw))
    if not builds:
        builds.extend(_probe_old_jaxlib(f, import_frameworks, jax_dist, jax_mod, notes))
    return builds


def _probe_old_jaxlib(f: _Finder, import_frameworks: bool, jax_dist: DistInfo | None, jax_mod: Any,
                      notes: list[str]) -> list[FrameworkBuild]:
    """jaxlib wheels with CUDA inside (``0.4.28+cuda12.cudnn89``), before the plugin split."""
    dirs = f.package_dirs("jaxlib")
    if not dirs:
        return []
    pkg = dirs[0]
    dist = (f.dists(("jaxlib",), near=pkg) or [None])[0]
    cuda_dir = os.path.join(pkg, "cuda")
    tag = re.search(r"\+cuda(\d+)(?:\.cudnn(\d)(\d+))?", dist.version) if dist else None
    if not tag and not os.path.isdir(cuda_dir):
        return []  # CPU jaxlib: JAX has no CUDA plugin installed
    version = jax_dist.version if jax_dist else (dist.version if dist else "unknown")
    kw: dict[str, Any] = dict(
        name="JAX", distribution=dist.name if dist else "jaxlib", version=version,
        imported=jax_mod is not None, pins=_cudnn_pins(dist), checker="jax",
    )
    compiled: CudnnVersion | None = None
    source: str | None = None
    if tag:
        cu = tag.group(1)
        kw["cuda_compiled"] = f"{cu[:-1]}.{cu[-1]}" if len(cu) >= 3 else cu
        if tag.group(2):
            compiled = CudnnVersion(int(tag.group(2)), int(tag.group(3)))
            source = f"jaxlib local version tag {dist.version!r}"
    vpath = _extension_path(cuda_dir, "_versions") if os.path.isdir(cuda_dir) else None
    if vpath and (import_frameworks or "jaxlib" in sys.modules):
        got, err = _jax_versions_module(vpath, "jaxlib.cuda._versions")
        if err:
            notes.append(f"JAX: {err}")
        raw = got.get("cudnn_build_version")
        v = _decode_int_cudnn(raw) if raw is not None else None
        if v is not None:
            compiled, source = v, f"jaxlib.cuda._versions.cudnn_build_version() = {raw}"
    kw["cudnn_compiled"] = str(compiled) if compiled is not None else None
    kw["cudnn_compiled_source"] = source
    kw["cudnn_soname"] = _soname(compiled)
    kw["consumer_library"] = _first_existing(pkg, ("xla_extension.so",))
    return [FrameworkBuild(**kw)]


# --------------------------------------------------------------------------------------------
# CuPy
# --------------------------------------------------------------------------------------------

_CUPY_DIST = re.compile(r"^cupy(-cuda\d+x?|-rocm-[\d-]+)?$")


def _probe_cupy(f: _Finder, import_frameworks: bool, notes: list[str]) -> list[FrameworkBuild]:
    dirs = f.package_dirs("cupy")
    if not dirs:
        return []
    pkg = dirs[0]
    site = os.path.dirname(os.path.abspath(pkg))
    names = [
        _norm(e.rsplit(".", 1)[0].split("-", 1)[0])
        for e in f.listdir(site) if e.endswith((".dist-info", ".egg-info"))
    ]
    cands = [n for n in names if _CUPY_DIST.match(n)] or ["cupy"]
    dists = f.dists(cands, near=pkg)
    dist = dists[0] if dists else None
    if _leftover(pkg, dist, "CuPy", notes):
        return []
    if len(dists) > 1:
        notes.append("CuPy: several distributions install cupy/ (" + ", ".join(f"{d.name} {d.version}" for d in dists) + ")")
    version = dist.version if dist else "unknown"
    if dist is None:
        try:
            version = str(module_constants(os.path.join(pkg, "_version.py"))[0].get("__version__") or "unknown")
        except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
            pass
    mod = _imported_module("cupy", pkg)
    kw: dict[str, Any] = dict(
        name="CuPy", distribution=dist.name if dist else "cupy", version=version,
        imported=mod is not None, pins=_cudnn_pins(dist), checker="cupy",
    )
    if dist is not None and "rocm" in dist.name:
        kw["cudnn_compiled_source"] = "ROCm build of CuPy (no cuDNN)"
        return [FrameworkBuild(**kw)]
    wheel: dict[str, Any] = {}
    wpath = os.path.join(pkg, ".data", "_wheel.json")
    if os.path.exists(wpath):
        try:
            loaded = json.loads(_read_text(wpath, _MAX_META_BYTES))
            wheel = loaded if isinstance(loaded, dict) else {}
        except (OSError, ValueError) as exc:
            notes.append(f"CuPy: could not read {wpath}: {exc}")
    cuda = wheel.get("cuda")
    if not cuda and dist is not None:
        m = re.match(r"cupy-cuda(\d+)(x?)$", dist.name.lower())
        if m:
            d = m.group(1)
            cuda = f"{d}.x" if m.group(2) else (f"{d[:-1]}.{d[-1]}" if len(d) >= 3 else d)
    kw["cuda_compiled"] = str(cuda) if cuda else None
    rel = _release(version)
    cupy_major = rel[0] if rel else None
    cudnn_lib = _first_cudnn_module(pkg, f)
    if (cupy_major is not None and cupy_major >= 14) or (cupy_major is None and cudnn_lib is None):
        kw["cudnn_compiled_source"] = (
            f"CuPy {version} has no cuDNN support (removed in CuPy 14, docs/source/upgrade.rst)"
            if cupy_major is not None else "no cupy_backends/cuda/libs/cudnn module (no cuDNN support)"
        )
        return [FrameworkBuild(**kw)]
    kw["consumer_library"] = cudnn_lib
    compiled: CudnnVersion | None = None
    source: str | None = None
    wc = wheel.get("cudnn")
    if isinstance(wc, dict) and wc.get("version"):
        compiled = try_parse(str(wc["version"]))
        source = f"cupy/.data/_wheel.json cudnn version {wc['version']!r} (the cuDNN the wheel was built for)"
    if compiled is None:
        pin = _pin_version(kw["pins"], ("==", ">=", "~="))
        if pin is not None:
            compiled, source = pin[0], f"pin {_pin_name(pin[1])}"
    if cupy_major is not None and cupy_major >= 11 and cudnn_lib is not None:
        kw["cudnn_soname"] = "libcudnn.so.8"  # CuPy 11-13 cudnn module NEEDs libcudnn.so.8 (lab notes §5)
    cudnn_mod = sys.modules.get("cupy_backends.cuda.libs.cudnn")
    if cudnn_mod is None and import_frameworks:
        try:
            importlib.import_module("cupy")
            cudnn_mod = importlib.import_module("cupy_backends.cuda.libs.cudnn")
            kw["imported"] = True
        except Exception as exc:  # noqa: BLE001
            notes.append(f"CuPy: import cupy_backends.cuda.libs.cudnn failed: {type(exc).__name__}: {exc}")
    if cudnn_mod is not None:
        bv, err = _call(cudnn_mod.get_build_version) if hasattr(cudnn_mod, "get_build_version") else (None, None)
        v = _decode_int_cudnn(bv) if bv is not None else None
        if v is not None:
            compiled, source = v, f"cupy_backends.cuda.libs.cudnn.get_build_version() = {bv}"
        elif err:
            notes.append(f"CuPy: get_build_version() failed: {err}")
        rv, err = _call(cudnn_mod.getVersion) if hasattr(cudnn_mod, "getVersion") else (None, None)
        v = _decode_int_cudnn(rv) if rv is not None else None
        if v is not None:
            kw["cudnn_runtime"] = str(v)
        elif err:
            notes.append(f"CuPy: cudnn.getVersion() failed: {err}")
    if compiled is not None:
        kw["cudnn_soname"] = _soname(compiled)
    kw["cudnn_compiled"] = str(compiled) if compiled is not None else None
    kw["cudnn_compiled_source"] = source
    if compiled is None:
        notes.append(f"CuPy {version}: compiled-against cuDNN unknown without importing its cudnn module "
                     "(that would load libcudnn; use --import-frameworks)")
    return [FrameworkBuild(**kw)]


def _first_cudnn_module(pkg: str, f: _Finder) -> str | None:
    """``cupy_backends/cuda/libs/cudnn*.so`` (CuPy 13 and older), next to ``cupy/``."""
    libs = os.path.join(os.path.dirname(os.path.abspath(pkg)), "cupy_backends", "cuda", "libs")
    for n in sorted(f.listdir(libs)):
        if n.startswith("cudnn") and (n.endswith(".so") or ".so." in n or n.endswith(".pyd")):
            return os.path.join(libs, n)
    return None


# --------------------------------------------------------------------------------------------
# ONNX Runtime
# --------------------------------------------------------------------------------------------

_ORT_DISTS = (
    "onnxruntime-gpu", "ort-nightly-gpu", "onnxruntime-training", "onnxruntime", "ort-nightly",
    "onnxruntime-directml", "onnxruntime-openvino", "onnxruntime-rocm", "onnxruntime-qnn",
)
_ORT_TABLE = "ONNX Runtime CUDA EP requirements (onnxruntime.ai/docs/execution-providers/CUDA-ExecutionProvider.html)"


def _ort_cudnn_major(version: str, cuda: str | None) -> tuple[int | None, str]:
    """cuDNN major an onnxruntime-gpu release was built with, by the CUDA EP requirements table."""
    r = _release(version)
    if r is None or len(r) < 2:
        return None, f"ONNX Runtime version {version!r} not understood"
    rel = (r[0], r[1], r[2] if len(r) > 2 else 0)
    cv = try_parse(cuda) if cuda else None
    cuda_major = cv.major if cv is not None else None
    if rel >= (1, 19, 0):
        return 9, f"{_ORT_TABLE}: 1.19 and later are built with cuDNN 9"
    if rel[:2] == (1, 18) and rel >= (1, 18, 1):
        if cuda_major == 12:
            return 9, f"{_ORT_TABLE}: 1.18.1 CUDA 12 packages are built with cuDNN 9"
        if cuda_major == 11:
            return 8, f"{_ORT_TABLE}: 1.18.1 CUDA 11.8 packages are built with cuDNN 8"
        return None, (f"{_ORT_TABLE}: 1.18.1 shipped CUDA 11.8 + cuDNN 8 and CUDA 12 + cuDNN 9 packages, "
                      "and this one does not say its CUDA version")
    if rel >= (1, 5, 0):
        return 8, f"{_ORT_TABLE}: 1.5 to 1.18.0 are built with cuDNN 8"
    return 7, f"{_ORT_TABLE}: 1.0 to 1.4 are built with cuDNN 7.6"


def _probe_onnxruntime(f: _Finder, import_frameworks: bool, notes: list[str]) -> list[FrameworkBuild]:
    dirs = f.package_dirs("onnxruntime")
    if not dirs:
        return []
    pkg = dirs[0]
    dists = f.dists(_ORT_DISTS, near=pkg)
    consts: dict[str, Any] = {}
    bpath = os.path.join(pkg, "capi", "build_and_package_info.py")
    if os.path.exists(bpath):
        try:
            consts, _ = module_constants(bpath)
        except (OSError, SyntaxError, ValueError, RecursionError, MemoryError) as exc:
            notes.append(f"ONNX Runtime: could not read {bpath}: {type(exc).__name__}: {exc}")
    pkg_name = consts.get("package_name")
    if _leftover(pkg, dists[0] if dists else None, "ONNX Runtime", notes):
        return []
    dist = next((d for d in dists if pkg_name and _norm(d.name) == _norm(str(pkg_name))), dists[0] if dists else None)
    if len(dists) > 1:
        notes.append(
            "ONNX Runtime: several distributions install onnxruntime/ ("
            + ", ".join(f"{d.name} {d.version}" for d in dists)
            + (f"); the files on disk are from {pkg_name}" if pkg_name else "); the files on disk are from the last installed")
        )
    version = dist.version if dist else str(consts.get("__version__") or "unknown")
    mod = _imported_module("onnxruntime", pkg)
    if mod is None and import_frameworks:
        mod = _import("onnxruntime", pkg, notes, "ONNX Runtime")
    kw: dict[str, Any] = dict(
        name="ONNX Runtime", distribution=dist.name if dist else str(pkg_name or "onnxruntime"), version=version,
        imported=mod is not None, pins=_cudnn_pins(dist), checker="onnxruntime",
    )
    provider = _first_existing(pkg, ("capi/libonnxruntime_providers_cuda.so",))
    cuda = consts.get("cuda_version")
    if provider is None and not cuda:
        kw["cudnn_compiled_source"] = "no CUDA execution provider (capi/libonnxruntime_providers_cuda.so) in this package"
        return [FrameworkBuild(**kw)]
    kw["consumer_library"] = provider
    kw["cuda_compiled"] = str(cuda) if cuda else None
    compiled: CudnnVersion | None = None
    raw = consts.get("cudnn_version")
    if raw:
        compiled = try_parse(str(raw))
        source = f"capi/build_and_package_info.py cudnn_version {raw!r}"
    if compiled is None:
        major, source = _ort_cudnn_major(version, str(cuda) if cuda else None)
        compiled = CudnnVersion(major) if major is not None else None
        if compiled is None:
            notes.append(f"ONNX Runtime {version}: {source}")
            source = None
    kw["cudnn_compiled"] = str(compiled) if compiled is not None else None
    kw["cudnn_compiled_source"] = source
    kw["cudnn_soname"] = _soname(compiled)
    return [FrameworkBuild(**kw)]


# --------------------------------------------------------------------------------------------
# entry point
# --------------------------------------------------------------------------------------------

_PROBES: tuple[tuple[str, Callable[[_Finder, bool, list[str]], list[FrameworkBuild]]], ...] = (
    ("TensorFlow", _probe_tensorflow),
    ("PyTorch", _probe_torch),
    ("JAX", _probe_jax),
    ("CuPy", _probe_cupy),
    ("ONNX Runtime", _probe_onnxruntime),
)


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
