"""The file list of a wheel pip would install, read from the wheel's own ``RECORD`` before it is installed.

pip's ``--dry-run --report`` gives each wheel's metadata and where it would download it
(``download_info.url``, with the archive's sha256 in ``archive_info.hashes``: pip's docs,
"Installation Report"), not its file list; with PyPI's PEP 658 metadata pip never downloads the
wheel at all. The what-if needs the real list (a cuDNN 9.1 wheel does not write the files a 9.24
one did; ``nvidia-cudnn-cu12`` 8.9.7 has no ``libcudnn.so.9``). A wheel is a zip archive whose
``<name>-<version>.dist-info/RECORD`` lists every file with its sha256 and size (PEP 427, PEP 376),
so:

* ``file://`` (``--find-links DIR``, a local index): the archive is opened in place with
  :mod:`zipfile`.
* ``http(s)://``: the archive is read with HTTP range requests (RFC 9110 section 14), the way pip's
  own ``--use-feature=fast-deps`` reads metadata: :mod:`zipfile` asks for the end-of-central-directory
  record, the central directory and the ``RECORD`` member, and only those byte ranges are fetched
  (about 70 KiB of a 68 MB ``nvidia-cudnn-jit`` wheel; ``benchmarks/bench_wheel_record.py``). A
  server that answers a range request with the whole file (HTTP 200) is left at once: no wheel is
  downloaded to predict it.
* Each ``RECORD`` read is kept under ``$XDG_CACHE_HOME/cudnn_magic/wheel-records/<sha256>`` (the
  archive's hash names the file: a wheel with that hash always holds that ``RECORD``), created
  exclusively and never through a link.

:func:`wheel_record` never raises: what it cannot read is an :class:`~cudnn_magic.model.Unavailable`
with the reason, and the what-if then says its file list is assumed.
"""

from __future__ import annotations

import io
import os
import re
import ssl
import stat
import time
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from ..model import Unavailable
from ..rules.wheel_folders import canonical, cudnn_folder
from ..util.disk_cache import cache_root
from ..util.files import atomic_write, open_regular
from .owners import MAX_RECORD_BYTES, RecordEntry, _parse_record_line

#: Bytes fetched per range request at least (the end of the archive is read first in one request).
BLOCK_BYTES = 64 << 10
#: Bytes one wheel may cost before the read is given up (a RECORD of 10,000 files is about 1.5 MiB).
MAX_FETCH_BYTES = 8 << 20
_HEX64 = re.compile(r"^[0-9a-f]{64}$")
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


@dataclass(frozen=True)
class WheelRecord:
    """A wheel's ``RECORD``: ``entries`` (paths relative to site-packages, sha256, bytes), how it was
    read (``source``: ``"file"``, ``"http range"``, ``"cache"``) and ``fetched_bytes`` (bytes
    transferred over HTTP; 0 otherwise)."""

    entries: tuple[RecordEntry, ...]
    source: str
    fetched_bytes: int = 0

    @property
    def how(self) -> str:
        """Plain words for a note: where the list came from."""
        if self.source == "http range":
            return f"read from the wheel's own RECORD over HTTP ({self.fetched_bytes / 1024:.0f} KiB in byte ranges)"
        if self.source == "cache":
            return "read from the wheel's own RECORD (cached by its sha256)"
        return "read from the wheel's own RECORD"


class _GiveUp(Exception):
    """Internal: the read cannot go on (the reason is the message)."""


