"""IPython connectivity: the extension's load/unload, one registration for every magic family.

Only :mod:`cudnn_magic.shell` (and :mod:`cudnn_magic.ui`, the widgets) knows IPython. Each magic
family is one module here with ``load(ip)``/``unload(ip)`` (IPython's own ``core/magics/``
layout): :mod:`.crash_notice` (the previous kernel's crash, at load time), :mod:`.annotate`
(error annotation; its magics ``%cudnn_explain``/``%cudnn_annotate`` are in :mod:`.explain`),
:mod:`.check` (``%cudnn_check``), :mod:`.memory` (``%gpu_memory``), :mod:`.fix` (``%cudnn_fix``),
:mod:`.guard` (``%cudnn_guard``).
"""

from __future__ import annotations

import importlib
import logging
from typing import Any

from .check import CudnnMagics

log = logging.getLogger("cudnn_magic")

# Modules with load(ip)/unload(ip), loaded in this order, unloaded in reverse. crash_notice comes
# first: it reads the previous kernel's record before annotate starts this kernel's capture.
_FEATURES = ("cudnn_magic.shell.crash_notice", "cudnn_magic.shell.annotate", "cudnn_magic.shell.memory",
             "cudnn_magic.shell.fix", "cudnn_magic.shell.guard")


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
