"""The rule: a fix is offered as one to apply only when the project has checked that it
would change the finding. This walks every planner of the fix catalogue that the findings of the
real-wheel lane's scenarios offer, and holds each plan to the rule:

* applicable -> the change, really made (the kernelspec edited by ``cudnn-magic fix --yes``, then a
  real kernel started from it by jupyter_client; ``PYTHONPATH`` without the entry; a restart = a
  fresh process started the same way), no longer has the finding; a pip change carries the note of
  its own what-if (``fixes.verify.verify_pip``; the what-if itself is held against real installs in
  ``test_whatif_wheel_record.py``);
* not applicable because of that check -> the real change would indeed leave the finding.

Every fix id a scenario offers must be held by one of these or be in :data:`NOT_HERE` with the reason
(the closing note lists them). Scenarios (real wheels, fresh processes, nothing imported first):
TensorFlow 2.21.0 with its nvidia-cudnn-cu12 9.28.0.42 and the real nvidia-cudnn-jit-cu12 9.12.0.46 on
the kernelspec's ``LD_LIBRARY_PATH`` (once, and twice in two folders); torch 2.14.1 with an older
nvidia-cudnn-cu13 9.12.0.46 first on ``PYTHONPATH``; a venv beside torch 2.14.1 (its ``.pth`` adds
torch's site-packages after its own) whose own site-packages holds that older wheel, installed by its
pip; torch 2.14.1 as installed (no finding to fix).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.framework_envs import site_of, target, tf_site, torch_env
from helpers.real_wheels import REPO, install_wheel

pytestmark = [pytest.mark.realwheels, pytest.mark.timeout(1800)]

#: Fix ids that cannot be replayed on this machine, and why.
NOT_HERE = {
    "allow-memory-growth": "changes how a framework allocates GPU memory: needs a GPU",
    "free-gpu-memory": "needs GPU memory in use",
    "disable-cudnn-benchmark": "changes cuDNN's algorithm choice at run time: needs a GPU",
    "cudnn-fallback": "changes which kernels run: needs a GPU",
    "make-contiguous": "a code change in the user's model: needs a GPU run",
    "same-device": "a code change in the user's model",
    "check-shapes": "a code change in the user's model",
    "upgrade-driver": "installs a driver: needs root and a GPU",
    "one-venv-per-cuda": "advice: a new environment (nothing in this one changes)",
    "separate-kernels": "advice: a new environment (nothing in this one changes)",
}

WALK = r"""
import json, os, sys
from cudnn_magic import fixes
from cudnn_magic.engines.check import run_check
from cudnn_magic.fixes.environment import kernel_context
from cudnn_magic.model import to_plain
ctx = kernel_context({"kernel_name": "testk"}) or {}
rep = run_check(environ=ctx.get("environ"))
plans, seen = [], set()
for f in rep.findings:
    for x in f.fixes:
        if x.id in seen:
            continue
        seen.add(x.id)
        p = fixes.plan(x.id, rep, context=dict(ctx, in_kernel=True))
        plans.append({"finding": [f.id, f.title], "fix": x.id, "action": x.action, "plan": p.to_dict()})
for fid in fixes.FIXES:  # every other planner too, with no finding behind it
    if fid not in seen:
        p = fixes.plan(fid, rep, context=dict(ctx, in_kernel=True))
        plans.append({"finding": None, "fix": fid, "action": "", "plan": p.to_dict()})
print(json.dumps({"findings": [[f.id, f.title] for f in rep.findings], "plans": plans,
                  "catalogue": sorted(fixes.FIXES)}))
