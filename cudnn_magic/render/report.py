"""Render a :class:`~cudnn_magic.model.Report` as text, HTML or JSON. Pure functions.

The JSON follows docs/json.md's ``check`` contract (keys may be added, never renamed).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from typing import Any

from ..model import CudnnInUse, Driver, Finding, LibraryCopy, Report, Unavailable, to_plain
from ..model.display import register
from ..rules.consumer_table import names as consumer_names
from .consumers import consumers_html, consumers_json, consumers_text
from .paths import PathNames, names_html, terminal_width, wrap
from .where import fix_action, fix_title, restart_words

_VERDICT_COLOR = {"ok": "#1a7f37", "mismatch": "#cf222e", "unknown": "#9a6700", "not-applicable": "#6e7781"}
_SEV_COLOR = {"error": "#cf222e", "warning": "#9a6700", "info": "#0969da"}
#: How every view says a framework is a CPU build.
CPU_WORDS = "CPU build: no CUDA, no cuDNN"


def report_json(report: Report) -> dict[str, Any]:
    """The ``check`` JSON of docs/json.md: cudnn_loaded, cudnn_installed, frameworks, driver, gpus,
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
             "bound_to": list(c.bound_to), "owner_evidence": c.owner_evidence, "load_order": c.load_order,
             "replaced_on_disk": c.replaced}
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
        "cudnn_by_name": [to_plain(r) for r in report.cudnn_by_name],
        "cuda_toolkits": [{"root": t.root, "version": t.version, "version_source": t.version_source, "via": list(t.via),
                           "nvcc": t.nvcc} for t in report.cuda_toolkits],
        "consumers": consumers_json(report),
        "copy_notes": list(report.copy_notes),
        "notes": list(report.notes),
        "elapsed_s": round(report.elapsed_s, 4),
    }


_SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}


def by_severity(findings: Iterable[Finding]) -> list[Finding]:
    """Findings most severe first (errors, warnings, then info), in their order within each: the
    headline of the report (its first line) is the first finding shown."""
    return sorted(findings, key=lambda f: _SEVERITY_ORDER.get(f.severity, 3))


def _toolkit_lines(report: Report) -> list[str]:
    """The CUDA toolkits, as context apart from the CUDA each framework runs."""
    if not report.cuda_toolkits:
        return []
    out = ["", ("CUDA toolkit on this machine (context: for builds and nvcc; each framework runs the CUDA of its own "
                "build, in Frameworks above)")]
    for t in report.cuda_toolkits:
        named = t.nvcc is not None and any(t.nvcc in v for v in t.via)  # "nvcc on PATH (/usr/local/bin/nvcc)"
        out.append(f"  {t.version or '?'} at {t.root} ({'; '.join(t.via)})"
                   + (f", nvcc {t.nvcc}" if t.nvcc and not named else ""))
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
    own = _ver(c.version) + (" (mapped; file replaced on disk)" if c.replaced else "")
    if c.reached_version and c.reached_version != c.version:
        return f"{own} (calls reach {c.reached_version})"
    return own


