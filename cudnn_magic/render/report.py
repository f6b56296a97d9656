"""Render a :class:`~cudnn_magic.model.Report` as text, HTML or JSON. Pure functions.

The JSON follows DESIGN.md's ``check`` contract (keys may be added, never renamed).
"""

from __future__ import annotations

import re
from typing import Any

from ..model import CudnnInUse, Driver, LibraryCopy, Report, Unavailable, to_plain
from ..model.display import register
from ..rules.consumer_table import names as consumer_names
from .consumers import consumers_html, consumers_json, consumers_text

_VERDICT_COLOR = {"ok": "#1a7f37", "mismatch": "#cf222e", "unknown": "#9a6700", "not-applicable": "#6e7781"}
_SEV_COLOR = {"error": "#cf222e", "warning": "#9a6700", "info": "#0969da"}
#: How every view says a framework is a CPU build.
CPU_WORDS = "CPU build: no CUDA, no cuDNN"


def report_json(report: Report) -> dict[str, Any]:
    """The DESIGN.md ``check`` JSON: cudnn_loaded, cudnn_installed, frameworks, driver, gpus,
    findings (plus resolutions, notes, elapsed_s)."""
    drv: Any
    if isinstance(report.driver, Unavailable):
        drv = None
    elif isinstance(report.driver, Driver):
        drv = to_plain(report.driver)
    else:
        drv = None
    return {
        "cudnn_loaded": [
            {"path": c.path, "version": c.version, "owner": c.owner, "name": c.name, "main": c.is_main,
             "version_source": c.version_source, "error": c.error, "reached_version": c.reached_version,
             "bound_to": list(c.bound_to), "owner_evidence": c.owner_evidence, "load_order": c.load_order}
            for c in report.cudnn_loaded
        ],
        "cudnn_in_use": _in_use_json(report.cudnn_in_use),
        "cudnn_in_use_by_soname": [_in_use_json(u) for u in report.cudnn_in_use_by_soname],
        "cudnn_installed": [
            {"path": c.path, "version": c.version, "source": c.source, "owner": c.owner, "name": c.name,
             "main": c.is_main, "loaded": c.loaded, "version_source": c.version_source, "error": c.error,
             "owner_evidence": c.owner_evidence, "found_in": c.found_in}
            for c in report.cudnn_installed
        ],
        "wheels_overwritten": [
            {"directory": w.directory, "distributions": [{"name": n, "version": v} for n, v in w.distributions],
             "present": {"name": w.present[0], "version": w.present[1]} if w.present else None,
             "files": list(w.files), "evidence": list(w.evidence), "mixed": w.mixed,
             "bytes": list(w.sizes)}
            for w in report.wheels_overwritten
        ],
        "frameworks": [
            {"name": f.name, "version": f.version, "imported": f.imported, "cudnn_compiled": f.cudnn_compiled,
             "cuda_compiled": f.cuda_compiled, "verdict": f.verdict, "rule": f.rule, "distribution": f.distribution,
             "cudnn_used": f.cudnn_used, "cudnn_used_path": f.cudnn_used_path, "cudnn_compiled_source": f.cudnn_compiled_source,
             "detail": f.detail, "loading": f.loading, "cpu_build": f.cpu_build,
             "preloads": [{"path": p.path, "why": p.why, "sys_path_entry": p.sys_path_entry} for p in f.preloads]}
            for f in report.frameworks
        ],
        "driver": drv,
        "driver_unavailable": report.driver.reason if isinstance(report.driver, Unavailable) else None,
        "gpus": [to_plain(g) for g in report.gpus],
        "findings": [
            {"id": f.id, "severity": f.severity, "title": f.title, "detail": f.detail,
             "fixes": [{"id": x.id, "title": x.title, "action": x.action, "restart_required": x.restart_required,
                        "applicable": x.applicable} for x in f.fixes]}
            for f in report.findings
        ],
        "resolutions": [to_plain(r) for r in report.resolutions],
        "cuda_toolkits": [{"root": t.root, "version": t.version, "version_source": t.version_source, "via": list(t.via),
                           "nvcc": t.nvcc} for t in report.cuda_toolkits],
        "consumers": consumers_json(report),
        "notes": list(report.notes),
        "elapsed_s": round(report.elapsed_s, 4),
    }


