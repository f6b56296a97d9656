"""Crash forensics: why the previous kernel died, shown when the next one loads the extension.

Many cuDNN faults end the kernel with no traceback at all: TensorFlow's ``Check failed: status
== CUDNN_STATUS_SUCCESS (7 vs. 0)Failed to set cuDNN stream.`` then ``abort()``, a copy without
``libcudnn_graph.so.9`` that aborts with ``Invalid handle. Cannot load symbol cudnnGetVersion``,
a segfault in a mismatched cuDNN. The notebook then gets nothing from that cell, not even its
earlier prints (FACTS.md, "Kernel death"; ``research/jupyter-lab-notes.md`` §3). The fd-2
capture (:mod:`cudnn_magic.capture`) writes every native byte to an on-disk record as it
arrives; this module reads that record in the NEXT kernel.

At ``%load_ext cudnn_magic`` (loaded first, before :mod:`cudnn_magic.shell.annotate` starts the new
capture), :func:`load`:

1. finds this kernel's key (:func:`cudnn_magic.capture.tee.record_key`: the connection file's
   basename, stable across restarts by the kernel manager and by JupyterLab's auto-restart;
   ``terminal-<tty>`` or ``process-<ppid>`` in terminal IPython) and, under it, the newest
   record of ANOTHER process that is dead, did not exit cleanly and was not shown yet;
2. claims it (creates ``shown`` in the record with ``O_CREAT|O_EXCL``, so two loaders never
   both show it and a second ``%load_ext`` shows nothing) and displays, above everything else,
   one text/plain + text/html bundle: when the previous kernel died, the cell it was running
   (its source), the native log lines it printed last, the Python stack at the moment of death
   (``faulthandler``), and the diagnosis with its fixes from
   :func:`cudnn_magic.diagnose.diagnose` exactly as an annotated error cell shows it (plus fix
   buttons in a kernel). Loaded from the startup config (no cell running), the display waits
   for the first cell's ``pre_run_cell`` so it lands in a cell's output;
3. enables ``faulthandler`` with an explicit file, ``all_threads=True``: ipykernel changes
   ``faulthandler.enable``'s default file to ``sys.__stderr__``, and a dump there was cut off
   5/5 times in the measurements. The file is opened in the key directory and, once the
   capture has created this process's record directory, renamed into it as
   ``faulthandler.log`` (the open file keeps working across the rename);
4. removes records of kernels that no longer exist (see :func:`cleanup` for the policy).

A graceful restart or shutdown leaves ``clean_exit: true`` in ``meta.json`` (the capture's
``atexit``) and shows nothing. Nothing from a record is ever executed or evaluated: it is read
as bytes, decoded with replacement, control characters replaced, and HTML-escaped. A record
that is truncated or corrupt (bad JSON, missing files, binary garbage) is still shown, with
what is wrong with it listed under "problems with the record".

``%load_ext`` stays cheap: without a crash to show, this costs a few ``listdir``/``stat``/
small-file reads (and, at most once an hour, the cleanup scan); nothing else is imported.
"""

from __future__ import annotations

import errno
import html
import json
import logging
import os
import re
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger("cudnn_magic")

MAX_LOG_FOR_DIAGNOSIS = 4 << 20
"""Bytes of the record (from the last cell's start, newest win) given to ``diagnose`` (4 MiB,
the log bound)."""

MAX_LOG_FOR_DISPLAY = 16 << 10
"""Bytes of the record's tail shown as "native log lines it printed last" (16 KiB)."""

MAX_FAULTHANDLER = 64 << 10
"""Bytes of ``faulthandler.log`` read (64 KiB; the newest, which hold the main thread)."""

RECORD_MAX_AGE_S = 7 * 86400
"""A key directory whose kernel no longer exists (connection file gone, every process of it
dead) is removed once its newest file is older than this (7 days)."""

ORPHAN_MAX_AGE_S = 30 * 86400
"""A key directory with no live process is removed after this (30 days) even if its connection
file is still there (servers that crashed leave connection files behind)."""

