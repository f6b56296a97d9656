"""What reading a wheel's file list costs the what-if, beside what a user would otherwise run.

For each real wheel, from the same package index on loopback (``tests/helpers/wheel_index.py``: PEP 503
pages with PEP 658 metadata, byte ranges honoured), alternating, ``--repeat`` times each, medians:

* ``ranges``: :func:`cudnn_magic.probes.wheel_record.wheel_record` over HTTP, no cache (the bytes
  transferred and the seconds);
* ``pip download``: ``python -m pip download --no-deps --no-cache-dir -d TMP REQ`` then reading the
  ``RECORD`` out of the archive (the way to see a wheel's files with pip alone).

Wheels: ``nvidia-cudnn-jit-cu13`` 9.24.0.43 and ``nvidia-cudnn-jit-cu12`` 9.27.0.42 (68 MB each),
fetched once with ``tests/real_wheels.wheel_file``. Loopback hides the network's latency: on PyPI each
range request costs one round trip (3 requests at most here), a download its full size.

Usage: python benchmarks/bench_wheel_record.py [--repeat N]
Prints a markdown table and writes benchmarks/results/wheel_record.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

WHEELS = (("nvidia-cudnn-jit-cu13", "9.24.0.43"), ("nvidia-cudnn-jit-cu12", "9.27.0.42"))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    from cudnn_magic.probes.wheel_record import wheel_record
    from helpers.real_wheels import wheel_file
    from helpers.wheel_index import WheelIndex

    rows = []
    files = [(d, v, wheel_file(d, v)) for d, v in WHEELS]
    with WheelIndex([f for _, _, f in files]) as idx:
        for dist, version, whl in files:
            ranges_s, pip_s, fetched = [], [], 0
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                rec = wheel_record(idx.file_url(whl.name), dist, version, use_cache=False)
                ranges_s.append(time.perf_counter() - t0)
                fetched = rec.fetched_bytes  # type: ignore[union-attr]
                with tempfile.TemporaryDirectory() as tmp:
                    t0 = time.perf_counter()
                    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-cache-dir",
                                    "--index-url", idx.url, "-d", tmp, f"{dist}=={version}"], check=True,
                                   env={**os.environ, "PIP_CONFIG_FILE": os.devnull, "PIP_FIND_LINKS": ""})
                    got = next(Path(tmp).glob("*.whl"))
                    with zipfile.ZipFile(got) as zf:
                        zf.read(next(n for n in zf.namelist() if n.endswith(".dist-info/RECORD")))
                    pip_s.append(time.perf_counter() - t0)
            rows.append({"wheel": f"{dist}=={version}", "wheel_bytes": whl.stat().st_size, "ranges_bytes": fetched,
                         "ranges_s": statistics.median(ranges_s), "pip_download_s": statistics.median(pip_s)})
    print("| wheel | wheel size | bytes read by ranges | ranges (s) | pip download + read (s) |")
    print("|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['wheel']} | {r['wheel_bytes'] / 2**20:.1f} MiB | {r['ranges_bytes'] / 1024:.0f} KiB | "
              f"{r['ranges_s']:.3f} | {r['pip_download_s']:.2f} |")
    out = ROOT / "benchmarks" / "results"
    out.mkdir(exist_ok=True)
    (out / "wheel_record.json").write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
