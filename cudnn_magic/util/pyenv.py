"""The Python environment a check is about: this interpreter, or another process's.

The probes read ``sys.path``, ``sys.prefix``, ``sys.executable``, ``site`` and ``sysconfig`` to
find the installed frameworks and cuDNN wheels. ``cudnn-magic check --pid PID`` judges another
running process, so those facts must be that process's: :func:`checking` sets a
:class:`PythonEnv` for the current context (a :mod:`contextvars` variable: another thread of a
kernel is not affected), and the accessors below answer from it, else from this interpreter,
read live (a ``sys.path`` changed in a notebook is seen at once).

Pure data and lookups: nothing here imports, loads or runs anything.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = [
    "PythonEnv",
    "base_prefix",
    "checking",
    "executable",
    "maps_path",
    "may_load_libraries",
    "prefix",
    "purelib_dirs",
    "search_path",
    "site_packages",
    "target",
    "user_site",
]


@dataclass(frozen=True)
class PythonEnv:
    """Another interpreter's layout, as :mod:`cudnn_magic.engines.process` rebuilt it.

    Attributes:
        executable: the interpreter as the process started it (``sys.executable``: a venv's
            ``bin/python``, whose ``pyvenv.cfg`` decides ``prefix``).
        sys_path: its ``sys.path`` at start, every entry absolute (the working-directory entry
            as the process's working directory).
        prefix, base_prefix: ``sys.prefix`` and ``sys.base_prefix`` (differ in a venv).
        site_packages: ``site.getsitepackages()`` of that interpreter, in its order.
        user_site: its user site-packages when it is enabled there, else None.
        purelib, platlib: ``sysconfig.get_paths()``'s for that interpreter (where pip installs).
        maps_path: the process's memory map (``/proc/PID/maps``): which objects it mapped.
        pid: the process id.
        may_load: whether a library of that process's environment may be loaded in a child
            process here to ask its version (:func:`may_load_libraries`): only when this process
            runs as that process's user, so nothing it controls runs with more rights than it has.
    """

    executable: str
    sys_path: tuple[str, ...]
    prefix: str
    base_prefix: str
    site_packages: tuple[str, ...] = ()
    user_site: str | None = None
    purelib: str = ""
    platlib: str = ""
    maps_path: str = "/proc/self/maps"
    pid: int | None = None
    may_load: bool = True


_current: contextvars.ContextVar[PythonEnv | None] = contextvars.ContextVar("cudnn_magic_python_env", default=None)


@contextlib.contextmanager
def checking(env: PythonEnv) -> Iterator[PythonEnv]:
    """Within the ``with`` block (this context only), the probes read ``env``'s layout."""
    token = _current.set(env)
    try:
        yield env
    finally:
        _current.reset(token)


def target() -> PythonEnv | None:
    """The other interpreter being checked, or None for this one."""
    return _current.get()


def search_path() -> list[str]:
    """``sys.path`` of the interpreter being checked (this one's, live, by default)."""
    env = _current.get()
    return list(env.sys_path) if env is not None else sys.path


def executable() -> str:
    """Its ``sys.executable`` (may be empty for an embedded interpreter)."""
    env = _current.get()
    return env.executable if env is not None else (sys.executable or "")


def prefix() -> str:
    env = _current.get()
    return env.prefix if env is not None else sys.prefix


def base_prefix() -> str:
    env = _current.get()
    return env.base_prefix if env is not None else sys.base_prefix


def site_packages() -> list[str]:
    """``site.getsitepackages()`` of the interpreter being checked."""
    env = _current.get()
    if env is not None:
        return list(env.site_packages)
    import site  # start-up cost: only a probe that needs the site folders

    return list(site.getsitepackages())


def user_site() -> str | None:
    """Its user site-packages when ``site.ENABLE_USER_SITE`` is true there, else None."""
    env = _current.get()
    if env is not None:
        return env.user_site
    import site  # start-up cost: only a probe that needs the site folders

    return site.getusersitepackages() if site.ENABLE_USER_SITE else None


def purelib_dirs() -> set[str]:
    """Real paths of ``sysconfig``'s purelib and platlib (where ``pip install`` writes)."""
    env = _current.get()
    if env is not None:
        return {os.path.realpath(p) for p in (env.purelib, env.platlib) if p}
    import sysconfig  # start-up cost: only a probe that needs the install scheme

    return {os.path.realpath(sysconfig.get_paths()[k]) for k in ("purelib", "platlib")}


def purelib() -> str:
    env = _current.get()
    if env is not None:
        return env.purelib
    import sysconfig  # start-up cost: only a probe that needs the install scheme

    return sysconfig.get_paths()["purelib"]


def may_load_libraries() -> bool:
    """May a library found for the interpreter being checked be loaded (in a child process) to ask
    its version? Always for this interpreter; for another process only when this one runs as its
    user (loading a library runs its constructors)."""
    env = _current.get()
    return env is None or env.may_load


def maps_path() -> str:
    """The memory map of the process being checked (``/proc/self/maps`` for this one)."""
    env = _current.get()
    return env.maps_path if env is not None else "/proc/self/maps"


def imported(name: str) -> object | None:
    """``sys.modules[name]`` when the check is about this interpreter; None for another process
    (its imported modules cannot be asked from here)."""
    return sys.modules.get(name) if _current.get() is None else None
