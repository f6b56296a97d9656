"""``%cudnn_fix remove-shadowing-dir --yes`` in a real ipykernel started from a kernelspec whose
``LD_LIBRARY_PATH`` puts a C stand-in ``libcudnn.so.9`` (9.1.0) ahead of the real cuDNN wheel;
then the kernel maps the real copy once started again from its kernelspec. Also shows what a
same-manager restart does (jupyter_client reuses the spec it started with), and that
``%cudnn_fix restart-kernel --yes`` ends the kernel process after replying."""

from __future__ import annotations

import json
import os
import sys
import time

import pytest

from helpers.support import build_cudnn_standin, kernel_env, require_real_cudnn

MAPS = """
import ctypes
ctypes.CDLL("libcudnn.so.9", mode=ctypes.RTLD_GLOBAL)
print("MAPPED", sorted({l.split()[-1] for l in open("/proc/self/maps") if "libcudnn.so" in l}))
"""


# Until shell.extension._FEATURES lists cudnn_magic.shell.fix, register it here when %load_ext did not.
LOAD = """%load_ext cudnn_magic
if "cudnn_fix" not in get_ipython().magics_manager.magics["line"]:
    import cudnn_magic.shell.fix as _fm
    _fm.load(get_ipython())
"""


def _execute(kc, code: str, timeout: float = 120) -> str:
    """Run ``code`` in the kernel; return all stream/result/error text."""
    msg_id = kc.execute(code)
    parts: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        msg = kc.get_iopub_msg(timeout=timeout)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        t, c = msg["msg_type"], msg["content"]
        if t == "stream":
            parts.append(c["text"])
        elif t in ("execute_result", "display_data"):
            parts.append(c["data"].get("text/plain", ""))
        elif t == "error":
            parts.append("\n".join(c["traceback"]) + f"\n{c['ename']}: {c['evalue']}")
        elif t == "status" and c["execution_state"] == "idle":
            break
    kc.get_shell_msg(timeout=timeout)
    return "".join(parts)


def _mapped(text: str) -> list[str]:
    line = [ln for ln in text.splitlines() if ln.startswith("MAPPED")][-1]
    return json.loads(line[len("MAPPED "):].replace("'", '"'))


@pytest.mark.kernel
def test_remove_shadowing_dir_in_a_real_kernel(tmp_path, monkeypatch):
    from jupyter_client.manager import KernelManager

    real = require_real_cudnn()
    standin_dir = tmp_path / "standin"
    build_cudnn_standin(standin_dir, "9.1.0")
    env = kernel_env(tmp_path, {"CUDNN_MAGIC_STATE_DIR": str(tmp_path / "state")})
    env.pop("LD_LIBRARY_PATH", None)
    for k in ("HOME", "JUPYTER_DATA_DIR", "JUPYTER_CONFIG_DIR", "JUPYTER_RUNTIME_DIR", "IPYTHONDIR"):
        monkeypatch.setenv(k, env[k])
    spec_dir = tmp_path / "home" / "data" / "kernels" / "cudnntest"
    spec_dir.mkdir(parents=True)
    spec = {"argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            "display_name": "cuDNN fix test", "language": "python",
            "env": {"LD_LIBRARY_PATH": f"{standin_dir}:{real}"}}
    kjson = spec_dir / "kernel.json"
    kjson.write_text(json.dumps(spec, indent=1) + "\n")
    original = kjson.read_bytes()

    km = KernelManager(kernel_name="cudnntest")
    km.start_kernel(env=env)
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=60)
        assert _mapped(_execute(kc, MAPS)) == [str(standin_dir / "libcudnn.so.9")]
        out = _execute(kc, LOAD + "%cudnn_fix remove-shadowing-dir --yes")
        assert "done" in out and "--undo remove-shadowing-dir" in out, out
        assert json.loads(kjson.read_text())["env"]["LD_LIBRARY_PATH"] == str(real)
        # the preview says what applies it, exactly (a plain Restart does not)
        assert "Shut this kernel down and start it again" in out and "a plain Restart reuses" in out, out
        assert "Restart the kernel for it to take effect" not in out, out

        # Same manager, plain restart: jupyter_client reuses the spec it started with.
        km.restart_kernel(now=True)
        kc.wait_for_ready(timeout=60)
        assert _mapped(_execute(kc, MAPS)) == [str(standin_dir / "libcudnn.so.9")]
        # ... and the same fix is not offered again: the spec is fixed, this kernel predates it
        out = _execute(kc, LOAD + "%cudnn_fix remove-shadowing-dir")
        assert "the kernelspec 'cudnntest' is fixed" in out and "shut it down and start it again" in out, out
        assert "Set LD_LIBRARY_PATH in the env" not in out, out
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)

    # Started again from its kernelspec (Shut Down Kernel + start, a new notebook): the fix holds.
    km2 = KernelManager(kernel_name="cudnntest")
    km2.start_kernel(env=env)
    kc2 = km2.client()
    kc2.start_channels()
    try:
        kc2.wait_for_ready(timeout=60)
        mapped = _mapped(_execute(kc2, MAPS))
        assert mapped and all(os.path.dirname(p) == str(real) for p in mapped), mapped
        assert str(standin_dir / "libcudnn.so.9") not in mapped
        # Undo from the new kernel restores kernel.json byte for byte.
        out = _execute(kc2, LOAD + "%cudnn_fix --undo remove-shadowing-dir")
        assert "done" in out, out
        assert kjson.read_bytes() == original

        # restart-kernel: the reply arrives, then the process ends (a Jupyter server restarts it).
        out = _execute(kc2, "%cudnn_fix restart-kernel --yes")
        assert "the kernel stops in a moment" in out, out
        deadline = time.monotonic() + 15
        while km2.is_alive() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not km2.is_alive()
    finally:
        kc2.stop_channels()
        km2.shutdown_kernel(now=True)
