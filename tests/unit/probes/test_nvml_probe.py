"""cudnn_magic.probes.nvml through the real pynvml and the C stand-in for libnvidia-ml.so.1.

Each case runs in a child process with the stand-in on LD_LIBRARY_PATH at process start.
"""

from __future__ import annotations

import json

import pytest

from helpers.nvml_standin import (  # noqa: F401
    build_nvml_standin,
    nvml_standin,
    nvml_standin_old,
    real_nvml_present,
    run_json,
    run_py,
    standin_env,
)

pytestmark = pytest.mark.native

GiB = 1024**3

DRIVER_AND_GPUS = """
import json
from cudnn_magic.probes.nvml import driver_and_gpus
from cudnn_magic.model import to_plain
d, gpus = driver_and_gpus()
print(json.dumps({"driver": to_plain(d), "gpus": to_plain(gpus)}))
"""


def test_driver_and_gpus_reads_every_field(nvml_standin):
    spec = {"gpus": 2, "driver": "535.104.05", "cuda": 12020, "name.0": "NVIDIA A100-SXM4-80GB", "cc.0": "8.0",
            "name.1": "NVIDIA H100 80GB HBM3", "cc.1": "9.0", "used.0": 3 * GiB, "total.0": 80 * GiB}
    out = run_json(DRIVER_AND_GPUS, standin_env(nvml_standin, spec))
    assert out["driver"] == {"version": "535.104.05", "cuda_driver_version": "12.2"}
    g0, g1 = out["gpus"]
    assert g0["name"] == "NVIDIA A100-SXM4-80GB" and g0["compute_capability"] == [8, 0]
    assert g0["uuid"] == "GPU-5a4d1e00-0000-4000-8000-000000000000"
    # memory_v2: "used" excludes the 512 MiB the driver reserves; free = total - used - reserved
    assert g0["total_bytes"] == 80 * GiB and g0["used_bytes"] == 3 * GiB
    assert g0["free_bytes"] == 80 * GiB - 3 * GiB - 512 * 1024**2
    assert g1["name"] == "NVIDIA H100 80GB HBM3" and g1["compute_capability"] == [9, 0]
    assert g0["error"] is None and g1["error"] is None


def test_old_driver_falls_back_per_field(nvml_standin_old):
    """No nvmlDeviceGetMemoryInfo_v2 / _v3 processes / CudaDriverVersion_v2: v1 answers."""
    code = """
    import json
    from cudnn_magic.probes import nvml
    d, gpus = nvml.driver_and_gpus()
    h = nvml.nvml_query("nvmlDeviceGetHandleByIndex", 0)
    procs, err = nvml.running_processes(h)
    print(json.dumps({"cuda": d.cuda_driver_version, "used": gpus[0].used_bytes, "mem": nvml.memory_info(h).source,
                      "procs": [list(p) for p in procs], "err": err, "fallbacks": nvml._fallbacks}))
    """
    out = run_json(code, standin_env(nvml_standin_old, {"gpus": 1, "used.0": GiB, "procs.0": "77:1024", "cuda": 11080}))
    assert out["cuda"] == "11.8"
    assert out["used"] == GiB + 512 * 1024**2  # v1 "used" includes reserved memory
    assert out["mem"] == "nvmlDeviceGetMemoryInfo"
    assert out["procs"] == [[77, 1024]] and out["err"] is None
    assert out["fallbacks"] == {"memory": "v1", "processes": "nvmlDeviceGetComputeRunningProcesses_v2"}


def test_init_failure_is_unavailable_not_raised(nvml_standin):
    out = run_json(DRIVER_AND_GPUS, standin_env(nvml_standin, {"init_rc": 9}))
    assert out["gpus"] == []
    assert "Driver Not Loaded" in out["driver"]["unavailable"]
    assert "NVML error 9" in out["driver"]["unavailable"]


@pytest.mark.skipif(real_nvml_present(), reason="a real libnvidia-ml is installed here")
def test_no_driver_is_unavailable(nvml_standin):
    out = run_json(DRIVER_AND_GPUS, standin_env(None))
    assert out["gpus"] == []
    assert out["driver"]["unavailable"].startswith("NVML Shared Library Not Found: no NVIDIA driver is installed")


def test_lost_gpu_keeps_its_row_with_one_reason(nvml_standin):
    out = run_json(DRIVER_AND_GPUS, standin_env(nvml_standin, {"gpus": 3, "err.1": 15}))
    g0, g1, g2 = out["gpus"]
    assert g0["error"] is None and g2["error"] is None and g2["total_bytes"] == 80 * GiB
    assert g1["total_bytes"] is None and g1["name"] == "GPU 1"
    assert "GPU is lost" in g1["error"] and g1["error"].count("GPU is lost") == 1


