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

import dataclasses
import html
import logging
from collections.abc import Sequence
from typing import Any, Callable

from IPython.display import display

from ..capture.fastfind import memmem_finder
from ..engines.crash import diagnose_record
from ..engines.diagnose import diagnose, gpu_unused_warnings
from ..fixes.catalogue import FIXES
from ..knowledge.matcher import keyword_lines
from ..model import Diagnosis, Report
from ..model.crash import CrashRecord
from ..render.diagnosis import diagnoses_html, diagnoses_text
from ..render.fixes import BUTTONS_NEED_WIDGETS, fix_commands_html, fix_commands_text
from ..render.paths import PathNames
from ..ui.fallback import widget_bundle
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
        kw: dict[str, Any] = {"exception": exception, "log": log, "traceback": traceback}
        if exc_type is not None:
            kw["exc_type"] = exc_type
        found = diagnose(report=None, **kw)
        if not found or not facts:
            return list(found)
        return list(diagnose(report=self.report(), **kw) or found)

    def unused_gpu_warnings(self, data: bytes, before: int | None = None) -> tuple[list[Diagnosis], str]:
        """The "GPU silently unused" diagnoses of a cell's fd-2 bytes (only the lines that hold a
        warning literal, found in bytes by :func:`cudnn_magic.knowledge.keyword_lines`, reach the
        knowledge base), and those lines as text; nothing decoded when no line holds one.
        ``before``: no literal ends after this offset of ``data`` (the capture helper's flag)."""
        lines = keyword_lines(data, find=memmem_finder(), before=before)
        if not lines:
            return [], ""
        text = lines.decode("utf-8", "replace")
        found = gpu_unused_warnings(text, joined=False)
        if not found:
            return [], text
        return list(gpu_unused_warnings(text, report=self.report(), joined=False) or found), text

    # -- display ---------------------------------------------------------------------------------

    def show(self, ip: Any, diagnoses: Sequence[Diagnosis], log_text: str) -> None:
        """Display the annotation (``log_text``: the display-safe slice for its "details"), with
        the ``%cudnn_fix`` line that applies its fixes from a cell (readable in every export,
        terminal and front end), then, in a kernel, the fix buttons of the strongest diagnosis
        in an output of their own. Nothing displayed may hold text that cannot be sent (a lone
        surrogate) or that reorders or escapes the display."""
        in_kernel = _is_kernel_shell(ip)
        names = self._path_names()
        text = diagnoses_text(diagnoses, names=names)
        page = diagnoses_html(diagnoses, log_slice=log_text, names=dataclasses.replace(names, used={}))
        ids = [fx.id for d in diagnoses[:1] for fx in (getattr(d, "fixes", ()) or ()) if fx.id in FIXES]
        if ids:
            text += "\n" + fix_commands_text(ids, buttons=in_kernel)
            page += fix_commands_html(ids, buttons=in_kernel)
        display({"text/plain": safe_text(text), "text/html": safe_text(page)}, raw=True)
        if in_kernel:
            try:
                self._show_widgets(diagnoses)
            except Exception:  # widgets are a bonus
                log.debug("cudnn_magic: widgets not shown", exc_info=True)

    def _path_names(self) -> PathNames:
        """Short names for paths, knowing the cuDNN release of each folder the last check saw."""
        r = self.report()
        return PathNames.for_copies((*r.cudnn_installed, *r.cudnn_loaded)) if r is not None else PathNames.here()

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
        except Exception:  # fall back to buttons that show the action text
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
            # the annotation above says what each fix does and how to run it from a cell: this output
            # holds only the buttons (what front ends without a widget manager show is one line)
            display(widget_bundle(W.VBox(children), BUTTONS_NEED_WIDGETS,
                                  f"<div class='cm-muted'>{html.escape(BUTTONS_NEED_WIDGETS)}</div>"), raw=True)

    def show_crash(self, ip: Any, rec: CrashRecord) -> None:
        """Display a crash record (diagnosed with this kernel's facts when not yet): one
        ``text/plain`` + ``text/html`` bundle with the ``%cudnn_fix`` line that applies its fixes
        from a cell, then, in a kernel, the fix buttons in an output of their own."""
        if not rec.diagnoses:
            diagnose_record(rec, facts=self.report)
        in_kernel = _is_kernel_shell(ip)
        fixes = [fx for d in rec.diagnoses for fx in (getattr(d, "fixes", ()) or ())]
        text, page = rec.text(), rec.html()
        ids = [fx.id for fx in fixes if fx.id in FIXES]
        if ids:
            text += "\n" + fix_commands_text(ids, buttons=in_kernel)
            page += fix_commands_html(ids, buttons=in_kernel)
        display({"text/plain": text, "text/html": page}, raw=True)
        if in_kernel and fixes:
            try:
                display(widget_bundle(fix_box(fixes, self.report()), BUTTONS_NEED_WIDGETS,
                                      f"<div class='cm-muted'>{BUTTONS_NEED_WIDGETS}</div>"), raw=True)
            except Exception:  # buttons are a bonus
                log.debug("cudnn_magic: crash fix buttons not shown", exc_info=True)
