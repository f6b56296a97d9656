#!/usr/bin/env bash
# The main job: execute notebooks/quickstart.ipynb headless in a real IPython kernel, with a real
# cuDNN loaded the way a framework loads it; write out/quickstart.ipynb and out/quickstart.html.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || echo "Setting up .venv (cudnn-magic, its test extras and a real cuDNN wheel: a few minutes the first time, most of it downloads) ..."
bash scripts/bootstrap.sh
exec .venv/bin/python scripts/run_quickstart.py "$@"
