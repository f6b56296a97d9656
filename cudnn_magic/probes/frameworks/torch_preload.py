"""What PyTorch's own Python code loads of cuDNN before its native library asks for it, read from
the installed ``torch/__init__.py`` (parsed with :mod:`ast`, never executed).

torch 2.x's ``_load_global_deps()`` loads ``torch/lib/libtorch_global_deps.so`` and, on Linux, calls
``_preload_cuda_deps(...)``, which walks ``sys.path`` in order and ``ctypes.CDLL``s the first file
``glob`` finds for each CUDA library of its table (``("cudnn", "libcudnn.so.*[0-9]")``) under
``nvidia/cudnn/lib/``, ``nvidia/cu<CUDA major>/lib/`` and ``cudnn/lib/`` of that entry. When it does
so differs between releases:

* torch 2.14 (and the releases since the call moved into the ``try`` body): after
  ``libtorch_global_deps.so`` loaded, whenever ``libcudart.so`` is in ``/proc/self/maps`` (a CUDA
  build: that library NEEDs cudart), before ``libtorch_cuda.so``'s ``DT_NEEDED`` lookups run;
* older 2.x: only in the ``except OSError`` handler, when ``libtorch_global_deps.so`` could not be
  loaded (its RPATH found no cudart).

The file loaded that way keeps its SONAME, so ``libtorch_cuda.so``'s ``DT_NEEDED libcudnn.so.9`` is
answered by it (glibc reuses a loaded object whose SONAME matches), whatever the RPATH
``$ORIGIN/../../nvidia/cudnn/lib`` says: the ``sys.path`` order (a ``pip install --target`` folder on
``PYTHONPATH``, a ``.pth`` entry, a user site) decides which main cuDNN torch gets. Only the main
library is preloaded; its sub-libraries are still opened by soname from the shim (its RPATH
``$ORIGIN`` first). Sources: the installed ``torch/__init__.py`` (read here), FACTS.md "Loaders
beyond glibc", PyTorch issues 188892 and 185512.

When the file cannot be read (or parsed into a rule), :data:`KNOWN_RULES` gives the behaviour by
release, each with the file it was read from (``tests/fixtures/torch_init/``).
"""

from __future__ import annotations

import ast
import glob
import os
from dataclasses import dataclass
from typing import Iterable

from packaging.version import InvalidVersion, Version

from ...model import Preload

__all__ = ["TorchPreloadRule", "read_preload_rule", "rule_for_version", "torch_preload", "KNOWN_RULES"]

_MAX_INIT_BYTES = 2 << 20


@dataclass(frozen=True)
class TorchPreloadRule:
    """How one torch release preloads cuDNN.

    Attributes:
        when: ``"always"`` (after ``libtorch_global_deps.so`` loads, when ``libcudart.so`` is
            mapped: every CUDA build), ``"on-error"`` (only when ``libtorch_global_deps.so`` fails
            to load), or ``"never"`` (the release has no cuDNN entry in its preload table).
        patterns: glob patterns below each ``sys.path`` entry, in the order torch tries them;
            ``{cuda_major}`` stands for ``torch.version.cuda``'s major (``nvidia/cu13/lib``).
        source: where this was read ("torch/__init__.py of the installed torch 2.14.1: ...").
    """

    when: str
    patterns: tuple[str, ...]
    source: str

    def candidates(self, sys_path: Iterable[str], cuda_major: str | None) -> list[tuple[str, str]]:
        """(file, sys.path entry) torch would take, in its order: per entry, its patterns'
        ``glob`` hits (``glob`` order, unsorted, as torch takes them); the first one wins."""
        out: list[tuple[str, str]] = []
        for entry in sys_path:
            if not isinstance(entry, str):
                continue
            hits: list[str] = []
            for pat in self.patterns:
                if "{cuda_major}" in pat:
                    if not cuda_major:
                        continue
                    pat = pat.replace("{cuda_major}", cuda_major)
                hits += glob.glob(os.path.join(entry, pat))
            out += [(h, entry) for h in hits]
        return out


#: The behaviour by release where the installed file cannot be read, read from each release's
#: ``torch/__init__.py`` (the files are in ``tests/fixtures/torch_init/``; the test that holds this
#: table parses them with :func:`read_preload_rule`). (first version, rule), newest first.
KNOWN_RULES: tuple[tuple[str, TorchPreloadRule], ...] = (
    ("2.14.0", TorchPreloadRule("always", ("nvidia/cudnn/lib/libcudnn.so.*[0-9]", "nvidia/cu{cuda_major}/lib/libcudnn.so.*[0-9]",
                                            "cudnn/lib/libcudnn.so.*[0-9]"),
                                "torch 2.14 torch/__init__.py (_load_global_deps calls _preload_cuda_deps(required=False) "
                                "when libcudart.so is mapped)")),
    ("2.0.0", TorchPreloadRule("on-error", ("nvidia/cudnn/lib/libcudnn.so.*[0-9]",),
                               "torch 2.0-2.13 torch/__init__.py (_preload_cuda_deps only in _load_global_deps' "
                               "except OSError handler)")),
)


