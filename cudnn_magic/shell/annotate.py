"""Auto-annotation of failing cells and the GPU-unused note: the capture, the exception hook and
the cell callbacks.

IPython glue only: what a failing cell gets (the diagnosis, its display and fix buttons) is
:class:`cudnn_magic.shell.explainer.Explainer`, created on first use by :mod:`.extension`; the
knowledge lives in :mod:`cudnn_magic.engines.diagnose` and the rendering in
:mod:`cudnn_magic.render.diagnosis`; the magics ``%cudnn_explain``/``%cudnn_annotate`` are
:mod:`.explain`. What happens (docs/how-it-is-built.md, "How a failing cell gets its diagnosis";
measured: docs/facts.md "IPython and Jupyter behaviour"):

* ``%load_ext`` installs the fd-2 capture (:mod:`cudnn_magic.capture`), an exception handler
  through ``ip.set_custom_exc((Exception,), handler)`` that chains any handler set before it,
  and ``pre_run_cell``/``post_run_cell`` callbacks.
* A failing cell: the handler syncs the capture (so the cell's native stderr reaches the
  notebook before the traceback), drains ipykernel's own pipe, calls
  ``self.showtraceback(...)`` FIRST (the traceback, the error reply, ``sys.last_value`` and
  ``%debug`` are exactly as without the extension), then diagnoses the exception together with
  the fd-2 bytes this cell wrote and, only when something cuDNN-related is found, displays one
  text/plain + text/html bundle (and, in a kernel, a small widget box with a button per fix).
* A succeeding cell costs two reads of shared counters (a few µs) unless it wrote to fd 2; then
  its bytes are checked for "GPU silently unused" warnings.
* If another extension replaces our handler later, ``post_run_cell`` annotates the error instead
  (after whatever that handler showed).

Nothing here ever raises into IPython: internal errors go to ``logging.getLogger("cudnn_magic")``
at debug level, and the user's traceback is shown exactly once whatever happens. No string from a
log is ever executed.
"""

from __future__ import annotations

import atexit
import logging
import os
import sys
import traceback
import types
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from IPython.core.error import UsageError

from ..capture.drain import drain_ipykernel
from ..capture.protocol import mib
from ..capture.tee import Tee, read_range, record_key
from ..knowledge.literals import WARNING_LITERALS
from ..util.safetext import safe_text
from .shutdown import hook_shutdown

if TYPE_CHECKING:  # annotations only: the explainer loads on first use
    from .explainer import Explainer

#: The warning literals as the capture helper folds them (:class:`~cudnn_magic.capture.tee.Tee`).
_FOLDED_LITERALS = tuple(x.lower() for x in WARNING_LITERALS if x)

log = logging.getLogger("cudnn_magic")

MAX_LOG_FOR_DIAGNOSIS = 4 << 20
"""Bytes of a cell's fd-2 slice given to ``diagnose`` (the log bound; the newest bytes win)."""

MAX_LOG_FOR_DISPLAY = 64 << 10
"""Bytes of the slice shown in the "details" part of an annotation (64 KiB; the newest)."""

MAX_TRACEBACK_CHARS = 64 << 10
"""Characters of the formatted traceback given to ``diagnose``."""

_ANNOTATOR: Annotator | None = None


def _decode(data: bytes) -> str:
    return data.decode("utf-8", "replace")


@dataclass
class ErrorRecord:
    """The last error seen, kept for ``%cudnn_explain``."""

    exception: str
    exc_type: str
    traceback: str
    log: str
    truncated: int = 0
    diagnoses: list = field(default_factory=list)


def _display_safe_log(text: str, limit: int = MAX_LOG_FOR_DISPLAY) -> str:
    """The newest ``limit`` characters of ``text`` with control characters other than
    tab/newline, bidirectional controls and lone surrogates replaced
    (:func:`cudnn_magic.util.safetext.safe_text`: binary garbage stays printable)."""
    if len(text) > limit:
        text = f"[... {len(text) - limit} earlier characters not shown ...]\n" + text[-limit:]
    return safe_text(text)