def _toolkit_lines(report: Report) -> list[str]:
    """The CUDA toolkits, as context apart from the CUDA each framework runs."""
    if not report.cuda_toolkits:
        return []
    out = ["", "CUDA toolkit on this machine (context: for builds and nvcc; each framework runs the CUDA of its own "
               "build, in Frameworks above)"]
    for t in report.cuda_toolkits:
        out.append(f"  {t.version or '?'} at {t.root} ({'; '.join(t.via)})" + (f", nvcc {t.nvcc}" if t.nvcc else ""))
    return out


def toolkit_html(report: Report) -> str:
    """The CUDA toolkits as a short muted list (empty string when there are none)."""
    if not report.cuda_toolkits:
        return ""
    items = "".join(f"<li>{_e(t.version or '?')} at <code>{path_html(t.root)}</code> <span class='cm-muted'>"
                    f"({_e('; '.join(t.via))})</span></li>" for t in report.cuda_toolkits)
    return ("<h4>CUDA toolkit on this machine</h4><div class='cm-muted'>Context for builds and nvcc; each framework runs "
            f"the CUDA of its own build (Frameworks above).</div><ul>{items}</ul>")


def _in_use_json(u: CudnnInUse | None) -> dict[str, Any] | None:
    if u is None:
        return None
    return {"path": u.path, "version": u.version, "why": u.why, "soname": u.soname,
            "reached_version": u.reached_version, "sublibraries": list(u.sublibraries),
            "ld_library_path_entry": u.ld_library_path_entry}


def _ver(v: str | None) -> str:
    return v if v else "?"


def _ver_reached(c: LibraryCopy) -> str:
    """A row's own version, plus what its calls reach when that differs."""
    own = _ver(c.version)
    if c.reached_version and c.reached_version != c.version:
        return f"{own} (calls reach {c.reached_version})"
    return own


def in_use_line(report: Report) -> str:
    """One line: the cuDNN in use and why (or that none is mapped)."""
    u = report.cudnn_in_use
    if u is None:
        return "cuDNN in use: none mapped yet (no framework has loaded cuDNN in this process)"
    reach = (f"; its calls reach {u.reached_version}" if u.reached_version and u.reached_version != u.version else "")
    src = f" from LD_LIBRARY_PATH entry {u.ld_library_path_entry}" if u.ld_library_path_entry else ""
    return f"cuDNN in use: {_ver(u.version)} {u.path}{src}{reach}"


def _table(rows: list[list[str]], header: list[str]) -> str:
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
    line = lambda r: "  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip()  # noqa: E731
    return "\n".join([line(header), line(["-" * w for w in widths])] + [line(r) for r in rows])


def summary_line(report: Report) -> str:
    """One line: the mapped cuDNN and the worst verdict."""
    mains = [c for c in report.cudnn_loaded if c.is_main]
    subs = [c for c in report.cudnn_loaded if not c.is_main]
    loaded = ", ".join(f"{_ver(c.version)} ({c.path})" for c in mains) or (
        "no main library, but " + ", ".join(f"{c.name} {_ver(c.version)} ({c.path})" for c in subs[:2])
        + (" and more" if len(subs) > 2 else "") + " mapped (a later libcudnn.so reuses them)" if subs else "none mapped yet")
    errors = sum(1 for f in report.findings if f.severity == "error")
    warns = sum(1 for f in report.findings if f.severity == "warning")
    state = "OK" if not errors and not warns else f"{errors} error(s), {warns} warning(s)"
    return f"cuDNN in this process: {loaded} -- {state}"


_RESTART = {"kernel": "restart the kernel after", "process": "restart the program after"}


def _driver_missing(report: Report) -> bool:
    """NVML could not be loaded and the ``no-nvidia-driver`` finding says why (once)."""
    return isinstance(report.driver, Unavailable) and any(f.id == "no-nvidia-driver" for f in report.findings)


