"""``%cudnn_check``: the check report (or a Dask or Ray cluster's) in a notebook or terminal
IPython; registered on first use (:mod:`.extension`). The engine is
:mod:`cudnn_magic.engines.check` (and :mod:`cudnn_magic.engines.cluster` for ``--dask``,
:mod:`cudnn_magic.engines.cluster_ray` for ``--ray``; :func:`cudnn_magic.engines.whatif.what_if`
for ``--what-if``; :mod:`cudnn_magic.engines.manifest` for ``--against``)."""

from __future__ import annotations

from typing import Any

from IPython.core import magic_arguments
from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_magic, magics_class

from ..engines.check import run_check
from ..engines.cluster import ClusterCheckError, ClusterInputError, cluster_check
from ..engines.cluster_ray import ray_check
from ..engines.manifest import NotAManifest, compare, drift_json, live_manifest, read_error, read_manifest
from ..engines.whatif import what_if
from ..probes.pip_report import PipError
from ..render.manifest import DriftView
from ..render.report import ReportView, report_json
from ..render.whatif import WhatIfView, whatif_json
from ..util.options import timeout_seconds
from .args import parse_magic_line, usage_error
from .magics import register, unregister


@magics_class
class CudnnMagics(Magics):
    """``%cudnn_check``: which cuDNN this kernel really loaded, against what each framework needs."""

    @line_magic
    @magic_arguments.magic_arguments()
    @magic_arguments.argument("--json", action="store_true", help="return the report as JSON (a dict) instead of a table")
    @magic_arguments.argument(
        "--import-frameworks", action="store_true",
        help="import installed frameworks (TensorFlow, PyTorch, JAX, CuPy) for exact runtime answers; slow",
    )
    @magic_arguments.argument(
        "--deep", action="store_true",
        help="load every cuDNN copy a framework could pick, in a child process, and report what fails to load",
    )
    @magic_arguments.argument("--dask", metavar="ADDRESS", default=None,
                              help="check every worker of the Dask cluster at ADDRESS (tcp://HOST:8786), or a Client variable")
    @magic_arguments.argument("--ray", metavar="ADDRESS", nargs="?", const="", default=None,
                              help="check every alive node of a Ray cluster: the one this kernel is connected to, "
                                   "else ADDRESS (auto, ray://HOST:10001, HOST:6379)")
    @magic_arguments.argument("--runtime-env", metavar="JSON|FILE", default=None,
                              help="with --ray: the job's runtime environment (JSON, or a JSON/YAML file)")
    @magic_arguments.argument("--timeout", type=timeout_seconds, default=30.0,
                              help="with --dask or --ray: seconds to wait for each worker or node (default 30)")
    @magic_arguments.argument("--what-if", metavar="REQS", default=None,
                              help="predict what 'pip install REQS' would do to cuDNN (pip's dry run; installs nothing)")
    @magic_arguments.argument("--against", metavar="FILE", default=None,
                              help="compare this stack with a manifest written by 'cudnn-magic manifest'")
    def cudnn_check(self, line: str = "") -> Any:
        """Show the cuDNN mapped in this kernel, every other copy on disk, each framework's
        compiled-against cuDNN and verdict, the driver and GPUs, and findings with fixes.

        In [1]: %load_ext cudnn_magic
        In [2]: %cudnn_check
        In [3]: report = %cudnn_check --json
        In [4]: %cudnn_check --dask tcp://scheduler:8786
        In [5]: %cudnn_check --ray          # the Ray cluster this kernel is connected to (ray.init)
        In [6]: %cudnn_check --what-if "nvidia-cudnn-cu12==9.10.2.21"
        """
        args = parse_magic_line(self.cudnn_check, line)
        if args.what_if is not None and args.against is not None:
            raise UsageError("--what-if and --against cannot be combined: each answers its own question")
        if args.what_if is not None:
            return check_what_if(args.what_if, args.json)
        if args.against is not None:
            return check_against(args.against, args.json)
        if args.dask and args.ray is not None:
            raise UsageError("--dask and --ray cannot be combined: check one cluster at a time")
        if args.runtime_env is not None and args.ray is None:
            raise UsageError("--runtime-env goes with --ray")
        if args.ray is not None:
            try:
                rep = ray_check(_unquote(args.ray) or None, runtime_env=_unquote(args.runtime_env or "") or None,
                                timeout=args.timeout)
            except ClusterCheckError as exc:
                _cluster_unchecked(exc)
                return None
            return rep.to_json() if args.json else rep
        if args.dask is not None:
            name = _unquote(args.dask)
            if not name:
                raise UsageError("--dask needs the cluster's address (tcp://HOST:8786) or a Client variable")
            target = self.shell.user_ns.get(name, name) if self.shell is not None else name
            if target is name and name.isidentifier():
                raise usage_error(f"no variable {name!r} in this kernel, and {name!r} is not a scheduler "
                                  "address: pass a dask.distributed.Client variable or tcp://HOST:8786")
            try:
                rep = cluster_check(target, timeout=args.timeout)
            except ClusterCheckError as exc:
                _cluster_unchecked(exc)
                return None
            return rep.to_json() if args.json else rep

        report = run_check(import_frameworks=args.import_frameworks, deep=args.deep)
        if args.json:
            return report_json(report)
        return ReportView(report)


