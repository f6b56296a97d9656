"""The layout of the package (docs/how-it-is-built.md), checked over every import of every
module (function-level ones and those under ``TYPE_CHECKING`` included) with :mod:`ast`:

* imports run one way: every module sits in a layer of :data:`LAYERS` (the longest matching
  prefix), and imports only modules of its own layer or of layers below it. Models are plain
  data that import nothing above them (a result renders through the protocol of
  ``model/display.py``: ``render/`` registers the renderer of each type); the engines use the
  probes, rules and knowledge, never the other way;
* no import loops: the graph of imports that run (``TYPE_CHECKING`` ones left out; a package's
  lazy re-export table ``_HOMES`` read as importing the modules it names) has no cycle;
* a package whose modules sit in several layers (``fixes/``) imports none above its lowest at the
  top of its ``__init__``: importing ``cudnn_magic.fixes.catalogue`` runs it first;
* start-up cost is paid in one place: an import of the package's own modules inside a function
  only in the entry points (:data:`ENTRY_POINTS`: the package's ``__init__``, ``cli/main.py``,
  ``shell/extension.py``, the capture helper process's ``capture/helper.py``); any other import inside a function (an optional dependency such as
  ``distributed`` or ``ipywidgets``, a framework) has a comment on its line or just above it
  saying why;
* only ``shell/`` and ``ui/`` import ``IPython`` (``IPython.core``, ``IPython.display``, the
  package itself) or ``ipykernel``, and only they import ``ipywidgets``; ``cli/`` imports neither
  ``shell/`` nor ``ui/``;
* no module is over 800 lines.

The checker runs on the real package and on small planted trees, so it is shown to fail.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import cudnn_magic

PACKAGE = Path(cudnn_magic.__file__).resolve().parent

IPYTHON_ONLY = ("IPython.core", "IPython.display", "ipykernel")
MAX_LINES = 800

#: The layers, bottom first; an area is a module path below the package ("" is the package's
#: own ``__init__``). A module may import its own layer and the layers below.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("util",),             # small helpers: standard library only
    ("model",),            # plain data: the result types and their render protocol
    ("fixes.catalogue",),  # the one table of fixes: plain data
    ("rules",),            # pure rules
    ("knowledge",),        # error wordings as data, the matcher
    # rules about fixes: what a diagnosis offers, for which frameworks, the cuDNN every framework
    # accepts, the pip command a fix replays
    ("fixes.advice", "fixes.frameworks", "fixes.solver", "fixes.pip_replay"),
    ("render",),           # text, HTML, JSON of the result types
    ("capture",),          # fd-2 capture, the crash record store
    ("probes",),           # read the world
    ("probes.frameworks",),
    ("engines",),          # run probes, rules and knowledge: check, diagnose, what-if, crash...
    ("fixes",),            # the fix registry: plan (verified by a what-if), apply, undo
    ("ui",),               # widgets
    ("shell",),            # IPython: magics, hooks
    ("cli",),              # argv
    ("", "__main__"),      # the entry points of the package
)

#: The modules where importing the package's own modules inside a function keeps start-up cheap:
#: the package, the command line, the IPython extension, and the capture helper process (run as
#: ``python -I -S helper.py``; the kernel imports the same module for its constants).
ENTRY_POINTS = ("__init__.py", "cli/main.py", "shell/extension.py", "capture/helper.py")


def _rank_table() -> dict[str, int]:
    return {area: i for i, group in enumerate(LAYERS) for area in group}


def area_of(module: str, package: str = "cudnn_magic") -> str:
    """The :data:`LAYERS` area of dotted ``module`` (the longest matching prefix)."""
    rest = module[len(package) + 1:] if module.startswith(package + ".") else ""
    ranks = _rank_table()
    parts = rest.split(".") if rest else []
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in ranks:
            return ".".join(parts[:n])
    return "" if not parts or parts == ["__init__"] else parts[0]


def _abs(pkg_parts: list[str], node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = pkg_parts[: len(pkg_parts) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


class _Module:
    def __init__(self, root: Path, path: Path, package: str) -> None:
        self.path = path
        self.rel = path.relative_to(root)
        parts = [package, *list(self.rel.with_suffix("").parts)]
        self.is_package = parts[-1] == "__init__"
        if self.is_package:
            parts = parts[:-1]
        self.name = ".".join(parts)
        self.pkg_parts = parts if self.is_package else parts[:-1]
        self.source = path.read_text(encoding="utf-8")
        self.lines = self.source.splitlines()
        self.tree = ast.parse(self.source)
        self.homes: dict[str, str] = {}
        for n in self.tree.body:
            if isinstance(n, ast.Assign) and any(getattr(t, "id", "") == "_HOMES" for t in n.targets):
                try:
                    table = ast.literal_eval(n.value)
                except ValueError:
                    continue
                for k, v in table.items():
                    self.homes[k] = f"{self.name}.{v.lstrip('.')}"


def imports(mod: _Module) -> list[tuple[int, list[str], bool, bool]]:
    """(lineno, imported dotted names, at the top?, under TYPE_CHECKING?) per import statement
    (per name of an ``import a, b``); ``from X import a`` gives ``X`` and ``X.a``."""
    out = []

    def walk(node: ast.AST, top: bool, tc: bool) -> None:
        for ch in ast.iter_child_nodes(node):
            if isinstance(ch, ast.Import):
                out.extend((ch.lineno, [a.name], top, tc) for a in ch.names)
            elif isinstance(ch, ast.ImportFrom):
                base = _abs(mod.pkg_parts, ch)
                out.append((ch.lineno, [base] + [f"{base}.{a.name}" for a in ch.names], top, tc))
            elif isinstance(ch, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                walk(ch, False, tc)
            elif isinstance(ch, ast.If) and "TYPE_CHECKING" in ast.unparse(ch.test):
                walk(ch, top, True)
            else:
                walk(ch, top, tc)

    walk(mod.tree, True, False)
    return out


def _explained(lines: list[str], lineno: int) -> bool:
    """A comment on the import's line, or on the line just above it or above the run of
    import lines (same indentation) it belongs to."""
    here = lines[lineno - 1]
    indent = here[: len(here) - len(here.lstrip())]
    i = lineno - 1
    while True:
        if "#" in lines[i]:
            return True
        if i == 0:
            return False
        prev = lines[i - 1]
        if prev.strip().startswith("#"):
            return True
        if prev.startswith(indent) and prev.strip().startswith(("from ", "import ")):
            i -= 1
            continue
        return False


def _targets(names: list[str], mods: dict[str, _Module], package: str) -> list[str]:
    """The package's modules an import statement loads: each name that is a module, else the
    module it is a name of (through a lazy ``_HOMES`` table when the package has one)."""
    found = []
    base = names[0]
    for name in names if len(names) == 1 else names[1:]:
        if not name.startswith(package):
            continue
        if name in mods:
            found.append(name)
            continue
        owner, _, attr = name.rpartition(".")
        home = mods[owner].homes.get(attr) if owner in mods else None
        if home in mods:
            found.append(home)
        elif owner in mods:
            found.append(owner)
        else:  # not in this tree (a planted tree names what it lacks): the layer is in the name
            found.append(base if base in mods or base != package else name)
    return sorted(set(found))


def _loops(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def check(root: Path, package: str = "cudnn_magic") -> list[str]:
    problems = []
    ranks = _rank_table()
    mods = {m.name: m for m in (_Module(root, p, package) for p in sorted(root.rglob("*.py")))}
    graph: dict[str, set[str]] = {}
    for mod in mods.values():
        rel, lines = mod.rel, mod.lines
        area = area_of(mod.name, package)
        top_area = rel.parts[0] if len(rel.parts) > 1 else ""
        if len(lines) > MAX_LINES:
            problems.append(f"{rel}: {len(lines)} lines (more than {MAX_LINES})")
        for lineno, names, top, tc in imports(mod):
            where = f"{rel}:{lineno}"
            for name in names:
                if top_area not in ("shell", "ui") and (name.startswith(IPYTHON_ONLY) or name == "IPython"):
                    problems.append(f"{where}: imports {name} (only shell/ and ui/ may)")
                if top_area not in ("shell", "ui") and name.split(".")[0] == "ipywidgets":
                    problems.append(f"{where}: imports {name} (only shell/ and ui/ may)")
                inner = name.split(".")[1] if name.startswith(package + ".") else None
                if top_area == "cli" and inner in ("shell", "ui"):
                    problems.append(f"{where}: cli/ imports {name}")
            own = _targets(names, mods, package)
            for target in own:
                t_area = area_of(target, package)
                if ranks.get(t_area, -1) > ranks.get(area, len(LAYERS)):
                    problems.append(f"{where}: {mod.name} imports {target}, a layer above it "
                                    f"({area or 'the package'} < {t_area or 'the package'}: imports run one way)")
                if not tc and target != mod.name:
                    graph.setdefault(mod.name, set()).add(target)
            if not top and own and str(rel) not in ENTRY_POINTS:
                problems.append(f"{where}: imports {', '.join(own)} inside a function (only the entry points "
                                f"{', '.join(ENTRY_POINTS)} defer the package's own imports)")
            elif not top and not _explained(lines, lineno):
                problems.append(f"{where}: import inside a function without a comment saying why")
            if top and not tc and mod.is_package and mod.name != package:
                below = [ranks.get(area_of(m, package), 0) for m in mods if m.startswith(mod.name + ".")]
                for target in own:
                    if below and ranks.get(area_of(target, package), 0) > min(below):
                        problems.append(f"{where}: the package {mod.name} imports {target} at the top, a layer "
                                        f"above its own lowest module (importing any of its modules runs it)")
    for comp in _loops(graph):
        problems.append(f"import loop: {' <-> '.join(comp)}")
    return sorted(set(problems))


def test_the_package_keeps_its_layout():
    assert check(PACKAGE) == []


def test_every_module_is_in_a_layer():
    ranks = _rank_table()
    for p in sorted(PACKAGE.rglob("*.py")):
        rel = p.relative_to(PACKAGE).with_suffix("")
        name = ".".join(["cudnn_magic", *rel.parts])
        assert area_of(name) in ranks, f"{rel}: no layer in LAYERS"


def test_the_target_layout_stands():
    for d in ("shell", "cli", "engines", "util", "fixes", "rules", "knowledge", "model", "probes/frameworks", "capture",
              "render", "ui"):
        assert (PACKAGE / d / "__init__.py").is_file(), d
    # beside the packages, only the entry points: no module shares a name with a public function
    assert sorted(p.name for p in PACKAGE.glob("*.py")) == ["__init__.py", "__main__.py"]
    assert (PACKAGE / "fixes" / "catalogue.py").is_file() and (PACKAGE / "cli" / "main.py").is_file()
    assert (PACKAGE / "model" / "display.py").is_file() and (PACKAGE / "engines" / "check.py").is_file()


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "pkg"
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    for d in [root, *[p for p in root.rglob("*") if p.is_dir()]]:
        (d / "__init__.py").touch()
    return root


@pytest.mark.parametrize("files, expect", [
    ({"engines/check.py": "from IPython.display import display\n"}, "engines/check.py:1: imports IPython.display"),
    ({"engines/check.py": "import IPython\n"}, "engines/check.py:1: imports IPython (only"),
    ({"probes/x.py": "def f():\n    # start-up cost\n    from ipykernel.connect import get_connection_file\n"},
     "probes/x.py:3: imports ipykernel.connect"),
    ({"render/x.py": "import ipywidgets as W\n"}, "render/x.py:1: imports ipywidgets"),
    ({"cli/x.py": "from ..shell import fix\n"}, "cli/x.py:1: cli/ imports cudnn_magic.shell"),
    ({"cli/x.py": "from cudnn_magic.ui.fix_buttons import fix_box\n"}, "cli/x.py:1: cli/ imports cudnn_magic.ui"),
    # imports run one way, at the top, in a function and for annotations alike
    ({"fixes/x.py": "from ..ui import fallback\n"}, "fixes/x.py:1: cudnn_magic.fixes.x imports cudnn_magic.ui, a layer"),
    ({"engines/crash.py": "from ..shell.crash_notice import load\n"},
     "engines/crash.py:1: cudnn_magic.engines.crash imports cudnn_magic.shell.crash_notice, a layer above"),
    ({"model/report.py": "class R:\n    def text(self):\n        from ..render.report import t  # a cycle\n",
      "render/report.py": "t = 1\n"}, "model/report.py:3: cudnn_magic.model.report imports cudnn_magic.render.report"),
    ({"model/crash.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..engines.crash import x\n",
      "engines/crash.py": "x = 1\n"}, "model/crash.py:3: cudnn_magic.model.crash imports cudnn_magic.engines.crash"),
    ({"probes/pip_report.py": "from ..engines import whatif\n", "engines/whatif.py": ""},
     "probes/pip_report.py:1: cudnn_magic.probes.pip_report imports cudnn_magic.engines.whatif, a layer above"),
    ({"render/fixes.py": "from ..fixes.planners import p\n", "fixes/planners.py": "p = 1\n"},
     "render/fixes.py:1: cudnn_magic.render.fixes imports cudnn_magic.fixes.planners, a layer above"),
    ({"engines/cluster.py": "from .. import __version__\n"},
     "engines/cluster.py:1: cudnn_magic.engines.cluster imports cudnn_magic, a layer above"),
    ({"model/x.py": "from ..model import Report\n", "model/__init__.py": "_HOMES = {'Report': 'report'}\n",
      "model/report.py": "from ..render import r\n", "render/__init__.py": "r = 1\n"},
     "model/report.py:1: cudnn_magic.model.report imports cudnn_magic.render"),
    # loops, also through a lazy re-export table and function-level imports in the entry points
    ({"shell/annotate.py": "from .explain import E\n", "shell/explain.py": "from .annotate import A\n"},
     "import loop: cudnn_magic.shell.annotate <-> cudnn_magic.shell.explain"),
    ({"knowledge/a.py": "from ..knowledge import B\n", "knowledge/__init__.py": "_HOMES = {'B': '.b'}\n",
      "knowledge/b.py": "from .a import x\n"}, "import loop: cudnn_magic.knowledge.a <-> cudnn_magic.knowledge.b"),
    # a package spanning layers imports nothing above its lowest module at its top
    ({"fixes/__init__.py": "from .planners import plan\n", "fixes/catalogue.py": "", "fixes/planners.py": "plan = 1\n"},
     "fixes/__init__.py:1: the package cudnn_magic.fixes imports cudnn_magic.fixes.planners at the top"),
    # start-up cost in one place
    ({"probes/p.py": "def f():\n    from .elf import read  # start-up cost\n", "probes/elf.py": "read = 1\n"},
     "probes/p.py:2: imports cudnn_magic.probes.elf inside a function (only the entry points"),
    ({"shell/annotate.py": "def f():\n    from ..engines import diagnose  # start-up cost\n", "engines/diagnose.py": ""},
     "shell/annotate.py:2: imports cudnn_magic.engines.diagnose inside a function"),
    ({"engines/memory.py": "def f():\n    import json\n    return json\n"},
     "engines/memory.py:2: import inside a function without a comment"),
    ({"engines/memory.py": "def f():\n    x = 1\n    import json\n"}, "engines/memory.py:3: import inside a function without"),
    ({"big.py": "x = 1\n" * 801}, "big.py: 801 lines"),
])
def test_the_checker_catches_a_planted_violation(tmp_path, files, expect):
    problems = check(_tree(tmp_path, files))
    assert any(p.startswith(expect) for p in problems), problems


def test_the_checker_accepts_what_the_rules_allow(tmp_path):
    root = _tree(tmp_path, {
        "shell/x.py": "from IPython.core.magic import Magics\nimport ipywidgets\nfrom ..engines.check import run\n",
        "shell/extension.py": "def load(ip):\n    from .x import Magics  # deferred\n",
        "ui/y.py": "from IPython.display import display\n",
        "cli/z.py": "from ..engines.check import run\nfrom ..util.options import f\n",
        "cli/main.py": "def main():\n    # the subcommand's module only\n    from .z import run\n",
        "engines/check.py": "from ..probes.elf import read\nfrom ..render.report import text\nrun = 1\n",
        "probes/elf.py": "from ..model import Report\nfrom ..rules.x import y\nread = 1\n",
        "probes/p.py": "def f():\n    import distributed  # an optional dependency\n",
        "render/report.py": "from ..model.display import register\ntext = 1\n",
        "fixes/__init__.py": "def __getattr__(name):\n    import importlib  # names load on first use\n",
        "fixes/catalogue.py": "",
        "knowledge/m.py": "from ..fixes.catalogue import ADVICE\n",
        "util/options.py": "f = 1\n",
        "__init__.py": "def load(ip):\n    # the package imports nothing until used\n    from .shell.x import Magics\n",
        "ok.py": "x = 1\n" * 800,
        "model/tc.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .report import Report\n",
    })
    assert check(root) == []
