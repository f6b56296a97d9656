"""%gpu_memory in a real ipykernel, with the C stand-in for libnvidia-ml.so.1 on the kernel's
LD_LIBRARY_PATH: the panel renders, its values reach the front end WHILE another cell is busy,
``--stop`` leaves no thread, ``%unload_ext`` closes every comm it opened.

The live-update test talks to the kernel with jupyter_client and records every IOPub message:
nbclient keeps only messages whose parent is the running cell, and the sampler's updates are
(correctly) parented to the cell that created the panel.
"""

from __future__ import annotations

import pytest

from helpers.nvml_standin import nvml_standin, real_nvml_present, spec_string  # noqa: F401
from helpers.support import kernel_env, outputs_text, run_notebook

pytestmark = [pytest.mark.kernel, pytest.mark.native]

THREAD_NAME = "cudnn-magic-gpu-memory"
GiB = 1024**3


class Kernel:
    """A real ipykernel (this interpreter) and a log of every IOPub message, in arrival order."""

    def __init__(self, env: dict[str, str]):
        from jupyter_client import KernelManager

        self.km = KernelManager(kernel_name="python3")
        self.km.start_kernel(env=env)
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=120)
        self.log: list[dict] = []

    def run(self, code: str, timeout: float = 120) -> str:
        """Execute ``code``; return its msg_id once the kernel is idle again after it."""
        msg_id = self.kc.execute(code)
        while True:
            msg = self.kc.get_iopub_msg(timeout=timeout)
            self.log.append(msg)
            if (msg["msg_type"] == "status" and msg["content"].get("execution_state") == "idle"
                    and msg["parent_header"].get("msg_id") == msg_id):
                return msg_id

    def window(self, msg_id: str) -> list[dict]:
        """Messages received between the busy and idle status of request ``msg_id``."""
        start = end = None
        for i, m in enumerate(self.log):
            if m["msg_type"] == "status" and m["parent_header"].get("msg_id") == msg_id:
                if m["content"]["execution_state"] == "busy":
                    start = i
                elif m["content"]["execution_state"] == "idle":
                    end = i
        assert start is not None and end is not None
        return self.log[start:end + 1]

    def outputs(self, msg_id: str) -> str:
        parts = []
        for m in self.log:
            if m["parent_header"].get("msg_id") != msg_id:
                continue
            c = m["content"]
            if m["msg_type"] == "stream":
                parts.append(c["text"])
            elif m["msg_type"] in ("display_data", "execute_result"):
                parts.append(str(c["data"]))
            elif m["msg_type"] == "error":
                parts.append("\n".join(c["traceback"]))
        return "\n".join(parts)

    def close(self) -> None:
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)


def test_panel_updates_while_another_cell_is_busy(nvml_standin, tmp_path):
    spec = {"gpus": 2, "step.0": GiB, "procs.0": "self:1073741824,4242:2147483648", "name.1": "NVIDIA Stand-in GPU B"}
    env = kernel_env(tmp_path, {"LD_LIBRARY_PATH": str(nvml_standin), "FAKE_NVML_SPEC": spec_string(spec)})
    env.pop("CUDA_VISIBLE_DEVICES", None)
    k = Kernel(env)
    try:
        k.run("%load_ext cudnn_magic")
        panel_id = k.run("%gpu_memory --interval 0.2")
        assert "application/vnd.jupyter.widget-view+json" in k.outputs(panel_id)
        busy_id = k.run("import time\nt0 = time.time()\nwhile time.time() - t0 < 3:\n    pass")
        updates = [m for m in k.window(busy_id)
                   if m["msg_type"] == "comm_msg" and m["content"]["data"].get("method") == "update"]
        labels = {m["content"]["data"]["state"]["value"] for m in updates
                  if "NVIDIA Stand-in GPU 0" in str(m["content"]["data"]["state"].get("value", ""))}
        assert len(labels) >= 2, f"no live label updates during the busy cell: {len(updates)} updates"
        # parent header: on ipykernel 7 (per-thread parent) the sampler's messages belong to the
        # cell that created the panel; ipykernel 6 has one process-wide parent, so they carry the
        # busy cell's (front ends route comm messages by comm id, so the panel updates either way).
        import ipykernel

        parents = {m["parent_header"].get("msg_id") for m in updates}
        if int(ipykernel.__version__.split(".")[0]) >= 7:
            assert parents == {panel_id}
        else:
            assert parents <= {panel_id, busy_id}
        again_id = k.run("p = %gpu_memory --interval 0.3\nprint(p)")
        assert "every 0.3 s, running" in k.outputs(again_id)
        k.run("%gpu_memory --stop")
        threads_id = k.run("import threading\nprint(sorted(t.name for t in threading.enumerate()))")
        assert THREAD_NAME not in k.outputs(threads_id)
        unload_id = k.run("%unload_ext cudnn_magic")
        opened = {m["content"]["comm_id"] for m in k.log if m["msg_type"] == "comm_open"}
        closed = {m["content"]["comm_id"] for m in k.window(unload_id) if m["msg_type"] == "comm_close"}
        assert opened and opened <= closed, f"{len(opened - closed)} comms left open"
        after_id = k.run("%gpu_memory")
        assert "UsageError" in k.outputs(after_id)  # the magic is gone
    finally:
        k.close()


