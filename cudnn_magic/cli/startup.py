"""``cudnn-magic install-startup [--undo] [--ipython-dir DIR | --profile-dir DIR]`` (the engine
is :mod:`cudnn_magic.engines.startup`)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, TextIO

from ..engines.startup import CONFIG_NAME, env_config_dir, install_startup, profile_config_dir

__all__ = ["cli_install_startup"]


def cli_install_startup(args: Any, out: TextIO | None = None) -> int:
    """``cudnn-magic install-startup [--undo] [--ipython-dir DIR | --profile-dir DIR]``: 0 when
    done, 2 when a directory given does not exist or the file cannot be written (the message
    names the option that chose the place)."""
    out = out or sys.stdout
    target: Path | None = None
    option = None
    if getattr(args, "profile_dir", None):
        option, target = "--profile-dir", Path(args.profile_dir)
        if not target.is_dir():
            print(f"cudnn-magic: --profile-dir {target}: no such directory (create the profile with "
                  f"`ipython profile create`, or leave out --profile-dir)", file=sys.stderr)
            return 2
    elif getattr(args, "ipython_dir", None):
        option = "--ipython-dir"
        if not Path(args.ipython_dir).is_dir():
            print(f"cudnn-magic: --ipython-dir {args.ipython_dir}: no such directory (give an existing IPython "
                  "directory such as ~/.ipython, or leave out --ipython-dir)", file=sys.stderr)
            return 2
        target = profile_config_dir(args.ipython_dir)
    try:
        msg = install_startup(undo=bool(getattr(args, "undo", False)), profile_dir=target)
    except OSError as exc:
        where = target or env_config_dir()
        hint = ("Use --ipython-dir to write into your own IPython profile instead." if option is None else
                f"Give another directory with {option}, or check its permissions.")
        print(f"cudnn-magic: cannot write {where / CONFIG_NAME}: {exc.strerror or exc}. {hint}", file=sys.stderr)
        return 2
    out.write(msg + "\n")
    return 0
