"""``python -m cudnn_magic`` runs the command line (see :mod:`cudnn_magic.cli`)."""

import sys

from .cli.main import main

sys.exit(main())
