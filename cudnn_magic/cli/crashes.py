"""``cudnn-magic crashes [--json] [--key KEY]``: the crash records of kernels that died."""

from __future__ import annotations

import json
import sys
from typing import Any

from ..engines.crash import all_crashes, diagnose_record, previous_crashes, records_root, valid_key


def cli_crashes(as_json: bool = False, out: Any = None, key: str | None = None, err: Any = None) -> int:
    """``cudnn-magic crashes [--json] [--key KEY]``: list crash records (every key, newest
    first) with their diagnosis; exit 0, or 2 (usage error, on ``err``) when ``KEY`` is not one
    record key (:func:`valid_key`: ``../../x``, an absolute path, ``a/b``)."""
    out = out or sys.stdout
    err = err or sys.stderr

    if key is not None and not valid_key(key):
        err.write(f"cudnn-magic crashes: --key takes one record key (a single path component such as "
                  f"kernel-1234abcd, tmpab12cd34 or terminal-pts-3, as listed by `cudnn-magic crashes`), "
                  f"not {key!r}\n")
        return 2
    recs = previous_crashes(key, records_root(), include_shown=True) if key else all_crashes()
    for r in recs:
        diagnose_record(r)
    if as_json:
        json.dump([r.to_json() for r in recs], out, indent=2)
        out.write("\n")
        return 0
    if not recs:
        out.write(f"No crash records{f' with key {key!r}' if key else ''} under {records_root()}.\n")
        return 0
    for r in recs:
        out.write(r.text())
        out.write("\n\n")
    return 0
