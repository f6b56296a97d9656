"""The same probes on every worker of a Dask cluster: one row per worker, differences marked.

``%cudnn_check --dask ADDRESS``, ``cudnn-magic check --dask ADDRESS`` and
``cudnn_magic.engines.cluster.cluster_check(client)`` run :func:`worker_probe` on every worker through
Dask's ``Client.run`` (an out-of-band call executed in each worker's event loop, not a task, so
a worker whose task threads are all busy still answers). Each worker is asked separately and
concurrently, so a worker that hangs or dies costs at most ``timeout`` seconds and never holds
back the others' answers.

What crosses the wire is the plain JSON dict of :func:`~cudnn_magic.render.report.report_json`
(plus host, pid and ``LD_LIBRARY_PATH``), never pickled objects of our classes, so a worker
running another cudnn-magic version still answers in the contract's shape. The probe imports no
framework (``run_check(import_frameworks=False)``).

Dask is optional (``pip install 'cudnn-magic[dask]'``); this module imports ``distributed``
only inside :func:`cluster_check`. Sources: ``distributed.Client.run`` (``workers=``,
``on_error='return'``, and the ``asynchronous=`` keyword every Client method accepts), and
``distributed.worker.run`` (a plain function runs in the worker's event loop thread).
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
import time
from collections.abc import Sequence
from typing import Any

from ..model.cluster import ClusterReport, Status, WorkerRow
from ..probes.loader import environ_at_start
from ..render.report import report_json
from ..util.version import __version__
from .check import run_check

INSTALL_HINT = "pip install 'cudnn-magic[dask]'"


class ClusterCheckError(Exception):
    """The cluster could not be checked at all (bad input, scheduler unreachable, no Dask).

    The message is one plain sentence meant to be shown as is (the magic prints it on one
    line; the CLI writes it to stderr and exits 2).
    """


class ClusterInputError(ClusterCheckError):
    """The input names no cluster that can be asked, before anything is connected to: an address
    of the wrong form, a port no port can be, a timeout that is no number of seconds above 0, a
    runtime environment that is not one (or that Ray refused), an object that is no synchronous
    ``Client``. The magic raises IPython's ``UsageError`` for these (the cell fails); the other
    :class:`ClusterCheckError` cases (no Dask or Ray here, nothing answering, a cluster gone
    mid-check) are said in one line and the cell goes on. The command line exits 2 for both."""


class DaskNotInstalledError(ClusterCheckError, ImportError):
    """``distributed`` is not importable here; the message says what to install."""


# --------------------------------------------------------------------------------------------
# On the worker
# --------------------------------------------------------------------------------------------


def worker_probe() -> dict[str, Any]:
    """Run on one worker: the ``check`` report of that worker process, as plain JSON data.

    The same probes as ``%cudnn_check`` (:func:`cudnn_magic.engines.check.run_check`, no framework
    imported), serialised with :func:`cudnn_magic.render.report.report_json`, plus
    ``host`` (``socket.gethostname()``), ``pid``, ``python`` (``sys.executable``),
    ``cudnn_magic_version``, ``ld_library_path`` (``os.environ`` now) and
    ``ld_library_path_at_start`` (from ``/proc/self/environ``: what the dynamic loader uses;
    None when unreadable).

    Never raises: on failure it returns ``{"error": "<type>: <message>", ...}`` with the same
    identification keys.
    """

    start = environ_at_start()
    out: dict[str, Any] = {
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "python": sys.executable,
        "ld_library_path": os.environ.get("LD_LIBRARY_PATH"),
        "ld_library_path_at_start": None if start is None else start.get("LD_LIBRARY_PATH"),
        "environ_at_start_read": start is not None,
    }
    try:
        out["cudnn_magic_version"] = __version__
        report: dict[str, Any] = report_json(run_check(import_frameworks=False, deep=False))
        # Round-trip through JSON: whatever reaches the client is plain data, nothing pickled
        # of ours (tuples become lists, exactly as --json would print them).
        report = json.loads(json.dumps(report, default=str))
    except Exception as exc:  # noqa: BLE001 - a probe on a worker never raises
        out["error"] = f"{type(exc).__name__}: {exc}"
        return out
    report.update(out)
    return report


# --------------------------------------------------------------------------------------------
# On the client
# --------------------------------------------------------------------------------------------


def _import_distributed() -> Any:
    try:
        import distributed  # optional dependency (cudnn-magic[dask]), imported only to reach a cluster
    except ImportError as exc:
        raise DaskNotInstalledError(
            f"Checking a Dask cluster needs dask.distributed, which is not installed here "
            f"({exc}): {INSTALL_HINT}"
        ) from None
    return distributed


def _reason_for(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".rstrip(": ")
    if type(exc).__name__ in ("CommClosedError", "StreamClosedError") or isinstance(exc, (ConnectionError, EOFError)):
        return f"the connection to the worker closed during the probe (the worker died or was killed?): {text}"
    if isinstance(exc, ImportError) and "cudnn_magic" in str(exc):
        text += " (install cudnn-magic in the workers' environment)"
    return text


async def _probe_workers(client: Any, addresses: Sequence[str], timeout: float) -> list[tuple[str, Status, Any, float]]:
    """Ask each worker separately and concurrently; runs on the client's event loop."""

    async def one(addr: str) -> tuple[str, Status, Any, float]:
        t0 = time.monotonic()
        try:
            answers = await asyncio.wait_for(
                client.run(worker_probe, workers=[addr], on_error="return", asynchronous=True), timeout)
        except (asyncio.TimeoutError, TimeoutError):
            return (addr, "timeout", f"no answer within {timeout:g} s (worker hung, busy in its event loop, or unreachable)",
                    time.monotonic() - t0)
        except Exception as exc:  # noqa: BLE001 - one worker's failure is that worker's row
            return addr, "error", _reason_for(exc), time.monotonic() - t0
        dt = time.monotonic() - t0
        if addr not in answers:
            return addr, "error", "the worker left the cluster before it answered", dt
        ans = answers[addr]
        if isinstance(ans, BaseException):
            return addr, "error", _reason_for(ans), dt
        if not isinstance(ans, dict):
            return addr, "error", f"unexpected answer of type {type(ans).__name__}", dt
        if ans.get("error"):
            return addr, "error", f"the probe failed on the worker: {ans['error']}", dt
        return addr, "ok", ans, dt

    return list(await asyncio.gather(*(one(a) for a in addresses)))