"""

IN_KERNEL = ("import json; from cudnn_magic.engines.check import run_check; "
             "print('RESULT' + json.dumps([[f.id, f.title] for f in run_check().findings]))")


def _old_dir() -> Path:
    return install_wheel("nvidia-cudnn-jit-cu12", "9.12.0.46") / "nvidia" / "cudnn_jit" / "lib"


def _shell(tmp: Path, pythonpath: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("LD_LIBRARY_PATH", "LD_PRELOAD", "PYTHONPATH", "XDG_STATE_HOME", "PYTEST_CURRENT_TEST")
           and not k.startswith("JUPYTER_")}
    (tmp / "home").mkdir(exist_ok=True)
    env.update(PYTHONPATH=pythonpath, HOME=str(tmp / "home"), JUPYTER_PATH=str(tmp / "jp"),
               JUPYTER_DATA_DIR=str(tmp / "data"), JUPYTER_RUNTIME_DIR=str(tmp / "data" / "runtime"),
               JUPYTER_CONFIG_DIR=str(tmp / "data" / "config"), IPYTHONDIR=str(tmp / "ipython"))
    return env


def _spec(tmp: Path, python: str, env: dict[str, str]) -> Path:
    kj = tmp / "jp" / "kernels" / "testk" / "kernel.json"
    kj.parent.mkdir(parents=True, exist_ok=True)
    kj.write_text(json.dumps({"argv": [python, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                              "display_name": "testk", "language": "python", "env": env}, indent=1) + "\n")
    return kj


def _walk(python: str, env: dict[str, str]) -> dict:
    p = subprocess.run([python, "-c", WALK], capture_output=True, text=True, env=env, timeout=900, cwd="/")
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout)


def _fresh(python: str, env: dict[str, str]) -> list[list[str]]:
    p = subprocess.run([python, "-m", "cudnn_magic", "check", "--json"], capture_output=True, text=True, env=env,
                       timeout=600, cwd="/")
    return [[f["id"], f["title"]] for f in json.loads(p.stdout)["findings"]]


def _kernel_findings(env: dict[str, str]) -> list[list[str]]:
    """Start a real kernel from the kernelspec 'testk' (jupyter_client, as a notebook server does)
    and run the check inside it."""
    code = (
        "import json, sys\n"
        "from jupyter_client.manager import start_new_kernel\n"
        "km, kc = start_new_kernel(kernel_name='testk', startup_timeout=120)\n"
        "out = []\n"
        "def hook(msg):\n"
        "    if msg['msg_type'] == 'stream': out.append(msg['content']['text'])\n"
        f"try:\n    kc.execute_interactive({IN_KERNEL!r}, output_hook=hook, timeout=300)\n"
        "finally:\n    kc.stop_channels(); km.shutdown_kernel(now=True)\n"
        "text = ''.join(out)\n"
        "print(text[text.index('RESULT') + 6:])\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600, cwd="/")
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def _held(findings: list[list[str]], fid: str, subject: str) -> bool:
    return any(i == fid and subject in t for i, t in findings)


def _hold_to_the_rule(walked: dict, replay: dict) -> dict[str, str]:
    """Check each plan against ``replay[fix id](plan) -> findings after the real change``; returns
    {fix id: how it was held}."""
    held: dict[str, str] = {}
    for item in walked["plans"]:
        fid, plan = item["fix"], item["plan"]
        if item["finding"] is None:  # no finding offers it here: applicable only with its check done
            if plan["applicable"] and fid in ("install-matching-cudnn", "remove-shadowing-dir"):
                assert any(n.startswith("checked before it is offered") for n in plan["notes"]), plan
            held[fid] = "walked, offered by no finding here: " + ("applicable" if plan["applicable"] else plan["reason"][:60])
            continue
        finding_id, title = item["finding"]
        subject = "TensorFlow" if "TensorFlow" in title else "PyTorch" if "PyTorch" in title else title
        if fid in replay:
            after = replay[fid](item)
            if plan["applicable"]:
                assert not _held(after, finding_id, subject), (fid, "offered, but the real change leaves", after)
                assert any(n.startswith("checked before it is offered") for n in plan["notes"]), plan
                held[fid] = "replayed: the finding is gone"
            else:
                assert plan["reason"], plan
                if any(w in plan["reason"] for w in ("checked", "fresh process", "restart changes nothing", "what-if")):
                    assert _held(after, finding_id, subject), (fid, "refused, but the change would clear it", after)
                held[fid] = f"replayed: not offered ({plan['reason'][:80]})"
        elif fid in ("install-matching-cudnn", "reinstall-cudnn", "install-cuda-build", "upgrade-consumer"):
            if plan["applicable"]:
                assert any("what-if of this command" in n for n in plan["notes"]), plan
            held[fid] = "pip: " + ("verified by its what-if" if plan["applicable"] else plan["reason"][:80])
        elif fid in NOT_HERE:
            held[fid] = "not here: " + NOT_HERE[fid]
        else:
            raise AssertionError(f"fix {fid} offered by {finding_id} is held by no check of the rule: {plan}")
    assert set(held) == set(walked["catalogue"]), "every planner of the catalogue is walked"
    return held


@pytest.mark.parametrize("twice", [False, True], ids=["one-old-folder", "two-old-folders"])
def test_tensorflow_with_an_old_copy_on_the_kernelspecs_library_path(tmp_path, twice):
    old = _old_dir()
    folders = [str(old)]
    if twice:
        copy = tmp_path / "second" / "lib"
        shutil.copytree(old, copy, symlinks=True)
        folders.append(str(copy))
    shell = _shell(tmp_path, f"{tf_site()}{os.pathsep}{REPO}")
    kj = _spec(tmp_path, sys.executable, {"LD_LIBRARY_PATH": ":".join(folders) + ":${LD_LIBRARY_PATH}"})
    start = dict(shell, LD_LIBRARY_PATH=":".join(folders))
    walked = _walk(sys.executable, shell)
    assert any(i == "cudnn-shadowed" for i, _ in walked["findings"]), walked["findings"]

    def kernelspec_fix(item):  # apply it for real, then start a real kernel from the edited spec
        if not item["plan"]["applicable"]:
            # what the plan would write, made by hand: the first folder out, the others kept
            _spec(tmp_path, sys.executable, {"LD_LIBRARY_PATH": ":".join(folders[1:]) + ":${LD_LIBRARY_PATH}"})
        else:
            p = subprocess.run([sys.executable, "-m", "cudnn_magic", "fix", "remove-shadowing-dir", "--kernel", "testk",
                                "--yes", "--json"], capture_output=True, text=True, env=shell, timeout=600, cwd="/")
            assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
            assert all(f not in json.loads(kj.read_text())["env"]["LD_LIBRARY_PATH"] for f in folders)
        return _kernel_findings(shell)

    held = _hold_to_the_rule(walked, {"remove-shadowing-dir": kernelspec_fix,
                                      "restart-kernel": lambda item: _fresh(sys.executable, start)})
    assert held["remove-shadowing-dir"].startswith("replayed: the finding is gone"), held
    # a restart alone (the same LD_LIBRARY_PATH again) never clears it
    assert held["restart-kernel"] != "replayed: the finding is gone", held


def test_tensorflow_fix_for_one_of_two_old_folders_is_refused_because_the_other_stays(tmp_path):
    old = _old_dir()
    copy = tmp_path / "second" / "lib"
    shutil.copytree(old, copy, symlinks=True)
    shell = _shell(tmp_path, f"{tf_site()}{os.pathsep}{REPO}")
    _spec(tmp_path, sys.executable, {"LD_LIBRARY_PATH": f"{old}:{copy}:${{LD_LIBRARY_PATH}}"})
    p = subprocess.run([sys.executable, "-m", "cudnn_magic", "fix", "remove-shadowing-dir", "--kernel", "testk",
                        "--dir", str(old), "--json"], capture_output=True, text=True, env=shell, timeout=600, cwd="/")
    plan = json.loads(p.stdout)
    assert plan["applicable"] is False
    assert "a fresh process started with the change still has the finding" in plan["reason"], plan["reason"]
    assert str(copy) in plan["reason"]
    # the truth: a real kernel started with only the named folder taken out still has it
    _spec(tmp_path, sys.executable, {"LD_LIBRARY_PATH": f"{copy}:${{LD_LIBRARY_PATH}}"})
    assert _held(_kernel_findings(shell), "cudnn-shadowed", "TensorFlow")


def test_torch_with_an_older_cudnn_first_on_pythonpath(tmp_path):
    py = str(torch_env())
    old = target("nvidia-cudnn-cu13", "9.12.0.46")
    shell = _shell(tmp_path, str(old))
    _spec(tmp_path, py, {})
    walked = _walk(py, shell)
    assert any(i == "cudnn-shadowed" and "sys.path entry" in t for i, t in walked["findings"]), walked["findings"]
    without = dict(shell, PYTHONPATH="")

    def sys_path_fix(item):
        assert str(old) in item["action"]
        return _fresh(py, without)

    held = _hold_to_the_rule(walked, {"remove-sys-path-dir": sys_path_fix,
                                      "restart-kernel": lambda item: _fresh(py, shell)})
    assert "remove-sys-path-dir" in held, held
    assert _fresh(py, without) and not _held(_fresh(py, without), "cudnn-shadowed", "PyTorch")
    offered = {i["fix"] for i in walked["plans"] if i["finding"] is not None}
    assert not offered & {"install-matching-cudnn", "import-order"}, offered  # they would change nothing here


def test_a_clean_torch_offers_nothing_to_apply(tmp_path):
    py = str(torch_env())
    shell = _shell(tmp_path, "")
    _spec(tmp_path, py, {})
    walked = _walk(py, shell)
    assert not walked["findings"] or all(i == "no-nvidia-driver" for i, _ in walked["findings"]), walked["findings"]
    held = _hold_to_the_rule(walked, {})
    # with nothing to fix, nothing that changes the environment is offered as applicable
    applicable = {p["fix"] for p in walked["plans"] if p["plan"]["applicable"]}
    assert not applicable & {"install-matching-cudnn", "remove-shadowing-dir", "reinstall-cudnn"}, applicable
    assert len(held) == len(walked["catalogue"])


def test_a_venvs_own_older_wheel_is_fixed_by_pip_not_by_taking_site_packages_off_sys_path(tmp_path):
    """The older cuDNN is a wheel in the environment's own site-packages (pip installed it there),
    first on sys.path, so torch preloads it. Taking site-packages off sys.path is no fix; the pip fix
    is, once its what-if shows it: it replaces that very wheel (pip sees the first copy of a name)."""
    torch_py = torch_env()
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True, timeout=300)
    py = str(venv / "bin" / "python")
    site = subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    Path(site, "zz_beside_torch.pth").write_text(f"{REPO}\n{site_of(torch_py)}\n")
    proc = subprocess.run([py, "-m", "pip", "install", "-q", "--no-deps", "nvidia-cudnn-cu13==9.12.0.46"],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-2000:]
    shell = _shell(tmp_path, "")
    _spec(tmp_path, py, {})
    walked = _walk(py, shell)
    assert any(i == "cudnn-version-mismatch" and "PyTorch" in t for i, t in walked["findings"]), walked["findings"]
    offered = {i["fix"] for i in walked["plans"] if i["finding"] is not None}
    assert "remove-sys-path-dir" not in offered and "install-matching-cudnn" in offered, offered

    def pip_fix(item):  # the plan, applied for real by the registry, then a fresh process
        p = subprocess.run([py, "-m", "cudnn_magic", "fix", "install-matching-cudnn", "--yes"], capture_output=True,
                           text=True, env=shell, timeout=900, cwd="/")
        assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
        return _fresh(py, shell)

    held = _hold_to_the_rule(walked, {"install-matching-cudnn": pip_fix})
    assert held["install-matching-cudnn"] == "replayed: the finding is gone", held
    plan = next(i["plan"] for i in walked["plans"] if i["fix"] == "install-matching-cudnn")
    assert any("what-if of this command" in n and "9.12.0.46 -> 9.24.0.43" in n for n in plan["notes"]), plan["notes"]
