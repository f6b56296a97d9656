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
``$ORIGIN`` first). Sources: the installed ``torch/__init__.py`` (read here), docs/facts.md "Loaders
beyond glibc", PyTorch issues 188892 and 185512.

When the file cannot be read (or parsed into a rule), :data:`KNOWN_RULES` gives the behaviour by
release, each with the file it was read from (``tests/fixtures/torch_init/``).
"""

from __future__ import annotations

import ast
import dataclasses
import glob
import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from packaging.version import InvalidVersion, Version

from ...model import Preload
from ...util.files import read_regular
from .. import filefacts
from ..elf import ElfDynamic
from ..loader import elf_facts

if TYPE_CHECKING:
    from typing_extensions import TypeGuard  # typing.TypeGuard from Python 3.10

__all__ = ["KNOWN_RULES", "TorchPreloadRule", "read_preload_rule", "rule_for_version", "torch_preload"]

_MAX_INIT_BYTES = 2 << 20
#: cuDNN's row of torch's preload table, in every release read (2.1-2.14).
CUDNN_PATTERN = "libcudnn.so.*[0-9]"


@dataclass(frozen=True)
class TorchPreloadRule:
    """How one torch release preloads cuDNN.

    Attributes:
        when: ``"always"`` (after ``libtorch_global_deps.so`` loads, when ``libcudart.so`` is
            mapped: every CUDA build), ``"on-error"`` (only when ``libtorch_global_deps.so`` fails
            to load), or ``"never"`` (the release has no cuDNN entry in its preload table).
        patterns: glob patterns below each ``sys.path`` entry, in the order torch tries them,
            as templates: ``{folder}`` and ``{lib_name}`` are a preload-table row
            (``cudnn``, ``libcudnn.so.*[0-9]``), ``{cuda_major}`` is ``torch.version.cuda``'s major
            (``nvidia/cu13/lib``).
        source: where this was read ("torch/__init__.py of the installed torch 2.14.1: ...").
        before: the (lib folder, file pattern) rows of the preload table before cuDNN's. On the
            ``except OSError`` path torch preloads with ``required=True``: a row it cannot find
            raises ``ValueError`` and ``import torch`` fails before cuDNN (every release read).
        success_stops: on the success path too a row it cannot find ends the preload before
            cuDNN (torch 2.10-2.13 call ``_preload_cuda_deps()`` with ``required=True`` under
            ``except Exception: pass``); False when it goes on past it (2.14: ``required=False``).
        nvidia_gate: only ``sys.path`` entries that hold an ``nvidia/`` folder are searched
            (torch 2.1-2.6: ``if not os.path.exists(nvidia_path): continue``).
        rtld_global_env: the variable that, when set, makes ``import torch`` load its libraries with
            ``RTLD_GLOBAL`` instead of calling ``_load_global_deps`` (no preload at all), or "" when the
            file has none (``os.getenv("TORCH_USE_RTLD_GLOBAL")`` in every release read).
    """

    when: str
    patterns: tuple[str, ...]
    source: str
    before: tuple[tuple[str, str], ...] = ()
    success_stops: bool = False
    nvidia_gate: bool = False
    rtld_global_env: str = "TORCH_USE_RTLD_GLOBAL"

    def candidates(self, sys_path: Iterable[str], cuda_major: str | None, folder: str = "cudnn",
                   lib_name: str = CUDNN_PATTERN) -> list[tuple[str, str]]:
        """(file, sys.path entry) torch would take for one preload-table row (cuDNN's by default),
        in its order: per entry, its patterns' ``glob`` hits (``glob`` order, unsorted, as torch
        takes them); the first one wins."""
        out: list[tuple[str, str]] = []
        for entry in sys_path:
            if isinstance(entry, os.PathLike):
                entry = os.fspath(entry)
            if not isinstance(entry, str):
                continue
            if self.nvidia_gate and not os.path.exists(os.path.join(entry, "nvidia")):
                continue
            hits: list[str] = []
            for pat in self.patterns:
                if "{cuda_major}" in pat and not cuda_major:
                    continue
                rel = pat.replace("{folder}", folder).replace("{lib_name}", lib_name).replace("{cuda_major}", cuda_major or "")
                hits += glob.glob(os.path.join(entry, rel))
            out += [(h, entry) for h in hits]
        return out

    def shown(self) -> str:
        """The patterns for cuDNN, in words (``nvidia/cudnn/lib/libcudnn.so.*[0-9]``, ...)."""
        return ", ".join(p.replace("{folder}", "cudnn").replace("{lib_name}", CUDNN_PATTERN)
                         .replace("{cuda_major}", "<CUDA major>") for p in self.patterns)


_P3 = ("nvidia/{folder}/lib/{lib_name}", "nvidia/cu{cuda_major}/lib/{lib_name}", "{folder}/lib/{lib_name}")
_P2 = ("nvidia/{folder}/lib/{lib_name}", "{folder}/lib/{lib_name}")
_P1 = ("nvidia/{folder}/lib/{lib_name}",)
_CUBLAS = (("cublas", "libcublasLt.so.*[0-9]"), ("cublas", "libcublas.so.*[0-9]"))
_CUBLAS1 = (("cublas", "libcublas.so.*[0-9]"),)

#: The behaviour by release where the installed file cannot be read (torch not installed yet, a
#: file that cannot be parsed), read from each release's ``torch/__init__.py`` with
#: :func:`read_preload_rule` (the files are in ``tests/fixtures/torch_init/``, with their wheels'
#: names and hashes; ``tests/unit/probes/test_torch_preload.py`` holds this table against them).
#: (first version, rule), newest first.
KNOWN_RULES: tuple[tuple[str, TorchPreloadRule], ...] = (
    ("2.14.0", TorchPreloadRule("always", _P3, "torch 2.14 torch/__init__.py: _load_global_deps calls "
                                "_preload_cuda_deps(required=False) when libcudart.so is mapped", _CUBLAS)),
    ("2.10.0", TorchPreloadRule("always", _P3, "torch 2.10-2.13 torch/__init__.py: _load_global_deps calls "
                                "_preload_cuda_deps() when libcudart.so is mapped; it stops at the first table "
                                "library it cannot find (cuBLAS comes before cuDNN)", _CUBLAS, True)),
    ("2.9.0", TorchPreloadRule("on-error", _P3, "torch 2.9 torch/__init__.py: cuDNN is preloaded only in "
                               "_load_global_deps' except OSError handler", _CUBLAS1)),
    ("2.7.0", TorchPreloadRule("on-error", _P2, "torch 2.7-2.8 torch/__init__.py: cuDNN is preloaded only in "
                               "_load_global_deps' except OSError handler", _CUBLAS1)),
    ("2.6.0", TorchPreloadRule("on-error", _P2, "torch 2.6 torch/__init__.py: cuDNN is preloaded only in "
                               "_load_global_deps' except OSError handler, from entries with an nvidia/ folder",
                               _CUBLAS1, nvidia_gate=True)),
    ("2.1.0", TorchPreloadRule("on-error", _P1, "torch 2.1-2.5 torch/__init__.py: cuDNN is preloaded only in "
                               "_load_global_deps' except OSError handler, from entries with an nvidia/ folder",
                               _CUBLAS1, nvidia_gate=True)),
)


def rule_for_version(version: str) -> TorchPreloadRule | None:
    """The :data:`KNOWN_RULES` entry for torch ``version`` (``2.14.1+cu130``), or None before 2.1."""
    try:
        v = Version(Version(version).base_version)
    except InvalidVersion:
        return None
    for first, rule in KNOWN_RULES:
        if v >= Version(first):
            return rule
    return None


# ----------------------------------------------------------------------------- reading the file


def _str(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _table(tree: ast.Module) -> list[tuple[str, str]] | None:
    """The preload table as (lib folder, file pattern) in order: a list of 2-tuples (torch 2.10
    and later) or a dict literal (2.1-2.9), the one that holds cuDNN's ``libcudnn.so.*[0-9]``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.List) and node.elts and all(isinstance(e, ast.Tuple) and len(e.elts) == 2 for e in node.elts):
            rows = [(_str(e.elts[0]), _str(e.elts[1])) for e in node.elts]  # type: ignore[attr-defined]
            if any(a == "cudnn" and (b or "").startswith("libcudnn") for a, b in rows):
                return [(a, b) for a, b in rows if a and b]
        if isinstance(node, ast.Dict):
            rows = [(_str(k), _str(v)) for k, v in zip(node.keys, node.values)]
            if any(a == "cudnn" and (b or "").startswith("libcudnn") for a, b in rows):
                return [(a, b) for a, b in rows if a and b]
    return None


