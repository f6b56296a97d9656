"""Paths and words a person reads in five minutes: text fitted to the terminal (``COLUMNS``,
default 100), paths written ``$VENV/...``, ``site-packages/...`` or ``~/...`` with a legend, a long
path given whole once per finding or diagnosis and then named by its cuDNN release, the first two
lines of the report saying two different things (and the HTML saying the same as the text), plain
words before the mechanism (``dlvsym``, ``dl_iterate_phdr``: in the "why" line, an HTML
``<details>``), and the JSON keeping every path whole.

Real wheels: this environment's ``nvidia-cudnn-jit-cu12`` 9.27 and the 9.12.0.46 wheel on
``LD_LIBRARY_PATH`` shadowing it, in the command line and in a real kernel (nbclient). What the
command line says a program loading ``libcudnn.so.9`` by name gets is checked against what glibc
really maps in a child process that does so.
"""

from __future__ import annotations

import html as html_lib
import json
import os
import re
import subprocess
import sys

import pytest

from helpers.real_wheels import install_wheel
from helpers.support import REPO, outputs_text, paragraph, require_real_cudnn, run_notebook

pytestmark = pytest.mark.native

OLD = ("nvidia-cudnn-jit-cu12", "9.12.0.46")
MECHANISM = re.compile(r"dlvsym|dl_iterate_phdr|RTLD_DEFAULT|GOT entries")


@pytest.fixture(scope="module")
def old_dir():
    require_real_cudnn()
    return install_wheel(*OLD) / "nvidia" / "cudnn_jit" / "lib"


