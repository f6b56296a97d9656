"""The live GPU memory panel of ``%gpu_memory`` (the magic: :mod:`cudnn_magic.shell.memory`)
(ipywidgets) fed by one sampler thread per kernel.

Layout: one row per visible GPU or MIG instance (name, used/total bar, free memory, this
kernel's share, other processes, a history sparkline of the last minutes with the peak
marked), a Stop button and a status line.

Threading rules (ipywidgets' documentation on asynchronous widgets; docs/facts.md "IPython and Jupyter behaviour"): the sampler
thread ONLY assigns widget trait values; it never prints or displays. It runs in a copy of
the creating cell's context and sets that cell's parent header for itself
(``set_thread_parent`` on ipykernel 7; ipykernel 6 keeps one process-wide parent), so its
``comm_msg`` updates stay tied to the panel's cell (ipywidgets #4001/#4020, ipykernel #1450).
A failing sample shows on the status line or the GPU's row; the thread keeps going.

This module loads with ``%gpu_memory``'s first use; ipywidgets is imported when a panel is built.
"""

from __future__ import annotations

import html
import threading
import time
from collections import deque
from typing import Any, Callable

from ..engines import memory as engine
from ..model import GpuMemory, MemorySnapshot
from ..render.memory import (
    row_detail_html,
    row_label_html,
    snapshot_html,
    snapshot_summary_html,
    snapshot_summary_text,
    snapshot_text,
    sparkline_svg,
)
from .fallback import display_with_controls
from .threads import start_cell_thread

__all__ = ["THREAD_NAME", "MemoryPanel", "MemoryView", "current_panel"]

THREAD_NAME = "cudnn-magic-gpu-memory"
DEFAULT_INTERVAL_S = 1.0
HISTORY_S = 300.0  # the sparkline shows the last five minutes

_PANEL: MemoryPanel | None = None
_PANEL_LOCK = threading.Lock()


def current_panel() -> MemoryPanel | None:
    """The kernel's one panel, or None."""
    return _PANEL


class MemoryView:
    """A snapshot that displays as a table: text in terminals, HTML in notebooks.

    Attributes:
        snapshot: the :class:`~cudnn_magic.model.MemorySnapshot` (bytes).
    """

    def __init__(self, snapshot: MemorySnapshot) -> None:
        self.snapshot = snapshot

    def __repr__(self) -> str:
        return snapshot_text(self.snapshot)

    def _repr_html_(self) -> str:
        return snapshot_html(self.snapshot)


def _slot(g: GpuMemory) -> str:
    return f"{g.index}:{g.visible_index}:{int(g.mig)}"


def _close_tree(w: Any) -> None:
    """Close a widget, its children, and its Layout/Style widgets (each has its own comm)."""
    for child in getattr(w, "children", ()) or ():
        _close_tree(child)
    for attr in ("layout", "style"):
        sub = getattr(w, attr, None)
        if sub is not None and hasattr(sub, "close"):
            sub.close()
    w.close()


class _Row:
    """Widgets of one GPU row and its history of ``(timestamp_s, used_bytes)``."""

    def __init__(self, W: Any, history_s: float) -> None:
        self.label = W.HTML()
        self.bar = W.FloatProgress(value=0.0, min=0.0, max=1.0, bar_style="success",
                                   layout=W.Layout(width="320px"))
        self.detail = W.HTML()
        self.plot = W.HTML()
        self.box = W.HBox([W.VBox([self.label, self.bar, self.detail]), self.plot])
        self.history: deque[tuple[float, int | None]] = deque(maxlen=4096)
        self.history_s = history_s
        self.total_bytes: int | None = None

    def update(self, g: GpuMemory, now: float) -> None:
        # The plot (and its peak) first, then the label: each widget's new value is its own comm
        # message, and a front end between the two must never show a current value above the
        # peak beside it ("8.5 GiB used" beside "peak 7.8 GiB")
        if g.total_bytes:
            self.total_bytes = g.total_bytes
        self.history.append((now, g.used_bytes))
        while self.history and now - self.history[0][0] > self.history_s:
            self.history.popleft()
        self.plot.value = sparkline_svg(list(self.history), self.total_bytes)
        self.label.value = row_label_html(g)
        if g.total_bytes:
            frac = (g.used_bytes or 0) / g.total_bytes
            self.bar.value = max(0.0, min(1.0, frac))
            self.bar.bar_style = "danger" if frac > 0.9 else ("warning" if frac > 0.75 else "success")
        self.detail.value = row_detail_html(g)

    def gone(self, reason: str) -> None:
        self.detail.value = row_detail_html(None, reason)
        self.bar.bar_style = "danger"

    def close(self) -> None:
        _close_tree(self.box)


