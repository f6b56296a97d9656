"""A cluster check (:class:`~cudnn_magic.model.cluster.ClusterReport`) as a text table and as
HTML, in the style of the single-machine report (:mod:`cudnn_magic.render.report`)."""

from __future__ import annotations

import html

from ..model.cluster import ClusterReport
from ..model.display import register
from .report import _CSS, _SEV_COLOR, _badge, _table

__all__ = ["cluster_html", "cluster_text"]


def _esc(s: object) -> str:
    return html.escape(str(s), quote=True)


def cluster_text(self: ClusterReport) -> str:
    """Plain text: the table (differing values marked ``*``), who did not answer and why,
    and the findings per worker."""
    unit = self.unit
    out = [self.summary_line(), ""]
    if not self.workers:
        out.append("The scheduler has no workers." if unit == "worker" else "The cluster has no alive nodes.")
        return "\n".join(out)
    diff = self.majority_diff()
    cols = self.columns()
    header = [unit, "node id" if unit == "node" else "name", "host", "status"] + [label for _k, label in cols]
    rows = []
    for w in self.workers:
        name = str(w.name or "")
        r = [w.address + (" (head)" if w.address == self.reference else ""), name[:12] if unit == "node" else name,
             w.host, w.status]
        for key, _label in cols:
            v = w.cell(key)
            if w.address in diff.get(key, {}).get("differs", {}):
                v = "*" + v
            r.append(v)
        rows.append(r)
    out.append(_table(rows, header))
    if diff:
        out.append(f"* differs from the majority of the {unit}s that answered"
                   + (" (with no majority: from the head node)" if any(d.get("reference") == "head node"
                                                                       for d in diff.values()) else ""))
        out.append("")
        out.append("Differences")
        labels = dict(cols)
        for key, d in diff.items():
            maj = d["majority"] if d["majority"] is not None else "(no majority)"
            out.append(f"  {labels.get(key, key)}: {'head node' if d.get('reference') == 'head node' else 'majority'} {maj}")
            for a, v in d["differs"].items():
                out.append(f"    {a}: {v}")
    if self.failed:
        out.append("")
        out.append(f"{unit.capitalize()}s that did not answer")
        for w in self.failed:
            out.append(f"  {w.address} [{w.status.upper()}] {w.reason}")
    out.append("")
    out.append(f"Findings per {unit}")
    noted = self._noted_workers()
    for w, fs, note in noted:
        out.append(f"  {w.address} ({w.host})")
        for f in fs:
            out.append(f"    [{str(f.get('severity')).upper()}] {f.get('id')}: {f.get('title')}")
        if note:
            out.append(f"    [NOTE] {note}")
    if not noted:
        out.append("  none above severity info")
    out.append("")
    out.append(f"({self.elapsed_s:.1f} s; per-{unit} timeout {self.timeout_s:g} s)")
    return "\n".join(out)


def cluster_html(self: ClusterReport) -> str:
    """An HTML table (differing cells highlighted, failed workers in red with the reason)
    and the findings per worker; every value escaped with :func:`html.escape`."""
    e = _esc
    diff = self.majority_diff()
    cols = self.columns()
    h = [_CSS, '<div class="cm-report cm-cluster">',
         ("<style>.cm-cluster td.cm-diff{background:#fff1c2;font-weight:600}"
          ".cm-cluster tr.cm-failed td{color:#cf222e}</style>"),
         f"<div><b>{e(self.summary_line())}</b></div>"]
    unit = self.unit
    if not self.workers:
        h.append("<div class='cm-muted'>" + ("The scheduler has no workers." if unit == "worker"
                                             else "The cluster has no alive nodes.") + "</div></div>")
        return "".join(h)
    h.append(f"<table><tr><th>{unit}</th><th>host</th><th>status</th>"
             + "".join(f"<th>{e(label)}</th>" for _k, label in cols) + "</tr>")
    for w in self.workers:
        cls = "" if w.answered else " class='cm-failed'"
        name = f"<br><span class='cm-muted'>{e(w.name)}</span>" if w.name else ""
        status = e(w.status) + (f"<br><span>{e(w.reason)}</span>" if w.reason else "")
        cells = []
        for key, _label in cols:
            differs = w.address in diff.get(key, {}).get("differs", {})
            maj = diff.get(key, {}).get("majority")
            who = "head node" if diff.get(key, {}).get("reference") == "head node" else "majority"
            title = f" title='{who}: {e(maj)}'" if differs and maj is not None else ""
            klass = " class='cm-diff'" if differs else ""
            cells.append(f"<td{klass}{title}>{e(w.cell(key))}</td>")
        head = " (head)" if w.address == self.reference else ""
        h.append(f"<tr{cls}><td><code>{e(w.address)}</code>{head}{name}</td><td>{e(w.host)}</td>"
                 f"<td>{status}</td>{''.join(cells)}</tr>")
    h.append("</table>")
    if diff:
        h.append(f"<div class='cm-muted'>Highlighted: differs from the majority of the {unit}s that answered, or "
                 "with no majority from the head node (hover for the value compared with).</div>")
    h.append(f"<h4>Findings per {unit}</h4>")
    noted = self._noted_workers()
    for w, fs, note in noted:
        h.append(f"<div><code>{e(w.address)}</code> ({e(w.host)})</div>")
        for f in fs:
            sev = str(f.get("severity"))
            h.append(f"<div class='cm-finding' style='border-color:{_SEV_COLOR.get(sev, '#6e7781')}'>"
                     f"{_badge(sev, _SEV_COLOR.get(sev, '#6e7781'))} <b>{e(f.get('title'))}</b> "
                     f"<span class='cm-muted'>{e(f.get('id'))}</span><div>{e(f.get('detail'))}</div></div>")
        if note:
            h.append(f"<div class='cm-finding' style='border-color:#9a6700'>{e(note)}</div>")
    if not noted:
        h.append("<div class='cm-muted'>None above severity info.</div>")
    h.append(f"<div class='cm-muted'>{self.elapsed_s:.1f} s; per-{unit} timeout {self.timeout_s:g} s</div></div>")
    return "".join(h)


register(ClusterReport, cluster_text, cluster_html)
