"""Which folder under ``site-packages`` each cuDNN wheel family writes (pure data and lookups).

Sources: the wheels' ``RECORD`` (``nvidia-cudnn-jit-cu12`` 9.27.0.42, ``-cu13`` 9.24.0.43:
``nvidia/cudnn_jit``; ``nvidia-cudnn-cu12`` 9.x and ``-cu13``: ``nvidia/cudnn``, docs/facts.md "Two
cuDNNs at once"; ``nvidia-cudnn-cu11``: ``nvidia/cudnn``); ``tests/unit/whatif/test_whatif.py`` checks the
table against the ``RECORD`` of real wheels. Two families that write one folder overwrite each
other's files (pip writes each file of the new wheel over what is there).
"""

from __future__ import annotations

import re

#: cuDNN wheel family (canonical name pattern) -> the folder it writes under site-packages.
CUDNN_FOLDERS: tuple[tuple[str, str], ...] = (
    (r"^nvidia-cudnn-jit-cu\d+$", "nvidia/cudnn_jit"),
    (r"^nvidia-cudnn-cu\d+$", "nvidia/cudnn"),
)


_SEPARATORS = re.compile(r"[-_.]+")


def canonical(name: str) -> str:
    """PEP 503 name: runs of ``-``, ``_``, ``.`` as one ``-``, lower case (the rule
    ``packaging.utils.canonicalize_name`` applies; not imported: with the platform tags it pulls
    in, it costs the check's start-up about 15 ms)."""
    return _SEPARATORS.sub("-", name).lower()


def cudnn_folder(dist_name: str) -> str | None:
    """The folder (relative to site-packages) a cuDNN wheel family writes, or None when
    ``dist_name`` is not a cuDNN wheel of a known family (:data:`CUDNN_FOLDERS`)."""
    n = canonical(dist_name)
    for pattern, folder in CUDNN_FOLDERS:
        if re.match(pattern, n):
            return folder
    return None


__all__ = ["CUDNN_FOLDERS", "canonical", "cudnn_folder"]
