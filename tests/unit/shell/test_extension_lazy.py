"""``%load_ext cudnn_magic`` pays only for what must work from the first cell on.

The magic families load on first use (IPython 9's ``MagicsManager.register_lazy``; a stand-in
per magic on IPython 8, whose lazy magics are invisible until used), yet ``%lsmagic`` lists them
and ``%cudnn_check?`` shows the full help before any was used; ``%unload_ext`` removes them all
and a second ``%load_ext`` brings them back. Each case runs in a fresh interpreter (its
``sys.modules`` is the measure); the ipykernel 6 / IPython 8 lane runs this file too.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]

SCRIPT = r"""
import io, json, contextlib, sys
from IPython.core.interactiveshell import InteractiveShell
ip = InteractiveShell.instance()
out = {}
ip.run_line_magic("load_ext", "cudnn_magic")
out["at_load"] = sorted(m for m in sys.modules if m.startswith("cudnn_magic."))
buf = io.StringIO()
with contextlib.redirect_stdout(buf):
    ip.run_cell("%cudnn_check?")
out["help"] = buf.getvalue()
out["lsmagic"] = str(ip.run_line_magic("lsmagic", ""))
out["after_help"] = sorted(m for m in sys.modules if m.startswith("cudnn_magic."))
out["explained"] = repr(ip.run_cell_magic("cudnn_explain", "", "CUDNN_STATUS_NOT_INITIALIZED\n"))
ip.run_line_magic("unload_ext", "cudnn_magic")
names = ("cudnn_check", "cudnn_explain", "cudnn_annotate", "gpu_memory", "cudnn_fix", "cudnn_guard")
mm = ip.magics_manager
out["after_unload"] = sorted({n for k in ("line", "cell") for n in mm.magics[k] if n in names}
                             | {n for n in getattr(mm, "lazy_magics", {}) if n in names})
ip.run_line_magic("load_ext", "cudnn_magic")
out["again"] = "cudnn_in_use" in ip.run_line_magic("cudnn_check", "--json")
ip.run_line_magic("unload_ext", "cudnn_magic")
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def out() -> dict:
    """One fresh interpreter's answers (the script above)."""
    return _run()


def _run() -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env["CUDNN_MAGIC_CAPTURE"] = "0"  # the capture is not what this measures
    p = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, cwd="/", timeout=180)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_load_ext_loads_no_magic_family_no_engine_yet_lists_and_helps_them(out):
    at_load = out["at_load"]
    heavy = [m for m in at_load if m.startswith(("cudnn_magic.engines", "cudnn_magic.probes", "cudnn_magic.render",
                                                  "cudnn_magic.knowledge.", "cudnn_magic.ui", "cudnn_magic.fixes"))]
    assert heavy in ([], ["cudnn_magic.knowledge.literals"]), at_load  # the literals the capture flags: a tuple
    for family in ("check", "explain", "memory", "fix", "guard", "explainer"):
        assert f"cudnn_magic.shell.{family}" not in at_load, at_load
    assert "--import-frameworks" in out["help"] and "--what-if" in out["help"], out["help"]
    for name in ("cudnn_check", "cudnn_explain", "cudnn_annotate", "gpu_memory", "cudnn_fix", "cudnn_guard"):
        assert name in out["lsmagic"], name
    assert "cudnn_magic.shell.check" in out["after_help"]  # the help is the real magic's: its family loaded
    assert "cudnn-init-failed" in out["explained"]


def test_unload_removes_every_magic_and_a_second_load_brings_them_back(out):
    assert out["after_unload"] == []
    assert out["again"] is True
