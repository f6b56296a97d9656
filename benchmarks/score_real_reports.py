"""Score the diagnosis engine on the project's real-report tables, per kind.

For every table of ``tests/unit/diagnose/test_real_reports.py`` and ``tests/unit/diagnose/test_real_reports_consumers.py``
(each row: a real public report or a printing project's own wording, the ids accepted first, its
source): how many rows get an accepted id first, as the three fields of a cell and pasted as one
log, and how many rows whose accepted ids hold "NONE" get a ``cudnn-*`` claim (a false claim).

Run: ``.venv/bin/python benchmarks/score_real_reports.py``. Prints a markdown table; exit 0.
"""

from __future__ import annotations

import importlib
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, os.path.join(ROOT, "tests", "unit", "diagnose"))  # the tables' modules

from cudnn_magic.engines.diagnose import diagnose  # noqa: E402


def _first_ok(ids: list[str], accepted: list[str]) -> bool:
    first = ids[0] if ids else "NONE"
    return first in accepted and not ("NONE" in accepted and any(i.startswith("cudnn-") for i in ids))


def score(module: str) -> list[tuple[str, int, int, int, int, int]]:
    """(kind, rows, fields ok, pasted ok, negative rows, false claims) per table of ``module``."""
    kinds = importlib.import_module(module).KINDS
    out = []
    for kind, rows in kinds.items():
        fields = pasted = negatives = false = 0
        for exc, log, tb, accepted, _source in rows:
            acc = accepted.split("|")
            a = [d.id for d in diagnose(exception=exc, log=log, traceback=tb)]
            b = [d.id for d in diagnose(log="\n".join(x for x in (log, tb, exc) if x))]
            fields += _first_ok(a, acc)
            pasted += _first_ok(b, acc)
            if "NONE" in acc:
                negatives += 1
                false += any(i.startswith("cudnn-") for i in a + b)
        out.append((kind, len(rows), fields, pasted, negatives, false))
    return out


def main() -> int:
    print("| table | kind | rows | accepted first (fields) | accepted first (pasted) | negative rows | false claims |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for module in ("test_real_reports", "test_real_reports_consumers"):
        for kind, n, f, p, neg, false in score(module):
            print(f"| {module} | {kind} | {n} | {f}/{n} | {p}/{n} | {neg} | {false} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
