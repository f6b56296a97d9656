"""The planners: one function per fix id (named by its :class:`~cudnn_magic.fixes.catalogue.FixSpec`),
``(report, context) -> FixPlan``, computed from live facts (the report, this process's
environment, the kernelspec on disk), never from text read from a log. Advice-only fixes
worded by a diagnosis or a finding get theirs from :mod:`cudnn_magic.fixes.advice`.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import re
import shlex
import sys
from typing import Any

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from ..engines.check import run_check
from ..engines.framework_findings import wheel_shadows
from ..model import Report
from ..model.fixes import RESTART_NOTE, FixPlan, Step
from ..probes.installed import resolve
from ..rules.consumer_table import framework_probes
from ..rules.gpu import driver_at_least, driver_floor
from ..rules.requirement import _DIST_NAME, FIRST_WHEEL_CUDA, CudnnNeed, framework_need, witness
from ..util.kernelinfo import kernel_app as _kernel_app
from ..util.pyenv import purelib_dirs
from .advice import _advice
from .environment import (
    _ENV_NAME,
    KernelSpecTarget,
    _dump_spec,
    _environ,
    _installed_version,
    _pip_check,
    _pip_extra_args,
    _python,
    find_running_kernelspec,
    kernel_start_environ,
    kernelspecs_setting,
)
from .journal import _journal_load
from .solver import solve_cudnn
from .verify import verify_environ, verify_pip, verify_restart

# --------------------------------------------------------------------------- data


# --------------------------------------------------------------------------- requirement solver


# --------------------------------------------------------------------------- environment helpers


# --------------------------------------------------------------------------- kernelspec


def _kernelspec_step(target: KernelSpecTarget, changes: dict[str, str | None], why: str) -> tuple[Step, dict[str, Any]]:
    """A "kernelspec" step setting ``changes`` in ``env``, with the diff and the payload."""
    new = json.loads(json.dumps(target.spec))
    env = new.get("env")
    if not isinstance(env, dict):
        env = {}
    for k, v in changes.items():
        if not _ENV_NAME.match(k):
            raise ValueError(f"not an environment variable name: {k!r}")
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    new["env"] = env
    new_bytes = _dump_spec(new)
    before = (target.original or b"").decode("utf-8", "replace").splitlines()
    after = new_bytes.decode("utf-8").splitlines()
    diff = tuple(difflib.unified_diff(before, after, target.write_path if target.original is not None else "/dev/null",
                                      target.write_path, lineterm="", n=1))
    desc = f"Set {', '.join(changes)} in the env of kernelspec {target.name!r} ({why}); {target.how}"
    if target.copy_from:
        desc += f". Creates {target.write_path}"
    step = Step("kernelspec", desc, env=tuple(changes.items()), path=target.write_path, diff=diff)
    payload = {"path": target.write_path, "new": new_bytes,
               "expect_sha256": hashlib.sha256(target.original).hexdigest() if target.original is not None else None,
               "copy_from": target.copy_from}
    return step, payload


# --------------------------------------------------------------------------- plans


def install_plan(report: Report, ctx: dict[str, Any]) -> FixPlan:
    fid = "install-matching-cudnn"
    fws = list(report.frameworks)
    notes: list[str] = []
    if ctx.get("framework"):
        want = str(ctx["framework"]).lower()
        picked = [fw for fw in fws if fw.name.lower() == want or fw.distribution.lower() == want
                  or f"{fw.name} {fw.version}".lower() == want]
        if not picked:
            return FixPlan(fid, "Install a matching cuDNN", False, f"no installed framework named {ctx['framework']!r}")
        notes.append(f"only {picked[0].name} {picked[0].version} considered (chosen)")
        fws = picked
    sol = solve_cudnn(fws)
    for n in sol.needs:
        notes.append(f"{n.framework}: {n.requirement} (" + "; ".join(n.sources) + ")")
    if sol.requirement is None:
        choices = tuple((f"Install {req} (for {name.rsplit(' ', 1)[0]})", {"framework": name.rsplit(" ", 1)[0]})
                        for name, req in sol.choices)
        reason = "; ".join(sol.conflicts)
        if sol.needs:
            reason = "no single cuDNN satisfies every framework: " + reason
        return FixPlan(fid, "Install a matching cuDNN", False, reason, notes=tuple(notes), choices=choices)
    req = Requirement(sol.requirement)  # re-validated
    name = canonicalize_name(req.name)
    if not _DIST_NAME.match(name):
        return FixPlan(fid, "Install a matching cuDNN", False, f"invalid distribution name {name!r}")
    if not sol.requirement.startswith(name) or Requirement(sol.requirement).specifier != req.specifier:
        return FixPlan(fid, "Install a matching cuDNN", False, f"internal: requirement {sol.requirement!r} did not validate")
    requirement = sol.requirement
    cuda = re.fullmatch(r"nvidia-cudnn-cu(\d+)", name)
    if cuda and int(cuda.group(1)) < FIRST_WHEEL_CUDA:
        return FixPlan(fid, f"Install {requirement}", False,
                       f"PyPI has no {name} wheel (cuDNN wheels start with CUDA {FIRST_WHEEL_CUDA}); install this cuDNN "
                       "with conda or from NVIDIA's archive for your CUDA", notes=tuple(notes))
    python = _python(ctx)
    try:
        extra = _pip_extra_args(ctx)
    except ValueError as exc:
        return FixPlan(fid, f"Install {requirement}", False, str(exc), notes=tuple(notes))
    argv = (python, "-m", "pip", "install", *extra, requirement)
    title = f"Install {requirement}"
    previous = _installed_version(python, name)
    satisfied = previous is not None and req.specifier.contains(previous, prereleases=True)
    if satisfied:
        notes.append(f"{name} {previous} is already installed and satisfies it; pip will change nothing")
    undo_hint = (f"%cudnn_fix --undo {fid} (pip install {name}=={previous})" if previous else
                 f"%cudnn_fix --undo {fid} (pip uninstall -y {name})")
    steps = (
        Step("run", f"Install {requirement} into this kernel's environment ({sys.prefix if python == sys.executable else python})",
             argv=argv),
        Step("restart", "Restart the kernel so frameworks load the new cuDNN"),
    )
    payload = {"package": name, "previous": previous, "python": python}
    if satisfied:
        cause = _other_copy_cause(report)
        return FixPlan(fid, title, False, f"{name} {previous} is already installed and satisfies {requirement}: pip "
                       "would change nothing" + (f". {cause}" if cause else ""), steps, True, tuple(notes),
                       undo_hint=undo_hint, payload=payload)
    why = _pip_check(python)
    if why:
        return FixPlan(fid, title, False, why, steps, True, tuple(notes), undo_hint=undo_hint, payload=payload)
    if ctx.get("verify", True):  # a fix is offered only when its own what-if shows it helps
        why, checked = verify_pip((*extra, requirement), python, report, fid)
        notes += checked
        if why:
            return FixPlan(fid, title, False, why, steps, True, tuple(notes), undo_hint=undo_hint, payload=payload)
    return FixPlan(fid, title, True, "", steps, True, tuple(notes), undo_hint=undo_hint, payload=payload)


def _other_copy_cause(report: Report) -> str:
    """Why the installed cuDNN is not the one used, from the report: the copy in use and where
    it came from, and the fixes that act on that cause."""
    u = report.cudnn_in_use
    if u is None:
        for r in report.resolutions:
            if r.picked and r.shadowed and r.reason.startswith("LD_LIBRARY_PATH"):
                return (f"{r.consumer} picks {r.picked} ({r.reason}) before its own copy: use remove-shadowing-dir")
        return ""
    how = ["restart-kernel", "import-order"]
    if u.ld_library_path_entry:
        how.insert(0, "remove-shadowing-dir")
    return (f"The cuDNN in use is {u.version or '?'} at {u.path}"
            + (f" (LD_LIBRARY_PATH entry {u.ld_library_path_entry})" if u.ld_library_path_entry else "")
            + f": use {', '.join(how)}")


def _shadowing(report: Report, env: dict[str, str], ctx: dict[str, Any]) -> tuple[list[str], str | None, list[str]]:
    """(LD_LIBRARY_PATH entries that shadow, the intended directory or None, notes)."""
    notes: list[str] = []
    entries = [e for e in env.get("LD_LIBRARY_PATH", "").split(":") if e]
    if ctx.get("directory"):
        d = os.path.realpath(str(ctx["directory"]))
        hits = [e for e in entries if os.path.realpath(e) == d]
        return hits, (str(ctx["intended"]) if ctx.get("intended") else None), [f"directory {d} named explicitly"]
    versions = {os.path.realpath(c.path): c.version for c in (*report.cudnn_installed, *report.cudnn_loaded)}

    def in_an_entry(path: str | None) -> bool:
        return bool(path) and any(os.path.realpath(os.path.dirname(path or "")) == os.path.realpath(e) for e in entries)

    # A pick from LD_LIBRARY_PATH that hides another copy: found by the loader's search, or
    # already mapped (loaded first from an LD_LIBRARY_PATH entry; the framework's own copy hidden).
    resolutions = [r for r in report.resolutions if r.picked and r.shadowed and in_an_entry(r.picked)]
    if not resolutions:
        try:
            sonames = sorted({c.soname for c in report.cudnn_installed if c.is_main and c.soname} | {"libcudnn.so.9"})
            for so in sonames:
                r = resolve(so, "this kernel (plain dlopen)", None, environ=env)
                if r.picked and r.reason.startswith("LD_LIBRARY_PATH") and r.shadowed:
                    resolutions.append(r)
        except Exception as exc:  # noqa: BLE001
            notes.append(f"loader resolution failed: {exc}")
    hits = []
    intended: str | None = None
    if not resolutions and report.cudnn_in_use is None:
        # No consumer whose search shows the shadowing (no framework installed, or none that asks)
        # and no measured copy in use (a report built without it; else the block below decides):
        # an LD_LIBRARY_PATH entry that supplied the cuDNN mapped here, while this environment has
        # another release of that soname installed elsewhere, is what to take out.
        for lib in report.cudnn_loaded:
            if not lib.is_main:
                continue
            real = os.path.realpath(lib.path)
            other = [c for c in report.cudnn_installed if c.is_main and c.soname == lib.soname and c.version
                     and c.version != lib.version and os.path.realpath(c.path) != real
                     and not any(os.path.realpath(os.path.join(e, c.name)) == os.path.realpath(c.path) for e in entries)]
            if not other:
                continue
            for e in entries:
                if os.path.realpath(os.path.join(e, os.path.basename(lib.path))) == real and e not in hits:
                    hits.append(e)
                    intended = intended or os.path.dirname(other[0].path)
                    notes.append(f"{lib.name} {lib.version or '?'} is mapped from {lib.path}, found on LD_LIBRARY_PATH "
                                 f"({e}); this environment also has {other[0].name} {other[0].version} at "
                                 f"{other[0].path} ({other[0].owner})")
    for r in resolutions:
        pv = versions.get(os.path.realpath(r.picked or ""))
        # the copy hidden is the first one down the search of another release; every LD_LIBRARY_PATH
        # entry ahead of it holding the soname at another release than it shadows it (two entries
        # with the same old copy: taking one out leaves the other in front)
        hidden = next((c for c in r.shadowed if versions.get(os.path.realpath(c)) not in (None, pv)), None)
        if hidden is None:
            if pv is not None and pv == versions.get(os.path.realpath(r.shadowed[0])):
                continue
            hidden = r.shadowed[0]
        sv = versions.get(os.path.realpath(hidden))
        for c in (r.picked or "", *r.shadowed):
            if c == hidden:
                break
            if versions.get(os.path.realpath(c)) == sv and sv is not None:
                continue
            for e in entries:
                if os.path.realpath(os.path.join(e, r.soname)) == os.path.realpath(c) and e not in hits:
                    hits.append(e)
        intended = intended or os.path.dirname(hidden)
        notes.append(f"{r.consumer}: {r.soname} resolves to {r.picked} (cuDNN {pv or '?'}, {r.reason}), which hides "
                     f"{hidden} (cuDNN {sv or '?'})")
    u = report.cudnn_in_use
    if u is not None and u.ld_library_path_entry:
        # The copy in use was loaded from an LD_LIBRARY_PATH entry: it hides every other copy of
        # another release (a wheel's, another mapped one), whatever loaded it first.
        others = [c for c in (*report.cudnn_loaded, *report.cudnn_installed)
                  if c.is_main and c.soname == u.soname and os.path.realpath(c.path) != os.path.realpath(u.path)
                  and c.version and c.version != u.version]
        entry_real = os.path.realpath(u.ld_library_path_entry)
        match = [e for e in entries if os.path.realpath(e) == entry_real]
        if others and match:
            for e in match:
                if e not in hits:
                    hits.append(e)
            intended = intended or os.path.dirname(others[0].path)
            notes.append(f"the cuDNN in use, {u.version or '?'} at {u.path}, came from LD_LIBRARY_PATH entry "
                         f"{u.ld_library_path_entry}; it hides {others[0].path} (cuDNN {others[0].version})")
    if not hits:
        # No framework whose search shows it: an entry holding another release of a soname this
        # environment's own pip wheel ships (the check's ``cudnn-shadowed`` without a framework;
        # the same model, so the fix acts on what the check reports)
        for w in wheel_shadows(report.cudnn_installed, resolve, env, None, purelib_dirs(),
                               report.cudnn_in_use_by_soname):
            for e in entries:
                if os.path.realpath(e) == os.path.realpath(w.entry) and e not in hits:
                    hits.append(e)
            intended = intended or os.path.dirname(w.copy.path)
            notes.append(f"{w.copy.soname} loaded by name {'is mapped' if w.mapped else 'resolves'} from {w.picked} "
                         f"(cuDNN {w.version}, LD_LIBRARY_PATH entry {w.entry}), which hides this environment's own "
                         f"{w.copy.path} (cuDNN {w.copy.version}, {w.copy.owner})")
    return hits, intended, notes


_CUDNN_FILE = re.compile(r"^libcudnn[\w]*\.so")


def _has_other_libs(d: str) -> bool:
    try:
        return any(".so" in n and not _CUDNN_FILE.match(n) for n in os.listdir(d))
    except OSError:
        return False


def remove_shadow_plan(report: Report, ctx: dict[str, Any]) -> FixPlan:
    fid = "remove-shadowing-dir"
    env = _environ(ctx)
    # ``kernel_environ``: the kernelspec's start environment, modelled by the caller (``cudnn-magic fix
    # --kernel NAME`` from a shell, :func:`kernel_context`); the report was built for it too
    where = str(ctx.get("kernel_environ") or "here")
    hits, intended, notes = _shadowing(report, env, ctx)
    if where != "here":
        notes.insert(0, f"judged {where}")
    if ctx.get("shell") and not ctx.get("kernel_name"):
        return _shell_shadow_plan(report, ctx, env, hits, intended, notes)
    if not hits:
        why = (f"the named directory is not on LD_LIBRARY_PATH {where}" if ctx.get("directory") else
               f"no directory on LD_LIBRARY_PATH shadows a different cuDNN {where}")
        return FixPlan(fid, "Stop a directory from shadowing cuDNN", False, why, notes=tuple(notes))
    target = find_running_kernelspec(ctx)
    title = f"Take {', '.join(hits)} out of LD_LIBRARY_PATH"
    if isinstance(target, str):
        return FixPlan(fid, title, False, target, notes=tuple(notes), restart_required=True)
    mode = str(ctx.get("mode") or ("prepend" if intended and any(_has_other_libs(h) for h in hits) else "remove"))
    spec_env = e if isinstance(e := target.spec.get("env"), dict) else {}
    hit_real = {os.path.realpath(h) for h in hits}
    if where == "here":
        # the restart loop: the spec was fixed, but this kernel was restarted, not
        # started fresh, so it still has the old environment; offering the same edit again changes nothing
        fresh = kernel_start_environ(target.spec, env).get("LD_LIBRARY_PATH", "")
        if not hit_real & {os.path.realpath(e) for e in fresh.split(":") if e}:
            return FixPlan(fid, title, False,
                           f"the kernelspec {target.name!r} is fixed (a fresh start no longer puts {', '.join(hits)} "
                           "on LD_LIBRARY_PATH); this kernel started before the change: shut it down and start it "
                           "again",
                           (Step("restart", "Start the kernel fresh from its kernelspec", snippet=RESTART_NOTE),),
                           True, tuple(notes))
    if "LD_LIBRARY_PATH" in spec_env \
            and any(os.path.realpath(t) in hit_real for t in str(spec_env["LD_LIBRARY_PATH"]).split(":") if t):
        tokens = str(spec_env["LD_LIBRARY_PATH"]).split(":")
        notes.append("the kernelspec's own LD_LIBRARY_PATH lists the directory; only that entry changes")
    else:
        tokens = env.get("LD_LIBRARY_PATH", "").split(":")
        notes.append("LD_LIBRARY_PATH is inherited from the Jupyter server; the kernelspec gets this kernel's full "
                     "value without the directory" if where == "here" else
                     "the kernelspec does not set LD_LIBRARY_PATH, so its kernels inherit the Jupyter server's; this "
                     "shell's value stands in for the server's: the kernelspec gets it without the directory")
    if mode == "prepend" and intended:
        new_tokens = [intended] + [t for t in tokens if t and os.path.realpath(t) != os.path.realpath(intended)]
        title = f"Put {intended} ahead of {', '.join(hits)} in LD_LIBRARY_PATH"
        notes.append(f"{', '.join(hits)} also holds other libraries, so it stays, after {intended}")
    else:
        new_tokens = [t for t in tokens if t and os.path.realpath(t) not in hit_real]
    new_value = ":".join(new_tokens)
    step, payload = _kernelspec_step(target, {"LD_LIBRARY_PATH": new_value}, "persistent, for this kernel only")
    steps = (step, Step("restart", "Start the kernel fresh from its kernelspec", snippet=RESTART_NOTE))
    undo_hint = f"%cudnn_fix --undo {fid} (restores {target.write_path} from its backup)"
    if target.copy_from:
        undo_hint = f"%cudnn_fix --undo {fid} (removes {target.write_path})"
    if ctx.get("verify", True):  # offered only when the check in a fresh process with the change clears it
        # the effect on the value the kernel really starts with (``env``), not the spec's text,
        # whose ${LD_LIBRARY_PATH} stands for the server's value
        now = [t for t in env.get("LD_LIBRARY_PATH", "").split(":") if t]
        eff = [t for t in now if os.path.realpath(t) not in hit_real]
        if mode == "prepend" and intended:
            eff = [intended] + [t for t in now if os.path.realpath(t) != os.path.realpath(intended)]
        blocked, checked = verify_environ(env, dict(env, LD_LIBRARY_PATH=":".join(eff)), report, fid,
                                      python=_kernel_python(target.spec))
        notes += checked
        if blocked:
            return FixPlan(fid, title, False, blocked, steps, True, tuple(notes), undo_hint=undo_hint,
                           payload={"kernelspec": payload})
    return FixPlan(fid, title, True, "", steps, True, tuple(notes), undo_hint=undo_hint, payload={"kernelspec": payload})


def _shell_shadow_plan(report: Report, ctx: dict[str, Any], env: dict[str, str], hits: list[str],
                       intended: str | None, notes: list[str]) -> FixPlan:
    """``remove-shadowing-dir`` from a shell (``ctx["shell"]``: the command line, or IPython in a
    terminal, with no kernelspec named): the ``LD_LIBRARY_PATH`` judged is this shell's own, which
    no kernelspec edit changes and which a child process cannot change in the shell that started
    it. The plan is advice: the exact ``export``/``unset`` line for this shell (checked like a
    kernelspec edit: a fresh process started with it must no longer have the finding), and each
    kernelspec whose own ``env`` puts a shadowing folder first, with the command that fixes it."""
    fid = "remove-shadowing-dir"
    carriers = _kernelspecs_that_shadow(ctx, hits)
    steps = [Step("advice", f"Kernelspec {name!r} puts {', '.join(dirs)} first on LD_LIBRARY_PATH in the kernels it "
                            "starts: fix it with",
                  snippet=f"cudnn-magic fix {fid} --kernel {shlex.quote(name)}") for name, dirs in carriers]
    if not hits:
        why = ("the named directory is not on this shell's LD_LIBRARY_PATH" if ctx.get("directory") else
               "no directory on this shell's LD_LIBRARY_PATH shadows a different cuDNN")
        if carriers:
            why += "; " + ", ".join(f"kernelspec {n!r}" for n, _ in carriers) + " puts one first (below)"
        return FixPlan(fid, "Stop a directory from shadowing cuDNN", False, why, tuple(steps), notes=tuple(notes))
    hit_real = {os.path.realpath(h) for h in hits}
    now = [t for t in env.get("LD_LIBRARY_PATH", "").split(":") if t]
    title = f"Take {', '.join(hits)} out of LD_LIBRARY_PATH"
    if intended and any(_has_other_libs(h) for h in hits):
        new = [intended] + [t for t in now if os.path.realpath(t) != os.path.realpath(intended)]
        title = f"Put {intended} ahead of {', '.join(hits)} in LD_LIBRARY_PATH"
        notes.append(f"{', '.join(hits)} also holds other libraries, so it stays, after {intended}")
    else:
        new = [t for t in now if os.path.realpath(t) not in hit_real]
    value = ":".join(new)
    line = f"export LD_LIBRARY_PATH={shlex.quote(value)}" if value else "unset LD_LIBRARY_PATH"
    steps.insert(0, Step("advice", "The shadowing comes from this shell's LD_LIBRARY_PATH: run this in the shell, "
                                   "then start Jupyter or the program again from it (and take the directory out where "
                                   "the variable is set: ~/.bashrc, a module file, the job script)", snippet=line))
    if ctx.get("verify", True):
        after = {k: v for k, v in env.items() if k != "LD_LIBRARY_PATH"}
        if value:
            after["LD_LIBRARY_PATH"] = value
        blocked, checked = verify_environ(env, after, report, fid)
        notes += checked
        if blocked:
            return FixPlan(fid, title, False, blocked, tuple(steps), notes=tuple(notes))
    return FixPlan(fid, title, False, "advice only: a command cannot change the environment of the shell that "
                   "started it; the line below does, in that shell", tuple(steps), notes=tuple(notes))


def _kernelspecs_that_shadow(ctx: dict[str, Any], hits: list[str]) -> list[tuple[str, list[str]]]:
    """``(name, folders)`` of each kernelspec whose own ``env`` LD_LIBRARY_PATH puts a folder
    first that shadows a different cuDNN in the environment it starts its kernels with (judged
    as ``--kernel NAME`` judges it), or that lists one of ``hits``."""
    hit_real = {os.path.realpath(h) for h in hits}
    out = []
    for name, spec in kernelspecs_setting("LD_LIBRARY_PATH"):
        kenv = kernel_start_environ(spec, dict(os.environ))
        own = [t for t in str(spec["env"]["LD_LIBRARY_PATH"]).split(":") if t and not t.startswith("$")]
        listed = [t for t in own if os.path.realpath(t) in hit_real]
        if not listed:
            try:
                khits, _, _ = _shadowing(run_check(environ=kenv), kenv, {})
            except Exception:  # noqa: BLE001 - a spec that cannot be judged is not named
                continue
            listed = [t for t in own if os.path.realpath(t) in {os.path.realpath(k) for k in khits}]
        if listed:
            out.append((name, listed))
    return out


def _kernel_python(spec: dict[str, Any]) -> str:
    """The interpreter a kernelspec starts (its ``argv[0]`` when that is a Python), else this one."""
    argv = spec.get("argv") if isinstance(spec.get("argv"), list) else []
    first = str(argv[0]) if argv else ""
    if first and os.path.isabs(first) and "python" in os.path.basename(first) and os.access(first, os.X_OK):
        return first
    return sys.executable


def _imported_framework(name: str) -> Any:
    return sys.modules.get(name)


def memory_plan(report: Report, ctx: dict[str, Any]) -> FixPlan:
    fid = "allow-memory-growth"
    steps: list[Step] = []
    notes: list[str] = []
    env_now = _environ(ctx)
    spec_changes: dict[str, str] = {}
    restart = False
    names = {fw.name for fw in report.frameworks if fw.verdict != "not-applicable"}
    tf = _imported_framework("tensorflow")
    has_tf = tf is not None or "TensorFlow" in names or ctx.get("tensorflow")
    has_jax = "jax" in sys.modules or "JAX" in names or ctx.get("jax")
    payload: dict[str, Any] = {}
    if has_tf:
        if tf is not None and not ctx.get("tf_initialized"):
            steps.append(Step("call", "Call tf.config.experimental.set_memory_growth(gpu, True) for every GPU "
                                      "(works until TensorFlow initializes its GPUs; if it already has, falls back "
                                      "to the kernelspec env and a restart)",
                              snippet="for gpu in tf.config.list_physical_devices('GPU'):\n"
                                      "    tf.config.experimental.set_memory_growth(gpu, True)"))
            payload["tf_call"] = True
        elif tf is None:
            steps.append(Step("set-env", "TensorFlow is not imported yet: set it in this kernel now (read when "
                                         "TensorFlow creates its GPU allocator)", env=(("TF_FORCE_GPU_ALLOW_GROWTH", "true"),)))
        else:
            restart = True
        spec_changes["TF_FORCE_GPU_ALLOW_GROWTH"] = "true"
    if has_jax:
        if "jax" in sys.modules and not ctx.get("jax_uninitialized"):
            restart = True
            notes.append("JAX is imported: XLA_PYTHON_CLIENT_PREALLOCATE is read when its GPU backend starts, so it "
                         "applies after a restart (set it in the first cell, before importing jax)")
        else:
            steps.append(Step("set-env", "JAX is not imported yet: set it in this kernel now (read when the GPU "
                                         "backend starts)", env=(("XLA_PYTHON_CLIENT_PREALLOCATE", "false"),)))
        spec_changes["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"
        notes.append("or cap JAX instead: XLA_PYTHON_CLIENT_MEM_FRACTION=0.5 (a fraction of GPU memory)")
    if not has_tf and not has_jax:
        return FixPlan(fid, "Let GPU memory grow", False, "neither TensorFlow nor JAX is installed or imported here",
                       steps=(Step("advice", "PyTorch allocates on demand already; to return its cache call",
                                   snippet="torch.cuda.empty_cache()"),))
    gpu_fws = [n for n in ("TensorFlow", "JAX", "PyTorch") if n in names or n.lower() in sys.modules]
    if len(gpu_fws) >= 2:
        steps.append(Step("advice", f"{' and '.join(gpu_fws)} share the GPU: hide it from the one that does not need it",
                          snippet="tf.config.set_visible_devices([], 'GPU')   # before TensorFlow touches the GPU\n"
                                  "# or start that process with CUDA_VISIBLE_DEVICES=\"\"\n"
                                  "# JAX on CPU only: JAX_PLATFORMS=cpu"))
    target = find_running_kernelspec(ctx)
    if isinstance(target, str):
        notes.append(f"not persisted in the kernelspec: {target}")
        if restart and not any(s.kind in ("call", "set-env") for s in steps):
            return FixPlan(fid, "Let GPU memory grow", False, target, tuple(steps), True, tuple(notes))
    else:
        step, kp = _kernelspec_step(target, dict(spec_changes), "kept for the next kernel start")
        steps.append(step)
        payload["kernelspec"] = kp
    if restart:
        steps.append(Step("restart", "Restart, then set it before the framework starts its GPU",
                          snippet="import os; os.environ['TF_FORCE_GPU_ALLOW_GROWTH'] = 'true'  # first cell\n"
                                  + RESTART_NOTE))
    env_steps = tuple(s for s in steps)
    for s in env_steps:
        for k, _v in s.env:
            if s.kind == "set-env":
                payload.setdefault("previous_env", {})[k] = env_now.get(k)
    return FixPlan(fid, "Let GPU memory grow instead of preallocating", True, "", tuple(steps), restart, tuple(notes),
                   undo_hint=f"%cudnn_fix --undo {fid}", payload=payload)


def restart_plan(report: Report, ctx: dict[str, Any]) -> FixPlan:
    fid = "restart-kernel"
    in_kernel = ctx.get("in_kernel", _kernel_app() is not None)
    notes = [("The kernel process stops after this cell's reply; the Jupyter server's restarter starts it again with "
              "the same connection file, and the notebook stays open. Variables are lost.")]
    pending = [e for e in _journal_load().get("remove-shadowing-dir", []) + _journal_load().get("allow-memory-growth", [])
               if e.get("kind") == "kernelspec"]
    if pending:
        notes.append(RESTART_NOTE)
    step = Step("restart", "Stop this kernel process so the front end restarts it",
                snippet="get_ipython().kernel.io_loop.stop()  # then os._exit(0) if it has not exited in 5 s")
    if not in_kernel:  # no kernel internals to show: there is no kernel here to stop
        return FixPlan(fid, "Restart the kernel", False, "not running in a Jupyter kernel (in a terminal, quit and "
                       "start IPython or the program again)", (), False)
    if ctx.get("verify", True):  # a restart that meets the same finding is no fix
        why, checked = verify_restart(_environ(ctx), report, fid)
        notes += checked
        if why:
            return FixPlan(fid, "Restart the kernel", False, why, (step,), True, tuple(notes), undo_hint="nothing to undo")
    return FixPlan(fid, "Restart the kernel", True, "", (step,), True, tuple(notes), undo_hint="nothing to undo")


def import_order_plan(report: Report, ctx: dict[str, Any]) -> FixPlan:
    sol = [n for n in (framework_need(fw) for fw in report.frameworks) if n]

    imports = {c.name: f"import {c.import_name}" for c in framework_probes()}
    # The newest lower bound first: its cuDNN satisfies the older builds within a major.
    def low(n: CudnnNeed) -> Version:
        w = witness(n.specifier)
        return w or Version("0")

    order = [n.framework.rsplit(" ", 1)[0] for n in sorted(sol, key=low, reverse=True)]
    lines = [imports[n] for n in order if n in imports] or ["import torch  # the framework whose cuDNN you need, first"]
    return _advice("import-order", "Restart, then import the framework with the newest cuDNN requirement first",
                   "\n".join(lines), [f"needs: {n.framework} {n.requirement}" for n in sol], restart=True)


def one_venv_plan(report: Report, ctx: dict[str, Any]) -> FixPlan:
    notes = []
    for w in report.wheels_overwritten:
        names = " and ".join(f"{n} {v}" for n, v in w.distributions)
        present = f"{w.present[0]} {w.present[1]}" if w.present else "undecided"
        notes.append(f"{names} share {w.directory}; the files there are {present}'s (RECORD sha256)")
    snippet = ("python -m venv ~/venv-cu13 && ~/venv-cu13/bin/pip install ipykernel <the CUDA 13 framework>\n"
               "~/venv-cu13/bin/python -m ipykernel install --user --name cu13\n"
               "python -m venv ~/venv-cu12 && ~/venv-cu12/bin/pip install ipykernel <the CUDA 12 framework>\n"
               "~/venv-cu12/bin/python -m ipykernel install --user --name cu12")
    return _advice("one-venv-per-cuda", "Use one virtual environment (and kernel) per CUDA major", snippet, notes,
                   restart=True)


def driver_plan(report: Report, ctx: dict[str, Any]) -> FixPlan:
    floors = []
    for fw in report.frameworks:
        f = driver_floor(fw.cuda_compiled)
        if f:
            floors.append((f, fw))
    if not floors:
        return _advice("upgrade-driver", "Upgrade the NVIDIA driver",
                       "install a driver that supports the CUDA version your framework was built with",
                       [("CUDA 13.x needs >= 580; 12.x >= 525.60.13; 11.x >= 450.80.02 (Linux; NVIDIA CUDA "
                         "minor-version compatibility)")])

    best, fw = floors[0]
    for f, w in floors[1:]:
        if driver_at_least(f, best):
            best, fw = f, w
    return _advice("upgrade-driver", f"Upgrade the NVIDIA driver to {best} or newer",
                   f"NVIDIA driver >= {best} (for {fw.name} {fw.version}, CUDA {fw.cuda_compiled}); install it on the "
                   "host, e.g. from your distribution's packages or nvidia.com/drivers",
                   ["source: NVIDIA CUDA minor-version compatibility page"])


def reinstall_plan(report: Report, ctx: dict[str, Any]) -> FixPlan:
    dist, version = ctx.get("dist"), ctx.get("version")
    overwritten = [(n, v) for w in report.wheels_overwritten for n, v in w.distributions if w.present != (n, v)]
    if not dist and overwritten:
        # Wheels that overwrote each other: restoring one is a choice (the other loses its files).
        choices = tuple((f"Restore {n} {v}'s files", {"dist": n, "version": v}) for n, v in overwritten)
        if len(choices) == 1:
            dist, version = overwritten[0]
        else:
            return FixPlan("reinstall-cudnn", "Restore one overwritten cuDNN wheel", False,
                           "several distributions lost files: pick the one your framework needs", choices=choices)
    if not dist:
        for c in (*report.cudnn_loaded, *report.cudnn_installed):
            if c.owner.startswith("pip: ") and len(c.owner.split()) == 3:
                _, dist, version = c.owner.split()
                break
    if dist and _DIST_NAME.match(str(dist)):
        try:
            v = str(Version(str(version))) if version else None
        except InvalidVersion:
            v = None
        pin = f"{canonicalize_name(str(dist))}=={v}" if v else canonicalize_name(str(dist))
        argv = (_python(ctx), "-m", "pip", "install", "--force-reinstall", "--no-deps", pin)
        return FixPlan("reinstall-cudnn", f"Reinstall {pin}", False, "advice only: review, then run it yourself",
                       (Step("advice", f"Reinstall {pin} so every file comes from one release", argv=argv,
                             snippet=" ".join(shlex.quote(a) for a in argv)),), True)
    return _advice("reinstall-cudnn", "Reinstall cuDNN from one release",
                   "remove the stray libcudnn* files and reinstall the package that owns the directory "
                   "(conda install --force-reinstall cudnn, or your distribution's package)", restart=True)


def same_device_plan(report: Report, ctx: dict[str, Any]) -> FixPlan:
    devs = [str(d) for d in (ctx.get("devices") or ()) if re.match(r"^(cpu|cuda(:\d+)?|mps|xpu(:\d+)?)$", str(d))]
    target = next((d for d in devs if d.startswith("cuda")), devs[0] if devs else "cuda")
    note = [f"devices seen: {', '.join(devs)}"] if devs else []
    return _advice("same-device", f"Put the model and its inputs on {target}",
                   f"device = torch.device({target!r})\nmodel = model.to(device)\nx = x.to(device)", note)


def _framework_names(report: Report) -> set[str]:
    return {fw.name for fw in report.frameworks}


def disable_benchmark_plan(report: Report, ctx: dict[str, Any]) -> FixPlan:
    lines = []
    names = _framework_names(report) or {"PyTorch", "TensorFlow"}
    if "PyTorch" in names:
        lines.append("import torch; torch.backends.cudnn.benchmark = False   # PyTorch: no autotuning")
    if "TensorFlow" in names:
        lines.append("import os; os.environ['TF_CUDNN_USE_AUTOTUNE'] = '0'   # TensorFlow: before importing it")
    return _advice("disable-cudnn-benchmark", "Turn off cuDNN autotuning", "\n".join(lines),
                   ["autotuning tries many algorithms with large workspaces; without it cuDNN uses its heuristics"])


def cudnn_fallback_plan(report: Report, ctx: dict[str, Any]) -> FixPlan:
    lines = []
    names = _framework_names(report) or {"PyTorch", "TensorFlow"}
    if "PyTorch" in names:
        lines.append("import torch\nwith torch.backends.cudnn.flags(enabled=False):\n    out = model(x)   # this op without cuDNN")
    if "TensorFlow" in names:
        lines.append("# TensorFlow/Keras RNNs: a non-default option (e.g. recurrent_dropout>0) selects the generic kernel")
    return _advice("cudnn-fallback", "Run the op without cuDNN (slower)", "\n".join(lines),
                   ["to get past the failing call, or to get a clearer error from the non-cuDNN kernel"])


def cuda_build_plan(report: Report, ctx: dict[str, Any]) -> FixPlan:
    caps = sorted({"{}.{}".format(*g.compute_capability) for g in report.gpus if g.compute_capability})
    notes = [f"this machine's GPUs have compute capability {', '.join(caps)}"] if caps else []
    for fw in report.frameworks:
        if fw.cuda_compute_capabilities:
            notes.append(f"{fw.name} {fw.version} was built for {', '.join(fw.cuda_compute_capabilities)}")
    return _advice("install-cuda-build", "Install a framework build with CUDA kernels for this GPU",
                   "pick the build for your GPU on the framework's install page (PyTorch: pytorch.org/get-started; "
                   "TensorFlow: pip install 'tensorflow[and-cuda]'; JAX: pip install 'jax[cuda12]')", notes, restart=True)
