"""Per-module mutation score from ``mutmut results --all true`` (stdin); the mutant-name patterns
that were run are the arguments. Killed = killed + timeout (a mutant that hangs a test is caught);
the score is killed / checked mutants, so "no tests" and "survived" both count against it; mutants
not checked (a run stopped early) are counted apart."""

import fnmatch
import re
import sys
from collections import defaultdict

patterns = sys.argv[1:]
counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
line_re = re.compile(r"^\s*(\S+__mutmut_\d+): (.+)$")
for line in sys.stdin:
    m = line_re.match(line)
    if not m or not any(fnmatch.fnmatch(m.group(1), p) for p in patterns):
        continue
    name, status = m.group(1), m.group(2).strip()
    module = name.split(".x_", 1)[0].split(".xǁ", 1)[0]
    counts[module][status] += 1

total_killed = total = unchecked = 0
print(f"{'module':40} {'killed':>7} {'checked':>7} {'score':>7}  other")
for module in sorted(counts):
    c = counts[module]
    killed = c.get("killed", 0) + c.get("timeout", 0)
    n = sum(v for k, v in c.items() if k != "not checked")
    total_killed += killed
    total += n
    unchecked += c.get("not checked", 0)
    other = ", ".join(f"{k} {v}" for k, v in sorted(c.items()) if k not in ("killed", "timeout"))
    score = f"{100 * killed / n:6.1f}%" if n else "     -"
    print(f"{module:40} {killed:7} {n:7} {score}  {other}")
if total:
    print(f"{'overall':40} {total_killed:7} {total:7} {100 * total_killed / total:6.1f}%"
          + (f"  ({unchecked} not checked)" if unchecked else ""))
