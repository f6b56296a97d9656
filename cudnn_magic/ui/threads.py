"""Background threads that update widgets of the cell that started them.

ipywidgets' trait sync goes over IOPub, which is thread-safe; but since ipykernel 7 the parent
header (which cell an update belongs to) is per thread (ipykernel #1450/#1451, ipywidgets
#4020). :func:`start_cell_thread` captures the calling cell's parent header and context in the
caller's thread and sets them in the new one (``set_thread_parent``; ipykernel 6 keeps one
process-wide parent and needs nothing). The target should only assign widget values.
"""

from __future__ import annotations

import contextvars
import threading
from typing import Any, Callable


def current_parent(shell: Any) -> Any:
    """The parent header of the cell running now, or None (no kernel, or unknown)."""
    kernel = getattr(shell, "kernel", None)
    if kernel is None or not hasattr(kernel, "get_parent"):
        return None
    try:
        return kernel.get_parent()
    except Exception:  # noqa: BLE001
        return None


def _run_with_parent(shell: Any, parent: Any, target: Callable[..., Any], *args: Any) -> None:
    tokens = None
    setter = getattr(shell, "set_thread_parent", None)  # ipykernel >= 7: this thread only
    if setter is not None and parent:
        try:
            tokens = setter(parent)
        except Exception:  # noqa: BLE001
            tokens = None
    try:
        target(*args)
    finally:
        reset = getattr(shell, "reset_thread_parent", None)
        if reset is not None and tokens is not None:
            try:
                reset(tokens)
            except Exception:  # noqa: BLE001
                pass


def start_cell_thread(shell: Any, target: Callable[..., Any], *args: Any, name: str | None = None) -> threading.Thread:
    """Start ``target(*args)`` in a daemon thread tied to the calling cell (see module doc)."""
    ctx = contextvars.copy_context()
    thread = threading.Thread(target=ctx.run, args=(_run_with_parent, shell, current_parent(shell), target, *args),
                              name=name, daemon=True)
    thread.start()
    return thread
