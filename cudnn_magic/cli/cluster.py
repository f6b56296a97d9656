"""``cudnn-magic check --dask ADDRESS`` / ``--ray ADDRESS``: the check on every worker of a Dask
cluster or every node of a Ray cluster (the engines are :mod:`cudnn_magic.engines.cluster` and
:mod:`cudnn_magic.engines.cluster_ray`)."""

from __future__ import annotations

import json
import sys
from typing import TextIO

from ..engines.cluster import ClusterCheckError, cluster_check
from ..engines.cluster_ray import ray_check
from ..model.cluster import ClusterReport

__all__ = ["cli_cluster", "cli_ray"]


def cli_cluster(address: str, timeout: float = 30.0, as_json: bool = False, out: TextIO | None = None) -> int:
    """``cudnn-magic check --dask ADDRESS [--timeout S] [--json]``.

    Writes the table (or ``to_json()``) to ``out`` and returns the exit code: 0 when every
    worker answered without a finding of severity "error", 1 otherwise (see
    :attr:`ClusterReport.exit_code`), 2 when the cluster could not be checked (no Dask,
    unreachable scheduler, bad timeout); the reason then goes to stderr in one line.
    """
    out = out or sys.stdout
    try:
        report = cluster_check(address, timeout=timeout)
    except ClusterCheckError as exc:
        print(f"cudnn-magic: {exc}", file=sys.stderr)
        return 2
    return _emit(report, as_json, out)


def cli_ray(address: str, runtime_env: str | None = None, timeout: float = 30.0, as_json: bool = False,
            out: TextIO | None = None) -> int:
    """``cudnn-magic check --ray ADDRESS [--runtime-env JSON|FILE] [--timeout S] [--json]``.

    Writes the table (or ``to_json()``: one entry per node under ``"nodes"``) to ``out`` and
    returns the exit code: 0 when every node answered without a finding of severity "error", 1
    otherwise, 2 when the cluster could not be checked (no Ray, unreachable cluster, bad runtime
    environment); the reason then goes to stderr in one line.
    """

    out = out or sys.stdout
    try:
        report = ray_check(address, runtime_env=runtime_env, timeout=timeout)
    except ClusterCheckError as exc:
        print(f"cudnn-magic: {exc}", file=sys.stderr)
        return 2
    return _emit(report, as_json, out)


def _emit(report: ClusterReport, as_json: bool, out: TextIO) -> int:
    if as_json:
        json.dump(report.to_json(), out, indent=2, default=str)
    else:
        out.write(report.text())
    out.write("\n")
    return report.exit_code