def rule_for_version(version: str) -> TorchPreloadRule | None:
    """The :data:`KNOWN_RULES` entry for torch ``version`` (``2.14.1+cu130``), or None before 2.0."""
    try:
        v = Version(Version(version).base_version)
    except InvalidVersion:
        return None
    for first, rule in KNOWN_RULES:
        if v >= Version(first):
            return rule
    return None


# ----------------------------------------------------------------------------- reading the file


def _str(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _cudnn_entry(tree: ast.Module) -> tuple[str, str] | None:
    """(lib folder, file pattern) of cuDNN in the preload table: a ``("cudnn", "libcudnn.so.*[0-9]")``
    tuple in a list, or a ``"cudnn": "libcudnn.so.*[0-9]"`` item of a dict."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Tuple) and len(node.elts) == 2:
            a, b = (_str(e) for e in node.elts)
            if a == "cudnn" and b and b.startswith("libcudnn"):
                return a, b
        if isinstance(node, ast.Dict):
            for k, v in zip(node.keys, node.values):
                if k is not None and _str(k) == "cudnn" and (_str(v) or "").startswith("libcudnn"):
                    return "cudnn", _str(v) or ""
    return None


def _is_join(node: ast.AST) -> bool:
    f = node.func if isinstance(node, ast.Call) else None
    return bool(isinstance(f, ast.Attribute) and f.attr == "join"
                and isinstance(f.value, ast.Attribute) and f.value.attr == "path")


def _part(node: ast.AST, folder: str, names: dict[str, list[str]]) -> list[str] | None:
    """One argument of ``os.path.join`` as pattern parts: a constant, the lib folder / file name
    parameters, an f-string over the CUDA major (``f"cu{maj_cuda_version}"``), or a name bound
    earlier in the function to another ``os.path.join``."""
    s = _str(node)
    if s is not None:
        return [s]
    if isinstance(node, ast.Name):
        if node.id in names:
            return list(names[node.id])
        if "folder" in node.id:
            return [folder]
        if "name" in node.id:
            return ["{lib_name}"]
        return None
    if isinstance(node, ast.JoinedStr):
        out = ""
        for v in node.values:
            if isinstance(v, ast.Constant):
                out += str(v.value)
            elif isinstance(v, ast.FormattedValue) and isinstance(v.value, ast.Name) and "cuda" in v.value.id:
                out += "{cuda_major}"
            else:
                return None
        return [out]
    return None


def _patterns(func: ast.FunctionDef, folder: str) -> list[str]:
    """The ``glob`` patterns below a ``sys.path`` entry that ``func`` builds with
    ``os.path.join(path, ...)``, in source order (torch returns them in that order)."""
    param = func.args.args[0].arg if func.args.args else "path"
    names: dict[str, list[str]] = {}
    out: list[str] = []
    for node in ast.walk(func):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and _is_join(node.value):
            parts = _join_parts(node.value, param, folder, names)  # type: ignore[arg-type]
            if parts is not None:
                names[node.targets[0].id] = parts
    for node in ast.walk(func):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "glob" \
                and node.args and _is_join(node.args[0]):
            parts = _join_parts(node.args[0], param, folder, names)  # type: ignore[arg-type]
            if parts is not None and parts and parts[-1] == "{lib_name}":
                out.append("/".join(parts))
    return sorted(dict.fromkeys(out), key=lambda p: _line_of(func, p, folder, param, names))


def _line_of(func: ast.FunctionDef, pattern: str, folder: str, param: str, names: dict[str, list[str]]) -> int:
    for node in ast.walk(func):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "glob" \
                and node.args and _is_join(node.args[0]):
            parts = _join_parts(node.args[0], param, folder, names)  # type: ignore[arg-type]
            if parts is not None and "/".join(parts) == pattern:
                return node.lineno
    return 1 << 30


def _join_parts(call: ast.Call, param: str, folder: str, names: dict[str, list[str]]) -> list[str] | None:
    if not call.args:
        return None
    first = call.args[0]
    if isinstance(first, ast.Name) and first.id == param:
        parts: list[str] = []
    elif isinstance(first, ast.Name) and first.id in names:
        parts = list(names[first.id])
    else:
        return None
    for a in call.args[1:]:
        p = _part(a, folder, names)
        if p is None:
            return None
        parts += p
    return parts


def _functions(tree: ast.Module) -> dict[str, ast.FunctionDef]:
    return {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}


def _calls_preload(nodes: list[ast.stmt], preloaders: set[str]) -> bool:
    """A statement list calls one of the preload functions in a way that includes cuDNN (all of
    its table: no lib-folder argument, or the ``"cudnn"`` folder)."""
    for stmt in nodes:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in preloaders:
                folders = [_str(a) for a in node.args if _str(a) is not None]
                if not folders or "cudnn" in folders:
                    return True
            if isinstance(node, ast.For):
                pass
    return False


def read_preload_rule(init_path: str, version: str = "") -> TorchPreloadRule | str:
    """The :class:`TorchPreloadRule` of the torch whose ``__init__.py`` is ``init_path``, or a
    sentence saying why it could not be read. Never raises."""
    try:
        with open(init_path, "rb") as fh:
            data = fh.read(_MAX_INIT_BYTES + 1)
        if len(data) > _MAX_INIT_BYTES:
            return f"{init_path} is larger than {_MAX_INIT_BYTES} bytes"
        tree = ast.parse(data.decode("utf-8", "replace"), filename=init_path)
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return f"could not read {init_path}: {type(exc).__name__}: {exc}"
    label = f"torch/__init__.py of the installed torch {version}".rstrip()
    entry = _cudnn_entry(tree)
    if entry is None:
        return TorchPreloadRule("never", (), f"{label}: its preload table has no cuDNN entry")
    folder, name = entry
    funcs = _functions(tree)
    patterns: list[str] = []
    for f in funcs.values():
        if any(isinstance(n, ast.Attribute) and n.attr == "glob" for n in ast.walk(f)):
            patterns += [p for p in _patterns(f, folder) if p not in patterns]
    patterns = [p.replace("{lib_name}", name) for p in patterns]
    if not patterns:
        return f"{label}: no glob pattern for the preload was found"
    preloaders = {n for n in funcs if "preload" in n and "cuda" in n}
    glob_deps = funcs.get("_load_global_deps")
    when = "never"
    if glob_deps is not None:
        for node in ast.walk(glob_deps):
            if isinstance(node, ast.Try):
                if _calls_preload(node.body, preloaders):
                    when = "always"
                    break
                if any(_calls_preload(h.body, preloaders) for h in node.handlers):
                    when = "on-error"
    how = {"always": "_load_global_deps calls the preload after libtorch_global_deps.so loads (libcudart.so mapped)",
           "on-error": "_load_global_deps calls the preload only when libtorch_global_deps.so fails to load",
           "never": "_load_global_deps never calls the preload with cuDNN"}[when]
    return TorchPreloadRule(when, tuple(patterns), f"{label}: {how}; first of " + ", ".join(
        p.replace("{cuda_major}", "<CUDA major>") for p in patterns) + " in each sys.path entry")


def torch_preload(pkg: str, version: str, cuda: str | None, sys_path: Iterable[str], *,
                  global_deps_loads: bool = True) -> tuple[Preload | None, TorchPreloadRule | None, str]:
    """What ``import torch`` (the torch package in folder ``pkg``) would preload of cuDNN.

    Args:
        pkg: the ``torch`` package folder.
        version: its version (for :data:`KNOWN_RULES` when the file cannot be read).
        cuda: ``torch.version.cuda`` ("13.0"), None for a CPU build (no preload then: its
            ``libtorch_global_deps.so`` maps no cudart).
        sys_path: the ``sys.path`` the import would see, in order.
        global_deps_loads: ``libtorch_global_deps.so`` loads (its cudart is found); an
            ``"on-error"`` release preloads only when it does not.

    Returns:
        (preload or None, the rule used or None, a note: why nothing is preloaded, or "").
        Never raises.
    """
    try:
        rule_or_why = read_preload_rule(os.path.join(pkg, "__init__.py"), version)
        note = ""
        if isinstance(rule_or_why, str):
            rule = rule_for_version(version)
            note = rule_or_why + (f"; using the known behaviour of torch {version}" if rule else "")
        else:
            rule = rule_or_why
        if rule is None:
            return None, None, note
        if not cuda:
            return None, rule, "a CPU build: libtorch_global_deps.so maps no libcudart.so, so nothing is preloaded"
        if rule.when == "never" or (rule.when == "on-error" and global_deps_loads):
            return None, rule, note
        cuda_major = cuda.split(".")[0]
        cands = rule.candidates(sys_path, cuda_major)
        if not cands:
            return None, rule, note
        path, entry = cands[0]
        rel = os.path.relpath(path, entry) if entry else path
        why = (f"import torch loads the first {rel} it finds on sys.path by path (torch/__init__.py "
               f"_preload_cuda_deps), from sys.path entry {entry or '(working directory)'}")
        return Preload(os.path.abspath(path), why, entry), rule, note
    except Exception as exc:  # noqa: BLE001 - a probe never raises
        return None, None, f"torch preload could not be read: {type(exc).__name__}: {exc}"
