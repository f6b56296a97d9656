"""Every byte a succeeding cell writes to fd 2 reaches the front end before the cell goes idle, with
the capture on as without it (real kernels, message by message).

In a bare kernel a write to fd 2 returns only once ipykernel's reader thread has taken the bytes
from its pipe, so ipykernel's flush at the end of the request sends them all. With the capture,
the write lands in the helper's pipe at once and the helper hands the bytes on to ipykernel's
pipe afterwards: bytes that reach ipykernel's reader after that flush wait for its next timed
flush (``OutStream.flush_interval``, 0.2 s), after the cell is idle. ``benchmarks/bench_delivery.py``
measures the time; these tests hold the order: on IOPub, the cell's whole stderr comes before its
``idle`` status.
"""

from __future__ import annotations

import pytest

from helpers.kernel_session import KernelSession

pytestmark = pytest.mark.kernel

LINE = b"I0000 00:00:1700000000.000000   4242 some_native.cc:12] step 4400: loss 1.2345, 51234 tokens/s\n"


def _before_idle(ks: KernelSession, code: str) -> tuple[int, int]:
    """Run ``code``; return (stderr characters that arrived before the cell's idle status, in all
    after a further 0.5 s)."""
    msg_id = ks.send(code)
    reply = ks.wait(msg_id, timeout=120)
    assert reply["status"] == "ok", reply
    ks.settle(0.5)
    before = total = 0
    idle = False
    for m in ks.outputs.get(msg_id, []):
        if m["msg_type"] == "status" and m["content"].get("execution_state") == "idle":
            idle = True
        elif m["msg_type"] == "stream" and m["content"]["name"] == "stderr":
            total += len(m["content"]["text"])
            if not idle:
                before += len(m["content"]["text"])
    return before, total


@pytest.mark.parametrize("extension", [False, True], ids=["bare kernel", "capture on"])
def test_a_cells_native_stderr_arrives_before_the_cell_is_idle(tmp_path, extension):
    ks = KernelSession(tmp_path)
    try:
        setup = f"import os\nLINE = {LINE!r}\n"
        if extension:
            setup += ("%load_ext cudnn_magic\nfrom cudnn_magic.shell.annotate import annotator\n"
                      "assert annotator().tee is not None and annotator().tee.active\n")
        assert ks.run(setup).reply["status"] == "ok"
        # one line; 64 KiB (ipykernel's pipe size); 4 MiB (ipykernel's reader needs about 0.1 s
        # for it, long after the write returned into the helper's 1 MiB pipe); three times each
        for size in (len(LINE), 64 << 10, 4 << 20):
            n = -(-size // len(LINE))
            for _ in range(3):
                before, total = _before_idle(ks, f"os.write(2, LINE * {n})")
                assert (before, total) == (n * len(LINE), n * len(LINE)), (size, before, total)
        if extension:  # the annotation off: the capture alone delivers the same way
            assert ks.run("%cudnn_annotate off").reply["status"] == "ok"
            n = (4 << 20) // len(LINE)
            for _ in range(2):
                assert _before_idle(ks, f"os.write(2, LINE * {n})") == (n * len(LINE),) * 2
    finally:
        ks.close()