class Annotator:
    """Per-shell state: the capture, the hooks and the last error.

    Args:
        ip: the ``InteractiveShell``.
        explainer: returns the :class:`~cudnn_magic.shell.explainer.Explainer` (created on its
            first call: the knowledge base loads when a cell first needs it).
        capture: install the fd-2 capture (``False`` in tests or when
            ``CUDNN_MAGIC_CAPTURE=0``).
    """

    def __init__(self, ip: Any, explainer: Callable[[], Explainer], capture: bool = True) -> None:
        self.ip = ip
        self.explainer = explainer
        self.enabled = True
        self.tee: Tee | None = None
        self.mark: Any = None
        self.mark_forwarded = 0
        self.handled = False
        self.last: ErrorRecord | None = None
        self.prev_ctb: Any = None
        self.prev_exc: tuple = ()
        self.exc_tuple: tuple = (Exception,)
        self.installed_ctb: Any = None
        self.capture_error: str | None = None
        self._want_capture = capture
        self._death_reported = False
        self.noted: tuple = (0, 0)
        self.synced: Any = None  # the capture's mark after this cell's last sync

    # -- install / uninstall -----------------------------------------------------------------------

    def install(self) -> None:
        ip = self.ip
        if self._want_capture:
            self._install_capture()
        self.prev_ctb = getattr(ip, "CustomTB", None)
        self.prev_exc = tuple(getattr(ip, "custom_exceptions", ()) or ())
        extra = tuple(t for t in self.prev_exc if isinstance(t, type) and not issubclass(t, Exception))
        self.exc_tuple = (Exception, *extra)
        self.installed_ctb = _set_handler(ip, self.exc_tuple)
        ip.events.register("pre_run_cell", self.pre_run_cell)
        ip.events.register("post_run_cell", self.post_run_cell)
        atexit.register(self._atexit)
        self._unhook_shutdown = hook_shutdown(ip, self._shutdown_requested)

    def _install_capture(self) -> None:
        if os.environ.get("CUDNN_MAGIC_CAPTURE", "1").strip().lower() in ("0", "off", "no", "false"):
            self.capture_error = "turned off by CUDNN_MAGIC_CAPTURE"
            return
        try:
            fallback = getattr(sys.stderr, "_original_stdstream_copy", None)
            self.tee = Tee.install(
                record_key(self.ip), fallback_fd=fallback if isinstance(fallback, int) else None,
                meta={"shell": type(self.ip).__name__, "python": sys.executable,
                      "python_version": "{}.{}.{}".format(*sys.version_info[:3])},
                flag_literals=WARNING_LITERALS,
            )
            self.mark = self.tee.mark()
        except Exception as exc:  # annotation still works from the exception alone
            self.tee = None
            self.capture_error = f"{type(exc).__name__}: {exc}"
            log.debug("cudnn_magic: fd-2 capture not installed", exc_info=True)

    def uninstall(self) -> None:
        ip = self.ip
        for ev, cb in (("pre_run_cell", self.pre_run_cell), ("post_run_cell", self.post_run_cell)):
            try:
                ip.events.unregister(ev, cb)
            except ValueError:
                pass
        if getattr(ip, "CustomTB", None) is self.installed_ctb:
            # still ours: put back exactly what was there (the previous handler or none)
            ip.CustomTB = self.prev_ctb
            ip.custom_exceptions = self.prev_exc
        # else: another extension replaced us since; leave its handler alone.
        try:
            atexit.unregister(self._atexit)
            getattr(self, "_unhook_shutdown", lambda: None)()
        except Exception:  # noqa: BLE001
            pass
        if self.tee is not None:
            tee, self.tee = self.tee, None
            tee.uninstall()

    def _atexit(self) -> None:
        if self.tee is not None:
            self.tee.clean_exit()

    def _shutdown_requested(self) -> None:
        if self.tee is not None:
            self.tee.shutdown_requested()

    # -- per cell ----------------------------------------------------------------------------------

    def pre_run_cell(self, info: Any = None) -> None:
        """Remember where this cell's fd-2 bytes start and record its source for the crash
        record. Hot path (every cell): two reads of the shared counters and one write of the
        source into the shared mapping, no syscall."""
        self.handled = False
        self.synced = None
        tee = self.tee
        if tee is None:
            return
        try:
            if not tee.active:
                self._report_death()
                return
            self.mark = m = tee.mark()
            self.mark_forwarded = m.forwarded
            self.noted = (m.spilled, m.dropped)
            ip = self.ip
            # IPython has already advanced execution_count when pre_run_cell fires: this cell is
            # In [execution_count - 1] (only cells stored in history get a number).
            count = ip.execution_count - 1 if getattr(info, "store_history", False) else None
            tee.note_cell(count, getattr(info, "raw_cell", None) or "", m.offset)
        except Exception:
            log.debug("cudnn_magic: pre_run_cell failed", exc_info=True)

    def post_run_cell(self, result: Any = None) -> None:
        """Every cell's native stderr reaches the notebook before the cell ends (also when it
        failed or was interrupted: then what still waits is skipped, except its newest
        64 KiB, instead of flowing on into the next cell). Errors our handler did not see get
        annotated here; a succeeding cell that wrote to fd 2 gets its bytes checked for
        GPU-unused warnings. Hot path (a quiet cell): one FIONREAD and one read of the shared
        counters."""
        try:
            err = result.error_in_exec or result.error_before_exec
        except AttributeError:
            err = None
        try:
            tee = self.tee
            if tee is not None and not tee.active:
                self._report_death()
                tee = None
            if err is not None and not isinstance(err, Exception):
                # KeyboardInterrupt (Kernel > Interrupt), SystemExit...: IPython showed it
                if tee is not None and self.mark is not None and tee.changed_since(self.mark):
                    if isinstance(err, KeyboardInterrupt):
                        self._skip_backlog()
                        self._drain()
                    else:
                        self._sync()
                return
            if err is not None:
                if not self.handled:
                    # our handler did not run: another extension replaced it (or IPython
                    # showed the error itself); the traceback is already out, so just annotate.
                    self.handled = True
                    end = self._sync()
                    self._annotate_error(type(err), err, err.__traceback__, end)
                elif tee is not None and self.mark is not None and tee.changed_since(self.synced or self.mark):
                    self._sync()  # bytes written after the traceback (a thread, a child process)
                return
            if tee is None or self.mark is None or not tee.changed_since(self.mark):
                return
            if self.enabled:
                self._check_warnings(tee)
            else:
                self._deliver(tee, tee.settled())
        except BaseException:  # including a second interrupt during our part
            log.debug("cudnn_magic: post_run_cell failed", exc_info=True)

    def _report_death(self) -> None:
        tee = self.tee
        msg = tee.pop_death() if tee is not None else None
        if msg and not self._death_reported:
            self._death_reported = True
            try:
                print(f"cudnn-magic: {msg}. Error annotations go on without native log lines.", file=sys.stderr)
            except Exception:  # noqa: BLE001
                pass

    def _sync(self) -> int | None:
        """Make every fd-2 byte written so far reach the notebook (before what we show next);
        returns the log offset at that point, or ``None`` without capture. The wait lasts as
        long as the helper makes progress; an interrupt during it skips what still waits
        (:meth:`Tee.skip`)."""
        tee = self.tee
        if tee is None or not tee.active:
            try:
                sys.stderr.flush()
            except Exception:  # noqa: BLE001
                pass
            return None
        try:
            end = tee.sync()
        except KeyboardInterrupt:
            end = self._skip_backlog()
        if end is None or tee.last_forwarded != self.mark_forwarded:
            self._drain()
        else:
            try:
                sys.stderr.flush()
            except Exception:  # noqa: BLE001
                pass
        if end is not None:
            self.synced = tee.mark()
        self._say_spill()
        return end

    def _skip_backlog(self) -> int | None:
        """The cell was interrupted: drop what still waits to be shown (the helper forwards its
        newest 64 KiB after a notice saying how much was skipped)."""
        tee = self.tee
        if tee is None:
            return None
        try:
            return tee.skip()
        except KeyboardInterrupt:  # interrupted again: leave it
            return None

    def _drain(self) -> None:
        try:
            drain_ipykernel()
        except KeyboardInterrupt:
            pass

    def _say_spill(self) -> None:
        """Tell the user (once per change, on stderr) when this cell's native stderr waited in
        the spool file or was dropped beyond the bounds."""
        tee = self.tee
        if tee is None:
            return
        spilled, dropped, _ = tee.counts()
        s0, d0 = self.noted
        if spilled <= s0 and dropped <= d0:
            return
        self.noted = (spilled, dropped)

        parts = []
        if spilled > s0:
            parts.append(f"{mib(spilled - s0).decode()} of it waited in a spool file on disk (more than the "
                         f"{mib(tee.memory_bytes).decode()} memory bound was waiting) and was shown late")
        if dropped > d0:
            parts.append(f"{mib(dropped - d0).decode()} of it was dropped (more than the memory and "
                         f"{mib(tee.spool_bytes).decode()} spool bounds was waiting; a '[cudnn-magic: dropped ...]' "
                         f"line marks the cut)")
        where = f"; the capture record keeps the newest 2-4 MiB: {tee.directory}" if dropped > d0 else ""
        try:
            print(f"cudnn-magic: this cell wrote native stderr (fd 2) faster than it could be shown: "
                  f"{'; '.join(parts)}{where}.", file=sys.stderr)
        except Exception:  # noqa: BLE001
            pass

    def cell_log(self, end: int | None) -> tuple[str, int]:
        """This cell's fd-2 text (newest :data:`MAX_LOG_FOR_DIAGNOSIS` bytes) and how many
        bytes of it are missing (rotated out of the bounded log or cut here)."""
        tee = self.tee
        if tee is None or self.mark is None or end is None:
            return "", 0
        start = self.mark.offset
        cut = max(0, end - start - MAX_LOG_FOR_DIAGNOSIS)
        data = tee.slice(start + cut, end)
        return _decode(bytes(data)), cut + data.truncated

    def _cell_bytes(self, end: int | None) -> tuple[bytes, int, int]:
        """This cell's fd-2 bytes up to ``end`` (the newest :data:`MAX_LOG_FOR_DIAGNOSIS`), the log
        offset of their first byte, and the offset they reach (less than ``end`` while the
        helper's write still lags)."""
        tee = self.tee
        if tee is None or self.mark is None or end is None or tee.directory is None:
            return b"", end or 0, end or 0
        start = self.mark.offset
        data, first, last, _ = read_range(tee.directory, start + max(0, end - start - MAX_LOG_FOR_DIAGNOSIS), end)
        return data, first, last

    def _deliver(self, tee: Any, end: int | None) -> int | None:
        """A succeeding cell wrote to fd 2: every byte reaches the notebook before the cell ends and
        before anything shown after this, with no marker round trip: the helper has taken the bytes
        (``end``: :meth:`Tee.settled`) and handed them on (:meth:`Tee.delivered`), and in a kernel
        ipykernel's reader has them (:func:`~cudnn_magic.capture.drain.drain_ipykernel`); else they
        could miss ipykernel's end-of-request flush and wait for its timed one (0.2 s). What could
        not be settled takes :meth:`_sync`. Returns the log offset reached, or None."""
        try:
            if end is None or not tee.delivered():
                return self._sync()
        except KeyboardInterrupt:
            self._skip_backlog()
            self._drain()
            return None
        if getattr(sys.stderr, "_fid", None) is not None:
            self._drain()
        self._say_spill()
        return end

    def _check_warnings(self, tee: Any) -> None:
        """A succeeding cell wrote to fd 2: deliver its bytes (:meth:`_deliver`), then, when the
        helper flagged a warning literal in them (:meth:`Tee.flagged`), read them back and look for
        "GPU silently unused" warnings: only the lines holding a literal (found in bytes by
        :func:`cudnn_magic.knowledge.keyword_lines`) and the tail reach the knowledge base
        (``benchmarks/bench_cell_overhead.py``)."""
        # a cell that overflowed the capture's memory bound: deliver its bytes, then say so
        overflowed = tuple(tee.counts()[:2]) != tuple(self.noted)
        end = self._sync() if overflowed else self._deliver(tee, tee.settled())
        if end is None:
            return
        flagged = tee.flagged() if tee.flag_literals else None
        if flagged is not None and self.mark is not None and flagged <= self.mark.offset:
            return  # the helper saw no warning literal in any of this cell's bytes: nothing to read back
        data, first, _ = self._cell_bytes(end)
        # no literal ends after the helper's flag (the end of the last chunk that held one): the
        # search stops there, when the helper looked for exactly the literals searched here
        before = flagged - first if flagged is not None and tee.flag_literals == _FOLDED_LITERALS else None
        found = self.explainer().unused_gpu_warnings(data, before=before)[0] if data else []
        if found:
            self._display(found, _decode(data), warning=True)

    # -- errors --------------------------------------------------------------------------------------

    def handle(self, shell: Any, etype: type, value: BaseException, tb: Any, tb_offset: Any = None) -> None:
        """The custom exception handler body (see :func:`_handler`).

        An exception raised while IPython shows the user's exception comes from that exception
        itself (a ``__str__`` that raises, even ``SystemExit``, or returns a non-string; text
        that cannot be encoded for the front end) and is handled as IPython's ``run_ast_nodes``
        handles it without the extension (:func:`_show_as_ipython_would`): the user sees the
        original raise site, then that error, exactly as without the extension, the cell gets
        its reply, and nothing is annotated."""
        __tracebackhide__ = True  # IPython hides this frame in tracebacks
        self.handled = True
        shown = False
        raised: BaseException | None = None
        try:
            prev = self._previous_for(etype)
            end = self._sync()
            if prev is not None:
                try:
                    prev(etype, value, tb, tb_offset=tb_offset)
                    shown = True
                finally:
                    self._reassert(shell)
            else:
                shown = True  # set first: never show it twice, even if showtraceback raises
                try:
                    shell.showtraceback((etype, value, tb), tb_offset=tb_offset)
                except BaseException as exc:  # noqa: BLE001 - raised by showing the user's exception
                    raised = _show_as_ipython_would(shell, exc)
                    if raised is None:
                        return
            if raised is None:
                self._annotate_error(etype, value, tb, end)
        except BaseException:  # including KeyboardInterrupt during our part
            log.debug("cudnn_magic: exception handler failed", exc_info=True)
            if not shown:
                try:
                    shell.showtraceback((etype, value, tb), tb_offset=tb_offset)
                except BaseException as exc:  # noqa: BLE001
                    raised = _show_as_ipython_would(shell, exc)
        if raised is not None:
            try:
                raise raised
            finally:
                raised = None  # no reference cycle through this frame

    def _previous_for(self, etype: type) -> Any:
        if self.prev_ctb is None or not self.prev_exc:
            return None
        try:
            return self.prev_ctb if issubclass(etype, self.prev_exc) else None
        except TypeError:
            return None

    def _reassert(self, shell: Any) -> None:
        """A failing previous handler unregisters *every* handler (IPython's wrapper calls
        ``set_custom_exc((), None)``): put ours back, without the previous one."""
        if not getattr(shell, "custom_exceptions", ()):
            self.prev_ctb, self.prev_exc = None, ()
            self.installed_ctb = _set_handler(shell, (Exception,))

    def _annotate_error(self, etype: type, value: BaseException, tb: Any, end: int | None) -> None:
        if _own_usage_error(etype, tb):
            return  # a mistyped %cudnn_* line: IPython showed the usage; the error to explain stays
        text, truncated = self.cell_log(end)
        try:
            msg = safe_text(str(value), keep_newlines=True)
        except BaseException:  # noqa: BLE001 - a __str__ that raises, even SystemExit
            msg = "<exception str() failed>"
        exception = f"{etype.__name__}: {msg}" if msg else etype.__name__
        try:
            tb_text = safe_text("".join(traceback.format_exception(etype, value, tb))[-MAX_TRACEBACK_CHARS:],
                                keep_newlines=True)
        except BaseException:  # noqa: BLE001
            tb_text = ""
        rec = ErrorRecord(exception, etype.__name__, tb_text, text, truncated)
        self.last = rec
        if not self.enabled:
            return
        rec.diagnoses = self.diagnose(rec)
        if rec.diagnoses:
            self._display(rec.diagnoses, text)

    def diagnose(self, rec: ErrorRecord) -> list:
        """The diagnoses of an error, with the live facts when something cuDNN-related was found."""
        return self.explainer().diagnose(rec.exception, rec.log, exc_type=rec.exc_type, traceback=rec.traceback)

    def _display(self, diagnoses: list, log_text: str, warning: bool = False) -> None:
        self.explainer().show(self.ip, diagnoses, _display_safe_log(log_text))


