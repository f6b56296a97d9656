"""Forget the verdicts of the mutants that survived (or had no test) so that the next
``scripts/mutation.sh`` run checks them again, with the tests written since.

mutmut 3 keeps every verdict in ``mutants/**/*.py.meta`` and re-checks a mutant only when its
function changed; a new test does not reopen a survivor. Arguments: mutant-name patterns
(fnmatch, as in scripts/mutation.sh's TARGETS); none means every mutant. Killed and timed-out
verdicts are kept: adding tests cannot bring a killed mutant back. Prints how many were reset."""

import json
import sys

from mutation_meta import SURVIVED, matches, metas

patterns = sys.argv[1:]
reset = 0
for meta, data in metas():
    codes = data.get("exit_code_by_key", {})
    hit = [k for k, v in codes.items() if v in SURVIVED and matches(k, patterns)]
    for k in hit:
        codes[k] = None
    if hit:
        meta.write_text(json.dumps(data, indent=4))
        reset += len(hit)
print(f"{reset} surviving mutant(s) reopened")
