"""``%cudnn_guard on|off|status``: ``%pip install`` runs the cuDNN what-if first.
The engine is :func:`cudnn_magic.engines.whatif.what_if`;
``%cudnn_check --what-if``/``--against`` are in :mod:`cudnn_magic.shell.check`.

``%cudnn_guard on`` wraps IPython's own ``%pip`` line magic (``IPython.core.magics.packaging``,
registered in ``ip.magics_manager.magics["line"]["pip"]``): ``%pip install ...`` first runs the
what-if (:func:`cudnn_magic.engines.whatif.what_if`, pip's dry run in this kernel's
interpreter) and stops with the prediction when the install would add an error finding;
``%pip install --force ...`` drops ``--force`` and runs pip as asked. Every other ``%pip``
command passes through unchanged. ``off`` (and ``%unload_ext``) puts IPython's ``%pip`` back.

A stop never fails the cell: IPython's ``%pip`` never does (it prints pip's output and the cell
succeeds, a failed install too), and the guard keeps ``%pip``'s contract. Bad input to
``%cudnn_guard`` itself (``%cudnn_guard maybe``) is a ``UsageError``, as for every magic of ours.
"""

from __future__ import annotations

import re
import shlex
from typing import Any, Callable

from IPython.core import magic_arguments
from IPython.core.magic import Magics, line_magic, magics_class

from ..engines.whatif import what_if
from ..probes.pip_report import PipError, split_requirements
from ..render.whatif import WhatIfView
from .args import parse_magic_line
from .magics import register, unregister

# pip install options that only change pip's output: dropped from the what-if, kept for pip.
_OUTPUT_ONLY = {"-q", "--quiet", "-v", "--verbose", "--no-color", "--no-warn-script-location",
                "--disable-pip-version-check", "--no-input", "--root-user-action", "--progress-bar"}
_OUTPUT_WITH_VALUE = {"--root-user-action", "--progress-bar"}

_state: dict[str, Any] = {"original": None, "ip": None}


def what_if_words(line: str) -> list[str] | str:
    """The words of ``%pip install ...`` a what-if can predict (requirements and index
    options, output options dropped), or the reason it cannot (an editable, a requirements
    file, a path: only requirements and index options are predicted)."""

    try:
        words = shlex.split(line)
    except ValueError as exc:
        return f"cannot split the line ({exc})"
    words = words[1:]  # "install"
    keep: list[str] = []
    skip = False
    for w in words:
        if skip:
            skip = False
            continue
        if w.split("=", 1)[0] in _OUTPUT_ONLY:
            skip = w in _OUTPUT_WITH_VALUE
            continue
        keep.append(w)
    split = split_requirements(keep)
    if isinstance(split, PipError):
        return split.message
    return keep


def without_force(line: str) -> str:
    """``line`` with its ``--force`` word taken out and every other character as the user typed it:
    IPython's ``%pip`` hands its line to the shell as it is (``IPython.core.magics.packaging``),
    so quotes, markers (``"pip; python_version>'3'"``) and globs must reach the shell unchanged.
    The text is cut where the shell's own split (``shlex``) agrees that only ``--force`` went;
    otherwise the words are re-quoted with ``shlex.join``."""
    try:
        want = [w for w in shlex.split(line) if w != "--force"]
    except ValueError:
        return line.replace("--force", "", 1)
    cut = re.sub(r"(?:(?<=\s)|^)--force(?=\s|$)", "", line)
    try:
        if shlex.split(cut) == want:
            return cut.strip()
    except ValueError:
        pass
    return shlex.join(want)


