"""Crash forensics: why the previous kernel died, shown when the next one loads the extension.

Many cuDNN faults end the kernel with no traceback at all: TensorFlow's ``Check failed: status
== CUDNN_STATUS_SUCCESS (7 vs. 0)Failed to set cuDNN stream.`` then ``abort()``, a copy without
``libcudnn_graph.so.9`` that aborts with ``Invalid handle. Cannot load symbol cudnnGetVersion``,
a segfault in a mismatched cuDNN. The notebook then gets nothing from that cell, not even its
earlier prints (docs/facts.md "IPython and Jupyter behaviour", kernel death). The fd-2
capture (:mod:`cudnn_magic.capture`) writes every native byte to an on-disk record as it
arrives; this module reads that record in the NEXT kernel.

At ``%load_ext cudnn_magic`` (loaded first, before :mod:`cudnn_magic.shell.annotate` starts the new
capture), :mod:`cudnn_magic.shell.crash_notice`:

1. finds this kernel's key (:func:`cudnn_magic.capture.tee.record_key`: the connection file's
   basename, stable across restarts by the kernel manager and by JupyterLab's auto-restart;
   ``terminal-<tty>`` or ``process-<ppid>`` in terminal IPython) and, under it, the newest
   record of ANOTHER process that is dead, did not exit cleanly and was not shown yet;
2. claims it (creates ``shown`` in the record with ``O_CREAT|O_EXCL``, so two loaders never
   both show it and a second ``%load_ext`` shows nothing) and displays, above everything else,
   one text/plain + text/html bundle: when the previous kernel died, the cell it was running
   (its source), the native log lines it printed last, the Python stack at the moment of death
   (``faulthandler``), and the diagnosis with its fixes from
   :func:`cudnn_magic.engines.diagnose.diagnose` exactly as an annotated error cell shows it (plus fix
   buttons in a kernel). Loaded from the startup config (no cell running), the display waits
   for the first cell's ``pre_run_cell`` so it lands in a cell's output;
3. enables ``faulthandler`` with an explicit file, ``all_threads=True``: ipykernel changes
   ``faulthandler.enable``'s default file to ``sys.__stderr__``, and a dump there was cut off
   5/5 times in the measurements. The file is opened in the key directory and, once the
   capture has created this process's record directory, renamed into it as
   ``faulthandler.log`` (the open file keeps working across the rename);
4. removes records of kernels that no longer exist (see :func:`cleanup` for the policy).

A graceful restart or shutdown leaves ``clean_exit: true`` in ``meta.json`` (the capture's
``atexit``) and shows nothing. Nothing from a record is ever executed or evaluated: it is read
as bytes, decoded with replacement, control characters replaced, and HTML-escaped. A record
that is truncated or corrupt (bad JSON, missing files, binary garbage) is still shown, with
what is wrong with it listed under "problems with the record".

The layout: this module is the engine's entry (:func:`diagnose_record`, :func:`last_crash`
and the record API re-exported below); the store is :mod:`cudnn_magic.capture.records`, the
record :mod:`cudnn_magic.model.crash`, its rendering (with the part of the faulthandler dump
shown, :func:`~cudnn_magic.render.crash.faulthandler_summary`) :mod:`cudnn_magic.render.crash`,
the notice at load :mod:`cudnn_magic.shell.crash_notice`, the command line
:mod:`cudnn_magic.cli.crashes`.

``%load_ext`` stays cheap: the notice reads the store alone (a few ``listdir``/``stat``/
small-file reads and, at most once an hour, the cleanup scan); this engine, with the knowledge
base and the probes, loads only when there is a crash to show.
"""

from __future__ import annotations

import logging
import sys
from dataclasses import replace
from pathlib import Path
from typing import Callable

from ..capture.records import (
    CONNECTION_NAME,
    FAULTHANDLER_NAME,
    MAX_FAULTHANDLER,
    MAX_LOG_FOR_DIAGNOSIS,
    MAX_LOG_TAIL,
    SHOWN_NAME,
    _safe_text,
    all_crashes,
    claim_previous,
    cleanup,
    key_exists,
    previous_crashes,
    read_record,
    valid_key,
)
from ..capture.tee import record_key, records_root
from ..model import Diagnosis, Report
from ..model.crash import CrashRecord
from ..render.crash import faulthandler_summary, key_description
from .diagnose import diagnose

log = logging.getLogger("cudnn_magic")

__all__ = ["CONNECTION_NAME", "FAULTHANDLER_NAME", "MAX_FAULTHANDLER", "MAX_LOG_FOR_DIAGNOSIS", "MAX_LOG_TAIL",
           "SHOWN_NAME", "CrashRecord", "_safe_text", "all_crashes", "claim_previous", "cleanup",
           "diagnose_record", "faulthandler_summary", "key_description", "key_exists", "last_crash", "previous_crashes",
           "read_record", "record_key", "records_root", "valid_key"]


def diagnose_record(rec: CrashRecord, facts: Callable[[], Report | None] | None = None) -> list[Diagnosis]:
    """Diagnose a record's log (and its faulthandler stack) like an annotated error cell:
    ``diagnose(log=..., traceback=...)``, from the text alone, then with the live facts of THIS
    process (``facts()``: the cached check report) when something cuDNN-related was found.
    ``restart-kernel`` is left out of the fixes: the kernel that shows the record is the restart
    (or the one that died is gone). Fills ``rec.diagnoses`` and returns it. Never raises for
    the facts (a failing check leaves the diagnosis from the text alone)."""
    kw = {"exception": "", "log": rec.log or rec.log_tail, "traceback": rec.faulthandler}
    found = diagnose(report=None, **kw)
    if found and facts is not None:
        try:
            found = diagnose(report=facts(), **kw) or found
        except Exception:
            log.debug("cudnn_magic: facts for the crash diagnosis failed", exc_info=True)
    rec.diagnoses = [replace(d, fixes=tuple(f for f in d.fixes if f.id != "restart-kernel"))
                     if any(f.id == "restart-kernel" for f in d.fixes) else d for d in found]
    return rec.diagnoses


def last_crash(key: str | None = None, root: Path | None = None) -> CrashRecord | None:
    """The newest crash record (shown or not) of ``key`` (default: this process's key), with
    its diagnoses from the text alone; ``None`` if there is none. Reads only; marks nothing."""
    if key is None:
        try:  # the running shell, if IPython is loaded at all (looked up, not imported: no IPython here)
            ipython = sys.modules.get("IPython")
            ip = ipython.get_ipython() if ipython is not None else None
        except Exception:  # noqa: BLE001
            ip = None
        key = record_key(ip)
    recs = previous_crashes(key, root, include_shown=True)
    if not recs:
        return None
    diagnose_record(recs[0])
    return recs[0]
