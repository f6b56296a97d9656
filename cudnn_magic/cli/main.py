"""The ``cudnn-magic`` command line (also ``python -m cudnn_magic``): the parser and the dispatch
to one module per subcommand.

Exit codes (README, "Command line"): ``check`` 0 when no finding has severity "error", 1 when one does;
``explain`` 0 when it ran; 2 on a usage or internal error for every command.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, TextIO

from ..util.options import interval_seconds, positive_count, timeout_seconds
from ..util.textout import tolerant_streams
from ..util.version import __version__

if TYPE_CHECKING:  # annotations only
    from ..model import Report

COMMANDS = ("check", "explain", "memory", "fix", "install-startup", "crashes", "manifest")


class _Formatter(argparse.HelpFormatter):
    """argparse's formatter, measuring the terminal with ``os.get_terminal_size`` itself:
    argparse builds one for every ``add_argument`` and would import ``shutil`` (with bz2, lzma
    and zlib) for it, 2 ms of every run."""

    def __init__(self, prog: str, **kw: object) -> None:
        if kw.get("width") is None:
            try:
                cols = int(os.environ.get("COLUMNS", "0")) or os.get_terminal_size(sys.stdout.fileno()).columns
            except (ValueError, OSError, AttributeError):
                cols = 80
            kw["width"] = max(cols, 40) - 2
        super().__init__(prog, **kw)  # type: ignore[arg-type]


def add_fix_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Declare ``cudnn-magic fix`` arguments on a subparser."""
    p.add_argument("fix_id", nargs="?", default=None, help="fix id (docs/ids.md, \"Fix ids\")")
    p.add_argument("--dry-run", action="store_true", help="only show what would happen (default without --yes)")
    p.add_argument("--yes", action="store_true", help="apply it")
    p.add_argument("--undo", action="store_true", help="revert the last application of FIX_ID")
    p.add_argument("--json", action="store_true", help="print the plan or result as JSON")
    p.add_argument("--for", dest="framework", default=None, metavar="FRAMEWORK",
                   help="install-matching-cudnn: this framework's requirement only")
    p.add_argument("--dir", default=None, metavar="DIR", help="remove-shadowing-dir: the directory to take out")
    p.add_argument("--kernel", default=None, metavar="NAME", help="the kernelspec to edit (no running kernel here)")
    return p


