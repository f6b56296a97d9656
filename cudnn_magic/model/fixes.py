"""The fix registry's result types: :class:`Step`, :class:`FixPlan` (the preview) and
:class:`FixResult` (what was done); rendered by :mod:`cudnn_magic.render.fixes`."""

from __future__ import annotations

import dataclasses
import shlex
from dataclasses import dataclass, field
from typing import Any, Literal

from .display import Displayed
from .report import to_plain

StepKind = Literal["run", "set-env", "kernelspec", "call", "restart", "advice"]


RESTART_NOTE = (
    "A kernelspec change applies when the kernel is started fresh from its kernelspec: shut the kernel down and "
    "start it again (JupyterLab: Kernel > Shut Down Kernel, then select the kernel). A plain Restart reuses the "
    "environment the Jupyter server computed when this kernel first started (jupyter_client caches the spec)."
)


#: The environment variables a plan's JSON keeps of its ``context["environ"]`` (the environment it
#: judged): the loader's and Python's search paths and the variables the fixes set
#: (``LD_LIBRARY_PATH`` for ``remove-shadowing-dir``, the allocator switches of
#: ``allow-memory-growth``). Every other variable of the shell (``PATH``, CA bundles, tokens) is
#: left out: a plan is pasted into issues.
PLAN_ENVIRON_SHOWN = frozenset({
    "LD_LIBRARY_PATH", "LD_PRELOAD", "PYTHONPATH", "PYTHONHOME", "CUDA_VISIBLE_DEVICES",
    "TF_FORCE_GPU_ALLOW_GROWTH", "XLA_PYTHON_CLIENT_PREALLOCATE", "XLA_PYTHON_CLIENT_MEM_FRACTION",
})


@dataclass(frozen=True)
class Step:
    """One thing a fix does, spelled out for the preview.

    Attributes:
        kind: "run" (a command, ``argv``), "set-env" (this process's ``os.environ``),
            "kernelspec" (edit ``path``), "call" (an in-process Python call, ``snippet``),
            "restart" (stop the kernel so the Jupyter server restarts it), "advice" (nothing
            is executed; ``snippet`` is what to do).
        description: one plain sentence.
        argv: the exact argument list for "run" (no shell).
        env: for "set-env"/"kernelspec": ``(name, new value or None to remove)`` pairs.
        path: the file a "kernelspec" step writes.
        diff: unified diff lines of that file (before -> after).
        snippet: code or value to show (and, for "call", what runs).
    """

    kind: StepKind
    description: str
    argv: tuple[str, ...] = ()
    env: tuple[tuple[str, str | None], ...] = ()
    path: str | None = None
    diff: tuple[str, ...] = ()
    snippet: str = ""


@dataclass(frozen=True)
class FixPlan(Displayed):
    """Exactly what a fix will do here, before it does anything.

    Attributes:
        fix_id: a key of :data:`FIXES`.
        title: one line ("Install nvidia-cudnn-cu12==9.10.2.21").
        applicable: True when :func:`apply` can carry it out from here.
        reason: why not, when ``applicable`` is False (advice-only fixes say "advice only").
        steps: what happens, in order.
        restart_required: the kernel must restart (or start fresh) for it to take effect.
        notes: facts that decided the plan (sources, the frameworks considered).
        choices: when the fix cannot apply as a whole but parts can (e.g. conflicting
            frameworks): ``(label, context)`` pairs; ``plan(fix_id, report, context=ctx)`` gives
            the plan of that choice.
        undo_hint: how to undo it, in words.
        context: the context the plan was computed with (kept for :func:`apply`).
    """

    fix_id: str
    title: str
    applicable: bool
    reason: str = ""
    steps: tuple[Step, ...] = ()
    restart_required: bool = False
    notes: tuple[str, ...] = ()
    choices: tuple[tuple[str, dict[str, Any]], ...] = ()
    undo_hint: str = ""
    context: dict[str, Any] = field(default_factory=dict, compare=False)
    # Private: what apply() needs beyond the preview (file bytes, expected hashes).
    payload: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def action(self) -> str:
        """The whole effect as one string (a command line, an env change or a snippet)."""
        parts: list[str] = []
        for s in self.steps:
            if s.kind == "run":
                parts.append(" ".join(shlex.quote(a) for a in s.argv))
            elif s.kind in ("set-env", "kernelspec"):
                where = "this kernel's environment" if s.kind == "set-env" else (s.path or "kernel.json")
                parts.append("; ".join(f"{k}={'<unset>' if v is None else v}" for k, v in s.env) + f" in {where}")
            elif s.snippet:
                parts.append(s.snippet)
            else:
                parts.append(s.description)
        return "\n".join(parts)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (no private payload; of ``context["environ"]`` only the variables of
        :data:`PLAN_ENVIRON_SHOWN`)."""
        d = {f.name: to_plain(getattr(self, f.name)) for f in dataclasses.fields(self) if f.name != "payload"}
        env = self.context.get("environ")
        if isinstance(env, dict):  # only what the plan reads or changes (:data:`PLAN_ENVIRON_SHOWN`)
            d["context"]["environ"] = {k: str(v) for k, v in sorted(env.items()) if k in PLAN_ENVIRON_SHOWN}
        d["action"] = self.action
        return d


@dataclass(frozen=True)
class FixResult(Displayed):
    """What :func:`apply` or :func:`undo` did.

    Attributes:
        fix_id: the fix.
        ok: True when every step succeeded.
        done: one line per step carried out.
        output: lines a command printed (pip), in order.
        error: what went wrong, or None.
        undo_hint: how to undo it ("%cudnn_fix --undo remove-shadowing-dir").
        restart_required: the kernel must restart (or start fresh) for it to take effect.
        fresh_start: a kernelspec was edited: only a fresh start from the kernelspec applies it
            (a plain Restart reuses the environment the server computed at the first start,
            :data:`RESTART_NOTE`).
    """

    fix_id: str
    ok: bool
    done: tuple[str, ...] = ()
    output: tuple[str, ...] = ()
    error: str | None = None
    undo_hint: str = ""
    restart_required: bool = False
    fresh_start: bool = False

    def __str__(self) -> str:
        return self.text()
