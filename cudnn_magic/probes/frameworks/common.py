"""What every framework probe shares: small pure readers of package metadata and source files
(:func:`read_dist_metadata`, :func:`module_constants`, :func:`read_tf_build_info`), cuDNN pins,
and discovery (:class:`_Finder`: installed distributions and packages on ``sys.path``, without
importing them; importing one only when asked). The probes themselves: one module per framework
in this package; the entry point is :func:`cudnn_magic.probes.frameworks.probe_frameworks`."""

from __future__ import annotations

import ast
import importlib
import importlib.machinery
import importlib.util
import os
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Callable

from packaging.version import InvalidVersion, Version

from ...rules.cudnn_version import CudnnVersion, try_parse
from ...util import pyenv
from ...util.files import read_regular_whole

__all__ = ["DistInfo", "module_constants", "read_dist_metadata", "read_tf_build_info"]

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
    """The regular file ``path`` (at most ``limit`` bytes) as text. Raises OSError (a FIFO or a
    device: :class:`~cudnn_magic.util.files.NotRegularFile`) or ValueError (larger than ``limit``)."""
    return read_regular_whole(path, limit).decode("utf-8", errors="replace")


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
            literal = ast.literal_eval(value)
            return literal if isinstance(literal, dict) else None
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
    return m is not None and bool(_CUDNN_WHEEL.match(_norm(m.group(1))))


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
        entries = self.paths if self.paths is not None else pyenv.search_path()
        return [os.path.abspath(os.fspath(p) or os.curdir) for p in entries if isinstance(p, (str, os.PathLike))]

    def package_dirs(self, name: str) -> list[str]:
        """Directories of top-level package ``name`` (several for a namespace package), in the
        order the import system would search; never imports it (top-level ``find_spec`` does
        not execute the package, docs/facts.md "Where each framework's compiled-against versions come from")."""
        spec = None
        asked = False  # the import system answered (None: nothing on sys.meta_path finds it)
        if self.paths is None and pyenv.target() is None:  # another process's modules are not ours
            mod = pyenv.imported(name)
            locs = getattr(mod, "__path__", None) if mod is not None else None
            if locs:
                return [str(p) for p in locs]
            try:
                spec = importlib.util.find_spec(name)
                asked = True
            except (ImportError, ValueError, AttributeError):
                spec = None
        if spec is None and not asked:
            # sys.meta_path's own PathFinder already searched sys.path when the import system
            # answered None: the same search again (the same cached finders) would only repeat it
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
                if not (entry.endswith((".dist-info", ".egg-info"))):
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
    mod = pyenv.imported(name)
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
    except BaseException as exc:  # frameworks raise anything, even SystemExit
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


def _decode_int_cudnn(value: Any) -> CudnnVersion | None:
    return try_parse(int(value)) if isinstance(value, int) and not isinstance(value, bool) else try_parse(value)
