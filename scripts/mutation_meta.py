"""The verdicts mutmut 3 keeps in ``mutants/**/*.py.meta``, read in one place for
scripts/mutation.sh, mutation_recheck.py and mutation_survivors.py.

Each ``.meta`` file is JSON whose ``exit_code_by_key`` maps a mutant name
(``cudnn_magic.rules.gpu.x_driver_floor__mutmut_3``) to its verdict: None (not checked yet), 0
(survived), 5 or 33 (no tests), 1 (killed), 36 and up (timeouts and the like).

``python scripts/mutation_meta.py unchecked PATTERN...`` prints the names matching the fnmatch
patterns that have no verdict."""

import fnmatch
import json
import sys
from collections.abc import Iterator
from pathlib import Path

SURVIVED = {0: "survived", 5: "no tests", 33: "no tests"}  #: verdicts that count against the score


def metas(root: str = "mutants") -> Iterator[tuple[Path, dict]]:
    """Every ``.meta`` file under ``root`` with its parsed contents, in path order."""
    for meta in sorted(Path(root).rglob("*.py.meta")):
        yield meta, json.loads(meta.read_text())


def matches(name: str, patterns: list[str]) -> bool:
    """True when ``name`` matches one of the fnmatch ``patterns`` (an empty list matches all)."""
    return not patterns or any(fnmatch.fnmatch(name, p) for p in patterns)


if __name__ == "__main__" and sys.argv[1:2] == ["unchecked"]:
    for _, data in metas():
        for name, code in data.get("exit_code_by_key", {}).items():
            if code is None and matches(name, sys.argv[2:]):
                print(name)
