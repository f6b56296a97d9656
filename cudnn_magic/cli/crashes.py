"""``cudnn-magic crashes [--json] [--key KEY] [--last N | --all]``: the crash records of kernels
that died."""

from __future__ import annotations

import json
import sys
from typing import Any

from ..engines.crash import all_crashes, diagnose_record, key_exists, previous_crashes, records_root, valid_key
from ..render.crash import crash_summary, crash_text
from ..render.paths import terminal_width, wrap

#: Records listed when neither ``--last`` nor ``--all`` is given: the newest few (a records folder
#: shared by every kernel of a machine can hold dozens).
DEFAULT_LAST = 5


def cli_crashes(as_json: bool = False, out: Any = None, key: str | None = None, err: Any = None,
                last: int | None = DEFAULT_LAST, width: int | None = None) -> int:
    """``cudnn-magic crashes``: the newest ``last`` crash records (every one when ``last`` is
    ``None``: ``--all``), of every key or of ``key``, newest first, with their diagnosis. Text: the
    newest record in full (native log lines cut to ``width`` columns, default the terminal's), one
    line for each other; ``--json``: the same records whole.

    Returns:
        0; 2 (usage error, on ``err``) when ``KEY`` is not one record key (:func:`valid_key`:
        ``../../x``, an absolute path, ``a/b``) or no record of that key exists.
    """
    out = out or sys.stdout
    err = err or sys.stderr

    if key is not None and not valid_key(key):
        err.write(f"cudnn-magic crashes: --key takes one record key (a single path component such as "
                  f"kernel-1234abcd, tmpab12cd34 or terminal-pts-3, as listed by `cudnn-magic crashes`), "
                  f"not {key!r}\n")
        return 2
    root = records_root()
    if key is not None and not key_exists(key, root):
        err.write(f"cudnn-magic crashes: no records with key {key!r} under {root} (`cudnn-magic crashes --all` "
                  f"lists the keys of the kernels that died)\n")
        return 2
    recs = previous_crashes(key, root, include_shown=True) if key else all_crashes(root)
    total = len(recs)
    if last is not None:
        recs = recs[:last]
    for r in recs:
        diagnose_record(r)
    if as_json:
        json.dump([r.to_json() for r in recs], out, indent=2)
        out.write("\n")
        return 0
    if not recs:
        out.write(f"No crash records{f' with key {key!r}' if key else ''} under {root}.\n")
        return 0
    width = width or terminal_width()

    shown = (f"; the newest {len(recs)} shown (--last N or --all for the {total - len(recs)} older)"
             if total > len(recs) else "")
    head = f"{total} crash record{'s' if total != 1 else ''} under {root}, newest first{shown}."
    out.write("\n".join(wrap(head, width, "", "  ")) + "\n\n")
    out.write(crash_text(recs[0], width=width, listed=True))
    out.write("\n")
    if len(recs) > 1:
        out.write("\n" + "\n".join(wrap(f"Older ({len(recs) - 1}; `--key KEY` shows the newest of a key in full):",
                                         width, "", "  ")) + "\n")
        for r in recs[1:]:
            out.write(crash_summary(r, width) + "\n")
    return 0
