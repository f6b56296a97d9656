"""Crash forensics: why the previous kernel died, shown when the next one loads the extension.

Many cuDNN faults end the kernel with no traceback at all: TensorFlow's ``Check failed: status
== CUDNN_STATUS_SUCCESS (7 vs. 0)Failed to set cuDNN stream.`` then ``abort()``, a copy without
``libcudnn_graph.so.9`` that aborts with ``Invalid handle. Cannot load symbol cudnnGetVersion``,
a segfault in a mismatched cuDNN. The notebook then gets nothing from that cell, not even its
earlier prints (FACTS.md, "Kernel death"; ``research/jupyter-lab-notes.md`` §3). The fd-2
capture (:mod:`cudnn_magic.capture`) writes every native byte to an on-disk record as it
arrives; this module reads that record in the NEXT kernel.

At ``%load_ext cudnn_magic`` (loaded first, before :mod:`cudnn_magic.shell.annotate` starts the new
capture), :mod:`cudnn_magic.shell.crash_notice`:

1. finds this kernel's key (:func:`cudnn_magic.capture.tee.record_key`: the connection file's
   basename, stable across restarts by the kernel manager and by JupyterLab's auto-restart;
   ``terminal-<tty>`` or ``process-<ppid>`` in terminal IPython) and, under it, the newest
   record of ANOTHER process that is dead, did not exit cleanly and was not shown yet;
2. claims it (creates ``shown`` in the record with ``O_CREAT|O_EXCL``, so two loaders never
   both show it and a second ``%load_ext`` shows nothing) and displays, above everything else,
   one text/plain + text/html bundle: when the previous kernel died, the cell it was running
   (its source), the native log lines it printed last, the Python stack at the moment of death
   (``faulthandler``), and the diagnosis with its fixes from
   :func:`cudnn_magic.engines.diagnose.diagnose` exactly as an annotated error cell shows it (plus fix
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

The layout: this module is the engine's entry (the faulthandler dump parser,
:func:`faulthandler_summary`, and the record API below); the store is
:mod:`cudnn_magic.capture.records`, the record :mod:`cudnn_magic.model.crash`, its rendering
:mod:`cudnn_magic.render.crash`, the notice at load :mod:`cudnn_magic.shell.crash_notice`, the
command line :mod:`cudnn_magic.cli.crashes`.

``%load_ext`` stays cheap: without a crash to show, this costs a few ``listdir``/``stat``/
small-file reads (and, at most once an hour, the cleanup scan); nothing else is imported.
"""

from __future__ import annotations

import re

from ..capture.records import (CONNECTION_NAME, FAULTHANDLER_NAME, MAX_FAULTHANDLER, MAX_LOG_FOR_DIAGNOSIS,
                              MAX_LOG_FOR_DISPLAY, SHOWN_NAME, _safe_text, all_crashes, claim_previous, cleanup,
                              last_crash, previous_crashes, read_record, valid_key)
from ..model.crash import CrashRecord
from ..render.crash import key_description

__all__ = ["CONNECTION_NAME", "FAULTHANDLER_NAME", "MAX_FAULTHANDLER", "MAX_LOG_FOR_DIAGNOSIS", "MAX_LOG_FOR_DISPLAY",
           "SHOWN_NAME", "CrashRecord", "_safe_text", "all_crashes", "claim_previous", "cleanup",
           "faulthandler_summary", "key_description", "last_crash", "previous_crashes", "read_record", "valid_key"]


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
