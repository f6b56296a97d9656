"""The GPU-stack manifest: what ``cudnn-magic check`` verified, as one JSON file, and the drift
between a manifest and the live stack.

:func:`build_manifest`, :func:`loads` (which checks the type of every field it reads) and
:func:`compare` are pure (facts in, data out); :func:`read_manifest` reads a manifest file (a
regular file only, opened non-blocking, at most :data:`MAX_BYTES`); :func:`live_manifest`
gathers the facts (``check.run_check``, ``importlib.metadata``, the SHA-256 of each library
file) and may be slow as a check is. No IPython, ctypes or widgets here.

Format (``schema`` ``"cudnn-magic-manifest"``, ``schema_version`` :data:`SCHEMA_VERSION`; keys
sorted, lists sorted, no timestamp, so one stack always writes the same bytes)::

    {"schema", "schema_version", "created_by",
     "driver": {"version", "cuda_driver_version"} | null,
     "gpus": [{"index", "name", "uuid", "compute_capability"}],
     "cudnn": [{"path", "version", "owner", "soname", "sha256", "size", "main", "loaded"}],
                                       # every cuDNN library file, sub-libraries included (schema 2;
                                       # schema 1 held the main libraries only, and is compared so)
     "frameworks": [{"name", "distribution", "version", "cudnn_compiled", "cuda_compiled", "verdict"}],
     "distributions": {"name": "version"},                                   # nvidia-* and frameworks
     "findings": [{"id", "severity", "title"}]}
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from collections.abc import Iterable, Mapping
from typing import Any

from packaging.utils import canonicalize_name

from ..model import Driver, Report
from ..model.prevention import Drift
from ..util.files import NotRegularFile, open_regular, regular_distributions
from ..util.version import __version__
from .check import run_check

SCHEMA = "cudnn-magic-manifest"
SCHEMA_VERSION = 2

#: Distributions a manifest pins besides every ``nvidia-*`` one: the frameworks and cuDNN
#: consumers the check knows (the modules of probes/frameworks/).
FRAMEWORK_DISTS = re.compile(r"^(torch|torchvision|torchaudio|tensorflow|tensorflow-gpu|tf-nightly|jax|jaxlib|"
                             r"jax-cuda\d+-(plugin|pjrt)|cupy(-cuda\w+)?|onnxruntime-gpu|ctranslate2|"
                             r"paddlepaddle(-gpu)?|mxnet(-cu\w+)?|tensorrt(-\w+)?)$")


class NotAManifest(ValueError):
    """The file is not a cudnn-magic manifest (not JSON, another schema, a newer version)."""


def _tracked(name: str) -> bool:
    return name.startswith("nvidia-") or bool(FRAMEWORK_DISTS.match(name))


def build_manifest(report: Report, distributions: Mapping[str, str], sha256: Mapping[str, str | None],
                   created_by: str = "", sizes: Mapping[str, int | None] | None = None) -> dict[str, Any]:
    """The manifest of a judged stack. Pure.

    Args:
        report: the check's report (``check.run_check``).
        distributions: ``{canonical name: version}`` of the installed distributions; only
            ``nvidia-*`` and framework ones are kept.
        sha256: hex SHA-256 of each cuDNN library file, by path (None: unreadable).
        sizes: bytes of each file, by path.
    """
    drv = report.driver if isinstance(report.driver, Driver) else None
    copies: dict[str, dict[str, Any]] = {}
    for c in list(report.cudnn_loaded) + list(report.cudnn_installed):
        if c.path in copies:
            continue
        copies[c.path] = {"path": c.path, "version": c.version, "owner": c.owner, "soname": c.soname,
                          "sha256": sha256.get(c.path), "size": (sizes or {}).get(c.path), "main": c.is_main,
                          "loaded": c.loaded}
    return {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "created_by": created_by,
        "driver": {"version": drv.version, "cuda_driver_version": drv.cuda_driver_version} if drv else None,
        "gpus": [{"index": g.index, "name": g.name, "uuid": g.uuid,
                  "compute_capability": "{}.{}".format(*g.compute_capability) if g.compute_capability else None}
                 for g in sorted(report.gpus, key=lambda g: g.index)],
        "cudnn": [copies[p] for p in sorted(copies)],
        "frameworks": sorted(({"name": f.name, "distribution": f.distribution, "version": f.version,
                               "cudnn_compiled": f.cudnn_compiled, "cuda_compiled": f.cuda_compiled, "verdict": f.verdict}
                              for f in report.frameworks), key=lambda f: (f["name"], f["distribution"])),
        "distributions": {n: distributions[n] for n in sorted(distributions) if _tracked(n)},
        "findings": sorted(({"id": f.id, "severity": f.severity, "title": f.title} for f in report.findings),
                           key=lambda f: (f["id"], f["title"])),
    }


def dumps(manifest: Mapping[str, Any]) -> str:
    """The manifest's text: stable key order, two-space indent, a final newline."""
    return json.dumps(manifest, indent=2, sort_keys=True) + "\n"


