"""The fix registry's plans and results as text and HTML (registered for ``FixPlan`` and
``FixResult``: their ``.text()``/``.html()`` and notebook display come here)."""

from __future__ import annotations

import html as h
import os
import re
import shlex
from collections.abc import Mapping, Sequence

from ..model.display import register
from ..model.fixes import FixPlan, FixResult

__all__ = [
    "BUTTONS_NEED_WIDGETS",
    "fix_commands_html",
    "fix_commands_text",
    "plan_html",
    "plan_text",
    "result_html",
    "result_text",
]


def _why_not(x: FixPlan) -> str:
    if x.reason.startswith("advice only"):
        return "Advice only" + x.reason[len("advice only"):]
    return f"Cannot apply here: {x.reason}"


def plan_text(x: FixPlan) -> str:
    """A :class:`~cudnn_magic.model.fixes.FixPlan` as plain text (terminal, CLI, ``text/plain``)."""
    lines = [f"{x.fix_id}: {x.title}"]
    if not x.applicable:
        lines.append(f"  {_why_not(x)}")
    for i, s in enumerate(x.steps, 1):
        lines.append(f"  {i}. [{s.kind}] {s.description}")
        if s.argv:
            lines.append("       $ " + " ".join(shlex.quote(a) for a in s.argv))
        if s.kind == "set-env":
            lines += [f"       {k}={'<unset>' if v is None else v}" for k, v in s.env]
        if s.path:
            lines.append(f"       file: {s.path}")
        lines += ["       " + d for d in s.diff]
        if s.snippet and s.kind in ("call", "advice", "restart") and not s.argv:
            lines += ["       " + ln for ln in s.snippet.splitlines()]
    if x.restart_required:
        lines.append(f"  {_needs(x)}")
    for label, _ in x.choices:
        lines.append(f"  Choice: {label}")
    for n in x.notes:
        lines.append(f"  Note: {n}")
    if x.undo_hint:
        lines.append(f"  Undo: {x.undo_hint}")
    return "\n".join(lines)


def plan_html(x: FixPlan) -> str:
    """A :class:`~cudnn_magic.model.fixes.FixPlan` as HTML (every value escaped)."""
    out = [f"<div class='cudnn-fix-plan'><b>{h.escape(x.title)}</b> <code>{h.escape(x.fix_id)}</code>"]
    if not x.applicable:
        out.append(f"<div>{h.escape(_why_not(x))}</div>")
    out.append("<ol>")
    for s in x.steps:
        out.append(f"<li>{h.escape(s.description)}")
        if s.argv:
            out.append("<pre>$ " + h.escape(" ".join(shlex.quote(a) for a in s.argv)) + "</pre>")
        if s.kind == "set-env":
            out.append("<pre>" + h.escape("\n".join(f"{k}={'<unset>' if v is None else v}" for k, v in s.env))
                       + "</pre>")
        if s.path:
            out.append(f"<div>file: <code>{h.escape(s.path)}</code></div>")
        if s.diff:
            out.append("<pre>" + h.escape("\n".join(s.diff)) + "</pre>")
        if s.snippet and s.kind in ("call", "advice", "restart") and not s.argv:
            out.append("<pre>" + h.escape(s.snippet) + "</pre>")
        out.append("</li>")
    out.append("</ol>")
    if x.restart_required:
        out.append(f"<div><b>{h.escape(_needs(x))}</b></div>")
    for n in x.notes:
        out.append(f"<div><small>{h.escape(n)}</small></div>")
    if x.undo_hint:
        out.append(f"<div>Undo: {h.escape(x.undo_hint)}</div>")
    out.append("</div>")
    return "".join(out)


#: what applies a kernelspec edit ("Restart the kernel" reuses the old environment: a loop)
FRESH_START = ("Shut this kernel down and start it again (JupyterLab: Kernel > Shut Down Kernel, then select the "
               "kernel; Notebook: File > Close and Shut Down Notebook, then open it): a plain Restart reuses the "
               "environment the Jupyter server computed when this kernel first started.")


def _needs(x: FixPlan) -> str:
    if any(s.kind == "kernelspec" for s in x.steps):
        return "Takes effect when the kernel is started fresh from its kernelspec, not on a plain Restart."
    return "Needs a kernel restart to take effect."


def _then(x: FixResult) -> str:
    return FRESH_START if x.fresh_start else "Restart the kernel for it to take effect."


def result_text(x: FixResult) -> str:
    """A :class:`~cudnn_magic.model.fixes.FixResult` as plain text."""
    lines = [f"{x.fix_id}: {'done' if x.ok else 'FAILED'}"]
    lines += [f"  - {d}" for d in x.done]
    if x.error:
        lines.append(f"  Error: {x.error}")
    if x.restart_required and x.ok:
        lines.append(f"  {_then(x)}")
    if x.undo_hint:
        lines.append(f"  Undo: {x.undo_hint}")
    return "\n".join(lines)


