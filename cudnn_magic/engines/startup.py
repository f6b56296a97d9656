"""``cudnn-magic install-startup [--undo]``: load the extension in every IPython kernel of this
environment, so the capture is on and the previous kernel's crash record is read even in
notebooks that never typed ``%load_ext cudnn_magic``.

How IPython finds the setting (IPython 9 ``IPython/core/application.py``): every IPython
application loads ``ipython_config.py``/``.json`` and then its own ``<name>_config.py``/``.json``
(``ipython_kernel_config`` for ipykernel's ``IPKernelApp``, named ``ipython-kernel``) from, in
rising priority, ``SYSTEM_CONFIG_DIRS`` (``/usr/local/etc/ipython``, ``/etc/ipython``),
``ENV_CONFIG_DIRS`` (``sys.prefix/etc/ipython``: this environment) and the profile directory
(``$IPYTHONDIR/profile_default``). IPython reads no ``.d`` directories. Within one directory
the ``.py`` and ``.json`` files merge (traitlets ``Application._load_config_files``), and a
lazy ``c.InteractiveShellApp.extensions.append(...)`` merges with the lists of the other files
(traitlets ``LazyConfigValue.merge_into``); only a later plain assignment
(``c.InteractiveShellApp.extensions = [...]``) in a higher-priority file replaces it.

So this writes, into ``ipython_kernel_config.py`` of ``sys.prefix/etc/ipython`` (default) or of
a profile directory, one marked block::

    # >>> cudnn-magic install-startup >>>
    ... c.InteractiveShellApp.extensions.append('cudnn_magic') ...
    # <<< cudnn-magic install-startup <<<

appended to the file if it exists (the user's config is never rewritten otherwise), created if
not; ``--undo`` gives the file back byte for byte (a file without a final newline keeps
the one added). The block adds the extension only when the package is importable, so uninstalling
``cudnn-magic`` without ``--undo`` does not make kernels log an error. ``--undo`` removes
exactly that block (and the file, if the block was all it held). Only kernels are affected
(terminal IPython reads ``ipython_config.py``, which is not touched). New kernels pick it up;
running ones are unchanged until restarted.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ..util.files import atomic_write, read_regular

_MAX_CONFIG = 16 << 20  # bytes of ipython_kernel_config.py read at most

BEGIN = "# >>> cudnn-magic install-startup >>>"
END = "# <<< cudnn-magic install-startup <<<"
CONFIG_NAME = "ipython_kernel_config.py"

BLOCK = f"""{BEGIN}
# Added by `cudnn-magic install-startup`; remove with `cudnn-magic install-startup --undo`.
# Loads the cudnn_magic IPython extension in every kernel of this environment.
try:
    import importlib.util as _cudnn_magic_util
    if _cudnn_magic_util.find_spec("cudnn_magic") is not None:
        c.InteractiveShellApp.extensions.append("cudnn_magic")
    del _cudnn_magic_util
except Exception:
    pass
{END}
"""


def env_config_dir() -> Path:
    """This environment's IPython config directory, ``sys.prefix/etc/ipython`` (IPython's
    ``ENV_CONFIG_DIRS``)."""
    return Path(sys.prefix) / "etc" / "ipython"


def profile_config_dir(ipython_dir: str | os.PathLike | None = None, profile: str = "default") -> Path:
    """``<ipython_dir>/profile_<profile>`` (default IPython dir: ``$IPYTHONDIR`` or ``~/.ipython``)."""
    if ipython_dir is None:
        from IPython.paths import get_ipython_dir  # start-up cost: IPython only to find its profile directory

        ipython_dir = get_ipython_dir()
    return Path(ipython_dir) / f"profile_{profile}"


def _split(text: str) -> tuple[str, bool]:
    """``text`` without our block(s), and whether one was there."""
    out: list[str] = []
    inside = found = False
    for line in text.splitlines(keepends=True):
        s = line.strip()
        if s == BEGIN:
            inside = found = True
            continue
        if inside:
            if s == END:
                inside = False
            continue
        out.append(line)
    if inside:  # an unterminated block: keep the text as it was rather than guess
        return text, False
    return "".join(out), found


def install_startup(undo: bool = False, profile_dir: str | os.PathLike | None = None) -> str:
    """Add (or with ``undo`` remove) the marked block that loads the extension at kernel start.

    Args:
        undo: remove the block instead.
        profile_dir: directory to write ``ipython_kernel_config.py`` into (a profile directory
            such as ``~/.ipython/profile_default``); default :func:`env_config_dir`.

    Returns:
        One sentence: what was written or removed, and where.

    Raises:
        OSError: the directory or file cannot be written (e.g. a read-only system prefix: use
            a profile directory instead), or the file is not a regular file (a FIFO) or is over 16 MiB.
    """
    d = Path(profile_dir) if profile_dir is not None else env_config_dir()
    path = d / CONFIG_NAME
    try:
        raw = read_regular(path, _MAX_CONFIG + 1)  # a FIFO there is refused (OSError), never waited on
        if len(raw) > _MAX_CONFIG:
            raise OSError(27, f"{path} is larger than {_MAX_CONFIG} bytes; not edited")
        text = raw.decode("utf-8")
        exists = True
    except FileNotFoundError:
        text, exists = "", False
    rest, had = _split(text)
    if undo:
        if not had:
            return f"Nothing to undo: {path} has no cudnn-magic block."
        if rest.strip():
            _write(path, rest)
            return f"Removed the cudnn-magic block from {path}; new kernels no longer load the extension."
        path.unlink()
        return f"Removed {path} (it held only the cudnn-magic block); new kernels no longer load the extension."
    if had:
        return f"Already installed: {path} loads cudnn_magic in every new kernel."
    d.mkdir(parents=True, exist_ok=True)
    sep = "" if not text or text.endswith("\n") else "\n"  # undo then gives the file back byte for byte
    _write(path, text + sep + BLOCK)
    verb = "Appended the cudnn-magic block to" if exists else "Wrote"
    note = ""
    if exists and "InteractiveShellApp.extensions =" in rest:
        note = (" Note: this file also assigns c.InteractiveShellApp.extensions; an assignment AFTER the block "
                "would replace it.")
    undo_cmd = "cudnn-magic install-startup --undo" + ("" if profile_dir is None else f" --profile-dir {d}")
    return f"{verb} {path}: every new IPython kernel started with {_python_of(d)} loads cudnn_magic (undo: {undo_cmd}).{note}"


def _python_of(d: Path) -> str:
    return sys.executable if d == env_config_dir() else f"this profile ({d})"


def _write(path: Path, text: str) -> None:
    """Replace ``path`` atomically, keeping its permission bits (0o644 for a new file)."""
    try:
        mode = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = 0o644
    atomic_write(path, text.encode("utf-8"), mode)


__all__ = ["BEGIN", "BLOCK", "CONFIG_NAME", "END", "env_config_dir",
           "install_startup", "profile_config_dir"]
