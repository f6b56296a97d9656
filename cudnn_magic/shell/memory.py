"""``%gpu_memory``: GPU memory per GPU and process, as the live panel
(:class:`cudnn_magic.ui.memory_panel.MemoryPanel`) in a notebook, a table in terminal IPython.
The engine is :mod:`cudnn_magic.engines.memory`; this module parses the line and picks the view.
Registered on first use (:mod:`.extension`).
"""

from __future__ import annotations

import atexit
import sys
import time
from typing import Any

from IPython.core import magic_arguments
from IPython.core.magic import Magics, line_magic, magics_class

from ..engines import memory as engine  # its functions looked up at each use (tests replace ``sample``)
from ..render.memory import snapshot_text
from ..ui import memory_panel as mp
from .args import parse_magic_line
from .magics import register, unregister

__all__ = ["MemoryMagics", "load_ipython_extension", "unload"]


def _is_notebook(shell: Any) -> bool:
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


def _watch_terminal(interval_s: float) -> mp.MemoryView:
    """Redraw the table in place (ANSI) every ``interval_s`` seconds until Ctrl-C."""
    s = engine.sample_within()
    if s.error and not s.gpus:  # nothing to watch: the returned view says why, once
        return mp.MemoryView(s)
    try:
        while True:
            sys.stdout.write("\x1b[H\x1b[J" + snapshot_text(s) + "\n(Ctrl-C to stop)\n")
            sys.stdout.flush()
            time.sleep(interval_s)
            s = engine.sample_within()
    except KeyboardInterrupt:
        pass
    return mp.MemoryView(s)


def _interval(text: str) -> float:
    return engine.interval_seconds(text)


@magics_class
class MemoryMagics(Magics):
    """``%gpu_memory``: live GPU memory per GPU and process."""

    @line_magic
    @magic_arguments.magic_arguments()
    @magic_arguments.argument("--interval", type=_interval, default=None, metavar="SECONDS",
                              help=f"seconds between samples (default {mp.DEFAULT_INTERVAL_S:g}); "
                                   "changes the running sampler's interval")
    @magic_arguments.argument("--stop", action="store_true", help="stop the sampler thread")
    @magic_arguments.argument("--watch", action="store_true",
                              help="terminal IPython: redraw the table in place until Ctrl-C")
    def gpu_memory(self, line: str = "") -> Any:
        """Show GPU memory per visible GPU (MIG instances as their own rows): used/total,
        free, this kernel's share and other processes, with a history plot; it keeps updating
        while other cells run.

        In a notebook this returns the :class:`MemoryPanel` (one sampler thread per kernel;
        running it again reuses it). In terminal IPython it returns a table
        (``--watch`` refreshes it in place). With no NVIDIA driver it says so in one line.

        In [1]: %load_ext cudnn_magic
        In [2]: %gpu_memory --interval 0.5
        In [3]: %gpu_memory --stop
        """
        args = parse_magic_line(self.gpu_memory, line)
        if args.stop:
            panel = mp._PANEL
            if panel is None or not panel.running:
                print("No GPU memory sampler is running.")
                return None
            panel.stop()
            return None
        shell = self.shell
        if not _is_notebook(shell):
            if args.watch:
                return _watch_terminal(args.interval or mp.DEFAULT_INTERVAL_S)
            return mp.MemoryView(engine.sample_within())
        with mp._PANEL_LOCK:
            panel = mp._PANEL
            if panel is None or panel.closed:
                # never on this (the kernel's main) thread without a deadline: a hung driver would hang the cell
                first = engine.sample_within()
                hung = (first.error or "").startswith(engine.NOT_ANSWERING)
                if first.error and not first.gpus and not hung:
                    return mp.MemoryView(first)  # one line: no driver / no NVML; no thread
                panel = mp.MemoryPanel(interval_s=args.interval or mp.DEFAULT_INTERVAL_S, shell=shell)
                panel._apply(first)
                mp._PANEL = panel
        panel.start(args.interval)
        return panel


def _atexit_stop() -> None:
    panel = mp._PANEL
    if panel is not None:
        try:
            panel.stop(timeout_s=1.0)
        except Exception:  # noqa: BLE001
            pass


def load_ipython_extension(ip: Any) -> None:
    """Register ``%gpu_memory`` (IPython loads this module on its first use: :mod:`.extension`
    declares it lazily)."""
    register(ip, MemoryMagics)
    atexit.register(_atexit_stop)


def unload(ip: Any) -> None:
    """Stop the sampler, close the panel's widgets, and unregister ``%gpu_memory``."""
    with mp._PANEL_LOCK:
        panel, mp._PANEL = mp._PANEL, None
    if panel is not None:
        panel.close()
    atexit.unregister(_atexit_stop)
    unregister(ip, MemoryMagics)