def loads(text: str | bytes) -> dict[str, Any]:
    """Parse and validate a manifest: every field this cudnn-magic reads is checked for its type
    (:func:`validate`), so a manifest that loads can be compared and shown.

    Raises:
        NotAManifest: not JSON (or nested too deeply to parse), not an object, another
            ``schema``, a ``schema_version`` this cudnn-magic does not read, or a field of the
            wrong type; the message says which, naming the field (``"gpus[0].index"``).
    """
    try:
        data = json.loads(text)
    except (ValueError, UnicodeDecodeError) as exc:
        raise NotAManifest(f"not JSON ({exc})") from None
    except RecursionError:
        raise NotAManifest("not JSON this cudnn-magic reads (nested too deeply)") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise NotAManifest(f"no \"schema\": \"{SCHEMA}\" key")
    ver = data.get("schema_version")
    if not isinstance(ver, int) or isinstance(ver, bool) or ver < 1 or ver > SCHEMA_VERSION:
        raise NotAManifest(f"schema_version {ver!r:.40} is not one this cudnn-magic reads (1 to {SCHEMA_VERSION})")
    validate(data)
    return data


# The fields of each record: name -> kind ("str", "int", "size": an int >= 0, "bool"; a final "?"
# also allows null). Those in _REQUIRED must be there; the others may be absent (a schema 1
# manifest has no "size" or "main"). Keys not listed are ignored.
_FIELDS: dict[str, dict[str, str]] = {
    "driver": {"version": "str?", "cuda_driver_version": "str?"},
    "gpus": {"index": "int", "name": "str?", "uuid": "str?", "compute_capability": "str?"},
    "cudnn": {"path": "str", "version": "str?", "owner": "str?", "soname": "str?", "sha256": "str?",
              "size": "size?", "main": "bool", "loaded": "bool"},
    "frameworks": {"name": "str", "distribution": "str", "version": "str?", "cudnn_compiled": "str?",
                   "cuda_compiled": "str?", "verdict": "str?"},
    "findings": {"id": "str", "severity": "str", "title": "str"},
}
_REQUIRED = {"gpus": ("index",), "cudnn": ("path",), "frameworks": ("name", "distribution")}
_EXPECTED = {"str": "a string", "int": "an integer", "size": "a byte count (an integer, 0 or more)",
             "bool": "true or false", "object": "an object", "list": "a list"}


def _is(kind: str, value: Any) -> bool:
    if kind.endswith("?"):
        if value is None:
            return True
        kind = kind[:-1]
    if kind == "str":
        return isinstance(value, str)
    if kind == "bool":
        return isinstance(value, bool)
    return isinstance(value, int) and not isinstance(value, bool) and (kind == "int" or value >= 0)