def _is_call(node: ast.AST, attr: str) -> TypeGuard[ast.Call]:
    f = node.func if isinstance(node, ast.Call) else None
    return bool(isinstance(f, ast.Attribute) and f.attr == attr)


def _is_join(node: ast.AST) -> TypeGuard[ast.Call]:
    f = node.func if isinstance(node, ast.Call) else None
    return bool(isinstance(f, ast.Attribute) and f.attr == "join"
                and isinstance(f.value, ast.Attribute) and f.value.attr == "path")


def _roots(func: ast.FunctionDef) -> set[str]:
    """Names that stand for one ``sys.path`` entry in ``func``: its ``path`` parameter (torch 2.7+
    ``_get_cuda_dep_paths(path, ...)``) or the target of ``for path in sys.path`` (2.1-2.6)."""
    out = {a.arg for a in func.args.args if a.arg == "path"}
    for node in ast.walk(func):
        if isinstance(node, ast.For) and isinstance(node.target, ast.Name) and isinstance(node.iter, ast.Attribute) \
                and node.iter.attr == "path" and isinstance(node.iter.value, ast.Name) and node.iter.value.id == "sys":
            out.add(node.target.id)
    return out


def _part(node: ast.AST, names: dict[str, list[str]]) -> list[str] | None:
    """One argument of ``os.path.join`` as pattern parts: a constant, the lib folder / file name
    parameters (``{folder}``, ``{lib_name}``), an f-string over the CUDA major
    (``f"cu{maj_cuda_version}"``), or a name bound earlier in the function to another join."""
    s = _str(node)
    if s is not None:
        return [s]
    if isinstance(node, ast.Name):
        if node.id in names:
            return list(names[node.id])
        if "folder" in node.id:
            return ["{folder}"]
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