@pytest.mark.skipif(real_nvml_present(), reason="a real libnvidia-ml is installed here")
def test_no_driver_says_so_in_one_line(tmp_path):
    nb = run_notebook(
        ["%load_ext cudnn_magic", "%gpu_memory",
         "import threading\nprint(sorted(t.name for t in threading.enumerate()))"],
        tmp_path, env={"LD_LIBRARY_PATH": ""},
    )
    text = outputs_text(nb.cells[1])
    assert [o["output_type"] for o in nb.cells[1].outputs] == ["execute_result"]
    plain = nb.cells[1].outputs[0]["data"]["text/plain"]
    assert plain.startswith("No GPU memory to show: NVML Shared Library Not Found") and "\n" not in plain
    assert "Traceback" not in text
    assert THREAD_NAME not in outputs_text(nb.cells[2])


def test_a_hung_nvml_never_blocks_the_kernel(nvml_standin, tmp_path):
    """With NVML hanging (the stand-in sleeps in every call, as a hung driver
    does), ``%gpu_memory`` used to block the kernel's main thread: that cell and every later one
    hung. Now the cell returns within the deadline with the panel saying NVML is not answering,
    later cells run at once, and when NVML answers again the panel fills in. The bare kernel's
    reference: an NVML query in a thread leaves the kernel usable, which is what we do."""
    cfg = tmp_path / "nvml.cfg"
    cfg.write_text("hang_s=600\n")
    env = kernel_env(tmp_path, {"LD_LIBRARY_PATH": str(nvml_standin), "FAKE_NVML_CONFIG": str(cfg)})
    env.pop("CUDA_VISIBLE_DEVICES", None)
    k = Kernel(env)
    try:
        k.run("%load_ext cudnn_magic")
        panel_id = k.run("import time\nt0 = time.time()\np = %gpu_memory --interval 0.3\n"
                         "print('TOOK', round(time.time() - t0))\np", timeout=60)
        out = k.outputs(panel_id)
        assert "TOOK" in out and int(out.split("TOOK ")[1].split()[0]) <= 7, out
        assert "NVML is not answering" in out, out
        after_id = k.run("print('STILL', 1 + 1)", timeout=10)
        assert "STILL 2" in k.outputs(after_id)
        check_id = k.run("r = %cudnn_check --json\nprint('DRIVER', r['driver_unavailable'])", timeout=120)
        assert "DRIVER NVML is not answering" in k.outputs(check_id), k.outputs(check_id)
        cfg.write_text("hang_s=0\n")  # the driver answers again
        fill_id = k.run("import time\nt0 = time.time()\n"
                        "while time.time() - t0 < 30 and not (p.last and p.last.gpus):\n    time.sleep(0.2)\n"
                        "print('GPUS', len(p.last.gpus) if p.last else 0)", timeout=60)
        assert "GPUS 2" in k.outputs(fill_id), k.outputs(fill_id)
        k.run("%gpu_memory --stop", timeout=30)
    finally:
        k.close()


def test_the_front_end_never_sees_a_current_value_above_the_peak(nvml_standin, tmp_path):
    """A front end never shows a value above the peak: a screenshot once showed "8.5 GiB" used beside "peak 7.8
    GiB". Each widget's new value is its own comm message, so a front end shows, between two
    messages, one widget's new value beside another's old one. This replays every comm message the
    kernel sent, in order, as the front end applies them, and checks GPU 0's label against the
    peak drawn beside it after each one, while usage grows by 1 GiB a sample."""
    import re

    spec = {"gpus": 1, "step.0": GiB}
    env = kernel_env(tmp_path, {"LD_LIBRARY_PATH": str(nvml_standin), "FAKE_NVML_SPEC": spec_string(spec)})
    env.pop("CUDA_VISIBLE_DEVICES", None)
    k = Kernel(env)
    try:
        k.run("%load_ext cudnn_magic")
        k.run("%gpu_memory --interval 0.1")
        k.run("import time\ntime.sleep(3)")
        k.run("%gpu_memory --stop")
    finally:
        k.close()
    state: dict[str, str] = {}
    checked = 0

    def gib(text: str) -> float:
        value, unit = re.search(r"([0-9.]+) (GiB|MiB)", text).groups()  # type: ignore[union-attr]
        return float(value) * (1 if unit == "GiB" else 1 / 1024)

    for m in k.log:
        if m["msg_type"] not in ("comm_open", "comm_msg"):
            continue
        data = m["content"]["data"]
        value = (data.get("state") or {}).get("value")
        if not isinstance(value, str):
            continue
        state[m["content"]["comm_id"]] = value
        labels = [v for v in state.values() if "GPU 0" in v and " / " in v and "<svg" not in v]
        plots = [v for v in state.values() if "<svg" in v and "peak " in v]
        if labels and plots:
            used = gib(labels[0].split("&nbsp;")[1])
            peak = gib(plots[0].split("peak ")[1])
            assert peak >= used, f"the front end showed {used} GiB used beside peak {peak} GiB"
            checked += 1
    assert checked >= 10, f"only {checked} states checked"
