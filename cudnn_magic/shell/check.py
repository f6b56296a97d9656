"""``%cudnn_check``: the check report (or a Dask cluster's) in a notebook or terminal IPython.
The engine is :mod:`cudnn_magic.check` (and :mod:`cudnn_magic.cluster` for ``--dask``)."""

from __future__ import annotations

from typing import Any

from IPython.core import magic_arguments
from IPython.core.magic import Magics, line_magic, magics_class

from ..options import timeout_seconds
from .args import parse_magic_line


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
    @magic_arguments.argument("--timeout", type=timeout_seconds, default=30.0,
                              help="with --dask: seconds to wait for each worker (default 30)")
    def cudnn_check(self, line: str = "") -> Any:
        """Show the cuDNN mapped in this kernel, every other copy on disk, each framework's
        compiled-against cuDNN and verdict, the driver and GPUs, and findings with fixes.

        In [1]: %load_ext cudnn_magic
        In [2]: %cudnn_check
        In [3]: report = %cudnn_check --json
        In [4]: %cudnn_check --dask tcp://scheduler:8786
        """
        args = parse_magic_line(self.cudnn_check, line)
        if args.dask:
            # start-up cost: not at %load_ext, only when this runs
            from ..cluster import ClusterCheckError, cluster_check

            target = self.shell.user_ns.get(args.dask, args.dask) if self.shell is not None else args.dask
            if target is args.dask and args.dask.isidentifier():
                print(f"cudnn-magic: no variable {args.dask!r} in this kernel, and {args.dask!r} is not a scheduler "
                      "address: pass a dask.distributed.Client variable or tcp://HOST:8786")
                return None
            try:
                rep = cluster_check(target, timeout=args.timeout)
            except ClusterCheckError as exc:
                print(f"cudnn-magic: {exc}")
                return None
            return rep.to_json() if args.json else rep
        from ..check import run_check  # start-up cost: not at %load_ext, only when this runs
        from ..render.report import ReportView, report_json

        report = run_check(import_frameworks=args.import_frameworks, deep=args.deep)
        if args.json:
            return report_json(report)
        return ReportView(report)
