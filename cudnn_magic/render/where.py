"""A fix's words where they are read: in a kernel (the magics, the annotation) or in a shell (the
command line, IPython in a terminal). The engines word fixes for the kernel they usually run in
("for this kernel", "then start the kernel fresh"); a shell reads the same fix with the program it
starts in the kernel's place. ``where`` is the renderers' own context: "kernel" or "process"."""

from __future__ import annotations

from ..model import Fix

__all__ = ["fix_action", "fix_title", "restart_words", "undo_words"]

#: (kernel wording, shell wording) in fix titles and actions, replaced in this order
_SHELL_WORDS = (
    ('for this kernel (kernel.json "env" or the shell that starts Jupyter)',
     'where it is set (this shell, or the kernel.json "env" of a kernel that starts with it)'),
    ("on LD_LIBRARY_PATH for this kernel", "on LD_LIBRARY_PATH where the program starts"),
    ("where the kernel starts", "where the program starts"),
    ("or the shell that starts Jupyter", "or the shell that starts Jupyter or the program"),
    ("start the kernel fresh", "start the program (or the kernel) fresh"),
    ("in a fresh kernel", "in a fresh process"),
    ("restart the kernel", "restart the program"),
    ("Restart the kernel", "Restart the program"),
    ("this kernel", "this process"),
    ("%cudnn_check", "cudnn-magic check"),
    ("%cudnn_fix", "cudnn-magic fix"),
    ("%cudnn_explain", "cudnn-magic explain"),
)

_RESTART = {"kernel": "restart the kernel after", "process": "restart the program after"}


def _for(text: str, where: str) -> str:
    if where != "process":
        return text
    for kernel, shell in _SHELL_WORDS:
        text = text.replace(kernel, shell)
    return text


def fix_title(f: Fix, where: str) -> str:
    """The fix's title as read ``where`` ("kernel" or "process")."""
    return _for(f.title, where)


def fix_action(f: Fix, where: str) -> str:
    """The fix's action as read ``where``; a command (no kernel words in it) stays as it is."""
    return _for(f.action, where)


def restart_words(f: Fix, where: str) -> str:
    """What to restart after the fix ("restart the program after"), or "" when the fix needs no
    restart or its action already says how to start again ("then start the kernel fresh": a plain
    restart would not apply a kernelspec change)."""
    if not f.restart_required or f.id == "restart-kernel":
        return ""
    said = f.action.lower()
    if " fresh" in said or "restart the" in said:
        return ""
    return _RESTART.get(where, _RESTART["kernel"])


def undo_words(hint: str, where: str) -> str:
    """An undo hint (``%cudnn_fix --undo ID ...``) as the command to type ``where``: the CLI's
    ``cudnn-magic fix --undo ID`` in a shell."""
    if where == "process" and hint.startswith("%cudnn_fix "):
        return "cudnn-magic fix " + hint[len("%cudnn_fix "):]
    return hint