CLEANUP_EVERY_S = 3600.0
"""The cleanup scan runs at most this often (seconds, per records root)."""

HELPER_SETTLE_S = 1.0
"""Longest wait (seconds) for a live capture helper to finish logging a kernel that just died."""

KILLED_NOTE = ("No fatal signal was caught (faulthandler wrote nothing): the process was most likely killed from "
               "outside with SIGKILL - the out-of-memory killer, or a restart or shutdown of a kernel that did not "
               "answer in time.")

FAULTHANDLER_NAME = "faulthandler.log"
SHOWN_NAME = "shown"
CONNECTION_NAME = "connection"

# --------------------------------------------------------------------------- the record


@dataclass
class CrashRecord:
    """What a record says about a kernel that died.

    Attributes:
        key: the record key (see :func:`key_description`).
        directory: the record's instance directory.
        kernel_pid: the dead kernel's process id (``None`` if unknown).
        started: when that kernel installed the capture (epoch seconds) or ``None``.
        died: when it died (epoch seconds: the capture helper's ``kernel_exited``, else the
            newest file time) or ``None``.
        cell_number: execution count of the cell it was running, if known.
        cell_source: that cell's source (first 8,092 bytes of UTF-8), or ``None``.
        cell_started: when that cell started (epoch seconds) or ``None``.
        log: the native stderr from that cell's start to the end of the record (newest
            :data:`MAX_LOG_FOR_DIAGNOSIS` bytes), display-safe text.
        log_tail: the newest :data:`MAX_LOG_FOR_DISPLAY` bytes of the record, display-safe text.
        log_missing: bytes of that cell's output no longer in the bounded log (rotated away).
        faulthandler: the Python stack(s) faulthandler wrote at the fatal signal, or "".
        python_version: the dead kernel's Python as a tuple such as ``(3, 11, 7)`` (from the
            record's ``meta.json``), or ``None`` for records of older cudnn-magic.
        faulthandler_on: the record has a faulthandler file (so an empty one means no fatal
            signal was caught: SIGKILL from outside, such as the out-of-memory killer or a
            restart of a kernel that did not answer the shutdown request).
        problems: what is wrong with the record (truncated, corrupt, missing files).
        shown: whether the record had been shown before this read.
        clean_exit: the helper saw a clean exit (then it is not a crash).
        alive: the kernel process still runs.
        diagnoses: :class:`~cudnn_magic.model.Diagnosis` list, after :meth:`diagnose`.
    """

    key: str
    directory: str
    kernel_pid: int | None = None
    started: float | None = None
    died: float | None = None
    cell_number: int | None = None
    cell_source: str | None = None
    cell_started: float | None = None
    log: str = ""
    log_tail: str = ""
    log_missing: int = 0
    faulthandler: str = ""
    faulthandler_on: bool = False
    python_version: tuple | None = None
    problems: list[str] = field(default_factory=list)
    shown: bool = False
    clean_exit: bool = False
    alive: bool = False
    diagnoses: list = field(default_factory=list)

    def stack_summary(self) -> str:
        """:func:`faulthandler_summary` of :attr:`faulthandler`; a dump of CPython 3.10+ (which
        ends complete dumps with ``Extension modules: ...``) without that end was cut short."""
        v = self.python_version
        return faulthandler_summary(self.faulthandler,
                                    ends_with_module_list=None if v is None else tuple(v[:2]) >= (3, 10))

    @property
    def crashed(self) -> bool:
        """Dead without a clean exit."""
        return not self.alive and not self.clean_exit

    def diagnose(self, with_facts: bool = True) -> list:
        """Diagnose the record's log (and its faulthandler stack) like an annotated error cell:
        ``diagnose(log=..., traceback=...)``; live facts of THIS process are consulted only when
        something cuDNN-related was found (``with_facts``). Fills and returns :attr:`diagnoses`."""
        from .diagnose import diagnose

        kw = dict(exception="", log=self.log or self.log_tail, traceback=self.faulthandler)
        found = diagnose(report=None, **kw)
        if found and with_facts:
            try:
                from .check import cached_report

                found = diagnose(report=cached_report(), **kw) or found
            except Exception:  # noqa: BLE001
                log.debug("cudnn_magic: facts for the crash diagnosis failed", exc_info=True)
        self.diagnoses = list(found)
        return self.diagnoses

    def to_json(self) -> dict:
        """JSON-ready dict (diagnoses as their ids)."""
        d = asdict(self)
        d["diagnoses"] = [getattr(x, "id", str(x)) for x in self.diagnoses]
        d["crashed"] = self.crashed
        return d

    # -- rendering -------------------------------------------------------------------------------

    def _when(self) -> str:
        if self.died is None:
            return "at an unknown time"
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.died))
        ago = time.time() - self.died
        rel = f"{ago:.0f} s ago" if ago < 120 else f"{ago / 60:.0f} min ago" if ago < 7200 else f"{ago / 3600:.1f} h ago"
        return f"at {when} ({rel})"

    def _cell_label(self) -> str:
        name = f"cell In [{self.cell_number}]" if self.cell_number is not None and self.cell_number > 0 else "this cell"
        if self.cell_started is not None and self.died is not None and self.died >= self.cell_started:
            return f"{name} (it had been running {self.died - self.cell_started:.1f} s)"
        return name

    def text(self) -> str:
        """Plain text (terminal IPython, ``text/plain``)."""
        from .render.diagnosis import diagnoses_text

        pid = f", pid {self.kernel_pid}" if self.kernel_pid else ""
        out = [f"cudnn-magic: the previous kernel died {self._when()}{pid}; here is what it left behind.",
               f"Record: {key_description(self.key)}; {self.directory}"]
        if self.cell_source is not None:
            out.append(f"It was running {self._cell_label()}:")
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
        from .safetext import safe_text

        return safe_text("\n".join(out))  # a file name may hold undecodable bytes

    def html(self) -> str:
        """Compact escaped HTML (no JavaScript)."""
        from .render.diagnosis import diagnoses_html

        e = html.escape
        pid = f", pid {self.kernel_pid}" if self.kernel_pid else ""
        parts = ['<div class="cudnn-magic-crash" style="border-left:4px solid #c62828;padding:4px 8px;'
                 'margin:2px 0;font-size:13px">',
                 f"<b>cudnn-magic: the previous kernel died {e(self._when())}{e(pid)}</b>",
                 f'<div style="font-size:11px;color:#666">Record: {e(key_description(self.key))}; '
                 f"<code>{e(self.directory)}</code></div>"]
        if self.cell_source is not None:
            parts.append(f"<div>It was running {e(self._cell_label())}:</div>"
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
        from .safetext import safe_text

        return safe_text("".join(parts))

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict:
        return {"text/plain": self.text(), "text/html": self.html()}

    def __repr__(self) -> str:
        return self.text()


def key_description(key: str) -> str:
    """How a key was made, for the report (terminal IPython says which key it used)."""
    if key.startswith("terminal-"):
        return f"{key} (terminal IPython: keyed by the terminal device /dev/{key[9:].replace('-', '/')})"
    if key.startswith("process-"):
        return f"{key} (no terminal and no kernel: keyed by the parent process id {key[8:]})"
    return f"{key} (keyed by the kernel's connection file {key}.json)"


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
        body = [""] + _fold_internal(chosen)
    room = max(max_lines - len(out) - 1, 4)
    if len(body) > room:
        # keep the top of the first block (the frames nearest the fault), say what was left out
        body = body[:room] + [f"[... {len(body) - room} more lines ...]"]
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


_PROMPT = re.compile(r"(?:In \[\d+\]: |   \.\.\.: )+")


def _strip_prompts(text: str) -> str:
    """Without terminal IPython's prompts (``In [2]: ``, ``   ...: ``): a shell reading its
    input without prompt_toolkit (``--simple-prompt``, no tty for stdout) writes them to fd 2,
    where the next native line is glued onto them (``In [2]: F0000 ... Check failed``). A line
    that was only a prompt goes; a prompt before a native line is cut off."""
    if "In [" not in text and "...: " not in text:
        return text
    out = []
    for line in text.split("\n"):
        m = _PROMPT.match(line)
        if m:
            line = line[m.end():]
            if not line.strip():
                continue
        out.append(line)
    return "\n".join(out)


def _safe_text(data: bytes) -> str:
    """Decode with replacement and replace control characters other than tab/newline,
    bidirectional controls and lone surrogates (:func:`cudnn_magic.safetext.safe_text`: binary
    garbage stays printable, terminal escapes are neutralised, nothing reorders the text)."""
    from .safetext import safe_text

    return safe_text(data.decode("utf-8", "replace"))


def _read_bytes(path: Path, limit: int, tail: bool = True) -> bytes:
    """At most ``limit`` bytes of a regular file (the newest when ``tail``), never following a
    symbolic link. Raises OSError."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    try:
        import stat

        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        if tail and st.st_size > limit:
            os.lseek(fd, st.st_size - limit, os.SEEK_SET)
        chunks = []
        left = limit
        while left > 0:
            b = os.read(fd, min(left, 1 << 20))
            if not b:
                break
            chunks.append(b)
            left -= len(b)
        return b"".join(chunks)
    finally:
        os.close(fd)


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def _create_exclusive(path: Path) -> int:
    """Create ``path`` (0o600, write-only) with ``O_CREAT | O_EXCL | O_NOFOLLOW``: never through
    a link. A leftover of that name (a file of a dead process with the same pid, or a planted
    link) is removed first, never followed. Returns the fd; raises OSError."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | _NOFOLLOW
    try:
        return os.open(path, flags, 0o600)
    except FileExistsError:
        os.unlink(path)
        return os.open(path, flags, 0o600)


def _pid_alive(pid: int | None) -> bool:
    if not pid or pid <= 0:
        return False
    from .capture.helper import _pid_alive as alive

    return alive(pid)


def _num(v: Any, kind: type = float) -> Any:
    """A number from untrusted JSON, or ``None``."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    try:
        return kind(v)
    except (ValueError, OverflowError):
        return None


def _instance_pid(name: str) -> int | None:
    try:
        return int(name.rsplit("-", 1)[1])
    except (IndexError, ValueError):
        return None


def read_record(directory: Path | str, key: str | None = None, settle_s: float = 0.0) -> CrashRecord:
    """Read one instance directory of the capture (never raises for a bad record: what is
    wrong goes to :attr:`CrashRecord.problems`).

    Args:
        directory: ``<records_root>/<key>/<time_ns>-<pid>``.
        key: the key (default: the parent directory's name).
        settle_s: if the capture helper still runs for a kernel that is gone, wait up to this
            many seconds for it to finish logging.
    """
    from .capture import helper as H
    from .capture.tee import read_slice

    d = Path(directory)
    rec = CrashRecord(key=key or d.parent.name, directory=str(d))
    problems = rec.problems
    meta: dict = {}
    meta_path = d / "meta.json"
    deadline = time.monotonic() + settle_s
    while True:
        try:
            raw = _read_bytes(meta_path, 1 << 20, tail=False)
            try:
                obj = json.loads(raw.decode("utf-8"))
                if isinstance(obj, dict):
                    meta = obj
                else:
                    problems.append("meta.json is not a JSON object")
            except (ValueError, UnicodeDecodeError):
                meta = {}
                problems.append(f"meta.json is corrupt or truncated ({len(raw)} bytes of invalid JSON)")
        except FileNotFoundError:
            problems.append("meta.json is missing")
        except OSError as exc:
            problems.append(f"meta.json cannot be read ({exc.strerror or exc})")
        helper_pid = _num(meta.get("helper_pid"), int)
        if (settle_s and meta and meta.get("kernel_exited") is None and not meta.get("clean_exit")
                and _pid_alive(helper_pid) and not _pid_alive(_num(meta.get("kernel_pid"), int))
                and time.monotonic() < deadline):
            time.sleep(0.05)
            problems.clear()
            continue
        break
    rec.kernel_pid = _num(meta.get("kernel_pid"), int) or _instance_pid(d.name)
    pv = meta.get("python_version")
    if isinstance(pv, str) and re.fullmatch(r"\d{1,3}(\.\d{1,4}){1,2}", pv):
        rec.python_version = tuple(int(x) for x in pv.split("."))
    rec.started = _num(meta.get("started"))
    rec.clean_exit = meta.get("clean_exit") is True
    exited = _num(meta.get("kernel_exited"))
    if rec.kernel_pid == os.getpid():
        rec.alive = True  # this very process (a reload)
    else:
        rec.alive = exited is None and _pid_alive(rec.kernel_pid)
    rec.shown = (d / SHOWN_NAME).exists()

    # the last cell: the shared state file is the truth (written by the kernel itself, there
    # even if the helper was killed); meta.json's copy is at most 2 s old
    cell = None
    try:
        buf = _read_bytes(d / "state", H.STATE_SIZE, tail=False)
        if len(buf) < H.STATE_SIZE:
            problems.append(f"state is truncated ({len(buf)} of {H.STATE_SIZE} bytes)")
        seq = int.from_bytes(buf[H.CELL_AT:H.CELL_AT + 8], "little") if len(buf) >= H.CELL_AT + 8 else 0
        if seq & 1:
            problems.append("the kernel died while recording the cell's start (the cell source may be cut)")
        cell = H.read_cell_record(buf)
        if H.read_clean_flag(buf):
            # written by the kernel itself into pages allocated at install: it lands even when
            # the disk is full and meta.json could not be rewritten (issue 13)
            rec.clean_exit = True
    except FileNotFoundError:
        problems.append("state is missing")
        if "meta.json is missing" in problems:
            # nothing of this record was ever written (the capture could not start, e.g. on a
            # full disk): that is not a kernel that died
            rec._nothing_written = True  # type: ignore[attr-defined]
    except OSError as exc:
        problems.append(f"state cannot be read ({exc.strerror or exc})")
    except Exception as exc:  # noqa: BLE001 - garbage in the state file
        problems.append(f"state is corrupt ({type(exc).__name__})")
    mcell = meta.get("last_cell")
    if cell is None and isinstance(mcell, dict):
        cell = mcell
    elif cell is not None and isinstance(mcell, dict) and _num(mcell.get("seq"), int) not in (None, cell.get("seq")) \
            and (_num(mcell.get("seq"), int) or 0) > (cell.get("seq") or 0):
        cell = mcell
    if isinstance(cell, dict):
        src = cell.get("source")
        rec.cell_source = _safe_text(src.encode("utf-8", "replace")) if isinstance(src, str) else None
        rec.cell_number = _num(cell.get("n"), int)
        rec.cell_started = _num(cell.get("t"))
        cell_offset = _num(cell.get("offset"), int)
    else:
        cell_offset = None

    # the log
    try:
        names = [n for n in os.listdir(d) if n.startswith("fd2.") and n.endswith(".log")]
    except OSError as exc:
        names = []
        problems.append(f"the record directory cannot be listed ({exc.strerror or exc})")
    ends = []
    import stat as _stat

    for n in list(names):
        try:
            start = int(n[4:-4])
            st = os.lstat(d / n)
            if not _stat.S_ISREG(st.st_mode):
                names.remove(n)
                problems.append(f"log segment {n!r} is not a regular file (a link?): not read")
                continue
            ends.append(start + st.st_size)
        except (ValueError, OSError):
            problems.append(f"unexpected log file {n!r}")
    end = max(ends) if ends else 0
    if not names:
        if meta.get("offset"):
            problems.append("the log segments are missing")
    else:
        logged = _num(meta.get("offset"), int)
        if logged is not None and end < logged:
            problems.append(f"the log is shorter than recorded ({end} of {logged} bytes): truncated")
        tail = read_slice(d, max(0, end - MAX_LOG_FOR_DISPLAY), end)
        rec.log_tail = _strip_prompts(_safe_text(bytes(tail)))
        start = cell_offset if cell_offset is not None and 0 <= cell_offset <= end else max(0, end - MAX_LOG_FOR_DIAGNOSIS)
        cut = max(0, end - start - MAX_LOG_FOR_DIAGNOSIS)
        sl = read_slice(d, start + cut, end)
        rec.log = _strip_prompts(_safe_text(bytes(sl)))
        rec.log_missing = cut + sl.truncated
    if meta.get("log_error"):
        problems.append(f"the capture could not write the whole log ({str(meta.get('log_error'))[:200]})")
    if meta.get("meta_error"):
        problems.append(f"{str(meta.get('meta_error'))[:200]} (meta.json may be older than the kernel's end)")

    # faulthandler: in the record, or still in the key directory if the kernel died before the
    # capture made its record directory known
    for fh in (d / FAULTHANDLER_NAME, d.parent / f"faulthandler-{rec.kernel_pid}.pending"):
        try:
            rec.faulthandler = _safe_text(_read_bytes(fh, MAX_FAULTHANDLER))
            rec.faulthandler_on = True
            break
        except FileNotFoundError:
            continue
        except OSError as exc:
            problems.append(f"{fh.name} cannot be read ({exc.strerror or exc})")
            break

    times = [x for x in (exited, _num(meta.get("ended"))) if x is not None]
    if times:
        rec.died = min(times)
    elif not rec.alive:
        mt = []
        for n in names + [FAULTHANDLER_NAME, "meta.json", "state"]:
            try:
                mt.append(os.lstat(d / n).st_mtime)
            except OSError:
                pass
        rec.died = max(mt) if mt else None
    return rec


def _instances(keydir: Path) -> list[Path]:
    """Instance directories of a key, newest first (names are ``<time_ns>-<pid>``); links and
    anything but a directory are left out (never followed)."""
    import stat as _stat

    try:
        names = os.listdir(keydir)
    except OSError:
        return []
    out = []
    for n in names:
        head = n.split("-", 1)[0]
        if head.isdigit() and _instance_pid(n) is not None:
            try:
                if not _stat.S_ISDIR(os.lstat(keydir / n).st_mode):
                    continue
            except OSError:
                continue
            out.append((int(head), n))
    out.sort(reverse=True)
    return [keydir / n for _, n in out]


def valid_key(key: object) -> bool:
    """Is ``key`` a record key: one path component as :func:`cudnn_magic.capture.tee.record_key`
    makes them (letters, digits, ``-``, ``_``, ``.``; not starting with a dot; at most 120
    characters)? ``..``, ``/etc``, ``a/b`` and the empty string are not."""
    if not isinstance(key, str) or not key or len(key) > 120 or key.startswith("."):
        return False
    return all(c.isalnum() or c in "-_." for c in key)


def _key_dir(key: str, root: Path) -> Path | None:
    """``root/key`` when ``key`` is valid and that is a real directory of this user (never a
    link), else ``None``."""
    import stat as _stat

    if not valid_key(key):
        return None
    kd = root / key
    try:
        st = os.lstat(kd)
    except OSError:
        return None
    if not _stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
        return None
    return kd


def _claim(directory: Path) -> bool:
    """Mark a record as shown, atomically: True for the one caller that created the marker."""
    try:
        fd = os.open(directory / SHOWN_NAME, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    except FileExistsError:
        return False
    except OSError:
        log.debug("cudnn_magic: cannot mark %s as shown", directory, exc_info=True)
        return True  # show it anyway (it may show again next time)
    try:
        os.write(fd, json.dumps({"shown_at": time.time(), "by_pid": os.getpid()}).encode())
    except OSError:
        pass
    finally:
        os.close(fd)
    return True


def previous_crashes(key: str, root: Path | None = None, include_shown: bool = False,
                     settle_s: float = 0.0) -> list[CrashRecord]:
    """Records under ``key`` of OTHER processes that died without a clean exit, newest first.

    Raises:
        ValueError: ``key`` is not one path component (see :func:`valid_key`).
    """
    from .capture.tee import records_root

    if not valid_key(key):
        raise ValueError(f"not a record key (one path component such as kernel-1234abcd or terminal-pts-3): {key!r}")
    keydir = _key_dir(key, root or records_root())
    if keydir is None:
        return []
    out = []
    me = os.getpid()
    for inst in _instances(keydir):
        if _instance_pid(inst.name) == me:
            continue
        if not include_shown and (inst / SHOWN_NAME).exists():
            continue
        rec = read_record(inst, key, settle_s=settle_s)
        if rec.crashed and not getattr(rec, "_nothing_written", False) and (include_shown or not rec.shown):
            out.append(rec)
    return out


def claim_previous(key: str, root: Path | None = None) -> tuple[CrashRecord | None, int]:
    """The newest unshown crash record of ``key``, marked as shown, and how many older unshown
    crash records were marked with it (they are mentioned, not shown)."""
    recs = previous_crashes(key, root, settle_s=HELPER_SETTLE_S)
    if not recs:
        return None, 0
    newest = None
    older = 0
    for rec in recs:
        if not _claim(Path(rec.directory)):
            continue
        if newest is None:
            newest = rec
        else:
            older += 1
    if newest is not None and older:
        newest.problems.append(f"{older} earlier kernel death(s) under this key were not shown")
    return newest, older


def last_crash(key: str | None = None, root: Path | None = None) -> CrashRecord | None:
    """The newest crash record (shown or not) of ``key`` (default: this process's key), with
    its diagnoses; ``None`` if there is none. Reads only; marks nothing."""
    from .capture.tee import record_key

    if key is None:
        try:
            from IPython import get_ipython

            ip = get_ipython()
        except Exception:  # noqa: BLE001
            ip = None
        key = record_key(ip)
    recs = previous_crashes(key, root, include_shown=True)
    if not recs:
        return None
    recs[0].diagnose(with_facts=False)
    return recs[0]


def all_crashes(root: Path | None = None) -> list[CrashRecord]:
    """Every crash record under the records root (every key), newest first (for the CLI)."""
    from .capture.tee import records_root

    root = root or records_root()
    out = []
    try:
        keys = sorted(os.listdir(root))
    except OSError:
        return []
    for key in keys:
        if valid_key(key):
            out += previous_crashes(key, root, include_shown=True)
    out.sort(key=lambda r: r.died or 0, reverse=True)
    return out


# --------------------------------------------------------------------------- cleanup


def cleanup(root: Path | None = None, now: float | None = None, keep_key: str | None = None,
            force: bool = False) -> list[str]:
    """Remove the records of kernels that no longer exist. Policy:

    * A key directory is removed when no process of it is alive (no instance's kernel or
      capture helper runs), its kernel's connection file is gone (the path saved in
      ``<key>/connection``; ``<jupyter runtime dir>/<key>.json`` when none was saved; terminal
      and process keys have none) and its newest file is older than :data:`RECORD_MAX_AGE_S`
      (7 days) — so a crash record, shown or not, stays at least a week for
      :func:`last_crash` and ``cudnn-magic crashes``.
    * A key directory with no live process is removed after :data:`ORPHAN_MAX_AGE_S` (30 days)
      even if a stale connection file remains.
    * Within a live key the capture keeps the newest 4 instance directories
      (:data:`cudnn_magic.capture.tee.KEEP_INSTANCES`); the dead kernel's record is never
      among the ones it drops on the next start.
    * ``faulthandler-<pid>.pending`` files (the kernel died before its record directory was
      known) older than 7 days with a dead pid are removed.

    Runs at most every :data:`CLEANUP_EVERY_S` (1 hour) per root unless ``force``; ``keep_key``
    (this kernel's) is never removed. Only directories owned by this user are touched, and
    symbolic links are never followed.

    Returns:
        The removed key directories.
    """
    from .capture.tee import records_root

    root = root or records_root()
    now = time.time() if now is None else now
    stamp = root / ".cleanup-stamp"
    if not force:
        try:
            if now - os.lstat(stamp).st_mtime < CLEANUP_EVERY_S:
                return []
        except OSError:
            pass
    try:
        try:
            fd = os.open(stamp, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC | _NOFOLLOW, 0o600)
        except OSError as exc:
            if exc.errno != errno.ELOOP:
                raise
            fd = _create_exclusive(stamp)  # a link planted there: replaced, never followed
        try:
            os.utime(fd, (now, now))
        finally:
            os.close(fd)
    except OSError:
        pass
    removed = []
    try:
        keys = os.listdir(root)
    except OSError:
        return []
    import stat as _stat

    for key in keys:
        if key.startswith(".") or key == keep_key:
            continue
        kd = root / key
        try:
            st = os.lstat(kd)
        except OSError:
            continue
        if not _stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
            continue
        try:
            if _key_gone(kd, key, now):
                shutil.rmtree(kd, ignore_errors=True)
                removed.append(str(kd))
            else:
                _prune_pending(kd, now)
        except Exception:  # noqa: BLE001 - cleanup never harms the session
            log.debug("cudnn_magic: cleanup of %s failed", kd, exc_info=True)
    return removed


def _key_gone(kd: Path, key: str, now: float) -> bool:
    newest = 0.0
    for inst in _instances(kd):
        meta: dict = {}
        try:
            meta = json.loads(_read_bytes(inst / "meta.json", 1 << 20, tail=False))
            if not isinstance(meta, dict):
                meta = {}
        except (OSError, ValueError):
            pass
        kpid = _num(meta.get("kernel_pid"), int) or _instance_pid(inst.name)
        if meta.get("kernel_exited") is None and not meta.get("ended") and _pid_alive(kpid):
            return False
        if _pid_alive(_num(meta.get("helper_pid"), int)):
            return False
        try:
            for n in os.listdir(inst):
                newest = max(newest, os.lstat(inst / n).st_mtime)
        except OSError:
            pass
    try:
        for n in os.listdir(kd):
            newest = max(newest, os.lstat(kd / n).st_mtime)
    except OSError:
        pass
    age = now - newest
    if age >= ORPHAN_MAX_AGE_S:
        return True
    if age < RECORD_MAX_AGE_S:
        return False
    if key.startswith(("terminal-", "process-")):
        return True
    conn = None
    try:
        conn = _read_bytes(kd / CONNECTION_NAME, 4096, tail=False).decode("utf-8", "replace").strip()
    except OSError:
        try:
            from jupyter_core.paths import jupyter_runtime_dir

            conn = os.path.join(jupyter_runtime_dir(), key + ".json")
        except Exception:  # noqa: BLE001
            conn = None
    return not (conn and os.path.exists(conn))


def _prune_pending(kd: Path, now: float) -> None:
    try:
        names = os.listdir(kd)
    except OSError:
        return
    for n in names:
        if n.startswith("faulthandler-") and n.endswith(".pending"):
            p = kd / n
            try:
                pid = int(n[len("faulthandler-"):-len(".pending")])
                if not _pid_alive(pid) and now - os.lstat(p).st_mtime > RECORD_MAX_AGE_S:
                    os.unlink(p)
            except (ValueError, OSError):
                pass


__all__ = ["CrashRecord", "all_crashes", "claim_previous", "cleanup", "key_description",
           "faulthandler_summary", "last_crash", "previous_crashes", "read_record",
           "valid_key"]
