"""Ask pip itself what an install would do, and what is installed, without installing anything.

* :func:`pip_dry_run`: ``PYTHON -m pip install --dry-run --report FILE REQ...`` (pip 22.2+,
  "Installation Report" format version 1, pip's docs: ``reference/installation-report``). pip's
  own resolver decides; we never resolve. ``--dry-run`` installs nothing and changes nothing.
* :func:`pip_inspect`: ``PYTHON -m pip inspect`` (pip 22.2+, "pip inspect JSON output" format
  version 1): every installed distribution with its metadata and ``.dist-info`` location.

Both run the given interpreter (the kernel's own by default), never raise, and return either
their result or a :class:`PipError` with one clear line (``kind``: ``bad-requirement``,
``needs-build``, ``index-unreachable``, ``pip-too-old``, ``conflict``, ``no-match``, ``pip-failed``).

A what-if never runs a package's code: every dry run has ``--only-binary :all:`` (pip considers
wheels only and never calls a build backend), and a requirement that would need a build (a source
tree, an archive, a VCS URL, a local path, ``-e``, ``--no-binary``) is refused before pip starts
(``needs-build``).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement

from ..util.files import regular_dist_version, regular_distributions
from ..util.safetext import safe_text

#: The first pip with ``install --dry-run --report`` and ``inspect`` (pip 22.2 release notes).
MIN_PIP = (22, 2)

# Options passed through to pip unchanged (the index and selection options of ``pip install``);
# anything else that starts with "-" is refused, so a what-if can never install or uninstall.
_PASS_WITH_VALUE = {"-i", "--index-url", "--extra-index-url", "-f", "--find-links", "-c", "--constraint",
                    "--platform", "--python-version", "--implementation",
                    "--abi", "--upgrade-strategy", "--timeout", "--retries", "--proxy", "--trusted-host"}
_PASS_FLAGS = {"--pre", "-U", "--upgrade", "--no-index", "--no-deps", "--force-reinstall", "--prefer-binary",
               "--ignore-installed", "-I", "--no-build-isolation", "--isolated", "--no-cache-dir"}
#: What a what-if never passes: they make pip build (and so run) a package's code.
_BUILDS = {"--no-binary", "--only-binary", "-e", "--editable", "--use-pep517", "--no-use-pep517"}
#: Forced on every dry run: pip considers wheels only and never runs a build backend
#: (pip's docs, "--only-binary": ":all: to disable all source packages").
ONLY_WHEELS = ("--only-binary", ":all:")
_LOOKS_LIKE_SOURCE = re.compile(r"^(?:[.~/]|[A-Za-z][\w+.-]*://|(?:git|hg|svn|bzr)\+)|\.(?:tar\.gz|tgz|zip|tar\.bz2)$")


@dataclass(frozen=True)
class PipError:
    """Why pip gave no answer: ``kind`` (see module docstring), ``message`` (one line),
    ``detail`` (pip's last lines of output, for the curious)."""

    kind: str
    message: str
    detail: str = ""

    def __bool__(self) -> bool:  # an error is never a usable result
        return False

    @property
    def bad_input(self) -> bool:
        """True when the words given cannot be a what-if at all (:data:`INPUT_KINDS`: a requirement
        that does not parse, an option a what-if does not pass, one that needs a build); False when
        pip answered that nothing can be installed (``conflict``, ``no-match``) or pip or the index
        did not answer (``index-unreachable``, ``pip-too-old``, ``pip-failed``)."""
        return self.kind in INPUT_KINDS


#: The :class:`PipError` kinds that are the user's input, not pip's answer: the words were refused
#: before pip ran (:func:`split_requirements`) or pip refused the requirement itself ("Invalid
#: requirement", :func:`classify_failure`). A magic raises IPython's ``UsageError`` for these.
INPUT_KINDS = frozenset({"bad-requirement", "needs-build"})


@dataclass(frozen=True)
class PlannedInstall:
    """One distribution pip's report says it would install: ``name`` (as in its metadata),
    ``version``, ``requires_dist`` (``Requires-Dist`` lines), ``requested`` (named on the
    command line), ``url`` (where pip would download it), ``sha256`` (the archive's hash, hex,
    from ``download_info.archive_info``; "" when pip gives none)."""

    name: str
    version: str
    requires_dist: tuple[str, ...] = ()
    requested: bool = False
    url: str = ""
    sha256: str = ""


@dataclass(frozen=True)
class PipPlan:
    """The parsed ``--report``: what pip would install (``installs``), the command it ran
    (``command``, a list), pip's version, and the seconds it took (``elapsed_s``)."""

    installs: tuple[PlannedInstall, ...]
    command: tuple[str, ...]
    pip_version: str
    elapsed_s: float = 0.0


@dataclass(frozen=True)
class InstalledDist:
    """One installed distribution as ``pip inspect`` lists it: ``name``, ``version``,
    ``requires_dist``, ``dist_info`` (absolute path of its ``.dist-info`` folder, or "")."""

    name: str
    version: str
    requires_dist: tuple[str, ...] = ()
    dist_info: str = ""


@dataclass(frozen=True)
class Installed:
    """``pip inspect``'s answer: the distributions and the environment's ``sys.path`` site folders."""

    dists: tuple[InstalledDist, ...]
    pip_version: str
    site_dirs: tuple[str, ...] = field(default_factory=tuple)


def _same_interpreter(python: str) -> bool:
    """``python`` is this interpreter: the same path, links NOT resolved (a venv's ``bin/python``
    is a link to the base interpreter, yet its environment is another)."""
    return os.path.normpath(os.path.abspath(python)) == os.path.normpath(os.path.abspath(sys.executable))


def pip_version(python: str) -> tuple[int, ...] | PipError:
    """The version of pip in ``python``'s environment, or a :class:`PipError`. For this very
    interpreter it is read in-process (``importlib.metadata``: no 0.5 s pip start); another one
    is asked with ``python -m pip --version``. Never raises."""
    if _same_interpreter(python):
        try:
            m = re.match(r"(\d+)\.(\d+)", regular_dist_version("pip") or "")
            if m:
                return tuple(int(x) for x in m.groups())
        except Exception:  # noqa: BLE001 - ask pip itself below
            pass
    try:
        proc = subprocess.run([python, "-m", "pip", "--version"], capture_output=True, text=True, timeout=60,
                              env=_env(), check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        return PipError("pip-failed", f"cannot run {python} -m pip: {exc}")
    m = re.match(r"pip (\d+)\.(\d+)", proc.stdout)
    if proc.returncode != 0 or not m:
        return PipError("pip-failed", f"{python} has no working pip ({_last_line(proc.stderr) or 'no output'})")
    return tuple(int(x) for x in m.groups())


def split_requirements(text: str | Sequence[str]) -> tuple[list[str], list[str]] | PipError:
    """Split the what-if argument ("REQ ... [--index-url URL]") into (requirements, pip options).
    Every requirement must parse as a PEP 508 requirement (``packaging.requirements``); options
    must be among the install options that select versions (index, constraints, ``--pre``...).
    Returns a :class:`PipError` (``bad-requirement``) otherwise, naming the offending word."""

    try:
        words = shlex.split(text) if isinstance(text, str) else list(text)
    except ValueError as exc:
        return PipError("bad-requirement", f"cannot split the requirements: {exc}")
    raw = _raw_words(text, len(words)) if isinstance(text, str) else list(words)
    reqs: list[str] = []
    opts: list[str] = []
    i = 0
    while i < len(words):
        w = words[i]
        if w.startswith("-"):
            key = w.split("=", 1)[0]
            if key in _PASS_WITH_VALUE:
                if "=" in w:
                    opts.append(w)
                elif i + 1 < len(words):
                    opts += [w, words[i + 1]]
                    i += 1
                else:
                    return PipError("bad-requirement", f"{w} needs a value")
            elif w in _PASS_FLAGS:
                opts.append(w)
            elif key in _BUILDS:
                return PipError("needs-build", f"{w} makes pip build a package (run its code) to know what it installs; "
                                               "a what-if predicts from wheels only and ran nothing")
            else:
                return PipError("bad-requirement", f"{w!r} is not an option a what-if passes to pip (allowed: "
                                                   f"{', '.join(sorted(_PASS_WITH_VALUE | _PASS_FLAGS))})")
        else:
            end = next((k for k in range(i + 1, len(words)) if words[k].startswith("-")), len(words))
            if i + 2 < end and words[i + 1] == "@":  # "name @ url" split on its spaces: one PEP 508 requirement
                w = " ".join(words[i:i + 3])
                i += 2
            try:
                parsed = Requirement(w)
                ok = True
            except InvalidRequirement as exc:
                ok, why, parsed = False, str(exc).splitlines()[0], None
            built = _needs_build(w, parsed)
            if built:
                return PipError("needs-build", built)
            nxt = words[i + 1] if i + 1 < end else ""
            if not ok or nxt.startswith(";"):
                # a marker split on spaces ("numpy; python_version<'3'"): the words up to the next
                # option, longest first, that parse as ONE PEP 508 requirement
                joined = _join_marker(raw, i, end) if raw is not None else None
                if joined is not None:
                    req, i = joined
                    reqs.append(req)
                    i += 1
                    continue
            if not ok:
                hint = ""
                one_eq = re.match(r"^([A-Za-z0-9][\w.-]*)\s*=\s*([^=<>!~\s].*)$", w)
                if one_eq:  # "name=1.2": pip's own message is packaging's parser error; say what is meant
                    why = (f"one '=' is no version operator (PEP 440): for an exact version write "
                           f"'{one_eq.group(1)}=={one_eq.group(2)}'")
                if w.rstrip().endswith(";") or _MARKER_START.match(nxt) or nxt.startswith(";"):
                    hint = (f"; a requirement with a marker is one word: quote it, e.g. --what-if "
                            f"\"'{w.rstrip(';')}; python_version<\\\"3\\\"'\"")
                return PipError("bad-requirement", f"{w!r} is not a valid requirement: {why}{hint}")
            reqs.append(w)
        i += 1
    if not reqs:
        return PipError("bad-requirement", "no requirement given (e.g. --what-if \"nvidia-cudnn-cu12==9.10.2.21\")")
    return reqs, opts


def _needs_build(word: str, req: Requirement | None) -> str | None:
    """Why ``word`` cannot be predicted without building it (a direct reference to a source tree,
    an archive or a VCS URL; a local path): pip would run its build backend (``setup.py``) to read
    its metadata. None for a name, a specifier or a direct reference to a ``.whl`` file."""
    # pip takes a word that looks like a path or an archive for one (pip's ``_looks_like_path``),
    # even when it also parses as a name
    url = (req.url if req is not None else None) or (word if _LOOKS_LIKE_SOURCE.search(word) or os.sep in word
                                                     else None)
    if not url:
        return None
    path = url.split("#", 1)[0].split("?", 1)[0]
    if path.endswith(".whl") and not re.match(r"^(?:git|hg|svn|bzr)\+", url):
        return None
    return (f"{word!r} is a source tree, archive or VCS URL: pip would have to build it (run its setup.py or build "
            "backend) to know what it installs; a what-if predicts from wheels only and ran nothing (build a wheel "
            "first, then ask about the .whl file)")


_MARKER_START = re.compile(r"^;?\s*\(?\s*(python_version|python_full_version|sys_platform|platform_\w+|os_name|"
                           r"implementation_\w+|extra)\b")


def _raw_words(text: str, n: int) -> list[str] | None:
    """The shell words of ``text`` with their quotes kept (``shlex`` non-POSIX mode: a marker's
    ``'3'`` stays quoted), a word fully inside one pair of quotes unquoted; None when they do not
    line up one for one with the POSIX words."""
    try:
        lex = shlex.shlex(text, posix=False)
        lex.whitespace_split = True
        raw = list(lex)
    except ValueError:
        return None
    raw = [w[1:-1] if len(w) >= 2 and w[0] == w[-1] and w[0] in "'\"" else w for w in raw]
    return raw if len(raw) == n else None


def _join_marker(raw: Sequence[str], i: int, end: int) -> tuple[str, int] | None:
    """The longest ``raw[i:j]`` (``i + 2 <= j <= end``) that parses as one PEP 508 requirement
    (``packaging.requirements``), as (text, j - 1); None when none does."""
    for j in range(end, i + 1, -1):
        text = " ".join(raw[i:j])
        try:
            Requirement(text)
        except InvalidRequirement:
            continue
        return text, j - 1
    return None


def pip_dry_run(requirements: str | Sequence[str], python: str | None = None, timeout: float = 600.0) -> PipPlan | PipError:
    """What ``pip install REQ...`` would install in ``python``'s environment (default: this
    interpreter), by pip's own resolver with ``--dry-run --report FILE`` (a temporary file); nothing is installed.

    Args:
        requirements: the words after ``pip install`` (requirements and index options), as one
            string (split like a shell) or a list.
        python: the interpreter whose environment is resolved.
        timeout: seconds before pip is stopped.

    Returns:
        :class:`PipPlan`, or :class:`PipError` for an unparsable requirement, pip older than
        22.2, an index that cannot be reached, a resolver conflict, no matching release, or
        any other pip failure (one line each). Never raises.
    """
    python = python or sys.executable
    split = split_requirements(requirements)
    if isinstance(split, PipError):
        return split
    reqs, opts = split
    ver = pip_version(python)
    if isinstance(ver, PipError):
        return ver
    if ver < MIN_PIP:
        return PipError("pip-too-old", f"pip {'.'.join(map(str, ver))} in {python} is too old: the what-if needs "
                                       "pip 22.2 or newer (install --dry-run --report); upgrade pip first")
    # the report goes to a file, not stdout, so pip need not be --quiet: a resolver conflict's
    # "The conflict is caused by:" block is logged at pip's INFO level, which --quiet drops
    with tempfile.TemporaryDirectory(prefix="cudnn-magic-whatif-") as tmp:
        report = os.path.join(tmp, "report.json")
        cmd = [python, "-m", "pip", "install", "--dry-run", "--report", report, "--progress-bar", "off",
               "--disable-pip-version-check", "--no-input", "--no-color", *ONLY_WHEELS, *opts, *reqs]
        t0 = time.perf_counter()
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=_env(), check=False)
        except subprocess.TimeoutExpired:
            return PipError("pip-failed", f"pip did not answer within {timeout:.0f} s")
        except OSError as exc:
            return PipError("pip-failed", f"cannot run pip: {exc}")
        elapsed = time.perf_counter() - t0
        if proc.returncode != 0:
            return classify_failure(proc.stdout + "\n" + proc.stderr, reqs, opts)
        try:
            with open(report, encoding="utf-8") as fh:
                data = json.load(fh)
        except (OSError, ValueError):
            return PipError("pip-failed", "pip wrote no JSON report", (proc.stdout + proc.stderr)[-500:])
    installs = []
    for item in data.get("install", ()):
        md = item.get("metadata") or {}
        info = item.get("download_info") or {}
        archive = info.get("archive_info") or {}
        sha = str((archive.get("hashes") or {}).get("sha256") or "")
        if not sha and str(archive.get("hash", "")).startswith("sha256="):
            sha = str(archive["hash"])[len("sha256="):]
        installs.append(PlannedInstall(str(md.get("name", "")), str(md.get("version", "")),
                                       tuple(md.get("requires_dist") or ()), bool(item.get("requested")),
                                       str(info.get("url", "")), sha))
    return PipPlan(tuple(installs), tuple(cmd), ".".join(map(str, ver)), elapsed)


def classify_failure(output: str, reqs: Sequence[str] = (), opts: Sequence[str] = ()) -> PipError:
    """One clear line for a failed ``pip install --dry-run`` from pip's own output. Pure."""
    tail = "\n".join(output.strip().splitlines()[-12:])
    index = next((opts[i + 1] for i, o in enumerate(opts[:-1]) if o in ("-i", "--index-url")), None) or next(
        (o.split("=", 1)[1] for o in opts if o.startswith("--index-url=")), None)
    if re.search(r"NewConnectionError|Connection refused|Failed to establish a new connection|Max retries exceeded|"
                 r"Name or service not known|Temporary failure in name resolution|ConnectTimeout", output):
        where = index or "the package index"
        return PipError("index-unreachable", f"the package index cannot be reached ({where}): nothing was resolved, "
                                             "nothing installed", tail)
    if "ResolutionImpossible" in output or "conflicting dependencies" in output or "conflict is caused by" in output:
        cause = re.findall(r"^\s+(\S.*depends on .*)$", output, re.MULTILINE)
        summary = "pip's resolver found a conflict: " + ("; ".join(c.strip() for c in cause[:3]) or _last_line(output))
        explained = conflict_lines(output)
        return PipError("conflict", "\n".join([summary, *("  " + ln for ln in explained)]), tail)
    m = re.search(r"No matching distribution found for (.+)", output)
    if m:
        return PipError("no-match", f"no release matches {m.group(1).strip()} on the index as a wheel (a what-if "
                                    "considers wheels only: a release with only a source distribution would need a "
                                    "build, which a what-if never runs)", tail)
    m = re.search(r"(?:Invalid requirement|InvalidRequirement)[:\s]+(.+)", output)
    if m:
        return PipError("bad-requirement", f"pip refused the requirement: {m.group(1).strip()}", tail)
    return PipError("pip-failed", f"pip failed: {_last_line(output)}", tail)


def conflict_lines(output: str, limit: int = 6) -> list[str]:
    """pip's own explanation of a resolver conflict, at most ``limit`` lines: the "The conflict
    is caused by:" block (what each requirement asked for), else the "Cannot install ..." line,
    control characters replaced (:func:`cudnn_magic.util.safetext.safe_text`). Pure; [] when pip
    printed neither."""
    lines = [safe_text(ln.rstrip(), keep_newlines=False) for ln in output.splitlines()]
    start = next((i for i, ln in enumerate(lines) if ln.strip().startswith("The conflict is caused by")), None)
    picked: list[str] = []
    if start is not None:
        for ln in lines[start:]:
            if not ln.strip():
                break
            picked.append(("  " if picked else "") + ln.strip())
    else:
        picked = [ln.strip()[len("ERROR: "):] for ln in lines if ln.strip().startswith("ERROR: Cannot install")][:1]
    if len(picked) > limit:
        picked = [*picked[:limit - 1], f"  ... ({len(picked) - limit + 1} more lines from pip)"]
    return [ln[:300] for ln in picked]


def pip_inspect(python: str | None = None, timeout: float = 120.0) -> Installed | PipError:
    """Every distribution installed in ``python``'s environment (``pip inspect``), with the
    absolute ``.dist-info`` folder of each. Never raises."""
    python = python or sys.executable
    try:
        proc = subprocess.run([python, "-m", "pip", "inspect", "--disable-pip-version-check", "--no-color"],
                              capture_output=True, text=True, timeout=timeout, env=_env(), check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        return PipError("pip-failed", f"cannot run pip inspect: {exc}")
    if proc.returncode != 0:
        return PipError("pip-failed", f"pip inspect failed: {_last_line(proc.stderr)}")
    try:
        data = json.loads(proc.stdout)
    except ValueError:
        return PipError("pip-failed", "pip inspect's output is not JSON")
    dists = []
    for item in data.get("installed", ()):
        md = item.get("metadata") or {}
        loc = str(item.get("metadata_location") or "")
        dists.append(InstalledDist(str(md.get("name", "")), str(md.get("version", "")),
                                   tuple(md.get("requires_dist") or ()), os.path.realpath(loc) if loc else ""))
    sites = tuple(dict.fromkeys(os.path.dirname(d.dist_info) for d in dists
                                if d.dist_info.endswith(".dist-info")))
    return Installed(tuple(dists), str(data.get("pip_version", "")), sites)


def installed_here() -> Installed:
    """What ``pip inspect`` would list for this very interpreter, read in-process with
    ``importlib.metadata`` (the same ``.dist-info`` folders on ``sys.path``; about 30x cheaper than
    starting pip: ``benchmarks/bench_whatif.py``). Never raises."""

    dists = []
    seen: set[str] = set()
    for d in regular_distributions():  # a FIFO METADATA reads as missing, never blocks
        try:
            name = d.metadata.get("Name") if d.metadata else None
            key = re.sub(r"[-_.]+", "-", str(name or "")).lower()
            if not name or key in seen:  # a folder twice on sys.path: the first one is what imports use
                continue
            seen.add(key)
            path = getattr(d, "_path", None)  # the .dist-info folder (PathDistribution)
            dists.append(InstalledDist(str(name), str(d.version), tuple(d.requires or ()),
                                       os.path.realpath(str(path)) if path else ""))
        except Exception:  # noqa: BLE001 - one broken metadata folder never stops the what-if
            continue
    sites = tuple(dict.fromkeys(os.path.dirname(d.dist_info) for d in dists if d.dist_info.endswith(".dist-info")))
    return Installed(tuple(dists), "", sites)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(PIP_NO_INPUT="1", PIP_DISABLE_PIP_VERSION_CHECK="1", PYTHONIOENCODING="utf-8")
    env.pop("PIP_REQUIRE_VIRTUALENV", None)
    # pip prints the report through rich, which colours it when FORCE_COLOR is set (ipykernel sets it)
    for var in ("FORCE_COLOR", "CLICOLOR_FORCE", "PY_COLORS"):
        env.pop(var, None)
    env["NO_COLOR"] = "1"
    return env


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in (text or "").strip().splitlines() if ln.strip()]
    errs = [ln for ln in lines if ln.startswith("ERROR:")]
    return (errs[-1] if errs else lines[-1] if lines else "")[:300]


def report_json(plan: PipPlan) -> dict[str, Any]:
    """The plan as plain JSON data."""
    return {"installs": [{"name": p.name, "version": p.version, "requested": p.requested} for p in plan.installs],
            "pip_version": plan.pip_version}
