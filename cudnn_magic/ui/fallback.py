"""Widgets that still read where there is no widget manager.

A widget's own ``_repr_mimebundle_`` gives ``text/plain`` as its Python repr
(``VBox(children=(HBox(...``) and the widget view; nbconvert's HTML without saved widget state,
VS Code without the widget manager and terminals show that repr. :func:`display_widget`
displays the widget view together with a ``text/plain`` and ``text/html`` fallback that say
what the widget shows (front ends with a widget manager render the widget and ignore them).
"""

from __future__ import annotations

import html as _html
from typing import Any, Sequence
from IPython.display import display

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


def widget_bundle(widget: Any, text: str, html: str) -> dict[str, Any]:
    """The display bundle: the widget view plus ``text/plain`` = ``text`` and ``text/html`` = ``html``."""
    bundle: dict[str, Any] = {}
    try:
        own = widget._repr_mimebundle_()
        if isinstance(own, tuple):
            own = own[0]
        if WIDGET_MIME in own:
            bundle[WIDGET_MIME] = own[WIDGET_MIME]
    except Exception:  # noqa: BLE001 - the fallback alone still reads
        pass
    bundle["text/plain"] = text
    bundle["text/html"] = html
    return bundle


def display_widget(widget: Any, text: str, html: str) -> None:
    """Display ``widget`` with its fallbacks (one output)."""
    display(widget_bundle(widget, text, html), raw=True)


def fixes_fallback(fixes: Sequence[Any]) -> tuple[str, str]:
    """Text and HTML standing in for a row of fix buttons: each fix's id and title, and the
    ``%cudnn_fix`` line that previews or applies it without the buttons."""
    seen: list[Any] = []
    for f in fixes:
        if f.id not in {x.id for x in seen}:
            seen.append(f)
    text = "Fix buttons (they need Jupyter's widget manager); the same from a cell:\n" + "\n".join(
        f"  %cudnn_fix {f.id}    # {f.title}" for f in seen)
    html = ("<div class='cudnn-fix-fallback'>Fix buttons (they need Jupyter's widget manager); the same from a cell:"
            "<ul>" + "".join(f"<li><code>%cudnn_fix {_html.escape(f.id)}</code> &mdash; {_html.escape(f.title)}</li>"
                             for f in seen) + "</ul></div>")
    return text, html


__all__ = ["WIDGET_MIME", "display_widget", "fixes_fallback", "widget_bundle"]
