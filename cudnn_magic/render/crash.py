"""A crash record (:class:`~cudnn_magic.model.crash.CrashRecord`) as text and HTML: when the
kernel died, the cell it ran, its last native log lines, the Python stack, the diagnosis.
Every value from a record is escaped and display-safe (:func:`cudnn_magic.util.safetext.safe_text`).
The stack shown is the part of the faulthandler dump that matters (:func:`faulthandler_summary`)."""

from __future__ import annotations

import html
import re
import time

from ..model.crash import CrashRecord
from ..model.display import register
from ..util.safetext import safe_text
from .diagnosis import diagnoses_html, diagnoses_text
from .paths import cut_line, terminal_width, wrap

__all__ = ["KILLED_NOTE", "crash_html", "crash_summary", "crash_text", "faulthandler_summary", "key_description",
           "who_died"]


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


def who_died(rec: CrashRecord) -> str:
    """Which process a record is of, for a heading: ``kernel 1234abcd-...`` (the id in its
    connection file's name ``kernel-<id>.json``), ``terminal IPython on /dev/pts/3``, ``IPython
    under process 4242``."""
    key = rec.key
    if key.startswith("terminal-"):
        return f"terminal IPython on /dev/{key[9:].replace('-', '/')}"
    if key.startswith("process-"):
        return f"IPython under process {key[8:]}"
    return f"kernel {key.removeprefix('kernel-') or key}"


def _record_line(rec: CrashRecord) -> str:
    if rec.connection_file:
        return f"Record: connection file {rec.connection_file}; {rec.directory}"
    return f"Record: {key_description(rec.key)}; {rec.directory}"


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

# --- the part of a faulthandler dump worth showing -------------------------------------------

def faulthandler_summary(text: str, max_lines: int = 60, ends_with_module_list: bool | None = None) -> str:
    """The part of a faulthandler dump that matters, at most about ``max_lines`` lines: the first
    ``Fatal Python error`` header (the fault that killed the process) and the stack of the thread
    that crashed, with the other threads counted, not listed.

    The crashing thread is the ``Current thread`` block (``Stack`` when faulthandler dumped one
    thread); when the dump has none, the block running a cell (an ``ipykernel_<pid>`` or
    ``<ipython-input-`` frame) or the main thread (``_run_module_as_main`` or ``<module>``).

    A dump can be cut short: with ``all_threads=True`` faulthandler reads the other threads'
    frames while they run (a native call such as ctypes or TensorFlow's releases the GIL), and a
    second fault while reading them writes a second ``Fatal Python error`` header with no stack
    (faulthandler's traceback dump is not re-entrant; format of CPython's faulthandler.c), or the
    process dies before the dump ends. Both are said, and what was written is shown with the
    header kept. ``ends_with_module_list``: the writer was CPython 3.10 or newer, whose complete
    dumps end with ``Extension modules: ...``, so a dump without it was cut short (``None``:
    unknown writer; only a second header then says so). Text without a header is returned as
    it is."""
    # a nested fault's header can start in the middle of a frame line being written
    lines = text.rstrip("\n").replace("Fatal Python error", "\nFatal Python error").splitlines()
    starts = [i for i, ln in enumerate(lines) if ln.startswith("Fatal Python error")]
    if not starts:
        return text.rstrip("\n")
    lines = lines[starts[0]:]
    headers: list[str] = []
    blocks: list[list[str]] = []
    in_block = False
    ended = False
    for ln in lines:
        if ln.startswith("Fatal Python error"):
            headers.append(ln)
            in_block = False
        elif ln.startswith(("Thread 0x", "Current thread 0x", "Stack (most recent call first)")):
            blocks.append([ln])
            in_block = True
        elif ln.startswith(("Extension modules:", "Python runtime state:")):
            in_block = False  # the module list is not shown
            ended = ended or ln.startswith("Extension modules:")
        elif in_block and ln.strip() and ln.strip() != "File":
            blocks[-1].append(ln)
    out = [headers[0]]
    nested = [h.split(":", 1)[-1].strip() for h in headers[1:]]
    chosen = _crashing_thread(blocks)
    if nested:
        out.append(f"(faulthandler's dump was cut short by a second fault while it read the threads: "
                   f"{', '.join(nested)}; what it wrote before that follows)")
    elif chosen is None and blocks and ends_with_module_list and not ended:
        out.append("(faulthandler's dump was cut short: the process died while it read the other "
                   "threads, which ran on in native code; what it wrote before that follows)")
    body: list[str] = []
    if chosen is None:
        if blocks:
            # no stack of the crashing thread: one line per thread it did write (its newest frame)
            out.append(f"(the crashing thread's stack was not written; the {len(blocks)} other "
                       f"thread{'s' if len(blocks) > 1 else ''} it wrote, newest frame each:)")
            body = [f"  {b[0].split(' (', 1)[0]}: {b[1].strip() if len(b) > 1 else '<no Python frame>'}"
                    for b in blocks]
        shown: list[list[str]] = blocks
    else:
        shown = [chosen]
        body = ["", *_fold_internal(chosen)]
    room = max(max_lines - len(out) - 1, 4)
    if len(body) > room:
        # keep the top of the first block (the frames nearest the fault), say what was left out
        body = [*body[:room], f"[... {len(body) - room} more lines ...]"]
    out += body
    others = len(blocks) - len(shown)
    if others > 0:
        out.append(f"({others} other thread{'s' if others > 1 else ''} in the record)")
    return "\n".join(out)


