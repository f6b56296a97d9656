"""``%cudnn_fix``: preview, apply and undo a fix by id (the command line's is
:mod:`cudnn_magic.cli.fix`).

``%cudnn_fix FIX_ID`` in a notebook shows the preview with Apply/Cancel buttons; in a terminal
(no widgets) it prints the preview. ``--yes`` applies without asking (kernels have no stdin to
ask on), ``--dry-run`` only previews, ``--undo`` reverts the last application of that fix.
The engine is :mod:`cudnn_magic.fixes`; this module only parses arguments and displays.
"""

from __future__ import annotations

import html
from typing import Any

from IPython.core import magic_arguments
from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_magic, magics_class

from .. import fixes
from ..engines.check import cached_report, run_check
from ..fixes.environment import kernel_context, kernelspec_names, unknown_kernelspec
from ..model import Fix
from ..ui.fallback import display_with_controls
from ..ui.fix_buttons import fix_box, result_html
from ..util.kernelinfo import connection_file
from ..util.options import fix_context as _context
from .args import parse_magic_line, usage_error
from .magics import register, unregister

__all__ = ["FixMagics", "PlanView", "ResultView", "load_ipython_extension", "unload"]


class PlanView:
    """A :class:`~cudnn_magic.fixes.FixPlan` that displays as text or HTML (``.plan``)."""

    def __init__(self, plan: fixes.FixPlan, then: str = "") -> None:
        self.plan = plan
        self.then = then  # a line after the plan ("Run `%cudnn_fix ID --yes` to apply.")

    def __repr__(self) -> str:
        return self.plan.text() + (f"\n{self.then}" if self.then else "")

    def _repr_html_(self) -> str:
        return self.plan.html() + (f"<div>{html.escape(self.then)}</div>" if self.then else "")


class ResultView:
    """A :class:`~cudnn_magic.fixes.FixResult` that displays as text or HTML (``.result``);
    ``message`` replaces both when set (a fix with nothing to do says only that)."""

    def __init__(self, result: fixes.FixResult, message: str = "") -> None:
        self.result = result
        self.message = message

    def __repr__(self) -> str:
        return self.message or self.result.text()

    def _repr_html_(self) -> str:
        if self.message:
            return f"<div class='cudnn-fix-result'>{html.escape(self.message)}</div>"

        return result_html(self.result)


def _report() -> Any:
    return cached_report() or run_check()


