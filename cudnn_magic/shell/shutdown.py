"""A shutdown or restart the front end asked for is a clean exit, whatever happens after it.

jupyter_client's restart and shutdown send ``shutdown_request``, wait, then send SIGTERM and
SIGKILL to a kernel that has not exited; ipykernel's own shutdown also terminates the kernel's child
processes (a ``subprocess.Popen`` still running). The process may then end by a signal, and
``atexit`` never runs, so the crash record (:mod:`cudnn_magic.capture`) used to keep
``clean_exit: false`` and the next kernel would say "the previous kernel died". The
request itself is the proof: this module wraps the kernel's ``shutdown_request`` handler (in
``kernel.control_handlers`` and ``kernel.shell_handlers``, ipykernel 6 and 7) so the record is
marked clean the moment the request arrives, before ipykernel acts on it. The handler is called
as before, its result (a coroutine in ipykernel 6+) returned unchanged.
"""

from __future__ import annotations

import logging
from typing import Any, Callable

log = logging.getLogger("cudnn_magic")
_MARK = "_cudnn_magic_shutdown_wrapped"


def hook_shutdown(ip: Any, mark_clean: Callable[[], None]) -> Callable[[], None]:
    """Wrap ``ip.kernel``'s ``shutdown_request`` handlers to call ``mark_clean`` first; returns the
    function that puts the originals back. No kernel (terminal IPython): nothing to wrap."""
    kernel = getattr(ip, "kernel", None)
    done: list[tuple[dict[str, Any], Any]] = []
    for table_name in ("control_handlers", "shell_handlers"):
        table = getattr(kernel, table_name, None)
        if not isinstance(table, dict):
            continue
        original = table.get("shutdown_request")
        if original is None or getattr(original, _MARK, False):
            continue

        def wrapper(*args: Any, _original: Any = original, **kwargs: Any) -> Any:
            try:
                mark_clean()
            except Exception:  # never stand between the front end and its shutdown
                log.debug("cudnn_magic: marking the shutdown clean failed", exc_info=True)
            return _original(*args, **kwargs)

        setattr(wrapper, _MARK, True)
        table["shutdown_request"] = wrapper
        done.append((table, original))

    def unhook() -> None:
        for table, original in done:
            if getattr(table.get("shutdown_request"), _MARK, False):
                table["shutdown_request"] = original

    return unhook


__all__ = ["hook_shutdown"]
