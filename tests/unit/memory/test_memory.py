"""cudnn_magic.engines.memory: CUDA_VISIBLE_DEVICES mapping, MIG, processes, errors, JSON and the CLI,
through the real pynvml and the C stand-in for libnvidia-ml.so.1 (in child processes)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import pytest

from helpers.nvml_standin import nvml_standin, real_nvml_present, run_json, run_py, standin_env  # noqa: F401
from helpers.support import REPO

pytestmark = pytest.mark.native

GiB = 1024**3
UUID = "GPU-5a4d1e00-0000-4000-8000-0000000000{:02d}"

SAMPLE = """
import json, os, sys
from cudnn_magic.engines.memory import sample, snapshot_json
s = sample()
print(json.dumps(snapshot_json(s)))
"""


def _sample(libdir, spec, cvd=None, **kw):
    extra = {"CUDA_VISIBLE_DEVICES": cvd} if cvd is not None else None
    return run_json(SAMPLE, standin_env(libdir, spec, extra=extra, **kw))


def _names(out):
    return [(g["index"], g["name"]) for g in out["gpus"]]


def test_json_contract_and_this_kernel(nvml_standin):
    out = _sample(nvml_standin, {"gpus": 2, "used.0": 5 * GiB, "procs.0": f"self:{2 * GiB},4242:{GiB}"})
    assert out["error"] is None
    g0, g1 = out["gpus"]
    # docs/json.md keys (more may be added, none renamed)
    for key in ("index", "uuid", "name", "total_bytes", "used_bytes", "free_bytes", "processes"):
        assert key in g0
    assert g0["uuid"] == UUID.format(0) and g0["total_bytes"] == 80 * GiB and g0["used_bytes"] == 5 * GiB
    assert all(isinstance(g0[k], int) for k in ("total_bytes", "used_bytes", "free_bytes"))
    mine = [p for p in g0["processes"] if p["this_kernel"]]
    others = [p for p in g0["processes"] if not p["this_kernel"]]
    assert len(mine) == 1 and mine[0]["used_bytes"] == 2 * GiB
    assert others == [{"pid": 4242, "used_bytes": GiB, "this_kernel": False}]
    assert g0["this_kernel_bytes"] == 2 * GiB and "pid" in g0["this_kernel_source"]
    assert g1["processes"] == [] and g1["this_kernel_bytes"] is None
    assert [g["visible_index"] for g in out["gpus"]] == [0, 1]


@pytest.mark.parametrize(
    "cvd, expected",
    [
        ("1,0", [1, 0]),
        ("2", [2]),
        (UUID.format(2) + ",0", [2, 0]),
        ("GPU-5a4d1e00-0000-4000-8000-00000000000", []),  # a prefix of all three UUIDs: ambiguous -> invalid
        ("GPU-5a4d1e00-0000-4000-8000-0000000000", []),
        ("GPU-5a4d1e00-0000-4000-8000-000000000001", [1]),  # full UUID
        ("0,-1,1", [0]),  # CUDA stops at the first invalid entry
        ("1,7,0", [1]),  # index out of range
        ("1,1", [1]),  # a device named twice ends the list
        ("", []),
        ("-1", []),
        (" 2 , 1 ", [2, 1]),
    ],
)
def test_cuda_visible_devices(nvml_standin, cvd, expected):
    out = _sample(nvml_standin, {"gpus": 3}, cvd=cvd)
    assert [g["index"] for g in out["gpus"]] == expected
    assert [g["visible_index"] for g in out["gpus"]] == list(range(len(expected)))
    if not expected:
        assert "no GPU is visible" in out["error"] and repr(cvd) in out["error"]
    else:
        assert out["error"] is None


def test_mig_instances_are_rows(nvml_standin):
    spec = {"gpus": 2, "mig.1": 2, "mig.0": 0, "used.1.1": GiB, "procs.1.1": "self:na"}
    out = _sample(nvml_standin, spec)
    rows = [(g["index"], g["mig"], g["uuid"]) for g in out["gpus"]]
    assert rows == [
        (0, False, UUID.format(0)),  # MIG-capable but MIG off: the whole GPU
        (1, True, "MIG-5a4d1e00-0000-4000-8000-000000000100"),
        (1, True, "MIG-5a4d1e00-0000-4000-8000-000000000101"),
    ]
    m1 = out["gpus"][2]
    assert m1["name"].endswith("MIG 1g.10gb") and m1["total_bytes"] == 40 * GiB and m1["used_bytes"] == GiB
    # memory of this process on a MIG instance: NVML says N/A (null), the match still holds
    assert m1["processes"] == [{"pid": m1["processes"][0]["pid"], "used_bytes": None, "this_kernel": True}]
    assert m1["this_kernel_bytes"] is None

    by_uuid = _sample(nvml_standin, spec, cvd="MIG-5a4d1e00-0000-4000-8000-000000000101")
    assert [g["uuid"] for g in by_uuid["gpus"]] == ["MIG-5a4d1e00-0000-4000-8000-000000000101"]
    old_form = _sample(nvml_standin, spec, cvd=f"MIG-{UUID.format(1)}/1/0")  # MIG-GPU-<uuid>/<gi>/<ci>
    assert [g["uuid"] for g in old_form["gpus"]] == ["MIG-5a4d1e00-0000-4000-8000-000000000100"]
    whole = _sample(nvml_standin, spec, cvd="1")  # a MIG-enabled GPU by index: its instances
    assert [g["mig"] for g in whole["gpus"]] == [True, True]


def test_memory_changes_between_samples_and_errors_stay_on_their_row(nvml_standin, tmp_path):
    cfg = tmp_path / "nvml.conf"
    cfg.write_text("gpus=2\nstep.0=1048576\n")
    code = """
    import json, os, sys
    from cudnn_magic.engines.memory import sample, snapshot_json
    cfg = os.environ["FAKE_NVML_CONFIG"]
    a = sample(); b = sample()
    with open(cfg, "a") as f: f.write("err.1=15\\nused.0=10737418240\\nstep.0=0\\n")
    c = sample()
    with open(cfg, "a") as f: f.write("gpus=1\\n")
    d = sample()
    print(json.dumps([snapshot_json(x) for x in (a, b, c, d)]))
    """
    a, b, c, d = run_json(code, standin_env(nvml_standin, config=cfg))
    assert b["gpus"][0]["used_bytes"] == a["gpus"][0]["used_bytes"] + 1048576
    assert c["gpus"][0]["used_bytes"] == 10 * GiB and c["gpus"][0]["error"] is None
    assert c["gpus"][1]["error"] and "GPU is lost" in c["gpus"][1]["error"] and c["gpus"][1]["total_bytes"] is None
    assert [g["index"] for g in d["gpus"]] == [0]  # the GPU vanished from NVML's list


def test_container_fallback_uses_only_frameworks_already_imported(nvml_standin):
    """NVML lists processes, none with our pid (host pids): an already-imported framework's own
    figure is used; nothing is imported. The module below is a stub standing in for torch's
    two documented calls (no CUDA framework is installed here)."""
    code = """
    import json, sys, types
    from cudnn_magic.engines.memory import sample
    before = sample()
    torch = types.ModuleType("torch")
    torch.cuda = types.SimpleNamespace(is_initialized=lambda: True, device_count=lambda: 2,
                                       memory_reserved=lambda i: (i + 1) * 3 * 2**30,
                                       memory_allocated=lambda i: 2**30)
    sys.modules["torch"] = torch
    after = sample()
    print(json.dumps({"before": before.gpus[0].this_kernel_bytes, "imported": [m for m in ("tensorflow", "jax", "cupy") if m in sys.modules],
                      "after": [g.this_kernel_bytes for g in after.gpus], "src": after.gpus[0].this_kernel_source}))
    """
    out = run_json(code, standin_env(nvml_standin, {"gpus": 2, "procs.0": "999999:1073741824"}))
    assert out["before"] is None and out["imported"] == []
    assert out["after"] == [3 * GiB, 6 * GiB]
    assert out["src"].startswith("PyTorch memory_reserved")


def test_snapshot_never_raises_without_driver(nvml_standin):
    if real_nvml_present():
        pytest.skip("a real libnvidia-ml is installed here")
    out = _sample(None, {})
    assert out["gpus"] == [] and out["error"].startswith("NVML Shared Library Not Found")


def test_cli_json_and_text(nvml_standin):
    env = standin_env(nvml_standin, {"gpus": 2, "procs.1": "31337:1048576"})
    p = run_py("", env, args=["-m", "cudnn_magic", "memory", "--json"])
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert [g["name"] for g in doc["gpus"]] == ["NVIDIA Stand-in GPU 0", "NVIDIA Stand-in GPU 1"]
    assert doc["gpus"][1]["processes"] == [{"pid": 31337, "used_bytes": 1048576, "this_kernel": False}]
    p = run_py("", env, args=["-m", "cudnn_magic", "memory"])
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].split()[:2] == ["GPU", "Name"]
    assert "1.0 GiB / 80.0 GiB" in lines[1] and "2.0 GiB / 80.0 GiB" in lines[2] and "1 (1 MiB)" in lines[2]


def test_cli_without_driver_is_one_line_exit_1():
    """A script can tell nothing was measured (exit 1, as nvitop's), and usage
    is exit 2; before, every case was exit 0."""
    if real_nvml_present():
        pytest.skip("a real libnvidia-ml is installed here")
    env = standin_env(None)
    for args in (["memory"], ["memory", "--watch", "0.1"]):
        p = run_py("", env, args=["-m", "cudnn_magic", *args])
        assert p.returncode == 1, (args, p.returncode)
        assert p.stdout.count("\n") == 1 and p.stdout.startswith("No GPU memory to show: NVML Shared Library Not Found")
    p = run_py("", env, args=["-m", "cudnn_magic", "memory", "--json"])
    assert p.returncode == 1 and json.loads(p.stdout)["error"].startswith("NVML Shared Library Not Found")
    p = run_py("", env, args=["-m", "cudnn_magic", "memory", "--watch", "soon"])
    assert p.returncode == 2


def test_cli_watch_prints_successive_tables_until_ctrl_c(nvml_standin):
    env = standin_env(nvml_standin, {"gpus": 1, "step.0": GiB})
    # A shell without job control starts background jobs with SIGINT ignored, and Python then
    # installs no KeyboardInterrupt handler (seen when the suite ran as `... &`): give the child
    # the default disposition, as a terminal's foreground job has.
    proc = subprocess.Popen([sys.executable, "-m", "cudnn_magic", "memory", "--watch", "0.1"], env=env, cwd=str(REPO),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # noqa: PLW1509 - no threads yet
    tables = []
    try:
        for line in proc.stdout:  # a pipe, not a tty: successive tables, no ANSI
            if line.startswith("0 "):
                tables.append(line)
            if len(tables) >= 3:
                break
        proc.send_signal(signal.SIGINT)
        rest, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert len(set(tables)) == 3  # the memory changed between samples
    assert "\x1b[" not in "".join(tables) + rest


def test_render_text_units():
    from cudnn_magic.model import GpuMemory, MemorySnapshot, ProcessMemory
    from cudnn_magic.render.memory import fmt_bytes, snapshot_html, snapshot_text, sparkline_svg

    assert [fmt_bytes(x) for x in (None, 512, 2048, 3 * 1024**2, int(1.5 * GiB))] == ["N/A", "512 B", "2 KiB", "3 MiB", "1.5 GiB"]
    s = MemorySnapshot(gpus=(
        GpuMemory(index=0, name="G", total_bytes=8 * GiB, used_bytes=2 * GiB, free_bytes=6 * GiB, visible_index=0,
                  processes=(ProcessMemory(1, GiB, True), ProcessMemory(2, None))),
        GpuMemory(index=1, name="H", error="GPU is lost", visible_index=1),
    ))
    text = snapshot_text(s)
    assert "2.0 GiB / 8.0 GiB" in text and "25%" in text and "1 (N/A)" in text and "GPU 1 error: GPU is lost" in text
    assert "GPU is lost" in snapshot_html(s)
    svg = sparkline_svg([(0.0, GiB), (1.0, 3 * GiB), (2.0, 2 * GiB)], 8 * GiB)
    assert svg.startswith("<svg") and "peak 3.0 GiB" in svg and "<circle" in svg


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "0", "0.0001", "abc", "7200"])
def test_bad_watch_interval_is_a_usage_error(value):
    proc = subprocess.run([sys.executable, "-m", "cudnn_magic", "memory", "--watch", value], capture_output=True,
                          text=True, cwd=str(REPO), timeout=60)
    assert proc.returncode == 2
    assert "--watch" in proc.stderr and "Traceback" not in proc.stderr
