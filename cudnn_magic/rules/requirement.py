"""The cuDNN requirement of a framework build, computed in one place: the wheel family for its
CUDA (:func:`wheel_family`), what its checker's rule accepts (:func:`rule_specifier`), what it
needs as a pip requirement alone (:func:`cudnn_requirement`, ``%cudnn_check``'s fix) or as a
specifier to intersect with other builds' (:func:`framework_need`, the fix solver), and the
same-major requirement a diagnosis names (:func:`same_major_requirement`). Pure: packaging only.
Rules: docs/facts.md "Which runtime cuDNN each framework accepts" (:mod:`cudnn_magic.rules.compat`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from packaging.version import InvalidVersion, Version

from ..model import FrameworkBuild
from .cudnn_version import CudnnVersion, try_parse
from .wheel_folders import canonical

if TYPE_CHECKING:  # annotations only: packaging's requirement and specifier parsers load on first use
    from packaging.markers import Marker
    from packaging.requirements import Requirement
    from packaging.specifiers import SpecifierSet

__all__ = ["FIRST_WHEEL_CUDA", "CudnnNeed", "cudnn_requirement", "framework_need", "parse_requirement",
           "render_requirement", "rule_specifier", "same_major_requirement", "same_major_spec", "wheel_family",
           "witness"]


def parse_requirement(text: str) -> Requirement | None:
    """``text`` parsed by :class:`packaging.requirements.Requirement` (PEP 508), or None when it
    is not a valid requirement."""
    # third-party: packaging's requirement parser, with its marker grammar and the platform tags it
    # pulls in, costs about 35 ms of start-up; a check needs it only once a framework's pins are read
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        return Requirement(text)
    except InvalidRequirement:
        return None


_CUDNN_DIST = re.compile(r"^nvidia-cudnn-cu(\d{2})$")
_DIST_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,98}[A-Za-z0-9])?$")
"""A distribution name as PEP 508 allows it (checked before a name goes into a command)."""
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


#: The first CUDA major with a cuDNN wheel project on PyPI (``nvidia-cudnn-cu11``, from 8.5.0.96);
#: there is none for CUDA 10 or older.
FIRST_WHEEL_CUDA = 11


def wheel_family(cuda: str | None, cudnn_major: int | None) -> str:
    """The cuDNN wheel of a build: ``nvidia-cudnn-cuXX`` with XX the CUDA major it was built
    for; unknown CUDA: 12 for cuDNN 9 and later, 11 before; cuDNN 8 has no wheel past CUDA 12
    (PyPI: nvidia-cudnn-cu11/-cu12/-cu13 release histories)."""
    major = (cuda or "").split(".")[0]
    if not major.isdigit():
        major = "12" if (cudnn_major or 9) >= 9 else "11"
    if cudnn_major == 8 and int(major) > 12:
        major = "12"
    return f"nvidia-cudnn-cu{int(major)}"


def rule_specifier(checker: str, v: CudnnVersion) -> tuple[SpecifierSet, str]:
    """The versions a checker's rule accepts for compiled-against ``v`` (docs/facts.md table)."""
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
    # third-party: packaging's specifier grammar compiles a large regular expression on import
    # (about 20 M instructions); a check needs it only once a framework's requirement is computed
    from packaging.specifiers import SpecifierSet

    return SpecifierSet(spec), text


def framework_need(fw: FrameworkBuild) -> CudnnNeed | None:
    """What ``fw`` accepts: its cuDNN pins (``Requires-Dist``, markers evaluated) intersected
    with its checker's rule applied to its compiled-against cuDNN. None for builds without
    cuDNN (CPU builds) or when nothing is known."""
    if not getattr(fw, "pip_solvable", True):
        return None  # no cuDNN wheel is on this consumer's loader path (a vendored copy, an unversioned dlopen)
    label = f"{fw.name} {fw.version}"
    packages: list[str] = []
    from packaging.specifiers import SpecifierSet  # third-party, on first use: see rule_specifier

    spec = SpecifierSet()
    sources: list[str] = []
    for pin in fw.pins:
        req = parse_requirement(pin)
        if req is None:
            continue
        name = canonical(req.name)
        if not _CUDNN_DIST.match(name) or not _marker_applies(req.marker):
            continue
        packages.append(name)
        spec &= req.specifier
        sources.append(f"pin {name}{req.specifier} ({fw.distribution} metadata)")
    compiled = try_parse(fw.cudnn_compiled) if fw.cudnn_compiled else None
    if compiled is not None:
        rule_spec, text = rule_specifier(fw.checker, compiled)
        spec &= rule_spec
        sources.append(f"rule ({fw.checker}): built with {compiled}, needs {text}")
    if not packages and compiled is None:
        return None
    families = sorted(set(packages))
    package = families[0] if families else wheel_family(fw.cuda_compiled, compiled.major if compiled else None)
    return CudnnNeed(label, package, spec, tuple(sources))


def cudnn_requirement(fw: FrameworkBuild) -> str | None:
    """The pip requirement for a cuDNN wheel that satisfies ``fw`` alone: its own exact pin
    when it has one (PyTorch wheels), else ``nvidia-cudnn-cuXX>=MAJOR.MINOR,<MAJOR+1`` with
    XX the CUDA major it was built for (:func:`wheel_family`). Versions come from parsed
    values, never from logs."""
    for pin in fw.pins:
        if not pin.startswith("nvidia-cudnn-cu"):
            continue
        req = parse_requirement(pin)
        if req is None:
            continue
        # the operators of the version specifier decide, never an `extra == "..."` in the marker
        if any(s.operator in ("==", "===", ">=") for s in req.specifier):
            return pin.split(";")[0].strip()
    v = try_parse(fw.cudnn_compiled) if fw.cudnn_compiled else None
    if v is None:
        return None
    return wheel_family(fw.cuda_compiled, v.major) + same_major_spec(v)


def same_major_spec(v: CudnnVersion) -> str:
    """``>=MAJOR.MINOR,<MAJOR+1`` (``>=MAJOR,<MAJOR+1`` without a minor): ``v`` or newer within
    its major, what NVIDIA's cuDNN API compatibility promises for a build against ``v``."""
    low = f"{v.major}.{v.minor}" if v.minor is not None else f"{v.major}"
    return f">={low},<{v.major + 1}"


def same_major_requirement(package: str, v: CudnnVersion) -> str | None:
    """``package`` with :func:`same_major_spec`, normalized as :class:`packaging.requirements.Requirement`
    writes it (the name as given, then the :class:`~packaging.specifiers.SpecifierSet`:
    ``nvidia-cudnn-cu12<10,>=9.1``); None when that is not a valid requirement. Built from the
    specifier alone: a diagnosis names it without importing ``packaging.requirements``."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet  # third-party, on first use: see rule_specifier

    if not _DIST_NAME.match(package):
        return None
    try:
        return package + str(SpecifierSet(same_major_spec(v)))
    except InvalidSpecifier:
        return None


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
        r = [*list(v.release), 0, 0]
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
    req = parse_requirement(text)
    if req is not None and w is not None and not req.specifier.contains(w, prereleases=False):
        return f"{package}{spec}"
    return text
