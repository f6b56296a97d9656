"""Does a fix change its finding? Checked before it is offered as one to apply: a fix is offered
as applicable only when it would change something.

* A pip change: the project's own what-if of exactly that command
  (:func:`cudnn_magic.engines.whatif.what_if`: pip's resolver, the new wheels' own ``RECORD``, the
  same rules) must show the finding gone and add no error.
* An environment change (``LD_LIBRARY_PATH`` in the kernelspec): the check is run again in a fresh
  process started with the changed environment (``python -m cudnn_magic check --json``, the same
  loader model a restarted kernel meets) beside one started with the environment as it is; the
  finding must be there before and gone after. A finding a fresh start does not show at all is
  fixed by a fresh start, not by this change.

"The finding" is each finding of the report that offers the fix, matched in the other report by its
id and the framework or consumer its title names (titles carry versions, which the fix changes).
Neither function raises; each returns ``(why it would not help, or None; notes)``.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ..engines.whatif import what_if
from ..model import Finding, Report
from ..probes.pip_report import PipError


def _shape(title: str) -> str:
    """A title with its paths and version numbers blanked: what stays when a fix moves a copy."""
    return re.sub(r"\d+(?:\.\d+)+", "V", re.sub(r"(?:/[^\s:;,()]+)+", "PATH", title))


def targets(report: Report, fid: str) -> list[tuple[str, str]]:
    """(finding id, subject) of each finding in ``report`` that offers fix ``fid``; the subject is
    the longest framework or consumer name its title names, else the title's shape (paths and
    versions blanked, :func:`_shape`)."""
    names = sorted({fw.name for fw in report.frameworks} | {getattr(c, "name", "") for c in getattr(report, "consumers", ())},
                   key=len, reverse=True)
    out = []
    for f in report.findings:
        if any(x.id == fid for x in f.fixes):
            subject = next((n for n in names if n and re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", f.title)), None)
            out.append((f.id, subject or "shape:" + _shape(f.title)))
    return out


def _stays(findings: Iterable[Any], want: Sequence[tuple[str, str]]) -> list[str]:
    """Titles of ``findings`` (Finding objects or their JSON dicts) that are one of ``want``."""
    left = []
    for f in findings:
        fid, title = (f.id, f.title) if isinstance(f, Finding) else (str(f.get("id")), str(f.get("title")))
        for i, subject in want:
            if fid != i:
                continue
            if subject.startswith("shape:"):
                hit = _shape(title) == subject[len("shape:"):]
            else:
                hit = re.search(rf"(?<![\w-]){re.escape(subject)}(?![\w-])", title) is not None
            if hit:
                left.append(title)
                break
    return left


def verify_pip(words: Sequence[str], python: str, report: Report, fid: str) -> tuple[str | None, list[str]]:
    """Whether ``pip install WORDS`` for ``python`` would clear the findings of ``report`` that
    offer ``fid``, by the what-if of exactly those words (module docstring)."""

    want = targets(report, fid)
    try:
        r = what_if(list(words), python, safer=False)
    except Exception as exc:  # noqa: BLE001 - what_if never raises; belt and braces
        return f"its what-if failed: {type(exc).__name__}: {exc}", []
    if isinstance(r, PipError):
        return f"its own what-if cannot resolve it: {r.message}", []
    changes = "; ".join(str(c) for c in r.changes) or "nothing"
    if not r.changes:
        return "pip would change nothing (its what-if resolves to what is installed)", []
    if r.introduces_error:
        new = "; ".join(f.title for f in r.introduced if f.severity == "error")
        return f"its own what-if predicts a new error: {new[:400]}", [f"what-if: pip would change {changes}"]
    left = _stays(r.predicted.findings, want)
    if left:
        return f"its own what-if predicts the finding stays: {left[0][:300]}", [f"what-if: pip would change {changes}"]
    return None, [f"checked before it is offered: the what-if of this command (pip would change {changes}) predicts "
                  + (f"{len(want)} finding(s) gone and " if want else "") + "no new error"]


def _child_check(python: str, env: dict[str, str], timeout: float) -> dict[str, Any] | str:
    try:
        proc = subprocess.run([python, "-m", "cudnn_magic", "check", "--json"], capture_output=True, text=True,
                              env=env, timeout=timeout, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"cannot run the check in a fresh process: {exc}"
    try:
        data = json.loads(proc.stdout)
    except ValueError:
        return f"the check in a fresh process gave no report (exit {proc.returncode})"
    return data if isinstance(data, dict) else "the check in a fresh process gave no report"


def verify_environ(before: dict[str, str], after: dict[str, str], report: Report, fid: str, *,
                   python: str | None = None, timeout: float = 120.0) -> tuple[str | None, list[str]]:
    """Whether a fresh process started with ``after`` (instead of ``before``) no longer has the
    findings of ``report`` that offer ``fid`` (module docstring). ``python``: the kernel's
    interpreter (default this one)."""
    python = python or sys.executable
    want = targets(report, fid)
    if not want:
        return None, []
    with ThreadPoolExecutor(2) as pool:
        a, b = pool.map(lambda e: _child_check(python, dict(e), timeout), (before, after))
    if isinstance(b, str):
        return f"it could not be checked: {b}", []
    if isinstance(a, str):
        return f"it could not be checked: {a}", []
    if not _stays(a.get("findings") or (), want):
        return ("a fresh start with the environment as it is already shows no such finding: restarting the kernel "
                "from its kernelspec is the fix, this change adds nothing"), []
    left = _stays(b.get("findings") or (), want)
    if left:
        return f"a fresh process started with the change still has the finding: {left[0][:300]}", []
    return None, [("checked before it is offered: the check in a fresh process started with the change shows the "
                   "finding gone (and present without it)")]


def verify_restart(environ: dict[str, str], report: Report, fid: str = "restart-kernel", *,
                   python: str | None = None, timeout: float = 120.0) -> tuple[str | None, list[str]]:
    """Whether a restart (a fresh process started with the same ``environ``) clears the findings of
    ``report`` that offer ``fid``: the check run in such a process must not show them. Findings
    that are not the check's (a broken CUDA context, memory held) are not checked here."""
    want = targets(report, fid)
    if not want:
        return None, []
    got = _child_check(python or sys.executable, dict(environ), timeout)
    if isinstance(got, str):
        return None, [f"not checked: {got}"]
    left = _stays(got.get("findings") or (), want)
    if left:
        return (f"a fresh process started the same way has the same finding ({left[0][:300]}): a restart changes "
                "nothing; take the cause out of the start environment first"), []
    return None, [("checked before it is offered: the check in a fresh process started the same way shows the "
                   "finding gone")]


__all__ = ["targets", "verify_environ", "verify_pip", "verify_restart"]
