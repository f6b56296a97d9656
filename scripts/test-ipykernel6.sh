#!/usr/bin/env bash
# The kernel-facing tests once more against ipykernel 6 / IPython 8 (the main suite runs the
# newest, ipykernel 7): a second venv, .venv-ipykernel6.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
V=.venv-ipykernel6
[ -x "$V/bin/python" ] || "$PY" -m venv "$V"
"$V/bin/python" -m pip install -q --disable-pip-version-check "ipykernel>=6,<7" "ipython>=8,<9" ipywidgets nbclient \
  nbformat nvidia-ml-py nvidia-nvml-dev packaging pytest pytest-timeout hypothesis 2>&1 | grep -v "is ignored" || true
"$V/bin/python" -m pip install -q --disable-pip-version-check --no-deps nvidia-cudnn-jit-cu12 -e . 2>&1 | grep -v "is ignored" || true
exec "$V/bin/python" -m pytest -q -p no:cacheprovider tests/kernel/test_memory_kernel.py tests/kernel/test_annotate_kernel.py \
  tests/kernel/test_check_kernel.py tests/unit/shell/test_annotate.py tests/unit/memory/test_memory_panel.py \
  tests/kernel/test_cells_kernel.py tests/kernel/test_capture_kernel.py tests/unit/shell/test_extension_lazy.py \
  tests/kernel/test_magic_usage_kernel.py "$@"
