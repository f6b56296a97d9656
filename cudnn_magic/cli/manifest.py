"""``cudnn-magic manifest [-o FILE] [--constraints]`` and ``cudnn-magic check --against FILE``
(issue 16): write the verified GPU stack as a manifest, and compare the live stack with one.
:mod:`cudnn_magic.cli.main` dispatches ``manifest`` here, :mod:`cudnn_magic.cli.check`
``--against``; the engine is :mod:`cudnn_magic.manifest`.

Exit codes: ``check --against``: 0 nothing that matters changed, 1 drift, 2 the file cannot be
read or is not a manifest. ``manifest``: 0 written, 2 cannot write.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TextIO

from ..manifest import NotAManifest, compare, constraints, drift_json, dumps, live_manifest, loads
from ..render.manifest import drift_text

__all__ = ["add_manifest_arguments", "cli_against", "cli_manifest"]


def add_manifest_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``cudnn-magic manifest``."""
    parser.add_argument("-o", "--output", metavar="FILE", default=None, help="write the manifest to FILE (default: stdout)")
    parser.add_argument("--constraints", action="store_true",
                        help="print a pip constraints file of the verified versions instead of the manifest")


def cli_manifest(args: argparse.Namespace, out: TextIO) -> int:
    """Write the live manifest (or ``--constraints``) to ``args.output`` (replaced whole, never
    half-written) or ``out``."""
    manifest, _report = live_manifest()
    text = constraints(manifest) if args.constraints else dumps(manifest)
    if args.output in (None, "-"):
        out.write(text)
        return 0
    tmp = f"{args.output}.tmp-{os.getpid()}"
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, args.output)  # never a half-written manifest
    except OSError as exc:
        print(f"cudnn-magic: cannot write {args.output}: {exc.strerror or exc}", file=sys.stderr)
        try:
            os.unlink(tmp)
        except OSError:
            pass
        return 2
    print(f"cudnn-magic: wrote {'constraints' if args.constraints else 'manifest'} {args.output}", file=sys.stderr)
    return 0


def cli_against(args: argparse.Namespace, out: TextIO) -> int:
    """Compare the live stack with the manifest ``args.against``: the drift as text or JSON."""
    try:
        with open(args.against, "rb") as fh:
            saved = loads(fh.read(16 << 20))
    except OSError as exc:
        return _error(args, out, "unreadable", f"cannot read {args.against}: {exc.strerror or exc}")
    except NotAManifest as exc:
        return _error(args, out, "not-a-manifest", f"{args.against} is not a manifest: {exc}")
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
    shape ``check --what-if --json`` prints); exit 2."""
    print(f"cudnn-magic: {message}", file=sys.stderr)
    if args.json:
        json.dump({"error": {"kind": kind, "message": message}}, out, indent=2)
        out.write("\n")
    return 2
