"""Write the surviving mutants of the last ``scripts/mutation.sh`` run, each with its diff, one
Markdown file per module: ``python scripts/mutation_survivors.py OUTDIR [PATTERN ...]``.

Reads only ``mutants/`` (mutmut 3's copy of the package, where each mutant is a function
``x_name__mutmut_N`` beside ``x_name__mutmut_orig``), so it costs no mutmut process per mutant
as ``mutmut show`` does. Patterns are fnmatch patterns of mutant names (default: every mutant). Also writes
``OUTDIR/by-name.md``: one line per module, its survivors as function + numbers (the list at the
end of tests/mutation_survivors.md)."""

import ast
import difflib
import sys
from collections import defaultdict
from pathlib import Path

from mutation_meta import SURVIVED as STATUS
from mutation_meta import matches, metas

outdir = Path(sys.argv[1])
patterns = sys.argv[2:]
outdir.mkdir(parents=True, exist_ok=True)
by_module: dict[str, list[str]] = defaultdict(list)
numbers: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
for meta, data in metas():
    codes = data.get("exit_code_by_key", {})
    names = [k for k, v in codes.items() if v in STATUS and matches(k, patterns)]
    if not names:
        continue
    source = meta.with_suffix("").read_text()
    lines = source.splitlines(keepends=True)
    functions = {n.name: "".join(lines[n.lineno - 1:n.end_lineno])
                 for n in ast.walk(ast.parse(source)) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    for name in names:
        local = name.rsplit(".", 1)[1]
        base = local.split("__mutmut_")[0]
        orig, mutant = functions.get(base + "__mutmut_orig"), functions.get(local)
        if orig is None or mutant is None:
            diff = "(source not found)"
        else:
            mutant = mutant.replace(local, base + "__mutmut_orig", 1)
            diff = "".join(line for line in difflib.unified_diff(orig.splitlines(True), mutant.splitlines(True), n=1)
                           if not line.startswith(("---", "+++")))
        module = name.split("__mutmut_")[0].rsplit(".", 1)[0]
        numbers[module.removeprefix("cudnn_magic.")][base].append(int(local.rsplit("_", 1)[1]))
        by_module[module].append(f"### {name} ({STATUS[codes[name]]})\n```diff\n{diff.rstrip()}\n```\n")
for module, items in sorted(by_module.items()):
    (outdir / f"{module}.md").write_text(f"# {module}: {len(items)} survivors\n\n" + "\n".join(items))
    print(f"{len(items):5} {module}")
lines = []
for module, fns in sorted(numbers.items()):
    n = sum(map(len, fns.values()))
    parts = "; ".join(f"`{fn}` " + ", ".join(map(str, sorted(v))) for fn, v in sorted(fns.items()))
    lines.append(f"- **`{module}`** ({n}): {parts}")
(outdir / "by-name.md").write_text("\n".join(lines) + "\n")