def _join_parts(call: ast.Call, roots: set[str], names: dict[str, list[str]]) -> list[str] | None:
    if not call.args:
        return None
    first = call.args[0]
    if isinstance(first, ast.Name) and first.id in roots:
        parts: list[str] = []
    elif isinstance(first, ast.Name) and first.id in names:
        parts = list(names[first.id])
    else:
        return None
    for a in call.args[1:]:
        p = _part(a, names)
        if p is None:
            return None
        parts += p
    return parts


def _patterns(func: ast.FunctionDef) -> tuple[list[str], bool]:
    """(the ``glob`` patterns below a ``sys.path`` entry that ``func`` builds, in source order
    (torch concatenates them in that order, or falls back from one to the next: either way the
    first hit is the first pattern's), whether it skips entries without an ``nvidia/`` folder)."""
    roots = _roots(func)
    names: dict[str, list[str]] = {}
    for node in ast.walk(func):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and _is_join(node.value):
            parts = _join_parts(node.value, roots, names)
            if parts is not None:
                names[node.targets[0].id] = parts
    found: list[tuple[int, str]] = []
    for node in ast.walk(func):
        if _is_call(node, "glob") and node.args and _is_join(node.args[0]):
            parts = _join_parts(node.args[0], roots, names)
            if parts and parts[-1] == "{lib_name}":
                found.append((node.lineno, "/".join(parts)))
    gate = False
    for node in ast.walk(func):  # if not os.path.exists(nvidia_path): continue
        if isinstance(node, ast.If) and isinstance(node.test, ast.UnaryOp) and isinstance(node.test.op, ast.Not) \
                and _is_call(node.test.operand, "exists") and node.test.operand.args \
                and isinstance(node.test.operand.args[0], ast.Name) \
                and names.get(node.test.operand.args[0].id) == ["nvidia"] \
                and any(isinstance(b, ast.Continue) for b in node.body):
            gate = True
    return list(dict.fromkeys(p for _, p in sorted(found))), gate


def _functions(tree: ast.Module) -> dict[str, ast.FunctionDef]:
    return {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}


def _own_nodes(stmts: list[ast.stmt]) -> list[ast.AST]:
    """Every node of ``stmts`` outside nested function definitions (torch 2.4's
    ``_load_global_deps`` defines helpers with an unrelated ``except OSError`` of their own)."""
    out: list[ast.AST] = []
    todo: list[ast.AST] = list(stmts)
    while todo:
        n = todo.pop(0)
        out.append(n)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        todo.extend(ast.iter_child_nodes(n))
    return out