def _notes(report: Report) -> list[str]:
    """The notes, without one that only repeats the driver's reason (said in the finding)."""
    reason = report.driver.reason if isinstance(report.driver, Unavailable) else None
    return [n for n in report.notes if not (reason and reason in n)]


def report_text(report: Report, where: str = "kernel") -> str:
    """Plain text for terminals and logs. ``where`` names what restarts after a fix:
    "kernel" (IPython) or "process" (the command line)."""
    out = [summary_line(report), in_use_line(report)]
    if report.cudnn_in_use is not None:
        out.append(f"  why: {report.cudnn_in_use.why}")
    out.append("")
    out.append("cuDNN mapped in this process (each file's own version)")
    if report.cudnn_loaded:
        out.append(_table([[c.name, _ver_reached(c), c.owner, c.directory] for c in report.cudnn_loaded],
                          ["library", "version", "owner", "directory"]))
    else:
        out.append("  none (no framework has loaded cuDNN yet"
                   + ("; see below for what each would load)" if report.frameworks else ")"))
    out.append("")
    out.append("Frameworks")
    if report.frameworks:
        out.append(_table(
            [[f.name, f.version, "yes" if f.imported else "no", "CPU build" if f.cpu_build else _ver(f.cudnn_compiled),
              "none" if f.cpu_build else _ver(f.cuda_compiled), "none" if f.cpu_build else _ver(f.cudnn_used),
              "CPU BUILD" if f.cpu_build else f.verdict.upper()] for f in report.frameworks],
            ["framework", "version", "imported", "built with cuDNN", "CUDA", "cuDNN used", "verdict"]))
        for f in report.frameworks:
            if f.cpu_build:
                out.append(f"  {f.name}: {CPU_WORDS} ({f.cudnn_compiled_source or 'its build says so'})")
            if f.detail:
                out.append(f"  {f.name}: {f.detail}")
            if f.rule and f.verdict in ("mismatch", "ok"):
                out.append(f"    rule: {f.rule}")
    else:
        out.append(f"  none installed ({consumer_names()}, or any library that needs cuDNN)")
    out.append("")
    out.append("Driver and GPUs")
    if _driver_missing(report):
        out.append("  no NVIDIA driver on this machine (see Findings)")
    elif isinstance(report.driver, Unavailable):
        out.append(f"  {report.driver.reason}")
    elif report.driver is not None:
        out.append(f"  driver {report.driver.version}, CUDA driver API {report.driver.cuda_driver_version or '?'}")
    for g in report.gpus:
        cc = "%d.%d" % g.compute_capability if g.compute_capability else "?"
        mem = f"{_gib(g.used_bytes)}/{_gib(g.total_bytes)} used" if g.total_bytes else "memory ?"
        out.append(f"  GPU {g.index}: {g.name}, compute capability {cc}, {mem}" + (f" [{g.error}]" if g.error else ""))
    out += _toolkit_lines(report)
    out.append("")
    out.append("Findings")
    if report.findings:
        for f in report.findings:
            out.append(f"  [{f.severity.upper()}] {f.id}: {f.title}")
            out.append(f"      {f.detail}")
            for x in f.fixes:
                out.append(f"      fix {x.id}: {x.action}" + (f"  ({_RESTART.get(where, _RESTART['kernel'])})"
                                                                   if x.restart_required else ""))
    else:
        out.append("  none")
    others = [c for c in report.cudnn_installed if not c.loaded]
    out.append("")
    out.append("Other cuDNN copies on disk")
    mains = [c for c in others if c.is_main]
    subs = [c for c in others if not c.is_main]
    if mains:
        out.append(_table([[c.name, _ver(c.version), c.source, c.owner, c.directory] for c in mains],
                          ["library", "version", "found via", "owner", "directory"]))
    if subs:
        dirs = sorted({c.directory for c in subs})
        out.append(f"  {_count(len(subs), 'sub-library', 'sub-libraries')}"
                   + (" beside them" if mains and all(d in {m.directory for m in mains} for d in dirs)
                      else f" in {', '.join(dirs[:3])}" + (f" and {len(dirs) - 3} more" if len(dirs) > 3 else "")))
    if not others:
        out.append("  none")
    out += consumers_text(report)
    if report.resolutions:
        out.append("")
        out.append("What the dynamic loader picks")
        for r in report.resolutions:
            out.append(f"  {r.consumer}: {r.soname} -> {r.picked or 'NOT FOUND'} ({r.reason})"
                       + (f"; hides {', '.join(r.shadowed)}" if r.shadowed else ""))
    notes = _notes(report)
    if notes:
        out.append("")
        out.append("Could not read")
        out += [f"  {n}" for n in notes]
    out.append("")
    out.append(f"({report.elapsed_s * 1000:.0f} ms)")
    return "\n".join(out)


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _gib(n: int | None) -> str:
    if n is None:
        return "?"
    return f"{n / 2**30:.1f} GiB"