_CELL_FRAME = ("/ipykernel_", "<ipython-input-")


#: Frames of the machinery that runs a cell (IPython, ipykernel and what they run on), folded
#: into one line in the stack shown: the user's frames and the native call are what matter.
_INTERNAL = re.compile(
    r'File "[^"]*(?:/(?:IPython|ipykernel|traitlets|tornado|zmq|jupyter_client|jupyter_core|asyncio|concurrent)/'
    r'|/(?:runpy|threading|selectors|ipykernel_launcher)\.py"|/bin/i?python3?")')


def _fold_internal(block: list[str]) -> list[str]:
    """``block`` with every run of two or more internal frames (:data:`_INTERNAL`) folded into
    ``[... N frames of IPython/ipykernel internals ...]``."""
    out: list[str] = []
    run: list[str] = []

    def flush() -> None:
        if len(run) >= 2:
            out.append(f"  [... {len(run)} frames of IPython/ipykernel internals ...]")
        else:
            out.extend(run)
        run.clear()

    for ln in block:
        if _INTERNAL.search(ln):
            run.append(ln)
        else:
            flush()
            out.append(ln)
    flush()
    return out


def _crashing_thread(blocks: list[list[str]]) -> list[str] | None:
    for b in reversed(blocks):
        if b[0].startswith(("Current thread", "Stack (most recent call first)")):
            return b
    for b in blocks:
        if any(m in ln for ln in b[1:] for m in _CELL_FRAME):
            return b
    for b in blocks:
        if any("_run_module_as_main" in ln or ln.rstrip().endswith("in <module>") for ln in b[1:]):
            return b
    return None


def _stack(rec: CrashRecord) -> str:
    """:func:`faulthandler_summary` of the record's dump; a dump of CPython 3.10+ (which ends
    complete dumps with ``Extension modules: ...``) without that end was cut short."""
    v = rec.python_version
    return faulthandler_summary(rec.faulthandler, ends_with_module_list=None if v is None else tuple(v[:2]) >= (3, 10))


