"""``%cudnn_explain [--facts] [TEXT]`` (and ``%%cudnn_explain``) and ``%cudnn_annotate on|off``:
explain the last error or a pasted log; turn the annotation of failing cells on or off (the
annotation itself, the exception hook, is :mod:`.annotate`). Registered on first use
(:mod:`.extension`)."""

from __future__ import annotations

import html
import re
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, line_magic, magics_class

from ..engines.check import cached_report
from ..engines.diagnose import diagnose
from ..model import Report
from ..render.diagnosis import diagnoses_html, diagnoses_text
from ..render.paths import PathNames
from ..util.safetext import safe_text
from ..util.textinput import binary_kind
from .annotate import _display_safe_log, annotator
from .args import usage_error
from .magics import register, unregister

__all__ = ["AnnotateMagics", "Explanation", "load_ipython_extension", "unload"]


class Explanation:
    """What ``%cudnn_explain`` returns: diagnoses that display as HTML in notebooks and as text
    in terminals. ``.diagnoses`` is the list (strongest first)."""

    def __init__(self, diagnoses: list, log_slice: str = "", message: str = "", report: Report | None = None) -> None:
        self.diagnoses = list(diagnoses)
        self.log_slice = log_slice
        self.message = message
        self.report = report  # the live facts used, if any: they name each cuDNN folder as the annotation does

    def _names(self) -> PathNames:
        r = self.report
        return PathNames.for_copies((*r.cudnn_installed, *r.cudnn_loaded)) if r is not None else PathNames.here()

    def _text(self) -> str:
        if not self.diagnoses:
            return self.message or "cudnn-magic: nothing cuDNN-related found."
        return diagnoses_text(self.diagnoses, names=self._names())

    def _html(self) -> str:
        if not self.diagnoses:
            return f"<div class='cudnn-magic'>{html.escape(self._text())}</div>"
        return diagnoses_html(self.diagnoses, log_slice=self.log_slice, names=self._names())

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict:
        return {"text/plain": safe_text(self._text()), "text/html": safe_text(self._html())}

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(safe_text(self._text()))

    def __repr__(self) -> str:
        return safe_text(self._text())


def _report() -> Report | None:
    """This kernel's cached check report, or ``None`` if it cannot be had (never raises)."""
    try:
        return cached_report()
    except Exception:  # noqa: BLE001
        return None


def explain_last() -> Explanation:
    """The last error of this session explained again, with the live facts."""
    a = annotator()
    if a is None:
        return Explanation([], message="cudnn-magic: annotation is not loaded.")
    rec = a.last
    if rec is None:
        return Explanation([], message="cudnn-magic: no error to explain yet in this session.")
    rec.diagnoses = a.diagnose(rec)
    return Explanation(rec.diagnoses, _display_safe_log(rec.log),
                       message=f"cudnn-magic: nothing cuDNN-related found in the last error ({rec.exception[:200]}).",
                       report=a.explainer().report())


@magics_class
class AnnotateMagics(Magics):
    """``%cudnn_annotate on|off`` and ``%cudnn_explain [TEXT]``."""

    @line_magic
    def cudnn_annotate(self, line: str = "") -> None:
        """Turn the annotation of failing cells (and the GPU-unused note) on or off.

        In [1]: %cudnn_annotate off
        In [2]: %cudnn_annotate on
        In [3]: %cudnn_annotate          # prints the state
        """
        a = annotator()
        if a is None:
            print("cudnn-magic: annotation is not loaded (%load_ext cudnn_magic)")
            return
        arg = line.strip().lower()
        if arg in ("on", "1", "true", "yes"):
            a.enabled = True
        elif arg in ("off", "0", "false", "no"):
            a.enabled = False
        elif arg:
            raise UsageError("usage: %cudnn_annotate on|off")
        capture = "on" if a.tee is not None and a.tee.active else f"off ({a.capture_error or 'helper stopped'})"
        print(f"cudnn-magic annotation: {'on' if a.enabled else 'off'}; native stderr capture: {capture}")

    @line_cell_magic
    def cudnn_explain(self, line: str = "", cell: str | None = None) -> Explanation:
        """Explain the last error again (its exception and the native log it printed), or an
        error text or log given on the line, or pasted as the cell body of ``%%cudnn_explain``.

        Pasted text is explained from its own words (it may come from another machine or a CI
        log); add ``--facts`` to also use this kernel's live facts (mapped cuDNN, frameworks,
        driver, GPU memory). The last error is always explained with the live facts.

        In [4]: %cudnn_explain
        In [5]: %cudnn_explain Loaded runtime CuDNN library: 8.0.5 but source was compiled with: 8.1.0
        In [6]: %%cudnn_explain --facts
           ...: <paste a multi-line log here>
        In [7]: ex = %cudnn_explain          # ex.diagnoses: list of Diagnosis
        """
        text = line
        use_facts = False
        stripped = text.lstrip()
        if stripped == "--facts" or stripped.startswith("--facts "):
            use_facts, text = True, stripped[len("--facts"):]
        elif re.match(r"--?[A-Za-z][\w-]*(\s|$)", stripped):
            raise UsageError(f"unknown option {stripped.split(None, 1)[0]!r}: %cudnn_explain takes --facts, "
                             "then the error text (or the text as the cell body of %%cudnn_explain)")
        if cell is not None:
            text = (text + "\n" + cell) if text.strip() else cell
        kind = binary_kind(text) if text.strip() else None
        if kind:  # what the command line refuses with exit 2: input, not a log
            raise usage_error(f"the text is {kind}, not a log: nothing to explain")
        if not text.strip():
            return explain_last()
        report = _report() if use_facts else None
        return Explanation(diagnose(exception="", log=text, report=report),
                           message="cudnn-magic: nothing cuDNN-related found in the text.", report=report)


def load_ipython_extension(ip: Any) -> None:
    """Register ``%cudnn_explain`` and ``%cudnn_annotate`` (IPython loads this module on their
    first use: :mod:`.extension` declares them lazily)."""
    register(ip, AnnotateMagics)


def unload(ip: Any) -> None:
    """Remove ``%cudnn_explain`` and ``%cudnn_annotate``."""
    unregister(ip, AnnotateMagics)
