#!/usr/bin/env bash
# Mutation testing of the pure core, with mutmut 3 (pinned below). Not part of CI.
#
#   bash scripts/mutation.sh                 # every target (6,906 mutants: about 3-4 h from an empty mutants/,
#                                            # minutes after a change: only mutants without a verdict run)
#   bash scripts/mutation.sh rules.gpu solver   # only the targets whose pattern contains a word given
#   bash scripts/mutation.sh knowledge.status   # or one module of a whole-package target
#   bash scripts/mutation.sh 'cudnn_magic.engines.diagnose.x__refine_with_facts__mutmut_*'   # or some mutants
#   MUTATION_SAMPLE=half bash scripts/mutation.sh   # the odd-numbered mutants of every target
#   MUTATION_RECHECK=1 bash scripts/mutation.sh diagnose   # check again what survived the last run
#                                           (after writing tests; mutmut itself never reopens a survivor)
#   .venv/bin/python scripts/mutation_survivors.py out/survivors   # each survivor with its diff, per module
#
# The configuration is [tool.mutmut] in pyproject.toml: the whole package is copied into mutants/,
# only the TARGET files (only_mutate) are mutated, and the fast tests (no kernel, no browser, no
# native build, no GPU; a file list) run. mutmut first records which tests call each function
# (its per-test coverage mapping); each mutant then runs only those tests. Below, TARGETS names
# the mutants that are run and scored: whole modules (rules/, knowledge/, engines/diagnose.py, fixes/advice.py,
# fixes/solver.py), and in probes/ only the pure functions (the METADATA / RECORD / ld.so.cache / ELF
# parsers). Names are module paths: cudnn_magic.rules.compat.x_judge__mutmut_3.
# Equivalent mutants (no behaviour can change) are listed in tests/mutation_survivors.md.
set -uo pipefail
cd "$(dirname "$0")/.."
MUTMUT_VERSION=3.8.1
PY=.venv/bin/python
[ -x "$PY" ] || bash scripts/bootstrap.sh || exit 2
if ! "$PY" -c "import mutmut, sys; sys.exit(mutmut.__version__ != '$MUTMUT_VERSION')" 2>/dev/null; then
  .venv/bin/pip install -q "mutmut==$MUTMUT_VERSION" || exit 2
fi

