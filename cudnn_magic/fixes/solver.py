"""The cuDNN requirement solver: from every installed framework's rule and pin
(:func:`framework_need`), the one ``nvidia-cudnn-cuNN`` requirement all of them accept
(:func:`solve_cudnn`), as a :mod:`packaging` specifier with a witness version."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

from packaging.markers import Marker
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from ..model import FrameworkBuild
from ..versions import CudnnVersion, try_parse

from .environment import _DIST_NAME


_CUDNN_DIST = re.compile(r"^nvidia-cudnn-cu(\d{2})$")


_EXTRA_IN_MARKER = re.compile(r"""extra\s*==\s*["']([^"']+)["']""")


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
    next patch, minor and major after each."""
    out: set[Version] = set()
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