def test_query_defaults_and_threads(nvml_standin):
    """nvml_query returns NA on errors; the chokepoint is safe from several threads at once."""
    code = """
    import json, threading
    from cudnn_magic.probes import nvml
    bad = nvml.nvml_query("nvmlDeviceGetHandleByIndex", 99)
    val, err = nvml.nvml_try("nvmlDeviceGetHandleByIndex", 99)
    missing = nvml.nvml_try("nvmlNoSuchFunction")
    errors = []
    def work():
        for _ in range(200):
            h = nvml.nvml_query("nvmlDeviceGetHandleByIndex", 0)
            m = nvml.memory_info(h)
            if m.error or m.total_bytes is None:
                errors.append(m.error)
    ts = [threading.Thread(target=work) for _ in range(4)]
    [t.start() for t in ts]; [t.join() for t in ts]
    print(json.dumps({"bad": bad, "is_na": bad is nvml.NA, "err": err, "missing": missing[1], "errors": errors}))
    """
    out = run_json(code, standin_env(nvml_standin))
    assert out["bad"] == "N/A" and out["is_na"]
    assert "Invalid Argument" in out["err"] and "NVML error 2" in out["err"]
    assert "nvmlNoSuchFunction" in out["missing"]
    assert out["errors"] == []


def test_importing_the_probe_does_not_import_pynvml(nvml_standin):
    code = """
    import json, sys
    import cudnn_magic.probes.nvml, cudnn_magic.engines.memory, cudnn_magic.render.memory, cudnn_magic.ui.memory_panel
    print(json.dumps([m for m in ("pynvml", "ipywidgets") if m in sys.modules]))
    """
    assert run_json(code, standin_env(nvml_standin)) == []


def test_decode_cuda_driver_version():
    from cudnn_magic.probes.nvml import decode_cuda_driver_version

    assert decode_cuda_driver_version(12040) == "12.4"
    assert decode_cuda_driver_version(11080) == "11.8"
    assert decode_cuda_driver_version(13000) == "13.0"
    assert decode_cuda_driver_version(0) is None and decode_cuda_driver_version(None) is None


def test_standin_matches_real_nvml_header():
    """Type-check the stand-in's entry points against NVIDIA's nvml.h when it is at hand."""
    import glob
    import os
    import subprocess
    import sysconfig

    headers = glob.glob(sysconfig.get_paths()["purelib"] + "/nvidia/*/include/nvml.h") + glob.glob("/usr/local/cuda*/include/nvml.h")
    if not headers:
        pytest.skip("no nvml.h here (pip install --no-deps nvidia-nvml-dev provides one)")
    from helpers.nvml_standin import STANDIN_SRC

    # With STANDIN_USE_NVML_H the stand-in includes NVIDIA's declarations: gcc rejects any
    # definition whose types differ from nvml.h's.
    p = subprocess.run(["gcc", "-fsyntax-only", "-Wall", "-Wno-enum-conversion", "-Werror", "-DSTANDIN_USE_NVML_H",
                        "-I", os.path.dirname(headers[0]), str(STANDIN_SRC)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr


# --------------------------------------------------------------------------------------------------
# A driver without one NVML function.
#
# One missing NVML function must not blank every memory field: a driver (the C stand-in for
# ``libnvidia-ml.so.1``, built without ``nvmlDeviceGetUUID``) answers Function Not Found for one
# query; the real pynvml and the real ``cudnn-magic memory --json`` in a child process must still
# report each GPU's total, used and free bytes, with the UUID null and the reason said.
# --------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def standin_without_uuid(tmp_path_factory):
    return build_nvml_standin(tmp_path_factory.mktemp("nvml-standin-no-uuid"), without_uuid=True)


def test_memory_json_degrades_per_field_when_get_uuid_is_missing(standin_without_uuid):
    env = standin_env(standin_without_uuid, {"gpus": 2, "used.1": 3 * GiB, "procs.0": "self:1073741824"})
    p = run_py("", env, args=["-m", "cudnn_magic", "memory", "--json"])
    assert p.returncode == 0, p.stdout + p.stderr
    out = json.loads(p.stdout)
    assert len(out["gpus"]) == 2
    for g in out["gpus"]:
        assert g["uuid"] is None
        assert g["total_bytes"] == 80 * GiB and isinstance(g["used_bytes"], int) and isinstance(g["free_bytes"], int), g
        assert "nvmlDeviceGetUUID" in (g["error"] or ""), g
    assert out["gpus"][1]["used_bytes"] == 3 * GiB
    assert out["gpus"][0]["this_kernel_bytes"] is None or out["gpus"][0]["processes"]


def test_check_probe_degrades_per_field_when_get_uuid_is_missing(standin_without_uuid):
    code = ("import json\nfrom cudnn_magic.probes.nvml import driver_and_gpus\nd, gpus = driver_and_gpus()\n"
            "print(json.dumps([[g.uuid, g.total_bytes, g.used_bytes, g.free_bytes, g.error] for g in gpus]))")
    p = run_py(code, standin_env(standin_without_uuid, {"gpus": 1}))
    assert p.returncode == 0, p.stderr
    ((uuid, total, used, free, err),) = json.loads(p.stdout.strip().splitlines()[-1])
    assert uuid is None and total == 80 * GiB and used is not None and free is not None and "nvmlDeviceGetUUID" in err
