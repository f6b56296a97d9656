"""The ``cudnn-wheel-overwritten`` finding of ``%cudnn_check``: two installed distributions list the
same cuDNN files (PyTorch for CUDA 13's ``nvidia-cudnn-cu13`` and TensorFlow ``[and-cuda]``'s
``nvidia-cudnn-cu12`` both write ``nvidia/cudnn/lib``), whose files are there now by ``RECORD`` hash,
what that means for each framework that uses the folder, and the fixes (one environment per CUDA
major, or the exact ``--force-reinstall --no-deps`` that restores one distribution's files, with its
cost). Facts come from :func:`cudnn_magic.probes.owners.probe_overwritten_wheels`; no probing here.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from typing import Any

from ..model import Finding, Fix, FrameworkBuild, WheelOverwrite
from ..rules.wheel_folders import canonical
from ..util import pyenv

__all__ = ["canonical_name", "overwrite_findings", "pinned_names", "requirement"]


def canonical_name(name: str) -> str:
    """The PEP 503 form of a distribution name (:func:`cudnn_magic.rules.wheel_folders.canonical`,
    the rule of ``packaging.utils.canonicalize_name`` without importing it)."""
    return canonical(name)


def requirement(spec: str) -> Any:
    """``packaging.requirements.Requirement(spec)``, or None when ``spec`` is not one."""
    # start-up cost: packaging's requirement parser (about 30 ms with its marker grammar and the
    # platform tags it imports) only where a pin's specifier is read, not for a pin's name
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        return Requirement(spec)
    except InvalidRequirement:
        return None


#: A requirement's leading name, as PEP 508's grammar has it (``name`` comes first in both its
#: forms), followed by what may follow a name there: the end, space, extras, a version or URL
#: specifier, or a marker.
_PIN_NAME = re.compile(r"\s*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)(?=$|[\s\[(<>=!~;@])")


def pinned_names(fw: FrameworkBuild) -> set[str]:
    """Canonical names of the distributions ``fw``'s metadata requires (``Requires-Dist``): each
    pin's leading name per PEP 508 (what ``packaging.requirements.Requirement(pin).name`` gives for a
    valid pin; a pin that does not start with a name is left out, and one whose specifier or
    marker ``packaging`` would reject still names its distribution)."""
    out: set[str] = set()
    for pin in fw.pins:
        m = _PIN_NAME.match(pin) if isinstance(pin, str) else None
        if m:
            out.add(canonical(m.group(1)))
    return out


_CU = re.compile(r"-cu(\d+)$")


def _family(dist_name: str) -> int | None:
    m = _CU.search(dist_name)
    return int(m.group(1)) if m else None


def _cuda_major(fw: FrameworkBuild) -> int | None:
    cuda = (fw.cuda_compiled or "").split(".")[0]
    if cuda.isdigit():
        return int(cuda)
    for pin in fw.pins:
        m = re.match(r"\s*nvidia-cudnn(?:-jit)?-cu(\d+)", pin)
        if m:
            return int(m.group(1))
    return None


def _python_of(site_dir: str) -> str | None:
    """The interpreter whose ``pip install`` writes into ``site_dir``: this one for its own
    site-packages, a venv's own ``bin/python`` for a venv's (``pyvenv.cfg`` at its root), None for a
    ``pip install --target`` folder (no interpreter installs there)."""
    real = os.path.realpath(site_dir)
    own = pyenv.purelib_dirs() | set(pyenv.site_packages()) | {pyenv.user_site() or ""}
    if any(p and os.path.realpath(p) == real for p in own):
        return pyenv.executable()
    root = os.path.dirname(os.path.dirname(os.path.dirname(real)))  # ROOT/lib/pythonX.Y/site-packages
    if os.path.basename(real) in ("site-packages", "dist-packages") and os.path.isfile(os.path.join(root, "pyvenv.cfg")):
        py = os.path.join(root, "bin", "python")
        return py if os.path.exists(py) else None
    return None


def overwrite_findings(overwrites: Iterable[WheelOverwrite], frameworks: Iterable[FrameworkBuild],
                       own_dirs: dict[str, str]) -> list[Finding]:
    """``cudnn-wheel-overwritten``: both distributions, the folder, whose files are there now
    (by RECORD hash), what that means for each framework that uses the folder, and the fixes:
    one environment per CUDA major, or the exact ``--force-reinstall`` that restores a
    framework's files, with its cost."""
    out: list[Finding] = []
    fws = list(frameworks)
    for ow in overwrites:
        names = " and ".join(f"{n} {v}" for n, v in ow.distributions)
        present = f"{ow.present[0]} {ow.present[1]}" if ow.present else None
        shown = (", ".join(os.path.basename(f) for f in ow.files[:4])
                 + (f" (+{len(ow.files) - 4} more)" if len(ow.files) > 4 else ""))
        if present:
            now = f"The files there now are {present}'s ({'; '.join(ow.evidence[:2]) or 'by size'})."
        elif ow.mixed:
            now = "The folder now holds files of both: " + "; ".join(ow.evidence[:3]) + "."
        else:
            now = "Which distribution's files are there could not be told from their hashes."
        meaning: list[str] = []
        wrong = False
        users = []
        for fw in fws:
            own_dir = own_dirs.get(fw.name)
            uses_dir = bool(own_dir and (own_dir == ow.directory or own_dir.startswith(ow.directory + os.sep)))
            pinned = pinned_names(fw)
            names_claimed = {canonical_name(n) for n, _ in ow.distributions}
            if not uses_dir and not (pinned & names_claimed):
                continue
            users.append(fw)
            want_cuda = _cuda_major(fw)
            want = next(((n, v) for n, v in ow.distributions if canonical_name(n) in pinned), None) or next(
                ((n, v) for n, v in ow.distributions if want_cuda is not None and _family(n) == want_cuda), None)
            if ow.present is None or want is None:
                meaning.append(f"{fw.name} {fw.version} (CUDA {want_cuda or '?'}) may run either's files.")
            elif want == ow.present:
                meaning.append(f"{fw.name} {fw.version} (CUDA {want_cuda or '?'}) gets the files it wants ({present}).")
            else:
                fam = _family(ow.present[0])
                wrong = True
                meaning.append(f"{fw.name} {fw.version} (built for CUDA {want_cuda or '?'}, wants {want[0]} {want[1]}) now "
                               f"runs {present}'s files: a CUDA {fam or '?'} build of cuDNN under a CUDA "
                               f"{want_cuda or '?'} framework.")
        if not users and ow.present:
            others = [f"{n} {v}" for n, v in ow.distributions if (n, v) != ow.present]
            meaning.append(f"A framework that needs {', '.join(others)} (built for CUDA "
                           f"{', '.join(str(_family(n) or '?') for n, v in ow.distributions if (n, v) != ow.present)}) "
                           f"gets {present}'s files instead (a CUDA {_family(ow.present[0]) or '?'} build).")
            wrong = any(_family(n) != _family(ow.present[0]) for n, _ in ow.distributions)
        if not any(".so" in os.path.basename(f) for f in ow.files):
            # headers and Python files only: each wheel's libraries are still its own
            wrong = False
            meaning = [f"No library is among them: the cuDNN each framework loads is unchanged; code compiled "
                       f"against these headers now sees {present or 'either'}'s version"
                       + (f" ({next(os.path.basename(f) for f in ow.files if 'version' in os.path.basename(f))})"
                          if any("version" in os.path.basename(f) for f in ow.files) else "") + "."]
        detail = (f"{names} both list {len(ow.files)} file{'s' if len(ow.files) != 1 else ''} in {ow.directory} ({shown}). "
                  "pip installed the later one over "
                  f"the earlier one's files and keeps both records; pip check reports nothing. {now} " + " ".join(meaning))
        fixes: list[Fix] = []
        if len({_family(n) for n, _ in ow.distributions}) > 1:
            fixes.append(Fix("one-venv-per-cuda", "Use one virtual environment per CUDA major",
                             "create one environment per CUDA major (python -m venv ~/venv-cu13 and ~/venv-cu12) and install "
                             "each framework into its own"
                             + (": " + ", ".join(f"{f.name} ({f.distribution}, CUDA {_cuda_major(f) or '?'})" for f in users)
                                if users else "") + "; one Jupyter kernel per environment", True, False,
                             "advice only: a new environment"))
        for i, (n, v) in enumerate(ow.distributions):
            if ow.present == (n, v):
                continue
            mb = ow.sizes[i] / 2**20 if i < len(ow.sizes) and ow.sizes[i] else None
            for_fw = [f.name for f in users if (next(((a, b) for a, b in ow.distributions
                                                      if _family(a) == _cuda_major(f)), None) == (n, v))]
            want_present = [f.name for f in users if ow.present and (
                canonical_name(ow.present[0]) in pinned_names(f) or _family(ow.present[0]) == _cuda_major(f))]
            loser = (" and ".join(want_present) if want_present else
                     (f"{present}'s users" if present else "the other distribution's users"))
            py = _python_of(ow.site) if ow.site else pyenv.executable()
            how = (f"{pyenv.executable()} -m pip install --no-deps --upgrade --target {ow.site} {n}=={v}   # {ow.site} is a "
                   f"pip --target folder, not an environment's site-packages (a plain install would change nothing "
                   f"there: pip says \"Not uninstalling ... outside environment\"); --target --upgrade replaces each "
                   f"top-level folder it writes as a whole (the other wheel's files under it go too)"
                   if py is None else f"{py} -m pip install --force-reinstall --no-deps {n}=={v}")
            fixes.append(Fix(
                "reinstall-cudnn", f"Restore {n} {v}'s files" + (f" (for {', '.join(for_fw)})" if for_fw else ""),
                how + f"   # cost: downloads the wheel again "
                f"and rewrites {(f'{mb:.0f} MiB') if mb else 'its files'} in {ow.directory}; afterwards {loser} "
                f"{'gets' if len(want_present) == 1 else 'get'} "
                f"{n}'s files (a CUDA {_family(n) or '?'} build) instead", True, False, "advice only: review, then run it"))
        out.append(Finding("cudnn-wheel-overwritten", "error" if wrong else "warning",
                           f"{names} overwrite each other in {ow.directory}"
                           + (f": {present}'s files are there now" if present else ""), detail, tuple(fixes)))
    return out
