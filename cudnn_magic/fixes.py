"""Fix registry: preview exactly what a fix will do, apply it, undo it. No IPython, no widgets.

Every fix is computed from live facts (the :class:`~cudnn_magic.model.Report`, this process's
environment, the kernelspec on disk), never from a template filled with text from a log:

* requirements are rebuilt from parsed, validated values (:class:`packaging.version.Version`,
  :class:`packaging.specifiers.SpecifierSet`, :class:`packaging.requirements.Requirement`)
  and distribution names are checked against :data:`_DIST_NAME`;
* commands are argument lists run without a shell, and only the kernel's own interpreter
  (``sys.executable``) is targeted;
* kernelspec edits are atomic (temporary file + ``os.replace``), keep a byte-for-byte backup
  (``kernel.json.cudnn-magic-backup-<timestamp>``), are recorded in an undo journal, and only
  ever touch the running kernel's own kernelspec.

Flow: :func:`plan` returns a :class:`FixPlan` (the preview, with every step spelled out);
:func:`apply` carries it out and returns a :class:`FixResult` (what was done, how to undo);
:func:`undo` reverts the last applied plan of a fix id from the journal.

Which kernelspec is "the running kernel's": the connection file jupyter_client writes holds
``kernel_name`` (``jupyter_client/connect.py`` ``write_connection_file``; the
``KernelManager`` passes its ``kernel_name``, and jupyter_server and nbclient use that manager),
and ipykernel knows its connection file (``ipykernel.connect.get_connection_file``). That name
is looked up with ``KernelSpecManager().find_kernel_specs()``. Without a name (a kernel started
by other tooling) the one kernelspec whose ``argv[0]`` is this interpreter is used, and none
when several match. Where the spec is ipykernel's built-in ``python3`` (served from the
package's ``resources`` folder, not a kernels directory) or read-only, a user-level copy is
written to ``JUPYTER_DATA_DIR/kernels/<name>/kernel.json`` when that folder comes earlier in
the kernelspec search path (so it wins); otherwise the fix is not applicable and says why.

Takes effect on a fresh start only: jupyter_client's ``KernelManager`` caches the spec it
started with (``manager.py`` ``kernel_spec`` property) and reuses its provisioner on restart
(``_async_pre_start_kernel``: "will not be None on restarts"), so "Restart Kernel" relaunches
with the environment computed at the first start. A kernelspec ``env`` change applies when the
kernel is shut down and started again (JupyterLab: Kernel > Shut Down Kernel, then pick the
kernel again), or in any new notebook. The previews say so.
"""

from __future__ import annotations

import dataclasses
import difflib
import errno
import hashlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Literal

from packaging.markers import Marker
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from .files import atomic_write, file_lock
from .model import FrameworkBuild, Report
from .versions import CudnnVersion, driver_floor, try_parse

__all__ = [
    "FIXES", "FixPlan", "FixResult", "Step", "CudnnNeed", "Solution",
    "plan", "apply", "undo", "framework_need", "solve_cudnn", "find_running_kernelspec",
]

# Public contract: README "Fix ids". Keep ids stable; add, never rename.
FIXES: dict[str, str] = {
    "install-matching-cudnn": "pip install (into the kernel's own environment) the one cuDNN wheel requirement "
                              "that satisfies every installed framework's rule and pin, then restart",
    "remove-shadowing-dir": "take the directory that shadows the right cuDNN out of LD_LIBRARY_PATH (or put the "
                            "wheel's directory first) in this kernel's kernelspec env, with a backup; applies on a "
                            "fresh kernel start",
    "reinstall-cudnn": "advice: the exact pip command that reinstalls the cuDNN distribution whose files are "
                       "missing or of mixed releases",
    "install-cudnn-deps": "advice: install the missing libraries cuDNN's sub-libraries need (libnvrtc, libcublas, zlib)",
    "allow-memory-growth": "let TensorFlow/JAX grow GPU memory instead of preallocating it (in-process when the "
                           "framework has not initialized the GPU yet, else in the kernelspec env)",
    "free-gpu-memory": "advice: free GPU memory held by this kernel or another process",
    "upgrade-driver": "advice: the minimum NVIDIA driver for the CUDA a framework was built with",
    "restart-kernel": "restart this kernel (the notebook stays open; the Jupyter server restarts it)",
    "import-order": "advice: import the framework whose cuDNN you need first",
    "one-venv-per-cuda": "advice: one virtual environment per CUDA major, when wheels of two CUDA majors overwrite "
                         "each other's cuDNN files",
    "make-contiguous": "advice: make a non-contiguous PyTorch tensor contiguous",
    "same-device": "advice: move tensors and the module to one device",
    "check-shapes": "advice: check the input's shape against what the layer expects",
    "disable-cudnn-benchmark": "advice: turn off cuDNN autotuning (PyTorch cudnn.benchmark, TF_CUDNN_USE_AUTOTUNE)",
    "cudnn-fallback": "advice: run the failing op without cuDNN (slower) to get past it or get a clearer error",
    "install-cuda-build": "advice: install a framework build with CUDA kernels for this GPU's compute capability",
    "install-cudnn-build": "advice: install a framework build compiled with cuDNN support (its GPU wheel), or rebuild "
                           "it with cuDNN found",
}

StepKind = Literal["run", "set-env", "kernelspec", "call", "restart", "advice"]

_DIST_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,98}[A-Za-z0-9])?$")
_CUDNN_DIST = re.compile(r"^nvidia-cudnn-cu(\d{2})$")
_ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]{0,63}$")
_EXTRA_IN_MARKER = re.compile(r"""extra\s*==\s*["']([^"']+)["']""")
BACKUP_TAG = ".cudnn-magic-backup-"
RESTART_NOTE = (
    "A kernelspec change applies when the kernel is started fresh from its kernelspec: shut the kernel down and "
    "start it again (JupyterLab: Kernel > Shut Down Kernel, then select the kernel). A plain Restart reuses the "
    "environment the Jupyter server computed when this kernel first started (jupyter_client caches the spec)."
)


# --------------------------------------------------------------------------- data


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
class FixPlan:
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
                parts.append(" ".join(_quote(a) for a in s.argv))
            elif s.kind in ("set-env", "kernelspec"):
                where = "this kernel's environment" if s.kind == "set-env" else (s.path or "kernel.json")
                parts.append("; ".join(f"{k}={'<unset>' if v is None else v}" for k, v in s.env) + f" in {where}")
            elif s.snippet:
                parts.append(s.snippet)
            else:
                parts.append(s.description)
        return "\n".join(parts)

    def _why_not(self) -> str:
        if self.reason.startswith("advice only"):
            return "Advice only" + self.reason[len("advice only"):]
        return f"Cannot apply here: {self.reason}"

    def text(self) -> str:
        """The preview as plain text (terminal, CLI, ``text/plain``)."""
        lines = [f"{self.fix_id}: {self.title}"]
        if not self.applicable:
            lines.append(f"  {self._why_not()}")
        for i, s in enumerate(self.steps, 1):
            lines.append(f"  {i}. [{s.kind}] {s.description}")
            if s.argv:
                lines.append("       $ " + " ".join(_quote(a) for a in s.argv))
            if s.kind == "set-env":
                lines += [f"       {k}={'<unset>' if v is None else v}" for k, v in s.env]
            if s.path:
                lines.append(f"       file: {s.path}")
            lines += ["       " + d for d in s.diff]
            if s.snippet and s.kind in ("call", "advice", "restart") and not s.argv:
                lines += ["       " + ln for ln in s.snippet.splitlines()]
        if self.restart_required:
            lines.append("  Needs a kernel restart to take effect.")
        for label, _ in self.choices:
            lines.append(f"  Choice: {label}")
        for n in self.notes:
            lines.append(f"  Note: {n}")
        if self.undo_hint:
            lines.append(f"  Undo: {self.undo_hint}")
        return "\n".join(lines)

    def html(self) -> str:
        """The preview as HTML (escaped)."""
        import html as h

        out = [f"<div class='cudnn-fix-plan'><b>{h.escape(self.title)}</b> <code>{h.escape(self.fix_id)}</code>"]
        if not self.applicable:
            out.append(f"<div>{h.escape(self._why_not())}</div>")
        out.append("<ol>")
        for s in self.steps:
            out.append(f"<li>{h.escape(s.description)}")
            if s.argv:
                out.append("<pre>$ " + h.escape(" ".join(_quote(a) for a in s.argv)) + "</pre>")
            if s.kind == "set-env":
                out.append("<pre>" + h.escape("\n".join(f"{k}={'<unset>' if v is None else v}" for k, v in s.env))
                           + "</pre>")
            if s.path:
                out.append(f"<div>file: <code>{h.escape(s.path)}</code></div>")
            if s.diff:
                out.append("<pre>" + h.escape("\n".join(s.diff)) + "</pre>")
            if s.snippet and s.kind in ("call", "advice", "restart") and not s.argv:
                out.append("<pre>" + h.escape(s.snippet) + "</pre>")
            out.append("</li>")
        out.append("</ol>")
        if self.restart_required:
            out.append("<div><b>Needs a kernel restart to take effect.</b></div>")
        for n in self.notes:
            out.append(f"<div><small>{h.escape(n)}</small></div>")
        if self.undo_hint:
            out.append(f"<div>Undo: {h.escape(self.undo_hint)}</div>")
        out.append("</div>")
        return "".join(out)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return {"text/plain": self.text(), "text/html": self.html()}

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(self.text())

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (no private payload)."""
        from .model import to_plain

        d = {f.name: to_plain(getattr(self, f.name)) for f in dataclasses.fields(self) if f.name != "payload"}
        d["action"] = self.action
        return d


@dataclass(frozen=True)
class FixResult:
    """What :func:`apply` or :func:`undo` did.

    Attributes:
        fix_id: the fix.
        ok: True when every step succeeded.
        done: one line per step carried out.
        output: lines a command printed (pip), in order.
        error: what went wrong, or None.
        undo_hint: how to undo it ("%cudnn_fix --undo remove-shadowing-dir").
        restart_required: the kernel must restart (or start fresh) for it to take effect.
    """

    fix_id: str
    ok: bool
    done: tuple[str, ...] = ()
    output: tuple[str, ...] = ()
    error: str | None = None
    undo_hint: str = ""
    restart_required: bool = False

    def text(self) -> str:
        lines = [f"{self.fix_id}: {'done' if self.ok else 'FAILED'}"]
        lines += [f"  - {d}" for d in self.done]
        if self.error:
            lines.append(f"  Error: {self.error}")
        if self.restart_required and self.ok:
            lines.append("  Restart the kernel for it to take effect.")
        if self.undo_hint:
            lines.append(f"  Undo: {self.undo_hint}")
        return "\n".join(lines)

    def html(self) -> str:
        """What was done, the error if any, and the undo command, as escaped HTML."""
        import html as h

        items = "".join(f"<li>{h.escape(d)}</li>" for d in self.done)
        out = [f"<div class='cudnn-fix-result'><b>{'Done' if self.ok else 'Failed'}: {h.escape(self.fix_id)}</b>"
               f"<ul>{items}</ul>"]
        if self.error:
            out.append(f"<div>Error: {h.escape(self.error)}</div>")
        if self.ok and self.restart_required:
            out.append("<div>Restart the kernel for it to take effect.</div>")
        if self.undo_hint:
            out.append(f"<div>Undo: <code>{h.escape(self.undo_hint)}</code></div>")
        out.append("</div>")
        return "".join(out)

    def __str__(self) -> str:
        return self.text()

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return {"text/plain": self.text(), "text/html": self.html()}

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(self.text())


def _quote(arg: str) -> str:
    import shlex

    return shlex.quote(arg)


# --------------------------------------------------------------------------- requirement solver


@dataclass(frozen=True)
class CudnnNeed:
    """What one framework accepts, as a pip requirement on one cuDNN wheel family.

    Attributes:
        framework: display name with version ("PyTorch 2.9.1").
        package: ``nvidia-cudnn-cu12``-style distribution (the CUDA major picks the family).
        specifier: versions it accepts (its pins intersected with its rule).
        sources: where each part came from (pin text, rule).
    """

    framework: str
    package: str
    specifier: SpecifierSet
    sources: tuple[str, ...] = ()

    @property
    def requirement(self) -> str:
        return render_requirement(self.package, self.specifier)


@dataclass(frozen=True)
class Solution:
    """The solver's answer: one requirement for all, or the conflicts and per-framework choices."""

    requirement: str | None
    needs: tuple[CudnnNeed, ...] = ()
    conflicts: tuple[str, ...] = ()
    choices: tuple[tuple[str, str], ...] = ()  # (framework, requirement)


