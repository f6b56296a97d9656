"""Fix buttons: one button per fix; click -> preview (command, env change, file diff, restart)
with Apply and Cancel; Apply runs in a background thread and streams output; then what was
done and how to undo it (``%cudnn_fix --undo ID``).

Threading (ipywidgets' documentation on asynchronous widgets; docs/facts.md "IPython and Jupyter behaviour"): the apply thread only
assigns widget trait values (``HTML.value``, ``Button.disabled``); it never prints or
displays. Each fix has its own panel, so a long ``pip install`` in one does not block the
feedback of the others. On ipykernel 7 the thread sets the creating cell's parent header for
itself (``set_thread_parent``), as the memory panel does, so its updates stay tied to the cell.

ipywidgets is imported when :func:`fix_box` is called, never at module import.
"""

from __future__ import annotations

import html
import os
import threading
from collections.abc import Sequence
from typing import Any, Callable

from IPython import get_ipython

from .. import fixes as _fixes
from ..fixes.catalogue import ADVICE_ONLY  # fix ids that never execute anything: the button shows the advice
from ..model import Fix, FixResult, Report
from ..render.fixes import button_label
from .threads import start_cell_thread


def _label(text: str, limit: int = 60) -> str:
    """A button label of at most ``limit`` characters, cut with an ellipsis."""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


__all__ = ["ADVICE_ONLY", "MAX_LOG_LINES", "FixPanel", "fix_box"]

MAX_LOG_LINES = 200  # lines of streamed output kept in the log widget


def _shell() -> Any:
    try:
        return get_ipython()
    except Exception:  # noqa: BLE001
        return None


