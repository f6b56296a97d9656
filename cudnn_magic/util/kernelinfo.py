"""The running Jupyter kernel, as far as this process can tell without importing ipykernel
(only :mod:`cudnn_magic.shell` and :mod:`cudnn_magic.ui` import it): its ``IPKernelApp`` when
``ipykernel.kernelapp`` is already loaded and initialized, and the app's connection file found
as ``ipykernel.connect.get_connection_file`` finds it (``traitlets.utils.filefind`` in ``.`` and
the app's ``connection_dir``)."""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["connection_file", "kernel_app"]


def kernel_app() -> Any:
    """The running ``IPKernelApp`` when this process is an ipykernel, else None. Imports
    nothing that is not already imported."""
    mod = sys.modules.get("ipykernel.kernelapp")
    if mod is None:
        return None
    try:
        app_cls = mod.IPKernelApp
        return app_cls.instance() if app_cls.initialized() else None
    except Exception:  # noqa: BLE001
        return None


def connection_file(app: Any = None) -> str | None:
    """The kernel's connection file (absolute when found), or None outside a kernel. Never raises."""
    app = app if app is not None else kernel_app()
    if app is None:
        return None
    try:
        # only inside a running kernel, where traitlets is already loaded
        from traitlets.utils import filefind

        return str(filefind(app.connection_file, [".", app.connection_dir]))
    except Exception:  # noqa: BLE001
        return getattr(app, "connection_file", None) or None