def _own_usage_error(etype: type, tb: Any) -> bool:
    """A ``UsageError`` raised from one of our magics (a frame of ``cudnn_magic`` in its
    traceback): never "the last error" that ``%cudnn_explain`` explains."""
    try:
        if not issubclass(etype, UsageError):
            return False
        depth = 0
        while tb is not None and depth < 200:
            if str(tb.tb_frame.f_globals.get("__name__", "")).startswith("cudnn_magic"):
                return True
            tb, depth = tb.tb_next, depth + 1
    except Exception:  # noqa: BLE001
        return False
    return False


def _handler(self: Any, etype: type, value: BaseException, tb: Any, tb_offset: Any = None) -> None:
    """Our ``CustomTB``. Installed by :func:`_set_handler` without IPython's protective wrapper
    (which unregisters a handler that raises and then prints the original exception a second
    time): it raises only what showing the user's exception raised, as IPython's own
    ``showtraceback`` would from ``run_code``; anything of ours is caught inside."""
    __tracebackhide__ = True
    a = _ANNOTATOR
    if a is None or a.ip is not self:
        self.showtraceback((etype, value, tb), tb_offset=tb_offset)
        return
    a.handle(self, etype, value, tb, tb_offset)
    return


def _show_as_ipython_would(shell: Any, exc: BaseException) -> BaseException | None:
    """``exc`` was raised while showing the user's exception. Do what IPython's
    ``run_ast_nodes`` does when that happens without the extension: record it as the cell's
    ``error_before_exec`` (so the reply names it, instead of an exception whose text cannot be
    sent, which left the cell without a reply) and show its traceback, whose chain holds the
    user's exception and its raise site. The traceback is the one IPython would have: its frames
    from ``run_ast_nodes`` down, ours left out. Returns what showing it raised in turn (IPython
    would let that escape ``run_ast_nodes``: the caller re-raises it), else ``None``."""
    result = getattr(getattr(shell, "displayhook", None), "exec_result", None)
    if result is not None:
        try:
            result.error_before_exec = exc
        except Exception:  # noqa: BLE001
            pass
    try:
        shell.showtraceback((type(exc), exc, _baseline_traceback(exc)))
    except BaseException as again:  # noqa: BLE001 - showing it fails too, as it would without us
        return again
    return None


