#!/usr/bin/env bash
# Create .venv (if missing) and install cudnn-magic with its test extras and a real cuDNN 9
# (nvidia-cudnn-jit-cu12, 68 MB, --no-deps: its version queries need no GPU and no cuBLAS).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip 2>&1 | grep -v "is ignored" || true
# Build-backend chatter (setuptools' editable-install notices) goes to .venv/install.log.
# The [ray] extra (Ray, about 245 MB installed, 30 s) is installed too: the --ray tests run a real local cluster.
if ! .venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test,ray]' > .venv/install.log 2>&1; then
  cat .venv/install.log; exit 1
fi
.venv/bin/python -m pip install -q --disable-pip-version-check --no-deps nvidia-cudnn-jit-cu12 2>&1 | grep -v "is ignored" || true
.venv/bin/python -c "import cudnn_magic, nbclient, pytest" 