def _preload_call(stmts: list[ast.stmt], funcs: dict[str, ast.FunctionDef]) -> ast.Call | None:
    """The call in ``stmts`` that preloads cuDNN: to a module function whose name has ``preload``
    and ``cuda``, with no lib-folder argument (the whole table) or the ``"cudnn"`` folder;
    nvrtc/nvJitLink-only calls (torch 2.6-2.9's success path) do not count."""
    for node in _own_nodes(stmts):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in funcs \
                and "preload" in node.func.id and "cuda" in node.func.id:
            folders = [_str(a) for a in node.args if _str(a) is not None]
            if not folders or "cudnn" in folders:
                return node
    return None


def _required(call: ast.Call, funcs: dict[str, ast.FunctionDef]) -> bool:
    """The ``required`` a success-path call preloads with: its keyword, else the callee's default
    (torch 2.10-2.13: True, none given; 2.14: ``required=False``)."""
    for kw in call.keywords:
        if kw.arg == "required" and isinstance(kw.value, ast.Constant):
            return bool(kw.value.value)
    f = funcs.get(call.func.id) if isinstance(call.func, ast.Name) else None
    if f is not None:
        args = f.args.args
        defaults = f.args.defaults
        for a, d in zip(args[len(args) - len(defaults):], defaults):
            if a.arg == "required" and isinstance(d, ast.Constant):
                return bool(d.value)
    return True  # no required parameter (2.10-2.13's driver): the per-library loader's default, True


#: Raised whenever what :func:`read_preload_rule` derives from a file changes: a rule another
#: reader kept on disk is then not used (it is stored under a kind named with this number).
READER_VERSION = 1
_FACT = f"torch-preload-{READER_VERSION}"
#: (path, device, inode, size, mtime_ns, version) -> what was read, for this process's later checks
_memo: dict[tuple[str, int, int, int, int, str], TorchPreloadRule | str] = {}


def read_preload_rule(init_path: str, version: str = "") -> TorchPreloadRule | str:
    """The :class:`TorchPreloadRule` of the torch whose ``__init__.py`` is ``init_path``, or a
    sentence saying why it could not be read. Never raises.

    Parsing torch 2.14's 3,000-line ``__init__.py`` with :mod:`ast` and walking it takes about
    40 ms, so what was read is kept per file identity (device, inode, size, mtime in ns): in this
    process, and on disk with the other facts read from files (:mod:`cudnn_magic.probes.filefacts`,
    kind ``torch-preload-<READER_VERSION>``), served only while the file still has that identity
    and the same ``version`` is asked for."""
    try:
        st = os.stat(init_path)
    except (OSError, ValueError) as exc:
        return f"could not read {init_path}: {type(exc).__name__}: {exc}"
    key = (init_path, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, version)
    found = _memo.get(key)
    if found is not None:
        return found
    kept = _from_json(filefacts.get(init_path, st, _FACT), version)
    if kept is None:
        kept = _read_preload_rule(init_path, version)
        if isinstance(kept, str) and kept.startswith("could not read"):
            return kept  # a read that failed (a FIFO, too many open files) is tried again next time
        filefacts.put(init_path, st, _FACT, _to_json(kept, version))
    if not filefacts.racy(st):  # a file changed within the timestamps' granularity is read every time
        if len(_memo) >= 64:
            _memo.clear()
        _memo[key] = kept
    return kept


def _to_json(found: TorchPreloadRule | str, version: str) -> dict[str, object]:
    if isinstance(found, str):
        return {"version": version, "why": found}
    return {"version": version, "rule": [found.when, list(found.patterns), found.source,
                                         [list(b) for b in found.before], found.success_stops,
                                         found.nvidia_gate, found.rtld_global_env]}