class _RangeReader(io.RawIOBase):
    """A read-only, seekable view of a remote file that fetches only the byte ranges read
    (``Range: bytes=A-B``, answered 206 with ``Content-Range``), in blocks of :data:`BLOCK_BYTES`."""

    def __init__(self, url: str, *, timeout: float, deadline: float, max_bytes: int, context: ssl.SSLContext | None):
        super().__init__()
        self.url, self.timeout, self.deadline, self.max_bytes, self.context = url, timeout, deadline, max_bytes, context
        self.fetched = 0
        self.segments: list[tuple[int, bytes]] = []
        self.pos = 0
        start, data, total = self._get(f"bytes=-{BLOCK_BYTES}")
        self.size = total
        self.segments.append((start, data))

    def _get(self, spec: str) -> tuple[int, bytes, int]:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise _GiveUp("the server did not answer in time")
        req = urllib.request.Request(self.url, headers={"Range": spec, "Accept-Encoding": "identity",
                                                        "User-Agent": "cudnn-magic (what-if: wheel RECORD)"})
        try:
            with urllib.request.urlopen(req, timeout=min(self.timeout, left), context=self.context) as resp:
                if resp.status != 206:
                    raise _GiveUp(f"the server answers a byte-range request with HTTP {resp.status} (the whole "
                                  "wheel): it was not downloaded")
                m = re.match(r"bytes (\d+)-(\d+)/(\d+)$", resp.headers.get("Content-Range", "").strip())
                if not m:
                    raise _GiveUp("the server's byte-range answer has no usable Content-Range")
                start, end, total = (int(g) for g in m.groups())
                want = end - start + 1
                if self.fetched + want > self.max_bytes:
                    raise _GiveUp(f"reading its RECORD would take more than {self.max_bytes >> 20} MiB")
                data = resp.read(want + 1)
        except urllib.error.HTTPError as exc:
            raise _GiveUp(f"the server answered HTTP {exc.code}" + (" (it asks for credentials)" if exc.code in (401, 403)
                                                                     else "")) from None
        except (urllib.error.URLError, OSError, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            raise _GiveUp(f"the wheel's server cannot be reached ({reason})") from None
        if len(data) != want:
            raise _GiveUp("the server sent another number of bytes than its Content-Range says")
        self.fetched += want
        return start, data, total

    def _byte_range(self, lo: int, hi: int) -> bytes:
        """Bytes [lo, hi) of the remote file, fetched as needed (one request per gap, at least a block)."""
        out = bytearray()
        pos = lo
        while pos < hi:
            seg = next(((s, d) for s, d in self.segments if s <= pos < s + len(d)), None)
            if seg is None:
                upto = min(self.size, max(hi, pos + BLOCK_BYTES))
                nxt = min((s for s, _ in self.segments if s > pos), default=upto)
                start, data, _ = self._get(f"bytes={pos}-{max(min(upto, nxt), hi) - 1}")
                if start != pos or not data:
                    raise _GiveUp("the server sent another byte range than the one asked for")
                self.segments.append((start, data))
                continue
            s, d = seg
            chunk = d[pos - s: hi - s]
            out += chunk
            pos += len(chunk)
        return bytes(out)

    # io.RawIOBase
    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.pos, io.SEEK_END: self.size}[whence]
        self.pos = max(0, base + offset)
        return self.pos

    def readinto(self, buf) -> int:  # type: ignore[no-untyped-def]
        n = min(len(buf), max(0, self.size - self.pos))
        if n == 0:
            return 0
        data = self._byte_range(self.pos, self.pos + n)
        buf[:n] = data
        self.pos += n
        return n



def _record_member(zf: zipfile.ZipFile, name: str, version: str) -> zipfile.ZipInfo:
    """The ``RECORD`` member of the wheel's own ``.dist-info`` (PEP 427: top level,
    ``{distribution}-{version}.dist-info``, names compared normalized)."""
    want = re.sub(r"[-_.]+", "_", name).lower()
    found = [i for i in zf.infolist() if re.fullmatch(r"[^/]+\.dist-info/RECORD", i.filename)]
    own = [i for i in found if i.filename.split("-", 1)[0].lower().replace(".", "_") == want
           and (not version or i.filename.split("/", 1)[0].endswith(f"-{version}.dist-info"))]
    pick = own or found
    if len(pick) != 1:
        raise _GiveUp(f"the wheel has {len(found)} .dist-info/RECORD files" if found else "the wheel has no .dist-info/RECORD")
    if pick[0].file_size > MAX_RECORD_BYTES:
        raise _GiveUp(f"its RECORD is larger than {MAX_RECORD_BYTES >> 20} MiB")
    return pick[0]


def _parse(text: str) -> tuple[RecordEntry, ...]:
    return tuple(e for e in (_parse_record_line(ln) for ln in text.splitlines()) if e is not None)


def cache_dir() -> str | None:
    """``$XDG_CACHE_HOME/cudnn_magic/wheel-records`` (default ``~/.cache/...``: the XDG Base Directory
    spec), or None when there is no home to keep it in (:func:`~cudnn_magic.util.disk_cache.cache_root`)."""
    root = cache_root()
    return None if root is None else os.path.join(root, "wheel-records")


def _cached(sha256: str) -> str | None:
    folder = cache_dir()
    if not _HEX64.match(sha256) or folder is None:
        return None
    path = os.path.join(folder, sha256)
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with os.fdopen(fd, "rb") as fh:
            fd = -1
            data = fh.read(MAX_RECORD_BYTES + 1)
    except OSError:
        return None
    finally:
        if fd >= 0:
            os.close(fd)
    if len(data) > MAX_RECORD_BYTES:
        return None
    return data.decode("utf-8", "replace")


def _remember(sha256: str, text: str) -> None:
    """Keep ``text`` under the cache; any failure is silent (the cache is only a speed-up)."""
    folder = cache_dir()
    if not _HEX64.match(sha256) or folder is None:
        return
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        if os.path.islink(folder) or not os.path.isdir(folder):
            return
        atomic_write(os.path.join(folder, sha256), text.encode("utf-8"), mode=0o600)
    except OSError:
        pass