def _got(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and value < 0:
        return "a negative integer"
    for t, word in ((bool, "true/false"), (int, "an integer"), (float, "a number"), (str, "a string"),
                    (list, "a list"), (dict, "an object")):
        if isinstance(value, t):
            return word
    return "null"


def _wrong(field: str, kind: str, value: Any) -> NotAManifest:
    want = _EXPECTED[kind.rstrip("?")] + (" or null" if kind.endswith("?") else "")
    return NotAManifest(f"\"{field}\" must be {want}, not {_got(value)}")


def _key(name: str) -> str:
    """A distribution name as it appears in a message: quoted, cut to 60 characters."""
    return json.dumps(name if len(name) <= 60 else name[:60] + "...", ensure_ascii=False)


def validate(data: Mapping[str, Any]) -> None:
    """Check the type of every field :func:`compare` and :func:`constraints` read (the format in
    the module docstring). Pure; no recursion (a record's fields are scalars).

    Raises:
        NotAManifest: the first field of the wrong type, or a required one that is missing,
            named as a path (``"cudnn[3].path"``, ``"distributions[\"torch\"]"``).
    """
    for key in ("gpus", "cudnn", "frameworks"):
        if not isinstance(data.get(key), list):
            raise NotAManifest(f"\"{key}\" is missing or not a list")
    if not isinstance(data.get("distributions"), dict):
        raise NotAManifest("\"distributions\" is missing or not an object")
    if "created_by" in data and not isinstance(data["created_by"], str):
        raise _wrong("created_by", "str", data["created_by"])
    driver = data.get("driver")
    if driver is not None and not isinstance(driver, dict):
        raise _wrong("driver", "object?", driver)
    if "findings" in data and not isinstance(data["findings"], list):
        raise _wrong("findings", "list", data["findings"])
    records: list[tuple[str, int | None, Any]] = [("driver", None, driver)] if driver is not None else []
    records += [(key, i, r) for key in ("gpus", "cudnn", "frameworks", "findings")
                for i, r in enumerate(data.get(key) or ())]
    for key, i, rec in records:
        where = key if i is None else f"{key}[{i}]"
        if not isinstance(rec, dict):
            raise _wrong(where, "object", rec)
        for name in _REQUIRED.get(key, ()):
            if name not in rec:
                raise NotAManifest(f"\"{where}\" has no \"{name}\"")
        for name, kind in _FIELDS[key].items():
            if name in rec and not _is(kind, rec[name]):
                raise _wrong(f"{where}.{name}", kind, rec[name])
    for name, version in data["distributions"].items():
        if not isinstance(version, str):
            raise _wrong(f"distributions[{_key(name)}]", "str", version)


#: An absolute path in a finding's title (ends at white space, a bracket, a quote, a comma or ``;``).
_PATH_IN_TEXT = re.compile(r"(?<![\w.])(/[^\s,;()\[\]'\"]+)")


def _real(path: str) -> str:
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):
        return path


def _rules_now(live: Mapping[str, Any], *keys: str, path: str | None = None) -> str:
    """What the live findings (the same ``check`` reports: the live manifest is built from its
    report) say about something named by ``keys`` (a distribution name or version, a framework
    name) or about the library file ``path``: a finding that names that file or its folder,
    links resolved on both sides (``check`` names the ``LD_LIBRARY_PATH`` entry as it is written,
    the manifest holds each file's real path). The framework's verdict otherwise."""
    here = {_real(path), _real(os.path.dirname(path))} if path else set()
    hits = []
    for f in live.get("findings", ()):
        title = str(f.get("title", ""))
        named = here and any(_real(m.rstrip(".:")) in here for m in _PATH_IN_TEXT.findall(title))
        if named or any(k and k in title for k in keys):
            hits.append(f"{f.get('severity')} {f.get('id')}: {title}")
    if hits:
        return "rules now: " + "; ".join(hits[:2])
    return "rules now: no finding about it"


