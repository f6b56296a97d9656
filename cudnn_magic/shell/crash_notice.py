"""The crash notice at ``%load_ext cudnn_magic``: why the previous kernel of this key died.

Loaded first (before :mod:`cudnn_magic.shell.annotate` starts the new capture), it claims the
newest unshown record of this kernel's key (:mod:`cudnn_magic.engines.crash`, the engine: the record,
its reading and its store) and shows it once (through the explainer, :mod:`.explainer`), at once
or at the top of the first cell; enables
``faulthandler`` into this process's record directory; and cleans up records of kernels that no
longer exist. Never raises into IPython.
"""

from __future__ import annotations

import faulthandler
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from ..capture.records import (
    CONNECTION_NAME,
    FAULTHANDLER_NAME,
    _create_exclusive,
    _read_bytes,
    claim_previous,
    cleanup,
)
from ..capture.tee import _private_dir, record_key, records_root
from ..model.crash import CrashRecord
from ..util.files import atomic_write
from .annotate import annotator

if TYPE_CHECKING:  # annotations only: the explainer loads when there is a crash to show
    from .explainer import Explainer

log = logging.getLogger("cudnn_magic")

_STATE: _Loaded | None = None


def _is_kernel_shell(ip: Any) -> bool:
    return any(c.__name__ == "ZMQInteractiveShell" for c in type(ip).__mro__)


def _in_cell(ip: Any) -> bool:
    """True while a cell runs (IPython sets ``displayhook.exec_result`` for its duration)."""
    return getattr(getattr(ip, "displayhook", None), "exec_result", None) is not None


class _Loaded:
    """Per-shell state of this feature."""

    def __init__(self, ip: Any, explainer: Callable[[], Explainer]) -> None:
        self.ip = ip
        self.explainer = explainer
        self.key = ""
        self.keydir: Path | None = None
        self.fh_file: Any = None
        self.fh_path: Path | None = None
        self.fh_placed = False
        self.fh_was_enabled = False
        self.pending: CrashRecord | None = None
        self.shown: CrashRecord | None = None
        self.hooked = False

    def hook(self, info: Any = None) -> None:
        """``pre_run_cell``/``post_run_cell``: show a deferred report, then move the
        faulthandler file into this process's record directory once the capture made it."""
        try:
            if self.pending is not None:
                rec, self.pending = self.pending, None
                self.explainer().show_crash(self.ip, rec)
            if not self.fh_placed:
                self._place_faulthandler()
            if self.pending is None and self.fh_placed:
                self._unhook()
        except Exception:
            log.debug("cudnn_magic: crash hook failed", exc_info=True)

    def _place_faulthandler(self) -> None:
        if self.fh_path is None:
            self.fh_placed = True
            return
        a = annotator()
        tee = getattr(a, "tee", None) if a is not None else None
        d = getattr(tee, "directory", None)
        if d is None:
            self.fh_placed = True  # no capture in this process: the file stays where it is
            return
        if Path(d).name.endswith(f"-{os.getpid()}"):
            target = Path(d) / FAULTHANDLER_NAME
            os.replace(self.fh_path, target)  # same filesystem: the open file keeps writing
            self.fh_path = target
        self.fh_placed = True

    def _unhook(self) -> None:
        if not self.hooked:
            return
        for ev in ("pre_run_cell", "post_run_cell"):
            try:
                self.ip.events.unregister(ev, self.hook)
            except ValueError:
                pass
        self.hooked = False


def _capture_off() -> bool:
    return os.environ.get("CUDNN_MAGIC_CAPTURE", "1").strip().lower() in ("0", "off", "no", "false")


