#!/usr/bin/env bash
# The tests: set up .venv (and the browser test's Chromium when apt-get is available), then pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
exec .venv/bin/python -m pytest -q -ra "$@"
