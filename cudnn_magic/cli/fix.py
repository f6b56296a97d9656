"""``cudnn-magic fix FIX_ID [--dry-run] [--yes] [--undo] [--json]``: preview, apply or undo a fix
(the engine is :mod:`cudnn_magic.fixes`; the magic is :mod:`cudnn_magic.shell.fix`)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from typing import Any, TextIO, TypeVar

from .. import fixes
from ..engines.check import run_check
from ..fixes.environment import kernel_context, kernelspec_names, unknown_kernelspec
from ..model import to_plain
from ..render.where import undo_words
from ..util.options import fix_context as _context

__all__ = ["cli_fix"]


def cli_fix(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """``cudnn-magic fix FIX_ID [--dry-run] [--yes] [--undo]``.

    Exit codes: 0 previewed or applied, 1 the fix failed or cannot apply (with --yes or
    --undo; advice-only plans print the advice), 2 usage error (unknown or missing fix id,
    ``--kernel NAME`` that names no kernelspec).

    From a shell (no ``--kernel``) the environment judged is this shell's: a fix that would edit
    a kernelspec gives the shell's own ``export``/``unset`` line instead, and names the
    kernelspecs whose ``env`` carries the cause (``--kernel NAME`` edits that one).
    """
    out = out or sys.stdout
    fix_id = getattr(args, "fix_id", None)
    if not fix_id or fix_id not in fixes.FIXES:
        print(f"cudnn-magic fix: {'unknown fix id ' + repr(fix_id) if fix_id else 'name a fix'}; known: "
              + ", ".join(fixes.FIXES), file=sys.stderr)
        return 2
    as_json = bool(getattr(args, "json", False))
    if getattr(args, "undo", False):
        res = _for_shell(fixes.undo(fix_id))
        _emit(out, res.text(), _result_dict(res), as_json)
        return 0 if res.ok else 1

    ctx = _context(args)
    if ctx.get("kernel_name"):
        unknown = unknown_kernelspec(ctx["kernel_name"], kernelspec_names())
        if unknown:
            print(f"cudnn-magic fix: {unknown}", file=sys.stderr)
            return 2
    else:
        ctx["shell"] = True  # no kernel runs here: the LD_LIBRARY_PATH judged is this shell's own
    for_kernel = kernel_context(ctx)  # --kernel NAME from a shell: that kernel's start environment
    if for_kernel is not None:
        ctx = for_kernel
    p = _for_shell(fixes.plan(fix_id, run_check(environ=ctx.get("environ")), context=ctx))
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

    res = _for_shell(fixes.apply(p, stream=stream))
    _emit(out, res.text(), _result_dict(res), as_json)
    return 0 if res.ok else 1


_Shown = TypeVar("_Shown", fixes.FixPlan, fixes.FixResult)


def _for_shell(x: _Shown) -> _Shown:
    """A plan or result with its undo hint as the command to type in a shell (not the magic's)."""
    return dataclasses.replace(x, undo_hint=undo_words(x.undo_hint, "process")) if x.undo_hint else x


def _result_dict(res: fixes.FixResult) -> dict[str, Any]:
    return to_plain(res)  # type: ignore[no-any-return]


def _emit(out: TextIO, text: str, data: dict[str, Any], as_json: bool) -> None:
    if as_json:
        json.dump(data, out, indent=2, default=str)
    else:
        out.write(text)
    out.write("\n")
