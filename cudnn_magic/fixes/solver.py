"""The cuDNN requirement solver: from every installed framework's rule and pin
(:func:`cudnn_magic.rules.requirement.framework_need`), the one ``nvidia-cudnn-cuNN`` requirement all of them accept
(:func:`solve_cudnn`), as a :mod:`packaging` specifier with a witness version."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from packaging.specifiers import SpecifierSet

from ..model import FrameworkBuild
from ..rules.requirement import CudnnNeed, framework_need, render_requirement, witness


@dataclass(frozen=True)
class Solution:
    """The solver's answer: one requirement for all, or the conflicts and per-framework choices."""

    requirement: str | None
    needs: tuple[CudnnNeed, ...] = ()
    conflicts: tuple[str, ...] = ()
    choices: tuple[tuple[str, str], ...] = ()  # (framework, requirement)


def solve_cudnn(frameworks: Iterable[FrameworkBuild]) -> Solution:
    """The one cuDNN requirement satisfying every framework with a cuDNN build, or the
    conflicts (one line each, naming the frameworks) and each framework's own requirement.

    Rules: docs/facts.md "Which runtime cuDNN each framework accepts"; pins: each distribution's
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