def _marker_applies(marker: Marker | None) -> bool:
    """A pin counts when its marker holds here, for its extra if it names one (TensorFlow's
    ``extra == "and-cuda"`` pin counts: that is the install that brings the wheel)."""
    if marker is None:
        return True
    extras = _EXTRA_IN_MARKER.findall(str(marker)) or [""]
    for extra in extras:
        try:
            if marker.evaluate({"extra": extra}):
                return True
        except Exception:  # noqa: BLE001 - an odd marker never breaks the solver
            continue
    return False


def _family_from_cuda(cuda: str | None, cudnn_major: int | None) -> str:
    major = (cuda or "").split(".")[0]
    if not major.isdigit():
        major = "12" if (cudnn_major or 9) >= 9 else "11"
    if cudnn_major == 8 and int(major) > 12:
        major = "12"
    return f"nvidia-cudnn-cu{int(major)}"


def _rule_specifier(checker: str, v: CudnnVersion) -> tuple[SpecifierSet, str]:
    """The versions a checker's rule accepts for compiled-against ``v`` (FACTS.md table)."""
    m = v.major
    if v.minor is None or checker == "onnxruntime":
        spec, text = f">={m},<{m + 1}", f"same major {m}"
    elif checker == "tensorflow-compat-version" or (checker in ("tensorflow-legacy", "pytorch") and m < 7):
        spec, text = f">={m}.{v.minor},<{m}.{v.minor + 1}", f"same {m}.{v.minor}"
    else:
        spec, text = f">={m}.{v.minor},<{m + 1}", f"same major {m}, minor >= {v.minor}"
    if m == 9 and (checker == "jax" or (checker in ("nvidia", "cupy") and (v.minor or 0) < 10)):
        spec += ",!=9.10.0.*"
        text += ", not 9.10.0"
    return SpecifierSet(spec), text


def framework_need(fw: FrameworkBuild) -> CudnnNeed | None:
    """What ``fw`` accepts: its cuDNN pins (``Requires-Dist``, markers evaluated) intersected
    with its checker's rule applied to its compiled-against cuDNN. None for builds without
    cuDNN (CPU builds) or when nothing is known."""
    if not getattr(fw, "pip_solvable", True):
        return None  # no cuDNN wheel is on this consumer's loader path (a vendored copy, an unversioned dlopen)
    label = f"{fw.name} {fw.version}"
    packages: list[str] = []
    spec = SpecifierSet()
    sources: list[str] = []
    for pin in fw.pins:
        try:
            req = Requirement(pin)
        except InvalidRequirement:
            continue
        name = canonicalize_name(req.name)
        if not _CUDNN_DIST.match(name) or not _marker_applies(req.marker):
            continue
        packages.append(name)
        spec &= req.specifier
        sources.append(f"pin {name}{req.specifier} ({fw.distribution} metadata)")
    compiled = try_parse(fw.cudnn_compiled) if fw.cudnn_compiled else None
    if compiled is not None:
        rule_spec, text = _rule_specifier(fw.checker, compiled)
        spec &= rule_spec
        sources.append(f"rule ({fw.checker}): built with {compiled}, needs {text}")
    if not packages and compiled is None:
        return None
    families = sorted(set(packages))
    package = families[0] if families else _family_from_cuda(fw.cuda_compiled, compiled.major if compiled else None)
    return CudnnNeed(label, package, spec, tuple(sources))


def _candidates(spec: SpecifierSet) -> list[Version]:
    """Versions that witness whether ``spec`` is satisfiable: every bound it names and the
    next patch, minor and major after each, and 0 (a spec with only upper bounds, ``<10``)."""
    out: set[Version] = {Version("0")}
    for s in spec:
        text = s.version.rstrip("*").rstrip(".")
        try:
            v = Version(text)
        except InvalidVersion:
            continue
        r = list(v.release) + [0, 0]
        out.update({v, Version(f"{r[0]}.{r[1]}.{r[2] + 1}"), Version(f"{r[0]}.{r[1] + 1}"), Version(f"{r[0] + 1}")})
    return sorted(out)


def witness(spec: SpecifierSet) -> Version | None:
    """The lowest version found that satisfies ``spec``, or None (unsatisfiable)."""
    for v in _candidates(spec):
        if spec.contains(v, prereleases=False):
            return v
    return None if len(spec) else Version("0")


def _short(v: Version) -> str:
    rel = list(v.release)
    while len(rel) > 1 and rel[-1] == 0:
        rel.pop()
    return ".".join(str(x) for x in rel)


def render_requirement(package: str, spec: SpecifierSet) -> str:
    """A compact requirement equivalent to ``package`` + ``spec`` (e.g. ``==9.10.2.21`` when an
    exact pin is inside, else ``>=LOW,<HIGH`` plus exclusions inside that range)."""
    if not _DIST_NAME.match(package):
        raise ValueError(f"not a distribution name: {package!r}")
    exact = [s for s in spec if s.operator in ("==", "===") and not s.version.endswith("*")]
    if exact:
        return f"{package}=={exact[0].version}"
    ops = {s.operator for s in spec}
    if not ops <= {">=", "<", "!=", "=="}:
        return f"{package}{spec}"
    lows = [Version(s.version) for s in spec if s.operator == ">="]
    highs = [Version(s.version) for s in spec if s.operator == "<"]
    low = max(lows) if lows else None
    high = min(highs) if highs else None
    parts: list[str] = []
    if low is not None:
        parts.append(f">={low}")
    for s in spec:
        if s.operator == "==":  # wildcard ==X.*
            parts.append(str(s))
    for s in sorted(spec, key=str):
        if s.operator != "!=":
            continue
        v = Version(s.version.rstrip("*").rstrip("."))
        if (low is None or v >= Version(_short(low)) or v.release[:2] >= low.release[:2]) and (high is None or v < high):
            parts.append(str(s))
    if high is not None:
        parts.append(f"<{_short(high)}")
    text = f"{package}{','.join(parts)}"
    # Sanity: the compact form accepts the same witness.
    w = witness(spec)
    req = Requirement(text)
    if w is not None and not req.specifier.contains(w, prereleases=False):
        return f"{package}{spec}"
    return text


