"""Pure renderers for diagnoses: plain text, compact HTML, and docs/json.md's ``explain`` JSON.

Formatters are functions of their data returning one value (friendly-traceback's
``base_formatters`` contract). HTML is escaped with
:func:`html.escape`, needs no JavaScript (a ``<details>`` element holds the captured log slice),
and shows each fix's exact command.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..model.display import register
from ..model.report import Diagnoses, Diagnosis
from .paths import PathNames, names_html, quote_rows, terminal_width, wrap
from .report import action_html, command_lines, shortenable
from .where import fix_action, fix_title, restart_words

#: the log slice shown in the HTML toggle is cut to its last this-many characters
MAX_LOG_SLICE = 20_000


def diagnoses_json(diagnoses: Sequence[Diagnosis]) -> dict[str, Any]:
    """docs/json.md's ``explain`` JSON: ``{"diagnoses": [{"id", "title", "summary", "evidence",
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


def diagnoses_text(diagnoses: Sequence[Diagnosis], where: str = "kernel", width: int | None = None,
                   names: PathNames | None = None) -> str:
    """Plain text for terminals and logs, fitted to ``width`` columns (default: ``COLUMNS``, the
    terminal's, else 100); "" when there is nothing to say. Paths in the facts and the advice are
    written short (:class:`~cudnn_magic.render.paths.PathNames`: ``$VENV/...``, ``site-packages/...``,
    a folder given once named by its cuDNN release after that, a legend at the end); quoted log
    lines and commands stay as they are. ``where`` names what restarts after a fix: "kernel"
    (IPython) or "process" (the command line)."""
    if not diagnoses:
        return ""

    width = width or terminal_width()
    names = names or PathNames.here()
    lines: list[str] = []

    def say(text: str, indent: str, seen: set[str], hanging: str | None = None) -> None:
        lines.extend(wrap(names.prose(text, seen), width, indent, hanging))

    quoted: set[str] = set()  # evidence and fixes already shown: a later diagnosis refers to them
    fixed: set[str] = set()
    for n, d in enumerate(diagnoses):
        seen: set[str] = set()
        say((f"cudnn-magic: {d.title}" if n == 0 else f"Also possible: {d.title}") + f"  [{d.id}]", "", seen, "  ")
        if n == 0 and d.summary:
            say(d.summary, "  ", seen, "  ")
        evidence = d.evidence[: 6 if n == 0 else 2]
        if evidence and all(e in quoted for e in evidence):
            lines.append("  Evidence: the same lines as above.")
        elif evidence:
            lines.append("  Evidence:")
            for e in evidence:
                if e.startswith("fact:"):  # our own words: short paths, fitted
                    say(f"> {e}", "    ", seen, "      ")
                else:  # a quote of the log or the exception: as it was, cut to the width (whole in HTML/JSON)
                    lines.extend(quote_rows(e, width, "    > "))
        quoted.update(evidence)
        if d.versions and n == 0:
            lines.append("  Versions: " + ", ".join(f"{k}={v}" for k, v in d.versions.items()))
        shown_fixes = d.fixes[: None if n == 0 else 1]
        if shown_fixes and all(f.id in fixed for f in shown_fixes):
            ids = ", ".join(f"[{f.id}]" for f in shown_fixes)
            lines.append(f"  Fix: {ids}, above." if len(shown_fixes) == 1 else f"  Fixes: {ids}, above.")
            shown_fixes = ()
        fixed.update(f.id for f in shown_fixes)
        if shown_fixes:
            lines.append("  Fixes:" if n == 0 else "  Fix:")
            for f in shown_fixes:
                restart = f" ({words})" if (words := restart_words(f, where)) else ""
                say(f"- [{f.id}] {fix_title(f, where)}{restart}", "    ", seen, "        ")
                if shortenable(f.action):
                    say(fix_action(f, where), "        ", seen, "        ")
                else:  # a command is copied and run: whole, as it is
                    lines.extend(command_lines(f.action, "        ", width))
        lines.append("")
    legend = names.legend()
    if legend:
        lines.extend(wrap(f"Paths: {legend}.", width, "", "  "))
    return "\n".join(lines).rstrip() + "\n"


_STYLE = (
    "border-left:4px solid #d9822b;padding:6px 10px;margin:6px 0;font-family:sans-serif;"
    "font-size:13px;line-height:1.4"
)


def diagnoses_html(diagnoses: Sequence[Diagnosis], log_slice: str = "", where: str = "kernel",
                   names: PathNames | None = None) -> str:
    """Compact HTML (escaped) with the fix commands visible and the log slice in ``<details>``;
    advice written as prose is set as text (its backticked parts as code), commands and
    snippets as code."""
    if not diagnoses:
        return ""
    names = names or PathNames.here()
    import html  # here, not at import: ``cudnn-magic explain`` writes text (html.entities is 8 M instructions)

    e = html.escape
    parts = [f'<div class="cudnn-magic-diagnosis" style="{_STYLE}">']
    top, rest = diagnoses[0], diagnoses[1:]
    seen: set[str] = set()
    parts.append(f'<div class="cm-diag" data-id="{e(top.id)}"><b>{names_html(names.prose(top.title, seen))}</b> '
                 f'<code style="font-size:11px;color:#666">{e(top.id)}</code>')
    if top.summary:
        parts.append(f"<div>{names_html(names.prose(top.summary, seen))}</div>")
    if top.evidence:
        parts.append('<div style="margin-top:4px">Evidence:</div><pre style="margin:2px 0;white-space:pre-wrap">'
                     + "\n".join(e(names.prose(x, seen) if x.startswith("fact:") else x) for x in top.evidence[:6])
                     + "</pre>")
    if top.versions:
        parts.append("<div>Versions: " + ", ".join(f"{e(k)}={e(v)}" for k, v in top.versions.items()) + "</div>")
    if top.fixes:
        parts.append('<ul style="margin:2px 0 2px 18px;padding:0">')
        for f in top.fixes:
            restart = f" <i>({words})</i>" if (words := restart_words(f, where)) else ""
            action = names.prose(fix_action(f, where), seen) if shortenable(f.action) else f.action
            parts.append(f'<li data-fix="{e(f.id)}">{names_html(names.prose(fix_title(f, where), seen))}{restart} '
                         f'<code style="font-size:11px;color:#666">{e(f.id)}</code><br>'
                         f'{action_html(action).replace("$VENV", "<code>$VENV</code>")}</li>')
        parts.append("</ul>")
    legend = names.legend()
    if legend:
        parts.append(f"<div style='color:#666;font-size:11px'>Paths: {names_html(legend)}.</div>")
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
                action = fix_action(f, where) if shortenable(f.action) else f.action
                parts.append(f'<div data-fix="{e(f.id)}">{e(fix_title(f, where))}: {action_html(action)}</div>')
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
        import html  # here, not at import: as in diagnoses_html

        return f"<div class='cudnn-magic'>{html.escape(explained_text(ds))}</div>"
    return diagnoses_html(ds)


register(Diagnosis, diagnosis_text, diagnosis_html)
register(Diagnoses, explained_text, explained_html)
