"""``%cudnn_explain [--facts] [TEXT]`` (and ``%%cudnn_explain``) and ``%cudnn_annotate on|off``:
explain the last error or a pasted log; turn the annotation of failing cells on or off (the
annotation itself, the exception hook, is :mod:`.annotate`)."""

from __future__ import annotations

import re

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, line_magic, magics_class

from .annotate import Explanation, _report, annotator

__all__ = ["AnnotateMagics"]


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
        from ..util.textinput import binary_kind  # start-up cost: only when the magic runs

        kind = binary_kind(text) if text.strip() else None
        if kind:
            return Explanation([], message=f"cudnn-magic: the text is {kind}, not a log: nothing to explain.")
        if not text.strip():
            a = annotator()
            if a is None:
                return Explanation([], message="cudnn-magic: annotation is not loaded.")
            return a.explain("")
        # start-up cost: diagnose pulls in the knowledge tables; imported by the first explanation
        from ..engines.diagnose import diagnose

        return Explanation(diagnose(exception="", log=text, report=_report() if use_facts else None),
                           message="cudnn-magic: nothing cuDNN-related found in the text.")