def solve_cudnn(frameworks: Iterable[FrameworkBuild]) -> Solution:
    """The one cuDNN requirement satisfying every framework with a cuDNN build, or the
    conflicts (one line each, naming the frameworks) and each framework's own requirement.

    Rules: FACTS.md "Which runtime cuDNN each framework accepts"; pins: each distribution's
    ``Requires-Dist`` (``importlib.metadata``). Frameworks in different CUDA wheel families
    (``nvidia-cudnn-cu12`` vs ``-cu13``) conflict: one process maps one ``libcudnn.so.9``.
    """
    needs = tuple(n for n in (framework_need(fw) for fw in frameworks) if n is not None)
    choices = tuple((n.framework, n.requirement) for n in needs)
    if not needs:
        return Solution(None, needs, ("no installed framework needs cuDNN",), ())
    conflicts: list[str] = []
    for i, a in enumerate(needs):
        for b in needs[i + 1:]:
            if a.package != b.package:
                conflicts.append(f"{a.framework} needs {a.requirement} but {b.framework} needs {b.requirement} "
                                 f"(different CUDA wheel families; one process loads one libcudnn)")
            elif witness(a.specifier & b.specifier) is None:
                conflicts.append(f"{a.framework} needs {a.requirement} but {b.framework} needs {b.requirement}")
    for n in needs:
        if witness(n.specifier) is None:
            conflicts.append(f"{n.framework} alone is unsatisfiable ({n.package}{n.specifier})")
    if conflicts:
        return Solution(None, needs, tuple(conflicts), choices)
    spec = SpecifierSet()
    for n in needs:
        spec &= n.specifier
    if witness(spec) is None:  # pairwise fine, all together not
        names = ", ".join(n.framework for n in needs)
        return Solution(None, needs, (f"no single version satisfies {names} together",), choices)
    return Solution(render_requirement(needs[0].package, spec), needs, (), choices)


# --------------------------------------------------------------------------- environment helpers


def _python(context: dict[str, Any]) -> str:
    return str(context.get("python") or sys.executable)


