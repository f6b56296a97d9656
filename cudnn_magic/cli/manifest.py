"""``cudnn-magic manifest [-o FILE] [--constraints]`` and ``cudnn-magic check --against FILE``:
write the verified GPU stack as a manifest, and compare the live stack with one.
:mod:`cudnn_magic.cli.main` dispatches both here; the engine is :mod:`cudnn_magic.engines.manifest`.

Exit codes: ``check --against``: 0 nothing that matters changed, 1 drift, 2 the file cannot be
read (also: not a regular file) or is not a manifest (also: a field of the wrong type, larger
than 16 MiB). ``manifest``: 0 written, 2 cannot write.
"""

from __future__ import annotations

import argparse
import json
import os
import stat
import sys
from typing import TextIO

from ..engines.manifest import (
    NotAManifest,
    compare,
    constraints,
    drift_json,
    dumps,
    live_manifest,
    read_error,
    read_manifest,
)
from ..render.manifest import drift_text
from ..util.files import atomic_write
from ..util.safetext import safe_text

__all__ = ["cli_against", "cli_manifest"]


def cli_manifest(args: argparse.Namespace, out: TextIO) -> int:
    """Write the live manifest (or ``--constraints``) to ``args.output`` or ``out``; returns the
    exit code (0 written, 2 cannot write: one line on stderr).

    The file is replaced whole, never half-written and never written through a link: a new
    temporary file created ``O_CREAT | O_EXCL | O_NOFOLLOW`` (``tempfile.mkstemp``) in the same
    folder, then ``os.replace`` (:func:`cudnn_magic.util.files.atomic_write`). An existing regular file
    keeps its permission bits; a new one gets ``0o666`` less the umask, as ``open()`` would give.
    When ``args.output`` is a symbolic link, the link itself is replaced by the regular file
    (what it pointed to is left as it was) and stderr says so."""
    manifest, _report = live_manifest()
    text = constraints(manifest) if args.constraints else dumps(manifest)
    if args.output in (None, "-"):
        out.write(text)
        return 0
    target = args.output
    try:
        st = os.lstat(target)
    except OSError:
        st = None
    link = st is not None and stat.S_ISLNK(st.st_mode)
    if st is not None and stat.S_ISREG(st.st_mode):
        mode = stat.S_IMODE(st.st_mode)
    else:
        umask = os.umask(0o022)  # read the umask (one call sets it): put it back at once
        os.umask(umask)
        mode = 0o666 & ~umask
    try:
        atomic_write(target, text.encode("utf-8"), mode)
    except OSError as exc:
        print(safe_text(f"cudnn-magic: cannot write {target}: {exc.strerror or exc}", keep_newlines=False),
              file=sys.stderr)
        return 2
    what = "constraints" if args.constraints else "manifest"
    note = " (it was a symbolic link: the link was replaced by this file, what it pointed to is unchanged)" if link else ""
    print(safe_text(f"cudnn-magic: wrote {what} {target}{note}", keep_newlines=False), file=sys.stderr)
    return 0


def cli_against(args: argparse.Namespace, out: TextIO) -> int:
    """Compare the live stack with the manifest ``args.against``: the drift as text or JSON;
    returns the exit code (module docstring). The file is read by
    :func:`cudnn_magic.engines.manifest.read_manifest` (a regular file only, never blocking, every field's
    type checked); text from it is shown through :func:`cudnn_magic.util.safetext.safe_text`."""
    try:
        saved = read_manifest(args.against)
    except (OSError, NotAManifest) as exc:
        return _error(args, out, *read_error(args.against, exc))
    live, _report = live_manifest()
    drift = compare(saved, live)
    if args.json:
        json.dump({"manifest": args.against, "drift": drift_json(drift), "unchanged": not drift}, out, indent=2)
        out.write("\n")
    else:
        out.write(drift_text(drift, args.against, live))
    return 1 if drift else 0


def _error(args: argparse.Namespace, out: TextIO, kind: str, message: str) -> int:
    """One line on stderr and, with ``--json``, ``{"error": {"kind", "message"}}`` on stdout (the
    shape ``check --what-if --json`` prints: the message as data, JSON-escaped); exit 2."""
    print(safe_text(f"cudnn-magic: {message}", keep_newlines=False), file=sys.stderr)
    if args.json:
        json.dump({"error": {"kind": kind, "message": message}}, out, indent=2)
        out.write("\n")
    return 2
