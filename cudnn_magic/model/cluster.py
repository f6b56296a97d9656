"""The result of a cluster check: :class:`ClusterReport` (one :class:`WorkerRow` per Dask
worker or Ray node, values that differ from the majority found by
:meth:`ClusterReport.majority_diff`); made by :mod:`cudnn_magic.engines.cluster` (Dask) and
:mod:`cudnn_magic.engines.cluster_ray` (Ray), rendered by :mod:`cudnn_magic.render.cluster`
(``text()``, ``html()`` and the notebook display: :mod:`cudnn_magic.model.display`)."""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal

from .display import Displayed

__all__ = ["ClusterReport", "WorkerRow"]


Status = Literal["ok", "timeout", "error"]


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


@dataclass
class WorkerRow:
    """One worker's answer (or why there is none).

    Attributes:
        address: the worker's address as the scheduler knows it (``tcp://10.0.0.5:39211``); for a
            Ray node, its IP and raylet port (``10.0.0.5:40123``: unique even for nodes on one host).
        name: the worker's name (``dask worker --name``) or the Ray node's id, or None.
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


def _version_key(v: str) -> tuple[int, ...]:
    return tuple(int(p) if p.isdigit() else -1 for p in v.split("."))


def _short(p: Any) -> str:
    """A path for a table cell: ``~`` for the home directory."""
    if not p:
        return "?"
    s, home = str(p), os.path.expanduser("~")
    return "~" + s[len(home):] if home and s.startswith(home + os.sep) else s


def _short_pathlist(v: str) -> str:
    return os.pathsep.join(_short(p) if p else p for p in v.split(os.pathsep))


@dataclass
class ClusterReport(Displayed):
    """Every worker's ``check`` report side by side.

    Attributes:
        workers: one :class:`WorkerRow` per worker the scheduler knew when the check began,
            sorted by address (for Ray: one per alive node).
        timeout_s: the per-worker timeout used, in seconds.
        scheduler: the scheduler's address (Ray: the GCS address), when known.
        elapsed_s: wall time of the whole check, in seconds.
        kind: "dask" or "ray": the words used ("worker"/"node") and the JSON keys.
        reference: the address of the row to compare with when no value is held by more than
            half of the rows (Ray: the head node); None compares with no row then.
    """

    workers: list[WorkerRow] = field(default_factory=list)
    timeout_s: float = 30.0
    scheduler: str | None = None
    elapsed_s: float = 0.0
    kind: str = "dask"
    reference: str | None = None

    @property
    def unit(self) -> str:
        """What a row is: "worker" (Dask) or "node" (Ray)."""
        return "node" if self.kind == "ray" else "worker"

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

        Returns ``{column_key: {"majority": value or None, "differs": {address: value},
        "reference": "majority" | "head node" | None}}`` for columns where not every answering
        worker has the same value. ``majority`` is the value held by more than half of the
        answering workers; when none is (e.g. 1 against 1 in a two-node cluster) and
        :attr:`reference` answered, its value is the one compared with ("head node"); else it is
        None and every answering worker is listed, since there is nothing to compare with.
        Workers that did not answer are not compared (their status says why).
        """
        rows = [w for w in self.workers if w.answered]
        ref = next((w for w in rows if w.address == self.reference), None)
        out: dict[str, dict[str, Any]] = {}
        for key, _label in self.columns():
            values = {w.address: w.cell(key) for w in rows}
            counts = Counter(values.values())
            if len(counts) <= 1:
                continue
            top, n = counts.most_common(1)[0]
            by: str | None = "majority"
            majority: str | None = top
            if n * 2 <= len(rows):
                majority, by = (values[ref.address], "head node") if ref is not None else (None, None)
            out[key] = {"majority": majority, "reference": by,
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
        """Dask: ``{"kind": "dask", "scheduler", "timeout_s", "elapsed_s", "workers": [...],
        "differences": {...}}``; Ray: ``{"kind": "ray", "address" (the GCS), "timeout_s",
        "elapsed_s", "head", "nodes": [...], "differences": {...}}``.

        Each worker (node) entry is its ``check`` JSON (docs/json.md contract, as :func:`worker_probe`
        returned it) plus ``address``, ``name`` (Ray: also ``node_id``), ``status``
        ("ok"/"timeout"/"error"), ``reason`` and ``probe_s`` (seconds). ``differences`` is
        :meth:`majority_diff` keyed by column key.
        """
        workers = []
        for w in self.workers:
            entry = dict(w.data)
            entry.update(address=w.address, name=w.name, status=w.status, reason=w.reason,
                         probe_s=round(w.elapsed_s, 4))
            if self.kind == "ray":
                entry["node_id"] = w.name
            workers.append(entry)
        if self.kind == "ray":
            return {"kind": "ray", "address": self.scheduler, "timeout_s": self.timeout_s,
                    "elapsed_s": round(self.elapsed_s, 4), "head": self.reference, "nodes": workers,
                    "differences": self.majority_diff()}
        return {"kind": "dask", "scheduler": self.scheduler, "timeout_s": self.timeout_s,
                "elapsed_s": round(self.elapsed_s, 4), "workers": workers, "differences": self.majority_diff()}

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> ClusterReport:
        """The report :meth:`to_json` wrote (the child process of a Ray check hands it back so):
        each entry's keys other than the ones :meth:`to_json` adds are the row's data.

        Raises:
            KeyError, TypeError, ValueError: not such a document.
        """
        ray = doc.get("kind") == "ray"
        added = {"address", "name", "status", "reason", "probe_s", "node_id"}
        rows = []
        for e in doc["nodes" if ray else "workers"]:
            rows.append(WorkerRow(str(e["address"]), e.get("name"), e.get("status", "ok"), e.get("reason"),
                                  {k: v for k, v in e.items() if k not in added}, float(e.get("probe_s") or 0.0)))
        return cls(rows, float(doc["timeout_s"]), doc.get("address" if ray else "scheduler"),
                   float(doc.get("elapsed_s") or 0.0), kind="ray" if ray else "dask",
                   reference=doc.get("head") if ray else None)

    # -- text ----------------------------------------------------------------------------------

    def summary_line(self) -> str:
        n = len(self.workers)
        ok = sum(1 for w in self.workers if w.answered)
        diff = self.majority_diff()
        odd = {a for d in diff.values() for a in d["differs"]}
        errs = sum(1 for w in self.workers if w.has_error_finding)
        label = "Ray cluster" if self.kind == "ray" else "Dask cluster"
        parts = [f"{label}{(' ' + self.scheduler) if self.scheduler else ''}: {n} {self.unit}(s), {ok} answered"]
        if n - ok:
            parts.append(f"{n - ok} did not (timeout {self.timeout_s:g} s)")
        by_head = any(d.get("reference") == "head node" for d in diff.values())
        parts.append((f"{len(odd)} differ from the majority" + (" (or, with none, the head node)" if by_head else ""))
                     if odd else f"all answering {self.unit}s agree")
        if errs:
            parts.append(f"{errs} with error findings")
        return " -- ".join(parts)

    def _noted_workers(self) -> list[tuple[WorkerRow, list[dict[str, Any]], str | None]]:
        """(worker, its findings above severity info, its LD_LIBRARY_PATH note) for each worker
        that has either: what both renderings list under "Findings per worker"."""
        rows = []
        for w in self.workers:
            fs = [f for f in w.data.get("findings") or [] if f.get("severity") != "info"]
            note = w.env_note()
            if fs or note:
                rows.append((w, fs, note))
        return rows

    def __repr__(self) -> str:
        return self.text()


def _host_of(address: str) -> str:
    rest = address.split("://", 1)[-1]
    return rest.rsplit(":", 1)[0] if ":" in rest else rest
