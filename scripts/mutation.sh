#!/usr/bin/env bash
# Mutation testing of the pure core (issue 20), with mutmut 3 (pinned below). Not part of CI.
#
#   bash scripts/mutation.sh                 # every target (about 30 min on a 2-core machine)
#   bash scripts/mutation.sh versions fixes  # only the targets whose pattern contains a word given
#   MUTATION_SAMPLE=half bash scripts/mutation.sh   # the odd-numbered mutants of every target
#
# The configuration is [tool.mutmut] in pyproject.toml: the whole package is copied into mutants/,
# only the TARGET files (only_mutate) are mutated, and the fast tests (no kernel, no browser, no
# native build, no GPU; a file list) run. mutmut first records which tests call each function
# (its per-test coverage mapping); each mutant then runs only those tests. Below, TARGETS names
# the mutants that are run and scored: whole modules, and for fixes.py and probes/ only the pure
# functions (the cuDNN requirement solver; the METADATA / RECORD / ld.so.cache / ELF parsers).
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
  "cudnn_magic.versions.*"
  "cudnn_magic.consumer_rules.*"
  "cudnn_magic.statuses.*"
  "cudnn_magic.knowledge.*"
  "cudnn_magic.diagnose.*"
  # fixes.py: the requirement solver behind install-matching-cudnn only
  "cudnn_magic.fixes.x__marker_applies__mutmut_*"
  "cudnn_magic.fixes.x__family_from_cuda__mutmut_*"
  "cudnn_magic.fixes.x__rule_specifier__mutmut_*"
  "cudnn_magic.fixes.x_framework_need__mutmut_*"
  "cudnn_magic.fixes.x__candidates__mutmut_*"
  "cudnn_magic.fixes.x_witness__mutmut_*"
  "cudnn_magic.fixes.x__short__mutmut_*"
  "cudnn_magic.fixes.x_render_requirement__mutmut_*"
  "cudnn_magic.fixes.x_solve_cudnn__mutmut_*"
  "cudnn_magic.fixes.xǁCudnnNeedǁrequirement__mutmut_*"
  # probes/: the pure parsers
  "cudnn_magic.probes.elf.*"
  "cudnn_magic.probes.installed.x_read_ldcache__mutmut_*"
  "cudnn_magic.probes.owners.x__parse_record_line__mutmut_*"
  "cudnn_magic.probes.owners.x_find_overwritten_wheels__mutmut_*"
  "cudnn_magic.probes.frameworks.x_read_dist_metadata__mutmut_*"
  "cudnn_magic.probes.frameworks.x__egg_requires__mutmut_*"
  "cudnn_magic.probes.frameworks.x__pin_specs__mutmut_*"
  "cudnn_magic.probes.frameworks.x__is_cudnn_req__mutmut_*"
  "cudnn_magic.probes.frameworks.x__release__mutmut_*"
  "cudnn_magic.probes.frameworks.x__pin_version__mutmut_*"
)
selected=()
for t in "${TARGETS[@]}"; do
  keep=$(( $# == 0 ))
  for word in "$@"; do [[ "$t" == *"$word"* ]] && keep=1; done
  [ $keep -eq 1 ] && selected+=("$t")
done
[ ${#selected[@]} -gt 0 ] || { echo "no target matches: $*" >&2; exit 2; }
# MUTATION_SAMPLE=half: only the odd-numbered mutants of every targeted function (a systematic
# half sample of every target, about half the time; the score is then an estimate).
if [ "${MUTATION_SAMPLE:-all}" = "half" ]; then
  for i in "${!selected[@]}"; do selected[$i]="${selected[$i]}[13579]"; done
fi

start=$(date +%s)
.venv/bin/mutmut run --max-children "${MUTATION_JOBS:-2}" "${selected[@]}" > mutants-run.log 2>&1
rc=$?
end=$(date +%s)
echo "mutmut run: exit $rc, $(( (end - start) / 60 ))m$(( (end - start) % 60 ))s (log: mutants-run.log)"
.venv/bin/mutmut results --all true 2>/dev/null | "$PY" scripts/mutation_score.py "${selected[@]}"
