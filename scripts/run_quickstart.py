"""Execute notebooks/quickstart.ipynb in a real kernel and write the executed notebook and HTML.

The scenario is a real cuDNN mismatch made of two real cuDNN wheels: this environment's
``nvidia-cudnn-jit-cu12`` 9.27 (installed by scripts/bootstrap.sh) and the same wheel at 9.12.0.46,
installed with ``pip --target`` into ``.cache/wheels/nvidia-cudnn-jit-cu12-9.12.0.46/`` (the cache
the tests use, tests/helpers/real_wheels.py). The kernelspec ``cudnn-magic-demo`` (written under
``out/jupyter/kernels/``, found through ``JUPYTER_PATH``; nothing is written to your own Jupyter
directories) starts the kernel with that older cuDNN first on ``LD_LIBRARY_PATH``.

Usage: python scripts/run_quickstart.py [--out DIR]   (default DIR: out/)
Exit status 0 when the notebook ran, the report shows the cuDNN 9.12 the kernel mapped and names
it as the cuDNN in use, and the failing cell's diagnosis agrees with it (9.12.0 against 9.27.0,
with remove-shadowing-dir as its only fix); 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
OLD = ("nvidia-cudnn-jit-cu12", "9.12.0.46")
KERNEL = "cudnn-magic-demo"


def write_kernelspec(jupyter: Path, lib_dir: Path) -> Path:
    """``<jupyter>/kernels/cudnn-magic-demo/kernel.json``: this interpreter, with ``lib_dir``
    first on ``LD_LIBRARY_PATH``."""
    d = jupyter / "kernels" / KERNEL
    d.mkdir(parents=True, exist_ok=True)
    spec = {"argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            "display_name": "Python 3 (cudnn-magic demo: cuDNN 9.12 on LD_LIBRARY_PATH)", "language": "python",
            "env": {"LD_LIBRARY_PATH": str(lib_dir)}}
    path = d / "kernel.json"
    path.write_text(json.dumps(spec, indent=1) + "\n")
    return path


def outputs(cell) -> str:
    parts = []
    for o in cell.get("outputs", []):
        parts.append(o.get("text", "") if o.get("output_type") == "stream" else "")
        parts.append(str(o.get("data", {}).get("text/plain", "")))
        if o.get("output_type") == "error":
            parts.append(f"{o.get('ename')}: {o.get('evalue')}")
    return "\n".join(parts)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "out"), help="output directory (default: out/)")
    args = ap.parse_args()
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    sys.path.insert(0, str(ROOT / "tests"))
    from helpers.real_wheels import install_wheel

    old_lib = install_wheel(*OLD, on_install=lambda: print(
        f"Installing the older cuDNN ({OLD[0]}=={OLD[1]}, 15 MB) into .cache/wheels/ (once)...", flush=True)
    ) / "nvidia" / "cudnn_jit" / "lib"
    jupyter = out / "jupyter"
    kernel_json = write_kernelspec(jupyter, old_lib)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_CURRENT_TEST", "LD_LIBRARY_PATH")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    env["JUPYTER_PATH"] = os.pathsep.join(p for p in (str(jupyter), env.get("JUPYTER_PATH", "")) if p)
    env["JUPYTER_RUNTIME_DIR"] = str(jupyter / "runtime")
    os.environ["JUPYTER_PATH"] = env["JUPYTER_PATH"]  # for this process's kernelspec lookup
    nb = nbformat.read(ROOT / "notebooks" / "quickstart.ipynb", as_version=4)
    t0 = time.perf_counter()
    # One cell fails on purpose (to show an annotated error): allow errors. The kernel's own
    # stderr (the native log lines the notebook shows anyway, jupyter_client's start-up
    # warnings) goes to out/kernel-stderr.log rather than this terminal.
    with open(out / "kernel-stderr.log", "wb") as kernel_stderr:
        NotebookClient(nb, timeout=180, kernel_name=KERNEL, allow_errors=True,
                       resources={"metadata": {"path": str(ROOT / "notebooks")}}).execute(env=env, stderr=kernel_stderr)
    elapsed = time.perf_counter() - t0
    nbformat.write(nb, out / "quickstart.ipynb")
    try:
        from nbconvert import HTMLExporter

        body, _ = HTMLExporter().from_notebook_node(nb)
        (out / "quickstart.html").write_text(body, encoding="utf-8")
    except Exception as exc:  # noqa: BLE001
        print(f"(HTML copy not written: {exc})", file=sys.stderr)
    mapped, annotated, check_text = [], "", ""
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        if cell.source.strip() == "%cudnn_check":
            check_text = outputs(cell)
        if cell.source.startswith("report = %cudnn_check --json"):
            import ast

            try:
                mapped = [row for row in ast.literal_eval(outputs(cell).strip()) if row[0].startswith("libcudnn.so")]
            except (ValueError, SyntaxError):
                mapped = []
        if "DNN library initialization failed" in cell.source:
            annotated = outputs(cell)
    from cudnn_magic.render.paths import terminal_width, wrap

    width = terminal_width()

    def say(text: str) -> None:  # a summary line fitted to the terminal (COLUMNS, default 100)
        indent = text[: len(text) - len(text.lstrip())]
        print(text if len(text) <= width else "\n".join(wrap(text.strip(), width, indent, indent + "    ")))

    print(f"Executed notebooks/quickstart.ipynb in a real kernel in {elapsed:.1f} s")
    say(f"  executed notebook: {out / 'quickstart.ipynb'}")
    say(f"  HTML copy:         {out / 'quickstart.html'}")
    say(f"  kernelspec:        {kernel_json} (LD_LIBRARY_PATH={old_lib})")
    for name, version, owner, path in mapped:
        say(f"  cuDNN mapped in the kernel: {name} {version} ({owner}) at {path}")
    # the report's text is fitted to 100 columns: join the wrapped lines back (a path cut after "/")
    flat = re.sub(r"\s+", " ", re.sub(r"/\n\s+", "/", check_text))
    in_use = next(iter(re.findall(r"cuDNN in use: .*?(?= why: |$)", flat)), "")
    if in_use:
        say(f"  {in_use}")
    flat_annotated = re.sub(r"\s+", " ", re.sub(r"/\n\s+", "/", annotated))
    diag = next(iter(re.findall(r"cudnn-magic: .*?\[[a-z0-9-]+\]", flat_annotated)), "")
    # The annotation's last line names the fixes of the top diagnosis (its buttons' fixes):
    # "Preview a fix from a cell: %cudnn_fix ID (or ID2, ID3); add --yes to apply it ..."
    hint = re.search(r"Preview a fix from a cell: %cudnn_fix ([\w-]+)(?: \(or ([^)]*)\))?", flat_annotated)
    offered = ([hint.group(1)] + [x.strip() for x in (hint.group(2) or "").split(",") if x.strip()]) if hint else []
    if diag:
        say(f"  the failing cell's diagnosis: {diag}")
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    unexpected = [e for e in errors if e.get("ename") != "RuntimeError"]
    problems = []
    if unexpected:
        problems.append(f"unexpected errors: {json.dumps([e.get('evalue') for e in unexpected])}")
    real_old = os.path.realpath(old_lib)  # /proc/self/maps names files by their real path
    if not any(v == "9.12.0" and os.path.realpath(p).startswith(real_old + os.sep) for _, v, _, p in mapped):
        problems.append("the report does not show the cuDNN 9.12 the kernel mapped")
    # "cuDNN in use: 9.12.0 from PATH (LD_LIBRARY_PATH entry ...)": the whole path is given once
    used = re.match(r"cuDNN in use: (\S+) from (\S+) \(LD_LIBRARY_PATH entry", in_use)
    if not (used and used.group(1) == "9.12.0"
            and os.path.realpath(used.group(2)) == os.path.join(real_old, "libcudnn.so.9")):
        problems.append(f"the report does not name the mapped cuDNN 9.12 as the one in use ({in_use or 'no such line'})")
    if "[cudnn-version-mismatch]" not in diag or "9.12.0" not in annotated or "9.27.0" not in annotated:
        problems.append("the failing cell's diagnosis does not name the mismatch of 9.12.0 and 9.27.0")
    if offered != ["remove-shadowing-dir"]:
        problems.append(f"the failing cell's fixes are {offered}, not only remove-shadowing-dir")
    if "conda install" in annotated:
        problems.append("the diagnosis suggests conda in a pip environment")
    for p in problems:
        say(f"FAILED: {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
