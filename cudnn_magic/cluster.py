"""The same probes on every worker of a Dask cluster: one row per worker, differences marked.

``%cudnn_check --dask ADDRESS``, ``cudnn-magic check --dask ADDRESS`` and
``cudnn_magic.cluster.cluster_check(client)`` run :func:`worker_probe` on every worker through
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
import html
import json
import os
import socket
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal, Sequence

Status = Literal["ok", "timeout", "error"]

INSTALL_HINT = "pip install 'cudnn-magic[dask]'"

# Columns of the table: (key, label). Framework columns ("framework:NAME") are added per report.
_BASE_COLUMNS: tuple[tuple[str, str], ...] = (
    ("gpus", "GPUs"),
    ("driver", "driver"),
    ("cudnn_mapped", "cuDNN mapped"),
    ("cudnn_installed", "cuDNN installed"),
)
_TAIL_COLUMNS: tuple[tuple[str, str], ...] = (
    ("findings", "findings"),
    ("ld_library_path", "LD_LIBRARY_PATH"),
)


class ClusterCheckError(Exception):
    """The cluster could not be checked at all (bad input, scheduler unreachable, no Dask).

    The message is one plain sentence meant to be shown as is (the magic prints it on one
    line; the CLI writes it to stderr and exits 2).
    """


class DaskNotInstalledError(ClusterCheckError, ImportError):
    """``distributed`` is not importable here; the message says what to install."""


# --------------------------------------------------------------------------------------------
# On the worker
# --------------------------------------------------------------------------------------------


def worker_probe() -> dict[str, Any]:
    """Run on one worker: the ``check`` report of that worker process, as plain JSON data.

    The same probes as ``%cudnn_check`` (:func:`cudnn_magic.check.run_check`, no framework
    imported), serialised with :func:`cudnn_magic.render.report.report_json`, plus
    ``host`` (``socket.gethostname()``), ``pid``, ``python`` (``sys.executable``),
    ``cudnn_magic_version``, ``ld_library_path`` (``os.environ`` now) and
    ``ld_library_path_at_start`` (from ``/proc/self/environ``: what the dynamic loader uses;
    None when unreadable).

    Never raises: on failure it returns ``{"error": "<type>: <message>", ...}`` with the same
    identification keys.
    """
    from .probes.installed import environ_at_start

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
        from . import __version__
        from .check import run_check
        from .render.report import report_json

        out["cudnn_magic_version"] = __version__
        report = report_json(run_check(import_frameworks=False, deep=False))
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
        import distributed
    except ImportError as exc:
        raise DaskNotInstalledError(
            f"Checking a Dask cluster needs dask.distributed, which is not installed here "
            f"({exc}): {INSTALL_HINT}"
        ) from None
    return distributed


@dataclass
class WorkerRow:
    """One worker's answer (or why there is none).

    Attributes:
        address: the worker's address as the scheduler knows it (``tcp://10.0.0.5:39211``).
        name: the worker's name (``dask worker --name``), or None.
        status: "ok" (the probe answered), "timeout" (no answer within the timeout) or
            "error" (the worker failed the probe, died, or left the cluster).
        reason: why the status is not "ok", in plain words; None when ok.
        data: the :func:`worker_probe` dict (the ``check`` JSON plus host, pid,
            ``LD_LIBRARY_PATH``); empty when the worker did not answer.
        elapsed_s: seconds from sending the probe to the answer (or to giving up).
    """

    address: str
    name: str | None = None
    status: Status = "ok"
    reason: str | None = None
    data: dict[str, Any] = field(default_factory=dict)
    elapsed_s: float = 0.0

    @property
    def answered(self) -> bool:
        return self.status == "ok"

    @property
    def host(self) -> str:
        return str(self.data.get("host") or _host_of(self.address))

    @property
    def has_error_finding(self) -> bool:
        return any(f.get("severity") == "error" for f in self.data.get("findings") or [])

    def cell(self, key: str) -> str:
        """The display value of column ``key`` (see :meth:`ClusterReport.columns`)."""
        if not self.answered:
            return "-"
        d = self.data
        if key == "gpus":
            return ", ".join(str(g.get("name")) for g in d.get("gpus") or []) or "none"
        if key == "driver":
            drv = d.get("driver")
            if isinstance(drv, dict) and drv.get("version"):
                return str(drv["version"])
            return "unavailable" if d.get("driver_unavailable") else "none"
        if key == "cudnn_mapped":
            mains = [c for c in d.get("cudnn_loaded") or [] if c.get("main")]
            return "; ".join(f"{c.get('version') or '?'} {_short(c.get('path'))}" for c in mains) or "none"
        if key == "cudnn_installed":
            vs = sorted({str(c.get("version") or "?") for c in d.get("cudnn_installed") or [] if c.get("main")},
                        key=_version_key)
            return ", ".join(vs) or "none"
        if key.startswith("framework:"):
            name = key.split(":", 1)[1]
            for f in d.get("frameworks") or []:
                if f.get("name") == name:
                    used = f" (cuDNN {f['cudnn_used']})" if f.get("cudnn_used") else ""
                    return f"{f.get('verdict')}{used}"
            return "not installed"
        if key == "findings":
            ids = sorted({f"{f.get('severity')}:{f.get('id')}" for f in d.get("findings") or []},
                         key=lambda s: (_SEV_ORDER.get(s.split(":", 1)[0], 9), s))
            return ", ".join(ids) or "none"
        if key == "ld_library_path":
            now = d.get("ld_library_path")
            text = _short_pathlist(now) if now else "(unset)"
            start = d.get("ld_library_path_at_start")
            if d.get("environ_at_start_read") and (start or "") != (now or ""):
                text += f" (set after start; the loader uses {_short_pathlist(start) if start else '(unset)'})"
            return text
        raise KeyError(key)

    def env_note(self) -> str | None:
        """A note when ``LD_LIBRARY_PATH`` changed after the worker started (the loader still
        uses the start value), else None."""
        if not self.answered or not self.data.get("environ_at_start_read"):
            return None
        start, now = self.data.get("ld_library_path_at_start"), self.data.get("ld_library_path")
        if (start or "") != (now or ""):
            return (f"LD_LIBRARY_PATH was changed after the worker process started ({start or '(unset)'} at start, "
                    f"{now or '(unset)'} now); the dynamic loader uses the value at start. Set it before the worker "
                    f"starts (the shell or job script that runs `dask worker`), not with Nanny(env=...).")
        return None


_SEV_ORDER = {"error": 0, "warning": 1, "info": 2}


def _version_key(v: str) -> tuple:
    return tuple(int(p) if p.isdigit() else -1 for p in v.split("."))


def _short(p: Any) -> str:
    if not p:
        return "?"
    from .render.report import short_path

    return short_path(str(p))


def _short_pathlist(v: str) -> str:
    return os.pathsep.join(_short(p) if p else p for p in v.split(os.pathsep))


def _host_of(address: str) -> str:
    rest = address.split("://", 1)[-1]
    return rest.rsplit(":", 1)[0] if ":" in rest else rest


@dataclass
class ClusterReport:
    """Every worker's ``check`` report side by side.

    Attributes:
        workers: one :class:`WorkerRow` per worker the scheduler knew when the check began,
            sorted by address.
        timeout_s: the per-worker timeout used, in seconds.
        scheduler: the scheduler's address, when known.
        elapsed_s: wall time of the whole check, in seconds.
    """

    workers: list[WorkerRow] = field(default_factory=list)
    timeout_s: float = 30.0
    scheduler: str | None = None
    elapsed_s: float = 0.0

    # -- table model ---------------------------------------------------------------------------

    def columns(self) -> list[tuple[str, str]]:
        """Compared columns as ``(key, label)``: GPUs, driver, mapped and installed cuDNN, one
        per framework seen on any worker (``framework:NAME``), findings, LD_LIBRARY_PATH."""
        names: list[str] = []
        for w in self.workers:
            for f in w.data.get("frameworks") or []:
                if f.get("name") and f["name"] not in names:
                    names.append(f["name"])
        return list(_BASE_COLUMNS) + [(f"framework:{n}", n) for n in names] + list(_TAIL_COLUMNS)

    def majority_diff(self) -> dict[str, dict[str, Any]]:
        """Per column, the majority value among workers that answered and who differs from it.

        Returns ``{column_key: {"majority": value or None, "differs": {address: value}}}`` for
        columns where not every answering worker has the same value. ``majority`` is the value
        held by more than half of the answering workers; when none is (e.g. 2 against 2), it is
        None and every answering worker is listed, since there is no reference to compare with.
        Workers that did not answer are not compared (their status says why).
        """
        rows = [w for w in self.workers if w.answered]
        out: dict[str, dict[str, Any]] = {}
        for key, _label in self.columns():
            values = {w.address: w.cell(key) for w in rows}
            counts = Counter(values.values())
            if len(counts) <= 1:
                continue
            top, n = counts.most_common(1)[0]
            majority = top if n * 2 > len(rows) else None
            out[key] = {"majority": majority,
                        "differs": {a: v for a, v in values.items() if majority is None or v != majority}}
        return out

    @property
    def failed(self) -> list[WorkerRow]:
        """Workers that timed out or failed the probe."""
        return [w for w in self.workers if not w.answered]

    @property
    def exit_code(self) -> int:
        """1 when a worker failed, timed out, or has a finding of severity "error" (or the
        cluster has no workers); else 0. Same meaning as ``cudnn-magic check``."""
        if not self.workers or self.failed or any(w.has_error_finding for w in self.workers):
            return 1
        return 0

    # -- JSON ----------------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        """``{"workers": [...], "differences": {...}, "timeout_s", "scheduler", "elapsed_s"}``.

        Each worker entry is its ``check`` JSON (DESIGN.md contract, as :func:`worker_probe`
        returned it) plus ``address``, ``name``, ``status`` ("ok"/"timeout"/"error"), ``reason``
        and ``probe_s`` (seconds). ``differences`` is :meth:`majority_diff` keyed by column key.
        """
        workers = []
        for w in self.workers:
            entry = dict(w.data)
            entry.update(address=w.address, name=w.name, status=w.status, reason=w.reason,
                         probe_s=round(w.elapsed_s, 4))
            workers.append(entry)
        return {"scheduler": self.scheduler, "timeout_s": self.timeout_s, "elapsed_s": round(self.elapsed_s, 4),
                "workers": workers, "differences": self.majority_diff()}

    # -- text ----------------------------------------------------------------------------------

    def summary_line(self) -> str:
        n = len(self.workers)
        ok = sum(1 for w in self.workers if w.answered)
        diff = self.majority_diff()
        odd = {a for d in diff.values() for a in d["differs"]}
        errs = sum(1 for w in self.workers if w.has_error_finding)
        parts = [f"Dask cluster{(' ' + self.scheduler) if self.scheduler else ''}: {n} worker(s), {ok} answered"]
        if n - ok:
            parts.append(f"{n - ok} did not (timeout {self.timeout_s:g} s)")
        parts.append(f"{len(odd)} differ from the majority" if odd else "all answering workers agree")
        if errs:
            parts.append(f"{errs} with error findings")
        return " -- ".join(parts)

    def text(self) -> str:
        """Plain text: the table (differing values marked ``*``), who did not answer and why,
        and the findings per worker."""
        from .render.report import _table

        out = [self.summary_line(), ""]
        if not self.workers:
            out.append("The scheduler has no workers.")
            return "\n".join(out)
        diff = self.majority_diff()
        cols = self.columns()
        header = ["worker", "name", "host", "status"] + [label for _k, label in cols]
        rows = []
        for w in self.workers:
            r = [w.address, str(w.name or ""), w.host, w.status]
            for key, _label in cols:
                v = w.cell(key)
                if w.address in diff.get(key, {}).get("differs", {}):
                    v = "*" + v
                r.append(v)
            rows.append(r)
        out.append(_table(rows, header))
        if diff:
            out.append("* differs from the majority of the workers that answered")
            out.append("")
            out.append("Differences")
            labels = dict(cols)
            for key, d in diff.items():
                maj = d["majority"] if d["majority"] is not None else "(no majority)"
                out.append(f"  {labels.get(key, key)}: majority {maj}")
                for a, v in d["differs"].items():
                    out.append(f"    {a}: {v}")
        if self.failed:
            out.append("")
            out.append("Workers that did not answer")
            for w in self.failed:
                out.append(f"  {w.address} [{w.status.upper()}] {w.reason}")
        out.append("")
        out.append("Findings per worker")
        noted = self._noted_workers()
        for w, fs, note in noted:
            out.append(f"  {w.address} ({w.host})")
            for f in fs:
                out.append(f"    [{str(f.get('severity')).upper()}] {f.get('id')}: {f.get('title')}")
            if note:
                out.append(f"    [NOTE] {note}")
        if not noted:
            out.append("  none above severity info")
        out.append("")
        out.append(f"({self.elapsed_s:.1f} s; per-worker timeout {self.timeout_s:g} s)")
        return "\n".join(out)

    def _noted_workers(self) -> list[tuple[WorkerRow, list[dict], str | None]]:
        """(worker, its findings above severity info, its LD_LIBRARY_PATH note) for each worker
        that has either: what both renderings list under "Findings per worker"."""
        rows = []
        for w in self.workers:
            fs = [f for f in w.data.get("findings") or [] if f.get("severity") != "info"]
            note = w.env_note()
            if fs or note:
                rows.append((w, fs, note))
        return rows

    # -- HTML ----------------------------------------------------------------------------------

    def html(self) -> str:
        """An HTML table (differing cells highlighted, failed workers in red with the reason)
        and the findings per worker; every value escaped with :func:`html.escape`."""
        from .render.report import _CSS, _SEV_COLOR, _badge

        e = _esc
        diff = self.majority_diff()
        cols = self.columns()
        h = [_CSS, '<div class="cm-report cm-cluster">',
             "<style>.cm-cluster td.cm-diff{background:#fff1c2;font-weight:600}"
             ".cm-cluster tr.cm-failed td{color:#cf222e}</style>",
             f"<div><b>{e(self.summary_line())}</b></div>"]
        if not self.workers:
            h.append("<div class='cm-muted'>The scheduler has no workers.</div></div>")
            return "".join(h)
        h.append("<table><tr><th>worker</th><th>host</th><th>status</th>"
                 + "".join(f"<th>{e(label)}</th>" for _k, label in cols) + "</tr>")
        for w in self.workers:
            cls = "" if w.answered else " class='cm-failed'"
            name = f"<br><span class='cm-muted'>{e(w.name)}</span>" if w.name else ""
            status = e(w.status) + (f"<br><span>{e(w.reason)}</span>" if w.reason else "")
            cells = []
            for key, _label in cols:
                differs = w.address in diff.get(key, {}).get("differs", {})
                maj = diff.get(key, {}).get("majority")
                title = f" title='majority: {e(maj)}'" if differs and maj is not None else ""
                klass = " class='cm-diff'" if differs else ""
                cells.append(f"<td{klass}{title}>{e(w.cell(key))}</td>")
            h.append(f"<tr{cls}><td><code>{e(w.address)}</code>{name}</td><td>{e(w.host)}</td>"
                     f"<td>{status}</td>{''.join(cells)}</tr>")
        h.append("</table>")
        if diff:
            h.append("<div class='cm-muted'>Highlighted: differs from the majority of the workers that answered "
                     "(hover for the majority value).</div>")
        h.append("<h4>Findings per worker</h4>")
        noted = self._noted_workers()
        for w, fs, note in noted:
            h.append(f"<div><code>{e(w.address)}</code> ({e(w.host)})</div>")
            for f in fs:
                sev = str(f.get("severity"))
                h.append(f"<div class='cm-finding' style='border-color:{_SEV_COLOR.get(sev, '#6e7781')}'>"
                         f"{_badge(sev, _SEV_COLOR.get(sev, '#6e7781'))} <b>{e(f.get('title'))}</b> "
                         f"<span class='cm-muted'>{e(f.get('id'))}</span><div>{e(f.get('detail'))}</div></div>")
            if note:
                h.append(f"<div class='cm-finding' style='border-color:#9a6700'>{e(note)}</div>")
        if not noted:
            h.append("<div class='cm-muted'>None above severity info.</div>")
        h.append(f"<div class='cm-muted'>{self.elapsed_s:.1f} s; per-worker timeout {self.timeout_s:g} s</div></div>")
        return "".join(h)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return {"text/plain": self.text(), "text/html": self.html()}

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(self.text())

    def __repr__(self) -> str:
        return self.text()


def _esc(s: object) -> str:
    return html.escape(str(s), quote=True)


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
            return addr, "timeout", f"no answer within {timeout:g} s (worker hung, busy in its event loop, or unreachable)", time.monotonic() - t0
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
        from distributed.comm import get_address_host_port
    except ImportError:
        return
    try:
        get_address_host_port(address)
    except ValueError as exc:
        if "don't know how to extract" in str(exc):
            return
        raise ClusterCheckError(
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
        ClusterCheckError: bad input, or the scheduler cannot be reached. The message is one
            plain sentence.
    """
    try:
        timeout = float(timeout)
    except (TypeError, ValueError):
        raise ClusterCheckError(f"timeout must be a number of seconds, got {timeout!r}") from None
    if not timeout > 0:
        raise ClusterCheckError(f"timeout must be more than 0 seconds, got {timeout:g}")
    distributed = _import_distributed()
    t0 = time.monotonic()
    own = False
    client = client_or_address
    if not isinstance(client, distributed.Client):
        address = getattr(client, "scheduler_address", client)
        if not isinstance(address, str) or not address.strip():
            raise ClusterCheckError(
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
            raise ClusterCheckError("cluster_check needs a synchronous Client (this one is asynchronous=True)")
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


