"""Text, HTML and JSON for the cuDNN consumers of a report (:attr:`Report.consumers`). Pure."""

from __future__ import annotations

import os
from typing import Any

from ..model import ConsumerLibrary, Report

__all__ = ["consumers_html", "consumers_json", "consumers_text"]


def consumers_json(report: Report) -> list[dict[str, Any]]:
    """The ``consumers`` key of the check JSON: one object per consumer library."""
    return [
        {"path": c.path, "distribution": c.distribution, "framework": c.framework, "soname": c.soname, "how": c.how,
         "picked": c.picked, "picked_version": c.picked_version, "why": c.why, "vendored": c.vendored,
         "searched": list(c.searched),
         "sublibraries": [{"soname": s.soname, "path": s.path, "version": s.version, "why": s.why,
                           "required": s.required, "purpose": s.purpose} for s in c.sublibraries],
         "sublibrary_searched": list(c.sublibrary_searched), "blocked_by": list(c.blocked_by)}
        for c in report.consumers
    ]


def _v(v: str | None) -> str:
    return v or "?"


def _subs_line(c: ConsumerLibrary) -> str:
    if not c.sublibraries:
        return ""
    needed = [s for s in c.sublibraries if s.required]
    missing = [s.soname for s in needed if not s.path]
    found = [s for s in c.sublibraries if s.path]
    if missing:
        return "sub-libraries: MISSING " + ", ".join(missing)
    dirs = sorted({os.path.dirname(s.path or "") for s in found})
    vers = sorted({s.version for s in found if s.version})
    return f"sub-libraries: {len(found)} found in {', '.join(dirs)}" + (f" ({', '.join(vers)})" if vers else "")


def consumers_text(report: Report) -> list[str]:
    """Lines of the "cuDNN consumers" section (empty when there are none)."""
    if not report.consumers:
        return []
    out = ["", "cuDNN consumers (every native library of this environment that uses cuDNN)"]
    for c in report.consumers:
        who = c.framework or c.distribution
        out.append(f"  {who}: {os.path.basename(c.path) or '(framework)'} asks for {c.soname} ({c.how})")
        if c.blocked_by:
            out.append(f"    cannot load at all: it NEEDs {', '.join(c.blocked_by)}, which nothing installed provides "
                       "(its cuDNN is not what stops it)")
        elif c.picked:
            out.append(f"    -> {c.picked} cuDNN {_v(c.picked_version)} ({'vendored copy, ' if c.vendored else ''}{c.why})")
        else:
            out.append(f"    -> NOT FOUND ({c.why})")
        line = _subs_line(c)
        if line:
            out.append(f"    {line}")
    return out


def _e(s: object) -> str:
    import html  # here, not at import: ``cudnn-magic check --json`` never escapes

    return html.escape(str(s), quote=True)


def _path(p: str) -> str:
    """A path that breaks only after a ``/`` (as in the rest of the report)."""
    return "/<wbr>".join(_e(part) for part in str(p).split("/"))


def consumers_html(report: Report) -> str:
    """A collapsed "cuDNN consumers" table (empty string when there are none)."""
    if not report.consumers:
        return ""
    h = [(f"<details><summary>cuDNN consumers ({len(report.consumers)})</summary><table>"
          "<tr><th>consumer</th><th>asks for</th><th>loader picks</th><th>because</th><th>sub-libraries</th></tr>")]
    for c in report.consumers:
        pick = (f"<code>{_path(c.picked)}</code> <b>{_e(_v(c.picked_version))}</b>" + (" (vendored)" if c.vendored else "")
                if c.picked else "<b style='color:#cf222e'>NOT FOUND</b>")
        if c.blocked_by:
            pick = f"cannot load at all: NEEDs {_e(', '.join(c.blocked_by))}, which nothing installed provides"
        subs = "<br>".join(
            f"{_e(s.soname)}: " + (f"<code>{_path(s.path)}</code> {_e(_v(s.version))}" if s.path
                                   else f"<span style='color:{'#cf222e' if s.required else '#6e7781'}'>not found</span>")
            for s in c.sublibraries)
        h.append(f"<tr><td>{_e(c.framework or c.distribution)}<br><code>{_e(os.path.basename(c.path))}</code></td>"
                 f"<td>{_e(c.soname)}<br><span class='cm-muted'>{_e(c.how)}</span></td><td>{pick}</td>"
                 f"<td>{_e(c.why)}</td><td>{subs}</td></tr>")
    h.append("</table></details>")
    return "".join(h)
