"""``check --deep`` on the real cuDNN JIT wheels, in the demo's set-up (the 9.12 wheel's folder
first on ``LD_LIBRARY_PATH``, this environment's own 9.27 wheel beside it).

Both JIT wheels ship the graph API only: no ``libcudnn_ops``/``_cnn``/``_adv``/
``_subquadratic_ops`` (their RECORD lists ``libcudnn.so.9``, ``libcudnn_graph.so.9`` and
``libcudnn_engines_runtime_compiled.so.9``). Under glibc's ``LD_DEBUG=libs`` both shims search
``libcudnn_ops.so.9.X.Y`` ... ``libcudnn_ops.so`` on a ``cudnnOpsVersionCheck`` call and find
none; 9.27 then returns ``CUDNN_STATUS_NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE`` (3009), 9.12 prints
"Unable to load any of {...}" and calls ``abort()`` (the same for ``cudnnCreateTensorDescriptor``:
no GPU is involved). The report said ERROR ``cudnn-sublibrary-load-failed`` with
``reinstall-cudnn`` for 9.12 (a reinstall brings the same files), and put the 9.27 fact under
"Could not read" as a paragraph repeating one sentence four times. Real CLI subprocesses, real
wheels."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.support import REPO, require_real_cudnn

pytestmark = pytest.mark.realwheels


@pytest.fixture(scope="module")
def dirs() -> tuple[Path, Path]:
    new = require_real_cudnn()
    from helpers.real_wheels import install_wheel

    old = install_wheel("nvidia-cudnn-jit-cu12", "9.12.0.46") / "nvidia" / "cudnn_jit" / "lib"
    return old, new


def _check(old: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}
    env.update(PYTHONPATH=str(REPO), LD_LIBRARY_PATH=str(old), COLUMNS="100")
    return subprocess.run([sys.executable, "-m", "cudnn_magic", "check", "--deep", *args], capture_output=True,
                          text=True, env=env, cwd=REPO, timeout=300)


def test_the_older_jit_wheel_that_aborts_is_a_warning_without_reinstall(dirs):
    old, _ = dirs
    rep = json.loads(_check(old, "--json").stdout)
    mine = [f for f in rep["findings"] if f["id"] == "cudnn-sublibrary-load-failed" and str(old) in f["title"]]
    assert len(mine) == 1, rep["findings"]
    f = mine[0]
    assert f["severity"] == "warning", f
    assert not any(x["id"] == "reinstall-cudnn" for x in f["fixes"]), f
    assert "Unable to load any of {libcudnn_ops.so.9.12.0" in f["detail"] and "SIGABRT" in f["detail"], f
    assert "ships the graph API only" in f["detail"], f
    assert not any(x["severity"] == "error" for x in rep["findings"]), rep["findings"]
    # the shadowing is still said, by its own finding
    assert any(x["id"] == "cudnn-shadowed" for x in rep["findings"])


def test_the_sub_libraries_a_jit_wheel_lacks_are_one_sentence_with_the_copies(dirs):
    old, new = dirs
    rep = json.loads(_check(old, "--json").stdout)
    ours = [n for n in rep["copy_notes"] if n.startswith(str(new / "libcudnn.so.9"))]
    assert len(ours) == 1, rep["copy_notes"]
    for lib in ("libcudnn_ops.so.9", "libcudnn_cnn.so.9", "libcudnn_adv.so.9", "libcudnn_subquadratic_ops.so.9"):
        assert ours[0].count(lib) == 1, ours
    assert "CUDNN_STATUS_NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE" in ours[0]
    assert not any("not shipped" in n for n in rep["notes"]), rep["notes"]

    text = _check(old).stdout
    flat = " ".join(text.split())
    assert flat.count("the graph API works") == 1, text
    copies = text.split("Other cuDNN copies on disk", 1)[1].split("\nCould not read", 1)[0]
    assert "the graph API works" in " ".join(copies.split()), text
    assert text.splitlines()[0].startswith("cudnn-magic check: ") and "error" not in text.splitlines()[0], text