def _from_json(value: object, version: str) -> TorchPreloadRule | str | None:
    """What :func:`_to_json` kept, when it is well formed and for ``version``; else None."""
    if not isinstance(value, dict) or value.get("version") != version:
        return None
    why, rule = value.get("why"), value.get("rule")
    if isinstance(why, str):
        return why
    if not (isinstance(rule, list) and len(rule) == 7):
        return None
    when, patterns, source, before, stops, gate, env_var = rule
    if not (isinstance(when, str) and isinstance(source, str) and isinstance(env_var, str)
            and isinstance(stops, bool) and isinstance(gate, bool)
            and isinstance(patterns, list) and all(isinstance(p, str) for p in patterns)
            and isinstance(before, list) and all(isinstance(b, list) and len(b) == 2
                                                 and all(isinstance(x, str) for x in b) for b in before)):
        return None
    return TorchPreloadRule(when, tuple(patterns), source, tuple((b[0], b[1]) for b in before), stops, gate, env_var)


def _read_preload_rule(init_path: str, version: str) -> TorchPreloadRule | str:
    """:func:`read_preload_rule`'s reading of the file itself, every time."""
    try:
        data = read_regular(init_path, _MAX_INIT_BYTES + 1)
        if len(data) > _MAX_INIT_BYTES:
            return f"{init_path} is larger than {_MAX_INIT_BYTES} bytes"
        tree = ast.parse(data.decode("utf-8", "replace"), filename=init_path)
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return f"could not read {init_path}: {type(exc).__name__}: {exc}"
    label = f"torch/__init__.py of the installed torch {version}".replace("  ", " ").rstrip()
    table = _table(tree)
    if table is None:
        return TorchPreloadRule("never", (), f"{label}: its preload table has no cuDNN entry")
    cudnn_at = next(i for i, (a, b) in enumerate(table) if a == "cudnn" and b.startswith("libcudnn"))
    funcs = _functions(tree)
    patterns: list[str] = []
    gate = False
    for f in funcs.values():
        if any(_is_call(n, "glob") for n in ast.walk(f)):
            pats, g = _patterns(f)
            if pats:
                patterns += [p for p in pats if p not in patterns]
                gate = gate or g
    if not patterns:
        return f"{label}: no glob pattern for the preload was found"
    when, stops = "never", False
    before = tuple(table[:cudnn_at])
    glob_deps = funcs.get("_load_global_deps")
    for node in _own_nodes(glob_deps.body) if glob_deps is not None else []:
        if isinstance(node, ast.Try):
            call = _preload_call(node.body, funcs)
            if call is not None:
                when, stops = "always", _required(call, funcs)
                break
            if any(_preload_call(h.body, funcs) is not None for h in node.handlers):
                when = "on-error"
    how = {"always": "_load_global_deps calls the preload after libtorch_global_deps.so loads (libcudart.so mapped)",
           "on-error": "_load_global_deps calls the preload only when libtorch_global_deps.so fails to load",
           "never": "_load_global_deps never calls the preload with cuDNN"}[when]
    if stops and before:
        how += (f"; it stops at the first library it cannot find, and {len(before)} come before cuDNN ("
                + ", ".join(b for _, b in before) + ")")
    env_var = "TORCH_USE_RTLD_GLOBAL" if any(
        isinstance(n, ast.Call) and getattr(n.func, "attr", "") == "getenv" and n.args
        and _str(n.args[0]) == "TORCH_USE_RTLD_GLOBAL"
        for n in ast.walk(tree)) else ""
    rule = TorchPreloadRule(when, tuple(patterns), "", before, stops, gate, env_var)
    return dataclasses.replace(rule, source=f"{label}: {how}; the first of {rule.shown()} in each sys.path entry"
                               + (" that has an nvidia/ folder" if gate else ""))


def _loadable(path: str) -> bool:
    """``ctypes.CDLL(path)`` would not raise at once: the file exists (a link that resolves) and is
    a shared library (a Git LFS pointer or a truncated file named like one is not)."""

    return os.path.exists(path) and isinstance(elf_facts(os.path.realpath(path)), ElfDynamic)


def _why_not(path: str) -> str:
    if not os.path.exists(path):
        return "a broken symbolic link" if os.path.islink(path) else "missing"
    facts = elf_facts(os.path.realpath(path))
    return facts if isinstance(facts, str) else "not loadable"


