"""Logs bigger than one scan chunk (``knowledge.SCAN_CHUNK``, 4 MiB) are scanned chunk by
chunk from their bytes (so ``cudnn-magic explain`` of a 50 MB log needs about one chunk of
memory beside the log): the same diagnoses as one pass would give, the decisive line found
wherever it sits (also across a chunk boundary), a line repeated in every chunk quoted once."""

from __future__ import annotations

import pytest

from cudnn_magic.engines.diagnose import diagnose
from cudnn_magic.knowledge import matcher as knowledge

DECISIVE = ("2023-12-12 16:58:40.306928: E external/local_xla/xla/stream_executor/cuda/cuda_dnn.cc:447] Loaded runtime "
            "CuDNN library: 8.8.0 but source was compiled with: 8.9.4. CuDNN library needs to have matching major "
            "version and equal or higher minor version.")
NOISE = ("2023-12-12 16:48:40.100000: I external/local_xla/xla/stream_executor/cuda/cuda_executor.cc:901] successful "
         "NUMA node read from SysFS had negative value (-1), but there must be at least one NUMA node")
REPEATED = "2023-12-12 16:48:41.000000: E tensorflow/core/kernels/conv_ops.cc:1000] Could not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR"


def _log(size: int, inserts: dict[int, str]) -> bytes:
    lines, n, i = [], 0, 0
    while n < size:
        lines.append(f"{NOISE} step {i}")
        n += len(lines[-1]) + 1
        i += 1
    for at, text in sorted(inserts.items(), reverse=True):
        lines.insert(min(len(lines), at), text)
    return ("\n".join(lines) + "\n").encode()


@pytest.mark.parametrize("where", ["first chunk", "chunk boundary", "last line"])
def test_the_decisive_line_is_found_anywhere(where):
    size = 3 * knowledge.SCAN_CHUNK
    approx_line = len(NOISE) + 12
    at = {"first chunk": 100, "chunk boundary": knowledge.SCAN_CHUNK // approx_line,
          "last line": 10**9}[where]
    data = _log(size, {at: DECISIVE})
    assert len(data) > 2 * knowledge.SCAN_CHUNK
    d = diagnose(log=data)
    assert d and d[0].id == "cudnn-version-mismatch", [x.id for x in d]
    assert d[0].versions.get("loaded") == "8.8.0" and d[0].versions.get("compiled") == "8.9.4"


def test_chunked_bytes_give_what_one_pass_gives():
    data = _log(2 * knowledge.SCAN_CHUNK + 12345, {500: REPEATED, 30_000: DECISIVE, 60_000: REPEATED})
    chunked = knowledge.scan(data)
    old = knowledge.SCAN_CHUNK
    try:
        knowledge.SCAN_CHUNK = 1 << 40  # one pass over the whole text
        whole = knowledge.scan(data)
    finally:
        knowledge.SCAN_CHUNK = old
    key = lambda h: (h.signature.name, h.line, h.position)  # noqa: E731
    assert sorted(map(key, chunked)) == sorted(map(key, whole))


def test_a_line_repeated_in_every_chunk_is_quoted_once():
    inserts = {k * 20_000: REPEATED for k in range(1, 8)}
    data = _log(4 * knowledge.SCAN_CHUNK, inserts)
    hits = [h for h in knowledge.scan(data) if "Could not create cudnn handle" in h.line]
    assert len({h.signature.name for h in hits}) == len(hits), [(h.signature.name, h.position) for h in hits]
    d = diagnose(log=data)
    assert d and sum(e.count("Could not create cudnn handle") for e in d[0].evidence) == 1


def test_a_single_line_longer_than_a_chunk():
    line = ("x" * (knowledge.SCAN_CHUNK + 1000) + " Could not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR "
            + "y" * (knowledge.SCAN_CHUNK // 2)).encode()
    d = diagnose(log=line)
    assert d and d[0].id in ("cudnn-init-failed", "cudnn-internal-error")


def test_str_and_bytes_logs_agree():
    text = _log(knowledge.SCAN_CHUNK + 999, {1000: DECISIVE}).decode()
    a, b = diagnose(log=text), diagnose(log=text.encode())
    assert [(x.id, x.title, x.evidence) for x in a] == [(x.id, x.title, x.evidence) for x in b]
