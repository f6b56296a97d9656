"""Every text and HTML rendering of the result types, and the ``check``/``explain`` JSON.

Renderers are pure functions of their data returning one string or dict (friendly-traceback's
``base_formatters`` contract). One module per result family: :mod:`.report` (the check report,
with :mod:`.consumers`), :mod:`.diagnosis`, :mod:`.memory`, :mod:`.crash`, :mod:`.cluster`,
:mod:`.fixes`, :mod:`.whatif`, :mod:`.manifest`.

The result types render through the protocol of :mod:`cudnn_magic.model.display`: a module here
registers the text and HTML renderer of its types when it loads, and :func:`load_renderer`
(handed to the model by the package entry point) loads the module of a type on its first
display, so showing a crash record does not load the check report's renderer.
"""

from __future__ import annotations

import importlib

__all__ = ["load_renderer"]

#: result type name (a :mod:`cudnn_magic.model` class) -> the module here that registers its renderer
_HOMES = {
    "Report": ".report",
    "Diagnosis": ".diagnosis",
    "Diagnoses": ".diagnosis",
    "FixPlan": ".fixes",
    "FixResult": ".fixes",
    "CrashRecord": ".crash",
    "ClusterReport": ".cluster",
}


def load_renderer(cls: type) -> None:
    """Load the module that registers the renderer of ``cls`` (or of its nearest base class
    listed in :data:`_HOMES`); nothing when none is listed."""
    for k in cls.__mro__:
        home = _HOMES.get(k.__name__)
        if home is not None and k.__module__.startswith("cudnn_magic.model"):
            importlib.import_module(home, __name__)
            return