def _pip_check(python: str) -> str | None:
    """None when ``python -m pip`` works, else the reason."""
    if python == sys.executable:
        return None if importlib.util.find_spec("pip") is not None else (
            f"pip is not installed in this kernel's environment ({sys.prefix}); "
            "install it with `python -m ensurepip` or use the environment's own package manager")
    try:
        r = subprocess.run([python, "-m", "pip", "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"cannot run {python}: {exc}"
    return None if r.returncode == 0 else f"pip is not installed for {python}"


def _installed_version(python: str, dist: str) -> str | None:
    """Version of ``dist`` installed for ``python`` (validated), or None."""
    if not _DIST_NAME.match(dist):
        return None
    if python == sys.executable:
        try:
            import importlib.metadata as md

            raw = md.version(dist)
        except Exception:  # noqa: BLE001
            return None
    else:
        code = "import sys, importlib.metadata as m\ntry: print(m.version(sys.argv[1]))\nexcept Exception: pass"
        try:
            raw = subprocess.run([python, "-c", code, dist], capture_output=True, text=True, timeout=60).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return None
    try:
        return str(Version(raw)) if raw else None
    except InvalidVersion:
        return None


def _pip_extra_args(context: dict[str, Any]) -> list[str]:
    """Allowed extra pip arguments: ``--no-index`` and ``--find-links DIR`` (an existing local
    directory), for offline installs and tests. Anything else is refused."""
    out: list[str] = []
    if context.get("no_index"):
        out.append("--no-index")
    fl = context.get("find_links")
    if fl:
        if not os.path.isdir(str(fl)):
            raise ValueError(f"--find-links must be an existing local directory: {fl!r}")
        out += ["--find-links", os.path.abspath(str(fl))]
    return out


def _kernel_app() -> Any:
    """The running ``IPKernelApp`` when this process is an ipykernel, else None. Imports
    nothing that is not already imported."""
    mod = sys.modules.get("ipykernel.kernelapp")
    if mod is None:
        return None
    try:
        app_cls = mod.IPKernelApp
        return app_cls.instance() if app_cls.initialized() else None
    except Exception:  # noqa: BLE001
        return None


def _connection_file(context: dict[str, Any]) -> str | None:
    if context.get("connection_file"):
        return str(context["connection_file"])
    app = _kernel_app()
    if app is None:
        return None
    try:
        from ipykernel.connect import get_connection_file

        return str(get_connection_file(app))
    except Exception:  # noqa: BLE001
        return getattr(app, "connection_file", None) or None


def _environ(context: dict[str, Any]) -> dict[str, str]:
    env = context.get("environ")
    return dict(env) if env is not None else dict(os.environ)


# --------------------------------------------------------------------------- kernelspec


@dataclass(frozen=True)
class KernelSpecTarget:
    """The running kernel's kernelspec and where an edit will be written.

    Attributes:
        name: kernelspec name ("python3").
        spec_dir: the resource directory the spec was found in.
        write_path: the ``kernel.json`` to write (the spec's own, or a user-level copy).
        spec: the spec as JSON (a dict), as it is now.
        original: the bytes of ``write_path`` now (None when it does not exist yet).
        how: how the kernel was identified, in words.
        copy_from: set when writing a user-level copy of a spec found elsewhere.
    """

    name: str
    spec_dir: str
    write_path: str
    spec: dict[str, Any]
    original: bytes | None
    how: str
    copy_from: str | None = None


def _same_exe(a: str, b: str, spec_dir: str = "") -> bool:
    """Does argv[0] ``a`` run interpreter ``b``? jupyter_client replaces a bare ``python``/
    ``python3``/``python3.X`` argv[0] with the server's interpreter (``format_kernel_cmd``), so
    such a spec counts when it lives under this interpreter's prefix."""
    if a in {"python", f"python{sys.version_info[0]}", "python%d.%d" % sys.version_info[:2]}:
        prefix = os.path.realpath(sys.prefix) + os.sep
        return os.path.realpath(b) == os.path.realpath(sys.executable) and os.path.realpath(spec_dir).startswith(prefix)
    found = shutil.which(a) if not os.path.isabs(a) else a
    return bool(found) and os.path.realpath(str(found)) == os.path.realpath(b)


def find_running_kernelspec(context: dict[str, Any] | None = None) -> KernelSpecTarget | str:
    """Find the running kernel's kernelspec (module docstring), or return why not.

    Context keys: ``kernel_name`` (explicit name, e.g. from the CLI ``--kernel``),
    ``connection_file``, ``python`` (the interpreter whose spec to match; default
    ``sys.executable``).
    """
    context = context or {}
    try:
        from jupyter_client.kernelspec import KernelSpecManager
    except ImportError:
        return "jupyter_client is not installed, so kernelspecs cannot be found"
    ksm = KernelSpecManager()
    try:
        specs = ksm.find_kernel_specs()
    except Exception as exc:  # noqa: BLE001
        return f"listing kernelspecs failed: {exc}"
    python = _python(context)
    name = str(context.get("kernel_name") or "")
    how = "named explicitly"
    if not name:
        cf = _connection_file(context)
        if cf:
            try:
                with open(cf, encoding="utf-8") as fh:
                    name = str(json.load(fh).get("kernel_name") or "")
                how = f"kernel_name {name!r} in the connection file {cf}"
            except (OSError, ValueError) as exc:
                return f"cannot read the connection file {cf}: {exc}"
    if not name:
        matches = []
        for n, d in specs.items():
            spec = _load_spec(n, d)
            argv = spec.get("argv") if isinstance(spec, dict) else None
            if isinstance(argv, list) and argv and _same_exe(str(argv[0]), python, d):
                matches.append(n)
        if len(matches) != 1:
            listed = ", ".join(sorted(matches)) or "none"
            return (f"cannot tell which kernelspec started this kernel: no kernel_name in the connection file and "
                    f"{len(matches)} kernelspecs run {python} ({listed}); name it with --kernel NAME")
        name = matches[0]
        how = f"the only kernelspec whose argv[0] is {python}"
    if name not in specs:
        return f"kernelspec {name!r} is not found in {', '.join(ksm.kernel_dirs)}"
    spec_dir = specs[name]
    spec = _load_spec(name, spec_dir)
    if not isinstance(spec, dict):
        return f"kernelspec {name!r} in {spec_dir} cannot be read: {spec}"
    bundled = _is_bundled_native(spec_dir)
    own = os.path.join(spec_dir, "kernel.json")
    if not bundled and _writable(own):
        with open(own, "rb") as fh:
            original = fh.read()
        return KernelSpecTarget(name, spec_dir, own, spec, original, how)
    # Read-only or ipykernel's built-in spec: a user-level copy, if it would win the search.
    try:
        from jupyter_core.paths import jupyter_data_dir

        user_kernels = os.path.join(jupyter_data_dir(), "kernels")
    except Exception as exc:  # noqa: BLE001
        return f"kernelspec {spec_dir} is read-only and the user data dir is unknown: {exc}"
    dirs = [os.path.normpath(d) for d in ksm.kernel_dirs]
    parent = os.path.normpath(os.path.dirname(spec_dir))
    if os.path.normpath(user_kernels) not in dirs:
        return f"kernelspec {spec_dir} is read-only and {user_kernels} is not on the kernelspec path"
    if not bundled and parent in dirs and dirs.index(parent) < dirs.index(os.path.normpath(user_kernels)):
        return (f"kernelspec {spec_dir} is read-only, and a user-level copy in {user_kernels} would be hidden by it "
                "(the environment's kernels come first, e.g. JUPYTER_PREFER_ENV_PATH)")
    target = os.path.join(user_kernels, name, "kernel.json")
    if os.path.exists(target):
        return f"{target} exists but was not picked for {name!r}; not touching it"
    why = "ipykernel's built-in python3 spec" if bundled else f"read-only {spec_dir}"
    return KernelSpecTarget(name, spec_dir, target, spec, None, how + f"; {why}, so a user-level copy is written",
                            copy_from=spec_dir)


def _load_spec(name: str, spec_dir: str) -> dict[str, Any] | str:
    if _is_bundled_native(spec_dir):
        try:
            from ipykernel.kernelspec import get_kernel_dict

            return dict(get_kernel_dict())
        except Exception as exc:  # noqa: BLE001
            return f"{type(exc).__name__}: {exc}"
    try:
        with open(os.path.join(spec_dir, "kernel.json"), encoding="utf-8") as fh:
            data = json.load(fh)
        return data if isinstance(data, dict) else "kernel.json is not a JSON object"
    except (OSError, ValueError) as exc:
        return f"{type(exc).__name__}: {exc}"


def _is_bundled_native(spec_dir: str) -> bool:
    if os.path.exists(os.path.join(spec_dir, "kernel.json")):
        return False
    try:
        from ipykernel.kernelspec import RESOURCES
    except Exception:  # noqa: BLE001
        return False
    return os.path.normpath(spec_dir) == os.path.normpath(RESOURCES)


def _writable(path: str) -> bool:
    """Can the fix edit ``path`` in place? Not when it is a symlink: its target may be shared by
    other kernelspecs, and an atomic replace would turn the link into a file (a user-level copy
    is made instead, or the fix says why it cannot apply)."""
    d = os.path.dirname(path)
    if os.path.islink(path):
        return False
    return os.access(d, os.W_OK) and (not os.path.exists(path) or os.access(path, os.W_OK))


def _dump_spec(spec: dict[str, Any]) -> bytes:
    # jupyter_client's KernelSpecManager.install_kernel_spec writes indent=1.
    return (json.dumps(spec, indent=1, ensure_ascii=False) + "\n").encode("utf-8")


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


def plan(fix_id: str, report: Report | None = None, *, context: dict[str, Any] | None = None) -> FixPlan:
    """Compute exactly what ``fix_id`` would do here, without doing it. Never raises for
    environment problems: a fix that cannot apply returns ``applicable=False`` with the reason.

    Args:
        fix_id: a key of :data:`FIXES`.
        report: live facts (``check.run_check()``); None means an empty report.
        context: optional inputs: ``python`` (interpreter, default ``sys.executable``),
            ``framework`` (pick one framework's requirement), ``directory`` (the shadowing
            directory), ``mode`` ("remove"/"prepend"), ``kernel_name``, ``connection_file``,
            ``environ``, ``find_links``/``no_index`` (offline pip), ``devices``, ``dist``/``version``.

    Raises:
        KeyError: ``fix_id`` is not a known fix id (likely a typo; see :data:`FIXES`).
    """
    if fix_id not in FIXES:
        raise KeyError(f"unknown fix id {fix_id!r}; known: {', '.join(FIXES)}")
    context = dict(context or {})
    report = report or Report()
    try:
        p = _PLANNERS[fix_id](report, context)
    except Exception as exc:  # noqa: BLE001 - a planner bug must not break the caller
        p = FixPlan(fix_id, FIXES[fix_id], False, f"could not compute this fix: {type(exc).__name__}: {exc}")
    return dataclasses.replace(p, context=context)


def _install_plan(report: Report, ctx: dict[str, Any]) -> FixPlan:
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
            from .probes.installed import resolve

            sonames = sorted({c.soname for c in report.cudnn_installed if c.is_main and c.soname} | {"libcudnn.so.9"})
            for so in sonames:
                r = resolve(so, "this kernel (plain dlopen)", None, environ=env)
                if r.picked and r.reason.startswith("LD_LIBRARY_PATH") and r.shadowed:
                    resolutions.append(r)
        except Exception as exc:  # noqa: BLE001
            notes.append(f"loader resolution failed: {exc}")
    hits: list[str] = []
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
        pv, sv = versions.get(os.path.realpath(r.picked or "")), versions.get(os.path.realpath(r.shadowed[0]))
        if pv is not None and pv == sv:
            continue
        for e in entries:
            if os.path.realpath(os.path.join(e, r.soname)) == os.path.realpath(r.picked or "") and e not in hits:
                hits.append(e)
        intended = intended or os.path.dirname(r.shadowed[0])
        notes.append(f"{r.consumer}: {r.soname} resolves to {r.picked} (cuDNN {pv or '?'}, {r.reason}), which hides "
                     f"{r.shadowed[0]} (cuDNN {sv or '?'})")
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
    return hits, intended, notes


_CUDNN_FILE = re.compile(r"^libcudnn[\w]*\.so")


def _has_other_libs(d: str) -> bool:
    try:
        return any(".so" in n and not _CUDNN_FILE.match(n) for n in os.listdir(d))
    except OSError:
        return False


def _remove_shadow_plan(report: Report, ctx: dict[str, Any]) -> FixPlan:
    fid = "remove-shadowing-dir"
    env = _environ(ctx)
    hits, intended, notes = _shadowing(report, env, ctx)
    if not hits:
        why = ("the named directory is not on LD_LIBRARY_PATH" if ctx.get("directory") else
               "no directory on LD_LIBRARY_PATH shadows a different cuDNN here")
        return FixPlan(fid, "Stop a directory from shadowing cuDNN", False, why, notes=tuple(notes))
    target = find_running_kernelspec(ctx)
    title = f"Take {', '.join(hits)} out of LD_LIBRARY_PATH"
    if isinstance(target, str):
        return FixPlan(fid, title, False, target, notes=tuple(notes), restart_required=True)
    mode = str(ctx.get("mode") or ("prepend" if intended and any(_has_other_libs(h) for h in hits) else "remove"))
    spec_env = target.spec.get("env") if isinstance(target.spec.get("env"), dict) else {}
    hit_real = {os.path.realpath(h) for h in hits}
    if "LD_LIBRARY_PATH" in spec_env and any(os.path.realpath(t) in hit_real for t in str(spec_env["LD_LIBRARY_PATH"]).split(":") if t):
        tokens = str(spec_env["LD_LIBRARY_PATH"]).split(":")
        notes.append("the kernelspec's own LD_LIBRARY_PATH lists the directory; only that entry changes")
    else:
        tokens = env.get("LD_LIBRARY_PATH", "").split(":")
        notes.append("LD_LIBRARY_PATH is inherited from the Jupyter server; the kernelspec gets this kernel's full "
                     "value without the directory")
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
    return FixPlan(fid, title, True, "", steps, True, tuple(notes), undo_hint=undo_hint, payload={"kernelspec": payload})


def _imported_framework(name: str) -> Any:
    return sys.modules.get(name)


def _memory_plan(report: Report, ctx: dict[str, Any]) -> FixPlan:
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


def _restart_plan(report: Report, ctx: dict[str, Any]) -> FixPlan:
    fid = "restart-kernel"
    in_kernel = ctx.get("in_kernel", _kernel_app() is not None)
    notes = ["The kernel process stops after this cell's reply; the Jupyter server's restarter starts it again with "
             "the same connection file, and the notebook stays open. Variables are lost."]
    pending = [e for e in _journal_load().get("remove-shadowing-dir", []) + _journal_load().get("allow-memory-growth", [])
               if e.get("kind") == "kernelspec"]
    if pending:
        notes.append(RESTART_NOTE)
    step = Step("restart", "Stop this kernel process so the front end restarts it",
                snippet="get_ipython().kernel.io_loop.stop()  # then os._exit(0) if it has not exited in 5 s")
    if not in_kernel:  # no kernel internals to show: there is no kernel here to stop
        return FixPlan(fid, "Restart the kernel", False, "not running in a Jupyter kernel (in a terminal, quit and "
                       "start IPython or the program again)", (), False)
    return FixPlan(fid, "Restart the kernel", True, "", (step,), True, tuple(notes), undo_hint="nothing to undo")


def _advice(fid: str, title: str, snippet: str, notes: Iterable[str] = (), restart: bool = False) -> FixPlan:
    return FixPlan(fid, title, False, "advice only: nothing to run from here", (Step("advice", title, snippet=snippet),),
                   restart, tuple(notes))


def _diagnosis_advice(fid: str, notes: Iterable[str] = ()) -> Callable[[Report, dict[str, Any]], FixPlan]:
    """Planner for a fix that is advice only, in the words of the diagnosis: the diagnosis's own
    fix when the button came from one (``context["advice"]``: ``title``, ``action``,
    ``restart_required``), else :func:`cudnn_magic.diagnose.fix_advice` from the live facts."""
    notes = tuple(notes)

    def planner(report: Report, ctx: dict[str, Any]) -> FixPlan:
        adv = ctx.get("advice")
        if isinstance(adv, dict) and isinstance(adv.get("title"), str) and isinstance(adv.get("action"), str) \
                and adv["title"] and adv["action"]:
            return _advice(fid, adv["title"], adv["action"], notes, bool(adv.get("restart_required")))
        from .diagnose import fix_advice

        f = fix_advice(fid, framework=str(ctx.get("framework") or ""), report=report)
        if f is None:
            return FixPlan(fid, FIXES[fid], False, "no advice text for this fix")
        return _advice(fid, f.title, f.action, notes, f.restart_required)

    return planner


def _import_order_plan(report: Report, ctx: dict[str, Any]) -> FixPlan:
    sol = [n for n in (framework_need(fw) for fw in report.frameworks) if n]
    imports = {"TensorFlow": "import tensorflow", "PyTorch": "import torch", "JAX": "import jax", "CuPy": "import cupy",
               "ONNX Runtime": "import onnxruntime"}
    # The newest lower bound first: its cuDNN satisfies the older builds within a major.
    def low(n: CudnnNeed) -> Version:
        w = witness(n.specifier)
        return w or Version("0")

    order = [n.framework.rsplit(" ", 1)[0] for n in sorted(sol, key=low, reverse=True)]
    lines = [imports[n] for n in order if n in imports] or ["import torch  # the framework whose cuDNN you need, first"]
    return _advice("import-order", "Restart, then import the framework with the newest cuDNN requirement first",
                   "\n".join(lines), [f"needs: {n.framework} {n.requirement}" for n in sol], restart=True)


def _one_venv_plan(report: Report, ctx: dict[str, Any]) -> FixPlan:
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


def _driver_plan(report: Report, ctx: dict[str, Any]) -> FixPlan:
    floors = []
    for fw in report.frameworks:
        f = driver_floor(fw.cuda_compiled)
        if f:
            floors.append((f, fw))
    if not floors:
        return _advice("upgrade-driver", "Upgrade the NVIDIA driver",
                       "install a driver that supports the CUDA version your framework was built with",
                       ["CUDA 13.x needs >= 580; 12.x >= 525.60.13; 11.x >= 450.80.02 (Linux; NVIDIA CUDA "
                        "minor-version compatibility)"])
    from .versions import driver_at_least

    best, fw = floors[0]
    for f, w in floors[1:]:
        if driver_at_least(f, best):
            best, fw = f, w
    return _advice("upgrade-driver", f"Upgrade the NVIDIA driver to {best} or newer",
                   f"NVIDIA driver >= {best} (for {fw.name} {fw.version}, CUDA {fw.cuda_compiled}); install it on the "
                   "host, e.g. from your distribution's packages or nvidia.com/drivers",
                   ["source: NVIDIA CUDA minor-version compatibility page"])


def _reinstall_plan(report: Report, ctx: dict[str, Any]) -> FixPlan:
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
                             snippet=" ".join(_quote(a) for a in argv)),), True)
    return _advice("reinstall-cudnn", "Reinstall cuDNN from one release",
                   "remove the stray libcudnn* files and reinstall the package that owns the directory "
                   "(conda install --force-reinstall cudnn, or your distribution's package)", restart=True)