@magics_class
class FixMagics(Magics):
    """``%cudnn_fix``: preview, apply or undo one fix."""

    @line_magic
    @magic_arguments.magic_arguments()
    @magic_arguments.argument("fix_id", nargs="?", default=None, help="fix id (docs/ids.md, \"Fix ids\")")
    @magic_arguments.argument("--dry-run", action="store_true", help="only show what would happen")
    @magic_arguments.argument("--yes", action="store_true", help="apply without asking")
    @magic_arguments.argument("--undo", action="store_true", help="revert the last application of FIX_ID")
    @magic_arguments.argument("--for", dest="framework", default=None, metavar="FRAMEWORK",
                              help="install-matching-cudnn: the requirement of this framework only")
    @magic_arguments.argument("--dir", default=None, metavar="DIR",
                              help="remove-shadowing-dir: the directory to take out of LD_LIBRARY_PATH")
    @magic_arguments.argument("--kernel", default=None, metavar="NAME",
                              help="kernelspec name, when it cannot be told from the connection file")
    def cudnn_fix(self, line: str = "") -> Any:
        """Preview, apply or undo a fix (the ids of ``%cudnn_check`` findings and diagnoses).

        In [1]: %cudnn_fix install-matching-cudnn --dry-run
        In [2]: %cudnn_fix remove-shadowing-dir --yes
        In [3]: %cudnn_fix --undo remove-shadowing-dir
        """
        args = parse_magic_line(self.cudnn_fix, line)
        if not args.fix_id:
            raise UsageError("name a fix: " + ", ".join(fixes.FIXES))
        if args.fix_id not in fixes.FIXES:
            raise UsageError(f"unknown fix id {args.fix_id!r}; known: {', '.join(fixes.FIXES)}")
        if args.kernel and not args.undo:  # as the command line: --undo reverts what was applied, wherever
            specs = kernelspec_names()  # listing them failed: not the input; the plan says why
            unknown = unknown_kernelspec(args.kernel, specs) if isinstance(specs, dict) else None
            if unknown:
                raise usage_error(unknown)
        try:
            return self._cudnn_fix(args)
        except UsageError:
            raise
        except Exception as exc:  # noqa: BLE001 - never a traceback in the user's cell
            raise UsageError(f"%cudnn_fix {args.fix_id} failed: {type(exc).__name__}: {exc}") from None

    def _cudnn_fix(self, args: Any) -> Any:
        if args.undo:
            return ResultView(fixes.undo(args.fix_id))
        ctx = _context(args)
        if getattr(self.shell, "kernel", None) is None and connection_file() is None and not ctx.get("kernel_name"):
            ctx["shell"] = True  # IPython in a terminal: its LD_LIBRARY_PATH is the shell's that started it
        for_kernel = kernel_context(ctx)  # --kernel NAME with no kernel here: that kernel's start environment
        if for_kernel is not None:
            ctx = for_kernel
        report = run_check(environ=ctx["environ"]) if for_kernel is not None else _report()
        plan = fixes.plan(args.fix_id, report, context=ctx)
        if args.yes and not args.dry_run:
            if not plan.applicable:
                if plan.reason.startswith("advice only") and plan.steps:
                    return PlanView(plan)  # the advice is the content; nothing is run
                return ResultView(fixes.FixResult(plan.fix_id, False, error=f"nothing to do: {plan.reason}"),
                                  message=f"cudnn-magic: nothing to do: {plan.reason}")
            return ResultView(fixes.apply(plan, stream=lambda s: print(s, flush=True)))
        in_notebook = getattr(self.shell, "kernel", None) is not None
        if args.dry_run or not in_notebook:
            # after the plan it applies to, in the same output (printed first, it came before it)
            return PlanView(plan, f"Run `%cudnn_fix {args.fix_id} --yes` to apply."
                            if not args.dry_run and plan.applicable else "")
        return _show_plan_with_controls(plan, report)


def _show_plan_with_controls(plan: Any, report: Any) -> Any:
    """In a notebook: the plan as an output every front end and export reads (what will run,
    which file changes, the ``%cudnn_fix ID --yes`` line), then Apply and Cancel (and a button per
    choice) as a widget in an output of its own; advice has nothing to apply, so no widget."""
    more = f"Run `%cudnn_fix {plan.fix_id} --yes` to apply." if plan.applicable else ""
    text = plan.text() + ("\n" + more if more else "")
    page = plan.html() + (f"<div>Run <code>%cudnn_fix {plan.fix_id} --yes</code> to apply.</div>" if more else "")
    if not (plan.applicable or plan.choices):
        display_with_controls(text, page)
        return None
    box = fix_box([Fix(plan.fix_id, plan.title, plan.action, plan.restart_required, plan.applicable,
                       plan.reason)], report, context=plan.context)
    box.panels[0].show_preview(plan=plan)  # the plan is shown above: the widget holds the controls
    box.children[0].layout.display = "none"  # its one button would only show the same plan again
    if plan.applicable:
        controls = (f"(Apply and Cancel go here where Jupyter's widget manager runs; "
                    f"%cudnn_fix {plan.fix_id} --yes applies it from a cell.)")
    else:
        controls = "(A button per choice goes here where Jupyter's widget manager runs.)"
    display_with_controls(text, page, box, controls)
    return None


def load_ipython_extension(ip: Any) -> None:
    """Register ``%cudnn_fix`` (IPython loads this module on its first use: :mod:`.extension`
    declares it lazily)."""
    register(ip, FixMagics)


def unload(ip: Any) -> None:
    """Remove ``%cudnn_fix``."""
    unregister(ip, FixMagics)
