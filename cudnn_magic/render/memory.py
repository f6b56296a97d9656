"""Text and HTML for GPU memory snapshots (pure: standard library only).

The only place bytes become "GiB"/"MiB". The history sparkline is an inline SVG of used
bytes over time with the peak marked.
"""

from __future__ import annotations

import html
import time
from collections.abc import Sequence

from ..model import GpuMemory, MemorySnapshot

__all__ = [
    "fmt_bytes",
    "gpu_title",
    "row_detail_html",
    "row_label_html",
    "snapshot_html",
    "snapshot_summary_html",
    "snapshot_summary_text",
    "snapshot_text",
    "sparkline_svg",
]

_KiB = 1024
_MiB = 1024**2
_GiB = 1024**3


def fmt_bytes(n: int | None) -> str:
    """Bytes in binary units: ``"1.5 GiB"``, ``"512 MiB"``, ``"N/A"`` for None."""
    if n is None:
        return "N/A"
    n = int(n)
    if abs(n) >= _GiB:
        return f"{n / _GiB:.1f} GiB"
    if abs(n) >= _MiB:
        return f"{n / _MiB:.0f} MiB"
    if abs(n) >= _KiB:
        return f"{n / _KiB:.0f} KiB"
    return f"{n} B"


def _pct(used: int | None, total: int | None) -> str:
    if used is None or not total:
        return ""
    return f"{100.0 * used / total:.0f}%"


def gpu_title(g: GpuMemory) -> str:
    """``"0: NVIDIA H100 80GB HBM3"`` (visible index; MIG rows say so)."""
    idx = g.visible_index if g.visible_index is not None else g.index
    return f"{idx}: {g.name}"


def _others(g: GpuMemory) -> str:
    others = [p for p in g.processes if not p.this_kernel]
    if not others:
        return "none"
    known = [p.used_bytes for p in others if p.used_bytes is not None]
    total = fmt_bytes(sum(known)) if known else "N/A"
    return f"{len(others)} ({total})"


def _mine(g: GpuMemory) -> str:
    if g.this_kernel_bytes is None:
        if any(p.this_kernel for p in g.processes):
            return "N/A"
        return "-"
    return fmt_bytes(g.this_kernel_bytes)


def snapshot_text(s: MemorySnapshot) -> str:
    """A fixed-width table: one line per visible GPU (errors on their row), then the error."""
    if not s.gpus:
        return f"No GPU memory to show: {s.error}" if s.error else "No GPU visible."
    head = ("GPU", "Name", "Used / Total", "Use", "Free", "This kernel", "Other processes")
    rows: list[tuple[str, ...]] = []
    for g in s.gpus:
        idx = str(g.visible_index if g.visible_index is not None else g.index)
        if g.total_bytes is None and g.error:
            rows.append((idx, g.name, "error (below)", "", "", "", ""))
            continue
        rows.append((
            idx,
            g.name + (" (MIG)" if g.mig and "MIG" not in g.name else ""),
            f"{fmt_bytes(g.used_bytes)} / {fmt_bytes(g.total_bytes)}",
            _pct(g.used_bytes, g.total_bytes),
            fmt_bytes(g.free_bytes),
            _mine(g),
            _others(g),
        ))
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in [head, *rows]]
    for g in s.gpus:
        if g.error:
            number = g.visible_index if g.visible_index is not None else g.index
            lines.append(f"GPU {number} error: {g.error}")
    if s.error:
        lines.append(s.error)
    return "\n".join(lines)


def sparkline_svg(history: Sequence[tuple[float, int | None]], total_bytes: int | None,
                  width: int = 180, height: int = 36) -> str:
    """Inline SVG of used bytes over time; the peak is marked with a dot and its value.

    Args:
        history: ``(timestamp_seconds, used_bytes)`` pairs, oldest first; None values are gaps.
        total_bytes: the y-axis top (the GPU's total memory); the peak is used when None.
    """
    pts = [(t, u) for t, u in history if u is not None]
    if not pts:
        return f'<svg width="{width}" height="{height}" xmlns="http://www.w3.org/2000/svg"></svg>'
    t0, t1 = pts[0][0], pts[-1][0]
    span = (t1 - t0) or 1.0
    peak_t, peak = max(pts, key=lambda p: p[1])
    top = total_bytes or peak or 1
    pad = 2

    def xy(t: float, u: int) -> tuple[float, float]:
        x = pad + (width - 2 * pad) * ((t - t0) / span if len(pts) > 1 else 1.0)
        y = height - pad - (height - 2 * pad) * (u / top)
        return round(x, 1), round(y, 1)

    coords = [xy(t, u) for t, u in pts]
    line = " ".join(f"{x},{y}" for x, y in coords)
    px, py = xy(peak_t, peak)
    area = f"{coords[0][0]},{height - pad} {line} {coords[-1][0]},{height - pad}"
    label = html.escape(f"peak {fmt_bytes(peak)}")
    anchor = "end" if px > width / 2 else "start"
    ty = py + 10 if py < 10 else py - 3
    return (
        f'<svg width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'xmlns="http://www.w3.org/2000/svg" role="img" aria-label="used memory history, {label}">'
        f'<rect x="0" y="0" width="{width}" height="{height}" fill="#f6f8fa" stroke="#d0d7de"/>'
        f'<polygon points="{area}" fill="#76b900" fill-opacity="0.25"/>'
        f'<polyline points="{line}" fill="none" stroke="#3d7a00" stroke-width="1.5"/>'
        f'<circle cx="{px}" cy="{py}" r="2.5" fill="#d1242f"><title>{label}</title></circle>'
        f'<text x="{px}" y="{ty}" font-size="9" text-anchor="{anchor}" fill="#d1242f">{label}</text>'
        f"</svg>"
    )


