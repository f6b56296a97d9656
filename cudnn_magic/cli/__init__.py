"""The ``cudnn-magic`` command line: the only code that reads ``argv``. :mod:`.main` builds the
parser and dispatches to one module per subcommand (``check``, ``explain``, ``memory``, ``fix``,
``install-startup``, ``crashes``; ``check --dask`` in :mod:`.cluster`)."""

from ..util.codecache import install as _install_code_cache

# The command line is a process of its own: there (only there, never in a user's kernel or
# script that imports cudnn_magic) dataclasses' generated methods are compiled once per machine
# (cudnn_magic.util.codecache). Installed before .main imports anything that defines a dataclass.
_install_code_cache()

from .main import main  # noqa: E402

__all__ = ["main"]
