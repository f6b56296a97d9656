"""Registering and removing one magic family's ``Magics`` class.

Each magic family module (:mod:`.check`, :mod:`.explain`, :mod:`.memory`, :mod:`.fix`,
:mod:`.guard`) is loaded by IPython as an extension on its magics' first use
(``MagicsManager.register_lazy``, declared by :mod:`.extension`) and registers its class with
:func:`register`; ``%unload_ext cudnn_magic`` removes it with :func:`unregister`. IPython has
no public call to unregister a magics class: its line and cell tables
(``magics_manager.magics``) and its ``registry`` are edited as ``register_magics`` filled them.
"""

from __future__ import annotations

from typing import Any

from IPython.core import magic as _ipython_magic

#: IPython 9's stand-in for a magic declared lazily and not loaded yet (absent in IPython 8):
#: reading any attribute of it loads the magic, so it is recognised by type, never inspected.
LAZY_MAGIC: Any = getattr(_ipython_magic, "LazyMagic", ())

__all__ = ["LAZY_MAGIC", "register", "unregister"]


def register(ip: Any, cls: type) -> None:
    """Register the magics of ``cls`` in the shell ``ip``."""
    ip.register_magics(cls)


def unregister(ip: Any, cls: type) -> None:
    """Remove every line and cell magic bound to an instance of ``cls``, and ``cls`` from the
    magics registry; nothing when none is registered. Magics still declared lazily are left
    alone (looking at one would load it)."""
    magics = ip.magics_manager.magics
    for kind in ("line", "cell"):
        for name, fn in list(magics.get(kind, {}).items()):
            if not isinstance(fn, LAZY_MAGIC) and isinstance(getattr(fn, "__self__", None), cls):
                del magics[kind][name]
    ip.magics_manager.registry.pop(cls.__name__, None)