class MemoryPanel:
    """The live panel: widgets plus (optionally) the sampler thread.

    Args:
        interval_s: seconds between samples.
        sampler: returns a :class:`MemorySnapshot` (default :func:`cudnn_magic.engines.memory.sample`).
        shell: the IPython shell (for the parent header of the creating cell), or None.
        history_s: seconds of history the sparkline keeps.
    """

    def __init__(self, interval_s: float = DEFAULT_INTERVAL_S, sampler: Callable[[], MemorySnapshot] | None = None,
                 shell: Any = None, history_s: float = HISTORY_S) -> None:
        import ipywidgets as W  # start-up cost: ipywidgets (about 100 ms) only for a widget

        if sampler is None:  # each sample with a deadline: a hung NVML call never stalls the panel
            sampler = engine.sample_within
        self._W = W
        self.interval_s = float(interval_s)
        self._sampler: Callable[[], MemorySnapshot] = sampler
        self._shell = shell
        self._history_s = history_s
        self._rows: dict[str, _Row] = {}
        self._key_by_slot: dict[str, str] = {}  # a lost GPU has no UUID any more: keep its row
        self._apply_lock = threading.Lock()
        self._stop_event = threading.Event()
        self._thread: threading.Thread | None = None
        self.samples = 0
        self.last: MemorySnapshot | None = None
        self.closed = False
        self.title = W.HTML("<b>GPU memory</b>")
        self.status = W.HTML()
        self.stop_button = W.Button(description="Stop", icon="stop", tooltip="stop sampling GPU memory",
                                    layout=W.Layout(width="90px"))
        self.stop_button.on_click(lambda _b: self.stop())
        self.rows_box = W.VBox()
        self.widget = W.VBox([W.HBox([self.title, self.stop_button]), self.rows_box, self.status])

    # -- sampling ---------------------------------------------------------------------
    def refresh(self) -> MemorySnapshot:
        """Take one sample now and update the widgets (synchronous; safe from any thread)."""
        s = self._sampler()
        self._apply(s)
        return s

    def _apply(self, s: MemorySnapshot) -> None:
        with self._apply_lock:
            now = s.timestamp or time.time()
            seen = set()
            added = False
            for g in s.gpus:
                slot = _slot(g)
                if g.uuid:
                    key = self._key_by_slot[slot] = g.uuid
                else:
                    key = self._key_by_slot.get(slot, slot)
                seen.add(key)
                row = self._rows.get(key)
                if row is None:
                    row = self._rows[key] = _Row(self._W, self._history_s)
                    added = True
                row.update(g, now)
            for key, row in self._rows.items():
                if key not in seen:
                    row.gone(s.error or "this GPU is no longer reported by NVML")
            if added:
                self.rows_box.children = tuple(r.box for r in self._rows.values())
            self.samples += 1
            self.last = s
            when = time.strftime("%H:%M:%S", time.localtime(now))
            state = f"every {self.interval_s:g} s" if self.running else "stopped"
            err = ""
            if s.error:
                err = f' &middot; <span style="color:#d1242f">{html.escape(s.error)}</span>'
            self.status.value = f"<small>sample {self.samples} at {when} &middot; {state}{err}</small>"

    @property
    def running(self) -> bool:
        """True while the sampler thread is alive and not asked to stop."""
        t = self._thread
        return t is not None and t.is_alive() and not self._stop_event.is_set()

    def start(self, interval_s: float | None = None) -> None:
        """Start the sampler thread (or just change its interval when it already runs).

        Captures the current cell's parent header and context here, in the caller's thread.
        """
        if interval_s is not None:
            self.interval_s = max(0.05, float(interval_s))
        if self.closed:
            raise RuntimeError("this GPU memory panel was closed")
        if self.running:
            return
        self._stop_event = threading.Event()
        self._thread = start_cell_thread(self._shell, self._loop, self._stop_event, name=THREAD_NAME)
        self.stop_button.disabled = False
        self.stop_button.description = "Stop"

    def _loop(self, stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                self.refresh()
            except Exception as exc:  # noqa: BLE001 - show it, keep sampling
                try:
                    self.status.value = (f'<small style="color:#d1242f">sampling failed: '
                                         f"{html.escape(type(exc).__name__)}: {html.escape(str(exc))}</small>")
                except Exception:  # noqa: BLE001
                    pass
            stop.wait(self.interval_s)

    def stop(self, timeout_s: float | None = None) -> None:
        """Stop the sampler thread and wait for it (not when called from the thread itself)."""
        self._stop_event.set()
        t = self._thread
        if t is not None and t is not threading.current_thread():
            t.join(timeout_s if timeout_s is not None else self.interval_s + 5.0)
        self._thread = None if (t is None or not t.is_alive()) else t
        try:
            self.stop_button.disabled = True
            self.stop_button.description = "Stopped"
            if self.last is not None:
                self.status.value = self.status.value.replace(f"every {self.interval_s:g} s", "stopped")
        except Exception:  # noqa: BLE001 - widgets may already be closed
            pass

    def close(self) -> None:
        """Stop sampling and close every widget (their comms go away)."""
        self.stop()
        with self._apply_lock:
            for row in self._rows.values():
                row.close()
            self._rows.clear()
            _close_tree(self.widget)
        self.closed = True

    # -- display ----------------------------------------------------------------------
    def _ipython_display_(self) -> None:
        s = self.last if self.last is not None else MemorySnapshot(gpus=(), error="no sample yet")
        controls = ("(The live panel goes here where Jupyter's widget manager runs; run %gpu_memory again for "
                    "a new sample, or %gpu_memory --watch in a terminal.)")
        display_with_controls(snapshot_summary_text(s, self.interval_s), snapshot_summary_html(s, self.interval_s),
                              self.widget, controls)

    def __repr__(self) -> str:
        state = "running" if self.running else ("closed" if self.closed else "stopped")
        return f"<GPU memory panel: {len(self._rows)} GPU(s), every {self.interval_s:g} s, {state}>"