def _baseline_traceback(exc: BaseException) -> Any:
    """``exc``'s traceback as IPython's ``run_ast_nodes`` would have caught it had our handler
    not been between: the two frames above the caller of ``CustomTB`` (``run_ast_nodes``,
    ``run_code``), then ``exc``'s own frames without ours."""
    here = __file__.rsplit(".", 1)[0]

    def ours(frame: types.FrameType) -> bool:
        return frame.f_code.co_filename.rsplit(".", 1)[0] == here

    tb = exc.__traceback__
    while tb is not None and ours(tb.tb_frame):
        tb = tb.tb_next
    callers = []
    f: types.FrameType | None = sys._getframe(1)
    while f is not None and ours(f):
        f = f.f_back
    for _ in range(2):  # run_code (which called CustomTB), then run_ast_nodes (which catches)
        if f is None:
            break
        callers.append(f)
        f = f.f_back
    for frame in callers:  # innermost first: each becomes the new head of the chain
        try:
            tb = types.TracebackType(tb, frame, frame.f_lasti, frame.f_lineno)
        except (TypeError, ValueError):  # an interpreter without writable tracebacks
            break
    return tb


def _set_handler(shell: Any, exc_tuple: tuple) -> Any:
    """Install :func:`_handler` as ``shell.CustomTB`` for ``exc_tuple``; returns the bound
    handler (to tell later whether it is still ours). Same effect as
    ``set_custom_exc(exc_tuple, _handler)`` minus IPython's wrapper (see :func:`_handler`)."""
    ctb = types.MethodType(_handler, shell)
    shell.CustomTB = ctb
    shell.custom_exceptions = exc_tuple
    return ctb