def torch_preload(pkg: str, version: str, cuda: str | None, sys_path: Iterable[str], *,
                  global_deps_loads: bool = True, environ: dict[str, str] | None = None
                  ) -> tuple[Preload | None, TorchPreloadRule | None, str]:
    """What ``import torch`` (the torch package in folder ``pkg``) would preload of cuDNN.

    Args:
        pkg: the ``torch`` package folder.
        version: its version (for :data:`KNOWN_RULES` when the file cannot be read).
        cuda: ``torch.version.cuda`` ("13.0"), None for a CPU build (no preload then: its
            ``libtorch_global_deps.so`` maps no cudart).
        sys_path: the ``sys.path`` the import would see, in order.
        global_deps_loads: ``libtorch_global_deps.so`` loads (its cudart is found); an
            ``"on-error"`` release preloads only when it does not.
        environ: the environment ``import torch`` would see (``TORCH_USE_RTLD_GLOBAL``).

    Returns:
        (preload or None, the rule used or None, a note: why nothing is preloaded, or "").
        Never raises.
    """
    try:
        pre, rule, why = _torch_preload(pkg, version, cuda, sys_path, global_deps_loads, environ)
        first = _first_note(pkg, version)
        return pre, rule, "; ".join(n for n in dict.fromkeys((first, why)) if n)
    except Exception as exc:  # noqa: BLE001 - a probe never raises
        return None, None, f"torch preload could not be read: {type(exc).__name__}: {exc}"


def _first_note(pkg: str, version: str) -> str:
    """Why the installed file could not be read (and the known behaviour is used), or ""."""
    r = read_preload_rule(os.path.join(pkg, "__init__.py"), version)
    if isinstance(r, str):
        return r + (f"; using the known behaviour of torch {version}" if rule_for_version(version) else "")
    return ""


def _torch_preload(pkg: str, version: str, cuda: str | None, sys_path: Iterable[str], global_deps_loads: bool,
                   environ: dict[str, str] | None) -> tuple[Preload | None, TorchPreloadRule | None, str]:
    """:func:`torch_preload`'s work; the note says why nothing is preloaded ("" when something is,
    or when the release simply does not preload here)."""
    rule_or_why = read_preload_rule(os.path.join(pkg, "__init__.py"), version)
    rule = rule_for_version(version) if isinstance(rule_or_why, str) else rule_or_why
    if rule is None:
        return None, None, ""
    if not cuda:
        return None, rule, "a CPU build: libtorch_global_deps.so maps no libcudart.so, so nothing is preloaded"
    env = os.environ if environ is None else environ
    if rule.rtld_global_env and env.get(rule.rtld_global_env):
        return None, rule, (f"{rule.rtld_global_env} is set: torch loads its libraries with RTLD_GLOBAL instead and "
                            "preloads nothing (torch/__init__.py)")
    if rule.when == "never" or (rule.when == "on-error" and global_deps_loads):
        return None, rule, ""
    cuda_major = cuda.split(".")[0]
    sys_path = [os.fspath(p) for p in sys_path if isinstance(p, (str, os.PathLike))]
    for folder, name in rule.before:  # torch ctypes.CDLLs each earlier row first
        found = rule.candidates(sys_path, cuda_major, folder, name)
        if found and not _loadable(found[0][0]):
            return None, rule, (f"torch's preload of {found[0][0]} fails ({_why_not(found[0][0])}), which ends its "
                                "preload before cuDNN: " + ("import torch fails" if not global_deps_loads else
                                                            "nothing more is preloaded (the error is swallowed)"))
        if not found and (not global_deps_loads or rule.success_stops):
            if not global_deps_loads:
                return None, rule, (f"libtorch_global_deps.so cannot load, and torch's preload finds no {name} "
                                    "on sys.path: import torch fails (ValueError: ... not found in the system "
                                    "path) before it reaches cuDNN")
            return None, rule, (f"torch stops preloading at {name}, which no sys.path entry holds, so it "
                                "preloads no cuDNN")
    cands = rule.candidates(sys_path, cuda_major)
    if not cands:
        return None, rule, ""
    path, entry = cands[0]
    if not _loadable(path):  # (the note of an unreadable file, if any, comes first)
        return None, rule, (f"torch's preload of {path} fails ({_why_not(path)}), so no cuDNN is preloaded"
                            + ("" if global_deps_loads else " and import torch fails"))
    rel = os.path.relpath(path, entry) if entry else path
    why = (f"import torch loads the first {rel} it finds on sys.path by path (torch/__init__.py "
           f"_preload_cuda_deps), from sys.path entry {entry or '(working directory)'}")
    return Preload(os.path.abspath(path), why, entry), rule, ""