class FixPanel:
    """The button of one fix and its preview/apply/undo panel.

    Attributes:
        button: the fix's button (``disabled`` with the reason as tooltip when it cannot apply).
        preview: HTML of the plan shown after a click.
        apply_button, cancel_button: shown with the preview.
        log: streamed command output (last :data:`MAX_LOG_LINES` lines).
        status: what was done and how to undo it, or the error.
        plan: the current :class:`~cudnn_magic.fixes.FixPlan` (after a click).
        result: the :class:`~cudnn_magic.fixes.FixResult` (after Apply).
        thread: the apply thread while it runs.
    """

    def __init__(self, W: Any, fix: Fix, report: Report | None, context: dict[str, Any] | None,
                 planner: Callable[..., Any], applier: Callable[..., Any]) -> None:
        self.W = W
        self.fix = fix
        self.report = report
        self.context = dict(context or {})
        self._planner = planner
        self._applier = applier
        self.plan: Any = None
        self.result: Any = None
        self.thread: threading.Thread | None = None
        self._lines: list[str] = []
        self._lock = threading.Lock()
        self.button = W.Button(description=self._short(fix.title) or fix.id,
                               tooltip=f"{fix.id}: {fix.title}: {fix.action}"[:500],
                               layout=W.Layout(width="auto"))
        self.preview = W.HTML()
        self.choices = W.HBox([])
        self.apply_button = W.Button(description="Apply", button_style="warning")
        self.cancel_button = W.Button(description="Cancel")
        self.log = W.HTML()
        self.status = W.HTML()
        self.actions = W.HBox([self.apply_button, self.cancel_button])
        self.panel = W.VBox([self.preview, self.choices, self.actions, self.log, self.status])
        self.panel.layout.display = "none"
        self.button.on_click(lambda _b: self.show_preview())
        self.apply_button.on_click(lambda _b: self.start_apply())
        self.cancel_button.on_click(lambda _b: self.cancel())
        self.disabled_reason = ""
        self._initial_state()

    # ----------------------------------------------------------------- state
    def _initial_state(self) -> None:
        if self.fix.id not in _fixes.FIXES:
            # Advice from the diagnosis itself (e.g. install-cuda-build): preview shows its action.
            self.button.description = self._short("Show: " + (self.fix.title or self.fix.id))
            return
        if self.fix.id in ADVICE_ONLY:
            self.button.description = self._short("Show: " + (self.fix.title or self.fix.id))
            return
        # cheap at display time; the preview verifies (a what-if, a fresh process) before Apply
        p = self._plan(dict(self.context, verify=False))
        if not p.applicable and not p.choices:
            self._disable(p.reason)

    def _short(self, title: str) -> str:
        """The title in a few words (:func:`cudnn_magic.render.fixes.button_label`), paths named by
        the cuDNN release the report found in them."""

        r = self.report
        folders = {os.path.realpath(c.directory): c.version for c in
                   (*(r.cudnn_installed if r else ()), *(r.cudnn_loaded if r else ())) if c.version and c.is_main}
        return button_label(title, folders)

    def _disable(self, reason: str) -> None:
        self.button.disabled = True
        self.button.tooltip = f"{self.fix.title}. Cannot apply here: {reason}"[:500]
        self.disabled_reason = reason

    def _plan(self, context: dict[str, Any]) -> Any:
        if self.fix.id not in _fixes.FIXES:
            step = _fixes.Step("advice", self.fix.title, snippet=self.fix.action)
            return _fixes.FixPlan(self.fix.id, self.fix.title, False, "advice only: nothing is run from here",
                                  steps=(step,), restart_required=self.fix.restart_required)
        if self.fix.id in _fixes.DIAGNOSIS_WORDED and self.fix.title and self.fix.action and "advice" not in context:
            # the preview says what the diagnosis above it said, for this error's versions
            context = dict(context, advice={"title": self.fix.title, "action": self.fix.action,
                                            "restart_required": self.fix.restart_required})
        try:
            return self._planner(self.fix.id, self.report, context=context)
        except Exception as exc:  # noqa: BLE001
            return _fixes.FixPlan(self.fix.id, self.fix.title, False, f"{type(exc).__name__}: {exc}")

    # ----------------------------------------------------------------- actions
    def show_preview(self, context: dict[str, Any] | None = None, plan: Any = None) -> None:
        """Compute the plan now (live facts) and show it with Apply and Cancel. ``plan``: a plan
        already computed and shown in an output above (``%cudnn_fix ID``): the panel then holds
        only the controls, not a second copy of the plan."""
        if self.thread is not None and self.thread.is_alive():
            return
        if plan is not None:
            self.plan = plan
            self.preview.value = ""
        else:
            ctx = dict(self.context, **(context or {}))
            self.plan = self._plan(ctx)
            self.preview.value = self.plan.html()
        self.log.value = ""
        self.status.value = ""
        buttons = []
        for label, choice_ctx in self.plan.choices:
            b = self.W.Button(description=_label(label), tooltip=label, layout=self.W.Layout(width="auto"))
            b.on_click(lambda _b, c=choice_ctx: self.show_preview(c))
            buttons.append(b)
        self.choices.children = tuple(buttons)
        self.apply_button.disabled = not self.plan.applicable
        self.apply_button.tooltip = "" if self.plan.applicable else self.plan.reason[:500]
        advice = all(step.kind == "advice" for step in self.plan.steps) and not self.plan.applicable
        self.apply_button.layout.display = "none" if advice else None  # advice: nothing to apply
        self.actions.layout.display = None
        self.panel.layout.display = None

    def cancel(self) -> None:
        """Hide the preview; nothing is done."""
        if self.thread is not None and self.thread.is_alive():
            return
        self.plan = None
        self.preview.value = ""
        self.choices.children = ()
        self.log.value = ""
        self.actions.layout.display = "none"
        self.status.value = "<i>Cancelled: nothing was changed.</i>"  # stays visible under the button row

    def start_apply(self) -> threading.Thread | None:
        """Apply the previewed plan in a background thread; returns the thread."""
        if self.plan is None or not self.plan.applicable:
            return None
        if self.thread is not None and self.thread.is_alive():
            return self.thread
        self.apply_button.disabled = True
        self.cancel_button.disabled = True
        self.button.disabled = True
        self.status.value = "<i>Applying…</i>"
        self.thread = start_cell_thread(_shell(), self._run, self.plan, name=f"cudnn-magic-fix-{self.fix.id}")
        return self.thread

    def _on_line(self, line: str) -> None:
        with self._lock:
            self._lines.append(line)
            del self._lines[:-MAX_LOG_LINES]
            text = "\n".join(self._lines)
        self.log.value = f"<pre style='max-height:16em;overflow:auto'>{html.escape(text)}</pre>"

    def _run(self, plan: Any) -> None:
        try:
            result = self._applier(plan, stream=self._on_line)
        except Exception as exc:  # noqa: BLE001 - the thread never dies with a traceback
            result = _fixes.FixResult(plan.fix_id, False, error=f"{type(exc).__name__}: {exc}")
        self.result = result
        self.status.value = result_html(result)
        self.cancel_button.disabled = False
        self.button.disabled = False
        self.actions.layout.display = "none"


def result_html(result: FixResult) -> str:
    """What was done, the error if any, and the undo command, as HTML (``FixResult.html``)."""
    return result.html()


def fix_box(fixes: Sequence[Fix], report: Report | None = None, *, context: dict[str, Any] | None = None,
            planner: Callable[..., Any] | None = None, applier: Callable[..., Any] | None = None) -> Any:
    """A widget with one button per fix (deduplicated by id, first wins).

    Args:
        fixes: from a Finding or Diagnosis.
        report: live facts the plans are computed from.
        context: passed to :func:`cudnn_magic.fixes.plan` (e.g. ``{"devices": ["cpu", "cuda:0"]}``).
        planner, applier: default :func:`cudnn_magic.fixes.plan` / :func:`~cudnn_magic.fixes.apply`.

    Returns:
        an ``ipywidgets.VBox``; its ``panels`` attribute lists the :class:`FixPanel` objects.
    """
    import ipywidgets as W  # start-up cost: ipywidgets (about 100 ms) only for a widget

    seen: set[str] = set()
    panels: list[FixPanel] = []
    for f in fixes:
        if f.id in seen:
            continue
        seen.add(f.id)
        panels.append(FixPanel(W, f, report, context, planner or _fixes.plan, applier or _fixes.apply))
    box = W.VBox([W.HBox([p.button for p in panels], layout=W.Layout(flex_flow="row wrap"))]
                 + [p.panel for p in panels])
    box.panels = panels
    return box