def _ssl_context() -> ssl.SSLContext | None:
    """pip's certificate bundle when it names one (``PIP_CERT``; pip's docs, "HTTPS Certificates"),
    else Python's default verification."""
    cafile = os.environ.get("PIP_CERT") or os.environ.get("REQUESTS_CA_BUNDLE") or None
    try:
        return ssl.create_default_context(cafile=cafile if cafile and os.path.isfile(cafile) else None)
    except (OSError, ssl.SSLError):
        return None


def wheel_record(url: str, name: str, version: str = "", sha256: str = "", *, timeout: float = 20.0,
                 max_bytes: int = MAX_FETCH_BYTES, use_cache: bool = True) -> WheelRecord | Unavailable:
    """The ``RECORD`` of the wheel at ``url`` (module docstring), without installing or downloading it.

    Args:
        url: ``download_info.url`` from pip's report (``file://`` or ``http(s)://``).
        name, version: the distribution (picks its own ``.dist-info``).
        sha256: the archive's hash from pip's report (hex); names the cache entry. "" = no cache.
        timeout: seconds for the whole read.
        max_bytes: bytes the HTTP read may transfer before it gives up.

    Returns:
        :class:`WheelRecord`, or :class:`Unavailable` with the reason (not a wheel, a server
        without byte ranges, credentials asked, unreachable, too large). Never raises.
    """
    try:
        sha256 = sha256.lower()
        if use_cache and sha256:
            text = _cached(sha256)
            if text is not None:
                return WheelRecord(_parse(text), "cache")
        parts = urllib.parse.urlsplit(url)
        if not parts.path.endswith(".whl"):
            return Unavailable("it is not a wheel (a source distribution, a folder or a VCS URL)")
        if parts.scheme == "file":
            path = urllib.request.url2pathname(parts.path)
            with open_regular(path) as fh, zipfile.ZipFile(fh) as zf:
                text = zf.read(_record_member(zf, name, version)).decode("utf-8", "replace")
            rec = WheelRecord(_parse(text), "file")
        elif parts.scheme in ("http", "https"):
            raw = _RangeReader(url, timeout=timeout, deadline=time.monotonic() + timeout, max_bytes=max_bytes,
                               context=_ssl_context() if parts.scheme == "https" else None)
            with zipfile.ZipFile(io.BufferedReader(raw, BLOCK_BYTES)) as zf:
                text = zf.read(_record_member(zf, name, version)).decode("utf-8", "replace")
            rec = WheelRecord(_parse(text), "http range", raw.fetched)
        else:
            return Unavailable(f"pip would fetch it over {parts.scheme or 'an unknown scheme'}:, which is not read here")
        if use_cache and sha256:
            _remember(sha256, text)
        return rec
    except _GiveUp as exc:
        return Unavailable(str(exc))
    except (OSError, zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, ValueError, KeyError, RuntimeError) as exc:
        return Unavailable(f"its RECORD cannot be read: {type(exc).__name__}: {exc}")
    except Exception as exc:  # noqa: BLE001 - a probe never raises
        return Unavailable(f"its RECORD cannot be read: {type(exc).__name__}: {exc}")



def planned_records(installs, *, timeout: float = 20.0) -> tuple[dict[str, tuple[RecordEntry, ...]], list[str]]:  # type: ignore[no-untyped-def]
    """The ``RECORD`` of every cuDNN wheel among pip's planned ``installs``
    (:class:`~cudnn_magic.probes.pip_report.PlannedInstall`; the families of
    :data:`cudnn_magic.rules.wheel_folders.CUDNN_FOLDERS`), read at the same time: ({canonical
    name: entries}, notes saying where each list came from or why it could not be read). Never raises."""
    wanted = [p for p in installs if cudnn_folder(p.name)]
    if not wanted:
        return {}, []
    with ThreadPoolExecutor(min(8, len(wanted))) as pool:
        got = list(pool.map(lambda p: wheel_record(p.url, p.name, p.version, p.sha256, timeout=timeout), wanted))
    files: dict[str, tuple[RecordEntry, ...]] = {}
    notes: list[str] = []
    for p, rec in zip(wanted, got):
        if isinstance(rec, WheelRecord):
            files[canonical(p.name)] = rec.entries
            libs = sum(1 for e in rec.entries if "/lib/" in "/" + e.path and os.path.basename(e.path).startswith("libcudnn"))
            notes.append(f"{p.name} {p.version}: file list {rec.how}: {len(rec.entries)} files, {libs} cuDNN libraries")
        else:
            notes.append(f"{p.name} {p.version}: file list assumed from the files of its folder installed now "
                         f"(its RECORD could not be read: {rec.reason})")
    return files, notes


__all__ = ["WheelRecord", "cache_dir", "planned_records", "wheel_record"]