def _cluster_unchecked(exc: ClusterCheckError) -> None:
    """A cluster that could not be checked: bad input (:class:`ClusterInputError`) fails the cell
    with a ``UsageError``; anything else (no Dask or Ray here, nothing answering, the cluster gone
    mid-check) is one printed line, and the cell goes on (returns None)."""
    if isinstance(exc, ClusterInputError):
        raise usage_error(str(exc)) from None
    print(f"cudnn-magic: {exc}")


def _unquote(text: str) -> str:
    """IPython's ``magic_arguments`` keeps the quotes around a quoted value; drop one pair."""
    t = text.strip()
    return t[1:-1] if len(t) >= 2 and t[0] == t[-1] and t[0] in "'\"" else t


def check_what_if(requirements: str, as_json: bool) -> Any:
    """``%cudnn_check --what-if REQS``: the prediction (a :class:`~cudnn_magic.render.whatif.WhatIfView`),
    or its JSON (a dict). Nothing is installed.

    Raises:
        UsageError: the words cannot be a what-if (:attr:`PipError.bad_input`: a requirement that
            does not parse, an option a what-if does not pass, one that needs a build); one line,
            ``what-if: ...``, also with ``--json``.

    When pip answered that nothing can be installed (a conflict, no matching release) or could not
    answer (the index unreachable, pip too old or failing), one line is printed and None returned
    (with ``--json``, ``{"error": {"kind", "message"}}``): a finding about the environment, not the
    input."""

    result = what_if(_unquote(requirements))
    if isinstance(result, PipError):
        if result.bad_input:
            raise usage_error(f"what-if: {result.message}")
        print(f"cudnn-magic: what-if: {result.message}")
        return {"error": {"kind": result.kind, "message": result.message}} if as_json else None
    return whatif_json(result) if as_json else WhatIfView(result)


def check_against(path: str, as_json: bool) -> Any:
    """``%cudnn_check --against FILE``: the drift (a :class:`~cudnn_magic.render.manifest.DriftView`,
    or with ``as_json`` ``{"manifest", "drift", "unchanged"}``).

    Raises:
        UsageError: the file cannot be read (missing, not readable, not a regular file: a FIFO
            never blocks the kernel) or is not a manifest (also: a field of the wrong type); one
            line, also with ``--json``."""

    path = _unquote(path)
    try:
        saved = read_manifest(path)
    except (OSError, NotAManifest) as exc:
        raise usage_error(read_error(path, exc)[1]) from None
    live, _ = live_manifest()
    drift = compare(saved, live)
    if as_json:
        return {"manifest": path, "drift": drift_json(drift), "unchanged": not drift}
    return DriftView(drift, path, live)


def load_ipython_extension(ip: Any) -> None:
    """Register ``%cudnn_check`` (IPython loads this module on its first use: :mod:`.extension`
    declares it lazily)."""
    register(ip, CudnnMagics)


def unload(ip: Any) -> None:
    """Remove ``%cudnn_check``."""
    unregister(ip, CudnnMagics)
