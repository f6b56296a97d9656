"""How a result type shows itself, with no renderer imported here: the render protocol.

A result type that displays (:class:`~cudnn_magic.model.Report`, a diagnosis, a fix plan, a
crash record, a cluster report...) inherits :class:`Displayed`: ``text()``, ``html()``,
IPython's rich display (``_repr_mimebundle_``: ``text/plain`` and ``text/html``; IPython's
display protocol, ``IPython/core/formatters.py``) and the pretty printer's
``_repr_pretty_``. Each asks the renderer registered for its type, found by type along the
MRO, as rich's ``Console`` finds how to render an object by its type
(``rich/console.py`` ``Console.render``) instead of the object importing its renderer.

:mod:`cudnn_magic.render` registers one :class:`Renderer` per type (:func:`register`) when its
module loads. The model does not import it: the package's entry point
(``cudnn_magic/__init__``, always imported before any submodule) hands this module the function
that loads the renderer of a type (:func:`set_loader`), which runs on a type's first display.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

__all__ = ["Displayed", "Renderer", "register", "renderer_for", "set_loader"]


class Renderer(NamedTuple):
    """How one result type renders: ``text(obj) -> str`` (terminal, ``text/plain``) and
    ``html(obj) -> str`` (escaped HTML, no JavaScript)."""

    text: Callable[[Any], str]
    html: Callable[[Any], str]


_RENDERERS: dict[type, Renderer] = {}
_loader: Callable[[type], None] | None = None


def register(cls: type, text: Callable[[Any], str], html: Callable[[Any], str]) -> None:
    """Register the renderer of ``cls`` (and of its subclasses without their own)."""
    _RENDERERS[cls] = Renderer(text, html)


def set_loader(loader: Callable[[type], None]) -> None:
    """Set the function that loads (and so registers) the renderer of a type on its first
    display: the package entry point sets it to :func:`cudnn_magic.render.load_renderer`."""
    global _loader
    _loader = loader


def _registered(cls: type) -> Renderer | None:
    for k in cls.__mro__:
        found = _RENDERERS.get(k)
        if found is not None:
            return found
    return None


def renderer_for(cls: type) -> Renderer:
    """The :class:`Renderer` of ``cls``, loading it on first use.

    Raises:
        LookupError: no renderer is registered for ``cls`` or a base class (a result type
            without an entry in :mod:`cudnn_magic.render`).
    """
    found = _registered(cls)
    if found is None and _loader is not None:
        _loader(cls)
        found = _registered(cls)
    if found is None:
        raise LookupError(f"no renderer registered for {cls.__qualname__}")
    return found


class Displayed:
    """Mixin of the result types that display: text, HTML and IPython's display protocol,
    through the renderer registered for the type."""

    __slots__ = ()

    def text(self) -> str:
        """Plain text (terminal IPython, the command line, ``text/plain``)."""
        return renderer_for(type(self)).text(self)

    def html(self) -> str:
        """Escaped HTML (notebooks, ``text/html``); no JavaScript."""
        return renderer_for(type(self)).html(self)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return {"text/plain": self.text(), "text/html": self.html()}

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(self.text())