def _same_device_plan(report: Report, ctx: dict[str, Any]) -> FixPlan:
    devs = [str(d) for d in (ctx.get("devices") or ()) if re.match(r"^(cpu|cuda(:\d+)?|mps|xpu(:\d+)?)$", str(d))]
    target = next((d for d in devs if d.startswith("cuda")), devs[0] if devs else "cuda")
    note = [f"devices seen: {', '.join(devs)}"] if devs else []
    return _advice("same-device", f"Put the model and its inputs on {target}",
                   f"device = torch.device({target!r})\nmodel = model.to(device)\nx = x.to(device)", note)


def _framework_names(report: Report) -> set[str]:
    return {fw.name for fw in report.frameworks}


def _disable_benchmark_plan(report: Report, ctx: dict[str, Any]) -> FixPlan:
    lines = []
    names = _framework_names(report) or {"PyTorch", "TensorFlow"}
    if "PyTorch" in names:
        lines.append("import torch; torch.backends.cudnn.benchmark = False   # PyTorch: no autotuning")
    if "TensorFlow" in names:
        lines.append("import os; os.environ['TF_CUDNN_USE_AUTOTUNE'] = '0'   # TensorFlow: before importing it")
    return _advice("disable-cudnn-benchmark", "Turn off cuDNN autotuning", "\n".join(lines),
                   ["autotuning tries many algorithms with large workspaces; without it cuDNN uses its heuristics"])


def _cudnn_fallback_plan(report: Report, ctx: dict[str, Any]) -> FixPlan:
    lines = []
    names = _framework_names(report) or {"PyTorch", "TensorFlow"}
    if "PyTorch" in names:
        lines.append("import torch\nwith torch.backends.cudnn.flags(enabled=False):\n    out = model(x)   # this op without cuDNN")
    if "TensorFlow" in names:
        lines.append("# TensorFlow/Keras RNNs: a non-default option (e.g. recurrent_dropout>0) selects the generic kernel")
    return _advice("cudnn-fallback", "Run the op without cuDNN (slower)", "\n".join(lines),
                   ["to get past the failing call, or to get a clearer error from the non-cuDNN kernel"])


def _cuda_build_plan(report: Report, ctx: dict[str, Any]) -> FixPlan:
    caps = sorted({"%d.%d" % g.compute_capability for g in report.gpus if g.compute_capability})
    notes = [f"this machine's GPUs have compute capability {', '.join(caps)}"] if caps else []
    for fw in report.frameworks:
        if fw.cuda_compute_capabilities:
            notes.append(f"{fw.name} {fw.version} was built for {', '.join(fw.cuda_compute_capabilities)}")
    return _advice("install-cuda-build", "Install a framework build with CUDA kernels for this GPU",
                   "pick the build for your GPU on the framework's install page (PyTorch: pytorch.org/get-started; "
                   "TensorFlow: pip install 'tensorflow[and-cuda]'; JAX: pip install 'jax[cuda12]')", notes, restart=True)


DIAGNOSIS_WORDED = frozenset({"make-contiguous", "check-shapes", "free-gpu-memory", "install-cudnn-deps",
                              "install-cudnn-build"})
"""Advice-only fixes whose plan shows the diagnosis's own words (``context["advice"]``)."""


def _finding_advice(fid: str) -> Callable[[Report, dict[str, Any]], FixPlan]:
    """Planner for an advice-only fix offered by ``%cudnn_check`` findings (the cuDNN consumer
    checks): the words of the button's own fix (``context["advice"]``), else of every finding of
    the report that offers this fix id."""

    def planner(report: Report, ctx: dict[str, Any]) -> FixPlan:
        adv = ctx.get("advice")
        if isinstance(adv, dict) and isinstance(adv.get("title"), str) and isinstance(adv.get("action"), str) \
                and adv["title"] and adv["action"]:
            return _advice(fid, adv["title"], adv["action"], (), bool(adv.get("restart_required")))
        offered = [(f, x) for f in report.findings for x in f.fixes if x.id == fid]
        if not offered:
            return FixPlan(fid, FIXES[fid], False, "no finding of the current report offers this fix")
        f, x = offered[0]
        return _advice(fid, x.title, "\n".join(dict.fromkeys(y.action for _, y in offered)),
                       [f"{g.id}: {g.title}" for g, _ in offered], x.restart_required)

    return planner

_PLANNERS: dict[str, Callable[[Report, dict[str, Any]], FixPlan]] = {
    "disable-cudnn-benchmark": _disable_benchmark_plan,
    "cudnn-fallback": _cudnn_fallback_plan,
    "install-cuda-build": _cuda_build_plan,
    "install-matching-cudnn": _install_plan,
    "remove-shadowing-dir": _remove_shadow_plan,
    "allow-memory-growth": _memory_plan,
    "restart-kernel": _restart_plan,
    "import-order": _import_order_plan,
    "one-venv-per-cuda": _one_venv_plan,
    "upgrade-driver": _driver_plan,
    "reinstall-cudnn": _reinstall_plan,
    "same-device": _same_device_plan,
    "make-contiguous": _diagnosis_advice("make-contiguous", [
        "cuDNN kernels need dense memory; views made by .transpose(), .permute() or slicing are not "
        "dense until .contiguous() copies them"]),
    "check-shapes": _diagnosis_advice("check-shapes", ["cuDNN reports bad shapes as CUDNN_STATUS_BAD_PARAM"]),
    "free-gpu-memory": _diagnosis_advice("free-gpu-memory", [
        "TensorFlow and JAX keep what they preallocated until the process ends: restart the kernel"]),
    "install-cudnn-deps": _diagnosis_advice("install-cudnn-deps", [
        "cuDNN 9's sub-libraries load libcublas/libcublasLt, libnvrtc and libz; match the cuXX suffix "
        "to your CUDA major"]),
    "install-cudnn-build": _diagnosis_advice("install-cudnn-build", [
        "a build compiled without cuDNN stays without it when cuDNN is installed later: the framework "
        "itself has to be the GPU build (or rebuilt with cuDNN found)"]),
}
# cuDNN consumers beyond the five frameworks (issue 18): advice-only fixes in their findings' words.
from .consumer_rules import CONSUMER_FIX_IDS as _CONSUMER_FIX_IDS  # noqa: E402

FIXES.update(_CONSUMER_FIX_IDS)
_PLANNERS.update({fid: _finding_advice(fid) for fid in _CONSUMER_FIX_IDS})