def _enable_faulthandler(st: _Loaded) -> None:
    if _capture_off() or st.keydir is None:
        return
    if faulthandler.is_enabled() and not _is_kernel_shell(st.ip) and os.isatty(2):
        # terminal IPython with faulthandler already on (PYTHONFAULTHANDLER, -X faulthandler):
        # the user sees the stack on the terminal; the capture logs it too. Leave it alone.
        st.fh_placed = True
        return
    st.fh_was_enabled = faulthandler.is_enabled()
    path = st.keydir / f"faulthandler-{os.getpid()}.pending"
    fd = _create_exclusive(path)
    f = os.fdopen(fd, "w")
    # the explicit file matters: ipykernel's patched enable() defaults to sys.__stderr__
    faulthandler.enable(file=f, all_threads=True)
    st.fh_file, st.fh_path = f, path


def load(ip: Any, explainer: Callable[[], Explainer]) -> None:
    """Show why the previous kernel of this key died (once; ``explainer().show_crash``, created
    only when there is a crash to show), enable faulthandler on the record, and clean up records
    of kernels that no longer exist. Called by ``%load_ext cudnn_magic`` BEFORE the annotation
    feature installs the new capture. Never raises into IPython."""
    global _STATE
    if _STATE is not None:
        if _STATE.ip is ip:
            return
        unload(_STATE.ip)
    st = _Loaded(ip, explainer)
    _STATE = st
    try:
        st.key = record_key(ip)
        root = records_root()
        st.keydir = root / st.key
        _private_dir(st.keydir)
    except Exception:  # no records root: nothing to show, nothing to record
        log.debug("cudnn_magic: crash records unavailable", exc_info=True)
        return
    try:
        rec, _ = claim_previous(st.key, root)
        if rec is not None:
            st.shown = rec
            if _in_cell(ip) or not _is_kernel_shell(ip):
                explainer().show_crash(ip, rec)
            else:
                st.pending = rec  # loaded at kernel start: show at the top of the first cell
    except Exception:
        log.debug("cudnn_magic: reading the previous crash record failed", exc_info=True)
    if _is_kernel_shell(ip):
        try:
            # only in a kernel (terminal IPython may have no ipykernel)
            from ipykernel.connect import get_connection_file

            conn = os.path.abspath(get_connection_file())
            p = st.keydir / CONNECTION_NAME
            try:
                same = _read_bytes(p, 4096, tail=False).decode("utf-8", "replace") == conn
            except OSError:
                same = False
            if not same:
                # a new, uniquely named file created O_EXCL|O_NOFOLLOW, renamed over the old:
                # never written through a link planted in the key directory
                atomic_write(p, conn.encode("utf-8", "surrogateescape"), 0o600)
        except Exception:
            log.debug("cudnn_magic: connection file not recorded", exc_info=True)
    try:
        _enable_faulthandler(st)
    except Exception:
        log.debug("cudnn_magic: faulthandler not enabled", exc_info=True)
    try:
        cleanup(root, keep_key=st.key)
    except Exception:
        log.debug("cudnn_magic: crash record cleanup failed", exc_info=True)
    if st.pending is not None or (st.fh_path is not None and not st.fh_placed):
        ip.events.register("pre_run_cell", st.hook)
        ip.events.register("post_run_cell", st.hook)
        st.hooked = True


def unload(ip: Any) -> None:
    """Undo :func:`load`: unregister the hooks, put faulthandler back as it was (on
    ``sys.__stderr__`` if it was enabled before, else off) and close the record file."""
    global _STATE
    st = _STATE
    if st is None or st.ip is not ip:
        return
    _STATE = None
    st._unhook()
    if st.fh_file is not None:

        try:
            if st.fh_was_enabled and sys.__stderr__ is not None:
                faulthandler.enable(file=sys.__stderr__, all_threads=True)
            else:
                faulthandler.disable()
        except Exception:
            log.debug("cudnn_magic: faulthandler not restored", exc_info=True)
        try:
            st.fh_file.close()
        except Exception:  # noqa: BLE001
            pass
        if not st.fh_placed and st.fh_path is not None:
            try:
                os.unlink(st.fh_path)
            except OSError:
                pass


def shown_record() -> CrashRecord | None:
    """The record this process showed at load (for tests), or ``None``."""
    return _STATE.shown if _STATE is not None else None


__all__ = ["load", "shown_record", "unload"]