TARGETS=(
  # rules/: the version encodings, the compatibility rules, the build tables, the driver floors and
  # compute-capability ranges, the consumer rules, the cuDNN requirement (rule -> specifier, witness)
  "cudnn_magic.rules.cudnn_version.*"
  "cudnn_magic.rules.compat.*"
  "cudnn_magic.rules.build_tables.*"
  "cudnn_magic.rules.gpu.*"
  "cudnn_magic.rules.consumers.*"
  "cudnn_magic.rules.requirement.*"
  # knowledge/: status decoding, the matcher (scan, keyword_lines, evidence), the signature data
  "cudnn_magic.knowledge.*"
  "cudnn_magic.engines.diagnose.*"
  # fixes/: the advice each diagnosis offers, and the solver behind install-matching-cudnn
  "cudnn_magic.fixes.advice.*"
  "cudnn_magic.fixes.solver.*"
  # probes/: the pure parsers
  "cudnn_magic.probes.elf.*"
  "cudnn_magic.probes.loader.x_read_ldcache__mutmut_*"
  "cudnn_magic.probes.owners.x__parse_record_line__mutmut_*"
  "cudnn_magic.probes.owners.x_find_overwritten_wheels__mutmut_*"
  "cudnn_magic.probes.frameworks.common.x_read_dist_metadata__mutmut_*"
  "cudnn_magic.probes.frameworks.common.x__egg_requires__mutmut_*"
  "cudnn_magic.probes.frameworks.common.x__pin_specs__mutmut_*"
  "cudnn_magic.probes.frameworks.common.x__is_cudnn_req__mutmut_*"
  "cudnn_magic.probes.frameworks.common.x__release__mutmut_*"
  "cudnn_magic.probes.frameworks.common.x__pin_version__mutmut_*"
)
selected=()
for t in "${TARGETS[@]}"; do
  keep=$(( $# == 0 ))
  for word in "$@"; do [[ "$t" == *"$word"* ]] && keep=1; done
  [ $keep -eq 1 ] && selected+=("$t")
done
# A word naming a module inside a whole-package target (knowledge.status inside knowledge.*) runs
# that module only; a mutant-name pattern (cudnn_magic.engines.diagnose.x__refine_with_facts__mutmut_*)
# runs those mutants.
for word in "$@"; do
  for t in "${TARGETS[@]}"; do
    [[ "$t" == *"$word"* ]] && continue 2
  done
  if [[ "$word" == cudnn_magic.*__mutmut_* ]]; then selected+=("$word"); continue; fi
  for t in "${TARGETS[@]}"; do
    if [[ "$t" == *".*" && "cudnn_magic.$word" == "${t%\*}"* ]]; then selected+=("cudnn_magic.$word.*"); break; fi
  done
done
[ ${#selected[@]} -gt 0 ] || { echo "no target matches: $*" >&2; exit 2; }
# MUTATION_SAMPLE=half: only the odd-numbered mutants of every targeted function (a systematic
# half sample of every target, about half the time; the score is then an estimate).
if [ "${MUTATION_SAMPLE:-all}" = "half" ]; then
  for i in "${!selected[@]}"; do selected[$i]="${selected[$i]}[13579]"; done
fi

if [ "${MUTATION_RECHECK:-0}" = "1" ] && [ -d mutants ]; then
  "$PY" scripts/mutation_recheck.py "${selected[@]}"
fi

# mutmut re-runs EVERY mutant named on its command line, checked or not (only a run naming none
# keeps the verdicts, and that would also run the non-target functions of the probes/ files). So
# once mutants/ exists, it is first brought up to date with the source (a function changed since
# the last run gets fresh mutants without a verdict; mutmut itself does this only at the start of
# a run), and then only the selected mutants without a verdict (new, changed, or reopened by
# MUTATION_RECHECK) are named. regenerate() takes the same steps as the start of `mutmut run`
# (mutmut/__main__.py `_run`, 3.8.1, pinned above).
regenerate() {
  "$PY" - <<'PYEOF' > /dev/null
from mutmut.__main__ import (copy_also_copy_files, copy_src_dir, create_mutants, set_mutant_under_test,
                             setup_source_paths, store_lines_covered_by_tests)
set_mutant_under_test("mutant_generation")
copy_src_dir()
copy_also_copy_files()
setup_source_paths()
store_lines_covered_by_tests()
create_mutants(2)
PYEOF
}
start=$(date +%s)
rc=0
names=("${selected[@]}")
if [ -d mutants ] && ls mutants/cudnn_magic/*.meta >/dev/null 2>&1; then
  regenerate || { echo "could not bring mutants/ up to date" >&2; exit 2; }
  mapfile -t names < <("$PY" scripts/mutation_meta.py unchecked "${selected[@]}")
fi
echo "${#names[@]} mutant name(s) or pattern(s) to run" > mutants-run.log
if [ ${#names[@]} -eq 0 ]; then
  echo "every selected mutant has a verdict (MUTATION_RECHECK=1 reopens the survivors)"
else
  .venv/bin/mutmut run --max-children "${MUTATION_JOBS:-2}" "${names[@]}" >> mutants-run.log 2>&1
  rc=$?
fi
end=$(date +%s)
echo "mutmut run: exit $rc, $(( (end - start) / 60 ))m$(( (end - start) % 60 ))s (log: mutants-run.log)"
.venv/bin/mutmut results --all true 2>/dev/null | "$PY" scripts/mutation_score.py "${selected[@]}"
