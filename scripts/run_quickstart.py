"""Execute notebooks/quickstart.ipynb in a real kernel and write the executed notebook and HTML.

Usage: python scripts/run_quickstart.py [--out DIR]   (default DIR: out/)
Exit status 0 when the notebook ran and the report shows the mapped cuDNN; 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "out"), help="output directory (default: out/)")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    nb = nbformat.read(ROOT / "notebooks" / "quickstart.ipynb", as_version=4)
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    t0 = time.perf_counter()
    # The last cell fails on purpose (to show an annotated error): allow errors.
    # The kernel's own stderr (the native log lines the notebook shows anyway, and jupyter_client's
    # start-up warnings) goes to out/kernel-stderr.log rather than this terminal.
    with open(out / "kernel-stderr.log", "wb") as kernel_stderr:
        NotebookClient(nb, timeout=180, kernel_name="python3", allow_errors=True,
                       resources={"metadata": {"path": str(ROOT / "notebooks")}}).execute(env=env, stderr=kernel_stderr)
    elapsed = time.perf_counter() - t0
    nbformat.write(nb, out / "quickstart.ipynb")
    try:
        from nbconvert import HTMLExporter

        body, _ = HTMLExporter().from_notebook_node(nb)
        (out / "quickstart.html").write_text(body, encoding="utf-8")
    except Exception as exc:  # noqa: BLE001
        print(f"(HTML copy not written: {exc})", file=sys.stderr)
    loaded = None
    for cell in nb.cells:
        if cell.cell_type == "code" and cell.source.startswith("report = %cudnn_check --json"):
            for o in cell.get("outputs", []):
                if o.get("output_type") == "execute_result":
                    loaded = o["data"].get("text/plain")
    mapped = []
    if loaded:
        import ast

        try:
            mapped = [row for row in ast.literal_eval(loaded) if row[0].startswith("libcudnn.so")]
        except (ValueError, SyntaxError):
            mapped = []
    print(f"Executed notebooks/quickstart.ipynb in a real kernel in {elapsed:.1f} s")
    print(f"  executed notebook: {out / 'quickstart.ipynb'}")
    print(f"  HTML copy:         {out / 'quickstart.html'}")
    for name, version, path in mapped:
        print(f"  cuDNN mapped in the kernel: {name} {version} at {path}")
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    unexpected = [e for e in errors if e.get("ename") != "RuntimeError"]
    if unexpected or not mapped:
        print("FAILED: the report does not show the mapped cuDNN" if not unexpected else
              f"FAILED: unexpected errors: {json.dumps([e.get('evalue') for e in unexpected])}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
