#!/usr/bin/env bash
# The tests: set up .venv, lint and type-check (ruff, mypy: pyproject.toml), run the whole suite
# (ipykernel 7, IPython 9, browser tests included when Debian's chromium is installed), check the
# package a user installs (scripts/package-check.sh:
# wheel + sdist, twine check, a fresh venv without test extras; skip with CUDNN_MAGIC_SKIP_PACKAGE=1),
# then the kernel-facing tests again on ipykernel 6 / IPython 8 (skip that second lane with
# CUDNN_MAGIC_SKIP_IPYKERNEL6=1). Extra arguments go to the first pytest.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh || exit 2
echo "--- lint and types: ruff check, mypy (configured in pyproject.toml) ---"
.venv/bin/ruff check cudnn_magic scripts benchmarks tests
rcl=$?
.venv/bin/mypy
rct=$?
.venv/bin/python -m pytest -q -ra "$@"
rc=$?
[ $rc -ne 0 ] || rc=$rcl
[ $rc -ne 0 ] || rc=$rct
if [ "${CUDNN_MAGIC_SKIP_PACKAGE:-0}" != "1" ]; then
  echo "--- the package: wheel + sdist, twine check, fresh venv without test extras, smoke test ---"
  bash scripts/package-check.sh
  rcp=$?
  [ $rc -ne 0 ] || rc=$rcp
fi
if [ "${CUDNN_MAGIC_SKIP_IPYKERNEL6:-0}" != "1" ]; then
  echo "--- kernel-facing tests on ipykernel 6 / IPython 8 ---"
  bash scripts/test-ipykernel6.sh
  rc6=$?
  [ $rc -ne 0 ] || rc=$rc6
fi
exit $rc
