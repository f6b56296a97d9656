"""What happens once a cell failed, a cell printed a "GPU silently unused" warning, or the
previous kernel's crash is shown: diagnose with the live facts, display the annotation (one
``text/plain`` + ``text/html`` bundle) and, in a kernel, a button per fix.

The hooks that run with every cell (:mod:`.annotate`) and the crash notice at load
(:mod:`.crash_notice`) only call an :class:`Explainer`; :mod:`.extension` creates it on the first
call, so ``%load_ext`` loads neither the knowledge base, the renderers, the fix registry nor
ipywidgets. The live facts come from ``report()``, given by the extension: the probes load only
when a diagnosis needs them (an error unrelated to cuDNN never consults them).
"""

from __future__ import annotations

import html
import logging
from typing import Any, Callable, Sequence

from IPython.display import display

from ..capture.fastfind import memmem_finder
from ..engines.crash import diagnose_record
from ..engines.diagnose import diagnose, gpu_unused_warnings
from ..knowledge.matcher import keyword_lines
from ..model import Diagnosis, Report
from ..model.crash import CrashRecord
from ..render.diagnosis import diagnoses_html, diagnoses_text
from ..ui.fallback import display_widget, fixes_fallback
from ..ui.fix_buttons import fix_box
from ..util.safetext import safe_text

log = logging.getLogger("cudnn_magic")

__all__ = ["Explainer"]


def _is_kernel_shell(ip: Any) -> bool:
    return any(c.__name__ == "ZMQInteractiveShell" for c in type(ip).__mro__)


class Explainer:
    """Diagnoses and their display, for one shell.

    Args:
        report: returns this kernel's cached check report, or ``None`` when it cannot be had
            (never raises).
    """

    def __init__(self, report: Callable[[], Report | None]) -> None:
        self.report = report

    # -- diagnosis -------------------------------------------------------------------------------

    def diagnose(self, exception: str, log: str | bytes, *, exc_type: str | None = None, traceback: str = "",
                 facts: bool = True) -> list[Diagnosis]:
        """:func:`cudnn_magic.engines.diagnose.diagnose` of the text, then again with the live
        facts (``facts``) when something cuDNN-related was found: the probes are not consulted
        for errors unrelated to cuDNN."""
        kw: dict[str, Any] = dict(exception=exception, log=log, traceback=traceback)
        if exc_type is not None:
            kw["exc_type"] = exc_type
        found = diagnose(report=None, **kw)
        if not found or not facts:
            return list(found)
        return list(diagnose(report=self.report(), **kw) or found)

    def unused_gpu_warnings(self, data: bytes) -> tuple[list[Diagnosis], str]:
        """The "GPU silently unused" diagnoses of a cell's fd-2 bytes (only the lines that hold a
        warning literal, found in bytes by :func:`cudnn_magic.knowledge.keyword_lines`, reach the
        knowledge base), and those lines as text; nothing decoded when no line holds one."""
        lines = keyword_lines(data, find=memmem_finder())
        if not lines:
            return [], ""
        text = lines.decode("utf-8", "replace")
        found = gpu_unused_warnings(text, joined=False)
        if not found:
            return [], text
        return list(gpu_unused_warnings(text, report=self.report(), joined=False) or found), text

    # -- display ---------------------------------------------------------------------------------

    def show(self, ip: Any, diagnoses: Sequence[Diagnosis], log_text: str) -> None:
        """Display the annotation (``log_text``: the display-safe slice for its "details"), then,
        in a kernel, the fix buttons of the strongest diagnosis. Nothing displayed may hold
        text that cannot be sent (a lone surrogate) or that reorders or escapes the display."""
        display({"text/plain": safe_text(diagnoses_text(diagnoses)),
                 "text/html": safe_text(diagnoses_html(diagnoses, log_slice=log_text))}, raw=True)
        if _is_kernel_shell(ip):
            try:
                self._show_widgets(diagnoses)
            except Exception:  # noqa: BLE001 - widgets are a bonus
                log.debug("cudnn_magic: widgets not shown", exc_info=True)

    def _show_widgets(self, diagnoses: Sequence[Diagnosis]) -> None:
        """One button per fix of the strongest diagnosis (preview, Apply, undo through the fix
        registry); where the registry cannot offer them, buttons that show the action text."""
        import ipywidgets as W  # ipywidgets (about 100 ms) only when a widget is drawn

        fixes = []
        seen = set()
        for d in diagnoses[:1]:  # buttons for the strongest diagnosis; the others' fixes are in its HTML
            for fx in getattr(d, "fixes", ()) or ():
                if fx.id not in seen:
                    seen.add(fx.id)
                    fixes.append(fx)
        try:  # the fix registry: preview (computed from live facts), Apply, undo
            fix_widget = fix_box(fixes, self.report()) if fixes else None
        except Exception:  # noqa: BLE001 - fall back to buttons that show the action text
            log.debug("cudnn_magic: fix buttons unavailable", exc_info=True)
            fix_widget = None
        if fix_widget is not None:
            fixes = []
        out = W.HTML(value="")
        buttons = []
        for fx in fixes:
            b = W.Button(description=(fx.title[:38] + "…") if len(fx.title) > 39 else fx.title,
                         tooltip=fx.title, button_style="warning", layout=W.Layout(width="auto"))

            def click(_b: Any, fx: Any = fx) -> None:
                restart = " Restart the kernel afterwards." if getattr(fx, "restart_required", False) else ""
                reason = f"<br><i>{html.escape(fx.reason)}</i>" if getattr(fx, "reason", "") else ""
                out.value = (f"<div><b>{html.escape(fx.title)}</b>: do this{html.escape(restart)}"
                             f"<pre style='white-space:pre-wrap'>{html.escape(fx.action)}</pre>{reason}</div>")

            b.on_click(click)
            buttons.append(b)
        children: list = []
        if fix_widget is not None:
            children.append(fix_widget)
        if buttons:
            children.append(W.HBox(buttons))
            children.append(out)
        # The captured log slice is in the HTML bundle's <details> toggle (also kept in saved notebooks).
        if children:
            text, page = fixes_fallback([fx for d in diagnoses[:1] for fx in (getattr(d, "fixes", ()) or ())])
            display_widget(W.VBox(children), text, page)

    def show_crash(self, ip: Any, rec: CrashRecord) -> None:
        """Display a crash record (diagnosed with this kernel's facts when not yet): one
        ``text/plain`` + ``text/html`` bundle, then, in a kernel, a button per fix."""
        if not rec.diagnoses:
            diagnose_record(rec, facts=self.report)
        display({"text/plain": rec.text(), "text/html": rec.html()}, raw=True)
        if not _is_kernel_shell(ip) or not rec.diagnoses:
            return
        fixes = [fx for d in rec.diagnoses for fx in (getattr(d, "fixes", ()) or ())]
        if fixes:
            try:
                display_widget(fix_box(fixes, self.report()), *fixes_fallback(fixes))
            except Exception:  # noqa: BLE001 - buttons are a bonus
                log.debug("cudnn_magic: crash fix buttons not shown", exc_info=True)
