"""A package index on loopback for the what-if's wheel reads: real wheel files served the way PyPI
serves them, with every byte counted.

* ``/simple/<project>/``: the PEP 503 simple page, each link with its ``#sha256=`` and the PEP 658 /
  714 ``data-dist-info-metadata`` / ``data-core-metadata`` attributes, so pip resolves from
  ``/files/<wheel>.metadata`` and never downloads the wheel, as it does on PyPI.
* ``/files/<wheel>``: the file, honouring one ``Range: bytes=...`` per request (206 with
  ``Content-Range``, RFC 9110 section 14) unless ``ranges=False`` (then the whole file with 200, as
  ``python -m http.server`` does); ``auth=True`` answers 401 to every file request.

``served[name]`` is the number of body bytes sent for each file name, ``ranged[name]`` the part sent
as answers to range requests (what the what-if reads; pip itself never sends one: pip 23.2 still
downloads the whole wheel at the end of a dry run, pip 26 does not). Binds 127.0.0.1 only.
"""

from __future__ import annotations

import hashlib
import html
import re
import threading
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


class WheelIndex:
    """Context manager: ``with WheelIndex([wheel paths]) as idx: idx.url`` (the ``/simple/`` URL)."""

    def __init__(self, wheels: list[Path], *, ranges: bool = True, auth: bool = False):
        self.wheels = {w.name: w for w in wheels}
        self.ranges, self.auth = ranges, auth
        self.served: dict[str, int] = {}
        self.ranged: dict[str, int] = {}
        self.requests: list[tuple[str, str]] = []  # (path, Range header)
        self._meta: dict[str, bytes] = {}
        for name, w in self.wheels.items():
            with zipfile.ZipFile(w) as zf:
                member = next(n for n in zf.namelist() if re.fullmatch(r"[^/]+\.dist-info/METADATA", n))
                self._meta[name] = zf.read(member)
        self._sha = {name: hashlib.sha256(w.read_bytes()).hexdigest() for name, w in self.wheels.items()}

    def sha256(self, name: str) -> str:
        return self._sha[name]

    def file_url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.port}/files/{name}"

    def __enter__(self) -> WheelIndex:  # noqa: PYI034 - a test helper, never subclassed
        index = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # type: ignore[no-untyped-def] # quiet
                pass

            def _send(self, code: int, body: bytes, ctype: str = "text/html", extra: dict[str, str] | None = None,
                      count: str | None = None) -> None:
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                for k, v in (extra or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                if self.command == "HEAD":
                    return
                try:
                    step = 1 << 16
                    for i in range(0, len(body), step):
                        if count:  # counted before it is sent: a client that has the bytes sees them counted
                            index.served[count] = index.served.get(count, 0) + len(body[i:i + step])
                            if code == 206:
                                index.ranged[count] = index.ranged.get(count, 0) + len(body[i:i + step])
                        self.wfile.write(body[i:i + step])
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def do_HEAD(self) -> None:
                self.do_GET()

            def do_GET(self) -> None:
                rng = self.headers.get("Range", "")
                index.requests.append((self.path, rng))
                m = re.fullmatch(r"/simple/([^/]+)/?", self.path)
                if m:
                    links = [f'<a href="/files/{n}#sha256={index._sha[n]}" data-dist-info-metadata="sha256='
                             f'{hashlib.sha256(index._meta[n]).hexdigest()}" data-core-metadata="sha256='
                             f'{hashlib.sha256(index._meta[n]).hexdigest()}">{html.escape(n)}</a><br>'
                             for n in index.wheels if _norm(n.split("-")[0]) == _norm(m.group(1))]
                    if not links:
                        return self._send(404, b"not found")
                    return self._send(200, ("<html><body>" + "".join(links) + "</body></html>").encode())
                m = re.fullmatch(r"/files/([^/]+?)(\.metadata)?", self.path)
                if not m or m.group(1) not in index.wheels:
                    return self._send(404, b"not found")
                name = m.group(1)
                if m.group(2):
                    return self._send(200, index._meta[name], "application/octet-stream")
                if index.auth:
                    return self._send(401, b"credentials needed", extra={"WWW-Authenticate": 'Basic realm="x"'})
                path = index.wheels[name]
                size = path.stat().st_size
                r = re.fullmatch(r"bytes=(\d*)-(\d*)", rng.strip()) if index.ranges else None
                if not r or (not r.group(1) and not r.group(2)):
                    return self._send(200, path.read_bytes(), "application/octet-stream", {"Accept-Ranges": "bytes"},
                                      count=name)
                if r.group(1):
                    lo = int(r.group(1))
                    hi = min(int(r.group(2)), size - 1) if r.group(2) else size - 1
                else:
                    lo, hi = max(0, size - int(r.group(2))), size - 1
                if lo > hi or lo >= size:
                    return self._send(416, b"", extra={"Content-Range": f"bytes */{size}"})
                with open(path, "rb") as fh:
                    fh.seek(lo)
                    part = fh.read(hi - lo + 1)
                return self._send(206, part, "application/octet-stream", {"Content-Range": f"bytes {lo}-{hi}/{size}"},
                                  count=name)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/simple/"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