def result_html(x: FixResult) -> str:
    """What a fix did, the error if any, and the undo command, as escaped HTML."""
    items = "".join(f"<li>{h.escape(d)}</li>" for d in x.done)
    out = [(f"<div class='cudnn-fix-result'><b>{'Done' if x.ok else 'Failed'}: {h.escape(x.fix_id)}</b>"
            f"<ul>{items}</ul>")]
    if x.error:
        out.append(f"<div>Error: {h.escape(x.error)}</div>")
    if x.ok and x.restart_required:
        out.append(f"<div><b>{h.escape(_then(x))}</b></div>")
    if x.undo_hint:
        out.append(f"<div>Undo: <code>{h.escape(x.undo_hint)}</code></div>")
    out.append("</div>")
    return "".join(out)


_PATH = re.compile(r"(?<![\w.])/(?:[^\s,;:()'\"]+/)*[^\s,;:()'\"]+")
_CUDNN_REQ = re.compile(r"\b(nvidia-cudnn(?:-jit)?-cu\d+)\s*((?:[<>=!~]=?\s*[0-9][0-9.*]*\s*,?\s*)+)")


def button_label(title: str, folders: Mapping[str, str] | None = None, limit: int = 60) -> str:
    """A fix's title in a few words for a button (a plain cut, "Take .../nvidia-cudnn-jit-cu1...",
    loses the part that tells two buttons apart): each absolute path becomes "the cuDNN X.Y folder"
    when ``folders`` (real folder -> cuDNN version of the copy there) knows it, else its last two
    parts; a cuDNN wheel requirement becomes "cuDNN X.Y or newer (name)" / "cuDNN X.Y.Z (name)".
    The whole title stays in the button's tooltip and the preview. Pure."""
    folders = folders or {}

    def path(m: re.Match[str]) -> str:
        p = m.group(0).rstrip("/")
        v = folders.get(os.path.realpath(p)) or folders.get(p)
        if v:
            return f"the cuDNN {'.'.join(v.split('.')[:2])} folder"
        parts = [x for x in p.split("/") if x]
        return "…/" + "/".join(parts[-2:]) if len(parts) > 2 else p

    def req(m: re.Match[str]) -> str:
        name, spec = m.group(1), m.group(2).replace(" ", "").rstrip(",")
        if "cuDNN" in m.string[:m.start()]:  # the title says the release already: the wheel's name is enough
            return name
        exact = re.search(r"==([0-9.]+)", spec)
        low = re.search(r">=([0-9.]+)", spec)
        if exact:
            return f"cuDNN {'.'.join(exact.group(1).split('.')[:3])} ({name})"
        if low:
            return f"cuDNN {'.'.join(low.group(1).split('.')[:2])} or newer ({name})"
        return f"{name}{spec}"

    text = _CUDNN_REQ.sub(req, _PATH.sub(path, title))
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


#: What a front end without Jupyter's widget manager shows in place of a row of fix buttons
#: (the widget's own fallback; the ``%cudnn_fix`` line is in the output above it).
BUTTONS_NEED_WIDGETS = ("(Fix buttons go here where Jupyter's widget manager runs; "
                        "the %cudnn_fix line above does the same from a cell.)")


def fix_commands_text(fix_ids: Sequence[str], buttons: bool = False) -> str:
    """One line saying how to preview and apply these fixes from a cell: ``%cudnn_fix ID``
    previews (what will run, which file changes), ``--yes`` applies. ``buttons``: the output
    below holds buttons that do the same. Empty for no ids. Pure."""
    ids = list(dict.fromkeys(fix_ids))
    if not ids:
        return ""
    first = ids[0]
    also = "" if len(ids) == 1 else f" (or {', '.join(ids[1:])})"
    tail = "; the buttons below do the same" if buttons else ""
    return f"Preview a fix from a cell: %cudnn_fix {first}{also}; add --yes to apply it{tail}."


def fix_commands_html(fix_ids: Sequence[str], buttons: bool = False) -> str:
    """:func:`fix_commands_text` as HTML (every id escaped)."""
    ids = list(dict.fromkeys(fix_ids))
    if not ids:
        return ""
    first = ids[0]
    also = "" if len(ids) == 1 else " (or " + ", ".join(f"<code>{h.escape(i)}</code>" for i in ids[1:]) + ")"
    tail = "; the buttons below do the same" if buttons else ""
    return (f"<div class='cm-fix-commands'>Preview a fix from a cell: <code>%cudnn_fix {h.escape(first)}</code>"
            f"{also}; add <code>--yes</code> to apply it{tail}.</div>")


register(FixPlan, plan_text, plan_html)
register(FixResult, result_text, result_html)
