"""``%load_ext cudnn_magic`` and ``%cudnn_check`` in a real ipykernel (nbclient), with the real
cuDNN wheel loaded the way a framework loads it; and the CLI and layering contracts."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from helpers.support import REPO, outputs_text, require_real_cudnn, run_notebook

LOAD_CUDNN = """
import ctypes
lib = ctypes.CDLL({path!r}, mode=ctypes.RTLD_GLOBAL)
lib.cudnnGetVersion.restype = ctypes.c_size_t
print("raw", lib.cudnnGetVersion())
"""


def _header_version(d):
    from cudnn_magic.probes.libnames import header_version

    return header_version(str(d))[0]


@pytest.mark.kernel
def test_cudnn_check_in_a_real_kernel_shows_the_mapped_cudnn(tmp_path):
    d = require_real_cudnn()
    version = _header_version(d)
    nb = run_notebook([
        "import sys, json\nbefore = set(sys.modules)",
        "%load_ext cudnn_magic",
        "heavy = ('pynvml', 'ipywidgets', 'torch', 'tensorflow', 'jax', 'cupy', 'onnxruntime')\n"
        "print(json.dumps(sorted(m for m in set(sys.modules) - before if m.split('.')[0] in heavy)))",
        LOAD_CUDNN.format(path=str(d / "libcudnn.so.9")),
        "%cudnn_check",
        "r = %cudnn_check --json\nprint(json.dumps(r))",
        "%cudnn_check --bogus",
        "print('alive')",
    ], tmp_path)
    cells = nb.cells
    assert json.loads(outputs_text(cells[2]).strip().splitlines()[-1]) == []  # %load_ext imported nothing heavy
    html = [o["data"]["text/html"] for o in cells[4].outputs if "text/html" in o.get("data", {})]
    assert html, outputs_text(cells[4])
    assert str(d / "libcudnn.so.9") in html[0].replace("<wbr>", "") and f"<b>{version}</b>" in html[0]  # paths break at slashes
    assert "text/plain" in cells[4].outputs[0]["data"]
    data = json.loads([ln for ln in outputs_text(cells[5]).splitlines() if ln.startswith("{")][-1])
    mains = [c for c in data["cudnn_loaded"] if c["main"]]
    assert [(c["path"], c["version"]) for c in mains] == [(str(d / "libcudnn.so.9"), version)]
    assert mains[0]["owner"].startswith("pip: nvidia-cudnn")
    assert set(data) >= {"cudnn_loaded", "cudnn_installed", "frameworks", "driver", "gpus", "findings"}
    assert "UsageError" in outputs_text(cells[6]) and "--bogus" in outputs_text(cells[6])
    assert "alive" in outputs_text(cells[7])


def _cli(*args, env=None, input=None):
    e = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    e["PYTHONPATH"] = str(REPO)
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "cudnn_magic", *args], capture_output=True, text=True, env=e,
                          input=input, timeout=120)


def test_cli_check_json_contract_and_exit_codes(tmp_path):
    d = require_real_cudnn()
    ok = _cli("check", "--json", "--load", str(d / "libcudnn.so.9"))
    assert ok.returncode == 0, ok.stderr
    data = json.loads(ok.stdout)
    for key in ("cudnn_loaded", "cudnn_installed", "frameworks", "driver", "gpus", "findings"):
        assert key in data
    assert data["cudnn_loaded"][0]["path"] == str(d / "libcudnn.so.9")
    assert all(set(c) >= {"path", "version", "source"} for c in data["cudnn_installed"])
    assert all(set(f) >= {"id", "severity", "title", "detail", "fixes"} for f in data["findings"])
    # A directory on LD_LIBRARY_PATH holding a cuDNN 9 shim without its sub-library is an error: exit 1.
    broken = tmp_path / "broken"
    broken.mkdir()
    shutil.copy(d / "libcudnn.so.9", broken / "libcudnn.so.9")
    bad = _cli("check", env={"LD_LIBRARY_PATH": str(broken)})
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "no libcudnn_graph.so.9 beside it" in " ".join(bad.stdout.split())  # the text is fitted to 100 columns
    # --load of a copy that would abort is refused, and this process lives: exit 2
    refused = _cli("check", "--load", str(broken / "libcudnn.so.9"))
    assert refused.returncode == 2 and "SIGABRT" in refused.stderr
    usage = _cli("check", "--nope")
    assert usage.returncode == 2 and "unrecognized arguments" in usage.stderr
    assert _cli().returncode == 2


def test_pure_layers_import_no_ipython_widgets_nvml_or_native_library():
    code = (
        "import sys, json\n"
        "import cudnn_magic, cudnn_magic.model, cudnn_magic.rules.cudnn_version, cudnn_magic.rules.compat, cudnn_magic.render.report\n"
        "mods = ['cudnn_magic.engines.diagnose', 'cudnn_magic.knowledge', 'cudnn_magic.render.diagnosis', 'cudnn_magic.knowledge.status']\n"
        "import importlib\n"
        "for m in mods:\n"
        "    try: importlib.import_module(m)\n"
        "    except ModuleNotFoundError as e:\n"
        "        if e.name != m: raise\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('IPython', 'ipywidgets', 'pynvml', 'ipykernel', 'ctypes', 'traitlets'))\n"
        "maps = open('/proc/self/maps').read()\n"
        "print(json.dumps({'bad': bad, 'cudnn_mapped': 'libcudnn' in maps}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data == {"bad": [], "cudnn_mapped": False}
