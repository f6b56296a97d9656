"""Render a what-if (:class:`cudnn_magic.model.WhatIf`) as text, HTML or JSON. Pure.

Predicted findings are marked "predicted" and shown next to the present ones, with what
would change and a safer requirement when one was found.
"""

from __future__ import annotations

import dataclasses
import html
from typing import Any

from ..model import Finding
from ..model.prevention import WhatIf
from .paths import PathNames, terminal_width, wrap
from .report import command_lines, report_json, shortenable

_SEV_COLOR = {"error": "#cf222e", "warning": "#9a6700", "info": "#0969da"}


def _fix_lines(f: Finding, indent: str, names: PathNames, seen: set[str], width: int) -> list[str]:
    out: list[str] = []
    for x in f.fixes:
        if shortenable(x.action):
            out += wrap(names.prose(f"fix [{x.id}] {x.title}: {x.action}", seen), width, indent, indent + "  ")
        else:  # a command is copied and run: whole, on a line of its own
            out += wrap(names.prose(f"fix [{x.id}] {x.title}:", seen), width, indent, indent + "  ")
            out += command_lines(x.action, indent + "  ", width)
    return out


def whatif_text(result: WhatIf, fixes: bool = True, width: int | None = None) -> str:
    """Plain text: the requirement, what changes, predicted findings (new ones first, each marked),
    findings the install would resolve, the present ones, the safer requirement. Fitted to
    ``width`` columns (default: ``COLUMNS``, the terminal's, else 100), paths written short with a
    legend at the end (:class:`~cudnn_magic.render.paths.PathNames`); commands stay whole."""
    width = width or terminal_width()
    names = PathNames.for_copies((*result.present.cudnn_installed, *result.predicted.cudnn_installed))
    lines = [f"What-if: pip install {' '.join(result.requirements)}"]
    if result.changes:
        lines += wrap("Would change: " + "; ".join(str(c) for c in result.changes), width, "", "  ")
    else:
        lines.append("Would change: nothing (pip says every requirement is already satisfied)")
    fw_lines = []
    for fw in result.predicted.frameworks:
        if fw.verdict in ("ok", "mismatch"):
            before = next((p for p in result.present.frameworks if p.distribution == fw.distribution), None)
            state = "still satisfied" if fw.verdict == "ok" and before is not None and before.verdict == "ok" else (
                "satisfied" if fw.verdict == "ok" else "would NOT be satisfied")
            fw_lines.append(f"{fw.name} {fw.version} (built with cuDNN {fw.cudnn_compiled}, CUDA {fw.cuda_compiled or '?'}) "
                            f"{state}: it would load cuDNN {fw.cudnn_used or '?'}")
    if fw_lines:
        lines += wrap("Frameworks after the install: " + "; ".join(fw_lines), width, "", "  ")
    if result.introduced:
        lines.append("")
        lines.append(f"Predicted findings ({len(result.introduced)} new):")
        for f in result.introduced:
            seen: set[str] = set()
            lines += wrap(names.prose(f"[predicted {f.severity}] {f.id}: {f.title}", seen), width, "  ", "      ")
            lines += wrap(names.prose(f.detail, seen), width, "      ", "      ")
            if fixes:
                lines += _fix_lines(f, "      ", names, seen, width)
    else:
        lines.append("")
        lines.append("Predicted findings: none new.")
    kept = [f for f in result.predicted.findings if f not in result.introduced]
    for f in kept:
        lines += wrap(names.prose(f"[predicted {f.severity}, present now too] {f.id}: {f.title}"), width, "  ", "      ")
    for f in result.resolved:
        lines += wrap(names.prose(f"[resolved by the install] {f.id}: {f.title}"), width, "  ", "      ")
    if result.present.findings:
        lines.append("")
        lines.append("Present findings (same rules, this environment now):")
        for f in result.present.findings:
            lines += wrap(names.prose(f"[{f.severity}] {f.id}: {f.title}"), width, "  ", "      ")
    if result.safer:
        lines.append("")
        lines.append(f"Safer requirement: {result.safer}")
        lines += wrap(names.prose(f"({result.safer_why})"), width, "  ", "   ")
    elif result.introduces_error:
        lines.append("")
        lines += wrap(names.prose(f"Safer requirement: none ({result.safer_why}).") if result.safer_why else
                      "Safer requirement: none found that pip resolves and the rules accept.", width, "", "  ")
    for n in result.notes:
        lines += wrap(names.prose(f"Note: {n}"), width, "", "  ")
    legend = names.legend()
    if legend:
        lines += wrap(f"Paths: {legend}.", width, "", "  ")
    lines.append(f"pip took {result.pip_s:.2f} s, the rules {result.rules_s * 1000:.0f} ms.")
    return "\n".join(lines) + "\n"


