"""The real Ray cluster scenario of tests/cluster/test_ray_cluster.py, run as its own process inside a private
network namespace (only ``lo``; see :func:`netns_command`), so nothing Ray starts reaches any
address but loopback. It writes what it saw as JSON to ``argv[1]``; the tests assert on that.

The cluster (``ray.cluster_utils.Cluster``, every node a real raylet on 127.0.0.1): the head, and a
second node whose ``env_vars`` put an older real cuDNN (``nvidia-cudnn-jit-cu12`` 9.12, ``argv[2]``)
first on its workers' ``LD_LIBRARY_PATH``. The job's runtime environment has a
``worker_process_setup_hook`` (tests/helpers/ray_cudnn_hook.py) that loads ``libcudnn.so.9`` by soname,
as a framework import does. Steps:

0. the CLI against a closed port and a port where something that is not Ray listens: one line,
   exit 2, within about ``--timeout``;
1. ``ray_check()`` from a driver already connected with that runtime environment, and
   ``%cudnn_check --ray`` in a real IPython shell of that driver: they must use that connection
   and leave it connected;
2. ``cudnn-magic check --ray ADDRESS --runtime-env FILE.yaml --json`` (the CLI connects itself,
   with the hook) and the same without ``--runtime-env`` (no hook: nothing mapped);
3. a third node whose raylet is stopped (SIGSTOP: a hung node) while ``ray_check(timeout=T)``
   runs: its row must be a timeout, the others answer, it returns after about T; after SIGCONT no
   probe task runs anywhere (``ray::cudnn_magic_probe`` in no process's command line).
4. a real kernel (jupyter_client, in the same namespace): ``%cudnn_check --ray`` to a port that
   accepts and never answers, then a 12 s cell (Ray's driver must not write into it, no thread of
   the check may be left); the node hung again, the magic interrupted mid-check (the kernel's
   interrupt) once not connected (the check's child process ends) and once connected in the
   kernel (its tasks cancelled): the kernel answers the next cell and, after SIGCONT, no probe runs;
5. a node that dies mid-check (its raylet SIGKILLed while the workers start, ``ray_cudnn_hook.slow``):
   the CLI's ``--json`` stdout must still be the JSON; a runtime environment Ray refuses: one line.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
REPO = TESTS.parent
TIMEOUT_S = 10  # the per-node timeout of the hung-node check

# Run first in the child: a new network namespace with only loopback, brought up (SIOCGIFFLAGS /
# SIOCSIFFLAGS with IFF_UP, <linux/sockios.h>, <net/if.h>), then exec the scenario. unshare(2)
# CLONE_NEWNET needs CAP_SYS_ADMIN (root here and in CI).
NETNS = r"""
import ctypes, fcntl, os, socket, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
if libc.unshare(0x40000000) != 0:
    sys.stderr.write("unshare(CLONE_NEWNET) failed: " + os.strerror(ctypes.get_errno()) + "\n")
    sys.exit(97)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
flags = struct.unpack("16sh", fcntl.ioctl(s, 0x8913, struct.pack("16sh", b"lo", 0)))[1]
fcntl.ioctl(s, 0x8914, struct.pack("16sh", b"lo", flags | 1))
if os.environ.get("CUDNN_MAGIC_NETNS_FILE"):
    with open(os.environ["CUDNN_MAGIC_NETNS_FILE"], "w") as fh:
        fh.write(os.readlink("/proc/self/ns/net"))
os.execv(sys.executable, [sys.executable] + sys.argv[1:])
"""


def netns_command(*argv: str) -> list[str]:
    """``python -c NETNS argv...``: run ``python argv...`` in a private network namespace (its
    ``/proc/self/ns/net`` link is written to ``$CUDNN_MAGIC_NETNS_FILE`` when that is set)."""
    return [sys.executable, "-c", NETNS, *argv]


def kill_namespace(link: str) -> list[int]:
    """SIGKILL every process whose network namespace is ``link`` (``net:[INODE]``): what Ray
    started in the private namespace (raylets, GCS, agents, workers) when the scenario was cut
    short. Only that namespace: a process of this machine's own namespace is never touched."""
    killed = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            if os.readlink(f"/proc/{d}/ns/net") == link:
                os.kill(int(d), signal.SIGKILL)
                killed.append(int(d))
        except OSError:
            continue
    return killed


def _probe_processes() -> list[str]:
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/cmdline", "rb") as fh:
                    cmd = fh.read().replace(b"\0", b" ").decode("utf-8", "replace")
            except OSError:
                continue
            if cmd.startswith("ray::cudnn_magic_probe"):
                out.append(f"{d}: {cmd.strip()}")
    return out