def add_manifest_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``cudnn-magic manifest``."""
    parser.add_argument("-o", "--output", metavar="FILE", default=None, help="write the manifest to FILE (default: stdout)")
    parser.add_argument("--constraints", action="store_true",
                        help="print a pip constraints file of the verified versions instead of the manifest")


def add_startup_arguments(p: argparse.ArgumentParser) -> None:
    """The ``install-startup`` subcommand's options (argparse; ``--ipython-dir`` and
    ``--profile-dir`` exclude each other)."""
    p.add_argument("--undo", action="store_true", help="remove the block again")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--ipython-dir", metavar="DIR", default=None,
                       help="write into DIR/profile_default (DIR must exist) instead of this environment's "
                            "sys.prefix/etc/ipython")
    where.add_argument("--profile-dir", metavar="DIR", default=None,
                       help="write into this existing profile directory")


def _parser(command: str | None = None) -> argparse.ArgumentParser:
    """The argument parser. Every subcommand is listed; only ``command``'s options are built
    when it is given (argparse's ``add_argument`` costs a little each); ``None`` builds them
    all (help). No subcommand's module is imported to build it."""
    p = argparse.ArgumentParser(
        prog="cudnn-magic", formatter_class=_Formatter,
        description="Which cuDNN is really loaded, what each framework needs, and why a run failed.",
    )

    p.add_argument("--version", action="version", version=f"cudnn-magic {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    add_parser = sub.add_parser
    sub.add_parser = lambda *a, **kw: add_parser(*a, formatter_class=_Formatter, **kw)  # type: ignore[method-assign]

    def wanted(name: str) -> bool:
        return command is None or command == name

    c = sub.add_parser("check", help="report the cuDNN copies, frameworks, driver and GPUs of this environment")
    if wanted("check"):
        c.add_argument("--json", action="store_true", help="print the JSON report (keys documented in docs/json.md)")
        c.add_argument("--import-frameworks", action="store_true",
                       help="import installed frameworks for exact runtime answers (slow)")
        c.add_argument("--deep", action="store_true",
                       help="load every cuDNN copy a framework could pick in a child process and report what fails")
        where = c.add_mutually_exclusive_group()
        where.add_argument("--dask", metavar="ADDRESS", help="run the check on every worker of this Dask cluster")
        where.add_argument("--ray", metavar="ADDRESS",
                           help="run the check on every alive node of this Ray cluster (auto, ray://HOST:10001, HOST:6379)")
        where.add_argument("--pid", metavar="PID", help="check another running process, read from /proc/PID "
                                                        "(nothing is injected into it)")
        c.add_argument("--runtime-env", metavar="JSON|FILE", default=None,
                       help="with --ray: the job's runtime environment (env_vars, pip, working_dir, ...) as JSON or a "
                            "JSON/YAML file")
        c.add_argument("--timeout", type=timeout_seconds, default=30.0, metavar="SECONDS",
                       help="per-worker (--dask) or per-node (--ray) timeout (default 30)")
        c.add_argument("--load", metavar="PATH", action="append", default=[],
                       help="load this libcudnn first (as a framework would), then check; repeatable")
        # --what-if and --against each answer their own question: together one would be ignored
        pick = c.add_mutually_exclusive_group()
        pick.add_argument("--what-if", metavar="REQS", default=None,
                       help="predict what 'pip install REQS' would do to cuDNN (pip's dry run; nothing is installed); "
                            "exit 1 when a predicted finding is an error")
        pick.add_argument("--against", metavar="FILE", default=None,
                       help="compare this stack with a manifest (cudnn-magic manifest -o FILE); exit 1 on drift")

    e = sub.add_parser("explain", help="explain a cuDNN error from a log, traceback or CI output")
    if wanted("explain"):
        e.add_argument("file", nargs="?", default="-", help="log file to read, or - for standard input (default)")
        e.add_argument("--json", action="store_true", help="print the diagnoses as JSON (keys documented in docs/json.md)")
        e.add_argument("--facts", action="store_true",
                       help="also use this machine's live facts (mapped cuDNN, driver, GPU memory): only for "
                            "logs produced here; logs from CI or another machine are explained from their text")

    m = sub.add_parser("memory", help="GPU memory per GPU and process, via NVML")
    if wanted("memory"):
        m.add_argument("--json", action="store_true", help="print the JSON snapshot (keys documented in docs/json.md)")
        m.add_argument("--watch", type=interval_seconds, metavar="SECONDS", default=None,
                       help="refresh every SECONDS seconds until interrupted")
    f = sub.add_parser("fix", help="preview (default), apply (--yes) or undo (--undo) a fix by its id")
    if wanted("fix"):
        add_fix_arguments(f)
    st = sub.add_parser("install-startup", help="load the extension in every IPython kernel of this "
                                                "environment (--undo to remove)")
    if wanted("install-startup"):
        add_startup_arguments(st)
    cr = sub.add_parser("crashes", help="list the crash records of kernels that died, with their diagnosis")
    if wanted("crashes"):
        cr.add_argument("--json", action="store_true", help="print the records as JSON")
        cr.add_argument("--key", default=None, help="only this record key (connection-file basename, terminal-<tty>)")
        which = cr.add_mutually_exclusive_group()
        which.add_argument("--last", type=positive_count, metavar="N", default=None,
                           help="the newest N records (default 5): the newest in full, one line for each other")
        which.add_argument("--all", action="store_true", help="every record (the newest in full, one line each other)")
    mf = sub.add_parser("manifest", help="write the verified GPU stack as a JSON manifest (or --constraints for pip)")
    if wanted("manifest"):
        add_manifest_arguments(mf)
    return p


def _subparser(parser: argparse.ArgumentParser, command: str | None) -> argparse.ArgumentParser | None:
    """The subparser of ``command`` (argparse keeps them in its subparsers action's ``choices``)."""
    for action in parser._actions:  # argparse has no public accessor for its subparsers
        if isinstance(action, argparse._SubParsersAction) and command in action.choices:
            return action.choices[command]  # type: ignore[no-any-return]
    return None


def _command_of(argv: Sequence[str]) -> str | None:
    """The subcommand ``argv`` names (its first word that is not an option), when it is one of
    :data:`COMMANDS`; else None (then every parser is built, for help and error messages)."""
    for a in argv:
        if a == "--":
            return None
        if not a.startswith("-"):
            return a if a in COMMANDS else None
    return None


def _as_python_would() -> None:
    """Make ``sys.path`` the one the user's own ``python`` (a script run from here, ``python -c``, a
    Jupyter kernel) starts with: the ``cudnn-magic`` console script's first entry is its own
    ``bin/`` folder, where every program the report speaks of has the working directory (PyTorch
    preloads a ``./nvidia/cudnn/lib`` from it). ``python -m cudnn_magic`` already has it."""
    if sys.argv and sys.path:
        script_dir = os.path.dirname(os.path.realpath(sys.argv[0]))
        first = sys.path[0]
        if first and os.path.realpath(first) == script_dir and os.path.basename(sys.argv[0]).startswith("cudnn-magic"):
            sys.path[0] = os.getcwd()


def _live_report() -> Report:
    """This machine's check report, for ``explain --facts``."""
    from ..engines.check import run_check  # the probes load only for --facts

    return run_check()


def _check(args: argparse.Namespace, out: TextIO) -> int:
    """``check`` and the questions its options ask instead, each module imported only when asked:
    ``--what-if`` (pip's report and the what-if engine), ``--against`` (the manifest), ``--dask``
    and ``--ray`` (the cluster code), ``--pid`` (another process), else the report."""
    if args.what_if is not None:
        from .whatif import cli_what_if  # each subcommand imports only its own module

        return cli_what_if(args, out)
    if args.against is not None:
        from .manifest import cli_against  # each subcommand imports only its own module

        return cli_against(args, out)
    for flag, value, example in (("--dask", args.dask, "tcp://HOST:8786"),
                                 ("--ray", args.ray, "auto, ray://HOST:10001, HOST:6379")):
        if value is not None and not value.strip():  # `--ray ""` (an unset shell variable) was the plain check
            print(f"cudnn-magic: {flag} needs the cluster's address ({example})", file=sys.stderr)
            return 2
    if args.dask:
        from .cluster import cli_cluster  # each subcommand imports only its own module

        return cli_cluster(args.dask, timeout=args.timeout, as_json=args.json, out=out)
    if args.ray:
        from .cluster import cli_ray  # each subcommand imports only its own module

        return cli_ray(args.ray, runtime_env=args.runtime_env, timeout=args.timeout, as_json=args.json, out=out)
    if args.runtime_env is not None:
        print("cudnn-magic: --runtime-env goes with --ray", file=sys.stderr)
        return 2
    if args.pid is not None:
        from .process import cli_process  # each subcommand imports only its own module

        return cli_process(args.pid, as_json=args.json, out=out)
    from .check import cli_check  # each subcommand imports only its own module

    return cli_check(args, out)


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    """Run the command line; returns the exit code (see module docstring). What ``out`` and
    ``sys.stderr`` cannot encode (``PYTHONIOENCODING=ascii``, ``LC_ALL=C``) is written as Python
    escapes (:mod:`cudnn_magic.util.textout`), never an error."""
    out = out or sys.stdout
    with tolerant_streams(out, sys.stdout, sys.stderr):
        return _main(argv, out)


def _did_you_mean(word: str, choices: Sequence[str]) -> str:
    """`` (did you mean --json?)`` for the choice closest to a mistyped ``word`` (difflib's ratio at
    least 0.6, as argparse's own ``suggest_on_error`` of Python 3.14 uses), else ""."""
    import difflib  # only for a mistyped command line

    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


def _mistyped_command(argv: Sequence[str]) -> str | None:
    """The first word of ``argv`` that is not an option when it is no subcommand (``chek``), else None."""
    for a in argv:
        if a == "--" or a in ("-h", "--help", "--version"):
            return None
        if not a.startswith("-"):
            return None if a in COMMANDS else a
    return None


def _main(argv: Sequence[str] | None, out: TextIO) -> int:
    argv = list(argv) if argv is not None else sys.argv[1:]
    parser = _parser(_command_of(argv))
    try:
        word = _mistyped_command(argv)
        if word is not None and (hint := _did_you_mean(word, COMMANDS)):
            parser.error(f"argument COMMAND: invalid choice: {word!r}{hint}")
        args, extra = parser.parse_known_args(argv)
        if extra:  # the subcommand's usage, not the top level's (`check --jsn`)
            sub = _subparser(parser, getattr(args, "command", None))
            flags = [s for action in (sub or parser)._actions for s in action.option_strings]
            first = next((e.split("=", 1)[0] for e in extra if e.startswith("--")), None)
            hint = _did_you_mean(first, flags) if first else ""
            (sub or parser).error(f"unrecognized arguments: {' '.join(extra)}{hint}")
    except SystemExit as exc:  # argparse already printed the usage message
        return 0 if exc.code == 0 else 2
    if args.command is None:
        parser.print_help(out)
        return 2
    _as_python_would()
    try:
        if args.command == "check":
            return _check(args, out)
        if args.command == "explain":
            from .explain import cli_explain  # each subcommand imports only its own module

            return cli_explain(args, out, live_report=_live_report)
        if args.command == "memory":
            from .memory import cli_memory  # each subcommand imports only its own module

            return cli_memory(as_json=args.json, watch=args.watch, out=out)
        if args.command == "fix":
            from .fix import cli_fix  # each subcommand imports only its own module

            return cli_fix(args, out)
        if args.command == "install-startup":
            from .startup import cli_install_startup  # each subcommand imports only its own module

            return cli_install_startup(args, out)
        if args.command == "crashes":
            from .crashes import DEFAULT_LAST, cli_crashes  # each subcommand imports only its own module

            last = None if args.all else args.last or DEFAULT_LAST
            return cli_crashes(as_json=args.json, out=out, key=args.key, last=last)
        if args.command == "manifest":
            from .manifest import cli_manifest  # each subcommand imports only its own module

            return cli_manifest(args, out)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # noqa: BLE001 - a CLI reports, it does not dump a traceback
        print(f"cudnn-magic: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    parser.print_help(out)
    return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