def _e(s: object) -> str:
    return html.escape(str(s), quote=True)


def whatif_html(result: WhatIf) -> str:
    """HTML for notebooks (the same content as :func:`whatif_text`)."""
    parts = [f"<div class='cudnn-magic-whatif'><b>What-if:</b> <code>pip install {_e(' '.join(result.requirements))}</code><br>"]
    parts.append("<b>Would change:</b> " + (_e("; ".join(str(c) for c in result.changes)) or "nothing") + "<br>")

    def row(f: Finding, tag: str) -> str:
        col = _SEV_COLOR.get(f.severity, "#000")
        fx = "".join(f"<li><code>{_e(x.id)}</code> {_e(x.title)}: <code>{_e(x.action)}</code></li>" for x in f.fixes)
        return (f"<li><span style='color:{col}'>[{_e(tag)}]</span> <code>{_e(f.id)}</code>: {_e(f.title)}"
                f"<br><small>{_e(f.detail)}</small>" + (f"<ul>{fx}</ul>" if fx else "") + "</li>")

    parts.append("<b>Predicted findings:</b><ul>" + ("".join(row(f, f"predicted {f.severity}") for f in result.introduced)
                                                    or "<li>none new</li>") + "</ul>")
    if result.present.findings:
        parts.append("<b>Present findings:</b><ul>" + "".join(row(f, f.severity) for f in result.present.findings) + "</ul>")
    if result.safer:
        parts.append(f"<b>Safer requirement:</b> <code>{_e(result.safer)}</code> <small>({_e(result.safer_why)})</small><br>")
    elif result.introduces_error and result.safer_why:
        parts.append(f"<b>Safer requirement:</b> none <small>({_e(result.safer_why)})</small><br>")
    parts.append("".join(f"<small>Note: {_e(n)}</small><br>" for n in result.notes))
    parts.append("</div>")
    return "".join(parts)


def whatif_json(result: WhatIf) -> dict[str, Any]:
    """The JSON form (keys documented in docs/json.md)."""
    def fj(f: Finding) -> dict[str, Any]:
        return {"id": f.id, "severity": f.severity, "title": f.title, "detail": f.detail,
                "fixes": [dataclasses.asdict(x) for x in f.fixes]}

    pred = report_json(result.predicted)
    return {
        "requirements": list(result.requirements),
        "changes": [{"name": c.name, "from": c.old, "to": c.new} for c in result.changes],
        "present_findings": [fj(f) for f in result.present.findings],
        "predicted_findings": [dict(fj(f), predicted=True, new=(f in result.introduced)) for f in result.predicted.findings],
        "resolved_findings": [fj(f) for f in result.resolved],
        "predicted_frameworks": pred.get("frameworks", []),
        "predicted_wheels_overwritten": pred.get("wheels_overwritten", []),
        "safer_requirement": result.safer,
        "safer_why": result.safer_why or None,
        "error": result.error,
        "introduces_error": result.introduces_error,
        "notes": list(result.notes),
        "pip_s": round(result.pip_s, 3),
        "rules_s": round(result.rules_s, 4),
    }


class WhatIfView:
    """Displays a :class:`WhatIf` as HTML in notebooks and text elsewhere; ``.result`` is it."""

    def __init__(self, result: WhatIf) -> None:
        self.result = result

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return {"text/plain": whatif_text(self.result), "text/html": whatif_html(self.result)}

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(whatif_text(self.result).rstrip("\n"))

    def __repr__(self) -> str:  # print() and a plain repr show the text, as %cudnn_check's report does
        return whatif_text(self.result)

    __str__ = __repr__
