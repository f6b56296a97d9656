"""Render a manifest comparison (:func:`cudnn_magic.engines.manifest.compare`) as text or HTML, and
:class:`DriftView`, which displays one in a notebook or terminal IPython. Pure.

Every value in a drift row may come from the manifest file, which anyone may have written: each
row and the source path are shown through :func:`cudnn_magic.util.safetext.safe_text` (terminal
escapes, C1 controls, bidirectional overrides and newlines become U+FFFD, so a value can neither
drive the terminal nor forge a row), and HTML-escaped in HTML."""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping
from typing import Any

from ..model.prevention import Drift
from ..util.safetext import safe_text
from .paths import terminal_width, wrap


def _line(value: object) -> str:
    """``str(value)`` as one display-safe line."""
    return safe_text(str(value), keep_newlines=False)


_COPY = "cuDNN copy "


def _value(field: str, v: object) -> str:
    """A drift value for text: ``absent`` for None; a SHA-256 as its first 12 hex digits (whole
    in ``--json``)."""
    if v is None:
        return "absent"
    text = _line(v)
    return text[:12] + "\u2026" if field == "sha256" and len(text) == 64 else text


def _grouped(rows: list[Drift]) -> list[tuple[str, list[str], str]]:
    """``(what, [what changed], rules now)`` per entry: the library files of one folder as one
    entry (files that changed alike on one line: "libcudnn.so.9, libcudnn_graph.so.9: absent ->
    9.12.0"), every other row its own. Display-safe."""
    order: list[Any] = []
    folders: dict[tuple[str, str], dict[str, list[Drift]]] = {}
    for d in rows:
        path = d.what[len(_COPY):] if d.what.startswith(_COPY) else ""
        if "/" not in path:
            order.append(d)
            continue
        folder, name = path.rsplit("/", 1)
        key = (folder, d.now)
        if key not in folders:
            folders[key] = {}
            order.append(key)
        folders[key].setdefault(name, []).append(d)
    out: list[tuple[str, list[str], str]] = []
    for item in order:
        if isinstance(item, Drift):
            f = "" if item.field in ("", "present") else f" {item.field}"
            out.append((f"{_line(item.what)}{f}: {_value(item.field, item.old)} -> {_value(item.field, item.new)}",
                        [], _line(item.now)))
            continue
        alike: dict[str, list[str]] = {}
        for name, ds in folders[item].items():
            change = "; ".join(("" if d.field in ("", "present") else f"{d.field} ")
                               + f"{_value(d.field, d.old)} -> {_value(d.field, d.new)}" for d in ds)
            alike.setdefault(change, []).append(_line(name))
        what = f"cuDNN folder {_line(item[0])}"
        if len(alike) == 1:
            change, names = next(iter(alike.items()))
            files = f" ({len(names)} files: {', '.join(names)})" if len(names) > 1 else f", {names[0]}"
            out.append((f"{what}{files}: {change}", [], _line(item[1])))
        else:
            out.append((what + ":", [f"{', '.join(names)}: {change}" for change, names in alike.items()],
                        _line(item[1])))
    return out


def drift_text(drift: Iterable[Drift], source: str, live: Mapping[str, Any] | None = None,
               width: int | None = None) -> str:
    """"No drift" or one entry per difference (the library files of one folder that changed
    alike as one): what, from, to, and on the next line what the rules say now, wrapped to
    ``width`` columns (default: ``COLUMNS``, the terminal's, else 100); display-safe (the module
    docstring)."""
    rows = list(drift)
    width = width or terminal_width()
    source = _line(source)
    if not rows:
        n = len((live or {}).get("cudnn", ())), len((live or {}).get("distributions", {}))
        text = (f"No drift from {source}: the driver, GPUs, {n[0]} cuDNN cop{'y' if n[0] == 1 else 'ies'} and "
                f"{n[1]} tracked distribution{'' if n[1] == 1 else 's'} are as verified.")
        return "\n".join(wrap(text, width, "", "  ")) + "\n"
    lines = wrap(f"Drift from {source} ({len(rows)} change{'' if len(rows) == 1 else 's'}):", width, "", "  ")
    for what, changes, now in _grouped(rows):
        lines += wrap(f"- {what}", width, "  ", "    ")
        for change in changes:
            lines += wrap(change, width, "    ", "      ")
        if now:
            lines += wrap(now, width, "    ", "      ")
    return "\n".join(lines) + "\n"


def drift_html(drift: Iterable[Drift], source: str) -> str:
    """The drift as an HTML fragment: every row display-safe, then HTML-escaped."""
    rows = list(drift)
    src = html.escape(_line(source))
    if not rows:
        return f"<div>No drift from <code>{src}</code>.</div>"
    items = "".join(f"<li>{html.escape(what)}" + "".join(f"<br>{html.escape(c)}" for c in changes)
                    + (f"<br><small>{html.escape(now)}</small>" if now else "") + "</li>"
                    for what, changes, now in _grouped(rows))
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