# --------------------------------------------------------------------------- apply / undo
#
# The undo journal (``<state dir>/undo.json``) is a file on disk that anything running as the
# user can write, so undo trusts nothing in it. It re-derives what it may do and refuses the
# rest, each with a message that says why (issue 13):
#
# * kernelspec records: only the ``kernel.json`` of a kernelspec jupyter_client knows now
#   (``KernelSpecManager().find_kernel_specs()``), only if the file is byte-for-byte what the
#   fix wrote, only from a backup named exactly ``kernel.json.cudnn-magic-backup-<stamp>`` in the
#   same folder (opened with ``O_NOFOLLOW`` relative to that folder), and only when the backup
#   differs from the file in nothing but the ``env`` variables that fix sets
#   (:data:`FIX_ENV_VARIABLES`); a copy the fix created is removed only from the user's own
#   kernels folder, with the files it names there;
# * environ records: only a variable that fix sets, only in the process that set it, from that
#   process's memory (never a value read from the journal);
# * pip records: only ``nvidia-cudnn-cuNN`` with a valid version, only with this interpreter or
#   one a kernelspec jupyter_client knows runs (``argv[0]``, resolved as jupyter_client does).
#
# Read-modify-write of a ``kernel.json`` and of the journal happens under an ``fcntl.flock`` on a
# lock file beside it (``.kernel.json.cudnn-magic-lock``, ``.undo.json.cudnn-magic-lock``); an
# apply that finds the file changed since its preview (another kernel applied a fix meanwhile)
# fails and changes nothing. Everything here is one unit: the journal, apply and undo.

FIX_ENV_VARIABLES: dict[str, frozenset[str]] = {
    "remove-shadowing-dir": frozenset({"LD_LIBRARY_PATH"}),
    "allow-memory-growth": frozenset({"TF_FORCE_GPU_ALLOW_GROWTH", "XLA_PYTHON_CLIENT_PREALLOCATE"}),
}
"""The environment variables each fix sets (in this kernel, or in a kernelspec's ``env``): the
only ones its undo may restore."""

_PIP_FIXES = frozenset({"install-matching-cudnn"})
_BACKUP_NAME = re.compile(r"^kernel\.json\.cudnn-magic-backup-\d{8}-\d{6}(-\d{1,4})?$")
_CREATED_NAME = re.compile(r"^(kernel\.json|logo-[A-Za-z0-9_.-]{1,64})$")
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_READ_LIMIT = 16 << 20

_ENV_APPLIED: dict[str, list[tuple[str, str | None, str | None]]] = {}
"""This process's own record of the variables each fix set here: ``fix id -> [(name,
previous, new)]``. An environment belongs to one process, so this, not the journal, is what an
undo of an environ record restores."""


class JournalRefused(ValueError):
    """A journal record asks for something the fix never does; nothing was touched."""


def _state_dir() -> str:
    d = os.environ.get("CUDNN_MAGIC_STATE_DIR")
    if not d:
        try:
            from jupyter_core.paths import jupyter_data_dir

            d = os.path.join(jupyter_data_dir(), "cudnn_magic")
        except Exception:  # noqa: BLE001
            d = os.path.join(os.path.expanduser("~"), ".local", "share", "cudnn_magic")
    return d


def _journal_path() -> str:
    return os.path.join(_state_dir(), "undo.json")


def _lock_path(path: str) -> str:
    """The lock file beside ``path``: ``<dir>/.<name>.cudnn-magic-lock``."""
    return os.path.join(os.path.dirname(path), "." + os.path.basename(path) + ".cudnn-magic-lock")


def _read_regular(path: str, dir_fd: int | None = None) -> tuple[bytes, int]:
    """Bytes and permission bits of the regular file ``path``, never through a link (and
    never a FIFO or device). Raises FileNotFoundError, or OSError naming the problem."""
    import stat as _stat

    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0), dir_fd=dir_fd)
    try:
        st = os.fstat(fd)
        if not _stat.S_ISREG(st.st_mode):
            raise OSError(f"{path} is not a regular file")
        if st.st_size > _READ_LIMIT:
            raise OSError(f"{path} is larger than {_READ_LIMIT >> 20} MiB")
        chunks = []
        while True:
            b = os.read(fd, 1 << 20)
            if not b:
                break
            chunks.append(b)
        return b"".join(chunks), st.st_mode & 0o7777
    finally:
        os.close(fd)


def _read_or_none(path: str) -> bytes | None:
    try:
        return _read_regular(path)[0]
    except FileNotFoundError:
        return None
    except OSError as exc:
        if getattr(exc, "errno", None) == errno.ELOOP:  # a symbolic link
            raise RuntimeError(f"{path} is a symbolic link; not following it") from None
        raise


def _sha(path: str) -> str | None:
    try:
        data = _read_or_none(path)
    except (OSError, RuntimeError):
        return None
    return hashlib.sha256(data).hexdigest() if data is not None else None


def _journal_load() -> dict[str, list[dict[str, Any]]]:
    """The journal (``{}`` when there is none). Raises RuntimeError when it exists but is not a
    regular file or not a JSON object: it is then left alone, and so is every fix."""
    path = _journal_path()
    try:
        raw = _read_regular(path)[0]
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise RuntimeError(f"the undo journal {path} cannot be read ({exc}); move it aside") from None
    try:
        data = json.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        raise RuntimeError(f"the undo journal {path} is not valid JSON; move it aside (nothing was changed)") from None
    if not isinstance(data, dict):
        raise RuntimeError(f"the undo journal {path} is not a JSON object; move it aside (nothing was changed)")
    return data


def _journal_save(data: dict[str, list[dict[str, Any]]]) -> None:
    path = _journal_path()
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    _atomic_write(path, (json.dumps(data, indent=1) + "\n").encode("utf-8"), 0o600)


def _journal_locked() -> file_lock:
    path = _journal_path()
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    return file_lock(_lock_path(path), f"the undo journal {path}")


def _journal_push(fix_id: str, records: list[dict[str, Any]]) -> None:
    """Append an entry (read-modify-write under the journal's lock). Raises on failure."""
    with _journal_locked():
        data = _journal_load()
        stack = data.get(fix_id)
        if not isinstance(stack, list):
            stack = data[fix_id] = []
        stack.append({"time": time.time(), "pid": os.getpid(), "records": records})
        _journal_save(data)


def _journal_pop(fix_id: str) -> dict[str, Any] | None:
    """Take the newest entry of ``fix_id`` out of the journal (so two undos never both run it)."""
    with _journal_locked():
        data = _journal_load()
        stack = data.get(fix_id)
        if not isinstance(stack, list) or not stack:
            return None
        entry = stack.pop()
        if not stack:
            del data[fix_id]
        _journal_save(data)
    return entry if isinstance(entry, dict) else {"records": [entry]}


_atomic_write = atomic_write


