"""Compile the methods ``dataclasses`` writes for this package's classes once per machine, not once
per process, in the command line's own process only (:mod:`cudnn_magic.cli` installs it; a user's
kernel or script that imports the package keeps ``dataclasses`` untouched).

Every ``@dataclass`` class gets its ``__init__``, ``__repr__``, ``__eq__``, ``__hash__`` (and, frozen,
``__setattr__``/``__delattr__``) written as source text and compiled with ``exec`` when the class
is created: about 1 ms per class, 40-50 ms of every ``cudnn-magic check`` for the 47 classes it
loads (``benchmarks/bench_check_floor.py``). Python keeps the bytecode of a module's own source in
``__pycache__``; this keeps the bytecode of that generated text the same way: ``dataclasses`` calls
``exec`` by its global name, and :func:`install` gives the ``dataclasses`` module an ``exec`` that,
for source text executed in this package's modules' globals, reuses a code object compiled from
the very same text (any other caller's ``exec`` is passed through untouched). The same text
compiles to the same code, so the classes are exactly what ``dataclasses`` makes.

The code objects are kept in ``$XDG_CACHE_HOME/cudnn_magic/code/<cache tag>-<sys.hexversion>/<module>.marshal``
(``marshal``, as ``.pyc`` files are; per interpreter version and module, so ``%load_ext`` reads
only its few modules' and a changed module's old code goes), read and written the way
:mod:`cudnn_magic.util.disk_cache` reads and writes (a regular file of this user's that no one
else may write; written at exit, when something new was compiled, under a new unique name and
renamed over the old). A file that cannot be read or is not a ``{str: code}`` mapping is ignored. Nothing here
raises.
"""

from __future__ import annotations

import builtins
import os
import sys
import threading
from types import CodeType
from typing import Any

from .disk_cache import cache_root, read_trusted, write_trusted

__all__ = ["install"]

_PREFIX = __name__.split(".")[0]
_MAX_BYTES = 8 << 20
#: module -> {source text: code} read from its file (or compiled here), and what this process used
_codes: dict[str, dict[str, CodeType]] = {}
_used: dict[str, dict[str, CodeType]] = {}
_dirty: set[str] = set()
_lock = threading.Lock()


def _path(module: str) -> str | None:
    root = cache_root()
    if root is None or not all(part.isidentifier() for part in module.split(".")):
        return None
    # the exact interpreter release: marshal's format and the bytecode both follow it
    tag = sys.implementation.cache_tag or "python"
    return os.path.join(root, "code", f"{tag}-{sys.hexversion:x}", module + ".marshal")


def _load(module: str) -> dict[str, CodeType]:
    import marshal  # start-up cost: as above

    path = _path(module)
    raw = read_trusted(path, _MAX_BYTES) if path is not None else None
    if raw is None:
        return {}
    try:
        data = marshal.loads(raw)
    except Exception:  # noqa: BLE001 - a bad cache is no cache (marshal raises ValueError, EOFError, TypeError)
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if type(k) is str and type(v) is CodeType}


def _save() -> None:
    """Write back each module whose classes needed a new compile, with exactly what this process
    used for it (every class of a module is made when it is imported: what an older version of
    the module left there goes)."""
    import marshal  # start-up cost: as above

    with _lock:
        todo = [(m, dict(_used.get(m, {}))) for m in _dirty]
        _dirty.clear()
    for module, codes in todo:
        path = _path(module)
        if path is None or not codes:
            continue
        try:
            write_trusted(path, marshal.dumps(codes))
        except Exception:  # noqa: BLE001 - the cache is only a speed-up
            pass


def _exec(source: Any, globals: Any = None, locals: Any = None, /, *args: Any, **kwargs: Any) -> Any:
    """``exec`` as ``dataclasses`` calls it; source text run in this package's modules reuses its code."""
    module = globals.get("__name__") if type(globals) is dict else None
    if type(source) is str and type(module) is str and module.split(".")[0] == _PREFIX:
        with _lock:
            codes = _codes.get(module)
            if codes is None:
                codes = _codes[module] = _load(module)
            code = codes.get(source)
            if code is None:
                code = codes[source] = compile(source, "<string>", "exec")
                if not _dirty:
                    import atexit  # start-up cost: only when something new was compiled

                    atexit.register(_save)
                _dirty.add(module)
            _used.setdefault(module, {})[source] = code
        return builtins.exec(code, globals, locals, *args, **kwargs)  # noqa: S102 - dataclasses' generated code
    return builtins.exec(source, globals, locals, *args, **kwargs)  # noqa: S102 - dataclasses' generated code


def install() -> None:
    """Give ``dataclasses`` the caching ``exec`` (once per process; harmless when its ``exec``
    calls change: they then simply do not come here)."""
    import dataclasses  # start-up cost: every result type is a dataclass; IPython imports it anyway

    if getattr(dataclasses, "exec", None) is not _exec:
        dataclasses.exec = _exec  # type: ignore[attr-defined]