def _e(s: object) -> str:
    import html  # here, not at import: ``cudnn-magic check --json`` never escapes (1.5 ms of start-up)

    return html.escape(str(s), quote=True)


_CSS = """
<style>
.cm-report{font-family:var(--jp-ui-font-family,system-ui,sans-serif);font-size:13px;line-height:1.4;max-width:1100px}
div.cm-report h4{margin:10px 0 4px 0;font-size:13px;font-weight:600}
div.cm-report table{border-collapse:collapse;margin:2px 0 6px 0;table-layout:auto}
div.cm-report table th,div.cm-report table td,.jp-RenderedHTMLCommon .cm-report table th,.jp-RenderedHTMLCommon .cm-report table td{text-align:left;padding:3px 10px 3px 0;border-bottom:1px solid var(--jp-border-color2,#ddd);vertical-align:top}
.cm-report code{font-size:12px;word-break:normal;overflow-wrap:anywhere}
.cm-report .cm-advice code{font-size:12px}
.cm-badge{display:inline-block;padding:0 6px;border-radius:8px;color:#fff;font-weight:600;font-size:11px}
.cm-finding{border-left:4px solid;padding:4px 8px;margin:4px 0;background:var(--jp-layout-color2,#f6f8fa)}
.cm-muted{color:var(--jp-ui-font-color2,#57606a)}
.cm-report details{margin:6px 0}
</style>
"""


def _badge(text: str, color: str) -> str:
    return f'<span class="cm-badge" style="background:{color}">{_e(text)}</span>'


def path_html(p: str) -> str:
    """A path, escaped, that a narrow page breaks only after a ``/`` (``<wbr>``), never inside
    a file name unless that name alone is wider than the page."""
    return "/<wbr>".join(_e(part) for part in str(p).split("/"))


_PLAIN_WORD = re.compile(r"^[A-Za-z][a-z]*[,.]?$")


def is_prose(action: str) -> bool:
    """Advice written as a sentence ("Stop other processes on the GPU ..."), not a command or a
    snippet: a run of four plain words in a row, or words in backticks. Commands and code
    (``python -m pip install ...``, ``torch.backends.cudnn.benchmark = False``) have none."""
    if "`" in action:
        return True
    run = 0
    for tok in action.split():
        run = run + 1 if _PLAIN_WORD.match(tok) else 0
        if run >= 4:
            return True
    return False


def action_html(action: str) -> str:
    """A fix's action as HTML: a command or snippet in a ``<code>`` block; advice prose as text,
    with the parts in backticks (and nothing else) set as code."""
    if not is_prose(action):
        return f'<code style="white-space:pre-wrap">{_e(action)}</code>'
    parts = action.split("`")
    return '<span class="cm-advice">' + "".join(
        f"<code>{_e(x)}</code>" if i % 2 else _e(x) for i, x in enumerate(parts)) + "</span>"


