"""The ``cudnn-magic`` command line: the only code that reads ``argv``. :mod:`.main` builds the
parser and dispatches to one module per subcommand (``check``, ``explain``, ``memory``, ``fix``,
``install-startup``, ``crashes``; ``check --dask`` in :mod:`.cluster`)."""

from .main import main

__all__ = ["main"]
