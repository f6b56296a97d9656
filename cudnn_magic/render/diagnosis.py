"""Pure renderers for diagnoses: plain text, compact HTML, and DESIGN.md's ``explain`` JSON.

Formatters are functions of their data returning one value (friendly-traceback's
``base_formatters`` contract, shared/STYLE.md section 6). HTML is escaped with
:func:`html.escape`, needs no JavaScript (a ``<details>`` element holds the captured log slice),
and shows each fix's exact command.
"""

from __future__ import annotations

import html
from typing import Any, Sequence

from ..model.display import register
from ..model.report import Diagnoses, Diagnosis
from .report import action_html

#: the log slice shown in the HTML toggle is cut to its last this-many characters
MAX_LOG_SLICE = 20_000


def diagnoses_json(diagnoses: Sequence[Diagnosis]) -> dict[str, Any]:
    """DESIGN.md's ``explain`` JSON: ``{"diagnoses": [{"id", "title", "summary", "evidence",
    "versions", "fixes": [{"id", "title", "action", "restart_required", "applicable"}]}]}``,
    strongest first (keys may be added, never renamed)."""
    out = []
    for d in diagnoses:
        out.append({
            "id": d.id,
            "title": d.title,
            "summary": d.summary,
            "evidence": list(d.evidence),
            "versions": dict(d.versions),
            "fixes": [
                {"id": f.id, "title": f.title, "action": f.action,
                 "restart_required": bool(f.restart_required), "applicable": bool(f.applicable)}
                for f in d.fixes
            ],
        })
    return {"diagnoses": out}


_RESTART = {"kernel": "restart the kernel after", "process": "restart the program after"}


def diagnoses_text(diagnoses: Sequence[Diagnosis], where: str = "kernel") -> str:
    """Plain text for terminals and logs; "" when there is nothing to say. ``where`` names what
    restarts after a fix: "kernel" (IPython) or "process" (the command line)."""
    if not diagnoses:
        return ""
    restart_words = _RESTART.get(where, _RESTART["kernel"])
    lines: list[str] = []
    for n, d in enumerate(diagnoses):
        if n == 0:
            lines.append(f"cudnn-magic: {d.title}  [{d.id}]")
        else:
            lines.append(f"Also possible: {d.title}  [{d.id}]")
        if n == 0 and d.summary:
            lines.append(f"  {d.summary}")
        if d.evidence:
            lines.append("  Evidence:")
            lines.extend(f"    > {e}" for e in d.evidence[: 6 if n == 0 else 2])
        if d.versions and n == 0:
            lines.append("  Versions: " + ", ".join(f"{k}={v}" for k, v in d.versions.items()))
        if d.fixes:
            lines.append("  Fixes:" if n == 0 else "  Fix:")
            for f in d.fixes[: None if n == 0 else 1]:
                restart = f" ({restart_words})" if f.restart_required and f.id != "restart-kernel" else ""
                lines.append(f"    - [{f.id}] {f.title}{restart}")
                for a in f.action.splitlines():
                    lines.append(f"        {a}")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


_STYLE = (
    "border-left:4px solid #d9822b;padding:6px 10px;margin:6px 0;font-family:sans-serif;"
    "font-size:13px;line-height:1.4"
)


def diagnoses_html(diagnoses: Sequence[Diagnosis], log_slice: str = "", where: str = "kernel") -> str:
    """Compact HTML (escaped) with the fix commands visible and the log slice in ``<details>``;
    advice written as prose is set as text (its backticked parts as code), commands and
    snippets as code."""
    if not diagnoses:
        return ""
    restart_words = _RESTART.get(where, _RESTART["kernel"])
    e = html.escape
    parts = [f'<div class="cudnn-magic-diagnosis" style="{_STYLE}">']
    top, rest = diagnoses[0], diagnoses[1:]
    parts.append(f'<div class="cm-diag" data-id="{e(top.id)}"><b>{e(top.title)}</b> '
                 f'<code style="font-size:11px;color:#666">{e(top.id)}</code>')
    if top.summary:
        parts.append(f"<div>{e(top.summary)}</div>")
    if top.evidence:
        parts.append('<div style="margin-top:4px">Evidence:</div><pre style="margin:2px 0;white-space:pre-wrap">'
                     + "\n".join(e(x) for x in top.evidence[:6]) + "</pre>")
    if top.versions:
        parts.append("<div>Versions: " + ", ".join(f"{e(k)}={e(v)}" for k, v in top.versions.items()) + "</div>")
    if top.fixes:
        parts.append('<ul style="margin:2px 0 2px 18px;padding:0">')
        for f in top.fixes:
            restart = f" <i>({restart_words})</i>" if f.restart_required and f.id != "restart-kernel" else ""
            parts.append(f'<li data-fix="{e(f.id)}">{e(f.title)}{restart} '
                         f'<code style="font-size:11px;color:#666">{e(f.id)}</code><br>'
                         f'{action_html(f.action)}</li>')
        parts.append("</ul>")
    parts.append("</div>")
    if rest:
        # Weaker explanations stay one line each; their evidence and fixes fold away.
        parts.append("<details><summary>Also possible: "
                     + "; ".join(f"{e(d.title)} <code style='font-size:11px;color:#666'>{e(d.id)}</code>" for d in rest)
                     + "</summary>")
        for d in rest:
            parts.append(f'<div class="cm-diag" data-id="{e(d.id)}" style="margin:4px 0"><b>{e(d.title)}</b>')
            if d.summary:
                parts.append(f"<div>{e(d.summary)}</div>")
            for f in d.fixes[:2]:
                parts.append(f'<div data-fix="{e(f.id)}">{e(f.title)}: {action_html(f.action)}</div>')
            parts.append("</div>")
        parts.append("</details>")
    if log_slice:
        shown = log_slice[-MAX_LOG_SLICE:]
        cut = "" if len(shown) == len(log_slice) else f" (last {MAX_LOG_SLICE:,} characters)"
        parts.append(
            f"<details><summary>Captured native log of this cell{e(cut)}</summary>"
            f'<pre style="max-height:300px;overflow:auto;white-space:pre-wrap">{e(shown)}</pre></details>'
        )
    parts.append("</div>")
    return "".join(parts)


def diagnosis_text(d: Diagnosis) -> str:
    """One diagnosis as the annotation shows it, as text."""
    return diagnoses_text([d]).rstrip("\n")


def diagnosis_html(d: Diagnosis) -> str:
    """One diagnosis as the annotation shows it, as HTML."""
    return diagnoses_html([d])


def explained_text(ds: Diagnoses) -> str:
    """What ``cudnn_magic.explain()`` returned, as text: the diagnoses, or the list's message
    (why it is empty) when there are none."""
    if not ds:
        return ds.message or "cudnn-magic: nothing cuDNN-related found."
    return diagnoses_text(ds).rstrip("\n")


def explained_html(ds: Diagnoses) -> str:
    """:func:`explained_text` as HTML (the message escaped when there are no diagnoses)."""
    if not ds:
        return f"<div class='cudnn-magic'>{html.escape(explained_text(ds))}</div>"
    return diagnoses_html(ds)


register(Diagnosis, diagnosis_text, diagnosis_html)
register(Diagnoses, explained_text, explained_html)