def _probe_seen(seconds: float) -> list[str]:
    """Every probe task process seen while polling for ``seconds`` (a probe runs about a second)."""
    seen: set[str] = set()
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        seen.update(_probe_processes())
        time.sleep(0.1)
    return sorted(seen)


def _check_children() -> list[str]:
    """Processes of a Ray check's child (``_child_main`` in the command line)."""
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/cmdline", "rb") as fh:
                    if b"_child_main" in fh.read():
                        out.append(d)
            except OSError:
                continue
    return out


def _kernel_steps(address: str | None, silent_port: int | None, raylet: int | None, tmp: Path) -> dict:
    """Step 4 in a real kernel (tests/helpers/kernel_session.py): see the module docstring."""
    from helpers.kernel_session import KernelSession

    out: dict = {}
    ks = KernelSession(tmp, {"PYTHONPATH": os.pathsep.join([str(REPO), str(TESTS)])})
    try:
        ks.run("%load_ext cudnn_magic", timeout=120)
        if silent_port is not None:
            t0 = time.monotonic()
            out["silent"] = ks.run(f"%cudnn_check --ray 127.0.0.1:{silent_port} --timeout 3", timeout=180).text()
            out["silent_s"] = time.monotonic() - t0
            out["later"] = ks.run("import time, threading\ntime.sleep(12)\n"
                                  "print(sorted(t.name for t in threading.enumerate()))", timeout=120).text()
            return out
        for mode in ("child", "connected"):
            if mode == "connected":
                ks.run(f"import ray, logging\nray.init(address={address!r}, logging_level=logging.ERROR, "
                       "log_to_driver=False)", timeout=300)
            os.kill(raylet, signal.SIGSTOP)
            try:
                cell = "%cudnn_check --ray" + ("" if mode == "connected" else f" {address}") + " --timeout 120"
                msg_id = ks.send(cell)
                time.sleep(10)  # connected (the child: started, imported Ray, connected) and waiting
                t0 = time.monotonic()
                ks.km.interrupt_kernel()
                reply = ks.wait(msg_id, timeout=120)
                step = {"status": reply.get("status"), "ename": reply.get("ename"),
                        "interrupt_s": time.monotonic() - t0,
                        # what a failure shows: the error's value and the traceback's last lines
                        "evalue": reply.get("evalue"), "traceback": [re.sub(r"\x1b\[[0-9;]*m", "", ln)
                                                                      for ln in reply.get("traceback") or []][-6:]}
                t0 = time.monotonic()
                step["next"] = ks.run("print('alive', 1 + 1)", timeout=60).text()
                step["next_s"] = time.monotonic() - t0
                step["children"] = _check_children()
            finally:
                os.kill(raylet, signal.SIGCONT)
            step["probes_after"] = _probe_seen(10)
            out[mode] = step
    finally:
        ks.close()
    return out


def _cli(address: str, *extra: str) -> dict:
    t0 = time.monotonic()
    extra = extra if "--timeout" in extra else ("--timeout", "120", *extra)
    p = subprocess.run([sys.executable, "-m", "cudnn_magic", "check", "--ray", address, "--json", *extra],
                       capture_output=True, text=True, timeout=300)
    try:
        doc = json.loads(p.stdout)
    except ValueError:
        doc = None
    return {"rc": p.returncode, "doc": doc, "stderr": p.stderr[-4000:], "elapsed_s": time.monotonic() - t0}


