#!/usr/bin/env bash
# The package a user installs: build the wheel and the sdist (`python -m build`), check their
# metadata (`twine check --strict`), install the wheel into a fresh venv WITHOUT the test extras,
# and run a smoke test there (the CLI, the Python API called twice, the extension in a real
# IPython shell). Run by scripts/test.sh; needs .venv (scripts/bootstrap.sh) and PyPI for the
# wheel's runtime dependencies. Prints one line per step; exit status 1 on the first failure.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PY=${PYTHON:-python3}
.venv/bin/python -m pip install -q --disable-pip-version-check build twine 2>&1 | grep -v "is ignored" || true
WORK=$(mktemp -d "${TMPDIR:-/tmp}/cudnn-magic-package.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
echo "build: wheel and sdist into $WORK/dist"
.venv/bin/python -m build --outdir "$WORK/dist" . > "$WORK/build.log" 2>&1 || { tail -40 "$WORK/build.log"; exit 1; }
ls "$WORK/dist"
.venv/bin/python -m twine check --strict "$WORK"/dist/*
WHEEL=$(ls "$WORK"/dist/*.whl)
SDIST=$(ls "$WORK"/dist/*.tar.gz)
# every module of the package is in both (the capture helper is run as a file by path)
.venv/bin/python - "$WHEEL" "$SDIST" <<'EOF'
import sys, tarfile, zipfile, pathlib
root = pathlib.Path.cwd()
want = sorted(str(p.relative_to(root)) for p in (root / "cudnn_magic").rglob("*.py")) + ["cudnn_magic/py.typed"]
wheel = set(zipfile.ZipFile(sys.argv[1]).namelist())
with tarfile.open(sys.argv[2]) as t:
    sdist = {n.split("/", 1)[1] for n in t.getnames() if "/" in n}
missing = [w for w in want if w not in wheel] + [f"sdist: {w}" for w in want + ["README.md", "pyproject.toml"] if w not in sdist]
if missing:
    sys.exit(f"missing from the packages: {missing}")
print(f"contents: {len(want)} files of cudnn_magic in the wheel and the sdist")
EOF
echo "fresh venv: pip install the wheel (runtime dependencies only)"
"$PY" -m venv "$WORK/venv"
"$WORK/venv/bin/python" -m pip install -q --disable-pip-version-check "$WHEEL" 2>&1 | grep -v "is ignored" || true
cd "$WORK"  # not the checkout: the installed package must stand on its own
V="$WORK/venv/bin"
"$V/python" -c "import cudnn_magic, sys; assert 'site-packages' in cudnn_magic.__file__, cudnn_magic.__file__; \
import importlib.util as u; assert u.find_spec('pytest') is None and u.find_spec('nbclient') is None, 'test extras installed'"
"$V/cudnn-magic" --version
"$V/cudnn-magic" check --json > check.json; "$V/python" -c "import json; d = json.load(open('check.json')); assert {'cudnn_loaded', 'frameworks', 'findings'} <= set(d)"
echo "Could not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR" | "$V/cudnn-magic" explain --json - > explain.json
"$V/python" -c "import json; d = json.load(open('explain.json')); assert d['diagnoses'][0]['id'] in ('cudnn-init-failed', 'cudnn-internal-error'), d"
"$V/python" - <<'EOF'
import cudnn_magic
for _ in range(2):  # the public API, twice in one process
    r = cudnn_magic.check()
    d = cudnn_magic.explain("Loaded runtime CuDNN library: 8.0.5 but source was compiled with: 8.1.0")
    s = cudnn_magic.gpu_memory()
assert type(r).__name__ == "Report" and d[0].id == "cudnn-version-mismatch" and type(s).__name__ == "MemorySnapshot"
from IPython.core.interactiveshell import InteractiveShell
ip = InteractiveShell.instance(colors="nocolor")
ip.run_line_magic("load_ext", "cudnn_magic")
rep = ip.run_line_magic("cudnn_check", "--json")
assert "cudnn_loaded" in rep
ip.run_line_magic("unload_ext", "cudnn_magic")
print("smoke test: CLI, API (twice) and the extension in IPython work from the installed wheel")
EOF
echo "package check: OK"
