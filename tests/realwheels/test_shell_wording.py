"""What a shell reads says what is true in a shell: the command line's ``check``, ``explain`` and
``fix``, and ``%cudnn_fix`` in IPython in a terminal. They said "for this kernel ... start the
kernel fresh (restart the program after)", "Undo: %cudnn_fix --undo ..." (magic syntax in a
shell) and printed "Run `... --yes` to apply." before the plan it belongs to. A kernel's views
keep the kernel's words. The README demo's state of real wheels (:mod:`shell_state`); the CLI and
IPython run as real child processes.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.real_wheels import REPO
from helpers.shell_state import cli, demo_shell, old_cudnn_dir

pytestmark = [pytest.mark.realwheels, pytest.mark.timeout(600)]

KERNEL_WORDS = ("this kernel", "the kernel fresh", "restart the kernel", "%cudnn_", "in a fresh kernel")
MISMATCH_LOG = ("Loaded runtime CuDNN library: 9.12.0 but source was compiled with: 9.27.0.  CuDNN library needs to "
                "have matching major version and equal or higher minor version.\n")


@pytest.fixture
def shell(tmp_path: Path) -> dict[str, str]:
    return demo_shell(tmp_path)


def _fix_lines(text: str) -> str:
    """The fix part of ``check`` or ``explain`` text: each fix and its action lines."""
    out, keep = [], False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith(("fix ", "- [", "Fixes:", "Fix:")):
            keep = True
        elif not line.startswith("        "):
            keep = False
        if keep:
            out.append(stripped)
    return "\n".join(out)


def test_check_and_explain_from_a_shell_speak_of_the_program(shell):
    env = dict(shell, LD_LIBRARY_PATH=str(old_cudnn_dir()))
    p = cli(env, "check")
    fixes = _fix_lines(p.stdout)
    assert "fix remove-shadowing-dir:" in fixes, p.stdout
    for words in KERNEL_WORDS:
        assert words not in fixes, (words, fixes)
    assert "start the program (or the kernel) fresh" in " ".join(fixes.split()), fixes
    # it says how to start again once: no "(restart the program after)" behind "start ... fresh"
    assert "(restart the program after)" not in fixes, fixes
    p = cli(env, "explain", "--facts", stdin=MISMATCH_LOG)
    fixes = _fix_lines(p.stdout)
    assert "[remove-shadowing-dir]" in fixes, p.stdout
    for words in KERNEL_WORDS:
        assert words not in fixes, (words, fixes)


def test_a_kernels_views_keep_the_kernels_words():
    """The same report rendered for a kernel (``where="kernel"``, the magics and annotations)."""
    from cudnn_magic.engines.check import run_check
    from cudnn_magic.render.report import report_html, report_text

    old = str(old_cudnn_dir())
    report = run_check(environ={"LD_LIBRARY_PATH": old})
    text = " ".join(report_text(report, where="kernel", width=200).split())
    assert "for this kernel (kernel.json \"env\" or the shell that starts Jupyter), then start the kernel fresh" \
        in text, text
    assert "then start the kernel fresh" in report_html(report, where="kernel")
    process = " ".join(report_text(report, where="process", width=200).split())
    assert "for this kernel" not in process and "where it is set (this shell" in process, process


def test_fix_from_a_shell_prints_the_clis_undo_command_and_it_works(shell, tmp_path):
    kj = tmp_path / "jp" / "kernels" / "demo" / "kernel.json"
    before = kj.read_bytes()
    p = cli(shell, "fix", "remove-shadowing-dir", "--kernel", "demo")
    assert p.returncode == 0 and "%cudnn_fix" not in p.stdout, p.stdout
    assert "Undo: cudnn-magic fix --undo remove-shadowing-dir" in p.stdout, p.stdout
    assert "inherited from the Jupyter server; the kernelspec gets this kernel's" not in p.stdout
    p = cli(shell, "fix", "remove-shadowing-dir", "--kernel", "demo", "--yes")
    assert p.returncode == 0 and "%cudnn_fix" not in p.stdout, p.stdout
    undo = next(line for line in p.stdout.splitlines() if line.strip().startswith("Undo: "))
    command = shlex.split(undo.strip()[len("Undo: "):].split(" (", 1)[0])
    assert command[:2] == ["cudnn-magic", "fix"], undo
    assert kj.read_bytes() != before
    p = cli(shell, *command[1:])  # exactly what it said to type
    assert p.returncode == 0, p.stdout + p.stderr
    assert kj.read_bytes() == before


def test_cudnn_fix_in_terminal_ipython_says_how_to_apply_after_the_plan(shell):
    lines = "%load_ext cudnn_magic\n%cudnn_fix remove-shadowing-dir --kernel demo\nexit\n"
    p = subprocess.run([sys.executable, "-m", "IPython", "--simple-prompt", "--no-banner", "--colors=NoColor"],
                       input=lines, capture_output=True, text=True, env=shell, timeout=300, cwd=str(REPO))
    out = p.stdout
    run = out.find("Run `%cudnn_fix remove-shadowing-dir --yes` to apply.")
    plan = out.find("remove-shadowing-dir: Take ")
    assert plan >= 0 and run > plan, out[-4000:] + p.stderr[-2000:]
    assert run > out.find("Undo: %cudnn_fix --undo remove-shadowing-dir"), out[-4000:]
