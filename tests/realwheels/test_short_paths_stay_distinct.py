"""A path written short still tells it apart from the others in the same text: two real cuDNN
wheel folders both end in ``nvidia/cudnn_jit/lib`` (the environment's own 9.27 and a 9.12 on
``LD_LIBRARY_PATH``), and "Take …/cudnn_jit/lib out of LD_LIBRARY_PATH ... the framework then
finds its own copy in …/cudnn_jit/lib" named both alike. ``%cudnn_explain`` with the live facts
names each folder by its cuDNN release, as the annotation does."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from cudnn_magic.render.paths import PathNames
from helpers.real_wheels import REPO
from helpers.shell_state import old_cudnn_dir
from helpers.support import require_real_cudnn

OLD = "/home/u/.cache/wheels/nvidia-cudnn-jit-cu12-9.12.0.46/nvidia/cudnn_jit/lib"
OWN = "/home/u/venv/lib/python3.11/site-packages/nvidia/cudnn_jit/lib"
SITE = "/home/u/venv/lib/python3.11/site-packages"


def _twice(names: PathNames, sentence: str) -> str:
    seen: set[str] = set()
    names.prose(f"{OLD}/libcudnn.so.9 hides {OWN}/libcudnn.so.9", seen)
    return names.prose(sentence, seen)


def test_the_short_form_keeps_the_parts_that_tell_two_folders_apart():
    said = _twice(PathNames(site=(SITE,)), f"Take {OLD} out; the framework then finds its own copy in {OWN}.")
    shorts = re.findall(r"…/\S+?(?= out|\.$)", said)
    assert len(shorts) == 2 and shorts[0] != shorts[1], said
    assert shorts[0] == "…/nvidia-cudnn-jit-cu12-9.12.0.46/nvidia/cudnn_jit/lib", said
    assert shorts[1] == "…/site-packages/nvidia/cudnn_jit/lib", said
    # alone, a path still gets its last two parts
    alone = PathNames()
    seen: set[str] = set()
    alone.prose(f"{OLD} first", seen)
    assert alone.prose(f"then {OLD} again", seen) == "then …/cudnn_jit/lib again"


def test_a_release_names_a_folder_only_when_one_folder_holds_it():
    two = {OLD: "9.12.0", OWN: "9.27.0"}
    said = _twice(PathNames(site=(SITE,), folders=two), f"Take {OLD} out; its own copy in {OWN}.")
    assert said == "Take the cuDNN 9.12 folder out; its own copy in the cuDNN 9.27 folder.", said
    same = {OLD: "9.12.0", OWN: "9.12.0"}  # two folders of one release: the release tells nothing
    said = _twice(PathNames(site=(SITE,), folders=same), f"Take {OLD} out; its own copy in {OWN}.")
    assert "cuDNN 9.12 folder" not in said and "…/nvidia-cudnn-jit-cu12-9.12.0.46/nvidia/cudnn_jit/lib" in said, said


@pytest.mark.realwheels
def test_cudnn_explain_names_the_two_folders_apart_with_and_without_facts():
    """Real wheels: a process whose LD_LIBRARY_PATH put the real cuDNN 9.12 first has it mapped
    (as the demo's kernel has), its own 9.27 wheel hidden; the error that state gives is
    explained with the live facts (as the annotation does) and without them."""
    require_real_cudnn()
    code = ("import ctypes; ctypes.CDLL('libcudnn.so.9')\n"
            "from cudnn_magic.engines.check import run_check\n"
            "from cudnn_magic.engines.diagnose import diagnose\n"
            "from cudnn_magic.shell.explain import Explanation\n"
            "r = run_check()\n"
            "d = diagnose(exception='', log='Loaded runtime CuDNN library: 9.12.0 but source was compiled with: "
            "9.27.0.\\n', report=r)\n"
            "print(repr(Explanation(d, report=r)), '=====', repr(Explanation(d)), sep='\\n')\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}
    env.update(LD_LIBRARY_PATH=str(old_cudnn_dir()), PYTHONPATH=str(REPO), COLUMNS="400")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300, cwd="/")
    with_facts, without = p.stdout.split("=====")
    title = "[remove-shadowing-dir] Take the cuDNN 9.12 folder out of LD_LIBRARY_PATH"
    assert title in with_facts and "its own copy in the cuDNN 9.27 folder" in with_facts, with_facts + p.stderr
    assert "[remove-shadowing-dir] Take …/nvidia-cudnn-jit-cu12-9.12.0.46/nvidia/cudnn_jit/lib out" in without, without
    assert "…/cudnn_jit/lib " not in without and "…/cudnn_jit/lib." not in without, without