def report_html(report: Report, where: str = "kernel") -> str:
    """Compact HTML (tables, verdict colours, details toggles); every value escaped."""
    h: list[str] = [_CSS, '<div class="cm-report">']
    errors = [f for f in report.findings if f.severity == "error"]
    warns = [f for f in report.findings if f.severity == "warning"]
    status = (_badge("OK", _VERDICT_COLOR["ok"]) if not errors and not warns else
              (_badge(f"{len(errors)} error(s)", _SEV_COLOR["error"]) if errors else "")
              + (" " + _badge(f"{len(warns)} warning(s)", _SEV_COLOR["warning"]) if warns else ""))
    h.append(f"<div><b>cudnn-magic check</b> {status} <span class='cm-muted'>({report.elapsed_s * 1000:.0f} ms)</span></div>")

    u = report.cudnn_in_use
    h.append(f"<div class='cm-inuse' title='{_e(u.why) if u else ''}'>{_e(in_use_line(report))}</div>")
    if u is not None:
        h.append(f"<div class='cm-muted'>why: {_e(u.why)}</div>")
    h.append(f"<h4>cuDNN mapped in this {'kernel' if where == 'kernel' else 'process'}</h4>")
    if report.cudnn_loaded:
        h.append("<table><tr><th>library</th><th>version</th><th>owner</th><th>path</th></tr>")
        for c in report.cudnn_loaded:
            src = f" title='{_e(c.version_source or '')}'"
            reach = (f" <span class='cm-muted'>(calls reach {_e(c.reached_version)})</span>"
                     if c.reached_version and c.reached_version != c.version else "")
            own = f" title='{_e(c.owner_evidence)}'" if c.owner_evidence else ""
            h.append(f"<tr><td>{_e(c.name)}</td><td{src}><b>{_e(_ver(c.version))}</b>{reach}</td><td{own}>{_e(c.owner)}</td>"
                     f"<td><code>{path_html(c.path)}</code></td></tr>")
        h.append("</table>")
    else:
        what = "kernel" if where == "kernel" else "process"
        h.append(f"<div class='cm-muted'>None yet: no framework has loaded cuDNN in this {what}."
                 + (" The frameworks table below shows what each would load.</div>" if report.frameworks else "</div>"))

    h.append("<h4>Frameworks</h4>")
    if report.frameworks:
        h.append("<table><tr><th>framework</th><th>built with cuDNN</th><th>CUDA</th><th>cuDNN used</th>"
                 "<th>verdict</th><th>why</th></tr>")
        for f in report.frameworks:
            imp = "" if not f.imported else " <span class='cm-muted'>(imported)</span>"
            if f.cpu_build:
                h.append(
                    f"<tr><td>{_e(f.name)} {_e(f.version)}{imp}</td><td colspan='3'>{_e(CPU_WORDS)}</td>"
                    f"<td>{_badge('CPU build', _VERDICT_COLOR['not-applicable'])}</td>"
                    f"<td>{_e(f.cudnn_compiled_source or '')}{(' ' + _e(f.detail)) if f.detail else ''}</td></tr>")
                continue
            h.append(
                f"<tr><td>{_e(f.name)} {_e(f.version)}{imp}</td>"
                f"<td title='{_e(f.cudnn_compiled_source or '')}'>{_e(_ver(f.cudnn_compiled))}</td>"
                f"<td>{_e(_ver(f.cuda_compiled))}</td>"
                f"<td title='{_e(f.cudnn_used_path or '')}'>{_e(_ver(f.cudnn_used))}</td>"
                f"<td>{_badge(f.verdict, _VERDICT_COLOR.get(f.verdict, '#6e7781'))}</td>"
                f"<td>{_e(f.detail)}<br><span class='cm-muted'>rule: {_e(f.rule)}</span></td></tr>")
        h.append("</table>")
    else:
        h.append(f"<div class='cm-muted'>No {_e(consumer_names())} or other cuDNN consumer installed.</div>")

    h.append("<h4>Driver and GPUs</h4>")
    if _driver_missing(report):
        h.append("<div class='cm-muted'>No NVIDIA driver on this machine (see the finding below).</div>")
    elif isinstance(report.driver, Unavailable):
        h.append(f"<div class='cm-muted'>{_e(report.driver.reason)}</div>")
    elif report.driver is not None:
        h.append(f"<div>Driver <b>{_e(report.driver.version)}</b>, CUDA driver API "
                 f"<b>{_e(report.driver.cuda_driver_version or '?')}</b></div>")
    if report.gpus:
        h.append("<table><tr><th>GPU</th><th>name</th><th>compute capability</th><th>memory used / total</th></tr>")
        for g in report.gpus:
            cc = "%d.%d" % g.compute_capability if g.compute_capability else "?"
            h.append(f"<tr><td>{g.index}</td><td>{_e(g.name)}</td><td>{cc}</td>"
                     f"<td>{_gib(g.used_bytes)} / {_gib(g.total_bytes)}{(' ' + _e(g.error)) if g.error else ''}</td></tr>")
        h.append("</table>")

    h.append(toolkit_html(report))
    h.append("<h4>Findings</h4>")
    if not report.findings:
        h.append("<div class='cm-muted'>None.</div>")
    for f in report.findings:
        col = _SEV_COLOR[f.severity]
        restart = _RESTART.get(where, _RESTART["kernel"])
        fixes = "".join(
            f"<div>Fix <code>{_e(x.id)}</code>: {_e(x.title)} &mdash; {action_html(x.action)}"
            f"{f' <i>({restart})</i>' if x.restart_required else ''}</div>" for x in f.fixes)
        h.append(f"<div class='cm-finding' style='border-color:{col}'>{_badge(f.severity, col)} "
                 f"<b>{_e(f.title)}</b> <span class='cm-muted'>{_e(f.id)}</span><div>{_e(f.detail)}</div>{fixes}</div>")

    others = [c for c in report.cudnn_installed if not c.loaded]
    n_main, n_sub = sum(1 for c in others if c.is_main), sum(1 for c in others if not c.is_main)
    if others:
        counts = ", ".join(x for x in (_count(n_main, "main library", "main libraries") if n_main else "",
                                       _count(n_sub, "sub-library", "sub-libraries") if n_sub else "") if x)
        h.append(f"<details><summary>Other cuDNN copies on disk ({counts})</summary>")
        h.append("<table><tr><th>library</th><th>version</th><th>found via</th><th>owner</th><th>path</th></tr>")
        for c in others:
            err = f" <span style='color:#cf222e'>{_e(c.error)}</span>" if c.error else ""
            h.append(f"<tr><td>{_e(c.name)}</td><td title='{_e(c.version_source or '')}'>{_e(_ver(c.version))}</td>"
                     f"<td>{_e(c.source)}</td><td>{_e(c.owner)}</td><td><code>{path_html(c.path)}</code>{err}</td></tr>")
        h.append("</table></details>")
    else:
        h.append("<div class='cm-muted'>No other cuDNN copy on disk.</div>")
    h.append(consumers_html(report))
    if report.resolutions:
        h.append("<details><summary>What the dynamic loader picks for each framework</summary><table>"
                 "<tr><th>framework</th><th>soname</th><th>picked</th><th>because</th><th>hides</th></tr>")
        for r in report.resolutions:
            h.append(f"<tr><td>{_e(r.consumer)}</td><td>{_e(r.soname)}</td><td><code>{path_html(r.picked or 'NOT FOUND')}</code></td>"
                     f"<td>{_e(r.reason)}</td><td>{'<br>'.join('<code>' + path_html(s) + '</code>' for s in r.shadowed)}</td></tr>")
        h.append("</table></details>")
    notes = _notes(report)
    if notes:
        h.append("<details><summary>Could not read</summary><ul>"
                 + "".join(f"<li>{_e(n)}</li>" for n in notes) + "</ul></details>")
    h.append("</div>")
    return "".join(h)


class ReportView:
    """What ``%cudnn_check`` returns: the report, displayed as HTML in notebooks and as text in
    terminals (``_repr_mimebundle_``). ``.report`` is the :class:`Report`; ``.json()`` the
    contract dict."""

    def __init__(self, report: Report) -> None:
        self.report = report

    def json(self) -> dict[str, Any]:
        return report_json(self.report)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return {"text/plain": report_text(self.report), "text/html": report_html(self.report)}

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(report_text(self.report))

    def __repr__(self) -> str:
        return report_text(self.report)


register(Report, report_text, report_html)