def _cli(args: list[str], old_dir, columns: str | None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LD_LIBRARY_PATH")}
    env.update(LD_LIBRARY_PATH=str(old_dir), PYTHONPATH=str(REPO))
    if columns is not None:
        env["COLUMNS"] = columns
    return subprocess.run([sys.executable, "-m", "cudnn_magic", *args], capture_output=True, text=True, env=env,
                          timeout=300, cwd="/")


def _block(text: str, start: str) -> str:
    """From the line holding ``start`` to the next line at the same or a smaller indentation."""
    lines = text.splitlines()
    i = next(n for n, ln in enumerate(lines) if start in ln)
    indent = len(lines[i]) - len(lines[i].lstrip())
    out = [lines[i]]
    for ln in lines[i + 1:]:
        if ln.strip() and len(ln) - len(ln.lstrip()) <= indent:
            break
        out.append(ln)
    return re.sub(r"/\n\s+", "/", "\n".join(out))


@pytest.mark.parametrize("columns", [None, "72"])
def test_the_command_line_fits_the_terminal_and_names_each_path_once(old_dir, columns):
    p = _cli(["check"], old_dir, columns)
    width = int(columns or 100)
    too_wide = [ln for ln in p.stdout.splitlines() if len(ln) > width]
    assert not too_wide, (width, too_wide)
    lines = p.stdout.splitlines()
    # two first lines that say two things: the state, then the cuDNN in use
    assert lines[0] == "cudnn-magic check: 1 warning (cudnn-shadowed)", lines[:3]
    assert lines[1].startswith("cuDNN in use:") and "9.12" not in lines[0]
    # "none mapped yet" was always true here; what a load by name gets is what glibc maps
    assert "none mapped yet" not in p.stdout
    said = paragraph(p.stdout, "cuDNN in use:")
    m = re.search(r"loading libcudnn\.so\.9 by name here gets (\S+) from the LD_LIBRARY_PATH entry (\S+)", said)
    assert m and m.group(1) == "9.12.0", said
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    env["LD_LIBRARY_PATH"] = str(old_dir)
    really = subprocess.run([sys.executable, "-c", "import ctypes; ctypes.CDLL('libcudnn.so.9');"
                             "print([l.split()[-1] for l in open('/proc/self/maps') if l.rstrip().endswith('libcudnn.so.9')][0])"],
                            capture_output=True, text=True, env=env, timeout=60).stdout.strip()
    assert os.path.realpath(m.group(2)) == os.path.dirname(really), (m.group(2), really)
    # the shadowing finding gives the old folder whole once, then names it by its release
    finding = _block(p.stdout, "[WARNING] cudnn-shadowed")
    assert finding.count(str(old_dir)) == 1, finding
    flat = re.sub(r"\s+", " ", finding)
    assert "holding cuDNN 9.12" in flat or "the cuDNN 9.12 folder" in flat, finding
    # this environment's own wheel: site-packages/..., and the legend says what that is, once
    assert "site-packages/nvidia/cudnn_jit/lib" in p.stdout
    assert p.stdout.count("Paths: $VENV is ") == 1 and f"$VENV is {sys.prefix}" in p.stdout.replace("\n  ", " ")
    assert "sub-libraries in /" not in p.stdout and not MECHANISM.search("\n".join(lines[:6])), lines[:6]


def test_the_json_keeps_every_path_whole(old_dir):
    data = json.loads(_cli(["check", "--json"], old_dir, "60").stdout)
    paths = [c["path"] for c in data["cudnn_installed"]] + [r["picked"] for r in data["cudnn_by_name"]]
    assert paths and all(p.startswith("/") for p in paths), paths
    text = json.dumps(data)
    assert "$VENV" not in text and "…" not in text and "holding cuDNN" not in text
    (by_name,) = data["cudnn_by_name"]
    assert by_name["soname"] == "libcudnn.so.9" and os.path.dirname(by_name["picked"]) == str(old_dir)


@pytest.mark.kernel
def test_in_a_kernel_the_report_and_the_annotation_say_it_once(tmp_path, old_dir):
    """The demo's scenario in a real kernel: %cudnn_check, then a cell that fails as XLA does."""
    fail = ("import ctypes\n"
            "line = b'E0000 00:00:1.0 1 cuda_dnn.cc:535] Loaded runtime CuDNN library: 9.12.0 but source was compiled "
            "with: 9.27.0.  CuDNN library needs to have matching major version and equal or higher minor version.\\n'\n"
            "ctypes.CDLL(None).write(2, line, len(line))\n"
            "raise RuntimeError('DNN library initialization failed. Look at the errors above for more details.')")
    nb = run_notebook(["%load_ext cudnn_magic", "import ctypes\nctypes.CDLL('libcudnn.so.9', ctypes.RTLD_GLOBAL);",
                       "%cudnn_check", fail], tmp_path, env={"LD_LIBRARY_PATH": str(old_dir)})
    check = [o for o in nb.cells[2].outputs if "data" in o][-1]["data"]
    text, page = check["text/plain"], check["text/html"]
    lines = text.splitlines()
    assert lines[0] == "cudnn-magic check: 1 warning (cudnn-shadowed)" and lines[1].startswith("cuDNN in use: 9.12.0")
    assert all(len(ln) <= 100 for ln in lines), [ln for ln in lines if len(ln) > 100]
    # the HTML's first lines read as the text's: the same headline and the same cuDNN-in-use words
    visible = html_lib.unescape(re.sub(r"<[^>]+>", " ", page.split("<details", 1)[0]))
    visible = re.sub(r"\s+", " ", visible)
    assert "cudnn-magic check: 1 warning (cudnn-shadowed)" in visible, visible[:400]
    assert paragraph(text, "cuDNN in use:") in visible, (paragraph(text, "cuDNN in use:"), visible[:800])
    # the mechanism is one click away in HTML (a <details>), on a "why" line in text
    assert not MECHANISM.search(page.split("<details class='cm-why'>", 1)[0]), page[:1500]
    assert MECHANISM.search(page.split("<details class='cm-why'>", 1)[1].split("</details>", 1)[0])
    assert not MECHANISM.search("\n".join(lines[:2]))
    why = next(ln for ln in lines if ln.strip().startswith("why:"))
    assert MECHANISM.search(text[text.index(why):])
    # the annotation: the old folder's long path at most once, the environment's own wheel short
    annotation = outputs_text(nb.cells[3])
    top = annotation.split("Also possible:", 1)[0]
    top = top[top.index("cudnn-magic: The cuDNN loaded at runtime"):]
    flat = re.sub(r"/\n\s+", "/", top)
    assert flat.count(str(old_dir)) <= 1, flat
    assert "[cudnn-version-mismatch]" in re.sub(r"\s+", " ", flat)
    assert "%cudnn_fix remove-shadowing-dir" in annotation  # the line that acts without the buttons
