"""Issue 13: one missing NVML function must not blank every memory field.

A driver (here the C stand-in for ``libnvidia-ml.so.1``, built without ``nvmlDeviceGetUUID``)
answers Function Not Found for one query; the real pynvml and the real ``cudnn-magic memory
--json`` in a child process must still report each GPU's total, used and free bytes, with the
UUID null and the reason said.
"""

from __future__ import annotations

import json

import pytest

from nvml_standin import build_nvml_standin, run_py, standin_env

pytestmark = pytest.mark.native

GiB = 1024**3


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