def crash_text(self: CrashRecord, width: int | None = None, listed: bool = False) -> str:
    """A :class:`~cudnn_magic.model.crash.CrashRecord` as plain text (terminal IPython, ``text/plain``,
    ``cudnn-magic crashes``): native log lines cut to ``width`` columns (default: ``COLUMNS``, the
    terminal's, else 100) with their size (:func:`~cudnn_magic.render.paths.cut_line`; whole in
    HTML and JSON). ``listed``: one record of many (``cudnn-magic crashes``), so the heading names
    the kernel (:func:`who_died`) instead of "the previous kernel" (what the next kernel says)."""
    width = width or terminal_width()
    pid = f", pid {self.kernel_pid}" if self.kernel_pid else ""
    who = who_died(self) if listed else "the previous kernel"
    out: list[str] = []

    def say(text: str) -> None:  # our own words, wrapped to the width
        out.extend(wrap(text, width, "", "  "))

    def quote(text: str) -> None:  # the record's own lines (source, log, stack): cut, never wrapped
        out.extend(("    " + cut_line(ln, width - 4)).rstrip() for ln in text.rstrip("\n").splitlines())

    say(f"cudnn-magic: {who} died {_when(self)}{pid}; here is what it left behind.")
    say(_record_line(self))
    if self.cell_source is not None:
        say(f"It was running {_cell_label(self)}:")
        quote(self.cell_source or "(empty cell)")
    else:
        say("The cell it was running is not known (no cell had started, or the record lacks it).")
    if self.log_tail.strip():
        say("The native log lines it printed last (fd 2):")
        quote(_log_lines(self.log_tail, 20 if listed else 40))
    else:
        say("It printed nothing on native stderr before it died.")
    if self.faulthandler.strip():
        say("Python stack at the moment of death (faulthandler):")
        for ln in _stack(self).splitlines():  # the dump's lines cut, the summary's own notes "(...)" wrapped
            if ln.startswith("("):
                out.extend(wrap(ln, width, "    ", "     "))
            else:
                quote(ln)
    elif self.faulthandler_on:
        say(KILLED_NOTE)
    if self.diagnoses:
        out.append(diagnoses_text(self.diagnoses, width=width).rstrip("\n"))
    else:
        say("No cuDNN-related cause found in the record.")
    if self.problems:
        say("Problems with the record: " + "; ".join(self.problems))
    return safe_text("\n".join(out))  # a file name may hold undecodable bytes


def crash_summary(rec: CrashRecord, width: int | None = None) -> str:
    """One line for a record beyond the newest in ``cudnn-magic crashes``: when, its record key
    (what ``--key`` takes), its pid, the cell, the diagnosis ids (or that none was found); cut to
    ``width`` columns."""
    width = width or terminal_width()
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(rec.died)) if rec.died is not None else "unknown time"
    cell = f", In [{rec.cell_number}]" if rec.cell_number is not None and rec.cell_number > 0 else ""
    pid = f", pid {rec.kernel_pid}" if rec.kernel_pid else ""
    found = ", ".join(d.id for d in rec.diagnoses) if rec.diagnoses else "no cuDNN-related cause found"
    return cut_line(safe_text(f"  {when}  {rec.key}{pid}{cell}: {found}"), width)


def crash_html(self: CrashRecord) -> str:
    """A :class:`~cudnn_magic.model.crash.CrashRecord` as compact escaped HTML (no JavaScript)."""
    e = html.escape
    pid = f", pid {self.kernel_pid}" if self.kernel_pid else ""
    parts = [('<div class="cudnn-magic-crash" style="border-left:4px solid #c62828;padding:4px 8px;'
              'margin:2px 0;font-size:13px">'),
             f"<b>cudnn-magic: the previous kernel died {e(_when(self))}{e(pid)}</b>",
             f'<div style="font-size:11px;color:#666">{e(_record_line(self))}</div>']
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
                     f"{e(_stack(self))}</pre></details>")
    elif self.faulthandler_on:
        parts.append(f"<div>{e(KILLED_NOTE)}</div>")
    if self.problems:
        parts.append("<div><i>Problems with the record: " + e("; ".join(self.problems)) + "</i></div>")
    parts.append("</div>")
    return safe_text("".join(parts))


register(CrashRecord, crash_text, crash_html)