def in_use_line(report: Report, names: PathNames | None = None) -> str:
    """One line in plain words: the cuDNN in use, where it lies, and what that means; where
    nothing is mapped (always so for the command line's own process), what a program that loads
    cuDNN by name would get here instead. The mechanism is :attr:`CudnnInUse.why`, shown apart."""
    names = names or PathNames.here()
    u = report.cudnn_in_use
    if u is None:
        picks = [r for r in report.cudnn_by_name if r.picked]
        if not picks:
            return ("cuDNN in use: none loaded in this process" + (
                "; no copy on disk either" if not report.cudnn_installed else ""))
        r = picks[0]
        version = next((c.version for c in (*report.cudnn_installed, *report.cudnn_loaded)
                        if c.version and os.path.realpath(c.path) == os.path.realpath(r.picked or "")), None)
        reason = _plain_reason(r.reason)
        source = (f"the LD_LIBRARY_PATH entry {names.short(reason[len('LD_LIBRARY_PATH entry '):])}"
                  if reason.startswith("LD_LIBRARY_PATH entry ") else
                  f"{names.short(os.path.dirname(r.picked or ''))} ({reason})")
        return (f"cuDNN in use: none loaded in this process yet; loading {r.soname} by name here gets "
                f"{_ver(version)} from {source}")
    where = f" (LD_LIBRARY_PATH entry {names.short(u.ld_library_path_entry)})" if u.ld_library_path_entry else ""
    if u.why.startswith("dlvsym"):
        how = "it was loaded for every library (RTLD_GLOBAL), so their cuDNN calls go to it"
    elif u.why.startswith("bound in this process"):
        how = "the framework's cuDNN calls are bound to it"
    else:
        how = f"it was loaded first, so every later load of {u.soname} by name gets it"
    reach = (f"; its calls reach cuDNN {u.reached_version}" if u.reached_version and u.reached_version != u.version
             else "")
    return f"cuDNN in use: {_ver(u.version)} from {names.short(u.path)}{where}: {how}{reach}"


def _plain_reason(reason: str) -> str:
    """A resolution's reason as its first clause ("LD_LIBRARY_PATH entry X", "ld.so cache")."""
    return reason.split(";")[0].strip()


def _table(rows: list[list[str]], header: list[str], width: int | None = None) -> str:
    """A fixed-width table of at most ``width`` columns: when the rows are wider, the last column
    (a folder, usually) goes on a line of its own under each row."""
    widths = [max(len(str(r[i])) for r in [*rows, header]) for i in range(len(header))]
    line = lambda r, ws: "  ".join(str(c).ljust(w) for c, w in zip(r, ws)).rstrip()  # noqa: E731
    if width is None or sum(widths) + 2 * (len(widths) - 1) <= width:
        return "\n".join([line(header, widths), line(["-" * w for w in widths], widths)] + [line(r, widths) for r in rows])
    head, ws = header[:-1], widths[:-1]
    if sum(ws) + 2 * (len(ws) - 1) + len(f"  ({header[-1]} below)") <= width:
        out = [line(head, ws) + f"  ({header[-1]} below)", line(["-" * w for w in ws], ws)]
        for r in rows:
            out.append(line(r[:-1], ws))
            out += wrap(str(r[-1]), width, "    ", "      ")
        return "\n".join(out)
    # narrower still: one row per paragraph, its cells in the header's order
    out = wrap(" | ".join(header), width, "", "  ")
    for r in rows:
        out += wrap(" | ".join(str(c) for c in r[:-1]), width, "- ", "  ")
        out += wrap(str(r[-1]), width, "    ", "      ")
    return "\n".join(out)


def _state(report: Report) -> str:
    """"OK", or the counts of errors and warnings with their ids: the same words in every view."""
    def some(sev: str) -> str:
        ids = list(dict.fromkeys(f.id for f in report.findings if f.severity == sev))
        n = sum(1 for f in report.findings if f.severity == sev)
        return f"{n} {sev}{'s' if n != 1 else ''} ({', '.join(ids)})" if n else ""
    parts = [x for x in (some("error"), some("warning")) if x]
    return "; ".join(parts) if parts else "OK"


def headline(report: Report) -> str:
    """The first line of every view: ``cudnn-magic check: OK`` or the errors and warnings, by id."""
    return f"cudnn-magic check: {_state(report)}"


def summary_line(report: Report) -> str:
    """One line: the headline and the cuDNN in use (the CLI's ``--dask`` rows, logs)."""
    return f"{headline(report)} -- {in_use_line(report)}"


def _driver_missing(report: Report) -> bool:
    """NVML could not be loaded and the ``no-nvidia-driver`` finding says why (once)."""
    return isinstance(report.driver, Unavailable) and any(f.id == "no-nvidia-driver" for f in report.findings)


