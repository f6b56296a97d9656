"""Widgets whose content reads everywhere, with or without a widget manager.

Where an output goes decides what a person sees:

* JupyterLab and the classic notebook draw a widget view (``application/vnd.jupyter.widget-view+json``).
* nbconvert's HTML draws an output as a widget view whenever the notebook's metadata holds that
  widget's saved state (``nbconvert/filters/widgetsdatatypefilter.py``), which ``--execute`` always
  saves (nbclient's ``store_widget_state``); the view needs the widget manager from the internet
  (unpkg.com), so offline that output is empty, and the ``text/html`` beside it is never used.
* A front end without a widget manager (VS Code before its renderer loads, nbviewer without state)
  drops the view and shows the ``text/html`` or ``text/plain`` of the same output.
* Terminal IPython and ``nbconvert --to markdown`` show ``text/plain`` or ``text/html``.

So what a person must read never lives only in a widget: :func:`display_with_controls` shows it
as an output of its own (``text/plain`` + ``text/html``, readable everywhere), then the widget,
which holds only what needs a live kernel (buttons, a live panel) and carries a one-line fallback
that says where its controls went (``%cudnn_fix ID --yes``, ``%gpu_memory`` again).
"""

from __future__ import annotations

import html as _html
from typing import Any

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


def display_with_controls(text: str, html: str, widget: Any = None, controls_text: str = "",
                          controls_html: str = "") -> None:
    """Display the content (``text``/``html``: one output every front end reads), then, when
    ``widget`` is given, the widget in an output of its own with ``controls_text`` /
    ``controls_html`` as its fallback (what front ends without a widget manager show instead of
    the controls)."""
    display({"text/plain": text, "text/html": html}, raw=True)
    if widget is not None:
        display(widget_bundle(widget, controls_text, controls_html or f"<div class='cm-muted'>{_html.escape(controls_text)}</div>"),
                raw=True)


__all__ = ["WIDGET_MIME", "display_with_controls", "widget_bundle"]