def _check_address(address: str) -> None:
    """Refuse an address ``distributed`` cannot parse BEFORE a ``Client`` is built: a Client
    whose start fails on a malformed address hangs 60 s in its ``__del__`` at exit and prints
    ``Exception ignored in ... TimeoutError`` (distributed 2024-2026). Addresses of schemes
    without host and port (``inproc://``, ``ucx://``) are left to the Client. Source:
    ``distributed.comm.get_address_host_port``."""
    try:
        # optional dependency (cudnn-magic[dask]), imported only to reach a cluster
        from distributed.comm.addressing import get_address_host_port
    except ImportError:
        return
    try:
        get_address_host_port(address)
    except ValueError as exc:
        if "don't know how to extract" in str(exc):
            return
        raise ClusterInputError(
            f"{address!r} is not a Dask scheduler address ({exc}): give tcp://HOST:PORT, e.g. tcp://10.0.0.5:8786, "
            "or in a notebook the name of a dask.distributed.Client variable") from None
    except Exception:  # noqa: BLE001 - unknown scheme etc.: the Client says what is wrong
        return


def cluster_check(client_or_address: Any, timeout: float = 30.0) -> ClusterReport:
    """Run :func:`worker_probe` on every worker of a Dask cluster and return the table.

    Args:
        client_or_address: a synchronous ``dask.distributed.Client``, a scheduler address
            (``"tcp://10.0.0.5:8786"``; a Client is created and closed here), or a cluster
            object with ``scheduler_address`` (``LocalCluster``).
        timeout: seconds to wait for each worker (all are asked at once, so the whole check
            takes about this long at most); also the connection timeout for an address.

    Returns:
        A :class:`ClusterReport`: workers that hang are marked "timeout", workers that fail the
        probe or die during it "error", each with the reason; the others are reported as usual.

    Raises:
        DaskNotInstalledError: ``distributed`` is not installed (says ``pip install
            'cudnn-magic[dask]'``).
        ClusterInputError: bad input (a :class:`ClusterCheckError`). The message is one plain
            sentence.
        ClusterCheckError: the scheduler cannot be reached, or the cluster went away mid-check.
            The message is one plain sentence.
    """
    try:
        timeout = float(timeout)
    except (TypeError, ValueError):
        raise ClusterInputError(f"timeout must be a number of seconds, got {timeout!r}") from None
    if not timeout > 0:
        raise ClusterInputError(f"timeout must be more than 0 seconds, got {timeout:g}")
    distributed = _import_distributed()
    t0 = time.monotonic()
    own = False
    client = client_or_address
    if not isinstance(client, distributed.Client):
        address = getattr(client, "scheduler_address", client)
        if not isinstance(address, str) or not address.strip():
            raise ClusterInputError(
                f"expected a dask.distributed.Client or a scheduler address like tcp://HOST:8786, "
                f"got {type(client_or_address).__name__}")
        address = address.strip()
        _check_address(address)
        try:
            client = distributed.Client(address, timeout=timeout, set_as_default=False)
        except (OSError, TimeoutError, asyncio.TimeoutError) as exc:
            raise ClusterCheckError(
                f"could not connect to the Dask scheduler at {address} within {timeout:g} s: "
                f"{type(exc).__name__}: {exc}") from None
        except Exception as exc:  # noqa: BLE001 - anything else: one line, and no false "within N s"
            raise ClusterCheckError(
                f"could not connect to the Dask scheduler at {address}: {type(exc).__name__}: {exc}") from None
        own = True
    try:
        if client.asynchronous:
            raise ClusterInputError("cluster_check needs a synchronous Client (this one is asynchronous=True)")
        if getattr(client, "status", "running") not in ("running", "connecting", "newly-created"):
            raise ClusterCheckError(f"the Dask client is not connected (status {client.status!r})")
        try:
            info = client.scheduler_info(n_workers=-1)
        except TypeError:  # distributed < 2025: no n_workers argument, lists every worker
            info = client.scheduler_info()
        workers = info.get("workers") or {}
        addresses = sorted(workers)
        answers = client.sync(_probe_workers, client, addresses, timeout, callback_timeout=timeout + 10)
    except ClusterCheckError:
        raise
    except Exception as exc:  # noqa: BLE001 - scheduler gone mid-check, client closed: one line
        raise ClusterCheckError(f"checking the Dask cluster failed: {type(exc).__name__}: {exc}") from None
    else:
        rows = []
        for addr, status, payload, dt in answers:
            name = workers.get(addr, {}).get("name")
            name = None if name is None else str(name)
            if status == "ok":
                rows.append(WorkerRow(addr, name, "ok", None, payload, dt))
            else:
                rows.append(WorkerRow(addr, name, status, str(payload), {}, dt))
        return ClusterReport(rows, timeout, info.get("address") or None, time.monotonic() - t0)
    finally:
        if own:
            try:
                client.close(timeout=5)
            except Exception:  # noqa: BLE001
                pass


