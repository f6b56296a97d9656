"""Real CTranslate2 wheels in a real kernel: ``ctranslate2==4.4.0`` (vendors the cuDNN 8.9.7 main
library as ``ctranslate2.libs/libcudnn-463fd6d5.so.8.9.7`` and none of its sub-libraries) and the
current ``ctranslate2==4.8.5`` (no cuDNN at all), each checked before and after ``import
ctranslate2``. The wheels (and numpy/PyYAML, which ``import ctranslate2`` needs) are installed by
the test session into ``.cache/wheels`` (tests/helpers/real_wheels.py)."""

from __future__ import annotations

import json
import os

import pytest

from helpers.real_wheels import install_wheel
from helpers.support import outputs_text, run_notebook

CHECK = "r = %cudnn_check --json\nprint('JSON' + json.dumps(r))"


def _json(cell):
    line = [ln for ln in outputs_text(cell).splitlines() if ln.startswith("JSON{")][-1]
    return json.loads(line[4:])


def _pythonpath(*dirs):
    return os.pathsep.join(str(d) for d in dirs)


@pytest.mark.kernel
def test_ctranslate2_440_vendored_cudnn8_before_and_after_import(tmp_path):
    ct2 = install_wheel("ctranslate2", "4.4.0")
    deps = [install_wheel("numpy", "1.26.4"), install_wheel("PyYAML", "6.0.2")]
    vendored = os.path.realpath(ct2 / "ctranslate2.libs" / "libcudnn-463fd6d5.so.8.9.7")
    assert os.path.exists(vendored)
    env = {"PYTHONPATH": _pythonpath(ct2, *deps, os.environ.get("PYTHONPATH", ""))}
    nb = run_notebook(["import json\n%load_ext cudnn_magic", CHECK, "import ctranslate2\nprint(ctranslate2.__version__)",
                       CHECK, "%cudnn_check", "print('alive')"], tmp_path, env=env, timeout=240)
    before, after = _json(nb.cells[1]), _json(nb.cells[3])
    assert "4.4.0" in outputs_text(nb.cells[2])
    for data, imported in ((before, False), (after, True)):
        rows = [f for f in data["frameworks"] if f["name"] == "CTranslate2"]
        assert len(rows) == 1, data["frameworks"]
        row = rows[0]
        assert (row["version"], row["cudnn_compiled"], row["cuda_compiled"], row["imported"]) == ("4.4.0", "8.9.7", "12.2", imported)
        assert row["cudnn_used"] == "8.9.7" and row["cudnn_used_path"] == vendored
        assert row["verdict"] == "mismatch" and "sub-libraries will not load" in row["detail"]
        assert "CHANGELOG v4.5.0" in row["rule"]
        inv = [c for c in data["cudnn_installed"] if c["path"] == vendored]
        assert len(inv) == 1 and inv[0]["version"] == "8.9.7" and inv[0]["owner"] == "pip: ctranslate2 4.4.0"
        assert inv[0]["loaded"] is imported
        subs = [f for f in data["findings"] if f["id"] == "cudnn-sublibrary-load-failed" and "CTranslate2 4.4.0" in f["title"]]
        assert len(subs) == 1, data["findings"]
        assert "libcudnn_ops_infer.so.8" in subs[0]["title"] and "libcudnn_cnn_infer.so.8" in subs[0]["title"]
        assert "Could not load library libcudnn_ops_infer.so.8" in subs[0]["detail"]
        assert subs[0]["severity"] == ("error" if data["gpus"] else "warning")
        assert [x["id"] for x in subs[0]["fixes"]] == ["upgrade-consumer"]
        cons = [c for c in data["consumers"] if c["framework"] == "CTranslate2"]
        assert len(cons) == 1 and cons[0]["soname"] == "libcudnn-463fd6d5.so.8.9.7" and cons[0]["vendored"] is True
        assert cons[0]["picked"] == vendored and cons[0]["picked_version"] == "8.9.7"
        required = {s["soname"]: s["path"] for s in cons[0]["sublibraries"] if s["required"]}
        assert required == {"libcudnn_ops_infer.so.8": None, "libcudnn_cnn_infer.so.8": None}
    # Before the import nothing is mapped; after it, the vendored copy is mapped, as what it is.
    assert not [c for c in before["cudnn_loaded"] if c["path"] == vendored]
    mapped = [c for c in after["cudnn_loaded"] if c["path"] == vendored]
    assert len(mapped) == 1 and mapped[0]["version"] == "8.9.7" and mapped[0]["owner"] == "pip: ctranslate2 4.4.0"
    assert before["consumers"][0]["why"].startswith("RPATH $ORIGIN/../ctranslate2.libs of _ext.")
    assert after["consumers"][0]["why"].startswith("already mapped")
    html = [o["data"]["text/html"] for o in nb.cells[4].outputs if "text/html" in o.get("data", {})]
    assert html and "cuDNN consumers" in html[0] and "libcudnn-463fd6d5.so.8.9.7" in html[0]
    assert "alive" in outputs_text(nb.cells[5])


@pytest.mark.kernel
def test_current_ctranslate2_uses_no_cudnn_before_and_after_import(tmp_path):
    ct2 = install_wheel("ctranslate2", "4.8.5")
    deps = [install_wheel("numpy", "1.26.4"), install_wheel("PyYAML", "6.0.2")]
    env = {"PYTHONPATH": _pythonpath(ct2, *deps, os.environ.get("PYTHONPATH", ""))}
    nb = run_notebook(["import json\n%load_ext cudnn_magic", CHECK, "import ctranslate2\nprint(ctranslate2.__version__)",
                       CHECK], tmp_path, env=env, timeout=240)
    assert "4.8.5" in outputs_text(nb.cells[2])
    for data, imported in ((_json(nb.cells[1]), False), (_json(nb.cells[3]), True)):
        rows = [f for f in data["frameworks"] if f["name"] == "CTranslate2"]
        assert len(rows) == 1 and rows[0]["version"] == "4.8.5" and rows[0]["imported"] is imported
        assert rows[0]["verdict"] == "not-applicable" and rows[0]["cudnn_compiled"] is None
        assert "built without cuDNN" in rows[0]["detail"] and "4.6.3" in rows[0]["detail"]
        assert not [c for c in data["cudnn_installed"] + data["cudnn_loaded"] if "ctranslate2" in c["path"]]
        assert not [f for f in data["findings"] if "CTranslate2" in f["title"]]
        assert not [c for c in data["consumers"] if c["framework"] == "CTranslate2"]