def row_label_html(g: GpuMemory) -> str:
    """The row's first line: GPU index and name, and the used/total figures."""
    title = html.escape(gpu_title(g))
    if g.total_bytes is None:
        return f"<b>{title}</b>"
    return (f"<b>{title}</b> &nbsp; {html.escape(fmt_bytes(g.used_bytes))} / {html.escape(fmt_bytes(g.total_bytes))}"
            f" ({_pct(g.used_bytes, g.total_bytes)})")


def row_detail_html(g: GpuMemory | None, error: str | None = None) -> str:
    """Free memory, this kernel's share (with its source), other processes; or the error in red."""
    err = error or (g.error if g is not None else None)
    parts: list[str] = []
    if g is not None and g.total_bytes is not None:
        mine = _mine(g)
        src = f' title="{html.escape(g.this_kernel_source)}"' if g.this_kernel_source else ""
        parts.append(f"free {html.escape(fmt_bytes(g.free_bytes))}")
        parts.append(f"<span{src}>this kernel {html.escape(mine)}</span>")
        parts.append(f"other processes {html.escape(_others(g))}")
    text = " &middot; ".join(parts)
    if err:
        text += (" " if text else "") + f'<span style="color:#d1242f">error: {html.escape(err)}</span>'
    return text


def snapshot_html(s: MemorySnapshot) -> str:
    """A static HTML table of a snapshot (for ``_repr_html_``)."""
    if not s.gpus:
        msg = f"No GPU memory to show: {s.error}" if s.error else "No GPU visible."
        return f"<div>{html.escape(msg)}</div>"
    head = "".join(f"<th style='text-align:left'>{h}</th>" for h in
                   ("GPU", "Name", "Used / Total", "Free", "This kernel", "Other processes", ""))
    body = []
    for g in s.gpus:
        idx = g.visible_index if g.visible_index is not None else g.index
        cells = [
            str(idx), html.escape(g.name),
            f"{html.escape(fmt_bytes(g.used_bytes))} / {html.escape(fmt_bytes(g.total_bytes))} {_pct(g.used_bytes, g.total_bytes)}",
            html.escape(fmt_bytes(g.free_bytes)), html.escape(_mine(g)), html.escape(_others(g)),
            f"<span style='color:#d1242f'>{html.escape(g.error)}</span>" if g.error else "",
        ]
        body.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    tail = f"<div style='color:#d1242f'>{html.escape(s.error)}</div>" if s.error else ""
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>{tail}"


def _summary_lines(s: MemorySnapshot) -> list[str]:
    out = []
    for g in s.gpus:
        idx = g.visible_index if g.visible_index is not None else g.index
        if g.total_bytes is None and g.error:
            out.append(f"GPU {idx} {g.name}: {g.error}")
            continue
        pct = _pct(g.used_bytes, g.total_bytes)
        out.append(f"GPU {idx} {g.name}: {fmt_bytes(g.used_bytes)} of {fmt_bytes(g.total_bytes)} used"
                   f"{f' ({pct})' if pct else ''}, {fmt_bytes(g.free_bytes)} free; this kernel {_mine(g)}; "
                   f"other processes {_others(g)}")
    return out


def snapshot_summary_text(s: MemorySnapshot, interval_s: float) -> str:
    """The first sample of ``%gpu_memory``'s live panel, one line per GPU, with its local time
    (``s.timestamp``, seconds since the epoch) and how often the panel (``interval_s`` seconds)
    updates. What every export and front end without a widget manager keeps of the panel."""
    when = time.strftime("%H:%M:%S", time.localtime(s.timestamp)) if s.timestamp else "start"
    head = (f"GPU memory at {when} (the live panel below updates every {interval_s:g} s where Jupyter's "
            f"widget manager runs):")
    if not s.gpus:
        return head + "\n  " + (f"No GPU memory to show: {s.error}" if s.error else "No GPU visible.")
    return "\n".join([head, *("  " + line for line in _summary_lines(s))])


def snapshot_summary_html(s: MemorySnapshot, interval_s: float) -> str:
    """:func:`snapshot_summary_text` as HTML (every value escaped)."""
    head, *lines = snapshot_summary_text(s, interval_s).splitlines()
    items = "".join(f"<li>{html.escape(x.strip())}</li>" for x in lines)
    return f"<div class='cm-memory-summary'>{html.escape(head)}<ul style='margin:2px 0'>{items}</ul></div>"
