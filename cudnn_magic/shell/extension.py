"""IPython connectivity: the extension's load/unload, and the one place that decides what loads when.

``%load_ext cudnn_magic`` loads only what must work from the first cell on: the crash notice
(:mod:`.crash_notice`: the previous kernel's record, read from disk) and the annotation hooks
(:mod:`.annotate`: the fd-2 capture, the exception handler, the cell callbacks). Everything else
loads on first use, from here:

* each magic family is one module with ``load_ipython_extension(ip)``/``unload(ip)`` (IPython's
  own ``core/magics/`` layout): :mod:`.check` (``%cudnn_check``), :mod:`.explain`
  (``%cudnn_explain``, ``%cudnn_annotate``), :mod:`.memory` (``%gpu_memory``), :mod:`.fix`
  (``%cudnn_fix``), :mod:`.guard` (``%cudnn_guard``). Their names are declared with IPython's
  ``MagicsManager.register_lazy``, which loads the module as an extension the first time one of
  them is called (and lists them in ``%lsmagic`` and completion before that, IPython 9);
* what a failing cell, a warning or a crash record gets (:class:`.explainer.Explainer`: the
  knowledge base, the renderers, the fix buttons) is created by the first call of
  :func:`explainer`; the live facts it consults (:func:`cudnn_magic.engines.check.cached_report`:
  the probes) load when a diagnosis first needs them.

Every module below imports what it needs at its top; this module alone defers.
"""

from __future__ import annotations

import importlib
import logging
import sys
from typing import TYPE_CHECKING, Any

from . import annotate, crash_notice
from .magics import LAZY_MAGIC

if TYPE_CHECKING:  # annotations only: these load on first use
    from ..model import Report
    from .explainer import Explainer

log = logging.getLogger("cudnn_magic")

#: magic name -> (its kinds, the module that registers it when IPython loads it as an extension)
MAGICS = {
    "cudnn_check": ("line", "cudnn_magic.shell.check"),
    "cudnn_explain": ("line_cell", "cudnn_magic.shell.explain"),
    "cudnn_annotate": ("line", "cudnn_magic.shell.explain"),
    "gpu_memory": ("line", "cudnn_magic.shell.memory"),
    "cudnn_fix": ("line", "cudnn_magic.shell.fix"),
    "cudnn_guard": ("line", "cudnn_magic.shell.guard"),
}
FAMILIES = tuple(dict.fromkeys(module for _, module in MAGICS.values()))

_EXPLAINER: Explainer | None = None


def cached_report() -> Report | None:
    """This kernel's cached check report, or ``None`` when it cannot be had (never raises)."""
    try:
        from ..engines.check import cached_report as _cached  # the probes load when a diagnosis needs the facts

        return _cached()
    except Exception:  # a broken probe never replaces the user's error
        log.debug("cudnn_magic: cached_report failed", exc_info=True)
        return None


def explainer() -> Explainer:
    """The :class:`~cudnn_magic.shell.explainer.Explainer`, created on the first call."""
    global _EXPLAINER
    if _EXPLAINER is None:
        from .explainer import Explainer  # the knowledge base, renderers and widgets: when a cell first needs them

        _EXPLAINER = Explainer(report=cached_report)
    return _EXPLAINER


class _Deferred:
    """A magic of a family not loaded yet, for an IPython whose lazy magics are invisible until
    used (8.x: ``%lsmagic``, completion and ``%cudnn_check?`` would not know them). Calling it,
    or reading its help, loads the family, which replaces it in the magics table; then it
    forwards. IPython 9 has this built in (``MagicsManager.register_lazy``, ``LazyMagic``)."""

    def __init__(self, ip: Any, kind: str, name: str, module: str) -> None:
        self.ip, self.kind, self.name, self.module = ip, kind, name, module

    def _real(self) -> Any:
        family = sys.modules.get(self.module)
        if family is None:
            family = importlib.import_module(self.module)  # the family's module (MAGICS): on first use only
        if isinstance(self.ip.magics_manager.magics[self.kind].get(self.name), _Deferred):
            family.load_ipython_extension(self.ip)
        return self.ip.magics_manager.magics[self.kind][self.name]

    @property
    def __doc__(self) -> str | None:  # type: ignore[override]
        doc: str | None = self._real().__doc__
        return doc

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._real()(*args, **kwargs)


def _declare_magics(ip: Any) -> None:
    """Declare every magic for loading on first use. A family imported before (an earlier
    ``%load_ext`` in this process) registers at once: it costs nothing."""
    manager = ip.magics_manager
    for module in FAMILIES:
        family = sys.modules.get(module)
        if family is not None:
            family.load_ipython_extension(ip)
    for name, (kind, module) in MAGICS.items():
        if module in sys.modules:
            continue
        if isinstance(LAZY_MAGIC, type):  # IPython 9: its own lazy magics, listed and helped before use
            manager.register_lazy(name, module, kind)
            continue
        for k in (("line", "cell") if kind == "line_cell" else (kind,)):
            manager.magics[k][name] = _Deferred(ip, k, name, module)


def load(ip: Any) -> None:
    """Show the previous kernel's crash (if any), install the annotation hooks and declare the
    magics; a feature that fails to load is logged and skipped so the others still work."""
    for feature in (crash_notice, annotate):  # crash_notice first: it reads the record before the new capture
        try:
            feature.load(ip, explainer)
        except Exception:  # never break %load_ext for one feature
            log.exception("cudnn_magic: loading %s failed", feature.__name__)
    try:
        _declare_magics(ip)
    except Exception:
        log.exception("cudnn_magic: declaring the magics failed")


def unload(ip: Any) -> None:
    """Undo :func:`load`: remove the magics (the loaded families unload themselves: stop the
    samplers, give ``%pip`` back), restore fd 2 and the exception hook."""
    manager = ip.magics_manager
    lazy = getattr(manager, "lazy_magics", {})
    loaded: set[str] = getattr(ip.extension_manager, "loaded", set())
    for module in FAMILIES:
        family = sys.modules.get(module)  # only a family that was loaded has anything to undo
        if family is not None:
            try:
                family.unload(ip)
            except Exception:
                log.exception("cudnn_magic: unloading %s failed", module)
        loaded.discard(module)  # a later %load_ext registers it again
    for name, (_, module) in MAGICS.items():  # the declarations never used
        if lazy.get(name) == module:
            del lazy[name]
        for kind in ("line", "cell"):
            fn = manager.magics[kind].get(name)
            if (isinstance(fn, LAZY_MAGIC) and getattr(fn, "spec", None) == module) or isinstance(fn, _Deferred):
                del manager.magics[kind][name]
    for feature in (annotate, crash_notice):
        try:
            feature.unload(ip)
        except Exception:
            log.exception("cudnn_magic: unloading %s failed", feature.__name__)
