"""The layout of the package (issue 15, docs/how-it-is-built.md), checked over every import
of every module, function-level ones included, with :mod:`ast`:

* only ``shell/`` and ``ui/`` import ``IPython`` (``IPython.core``, ``IPython.display``, the
  package itself) or ``ipykernel``, and only they import ``ipywidgets``;
* ``cli/`` imports neither ``shell/`` nor ``ui/``; no engine module (anything outside ``shell/``,
  ``ui/`` and ``cli/``, except the package's ``__init__``/``__main__`` entry points) imports
  ``shell/``, ``ui/`` or ``cli/``;
* an import inside a function has a comment on its line or just above it (or above the run of
  imports it belongs to) saying why: start-up cost, an optional dependency, a cycle;
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

def _abs(mod_parts, node):
    if node.level == 0:
        return [node.module] if node.module else []
    base = mod_parts[: len(mod_parts) - (node.level - 1)]
    mod = ".".join(base + ([node.module] if node.module else []))
    return [mod + "." + a.name for a in node.names] + [mod] if node.module is None else [mod] + [mod + "." + a.name for a in node.names]

def imports(tree, pkg_parts):
    """(lineno, imported dotted names, top_level?) per import statement."""
    out = []
    def walk(node, top):
        for ch in ast.iter_child_nodes(node):
            if isinstance(ch, ast.Import):
                out.append((ch.lineno, [a.name for a in ch.names], top))
            elif isinstance(ch, ast.ImportFrom):
                out.append((ch.lineno, _abs(pkg_parts, ch), top))
            elif isinstance(ch, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                walk(ch, False)
            elif isinstance(ch, ast.ClassDef):
                walk(ch, top and False)
            else:
                walk(ch, top)
    walk(tree, True)
    return out

def _explained(lines, lineno):
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


def check(root: Path, package: str = "cudnn_magic") -> list:
    problems = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        parts = [package] + list(rel.with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
            pkg_parts = parts
        else:
            pkg_parts = parts[:-1]
        area = rel.parts[0] if len(rel.parts) > 1 else ""
        src = path.read_text(encoding="utf-8")
        lines = src.splitlines()
        if len(lines) > MAX_LINES:
            problems.append(f"{rel}: {len(lines)} lines (more than {MAX_LINES})")
        for lineno, names, top in imports(ast.parse(src), pkg_parts):
            where = f"{rel}:{lineno}"
            for name in names:
                if area not in ("shell", "ui") and (name.startswith(IPYTHON_ONLY) or name == "IPython"):
                    problems.append(f"{where}: imports {name} (only shell/ and ui/ may)")
                if area not in ("shell", "ui") and name.split(".")[0] == "ipywidgets":
                    problems.append(f"{where}: imports {name} (only shell/ and ui/ may)")
                inner = name.split(".")[1] if name.startswith(package + ".") else None
                if area == "cli" and inner in ("shell", "ui"):
                    problems.append(f"{where}: cli/ imports {name}")
                if area not in ("shell", "ui", "cli") and str(rel) not in ("__init__.py", "__main__.py") and inner in ("shell", "ui", "cli"):
                    problems.append(f"{where}: the engine imports {name}")
            if not top and not _explained(lines, lineno):
                    problems.append(f"{where}: import inside a function without a comment saying why")
    return sorted(set(problems))


def test_the_package_keeps_its_layout():
    assert check(PACKAGE) == []


def test_the_target_layout_stands():
    for d in ("shell", "cli", "fixes", "rules", "knowledge", "model", "probes/frameworks", "capture", "render", "ui"):
        assert (PACKAGE / d / "__init__.py").is_file(), d
    for gone in ("magics.py", "annotate.py", "fix_magics.py", "cli.py", "fixes.py", "versions.py", "statuses.py",
                 "consumer_rules.py", "model.py", "probes/frameworks.py", "ui/args.py"):
        assert not (PACKAGE / gone).exists(), gone
    assert (PACKAGE / "fixes" / "catalogue.py").is_file() and (PACKAGE / "cli" / "main.py").is_file()


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
    ({"check.py": "from IPython.display import display\n"}, "check.py:1: imports IPython.display"),
    ({"check.py": "import IPython\n"}, "check.py:1: imports IPython (only"),
    ({"probes/x.py": "def f():\n    # start-up cost\n    from ipykernel.connect import get_connection_file\n"},
     "probes/x.py:3: imports ipykernel.connect"),
    ({"render/x.py": "import ipywidgets as W\n"}, "render/x.py:1: imports ipywidgets"),
    ({"cli/x.py": "from ..shell import fix\n"}, "cli/x.py:1: cli/ imports cudnn_magic.shell"),
    ({"cli/x.py": "from cudnn_magic.ui.fix_buttons import fix_box\n"}, "cli/x.py:1: cli/ imports cudnn_magic.ui"),
    ({"fixes/x.py": "def f():\n    from ..ui import fallback  # why\n"}, "fixes/x.py:2: the engine imports cudnn_magic.ui"),
    ({"crash.py": "from .shell.crash_notice import load\n"}, "crash.py:1: the engine imports cudnn_magic.shell"),
    ({"memory.py": "def f():\n    import json\n    return json\n"},
     "memory.py:2: import inside a function without a comment"),
    ({"memory.py": "def f():\n    x = 1\n    import json\n"}, "memory.py:3: import inside a function without"),
    ({"big.py": "x = 1\n" * 801}, "big.py: 801 lines"),
])
def test_the_checker_catches_a_planted_violation(tmp_path, files, expect):
    problems = check(_tree(tmp_path, files))
    assert any(p.startswith(expect) for p in problems), problems


def test_the_checker_accepts_what_the_rules_allow(tmp_path):
    root = _tree(tmp_path, {
        "shell/x.py": "from IPython.core.magic import Magics\nimport ipywidgets\nfrom ..check import run\n",
        "ui/y.py": "from IPython.display import display\n",
        "cli/z.py": "from ..check import run\nfrom ..options import f\n",
        "__init__.py": "def load(ip):\n    # the package imports nothing until used\n    from .shell.x import Magics\n",
        "probes/p.py": "def f():\n    from .elf import read  # start-up cost\n    from .loader import g\n",
        "ok.py": "x = 1\n" * 800,
        "tc.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .model import Report\n",
    })
    assert check(root) == []