def guarded_pip(original: Callable[[str], Any]) -> Callable[..., Any]:
    """The ``%pip`` replacement that runs the what-if before ``install``."""

    def pip(line: str = "", *args: Any, **kwargs: Any) -> Any:
        words = line.split()
        if not words or words[0] != "install":
            return original(line, *args, **kwargs)
        if "--force" in words:
            print("cudnn_guard: --force given: running pip without the what-if")
            return original(without_force(line), *args, **kwargs)

        reqs = what_if_words(line)
        if isinstance(reqs, str):
            print(f"cudnn_guard: cannot predict this install ({reqs}); running pip as asked")
            return original(line, *args, **kwargs)
        result = what_if(reqs)
        if isinstance(result, PipError):
            print(f"cudnn_guard: stopped, nothing installed: {result.message} "
                  "(%pip install --force ... runs pip anyway)")
            return None
        if result.introduces_error:
            n = sum(1 for f in result.introduced if f.severity == "error")
            print(f"cudnn_guard: stopped, nothing installed: this install would add {n} cuDNN error"
                  f"{'s' if n != 1 else ''} (prediction below). Run %pip install --force ... to install anyway"
                  + (f", or install {result.safer} instead" if result.safer else
                     ", or leave the environment as it is (nothing else was predicted error-free)"
                     if result.safer_why else "") + ".")
            return WhatIfView(result)
        return original(line, *args, **kwargs)

    pip.__doc__ = (getattr(original, "__doc__", None) or "") + "\n(cudnn_guard: install runs the cuDNN what-if first)"
    pip.__wrapped__ = original  # type: ignore[attr-defined]
    return pip


def guard(ip: Any, state: str) -> str:
    """Turn the guard on or off, or say its state; returns the sentence shown."""
    line_magics = ip.magics_manager.magics["line"]
    current = line_magics.get("pip")
    on = _state["original"] is not None and getattr(current, "__wrapped__", None) is _state["original"]
    if state == "status":
        return "cudnn_guard is on: %pip install runs the cuDNN what-if first" if on else "cudnn_guard is off"
    if state == "on":
        if on:
            return "cudnn_guard is already on"
        # IPython 9 registers %pip lazily (IPython.core.magic.LazyMagic): a stand-in that loads
        # PackagingMagics on first use, then looks the magic up by name again (which would find
        # this wrapper: endless recursion). Reading an attribute resolves it; take the real one.
        if current is not None:
            getattr(current, "__self__", None)
            current = line_magics.get("pip")
        if current is not None and not isinstance(getattr(current, "__self__", None), Magics):
            try:
                from IPython.core.magics.packaging import PackagingMagics  # only when IPython's %pip is still lazy

                ip.register_magics(PackagingMagics)
                current = line_magics.get("pip")
            except ImportError:
                pass
        if current is None:
            return "cudnn_guard: this IPython has no %pip magic to guard"
        _state.update(original=current, ip=ip)
        line_magics["pip"] = guarded_pip(current)
        return ("cudnn_guard is on: %pip install now predicts its cuDNN findings first and stops on an error "
                "(%pip install --force ... goes on)")
    if on:
        line_magics["pip"] = _state["original"]
    _state.update(original=None, ip=None)
    return "cudnn_guard is off" + ("" if on else " (it was not on)")


@magics_class
class PreventionMagics(Magics):
    """``%cudnn_guard``."""

    @line_magic
    @magic_arguments.magic_arguments()
    @magic_arguments.argument("state", nargs="?", default="status", choices=("on", "off", "status"),
                              help="on: %%pip install runs the what-if first and stops on a predicted error; "
                                   "off: IPython's %%pip as it was; status (default)")
    def cudnn_guard(self, line: str = "") -> None:
        """Guard ``%pip install`` with the cuDNN what-if.

        In [1]: %cudnn_guard on
        In [2]: %pip install nvidia-cudnn-cu12          # stopped when it would overwrite cu13's cuDNN
        In [3]: %pip install --force nvidia-cudnn-cu12  # installs anyway
        """
        args = parse_magic_line(self.cudnn_guard, line)
        print(guard(self.shell, args.state))


def load_ipython_extension(ip: Any) -> None:
    """Register ``%cudnn_guard`` (the guard starts off; IPython loads this module on its first
    use: :mod:`.extension` declares it lazily)."""
    register(ip, PreventionMagics)


def unload(ip: Any) -> None:
    """Put IPython's ``%pip`` back and remove ``%cudnn_guard``."""
    if _state["original"] is not None:
        guard(ip, "off")
    unregister(ip, PreventionMagics)