def _start(cluster_class):  # type: ignore[no-untyped-def]
    """The head node. Ray gives a raylet 30 s to register (a constant in ray/_private/node.py; the
    GCS side waits RAY_raylet_start_wait_time_s, set longer by the test), which a loaded 2-core
    machine can miss: then again, from scratch."""
    for attempt in (1, 2, 3):
        try:
            return cluster_class(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
        except Exception as exc:  # Ray raises a bare Exception for this
            if attempt == 3 or "timed out during startup" not in str(exc):
                raise
            import ray

            ray.shutdown()
            subprocess.run([sys.executable, "-m", "ray.scripts.scripts", "stop", "--force"], capture_output=True,
                           timeout=120)


def main(out_path: str, old_lib: str) -> None:
    out: dict = {"interfaces": [n for _i, n in socket.if_nameindex()]}
    assert out["interfaces"] == ["lo"], out["interfaces"]
    import ray
    from ray.cluster_utils import Cluster

    from cudnn_magic.engines.cluster_ray import ray_check

    # No Ray at the address: a closed port, and a port where something else listens (ray.init to it
    # would retry for minutes): one line, exit 2, within about --timeout.
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        closed_port = closed.getsockname()[1]
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen(8)
        out["no_ray"] = {"closed": _cli(f"127.0.0.1:{closed_port}", "--timeout", "5"),
                         "not_ray": _cli(f"127.0.0.1:{other.getsockname()[1]}", "--timeout", "5")}
        out["kernel_silent"] = _kernel_steps(None, other.getsockname()[1], None, Path(out_path).parent / "k1")

    hook = {"worker_process_setup_hook": "helpers.ray_cudnn_hook.load_by_soname"}
    cluster = _start(Cluster)
    try:
        cluster.add_node(num_cpus=1, env_vars={"LD_LIBRARY_PATH": old_lib})
        cluster.wait_for_nodes()
        out["address"] = cluster.address
        ray.init(address=cluster.address, runtime_env=hook, logging_level="ERROR", log_to_driver=False)
        out["nodes"] = {f"{n['NodeManagerAddress']}:{n['NodeManagerPort']}": n["NodeID"] for n in ray.nodes()}
        out["old_node"] = next(a for a, i in out["nodes"].items() if i != ray.get_runtime_context().get_node_id())

        t0 = time.monotonic()
        rep = ray_check(None, timeout=120)
        out["api"] = {"json": rep.to_json(), "text": rep.text(), "html": rep.html(), "elapsed_s": time.monotonic() - t0,
                      "still_connected": ray.is_initialized()}
        # The magic in a real IPython shell connected the same way: the connection is used as it is.
        from IPython.core.interactiveshell import InteractiveShell

        ip = InteractiveShell.instance()
        ip.run_line_magic("load_ext", "cudnn_magic")
        magic = ip.run_line_magic("cudnn_check", "--ray --json --timeout 120")
        out["magic"] = {"json": magic, "still_connected": ray.is_initialized(),
                        "view": type(ip.run_line_magic("cudnn_check", "--ray")).__name__}
        ray.shutdown()

        env_file = Path(out_path).with_suffix(".runtime_env.yaml")
        env_file.write_text("worker_process_setup_hook: helpers.ray_cudnn_hook.load_by_soname\n")
        out["cli_with_env"] = _cli(cluster.address, "--runtime-env", str(env_file))
        out["cli_plain"] = _cli(cluster.address)
        out["cli_bad_env"] = _cli(cluster.address, "--runtime-env", "{not json")

        hung = cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, logging_level="ERROR", log_to_driver=False)
        out["hung_node"] = next(f"{n['NodeManagerAddress']}:{n['NodeManagerPort']}" for n in ray.nodes()
                                if n["NodeID"] == hung.node_id)
        # Warm each node's worker pool for this job (an idle worker stays for reuse), so the nodes
        # that are not hung answer well within the timeout on a loaded machine too.
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        noop = ray.remote(num_cpus=0)(lambda: None)
        ray.get([noop.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False)).remote()
                 for n in ray.nodes() if n["Alive"]], timeout=300)
        raylet = hung.all_processes["raylet"][0].process.pid
        os.kill(raylet, signal.SIGSTOP)
        try:
            t0 = time.monotonic()
            rep = ray_check(None, timeout=TIMEOUT_S)
            out["timeout"] = {"json": rep.to_json(), "text": rep.text(), "elapsed_s": time.monotonic() - t0,
                              "still_connected": ray.is_initialized()}
        finally:
            os.kill(raylet, signal.SIGCONT)
        time.sleep(5)  # the resumed raylet would start the task now, had it not been cancelled
        out["probes_left"] = _probe_processes()
        ray.shutdown()
        out["kernel_interrupt"] = _kernel_steps(cluster.address, None, raylet, Path(out_path).parent / "k2")

        # 5. A node dies while its workers start (the slow hook): SIGKILL its raylet mid-check.
        slow = json.dumps({"worker_process_setup_hook": "helpers.ray_cudnn_hook.slow"})
        t0 = time.monotonic()
        p = subprocess.Popen([sys.executable, "-m", "cudnn_magic", "check", "--ray", cluster.address, "--json",
                              "--timeout", "60", "--runtime-env", slow], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
        time.sleep(6)
        os.kill(raylet, signal.SIGKILL)
        so, se = p.communicate(timeout=300)
        try:
            doc = json.loads(so)
        except ValueError:
            doc = None
        out["node_died"] = {"rc": p.returncode, "stdout_head": so[:300], "doc": doc, "stderr": se[-3000:],
                            "elapsed_s": time.monotonic() - t0}
        cluster.remove_node(hung, allow_graceful=False)
        out["refused_env"] = _cli(cluster.address, "--runtime-env", '{"working_dir": "/nonexistent-dir"}',
                                  "--timeout", "20")
    finally:
        cluster.shutdown()
    Path(out_path).write_text(json.dumps(out, indent=1, default=str))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