def compare(saved: Mapping[str, Any], live: Mapping[str, Any]) -> list[Drift]:
    """The drift from ``saved`` to ``live`` (both manifests). Pure. Compared: driver version and
    CUDA driver version, GPUs (name, compute capability), each cuDNN library file, sub-libraries
    included (version, owner, sha256, size; appeared or gone; against a schema 1 manifest, the main
    libraries only), each framework (version, compiled-against, verdict), each
    tracked distribution's version. Findings are not compared themselves: each drift says what
    the rules say now (:func:`_rules_now`: the live findings, ``check``'s own, that name it; a
    library file's links are resolved to match the paths a finding names)."""
    out: list[Drift] = []
    d0, d1 = saved.get("driver") or {}, live.get("driver") or {}
    for k in ("version", "cuda_driver_version"):
        if d0.get(k) != d1.get(k):
            out.append(Drift("driver", k, d0.get(k), d1.get(k), _rules_now(live, "driver", "Driver")))
    g0 = {g.get("index"): g for g in saved.get("gpus", ())}
    g1 = {g.get("index"): g for g in live.get("gpus", ())}
    for i in sorted(set(g0) | set(g1), key=str):
        for k in ("name", "compute_capability"):
            a, b = (g0.get(i) or {}).get(k), (g1.get(i) or {}).get(k)
            if a != b:
                out.append(Drift(f"GPU {i}", k, a, b, _rules_now(live, f"GPU {i}")))
    c0 = {c["path"]: c for c in saved.get("cudnn", ()) if isinstance(c, dict) and "path" in c}
    c1 = {c["path"]: c for c in live.get("cudnn", ()) if isinstance(c, dict) and "path" in c}
    if saved.get("schema_version") == 1:  # it recorded the main libraries only: compare those
        c1 = {p: c for p, c in c1.items() if c.get("main", True)}
    for p in sorted(set(c0) | set(c1)):
        a, b = c0.get(p), c1.get(p)
        if a is None or b is None:
            out.append(Drift(f"cuDNN copy {p}", "present", a and a.get("version"), b and b.get("version"),
                             _rules_now(live, path=p)))
            continue
        for k in ("version", "owner", "sha256", "size"):
            if k == "size" and (a.get(k) is None or b.get(k) is None):
                continue  # schema 1 recorded no sizes
            if a.get(k) != b.get(k):
                out.append(Drift(f"cuDNN copy {p}", k, a.get(k), b.get(k),
                                 _rules_now(live, str(b.get("owner", "")), path=p)))
    f0 = {(f["name"], f["distribution"]): f for f in saved.get("frameworks", ())}
    f1 = {(f["name"], f["distribution"]): f for f in live.get("frameworks", ())}
    for key in sorted(set(f0) | set(f1)):
        a, b = f0.get(key), f1.get(key)
        if a is None or b is None:
            out.append(Drift(f"framework {key[0]}", "present", a and a.get("version"), b and b.get("version"),
                             _rules_now(live, key[0])))
            continue
        for k in ("version", "cudnn_compiled", "cuda_compiled", "verdict"):
            if a.get(k) != b.get(k):
                out.append(Drift(f"framework {key[0]}", k, a.get(k), b.get(k), f"verdict now: {b.get('verdict')}; "
                                 + _rules_now(live, key[0])))
    v0, v1 = saved.get("distributions", {}), live.get("distributions", {})
    for n in sorted(set(v0) | set(v1)):
        if v0.get(n) != v1.get(n):
            out.append(Drift(f"distribution {n}", "version", v0.get(n), v1.get(n), _rules_now(live, n)))
    return out


def constraints(manifest: Mapping[str, Any]) -> str:
    """A pip constraints file (``name==version`` per line) of the manifest's distributions:
    ``pip install -c FILE ...`` then rebuilds the same versions elsewhere."""
    lines = [("# pip constraints of a cuDNN stack verified by cudnn-magic "
              f"({manifest.get('created_by') or 'cudnn-magic'}); use: pip install -c THIS_FILE ...")]
    lines += [f"{n}=={v}" for n, v in sorted(manifest.get("distributions", {}).items())]
    return "\n".join(lines) + "\n"


