"""The %gpu_memory panel without a kernel: ipywidgets gives every widget a DummyComm in a plain
Python process (as ipywidgets' own tests do), so traits, clicks and the sampler thread run for real.

The panel's sampler here is a scripted sequence of MemorySnapshot values (plain data from
cudnn_magic.model); the NVML side is covered through the C stand-in in test_memory.py and
below in a child process.
"""

from __future__ import annotations

import threading
import time

import pytest

from cudnn_magic.model import GpuMemory, MemorySnapshot, ProcessMemory
from helpers.nvml_standin import nvml_standin, run_json, standin_env  # noqa: F401

ipywidgets = pytest.importorskip("ipywidgets")

from cudnn_magic.shell import memory as memory_panel  # noqa: E402
from cudnn_magic.ui.memory_panel import THREAD_NAME, MemoryPanel, MemoryView  # noqa: E402

GiB = 1024**3


def snap(used0: int, *, lost1: bool = False, drop1: bool = False, t: float = 0.0, error: str | None = None) -> MemorySnapshot:
    g0 = GpuMemory(index=0, name="NVIDIA Stand-in GPU 0", uuid="GPU-a", total_bytes=16 * GiB, used_bytes=used0,
                   free_bytes=16 * GiB - used0, visible_index=0, this_kernel_bytes=GiB,
                   this_kernel_source="NVML process list (pid match)",
                   processes=(ProcessMemory(1, GiB, True), ProcessMemory(2, 2 * GiB)))
    g1 = (GpuMemory(index=1, name="GPU 1", uuid="GPU-b", visible_index=1,
                    error="GPU is lost: the GPU stopped responding (nvmlDeviceGetMemoryInfo, NVML error 15)")
          if lost1 else
          GpuMemory(index=1, name="NVIDIA Stand-in GPU 1", uuid="GPU-b", total_bytes=16 * GiB, used_bytes=0,
                    free_bytes=16 * GiB, visible_index=1))
    return MemorySnapshot(gpus=(g0,) if drop1 else (g0, g1), timestamp=t or time.time(), error=error)


class Script:
    """A sampler returning the next snapshot from a list (the last one repeats)."""

    def __init__(self, items):
        self.items = list(items)
        self.calls = 0

    def __call__(self) -> MemorySnapshot:
        item = self.items[min(self.calls, len(self.items) - 1)]
        self.calls += 1
        if isinstance(item, BaseException):
            raise item
        return item


def _wait(pred, limit_s=30.0):
    """Poll until ``pred()`` (a generous cap so a slow CI box cannot hang the test)."""
    end = time.monotonic() + limit_s
    while not pred():
        if time.monotonic() > end:
            raise AssertionError("condition not reached")
        time.sleep(0.01)


def _sampler_threads():
    return [t for t in threading.enumerate() if t.name == THREAD_NAME]


def test_refresh_fills_rows_history_and_peak():
    p = MemoryPanel(sampler=Script([snap(2 * GiB, t=100.0), snap(6 * GiB, t=101.0), snap(3 * GiB, t=102.0)]))
    for _ in range(3):
        p.refresh()
    rows = list(p._rows.values())
    assert len(rows) == 2 and len(p.rows_box.children) == 2
    r0 = rows[0]
    assert "NVIDIA Stand-in GPU 0" in r0.label.value and "3.0 GiB / 16.0 GiB" in r0.label.value
    assert r0.bar.value == pytest.approx(3 / 16)
    assert "this kernel 1.0 GiB" in r0.detail.value and "other processes 1 (2.0 GiB)" in r0.detail.value
    assert [u for _, u in r0.history] == [2 * GiB, 6 * GiB, 3 * GiB]
    assert "peak 6.0 GiB" in r0.plot.value and r0.plot.value.startswith("<svg")
    assert "sample 3" in p.status.value
    p.close()


def test_error_row_and_vanished_gpu():
    p = MemoryPanel(sampler=Script([snap(GiB), snap(GiB, lost1=True), snap(GiB, drop1=True)]))
    p.refresh()
    r1 = p._rows["GPU-b"]
    assert "error" not in r1.detail.value
    p.refresh()
    assert "GPU is lost" in r1.detail.value and "color:#d1242f" in r1.detail.value
    p.refresh()
    assert "no longer reported by NVML" in r1.detail.value
    assert len(p.rows_box.children) == 2  # the row stays, with its error
    p.close()


