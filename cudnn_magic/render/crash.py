"""A crash record (:class:`~cudnn_magic.model.crash.CrashRecord`) as text and HTML: when the
kernel died, the cell it ran, its last native log lines, the Python stack, the diagnosis.
Every value from a record is escaped and display-safe (:func:`cudnn_magic.util.safetext.safe_text`)."""

from __future__ import annotations

import html
import time
from typing import TYPE_CHECKING

from ..util.safetext import safe_text
from .diagnosis import diagnoses_html, diagnoses_text

if TYPE_CHECKING:  # annotations only
    from ..model.crash import CrashRecord

__all__ = ["KILLED_NOTE", "crash_html", "crash_text", "key_description"]


KILLED_NOTE = ("No fatal signal was caught (faulthandler wrote nothing): the process was most likely killed from "
               "outside with SIGKILL - the out-of-memory killer, or a restart or shutdown of a kernel that did not "
               "answer in time.")


def key_description(key: str) -> str:
    """How a key was made, for the report (terminal IPython says which key it used)."""
    if key.startswith("terminal-"):
        return f"{key} (terminal IPython: keyed by the terminal device /dev/{key[9:].replace('-', '/')})"
    if key.startswith("process-"):
        return f"{key} (no terminal and no kernel: keyed by the parent process id {key[8:]})"
    return f"{key} (keyed by the kernel's connection file {key}.json)"


def _indent(text: str) -> str:
    return "\n".join("    " + ln for ln in text.rstrip("\n").splitlines())


def _log_lines(text: str, n: int = 40) -> str:
    """The last ``n`` lines of a record's log for display; a line that is mostly undecodable
    bytes (a binary written to fd 2) is shown as its size, not as replacement characters."""
    lines = []
    for ln in text.rstrip("\n").splitlines():
        bad = ln.count("\ufffd")
        lines.append(f"[{len(ln)} characters of binary data]" if len(ln) >= 80 and bad * 3 >= len(ln) else ln)
    if len(lines) <= n:
        return "\n".join(lines)
    return f"[... {len(lines) - n} earlier lines ...]\n" + "\n".join(lines[-n:])



def _when(self: CrashRecord) -> str:
    if self.died is None:
        return "at an unknown time"
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.died))
    ago = time.time() - self.died
    rel = f"{ago:.0f} s ago" if ago < 120 else f"{ago / 60:.0f} min ago" if ago < 7200 else f"{ago / 3600:.1f} h ago"
    return f"at {when} ({rel})"

def _cell_label(self: CrashRecord) -> str:
    name = f"cell In [{self.cell_number}]" if self.cell_number is not None and self.cell_number > 0 else "this cell"
    if self.cell_started is not None and self.died is not None and self.died >= self.cell_started:
        return f"{name} (it had been running {self.died - self.cell_started:.1f} s)"
    return name

def crash_text(self: CrashRecord) -> str:
    """A :class:`~cudnn_magic.model.crash.CrashRecord` as plain text (terminal IPython, ``text/plain``)."""
    pid = f", pid {self.kernel_pid}" if self.kernel_pid else ""
    out = [f"cudnn-magic: the previous kernel died {_when(self)}{pid}; here is what it left behind.",
           f"Record: {key_description(self.key)}; {self.directory}"]
    if self.cell_source is not None:
        out.append(f"It was running {_cell_label(self)}:")
        out.append(_indent(self.cell_source or "(empty cell)"))
    else:
        out.append("The cell it was running is not known (no cell had started, or the record lacks it).")
    if self.log_tail.strip():
        out.append("The native log lines it printed last (fd 2):")
        out.append(_indent(_log_lines(self.log_tail)))
    else:
        out.append("It printed nothing on native stderr before it died.")
    if self.faulthandler.strip():
        out.append("Python stack at the moment of death (faulthandler):")
        out.append(_indent(self.stack_summary()))
    elif self.faulthandler_on:
        out.append(KILLED_NOTE)
    if self.diagnoses:
        out.append(diagnoses_text(self.diagnoses))
    else:
        out.append("No cuDNN-related cause found in the record.")
    if self.problems:
        out.append("Problems with the record: " + "; ".join(self.problems))
    return safe_text("\n".join(out))  # a file name may hold undecodable bytes

def crash_html(self: CrashRecord) -> str:
    """A :class:`~cudnn_magic.model.crash.CrashRecord` as compact escaped HTML (no JavaScript)."""
    e = html.escape
    pid = f", pid {self.kernel_pid}" if self.kernel_pid else ""
    parts = ['<div class="cudnn-magic-crash" style="border-left:4px solid #c62828;padding:4px 8px;'
             'margin:2px 0;font-size:13px">',
             f"<b>cudnn-magic: the previous kernel died {e(_when(self))}{e(pid)}</b>",
             f'<div style="font-size:11px;color:#666">Record: {e(key_description(self.key))}; '
             f"<code>{e(self.directory)}</code></div>"]
    if self.cell_source is not None:
        parts.append(f"<div>It was running {e(_cell_label(self))}:</div>"
                     f'<pre style="margin:2px 0;white-space:pre-wrap;background:#f6f6f6">'
                     f"{e(self.cell_source or '(empty cell)')}</pre>")
    else:
        parts.append("<div>The cell it was running is not known.</div>")
    # The diagnosis first (what a person needs), then the evidence, the long stack folded.
    if self.diagnoses:
        parts.append(diagnoses_html(self.diagnoses))
    else:
        parts.append("<div>No cuDNN-related cause found in the record.</div>")
    if self.log_tail.strip():
        parts.append("<div>The native log lines it printed last (fd 2):</div>"
                     f'<pre style="margin:2px 0;max-height:12em;overflow:auto;white-space:pre-wrap">'
                     f"{e(_log_lines(self.log_tail))}</pre>")
    else:
        parts.append("<div>It printed nothing on native stderr before it died.</div>")
    if self.faulthandler.strip():
        parts.append("<details><summary>Python stack at the moment of death (faulthandler)</summary>"
                     f'<pre style="margin:2px 0;max-height:20em;overflow:auto;white-space:pre-wrap">'
                     f"{e(self.stack_summary())}</pre></details>")
    elif self.faulthandler_on:
        parts.append(f"<div>{e(KILLED_NOTE)}</div>")
    if self.problems:
        parts.append("<div><i>Problems with the record: " + e("; ".join(self.problems)) + "</i></div>")
    parts.append("</div>")
    return safe_text("".join(parts))