def drift_json(drift: Iterable[Drift]) -> list[dict[str, Any]]:
    """The drift as JSON rows ``{"what", "field", "from", "to", "now"}``."""
    return [{"what": d.what, "field": d.field, "from": d.old, "to": d.new, "now": d.now} for d in drift]


# --------------------------------------------------------------------------- gathering (not pure)


#: The most bytes :func:`read_manifest` reads: a manifest of hundreds of library files is some
#: hundreds of KiB; a larger file is not one.
MAX_BYTES = 16 << 20


def read_manifest(path: str) -> dict[str, Any]:
    """Read and validate (:func:`loads`) the manifest file ``path``, at most :data:`MAX_BYTES`
    bytes. It is opened non-blocking and refused unless it is a regular file
    (:func:`cudnn_magic.util.files.open_regular`), so a FIFO or a device never blocks the caller.

    Raises:
        OSError: it cannot be opened or read; :class:`cudnn_magic.util.files.NotRegularFile` (an
            OSError) for a FIFO, a device or a folder.
        NotAManifest: larger than :data:`MAX_BYTES`, or :func:`loads` refuses it.
    """
    with open_regular(path) as fh:
        data = fh.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise NotAManifest(f"larger than {MAX_BYTES >> 20} MiB (no manifest is)")
    return loads(data)


def read_error(path: str, exc: OSError | NotAManifest) -> tuple[str, str]:
    """The ``(kind, message)`` of an error of :func:`read_manifest` for the user: kind
    ``"unreadable"`` or ``"not-a-manifest"``, one sentence naming ``path``. Pure; the message is
    not display-safe yet (pass it through :func:`cudnn_magic.util.safetext.safe_text` to print)."""
    if isinstance(exc, NotAManifest):
        return "not-a-manifest", f"{path} is not a manifest: {exc}"
    if isinstance(exc, NotRegularFile):
        return "unreadable", f"cannot read {path}: not a regular file (a FIFO, a device or a folder)"
    return "unreadable", f"cannot read {path}: {exc.strerror or exc}"


def _sha256(path: str) -> str | None:
    """The file's hex SHA-256; None when it cannot be read or is not a regular file (a FIFO named
    like a library never blocks: :func:`cudnn_magic.util.files.open_regular`)."""
    h = hashlib.sha256()
    try:
        with open_regular(path) as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    except OSError:
        return None
    return h.hexdigest()


def installed_distributions() -> dict[str, str]:
    """``{canonical name: version}`` of this interpreter's distributions (``importlib.metadata``)."""
    out: dict[str, str] = {}
    for d in regular_distributions():  # a FIFO METADATA reads as missing, never blocks
        name = d.metadata.get("Name") if d.metadata else None
        if name:
            out.setdefault(str(canonicalize_name(name)), d.version)
    return out


def live_manifest(report: Report | None = None) -> tuple[dict[str, Any], Report]:
    """The manifest of this process's stack, and the report it was built from (a fresh
    ``check.run_check()`` when ``report`` is None). Never raises for what it cannot read:
    an unreadable library, or one that is not a regular file (never opened blocking), gets
    ``"sha256": null``."""

    report = report or run_check()
    files = {c.path for c in list(report.cudnn_loaded) + list(report.cudnn_installed)}
    return build_manifest(report, installed_distributions(), {p: _sha256(p) for p in files},
                          created_by=f"cudnn-magic {__version__}", sizes={p: _size(p) for p in files}), report


def _size(path: str) -> int | None:
    """The file's size in bytes; None when it cannot be read or is not a regular file."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_size if stat.S_ISREG(st.st_mode) else None