def test_thread_samples_survives_errors_and_stop_button_ends_it():
    script = Script([snap(GiB), RuntimeError("NVML exploded"), snap(2 * GiB), snap(3 * GiB)])
    p = MemoryPanel(interval_s=0.02, sampler=script)
    p.start()
    assert p.running and len(_sampler_threads()) == 1
    _wait(lambda: script.calls >= 4)
    assert p.running  # the failing sample did not kill the thread
    assert p.last is not None and p.last.gpus[0].used_bytes == 3 * GiB
    p.start(0.05)  # again: same thread, new interval
    assert len(_sampler_threads()) == 1 and p.interval_s == 0.05
    p.stop_button.click()
    assert not p.running and _sampler_threads() == []
    assert p.stop_button.disabled and p.stop_button.description == "Stopped"
    p.start()  # can be restarted
    assert p.running
    p.close()
    assert _sampler_threads() == [] and p.closed


def test_sampling_failure_is_shown_on_status_line():
    script = Script([RuntimeError("NVML exploded")])
    p = MemoryPanel(interval_s=0.02, sampler=script)
    p.start()
    _wait(lambda: "sampling failed" in p.status.value)
    assert "NVML exploded" in p.status.value and p.running
    p.close()


def test_close_closes_every_comm():
    from ipywidgets.widgets.widget import _instances

    before = set(_instances)
    p = MemoryPanel(sampler=Script([snap(GiB)]))
    p.refresh()
    assert len(set(_instances) - before) > 5
    p.close()
    assert set(_instances) - before == set()


def test_magic_load_unload_in_terminal_shell(capsys):
    """Terminal IPython (not a ZMQInteractiveShell): a table, no widgets, no thread."""
    from IPython.core.interactiveshell import InteractiveShell

    ip = InteractiveShell.instance()
    memory_panel.load_ipython_extension(ip)
    try:
        assert "gpu_memory" in ip.magics_manager.magics["line"]
        view = ip.run_line_magic("gpu_memory", "")
        assert isinstance(view, MemoryView)
        assert repr(view)  # a table, or "No GPU memory to show: <reason>" on a machine without a driver
        assert _sampler_threads() == []
        ip.run_line_magic("gpu_memory", "--stop")
        assert "No GPU memory sampler is running." in capsys.readouterr().out
    finally:
        memory_panel.unload(ip)
    assert "gpu_memory" not in ip.magics_manager.magics["line"]


def test_panel_through_the_standin(nvml_standin, tmp_path):
    """The real sampler (pynvml + stand-in) behind the panel, in a child process: values change
    between samples; a GPU that starts failing shows its error on its row."""
    cfg = tmp_path / "nvml.conf"
    cfg.write_text("gpus=2\nstep.0=1073741824\nprocs.0=self:1073741824\n")
    code = """
    import json, os
    from cudnn_magic.ui.memory_panel import MemoryPanel
    p = MemoryPanel()
    labels = []
    for _ in range(3):
        p.refresh(); labels.append(p._rows["GPU-5a4d1e00-0000-4000-8000-000000000000"].label.value)
    with open(os.environ["FAKE_NVML_CONFIG"], "a") as f: f.write("err.1=15\\n")
    p.refresh()
    r0 = p._rows["GPU-5a4d1e00-0000-4000-8000-000000000000"]
    r1 = p._rows["GPU-5a4d1e00-0000-4000-8000-000000000001"]
    out = {"labels": labels, "detail0": r0.detail.value, "detail1": r1.detail.value}
    p.close()
    print(json.dumps(out))
    """
    out = run_json(code, standin_env(nvml_standin, config=cfg))
    assert len(set(out["labels"])) == 3
    assert "this kernel 1.0 GiB" in out["detail0"]
    assert "GPU is lost" in out["detail1"]


def test_terminal_watch_redraws_until_ctrl_c(monkeypatch, capsys):
    """``%gpu_memory --watch`` in terminal IPython: the table is redrawn in place (ANSI home +
    clear) each interval; Ctrl-C ends it and the last table is returned."""
    from IPython.core.interactiveshell import InteractiveShell

    from cudnn_magic.engines import memory

    script = Script([snap(GiB), snap(2 * GiB), KeyboardInterrupt()])
    monkeypatch.setattr(memory, "sample", script)
    ip = InteractiveShell.instance()
    memory_panel.load_ipython_extension(ip)
    try:
        view = ip.run_line_magic("gpu_memory", "--watch --interval 0.1")
    finally:
        memory_panel.unload(ip)
    out = capsys.readouterr().out
    assert out.count("\x1b[H\x1b[J") == 2 and "1.0 GiB / 16.0 GiB" in out and "2.0 GiB / 16.0 GiB" in out
    assert isinstance(view, MemoryView) and view.snapshot.gpus[0].used_bytes == 2 * GiB
    assert _sampler_threads() == []
