"""The finding for cuDNN files replaced on disk while this process runs them
(``cudnn-replaced-on-disk``): ``pip install -U`` in a kernel that already loaded cuDNN changes the
files, not the kernel. Facts from :mod:`cudnn_magic.probes.replaced` (which copy is mapped, its
own release) and the new file at each path (what a restart maps from there)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from ..model import Finding, Fix, LibraryCopy

_NOW = re.compile(r"the file there now is cuDNN (\d+(?:\.\d+)*)")


def now_on_disk(c: LibraryCopy) -> str | None:
    """The release the file at a replaced copy's path holds now (read from that file), or None."""
    m = _NOW.search(c.replaced or "")
    return m.group(1) if m else None


def replaced_findings(loaded: Iterable[LibraryCopy]) -> list[Finding]:
    """One finding when mapped cuDNN files were replaced or removed on disk since they were loaded:
    the release the process still runs (the mapped copies'), the release on disk now, and that a
    restart maps the files on disk. ``restart-kernel`` is offered only when the restart changes
    the release mapped (both known and different): a reinstall of the same release, or an unknown
    one, offers no fix. Pure: reads nothing."""
    gone = [c for c in loaded if c.replaced]
    if not gone:
        return []
    mapped = sorted({c.version for c in gone if c.version})
    now = sorted({v for v in (now_on_disk(c) for c in gone) if v})
    run = " and ".join(mapped) if mapped else "an unknown release"
    lines = [f"{c.path}: the mapped copy is cuDNN {c.version or '?'} "
             f"({c.version_source or (c.error or 'release not read')}); {c.replaced}." for c in gone]
    detail = (" ".join(lines) + " A process keeps the library files it mapped until it exits: every cuDNN call in "
              "this process still runs the mapped copy, whatever pip wrote since; the files now on disk are loaded "
              "only by a new process.")
    fixes: tuple[Fix, ...] = ()
    if mapped and now and set(mapped) != set(now):
        title = (f"This process still runs cuDNN {run}: its files were replaced on disk by cuDNN {' and '.join(now)} "
                 "since they were loaded")
        detail += f" A restart (of the kernel or the program) maps the files on disk now (cuDNN {' and '.join(now)})."
        fixes = (Fix("restart-kernel", f"Restart the kernel to load cuDNN {' and '.join(now)}",
                     "restart the kernel: the next load maps the files on disk now", True, True),)
    elif mapped and now:
        title = f"This process runs cuDNN {run}; its files were rewritten on disk with the same release since they were loaded"
        detail += " A restart maps the same release again (the same release was written), so it changes nothing for cuDNN."
    else:
        title = (f"This process still runs cuDNN {run}, loaded from files that were replaced or removed on disk since "
                 "they were loaded")
        detail += (" What a restart would map is not known here (the release on one side could not be read), so no "
                   "restart is offered for it.")
    return [Finding("cudnn-replaced-on-disk", "warning", title, detail, fixes)]


__all__ = ["now_on_disk", "replaced_findings"]
