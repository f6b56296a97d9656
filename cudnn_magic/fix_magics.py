"""``%cudnn_fix`` and ``cudnn-magic fix``: preview, apply and undo a fix by id.

``%cudnn_fix FIX_ID`` in a notebook shows the preview with Apply/Cancel buttons; in a terminal
(no widgets) it prints the preview. ``--yes`` applies without asking (kernels have no stdin to
ask on), ``--dry-run`` only previews, ``--undo`` reverts the last application of that fix.
The engine is :mod:`cudnn_magic.fixes`; this module only parses arguments and displays.

IPython is imported only when the magics are built (``load``/``FixMagics``), so
:func:`cli_fix` works without it. Plugged in by :mod:`cudnn_magic.magics` through ``load(ip)``/``unload(ip)``; the CLI calls
:func:`cli_fix` (arguments declared by :func:`add_fix_arguments`).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, TextIO

import importlib


class _LazyFixes:
    """``cudnn_magic.fixes`` imported on first use, so ``%load_ext`` stays cheap (it pulls in
    ``packaging.markers`` and the solver)."""

    def __getattr__(self, name: str) -> Any:
        return getattr(importlib.import_module("cudnn_magic.fixes"), name)


fixes: Any = _LazyFixes()

__all__ = ["PlanView", "ResultView", "add_fix_arguments", "cli_fix", "load", "unload"]


class PlanView:
    """A :class:`~cudnn_magic.fixes.FixPlan` that displays as text or HTML (``.plan``)."""

    def __init__(self, plan: fixes.FixPlan) -> None:
        self.plan = plan

    def __repr__(self) -> str:
        return self.plan.text()

    def _repr_html_(self) -> str:
        return self.plan.html()


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
            import html

            return f"<div class='cudnn-fix-result'>{html.escape(self.message)}</div>"
        from .ui.fix_buttons import result_html

        return result_html(self.result)


def _report() -> Any:
    from .check import cached_report, run_check

    return cached_report() or run_check()


def _context(args: Any) -> dict[str, Any]:
    ctx: dict[str, Any] = {}
    if getattr(args, "framework", None):
        ctx["framework"] = args.framework
    if getattr(args, "dir", None):
        ctx["directory"] = args.dir
    if getattr(args, "kernel", None):
        ctx["kernel_name"] = args.kernel
    return ctx


_CLASS: Any = None


def _build() -> Any:
    """Define the magics class (imports IPython)."""
    global _CLASS
    if _CLASS is not None:
        return _CLASS
    from IPython.core import magic_arguments
    from IPython.core.error import UsageError
    from IPython.core.magic import Magics, line_magic, magics_class

    from .ui.args import parse_magic_line

    @magics_class
    class FixMagics(Magics):
        """``%cudnn_fix``: preview, apply or undo one fix."""

        @line_magic
        @magic_arguments.magic_arguments()
        @magic_arguments.argument("fix_id", nargs="?", default=None, help="fix id (README \"Fix ids\")")
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
            try:
                return self._cudnn_fix(args)
            except UsageError:
                raise
            except Exception as exc:  # noqa: BLE001 - never a traceback in the user's cell
                raise UsageError(f"%cudnn_fix {args.fix_id} failed: {type(exc).__name__}: {exc}") from None

        def _cudnn_fix(self, args: Any) -> Any:
            if args.undo:
                return ResultView(fixes.undo(args.fix_id))
            report = _report()
            plan = fixes.plan(args.fix_id, report, context=_context(args))
            if args.yes and not args.dry_run:
                if not plan.applicable:
                    if plan.reason.startswith("advice only") and plan.steps:
                        return PlanView(plan)  # the advice is the content; nothing is run
                    return ResultView(fixes.FixResult(plan.fix_id, False, error=f"nothing to do: {plan.reason}"),
                                      message=f"cudnn-magic: nothing to do: {plan.reason}")
                return ResultView(fixes.apply(plan, stream=lambda s: print(s, flush=True)))
            in_notebook = getattr(self.shell, "kernel", None) is not None
            if args.dry_run or not in_notebook:
                if not args.dry_run and plan.applicable:
                    print(f"Run `%cudnn_fix {args.fix_id} --yes` to apply.")
                return PlanView(plan)
            try:
                from .model import Fix
                from .ui.fix_buttons import fix_box

                box = fix_box([Fix(plan.fix_id, plan.title, plan.action, plan.restart_required, plan.applicable,
                                   plan.reason)], report, context=plan.context)
                box.panels[0].show_preview()
                from .ui.fallback import display_widget

                more = (f"\nRun `%cudnn_fix {plan.fix_id} --yes` to apply." if plan.applicable else "")
                display_widget(box, plan.text() + more,
                               plan.html() + (f"<div>Run <code>%cudnn_fix {plan.fix_id} --yes</code> to apply.</div>"
                                              if plan.applicable else ""))
                return None
            except ImportError:
                return PlanView(plan)

    _CLASS = FixMagics
    return FixMagics


def __getattr__(name: str) -> Any:
    if name == "FixMagics":
        return _build()
    raise AttributeError(name)


def load(ip: Any) -> None:
    """Register ``%cudnn_fix``."""
    ip.register_magics(_build())


def unload(ip: Any) -> None:
    """Remove ``%cudnn_fix``."""
    magics = ip.magics_manager.magics
    for kind in ("line", "cell"):
        for name in list(magics.get(kind, {})):
            owner = getattr(magics[kind][name], "__self__", None)
            if _CLASS is not None and isinstance(owner, _CLASS):
                del magics[kind][name]
    ip.magics_manager.registry.pop("FixMagics", None)


# --------------------------------------------------------------------------- CLI


def add_fix_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Declare ``cudnn-magic fix`` arguments on a subparser (the lead's cli.py calls this)."""
    p.add_argument("fix_id", nargs="?", default=None, help="fix id (README \"Fix ids\")")
    p.add_argument("--dry-run", action="store_true", help="only show what would happen (default without --yes)")
    p.add_argument("--yes", action="store_true", help="apply it")
    p.add_argument("--undo", action="store_true", help="revert the last application of FIX_ID")
    p.add_argument("--json", action="store_true", help="print the plan or result as JSON")
    p.add_argument("--for", dest="framework", default=None, metavar="FRAMEWORK",
                   help="install-matching-cudnn: this framework's requirement only")
    p.add_argument("--dir", default=None, metavar="DIR", help="remove-shadowing-dir: the directory to take out")
    p.add_argument("--kernel", default=None, metavar="NAME", help="the kernelspec to edit (no running kernel here)")
    return p


