"""``cudnn-magic fix`` from a shell acts on the state ``cudnn-magic check`` reports in the same
shell, and its JSON carries no environment variable it does not use.

The README's demo state, made of real wheels: this environment's own ``nvidia-cudnn-jit-cu12``
(the pip wheel scripts/bootstrap.sh installs) hidden by the real ``nvidia-cudnn-jit-cu12``
9.12.0.46 first on ``LD_LIBRARY_PATH``, either in this shell or in a kernelspec's ``env`` (the
demo's ``cudnn-magic-demo``). ``check`` then reports ``cudnn-shadowed`` with the fix
``remove-shadowing-dir``; the fix used to answer "no directory on LD_LIBRARY_PATH shadows a
different cuDNN" for the same state, and with ``--dir`` planned to edit another kernelspec than the
one named. Every command runs as a real child process of the CLI (``python -m cudnn_magic``);
jupyter_client finds the kernelspec through ``JUPYTER_PATH``.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.real_wheels import REPO
from helpers.shell_state import cli, demo_shell, old_cudnn_dir

pytestmark = [pytest.mark.realwheels, pytest.mark.timeout(600)]

FIX = "remove-shadowing-dir"
SECRETS = {"MY_SERVICE_API_TOKEN": "tok-7f3a9c1e-not-for-issues", "AWS_SECRET_ACCESS_KEY": "aws-5ecret-d0-not-paste"}


@pytest.fixture
def shell(tmp_path: Path) -> dict[str, str]:
    return demo_shell(tmp_path)


def _kernel_jsons(env: dict[str, str]) -> dict[str, bytes]:
    """Every kernelspec file jupyter_client finds in ``env``, by path, with its bytes."""
    code = ("import json, os; from jupyter_client.kernelspec import KernelSpecManager\n"
            "print(json.dumps(sorted(KernelSpecManager().find_kernel_specs().values())))")
    dirs = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                                     timeout=120, check=True).stdout)
    return {p: Path(p).read_bytes() for d in dirs if (p := os.path.join(d, "kernel.json")) and os.path.exists(p)}


def _shadowed(env: dict[str, str]) -> list[dict]:
    p = cli(env, "check", "--json")
    assert p.returncode in (0, 1), p.stderr[-2000:]
    return [f for f in json.loads(p.stdout)["findings"] if f["id"] == "cudnn-shadowed"]


def test_fix_from_a_shell_names_the_shells_own_line_and_the_kernelspec_that_carries_it(shell):
    old = str(old_cudnn_dir())
    before = _kernel_jsons(shell)
    for ld, line in ((old, "unset LD_LIBRARY_PATH"),
                     (f"/opt/nothing-here:{old}", "export LD_LIBRARY_PATH=/opt/nothing-here")):
        env = dict(shell, LD_LIBRARY_PATH=ld)
        found = _shadowed(env)  # what check says in this shell
        assert len(found) == 1 and [x["id"] for x in found[0]["fixes"]] == [FIX], found
        p = cli(env, "fix", FIX, "--json")
        assert p.returncode == 0, p.stderr[-2000:]
        plan = json.loads(p.stdout)
        assert plan["title"] == found[0]["fixes"][0]["title"] == f"Take {old} out of LD_LIBRARY_PATH", plan
        assert plan["applicable"] is False and plan["reason"].startswith("advice only"), plan
        assert not [s for s in plan["steps"] if s["kind"] == "kernelspec"], plan["steps"]
        assert plan["steps"][0]["snippet"] == line, plan["steps"]
        assert "this shell's LD_LIBRARY_PATH" in plan["steps"][0]["description"]
        assert any(s["snippet"] == f"cudnn-magic fix {FIX} --kernel demo" for s in plan["steps"]), plan["steps"]
        # the line does what it says: the same check in a shell that ran it has no such finding
        after = dict(env)
        words = shlex.split(line)
        if words[0] == "unset":
            after.pop("LD_LIBRARY_PATH")
        else:
            after["LD_LIBRARY_PATH"] = words[1].split("=", 1)[1]
        assert _shadowed(after) == []
        # --dir names the same folder: the same advice, still no kernelspec edit
        p = cli(env, "fix", FIX, "--dir", old, "--json")
        assert json.loads(p.stdout)["steps"][0]["snippet"] == line, p.stdout[-2000:]
        # --yes has nothing to run: the advice, exit 1, nothing written
        p = cli(env, "fix", FIX, "--yes")
        assert p.returncode == 1 and line in p.stdout, p.stdout + p.stderr
    assert _kernel_jsons(shell) == before


def test_fix_from_a_clean_shell_points_at_the_kernelspec(shell):
    assert _shadowed(shell) == []  # check here: nothing, this shell has no LD_LIBRARY_PATH
    p = cli(shell, "fix", FIX, "--json")
    plan = json.loads(p.stdout)
    assert p.returncode == 0 and plan["applicable"] is False, p.stdout + p.stderr
    assert "no directory on this shell's LD_LIBRARY_PATH shadows" in plan["reason"], plan["reason"]
    assert "kernelspec 'demo'" in plan["reason"], plan["reason"]
    assert [s["snippet"] for s in plan["steps"]] == [f"cudnn-magic fix {FIX} --kernel demo"], plan["steps"]


def test_fix_with_kernel_edits_that_kernelspec_and_clears_what_its_kernels_start_with(shell, tmp_path):
    old = str(old_cudnn_dir())
    kj = tmp_path / "jp" / "kernels" / "demo" / "kernel.json"
    original = kj.read_bytes()
    others = {p: b for p, b in _kernel_jsons(shell).items() if p != str(kj)}
    # what check says in the environment the kernel starts with
    kenv = dict(shell, LD_LIBRARY_PATH=old)
    assert len(_shadowed(kenv)) == 1
    p = cli(shell, "fix", FIX, "--kernel", "demo", "--json")
    plan = json.loads(p.stdout)
    assert p.returncode == 0 and plan["applicable"] is True, p.stdout + p.stderr
    assert plan["title"] == f"Take {old} out of LD_LIBRARY_PATH"
    step = next(s for s in plan["steps"] if s["kind"] == "kernelspec")
    assert step["path"] == str(kj), step
    assert any("checked before it is offered" in n for n in plan["notes"]), plan["notes"]
    p = cli(shell, "fix", FIX, "--kernel", "demo", "--yes")
    assert p.returncode == 0, p.stdout + p.stderr
    new_value = json.loads(kj.read_text())["env"]["LD_LIBRARY_PATH"]
    assert old not in new_value
    assert _shadowed(dict(shell, LD_LIBRARY_PATH=new_value)) == []
    assert {p: b for p, b in _kernel_jsons(shell).items() if p != str(kj)} == others
    p = cli(shell, "fix", FIX, "--undo")
    assert p.returncode == 0, p.stdout + p.stderr
    assert kj.read_bytes() == original


def test_an_unknown_kernelspec_is_a_one_line_usage_error(shell):
    p = cli(dict(shell, LD_LIBRARY_PATH=str(old_cudnn_dir())), "fix", FIX, "--kernel", "no-such-kernel")
    assert p.returncode == 2 and p.stdout == "", (p.returncode, p.stdout)
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert "no kernelspec named 'no-such-kernel'" in p.stderr and "demo" in p.stderr, p.stderr


def test_no_json_output_carries_an_environment_variable_it_does_not_use(shell):
    """A secret-looking variable of the shell never appears in any JSON the CLI prints (users
    paste these into issues); what a plan judged keeps only the variables it reads or changes."""
    env = dict(shell, LD_LIBRARY_PATH=str(old_cudnn_dir()), **SECRETS)
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], env=env)
    try:
        runs = [("fix", FIX, "--json"), ("fix", FIX, "--kernel", "demo", "--json"),
                ("fix", FIX, "--dir", str(old_cudnn_dir()), "--json"), ("fix", "allow-memory-growth", "--json"),
                ("fix", "restart-kernel", "--json"), ("check", "--json"), ("check", "--pid", str(sleeper.pid), "--json"),
                ("manifest",), ("crashes", "--json"), ("memory", "--json")]
        outputs = [(args, cli(env, *args)) for args in runs]
        outputs.append((("explain", "--json", "--facts"),
                        cli(env, "explain", "--json", "--facts", stdin="Could not create cudnn handle\n")))
    finally:
        sleeper.kill()
        sleeper.wait()
    for args, p in outputs:
        assert p.stdout.strip(), (args, p.returncode, p.stderr[-1000:])
        json.loads(p.stdout)
        for name, value in SECRETS.items():
            assert value not in p.stdout + p.stderr and name not in p.stdout, (args, name)
        assert '"HOME":' not in p.stdout and '"PATH":' not in p.stdout, args  # no dumped environment
    plan = json.loads(dict(outputs)[("fix", FIX, "--kernel", "demo", "--json")].stdout)
    assert plan["context"]["environ"] == {"LD_LIBRARY_PATH": str(old_cudnn_dir()), "PYTHONPATH": str(REPO)}, plan["context"]
