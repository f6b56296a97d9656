"""argv handling of the prevention commands: ``check --what-if``, ``check --against`` and
``manifest`` (issue 16). :mod:`cudnn_magic.cli` registers the options and dispatches here.

Exit codes: ``check --what-if``: 0 no predicted error, 1 a predicted finding is an error, 2 bad
input (unparsable requirement, unreachable index, pip too old, resolver conflict; one line on
stderr, nothing installed). ``check --against``: 0 nothing that matters changed, 1 drift, 2 the
file is not a manifest. ``manifest``: 0 written, 2 cannot write.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TextIO


def add_check_arguments(parser: argparse.ArgumentParser) -> None:
    """``--what-if`` and ``--against`` for ``cudnn-magic check``."""
    parser.add_argument("--what-if", metavar="REQS", default=None,
                        help="predict what 'pip install REQS' would do to cuDNN (pip's dry run; nothing is installed); "
                             "exit 1 when a predicted finding is an error")
    parser.add_argument("--against", metavar="FILE", default=None,
                        help="compare this stack with a manifest (cudnn-magic manifest -o FILE); exit 1 on drift")


def add_manifest_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``cudnn-magic manifest``."""
    parser.add_argument("-o", "--output", metavar="FILE", default=None, help="write the manifest to FILE (default: stdout)")
    parser.add_argument("--constraints", action="store_true",
                        help="print a pip constraints file of the verified versions instead of the manifest")


def cli_what_if(args: argparse.Namespace, out: TextIO) -> int:
    from .probes.pip_report import PipError, what_if
    from .render.whatif import whatif_json, whatif_text

    result = what_if(args.what_if)
    if isinstance(result, PipError):
        print(f"cudnn-magic: what-if: {result.message}", file=sys.stderr)
        if args.json:
            json.dump({"error": {"kind": result.kind, "message": result.message}}, out, indent=2)
            out.write("\n")
        return 2
    if args.json:
        json.dump(whatif_json(result), out, indent=2)
        out.write("\n")
    else:
        out.write(whatif_text(result))
    return 1 if result.error else 0


def cli_manifest(args: argparse.Namespace, out: TextIO) -> int:
    import os

    from .manifest import constraints, dumps, live_manifest

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
    from .manifest import NotAManifest, compare, drift_json, live_manifest, loads
    from .render.manifest import drift_text

    try:
        with open(args.against, "rb") as fh:
            saved = loads(fh.read(16 << 20))
    except OSError as exc:
        print(f"cudnn-magic: cannot read {args.against}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    except NotAManifest as exc:
        print(f"cudnn-magic: {args.against} is not a manifest: {exc}", file=sys.stderr)
        return 2
    live, _report = live_manifest()
    drift = compare(saved, live)
    if args.json:
        json.dump({"manifest": args.against, "drift": drift_json(drift), "unchanged": not drift}, out, indent=2)
        out.write("\n")
    else:
        out.write(drift_text(drift, args.against, live))
    return 1 if drift else 0