def _notes(report: Report) -> list[str]:
    """The notes, without one that only repeats the driver's reason (said in the finding)."""
    reason = report.driver.reason if isinstance(report.driver, Unavailable) else None
    return [n for n in report.notes if not (reason and reason in n)]


def report_text(report: Report, where: str = "kernel", width: int | None = None) -> str:
    """Plain text for terminals and logs, fitted to ``width`` columns (default: ``COLUMNS``, the
    terminal's, else 100: :func:`~cudnn_magic.render.paths.terminal_width`). Paths are written
    short (``$VENV/...``, ``site-packages/...``, ``~/...``; a legend at the end says what each name
    stands for); a path already given in a finding is named by its folder's cuDNN release after
    that. ``where`` names what restarts after a fix: "kernel" (IPython) or "process" (the command line)."""
    width = width or terminal_width()
    names = PathNames.for_copies((*report.cudnn_installed, *report.cudnn_loaded))
    out: list[str] = []

    def say(text: str, indent: str = "", seen: set[str] | None = None, hanging: str | None = None) -> None:
        out.extend(wrap(names.prose(text, seen), width, indent, hanging))

    out.append(headline(report))
    first: set[str] = set()  # the in-use line gives its folder whole; the why line then names it
    say(in_use_line(report, names), "", first, "  ")
    if report.cudnn_in_use is not None:
        say(f"why: {report.cudnn_in_use.why}", "  ", first, "       ")
    out.append("")
    out.append("cuDNN mapped in this process (each file's own version)")
    if report.cudnn_loaded:
        out.append(_table([[c.name, _ver_reached(c), c.owner, names.short(c.directory)] for c in report.cudnn_loaded],
                          ["library", "version", "owner", "folder"], width))
    else:
        out.append("  none" + (" (no framework has loaded cuDNN in this kernel yet"
                               + ("; Frameworks below says what each would load)" if report.frameworks else ")")
                               if where == "kernel" else " (this command loads no cuDNN itself)"))
    out.append("")
    out.append("Frameworks")
    if report.frameworks:
        out.append(_table(
            [[f.name, f.version, "yes" if f.imported else "no", "CPU build" if f.cpu_build else _ver(f.cudnn_compiled),
              "none" if f.cpu_build else _ver(f.cuda_compiled), "none" if f.cpu_build else _ver(f.cudnn_used),
              "CPU BUILD" if f.cpu_build else f.verdict.upper()] for f in report.frameworks],
            ["framework", "version", "imported", "built with cuDNN", "CUDA", "cuDNN used", "verdict"], width))
        for fw in report.frameworks:
            seen: set[str] = set()
            if fw.cpu_build:
                say(f"{fw.name}: {CPU_WORDS} ({fw.cudnn_compiled_source or 'its build says so'})", "  ", seen)
            if fw.detail:
                say(f"{fw.name}: {fw.detail}", "  ", seen)
            if fw.rule and fw.verdict in ("mismatch", "ok"):
                say(f"rule: {fw.rule}", "    ", seen)
    else:
        say(f"none installed ({consumer_names()}, or any library that needs cuDNN)", "  ")
    out.append("")
    out.append("Driver and GPUs")
    if _driver_missing(report):
        out.append("  no NVIDIA driver on this machine (see Findings)")
    elif isinstance(report.driver, Unavailable):
        say(report.driver.reason, "  ")
    elif report.driver is not None:
        out.append(f"  driver {report.driver.version}, CUDA driver API {report.driver.cuda_driver_version or '?'}")
    for g in report.gpus:
        cc = "{}.{}".format(*g.compute_capability) if g.compute_capability else "?"
        mem = f"{_gib(g.used_bytes)}/{_gib(g.total_bytes)} used" if g.total_bytes else "memory ?"
        say(f"GPU {g.index}: {g.name}, compute capability {cc}, {mem}" + (f" [{g.error}]" if g.error else ""), "  ")
    for line in _toolkit_lines(report):
        if line:
            say(line.strip(), "  " if line.startswith("  ") else "")
        else:
            out.append("")
    out.append("")
    out.append("Findings")
    if report.findings:
        for f in by_severity(report.findings):
            seen = set()
            say(f"[{f.severity.upper()}] {f.id}: {f.title}", "  ", seen, "      ")
            say(f.detail, "      ", seen, "      ")
            for x in f.fixes:
                restart = f"  ({words})" if (words := restart_words(x, where)) else ""
                if shortenable(x.action):
                    say(f"fix {x.id}: {fix_action(x, where)}{restart}", "      ", seen, "        ")
                else:  # a command is copied and run: its paths stay whole, on a line of its own
                    say(f"fix {x.id}: {fix_title(x, where)}{restart}", "      ", seen, "        ")
                    out.extend(command_lines(x.action, "        ", width))
    else:
        out.append("  none")
    others = [c for c in report.cudnn_installed if not c.loaded]
    out.append("")
    out.append("Other cuDNN copies on disk")
    mains = [c for c in others if c.is_main]
    subs = [c for c in others if not c.is_main]
    if mains:
        out.append(_table([[c.name, _ver(c.version), c.source, c.owner, names.short(c.directory)] for c in mains],
                          ["library", "version", "found via", "owner", "folder"], width))
    if subs:
        beside = {m.directory for m in mains} | {c.directory for c in report.cudnn_loaded}
        elsewhere = {c.directory for c in subs} - beside
        alone = sorted(elsewhere)
        say(f"+ {_count(len(subs), 'sub-library', 'sub-libraries')} (the parts a main library opens when it is used)"
            + ((", some in folders without a main library: " + ", ".join(names.short(d) for d in alone[:3])
                + (f" and {len(alone) - 3} more" if len(alone) > 3 else "")) if alone else " in the same folders"),
            "  ", set())
    if not others:
        out.append("  none")
    for n in report.copy_notes:
        say(n, "  ", set())
    for line in consumers_text(report):
        if line:
            say(line.strip(), line[: len(line) - len(line.lstrip())], set())
        else:
            out.append("")
    if report.resolutions:
        out.append("")
        out.append("What the dynamic loader picks")
        for r in report.resolutions:
            say(f"{r.consumer}: {r.soname} -> {r.picked or 'NOT FOUND'} ({r.reason})"
                + (f"; hides {', '.join(r.shadowed)}" if r.shadowed else ""), "  ", set())
    notes = _notes(report)
    if notes:
        out.append("")
        out.append("Could not read")
        for n in notes:
            say(n, "  ")
    legend = names.legend()
    out.append("")
    if legend:
        out.extend(wrap(f"Paths: {legend}.", width, "", "  "))
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
div.cm-report table th,div.cm-report table td,
.jp-RenderedHTMLCommon .cm-report table th,.jp-RenderedHTMLCommon .cm-report table td{text-align:left;
  padding:3px 10px 3px 0;border-bottom:1px solid var(--jp-border-color2,#ddd);vertical-align:top}
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


_COMMAND = re.compile(r"\s*(?:/|\$|~/|\./|python[0-9.]*\s|pip[0-9]*\s|conda\s|export\s|unset\s|sudo\s|%)")


def is_command(action: str) -> bool:
    """An action that starts as a command line (a path, ``python``, ``pip``, ``export``, a magic),
    even with a prose comment after it: it is copied and run, so its paths stay whole."""
    return bool(_COMMAND.match(action)) or " -m pip " in action


def command_lines(action: str, indent: str, width: int) -> list[str]:
    """A command as text lines: each line of it whole (it is copied and run), and a trailing
    ``# comment`` after it wrapped on lines of its own, each starting with ``#``."""
    out: list[str] = []
    for line in action.splitlines():
        cmd, sep, comment = line.partition("   # ")
        out.append(indent + cmd.rstrip())
        if sep:
            out += wrap(comment, width, indent + "# ", indent + "# ")
    return out


def shortenable(action: str) -> bool:
    """Advice prose whose paths may be written short (:func:`is_prose` and not :func:`is_command`)."""
    return is_prose(action) and not is_command(action)


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
    names = PathNames.for_copies((*report.cudnn_installed, *report.cudnn_loaded))
    errors = [f for f in report.findings if f.severity == "error"]
    warns = [f for f in report.findings if f.severity == "warning"]
    status = (_badge("OK", _VERDICT_COLOR["ok"]) if not errors and not warns else
              (_badge(_state(Report(findings=tuple(errors))), _SEV_COLOR["error"]) if errors else "")
              + (" " + _badge(_state(Report(findings=tuple(warns))), _SEV_COLOR["warning"]) if warns else ""))
    # the same words as the text view's first lines: the headline, then the cuDNN in use
    h.append(f"<div><b>cudnn-magic check:</b> {status} <span class='cm-muted'>({report.elapsed_s * 1000:.0f} ms)</span></div>")
    u = report.cudnn_in_use
    first: set[str] = set()  # as in the text: the in-use line gives its folder whole, the why line names it
    h.append(f"<div class='cm-inuse'>{names_html(names.prose(in_use_line(report, names), first))}</div>")
    if u is not None:
        h.append("<details class='cm-why'><summary>why</summary>"
                 f"<div class='cm-muted'>{names_html(names.prose(u.why, first))}</div></details>")
    h.append(f"<h4>cuDNN mapped in this {'kernel' if where == 'kernel' else 'process'}</h4>")
    if report.cudnn_loaded:
        h.append("<table><tr><th>library</th><th>version</th><th>owner</th><th>path</th></tr>")
        for c in report.cudnn_loaded:
            src = f" title='{_e(c.version_source or '')}'"
            reach = (f" <span class='cm-muted'>(calls reach {_e(c.reached_version)})</span>"
                     if c.reached_version and c.reached_version != c.version else "")
            if c.replaced:
                reach += f" <span class='cm-muted' title='{_e(c.replaced)}'>(mapped; file replaced on disk)</span>"
            own = f" title='{_e(c.owner_evidence)}'" if c.owner_evidence else ""
            h.append(f"<tr><td>{_e(c.name)}</td><td{src}><b>{_e(_ver(c.version))}</b>{reach}</td><td{own}>{_e(c.owner)}</td>"
                     f"<td><code title='{_e(c.path)}'>{path_html(names.short(c.path))}</code></td></tr>")
        h.append("</table>")
    else:
        what = "kernel" if where == "kernel" else "process"
        h.append(f"<div class='cm-muted'>None yet: no framework has loaded cuDNN in this {what}."
                 + (" The frameworks table below shows what each would load.</div>" if report.frameworks else "</div>"))

    h.append("<h4>Frameworks</h4>")
    if report.frameworks:
        h.append("<table><tr><th>framework</th><th>built with cuDNN</th><th>CUDA</th><th>cuDNN used</th>"
                 "<th>verdict</th><th>why</th></tr>")
        for fw in report.frameworks:
            imp = "" if not fw.imported else " <span class='cm-muted'>(imported)</span>"
            if fw.cpu_build:
                h.append(
                    f"<tr><td>{_e(fw.name)} {_e(fw.version)}{imp}</td><td colspan='3'>{_e(CPU_WORDS)}</td>"
                    f"<td>{_badge('CPU build', _VERDICT_COLOR['not-applicable'])}</td>"
                    f"<td>{_e(fw.cudnn_compiled_source or '')}{(' ' + _e(fw.detail)) if fw.detail else ''}</td></tr>")
                continue
            h.append(
                f"<tr><td>{_e(fw.name)} {_e(fw.version)}{imp}</td>"
                f"<td title='{_e(fw.cudnn_compiled_source or '')}'>{_e(_ver(fw.cudnn_compiled))}</td>"
                f"<td>{_e(_ver(fw.cuda_compiled))}</td>"
                f"<td title='{_e(fw.cudnn_used_path or '')}'>{_e(_ver(fw.cudnn_used))}</td>"
                f"<td>{_badge(fw.verdict, _VERDICT_COLOR.get(fw.verdict, '#6e7781'))}</td>"
                f"<td>{_e(fw.detail)}<br><span class='cm-muted'>rule: {_e(fw.rule)}</span></td></tr>")
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
            cc = "{}.{}".format(*g.compute_capability) if g.compute_capability else "?"
            h.append(f"<tr><td>{g.index}</td><td>{_e(g.name)}</td><td>{cc}</td>"
                     f"<td>{_gib(g.used_bytes)} / {_gib(g.total_bytes)}{(' ' + _e(g.error)) if g.error else ''}</td></tr>")
        h.append("</table>")

    h.append(toolkit_html(report))
    h.append("<h4>Findings</h4>")
    if not report.findings:
        h.append("<div class='cm-muted'>None.</div>")
    for f in by_severity(report.findings):
        col = _SEV_COLOR[f.severity]
        seen: set[str] = set()
        title, detail = names.prose(f.title, seen), names.prose(f.detail, seen)
        parts = []
        for x in f.fixes:  # the title's names are met before the action's (the legend's order)
            title_html = names_html(names.prose(fix_title(x, where), seen))
            action = action_html(names.prose(fix_action(x, where), seen) if shortenable(x.action) else x.action)
            restart = restart_words(x, where)
            parts.append(f"<div>Fix <code>{_e(x.id)}</code>: {title_html} &mdash; "
                         f"{action.replace('$VENV', '<code>$VENV</code>')}"
                         f"{f' <i>({restart})</i>' if restart else ''}</div>")
        fixes = "".join(parts)
        h.append(f"<div class='cm-finding' style='border-color:{col}'>{_badge(f.severity, col)} "
                 f"<b>{names_html(title)}</b> <span class='cm-muted'>{_e(f.id)}</span><div>{names_html(detail)}</div>{fixes}</div>")

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
                     f"<td>{_e(c.source)}</td><td>{_e(c.owner)}</td>"
                     f"<td><code title='{_e(c.path)}'>{path_html(names.short(c.path))}</code>{err}</td></tr>")
        h.append("</table></details>")
    else:
        h.append("<div class='cm-muted'>No other cuDNN copy on disk.</div>")
    h.extend(f"<div class='cm-muted'>{names_html(names.prose(n, set()))}</div>" for n in report.copy_notes)
    h.append(consumers_html(report))
    if report.resolutions:
        h.append("<details><summary>What the dynamic loader picks for each framework</summary><table>"
                 "<tr><th>framework</th><th>soname</th><th>picked</th><th>because</th><th>hides</th></tr>")
        for r in report.resolutions:
            shadowed = "<br>".join("<code>" + path_html(s) + "</code>" for s in r.shadowed)
            h.append(f"<tr><td>{_e(r.consumer)}</td><td>{_e(r.soname)}</td>"
                     f"<td><code>{path_html(r.picked or 'NOT FOUND')}</code></td>"
                     f"<td>{_e(r.reason)}</td><td>{shadowed}</td></tr>")
        h.append("</table></details>")
    notes = _notes(report)
    if notes:
        h.append("<details><summary>Could not read</summary><ul>"
                 + "".join(f"<li>{_e(n)}</li>" for n in notes) + "</ul></details>")
    legend = names.legend()
    if legend:
        h.append(f"<div class='cm-muted'>Paths: {names_html(legend)}.</div>")
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