def cli_fix(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """``cudnn-magic fix FIX_ID [--dry-run] [--yes] [--undo]``.

    Exit codes: 0 previewed or applied, 1 the fix failed or cannot apply (with --yes or
    --undo), 2 usage error (unknown or missing fix id).
    """
    out = out or sys.stdout
    fix_id = getattr(args, "fix_id", None)
    if not fix_id or fix_id not in fixes.FIXES:
        print(f"cudnn-magic fix: {'unknown fix id ' + repr(fix_id) if fix_id else 'name a fix'}; known: "
              + ", ".join(fixes.FIXES), file=sys.stderr)
        return 2
    as_json = bool(getattr(args, "json", False))
    if getattr(args, "undo", False):
        res = fixes.undo(fix_id)
        _emit(out, res.text(), _result_dict(res), as_json)
        return 0 if res.ok else 1
    from .check import run_check

    p = fixes.plan(fix_id, run_check(), context=_context(args))
    if not getattr(args, "yes", False) or getattr(args, "dry_run", False):
        _emit(out, p.text() + ("\nRun with --yes to apply." if p.applicable else ""), p.to_dict(), as_json)
        return 0
    if not p.applicable:
        if as_json:
            _emit(out, "", p.to_dict(), True)
        elif p.reason.startswith("advice only") and p.steps:
            _emit(out, p.text(), {}, False)  # the advice is the content; nothing is run
        else:
            out.write(f"cudnn-magic fix {fix_id}: nothing to do: {p.reason}\n")
        return 1

    def stream(line: str) -> None:
        if not as_json:
            out.write(line + "\n")
            out.flush()

    res = fixes.apply(p, stream=stream)
    _emit(out, res.text(), _result_dict(res), as_json)
    return 0 if res.ok else 1


def _result_dict(res: fixes.FixResult) -> dict[str, Any]:
    from .model import to_plain

    return to_plain(res)  # type: ignore[no-any-return]


def _emit(out: TextIO, text: str, data: dict[str, Any], as_json: bool) -> None:
    if as_json:
        json.dump(data, out, indent=2, default=str)
    else:
        out.write(text)
    out.write("\n")
