"""Render a manifest comparison (:func:`cudnn_magic.engines.manifest.compare`) as text or HTML, and
:class:`DriftView`, which displays one in a notebook or terminal IPython. Pure.

Every value in a drift row may come from the manifest file, which anyone may have written: each
row and the source path are shown through :func:`cudnn_magic.util.safetext.safe_text` (terminal
escapes, C1 controls, bidirectional overrides and newlines become U+FFFD, so a value can neither
drive the terminal nor forge a row), and HTML-escaped in HTML."""

from __future__ import annotations

import html
from typing import Any, Iterable, Mapping

from ..model.prevention import Drift
from ..util.safetext import safe_text


def _line(value: object) -> str:
    """``str(value)`` as one display-safe line."""
    return safe_text(str(value), keep_newlines=False)


def drift_text(drift: Iterable[Drift], source: str, live: Mapping[str, Any] | None = None) -> str:
    """"No drift" or one line per difference: what, from, to, and what the rules say now
    (display-safe: the module docstring)."""
    rows = list(drift)
    source = _line(source)
    if not rows:
        n = len((live or {}).get("cudnn", ())), len((live or {}).get("distributions", {}))
        return (f"No drift from {source}: the driver, GPUs, {n[0]} cuDNN cop{'y' if n[0] == 1 else 'ies'} and "
                f"{n[1]} tracked distribution{'' if n[1] == 1 else 's'} are as verified.\n")
    lines = [f"Drift from {source} ({len(rows)} change{'' if len(rows) == 1 else 's'}):"]
    lines += [f"  - {_line(d)}" for d in rows]
    return "\n".join(lines) + "\n"


def drift_html(drift: Iterable[Drift], source: str) -> str:
    """The drift as an HTML fragment: every row display-safe, then HTML-escaped."""
    rows = list(drift)
    src = html.escape(_line(source))
    if not rows:
        return f"<div>No drift from <code>{src}</code>.</div>"
    items = "".join(f"<li>{html.escape(_line(d))}</li>" for d in rows)
    return f"<div><b>Drift from <code>{src}</code>:</b><ul>{items}</ul></div>"


class DriftView:
    """Displays a manifest comparison (``%cudnn_check --against FILE``): ``.drift`` is the list
    of :class:`cudnn_magic.model.Drift` (empty: no drift), ``.source`` the manifest's path,
    ``.live`` the live manifest it was compared with."""

    def __init__(self, drift: list[Drift], source: str, live: Mapping[str, Any]) -> None:
        self.drift, self.source, self.live = drift, source, live

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return {"text/plain": drift_text(self.drift, self.source, self.live), "text/html": drift_html(self.drift, self.source)}

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(drift_text(self.drift, self.source, self.live).rstrip("\n"))

    def __repr__(self) -> str:  # print() and a plain repr show the text, as %cudnn_check's report does
        return drift_text(self.drift, self.source, self.live)

    __str__ = __repr__