def _write_new(path: str, data: bytes, mode: int) -> None:
    """Create ``path`` with ``data``: ``O_CREAT | O_EXCL | O_NOFOLLOW`` (never through a link,
    never over an existing file). Raises FileExistsError."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | _NOFOLLOW, mode)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        try:
            os.unlink(path)
        except OSError:
            pass
        raise
    os.close(fd)


def _kernelspec_target(kp: dict[str, Any]) -> tuple[str, bool]:
    """The kernel.json a plan writes (absolute) and whether its folder had to be created (a
    new user-level copy); the folder exists afterwards, for the lock file."""
    path = os.path.normpath(os.path.abspath(kp["path"]))
    d = os.path.dirname(path)
    if kp["expect_sha256"] is None and not os.path.isdir(d):
        os.makedirs(d)
        return path, True
    return path, False


def _check_unchanged(path: str, expect: str | None) -> None:
    """Raise unless ``path`` is still what the preview read (call with its lock held)."""
    current = _read_or_none(path)
    if (hashlib.sha256(current).hexdigest() if current is not None else None) != expect:
        raise RuntimeError(f"{path} changed since the preview (another kernel or program edited it, perhaps "
                           "applying a fix at the same time); nothing was changed: preview the fix again")


def _apply_kernelspec(kp: dict[str, Any], created_dir: bool = False) -> dict[str, Any]:
    """Write the kernelspec edit of a plan (call with the file's lock held, see :func:`apply`):
    only if the file is still what the preview read (else nothing changes and the error says
    so), with a byte-for-byte backup created exclusively beside it."""
    path = os.path.normpath(os.path.abspath(kp["path"]))
    d = os.path.dirname(path)
    _check_unchanged(path, kp["expect_sha256"])
    after = hashlib.sha256(kp["new"]).hexdigest()
    if kp["expect_sha256"] is None:  # a new user-level copy
        src = kp.get("copy_from")
        copied: list[str] = []
        if src and os.path.isdir(src):
            for n in sorted(os.listdir(src)):
                if n.startswith("logo-") and _CREATED_NAME.match(n):
                    try:
                        data, _mode = _read_regular(os.path.join(src, n))
                        _write_new(os.path.join(d, n), data, 0o644)
                        copied.append(os.path.join(d, n))
                    except OSError:
                        continue  # a logo is a bonus
        _atomic_write(path, kp["new"], 0o644)
        return {"kind": "kernelspec", "path": path, "backup": None, "created": [path, *copied],
                "created_dir": d if created_dir else None, "after_sha256": after}
    current, mode = _read_regular(path)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    backup = path + BACKUP_TAG + stamp
    for i in range(1, 10000):
        try:
            _write_new(backup, current, mode)
            break
        except FileExistsError:
            backup = f"{path}{BACKUP_TAG}{stamp}-{i}"
    else:
        raise RuntimeError(f"no free backup name beside {path}")
    _atomic_write(path, kp["new"], mode)
    return {"kind": "kernelspec", "path": path, "backup": backup, "after_sha256": after}


def _run(argv: tuple[str, ...], stream: Callable[[str], None] | None, output: list[str]) -> int:
    env = dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1", PYTHONUNBUFFERED="1", PIP_NO_INPUT="1")
    proc = subprocess.Popen(list(argv), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            text=True, bufsize=1, env=env)
    assert proc.stdout is not None
    for line in proc.stdout:
        line = line.rstrip("\n")
        output.append(line)
        if stream is not None:
            try:
                stream(line)
            except Exception:  # noqa: BLE001 - a display callback never stops the install
                pass
    return proc.wait()


def apply(p: FixPlan, *, stream: Callable[[str], None] | None = None) -> FixResult:
    """Carry out an applicable plan and record how to undo it. Never raises.

    Args:
        p: from :func:`plan` (preview it first).
        stream: called with each line a command prints, as it prints it (pip's output).

    Returns:
        :class:`FixResult`; ``ok`` False with ``error`` when a step failed (steps already done
        stay recorded, so ``undo`` still reverts them), when the kernelspec changed since the
        preview (another kernel applied a fix meanwhile: nothing is changed), or when the undo
        journal cannot be written (the kernelspec edit is then rolled back).
    """
    if not p.applicable:
        return FixResult(p.fix_id, False, error=f"not applicable: {p.reason}")
    import contextlib

    done: list[str] = []
    output: list[str] = []
    records: list[dict[str, Any]] = []
    error: str | None = None
    kp = p.payload.get("kernelspec") if any(s.kind == "kernelspec" for s in p.steps) else None
    with contextlib.ExitStack() as held:
        if kp is not None:
            # the kernel.json stays locked for the whole apply, and is checked before any step:
            # a conflict (another kernel applied a fix meanwhile) changes nothing at all
            try:
                path, created_dir = _kernelspec_target(kp)
                held.enter_context(file_lock(_lock_path(path), path))
                _check_unchanged(path, kp["expect_sha256"])
            except Exception as exc:  # noqa: BLE001
                return FixResult(p.fix_id, False, error=f"{type(exc).__name__}: {exc}")
        try:
            for s in p.steps:
                if s.kind == "run":
                    if not s.argv or s.argv[0] != _python(p.context):
                        raise RuntimeError("refusing to run a command that is not the kernel's own interpreter")
                    rc = _run(s.argv, stream, output)
                    if rc != 0:
                        raise RuntimeError(f"{' '.join(s.argv[1:4])} exited with status {rc}")
                    done.append("ran " + " ".join(_quote(a) for a in s.argv))
                    if p.fix_id == "install-matching-cudnn":
                        records.append({"kind": "pip", "python": p.payload["python"], "package": p.payload["package"],
                                        "previous": p.payload["previous"]})
                elif s.kind == "set-env":
                    for k, v in s.env:
                        if k not in FIX_ENV_VARIABLES.get(p.fix_id, ()):
                            raise RuntimeError(f"{p.fix_id} does not set {k}; refusing")
                        prev = os.environ.get(k)
                        records.append({"kind": "environ", "name": k, "pid": os.getpid()})
                        _ENV_APPLIED.setdefault(p.fix_id, []).append((k, prev, v))
                        if v is None:
                            os.environ.pop(k, None)
                        else:
                            os.environ[k] = v
                        done.append(f"set {k}={v} in this kernel")
                elif s.kind == "kernelspec":
                    rec = _apply_kernelspec(p.payload["kernelspec"], created_dir)
                    records.append(rec)
                    done.append(f"wrote {rec['path']}" + (f" (backup {rec['backup']})" if rec.get("backup") else " (new)"))
                elif s.kind == "call" and p.payload.get("tf_call"):
                    msg = _tf_memory_growth()
                    if msg is None:
                        done.append("tf.config.experimental.set_memory_growth(gpu, True) for every GPU")
                    else:
                        done.append(f"TensorFlow: {msg}; the kernelspec env applies at the next start")
                elif s.kind == "restart" and p.fix_id == "restart-kernel":
                    _schedule_exit()
                    done.append("the kernel stops in a moment; the front end restarts it")
        except Exception as exc:  # noqa: BLE001
            error = f"{type(exc).__name__}: {exc}"
        if records:
            try:
                _journal_push(p.fix_id, records)
            except Exception as exc:  # noqa: BLE001 - the change must not stay unrecorded
                held.close()  # (undoing a kernelspec edit takes its lock again)
                undone = _roll_back(p.fix_id, records)
                error = (f"the undo journal could not be written ({exc}); {undone}"
                         + (f". Also: {error}" if error else ""))
                return FixResult(p.fix_id, False, tuple(done), tuple(output), error, "", p.restart_required)
    hint = f"%cudnn_fix --undo {p.fix_id}" if records else ""
    return FixResult(p.fix_id, error is None, tuple(done), tuple(output), error, hint, p.restart_required)


def _roll_back(fix_id: str, records: list[dict[str, Any]]) -> str:
    """Undo what an apply did when its journal entry could not be written (best effort)."""
    said = []
    for rec in reversed(records):
        try:
            if rec.get("kind") == "pip":
                said.append(f"{rec['package']} stays installed (undo it with {rec['python']} -m pip "
                            + (f"install {rec['package']}=={rec['previous']})" if rec.get("previous")
                               else f"uninstall {rec['package']})"))
            else:
                said.append(_undo_record(fix_id, rec, []))
        except Exception as exc:  # noqa: BLE001
            said.append(f"could not roll back {rec.get('kind')}: {exc}")
    return "rolled back: " + "; ".join(said) if said else "nothing to roll back"


def _tf_memory_growth() -> str | None:
    """set_memory_growth on every GPU; None on success, else why not (already initialized)."""
    tf = sys.modules.get("tensorflow")
    if tf is None:
        return "TensorFlow is not imported"
    try:
        for gpu in tf.config.list_physical_devices("GPU"):
            tf.config.experimental.set_memory_growth(gpu, True)
    except RuntimeError as exc:  # "Physical devices cannot be modified after being initialized"
        return f"GPUs already initialized ({exc})"
    return None


def _schedule_exit(delay_s: float = 0.5, hard_after_s: float = 5.0) -> None:
    """Stop this kernel after ``delay_s`` seconds (after the current reply is sent): stop the
    kernel's IO loop (a clean exit, atexit handlers run), and ``os._exit(0)`` after
    ``hard_after_s`` more seconds if the process is still alive. The Jupyter server's
    KernelRestarter sees the process gone and restarts it with the same connection file
    (jupyter_client ``restarter.py`` ``poll``)."""
    app = _kernel_app()

    def go() -> None:
        time.sleep(delay_s)
        for s in (sys.stdout, sys.stderr):
            try:
                s.flush()
            except Exception:  # noqa: BLE001
                pass
        try:
            kernel = getattr(app, "kernel", None)
            loop = getattr(kernel, "io_loop", None)
            if loop is not None:
                loop.add_callback(loop.stop)
        except Exception:  # noqa: BLE001
            pass
        time.sleep(hard_after_s)
        os._exit(0)

    threading.Thread(target=go, name="cudnn-magic-restart", daemon=True).start()


def undo(fix_id: str) -> FixResult:
    """Revert the last applied plan of ``fix_id`` from the journal (newest record first).
    Never raises.

    Nothing in the journal is trusted (see the comment above :data:`FIX_ENV_VARIABLES`): a
    record that asks for anything the fix never does is refused with the reason, and nothing
    is touched. Kernelspec edits are restored byte-for-byte from the backup (or the created
    copy is removed), unless the file changed since the fix: then nothing is touched and the
    error names the backup. pip installs are reverted by reinstalling the previous version (or
    uninstalling when there was none), with the same interpreter. A record that could not be
    undone goes back into the journal.
    """
    try:
        entry = _journal_pop(fix_id)
    except Exception as exc:  # noqa: BLE001 - a broken journal, or another process holding it
        return FixResult(fix_id, False, error=str(exc))
    if entry is None:
        return FixResult(fix_id, False, error=f"nothing to undo for {fix_id}")
    records = entry.get("records")
    records = list(records) if isinstance(records, list) else []
    done: list[str] = []
    output: list[str] = []
    while records:
        rec = records[-1]
        try:
            done.append(_undo_record(fix_id, rec, output))
        except Exception as exc:  # noqa: BLE001
            entry["records"] = records
            try:
                with _journal_locked():
                    data = _journal_load()
                    stack = data.get(fix_id)
                    if not isinstance(stack, list):
                        stack = data[fix_id] = []
                    stack.append(entry)
                    _journal_save(data)
            except Exception:  # noqa: BLE001
                pass
            msg = str(exc) if isinstance(exc, JournalRefused) else f"{type(exc).__name__}: {exc}"
            return FixResult(fix_id, False, tuple(done), tuple(output), msg)
        records.pop()
    return FixResult(fix_id, True, tuple(done), tuple(output), restart_required=True)


def _refuse(why: str) -> JournalRefused:
    return JournalRefused(f"refused a record of the undo journal {_journal_path()}: {why}; nothing was touched")


def _undo_record(fix_id: str, rec: Any, output: list[str]) -> str:
    if not isinstance(rec, dict):
        raise _refuse("a record that is not a JSON object")
    kind = rec.get("kind")
    if kind == "kernelspec":
        return _undo_kernelspec(fix_id, rec)
    if kind == "environ":
        return _undo_environ(fix_id, rec)
    if kind == "pip":
        return _undo_pip(fix_id, rec, output)
    raise _refuse(f"unknown record kind {kind!r}")


def _known_kernel_jsons() -> dict[str, str]:
    """``{kernel.json path: kernelspec name}`` of every kernelspec jupyter_client finds now."""
    try:
        from jupyter_client.kernelspec import KernelSpecManager

        specs = KernelSpecManager().find_kernel_specs()
    except Exception as exc:  # noqa: BLE001
        raise _refuse(f"the kernelspecs cannot be listed ({exc})") from None
    return {os.path.normpath(os.path.abspath(os.path.join(d, "kernel.json"))): n for n, d in specs.items()}


def _undo_kernelspec(fix_id: str, rec: dict[str, Any]) -> str:
    allowed = FIX_ENV_VARIABLES.get(fix_id)
    if not allowed:
        raise _refuse(f"{fix_id} never edits a kernelspec")
    path = rec.get("path")
    if not isinstance(path, str) or "\0" in path:
        raise _refuse("a kernelspec record without a path")
    norm = os.path.normpath(os.path.abspath(path))
    known = _known_kernel_jsons()
    if norm not in known:
        raise _refuse(f"{path!r} is not the kernel.json of a kernelspec jupyter_client knows "
                      f"({', '.join(sorted(set(known.values()))) or 'none'}; see `jupyter kernelspec list`)")
    kdir = os.path.dirname(norm)
    backup = rec.get("backup")
    if backup is not None:
        name = os.path.basename(backup) if isinstance(backup, str) else ""
        if (not _BACKUP_NAME.match(name) or "\0" in backup
                or os.path.normpath(os.path.abspath(backup)) != os.path.join(kdir, name)):
            raise _refuse(f"the backup {backup!r} is not a kernel.json.cudnn-magic-backup-<stamp> file beside {norm}")
    with file_lock(_lock_path(norm), norm):
        try:
            current, mode = _read_regular(norm)
        except FileNotFoundError:
            raise RuntimeError(f"{norm} no longer exists; not touching anything") from None
        if hashlib.sha256(current).hexdigest() != rec.get("after_sha256"):
            raise RuntimeError(f"{norm} changed since the fix; not touching it. Backup: "
                               f"{backup or '(none: the file was created by the fix)'}")
        if backup is None:
            return _remove_created_copy(fix_id, rec, norm, kdir)
        dfd = os.open(kdir, os.O_RDONLY | os.O_CLOEXEC | getattr(os, "O_DIRECTORY", 0))
        try:
            try:
                old, old_mode = _read_regular(name, dir_fd=dfd)
            except OSError as exc:
                raise _refuse(f"the backup {name} beside {norm} cannot be read as a regular file ({exc})") from None
            changed = _env_difference(old, current)
            if changed is None:
                raise _refuse(f"the backup {name} differs from {norm} outside its env (or is not a kernelspec)")
            if not changed <= allowed:
                raise _refuse(f"the backup {name} differs from {norm} in {', '.join(sorted(changed - allowed))}, "
                              f"which {fix_id} never sets (it sets {', '.join(sorted(allowed))})")
            _atomic_write(norm, old, old_mode)
            os.unlink(name, dir_fd=dfd)
        finally:
            os.close(dfd)
    return f"restored {norm} from {os.path.join(kdir, name)}"


def _env_difference(before: bytes, after: bytes) -> set[str] | None:
    """The ``env`` variables that differ between two kernelspecs, or ``None`` when anything
    else differs (or either is not a JSON object)."""
    try:
        a, b = json.loads(before.decode("utf-8")), json.loads(after.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(a, dict) or not isinstance(b, dict):
        return None
    if {k: v for k, v in a.items() if k != "env"} != {k: v for k, v in b.items() if k != "env"}:
        return None
    ea = a.get("env") if isinstance(a.get("env"), dict) else {}
    eb = b.get("env") if isinstance(b.get("env"), dict) else {}
    return {k for k in set(ea) | set(eb) if ea.get(k) != eb.get(k)}


def _remove_created_copy(fix_id: str, rec: dict[str, Any], norm: str, kdir: str) -> str:
    """Undo a user-level kernelspec copy the fix created: only in the user's own kernels
    folder, only the files the record names there (``kernel.json``, ``logo-*``)."""
    try:
        from jupyter_core.paths import jupyter_data_dir

        user_kernels = os.path.normpath(os.path.abspath(os.path.join(jupyter_data_dir(), "kernels")))
    except Exception as exc:  # noqa: BLE001
        raise _refuse(f"the user's kernels folder is unknown ({exc})") from None
    if os.path.dirname(kdir) != user_kernels:
        raise _refuse(f"{norm} has no backup, but it is not a copy in {user_kernels} (the only place the fix creates one)")
    created = rec.get("created")
    names = []
    for f in created if isinstance(created, list) else []:
        n = os.path.basename(f) if isinstance(f, str) else ""
        if not _CREATED_NAME.match(n) or os.path.normpath(os.path.abspath(f)) != os.path.join(kdir, n):
            raise _refuse(f"the created file {f!r} is not a kernel.json or logo file in {kdir}")
        names.append(n)
    if "kernel.json" not in names:
        names.append("kernel.json")
    dfd = os.open(kdir, os.O_RDONLY | os.O_CLOEXEC | getattr(os, "O_DIRECTORY", 0))
    try:
        for n in names:
            try:
                os.unlink(n, dir_fd=dfd)  # a link is removed, never followed
            except FileNotFoundError:
                pass
    finally:
        os.close(dfd)
    cd = rec.get("created_dir")
    if isinstance(cd, str) and os.path.normpath(os.path.abspath(cd)) == kdir:
        try:
            os.unlink(_lock_path(norm))
            os.rmdir(kdir)  # only if nothing else is in it
        except OSError:
            pass
    return f"removed {norm}"


def _undo_environ(fix_id: str, rec: dict[str, Any]) -> str:
    name = rec.get("name")
    allowed = FIX_ENV_VARIABLES.get(fix_id, frozenset())
    if name not in allowed:
        raise _refuse(f"{fix_id} sets {', '.join(sorted(allowed)) or 'no environment variable'}, not {name!r}")
    changes = _ENV_APPLIED.get(fix_id) or []
    for i in range(len(changes) - 1, -1, -1):
        n, prev, new = changes[i]
        if n != name:
            continue
        if os.environ.get(n) != new:
            raise RuntimeError(f"{n} changed since the fix (it is {os.environ.get(n)!r} now); not touching it")
        del changes[i]
        if prev is None:
            os.environ.pop(n, None)
            return f"unset {n} in this kernel"
        os.environ[n] = prev
        return f"restored {n}={prev} in this kernel"
    pid = rec.get("pid")
    return (f"{name}: nothing to restore in this process: the fix set it in process "
            f"{pid if isinstance(pid, int) else 'unknown'}, and an environment ends with its process")


def _known_interpreters() -> dict[str, str]:
    """``{path: how it is known}``: this interpreter, and the ``argv[0]`` of every kernelspec
    jupyter_client finds (a bare ``python``/``python3``/``python3.X`` means the interpreter
    jupyter_client runs in, as its ``format_kernel_cmd`` does; a relative name is looked up on
    ``PATH``). Paths are absolute and normalised but links are NOT resolved: a virtual
    environment's ``bin/python`` is a link to the base interpreter, and resolving it would run
    pip outside that environment."""
    def norm(p: str) -> str:
        return os.path.normpath(os.path.abspath(p))

    out = {norm(sys.executable): "this kernel's interpreter"}
    try:
        from jupyter_client.kernelspec import KernelSpecManager

        specs = KernelSpecManager().find_kernel_specs()
    except Exception:  # noqa: BLE001
        return out
    bare = {"python", f"python{sys.version_info[0]}", "python%d.%d" % sys.version_info[:2]}
    for name, d in specs.items():
        spec = _load_spec(name, d)
        argv = spec.get("argv") if isinstance(spec, dict) else None
        if not isinstance(argv, list) or not argv or not isinstance(argv[0], str):
            continue
        exe = argv[0]
        found = sys.executable if exe in bare else exe if os.path.isabs(exe) else shutil.which(exe)
        if found and os.path.isfile(found) and os.access(found, os.X_OK):
            out.setdefault(norm(found), f"kernelspec {name!r}")
    return out


def _undo_pip(fix_id: str, rec: dict[str, Any], output: list[str]) -> str:
    if fix_id not in _PIP_FIXES:
        raise _refuse(f"{fix_id} never runs pip")
    python, pkg, prev = rec.get("python"), rec.get("package"), rec.get("previous")
    if not isinstance(pkg, str) or not _CUDNN_DIST.match(pkg):
        raise _refuse(f"{pkg!r} is not a cuDNN distribution (nvidia-cudnn-cuNN)")
    if prev is not None:
        try:
            prev = str(Version(str(prev)))
        except InvalidVersion:
            raise _refuse(f"{prev!r} is not a version") from None
    known = _known_interpreters()
    real = os.path.normpath(os.path.abspath(python)) if isinstance(python, str) and "\0" not in python else None
    if real not in known:
        raise _refuse(f"{python!r} is neither this kernel's interpreter nor the interpreter of a kernelspec "
                      "jupyter_client knows; refusing to run it")
    argv: tuple[str, ...] = ((real, "-m", "pip", "install", f"{pkg}=={prev}") if prev
                             else (real, "-m", "pip", "uninstall", "-y", pkg))
    rc = _run(argv, None, output)
    if rc != 0:
        raise RuntimeError(f"{' '.join(argv[1:5])} exited with status {rc}")
    return "ran " + " ".join(_quote(a) for a in argv)
