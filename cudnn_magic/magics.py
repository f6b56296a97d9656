"""IPython connectivity: the magics and the extension's load/unload.

Only this module (and ``annotate``/``ui``) knows IPython. It parses arguments with
``magic_arguments``, calls the engine, and returns result objects that display as HTML in
notebooks and as text in terminals.

Feature modules plug in through two functions each, called here:
``cudnn_magic.annotate.load(ip)/unload(ip)`` (error annotation, ``%cudnn_explain``,
``%cudnn_annotate``) and ``cudnn_magic.ui.memory_panel.load(ip)/unload(ip)`` (``%gpu_memory``),
``cudnn_magic.fix_magics.load(ip)/unload(ip)`` (``%cudnn_fix``).
"""

from __future__ import annotations

import importlib
import logging
from typing import Any

from IPython.core import magic_arguments
from IPython.core.magic import Magics, line_magic, magics_class

from .ui.args import parse_magic_line, timeout_seconds

log = logging.getLogger("cudnn_magic")

# Modules with load(ip)/unload(ip), loaded in this order, unloaded in reverse. crash comes first:
# it reads the previous kernel's record before annotate starts this kernel's capture.
_FEATURES = ("cudnn_magic.crash", "cudnn_magic.annotate", "cudnn_magic.ui.memory_panel", "cudnn_magic.fix_magics",
             "cudnn_magic.prevention_magics")


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
        In [5]: %cudnn_check --what-if "nvidia-cudnn-cu12==9.10.2.21"
        """
        args = parse_magic_line(self.cudnn_check, line)
        if args.what_if is not None or args.against is not None:
            from . import prevention_magics as pm

            return pm.check_what_if(args.what_if, args.json) if args.what_if is not None else pm.check_against(args.against, args.json)
        if args.dask:
            from .cluster import ClusterCheckError, cluster_check

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
        from .check import run_check
        from .render.report import ReportView, report_json

        report = run_check(import_frameworks=args.import_frameworks, deep=args.deep)
        if args.json:
            return report_json(report)
        return ReportView(report)


def load(ip: Any) -> None:
    """Register the magics and every feature module; a feature that fails to load is logged
    and skipped so the others still work."""
    ip.register_magics(CudnnMagics)
    for name in _FEATURES:
        try:
            mod = importlib.import_module(name)
        except ImportError as exc:  # feature not present in this build
            log.debug("cudnn_magic: %s not loaded: %s", name, exc)
            continue
        try:
            mod.load(ip)
        except Exception:  # noqa: BLE001 - never break %load_ext for one feature
            log.exception("cudnn_magic: loading %s failed", name)


def unload(ip: Any) -> None:
    """Undo :func:`load`: stop samplers, restore fd 2 and the exception hook."""
    for name in reversed(_FEATURES):
        try:
            mod = importlib.import_module(name)
        except ImportError:
            continue
        try:
            mod.unload(ip)
        except Exception:  # noqa: BLE001
            log.exception("cudnn_magic: unloading %s failed", name)
    magics = ip.magics_manager.magics
    for kind in ("line", "cell"):
        for name in list(magics.get(kind, {})):
            fn = magics[kind][name]
            owner = getattr(fn, "__self__", None)
            if isinstance(owner, CudnnMagics):
                del magics[kind][name]
    ip.magics_manager.registry.pop("CudnnMagics", None)
