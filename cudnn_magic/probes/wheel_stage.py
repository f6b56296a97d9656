"""The files of a cuDNN consumer's wheel, unpacked beside the environment, so the consumer check
judges the environment as it would be after ``pip install``.

A consumer (CTranslate2, PaddlePaddle, MXNet, TensorRT: the consumer table's ``kind="consumer"``
entries) is judged by its native libraries' dynamic sections (``DT_NEEDED``, ``RPATH``/``RUNPATH``)
and the cuDNN copy it vendors, which only the wheel's bytes hold. So the wheel pip's dry run chose
(``download_info.url``, the exact file; its sha256 checked when pip gives one) is unpacked into a
scratch folder laid out like ``site-packages``; the consumer check then scans that folder first and
the environment's own site folders after it, with the ``.dist-info`` of each distribution pip
would replace left out. Nothing is installed and no code of the wheel runs (a wheel is unpacked,
never built; an entry with ``..`` or an absolute path is refused, as pip refuses it).

A wheel over :data:`MAX_DOWNLOAD_BYTES` is not fetched: a note says its consumer check waits for the
install. Never raises.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import urllib.error
import urllib.parse
import urllib.request
import zipfile

from ..rules.consumer_table import CONSUMERS
from ..rules.wheel_folders import canonical
from ..util.files import open_regular
from .wheel_record import _ssl_context

#: The largest consumer wheel fetched for a what-if (CTranslate2's are 37-40 MiB; PaddlePaddle's GPU
#: wheels, 700 MiB and more, are left to the real install).
MAX_DOWNLOAD_BYTES = 256 << 20
#: The most a wheel may unpack to (a zip bomb stops here).
MAX_UNPACKED_BYTES = 4 << 30

#: Distributions whose wheels are unpacked for the consumer check: the consumer table's consumers.
CONSUMER_DISTS = frozenset(canonical(d) for c in CONSUMERS if c.kind == "consumer" for d in c.distributions)


class _Refused(Exception):
    pass


def _fetch(url: str, dest: str, sha256: str, timeout: float) -> str:
    """The archive at ``url`` as a local path (``file://`` in place; HTTP streamed to ``dest``)."""
    parts = urllib.parse.urlsplit(url)
    if not parts.path.endswith(".whl"):
        raise _Refused("it is not a wheel (a source distribution, a folder or a VCS URL: it would have to be built)")
    if parts.scheme == "file":
        return urllib.request.url2pathname(parts.path)
    if parts.scheme not in ("http", "https"):
        raise _Refused(f"pip would fetch it over {parts.scheme or 'an unknown scheme'}:")
    req = urllib.request.Request(url, headers={"User-Agent": "cudnn-magic (what-if: consumer wheel)"})
    h = hashlib.sha256()
    got = 0
    try:
        with urllib.request.urlopen(req, timeout=timeout, context=_ssl_context() if parts.scheme == "https" else None) as resp:
            size = int(resp.headers.get("Content-Length") or 0)
            if size > MAX_DOWNLOAD_BYTES:
                raise _Refused(f"its wheel is {size / 2**20:.0f} MiB, more than the {MAX_DOWNLOAD_BYTES >> 20} MiB a "
                               "what-if downloads")
            with open(dest, "xb") as out:
                while True:
                    block = resp.read(1 << 20)
                    if not block:
                        break
                    got += len(block)
                    if got > MAX_DOWNLOAD_BYTES:
                        raise _Refused(f"its wheel is more than the {MAX_DOWNLOAD_BYTES >> 20} MiB a what-if downloads")
                    h.update(block)
                    out.write(block)
    except urllib.error.HTTPError as exc:
        raise _Refused(f"the server answered HTTP {exc.code}") from None
    except (urllib.error.URLError, OSError) as exc:
        raise _Refused(f"its wheel cannot be fetched ({getattr(exc, 'reason', exc)})") from None
    if sha256 and h.hexdigest() != sha256.lower():
        raise _Refused("the downloaded wheel's sha256 is not the one pip's report gives")
    return dest


def _unpack(archive: str, site: str) -> int:
    """Unpack the wheel into ``site`` (``*.data/purelib`` and ``platlib`` to the root, the other
    ``.data`` folders skipped); returns the bytes written. Every entry is checked before any is
    written (no ``..``, no absolute path, no link; at most :data:`MAX_UNPACKED_BYTES`), so a refused
    wheel leaves nothing behind; ``site`` is a fresh scratch folder holding no links."""
    with open_regular(archive) as fh, zipfile.ZipFile(fh) as zf:
        plan: list[tuple[zipfile.ZipInfo, list[str]]] = []
        total = 0
        for info in zf.infolist():
            name = info.filename
            if info.is_dir():
                continue
            parts = name.split("/")
            if name.startswith("/") or ".." in parts or "\\" in name or "\0" in name or "" in parts:
                raise _Refused(f"the wheel has an entry outside its folder ({name[:80]!r})")
            if stat.S_ISLNK(info.external_attr >> 16):
                continue  # pip writes no links from a wheel; neither does this
            if parts[0].endswith(".data"):
                if len(parts) > 2 and parts[1] in ("purelib", "platlib"):
                    parts = parts[2:]
                else:
                    continue
            total += info.file_size
            if total > MAX_UNPACKED_BYTES:
                raise _Refused(f"the wheel unpacks to more than {MAX_UNPACKED_BYTES >> 20} MiB")
            plan.append((info, parts))
        for info, parts in plan:
            target = os.path.join(site, *parts)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with zf.open(info) as src, open(target, "xb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
            if (info.external_attr >> 16) & 0o111:
                os.chmod(target, 0o755)
    return total


def stage_consumer_wheels(installs, scratch: str, *, timeout: float = 300.0) -> tuple[str | None, list[str], list[str]]:  # type: ignore[no-untyped-def]
    """Unpack the consumer wheels among pip's planned ``installs``
    (:class:`~cudnn_magic.probes.pip_report.PlannedInstall`) into ``scratch/site``.

    Returns:
        (the staged site folder, or None when no consumer wheel was unpacked; the canonical names
        staged; notes: what was fetched, in MiB, or why a wheel was not). Never raises.
    """
    site = os.path.join(scratch, "site")
    staged: list[str] = []
    notes: list[str] = []
    for p in installs:
        if canonical(p.name) not in CONSUMER_DISTS:
            continue
        try:
            os.makedirs(site, exist_ok=True)
            archive = _fetch(p.url, os.path.join(scratch, f"{canonical(p.name)}.whl"), p.sha256, timeout)
            size = os.path.getsize(archive)
            unpacked = _unpack(archive, site)
            staged.append(canonical(p.name))
            notes.append(f"{p.name} {p.version}: its wheel ({size / 2**20:.0f} MiB, {unpacked / 2**20:.0f} MiB unpacked in "
                         "a scratch folder, not installed) is judged by the consumer check as it would be installed")
        except _Refused as exc:
            notes.append(f"{p.name} {p.version}: not judged by the consumer check before install: {exc}")
        except (OSError, zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, ValueError, RuntimeError) as exc:
            notes.append(f"{p.name} {p.version}: not judged by the consumer check before install: its wheel cannot be "
                         f"read ({type(exc).__name__}: {exc})")
    return (site if staged else None), staged, notes


__all__ = ["CONSUMER_DISTS", "MAX_DOWNLOAD_BYTES", "stage_consumer_wheels"]