def load(ip: Any, explainer: Callable[[], Explainer]) -> None:
    """Install capture, exception hook and cell callbacks (called by ``%load_ext``);
    ``explainer`` gives what a failing cell gets (:class:`Annotator`). Loading twice in one
    shell is a no-op."""
    global _ANNOTATOR
    if _ANNOTATOR is not None:
        if _ANNOTATOR.ip is ip:
            return
        unload(_ANNOTATOR.ip)
    a = Annotator(ip, explainer)
    _ANNOTATOR = a
    try:
        a.install()
    except Exception:  # noqa: BLE001 - re-raised by the finally below, after a half install is undone
        _ANNOTATOR = None
        try:
            a.uninstall()
        finally:
            raise


def unload(ip: Any) -> None:
    """Undo :func:`load`: restore fd 2 and stop the helper, restore the previous exception
    handler (if ours is still the one installed), unregister the callbacks."""
    global _ANNOTATOR
    a = _ANNOTATOR
    if a is None or a.ip is not ip:
        return
    _ANNOTATOR = None
    a.uninstall()


def annotator() -> Annotator | None:
    """The active :class:`Annotator` (for the crash-record feature and tests)."""
    return _ANNOTATOR


__all__ = ["Annotator", "ErrorRecord", "annotator", "load", "unload"]
