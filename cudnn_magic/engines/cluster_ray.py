"""The same probes on every alive node of a Ray cluster: one row per node, differences marked.

``%cudnn_check --ray [ADDRESS]``, ``cudnn-magic check --ray ADDRESS`` and
``cudnn_magic.engines.cluster_ray.ray_check()`` run :func:`cudnn_magic.engines.cluster.worker_probe` (the Dask
check's probe: the ``check`` JSON of the process it runs in, no framework imported) as one Ray
task per alive node, pinned to it with ``NodeAffinitySchedulingStrategy(node_id, soft=False)``,
in the job's runtime environment: the worker that runs it is one the job's own tasks would get
(``env_vars``, ``pip``/``uv``, ``working_dir``, ``py_modules``, ``worker_process_setup_hook``
decide which cuDNN it loads). The tasks ask for no CPU (``num_cpus=0``), so a node whose CPUs are
all busy, or a head started with ``--num-cpus=0``, still answers.

Waiting: every task is sent at once and ``ray.wait`` waits for all of them at most ``timeout``
seconds; a node whose task has not answered by then is a "timeout" row and its task is cancelled
with ``ray.cancel(ref, force=True)`` (Ray kills the worker running it), so nothing is left running.
A task that fails (the runtime environment could not be set up, cudnn-magic is not installed in
it, the node died) is an "error" row with Ray's reason.

Connections: in a kernel already connected (``ray.is_initialized()``), that connection is used as
it is and never shut down here; an interrupt (Ctrl-C, the kernel's interrupt) cancels the probe
tasks still pending before it propagates. Otherwise the check runs in a child process of its own
(:func:`_check_in_child`) that connects to ``ADDRESS`` (what ``ray.init`` accepts: ``auto``,
``ray://HOST:10001``, ``HOST:6379``) with the given runtime environment, and hands back the table
through a pipe of its own: Ray's driver logs to stdout and stderr from C++ threads for as long as
it lives (a ``ray.init`` to a port that accepts and never answers retries for more than ten
minutes, printing a warning every few seconds; a node that dies prints a notice on stdout), none
of which may land in a later cell or in the ``--json`` output; the child ends with the check (its
session killed after the deadline, or after an interrupt that it was given 10 s to act on: cancel
its tasks, disconnect), so no thread, connection or task of it outlives the call. Ray is optional
(``pip install 'cudnn-magic[ray]'``): it is imported only inside :func:`ray_check`, and only in the
child when this process is not connected. Sources: Ray's ``ray.init``, ``ray.nodes``, ``ray.wait``,
``ray.cancel`` and ``ray.util.scheduling_strategies.NodeAffinitySchedulingStrategy`` API reference.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from typing import Any

from ..model.cluster import ClusterReport, WorkerRow
from ..util.files import read_regular
from .cluster import ClusterCheckError, ClusterInputError, _reason_for, worker_probe

__all__ = ["RAY_INSTALL_HINT", "RayNotInstalledError", "parse_runtime_env", "ray_check"]

RAY_INSTALL_HINT = "pip install 'cudnn-magic[ray]'"
PROBE_NAME = "cudnn_magic_probe"  # the task's name: ``ray::cudnn_magic_probe`` in ps while it runs


class RayNotInstalledError(ClusterCheckError, ImportError):
    """``ray`` is not importable here; the message says what to install."""


def _import_ray() -> Any:
    try:
        import ray  # optional dependency (cudnn-magic[ray]), imported only to reach a cluster
    except ImportError as exc:
        raise RayNotInstalledError(
            f"Checking a Ray cluster needs Ray, which is not installed here ({exc}): {RAY_INSTALL_HINT}") from None
    return ray


def parse_runtime_env(value: Any) -> dict[str, Any] | None:
    """A runtime environment from ``--runtime-env``: a dict as is, JSON text (``{"env_vars": ...}``),
    or the path of a JSON or YAML file (``.yaml``/``.yml``, read with PyYAML, which Ray itself
    requires). None and "" give None.

    Raises:
        ClusterInputError: not a JSON object, an unreadable file, or bad JSON/YAML (one sentence).
        ClusterCheckError: a YAML file and no PyYAML here.
    """
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, dict):
        return value
    text = str(value).strip()
    source = "--runtime-env"
    if not text.startswith(("{", "[")):  # JSON text; anything else names a file
        try:
            data = read_regular(text, 4 << 20)
        except OSError as exc:
            raise ClusterInputError(f"--runtime-env {text}: not JSON and not a readable file "
                                    f"({exc.strerror or exc})") from None
        source, text = text, data.decode("utf-8", "replace")
        if source.endswith((".yaml", ".yml")):
            try:
                import yaml  # a dependency of Ray: present wherever --ray can run
            except ImportError:
                raise ClusterCheckError(f"{source}: reading YAML needs PyYAML (installed with Ray): "
                                        f"{RAY_INSTALL_HINT}") from None
            try:
                env = yaml.safe_load(text)
            except yaml.YAMLError as exc:
                raise ClusterInputError(f"{source}: not valid YAML ({str(exc).splitlines()[0]})") from None
            if not isinstance(env, dict):
                raise ClusterInputError(f"{source}: a runtime environment is a mapping (env_vars, pip, working_dir, ...)")
            return env
    try:
        env = json.loads(text)
    except ValueError as exc:
        raise ClusterInputError(f"{source}: not valid JSON ({exc})") from None
    if not isinstance(env, dict):
        raise ClusterInputError(f"{source}: a runtime environment is a JSON object (env_vars, pip, working_dir, ...)")
    return env


def _host_port(address: str) -> tuple[str, int] | None:
    """(host, port) of ``HOST:PORT`` or ``ray://HOST:PORT`` (``[v6]:PORT`` too); None for ``auto``
    and anything without a numeric port.

    Raises:
        ClusterInputError: the port is a number that no port can be (0, or above 65535).
    """
    rest = address.split("://", 1)[-1].rstrip("/")
    host, sep, port = rest.rpartition(":")
    if not sep or not port.isdigit() or not host:
        return None
    if not 0 < int(port) < 65536:
        raise ClusterInputError(f"{address}: {port} is not a port number (1-65535)")
    return host.strip("[]"), int(port)


def _reachable(where: str, timeout: float) -> None:
    """A plain TCP connection to ``HOST:PORT`` (when the address has one), so that nothing answering
    there is one sentence at once rather than a ``ray.init`` that retries for minutes.

    Raises:
        ClusterInputError: not a port number.
        ClusterCheckError: nothing answers there.
    """
    hp = _host_port(where)
    if hp is None:
        return
    import socket  # start-up cost: only when connecting to a Ray cluster

    try:
        socket.create_connection(hp, timeout=min(timeout, 10.0)).close()
    except (OSError, OverflowError) as exc:
        raise ClusterCheckError(f"could not connect to the Ray cluster at {where}: nothing answers at "
                                f"{hp[0]}:{hp[1]} ({getattr(exc, 'strerror', None) or exc})") from None


def _connect(ray: Any, address: str | None, runtime_env: dict[str, Any] | None, timeout: float) -> bool:
    """Connect unless already connected; True when this call connected (and must disconnect).

    Bounded by ``timeout``: ``ray.init`` to an address where no Ray answers retries for minutes
    (measured with Ray 2.60: more than 5 minutes for ``127.0.0.1:1``), so a ``HOST:PORT`` is first
    tried with a plain TCP connection, and ``ray.init`` itself runs in a daemon thread that is given
    up after ``timeout`` (it disconnects at once if it connects later)."""
    if ray.is_initialized():
        current = None
        try:
            current = ray.get_runtime_context().gcs_address
        except Exception:  # noqa: BLE001 - Ray Client connections have none
            pass
        if address not in (None, "", "auto") and current and address.split("://")[-1] != current:
            raise ClusterCheckError(
                f"this process is already connected to the Ray cluster at {current}; to check {address}, call "
                "ray.shutdown() first, or leave out the address to check the connected cluster")
        return False
    where = (address or "").strip() or "auto"
    _reachable(where, timeout)
    import threading  # start-up cost: as above

    result: dict[str, Any] = {}
    gave_up = threading.Event()

    def init() -> None:
        try:
            ray.init(address=where, runtime_env=runtime_env, logging_level=logging.ERROR, log_to_driver=False)
            result["ok"] = True
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            result["error"] = exc
            return
        if gave_up.is_set():  # connected after the caller gave up: leave nothing connected
            ray.shutdown()

    th = threading.Thread(target=init, name="cudnn-magic-ray-init", daemon=True)
    th.start()
    th.join(timeout)
    if th.is_alive():
        gave_up.set()
        raise ClusterCheckError(f"could not connect to the Ray cluster at {where} within {timeout:g} s "
                                "(ray.init did not return; is a Ray head running there, and is this its GCS port?)")
    exc = result.get("error")
    if exc is not None:
        text = " ".join(str(exc).split())  # Ray's own message, on one line (some run over several)
        text = text if len(text) <= 400 else text[:400] + "..."
        if runtime_env is not None and isinstance(exc, (ValueError, TypeError)) and not isinstance(exc, ConnectionError):
            # ray.init validates the runtime environment before it connects (RuntimeEnv's checks):
            # the cluster was not the problem
            raise ClusterInputError(f"Ray refused the runtime environment (--runtime-env): {type(exc).__name__}: {text}")
        raise ClusterCheckError(f"could not connect to the Ray cluster at {where}: {type(exc).__name__}: {text}")
    return True


def _node_address(n: dict[str, Any]) -> str:
    return f"{n.get('NodeManagerAddress') or '?'}:{n.get('NodeManagerPort') or '?'}"


def _is_head(n: dict[str, Any]) -> bool:
    return any(k == "node:__internal_head__" for k in (n.get("Resources") or {}))


def _task_reason(exc: BaseException) -> str:
    """One line for a failed probe task (Ray's error text is several lines with a traceback)."""
    name = type(exc).__name__
    text = str(exc).strip()
    if "RuntimeEnvSetupError" in name or ("runtime_env" in text.lower() and "setup" in text.lower()):
        lines = [ln for ln in text.splitlines() if ln.strip()]
        return f"the runtime environment could not be set up on this node: {lines[-1] if lines else name}"
    if "cudnn_magic" in text and ("ModuleNotFoundError" in text or "No module named" in text):
        return ("cudnn-magic is not importable in this node's workers: install it there, or add it to the runtime "
                "environment (pip: [\"cudnn-magic\"] or py_modules)")
    if name in ("NodeDiedError", "TaskUnschedulableError", "WorkerCrashedError", "ActorDiedError"):
        return f"{name}: {text.splitlines()[0] if text else 'the node or its worker died'}"
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return _reason_for(exc) if not lines else f"{name}: {lines[-1][:400]}"


def ray_check(address: str | None = None, runtime_env: Any = None, timeout: float = 30.0) -> ClusterReport:
    """Run the check on every alive node of a Ray cluster and return the table.

    Args:
        address: what ``ray.init`` accepts (``"auto"``, ``"ray://HOST:10001"``, ``"HOST:6379"``);
            None uses the connection this process already has, else ``"auto"``.
        runtime_env: the job's runtime environment (a dict, JSON text or a JSON/YAML file path);
            given with an existing connection it applies to the probe tasks only (Ray merges its
            ``env_vars`` into the job's and takes its other fields instead of the job's).
        timeout: seconds to wait for the nodes' answers (all are asked at once), and at most
            as long again to connect when this call connects: the whole check takes about
            twice this at most (plus starting the child process, a few seconds).

    Returns:
        A :class:`ClusterReport` with ``kind="ray"``, one row per alive node (``address``
        IP:raylet port, ``name`` the node id), the head node as the reference when no value is
        held by a majority; nodes that did not answer in time are "timeout" rows (their tasks
        cancelled), nodes whose task failed "error" rows, each with the reason.

    Raises:
        RayNotInstalledError: Ray is not installed here (says ``pip install 'cudnn-magic[ray]'``).
        ClusterInputError: bad input (a :class:`ClusterCheckError`): a timeout or port that is
            none, a runtime environment that is not one or that Ray refused. One plain sentence.
        ClusterCheckError: the cluster cannot be reached, or the connected one is another
            cluster. The message is one plain sentence.
        KeyboardInterrupt: interrupted; the probe tasks were cancelled (and the child process,
            when there was one, ended) first.
    """
    timeout = _timeout(timeout)
    env = parse_runtime_env(runtime_env)
    ray = sys.modules.get("ray")
    if ray is not None and getattr(ray, "is_initialized", lambda: False)():
        return _check_here(ray, address, env, timeout)
    _import_ray()  # the clear "not installed" sentence here, before a child is started
    address = (address or "").strip() or None
    _reachable(address or "auto", timeout)  # a wrong port: one sentence now, not after starting Ray
    return _check_in_child(address, env, timeout)


def _timeout(timeout: Any) -> float:
    try:
        seconds = float(timeout)
    except (TypeError, ValueError):
        raise ClusterInputError(f"timeout must be a number of seconds, got {timeout!r}") from None
    if not seconds > 0:
        raise ClusterInputError(f"timeout must be more than 0 seconds, got {seconds:g}")
    return seconds


# The child: the check connected from a process of its own; the answer (the report's JSON, or the
# error) goes to the file descriptor given, never to stdout, which Ray's driver writes to.
_CHILD = r"""
import json, os, sys
from cudnn_magic.engines.cluster_ray import _child_main
_child_main(int(sys.argv[1]), json.loads(sys.argv[2]))
"""

_INTERRUPT_GRACE_S = 10.0  # after an interrupt, what the child gets to cancel its tasks and disconnect


def _child_main(fd: int, params: dict[str, Any]) -> None:
    """In the child process: connect, check, write ``{"report": ...}`` or ``{"error": ...,
    "bad_input": bool}`` (a :class:`ClusterInputError`) to ``fd``, disconnect. An interrupt
    (SIGINT from the parent) cancels the pending tasks first."""
    try:
        ray = _import_ray()
        rep = _check_here(ray, params.get("address"), params.get("runtime_env"), float(params["timeout"]))
        answer: dict[str, Any] = {"report": rep.to_json()}
    except ClusterCheckError as exc:
        answer = {"error": str(exc), "bad_input": isinstance(exc, ClusterInputError)}
    except KeyboardInterrupt:
        answer = {"interrupted": True}
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(answer, fh, default=str)


def _check_in_child(address: str | None, env: dict[str, Any] | None, timeout: float) -> ClusterReport:
    """:func:`_check_here` in a child process of its own session (module docstring); its stdout
    and stderr (Ray's logs) go to a temporary file, whose last line is quoted only when the child
    failed without an answer."""
    params = {"address": address, "runtime_env": env, "timeout": timeout}
    read_fd, write_fd = os.pipe()
    child_env = dict(os.environ)
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # where cudnn_magic is
    installed = {os.path.realpath(p) for p in sysconfig.get_paths().values()}
    if os.path.realpath(here) not in installed:  # a checkout on sys.path: the child must find the same one
        child_env["PYTHONPATH"] = os.pathsep.join([here] + [p for p in child_env.get("PYTHONPATH", "").split(os.pathsep) if p])
    deadline_s = 2 * timeout + 60  # connecting and waiting, each bounded by timeout; starting Python and Ray
    with tempfile.TemporaryFile() as log:
        try:
            proc = subprocess.Popen([sys.executable, "-c", _CHILD, str(write_fd), json.dumps(params)],
                                    stdin=subprocess.DEVNULL, stdout=log, stderr=log, pass_fds=(write_fd,),
                                    start_new_session=True, env=child_env)
        except OSError as exc:
            os.close(read_fd)
            os.close(write_fd)
            raise ClusterCheckError(f"could not start the process that checks the Ray cluster: {exc}") from None
        os.close(write_fd)
        chunks: list[bytes] = []
        reader = threading.Thread(target=lambda: chunks.extend(iter(lambda: os.read(read_fd, 1 << 16), b"")),
                                  name="cudnn-magic-ray-answer", daemon=True)
        reader.start()
        try:
            try:
                proc.wait(timeout=deadline_s)
            except subprocess.TimeoutExpired:
                _end(proc, signal.SIGKILL, 0)
                raise ClusterCheckError(f"the Ray check did not finish within {deadline_s:g} s and was stopped "
                                        "(its process and tasks ended)") from None
            except KeyboardInterrupt:
                _end(proc, signal.SIGINT, _INTERRUPT_GRACE_S)  # it cancels its tasks and disconnects
                raise
        finally:
            if proc.poll() is None:
                _end(proc, signal.SIGKILL, 0)
            reader.join(5)
            os.close(read_fd)
        raw = b"".join(chunks)
        try:
            answer = json.loads(raw.decode("utf-8")) if raw else None
        except ValueError:
            answer = None
        if not isinstance(answer, dict) or not ({"report", "error"} & set(answer)):
            log.seek(0, 2)
            log.seek(max(0, log.tell() - 4096))
            lines = [ln for ln in log.read().decode("utf-8", "replace").splitlines() if ln.strip()]
            raise ClusterCheckError(f"the process that checks the Ray cluster ended without an answer (exit "
                                    f"{proc.returncode}){': ' + lines[-1][:300] if lines else ''}")
    if "error" in answer:
        raise (ClusterInputError if answer.get("bad_input") is True else ClusterCheckError)(str(answer["error"]))
    return ClusterReport.from_json(answer["report"])


def _end(proc: Any, sig: int, grace_s: float) -> None:
    """Send ``sig`` to the child's session; after ``grace_s`` seconds (or at once), SIGKILL it
    whole, so no process of it is left. Never raises."""
    try:
        os.killpg(proc.pid, sig)
    except OSError:
        pass
    if grace_s > 0:
        try:
            proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        pass


def _check_here(ray: Any, address: str | None, env: dict[str, Any] | None, timeout: float) -> ClusterReport:
    """The check in this process, connected already or connecting (and then disconnecting)."""
    # start-up cost: part of Ray, only when a Ray cluster is checked
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    t0 = time.monotonic()
    own = _connect(ray, address, env, timeout)
    refs: dict[Any, tuple[str, float]] = {}
    pending: list[Any] = []
    try:
        try:
            nodes = [n for n in ray.nodes() if n.get("Alive")]
            gcs = ray.get_runtime_context().gcs_address
        except Exception as exc:  # noqa: BLE001 - the cluster went away: one line
            raise ClusterCheckError(f"checking the Ray cluster failed: {type(exc).__name__}: {exc}") from None
        nodes.sort(key=lambda n: (not _is_head(n), _node_address(n)))
        try:
            probe = ray.remote(worker_probe)
        except Exception as exc:  # noqa: BLE001 - Ray refused the task: one line
            raise ClusterCheckError(f"checking the Ray cluster failed: {type(exc).__name__}: {exc}") from None
        options: dict[str, Any] = {"num_cpus": 0, "max_retries": 0, "name": PROBE_NAME}
        if env is not None and not own:
            options["runtime_env"] = env  # the connection's job env already holds it when we connected
        rows: dict[str, WorkerRow] = {}
        for n in nodes:
            addr = _node_address(n)
            rows[addr] = WorkerRow(addr, n.get("NodeID"), "timeout", None, {})
            try:
                ref = probe.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False),
                                    **options).remote()
            except Exception as exc:  # noqa: BLE001 - one node's failure is that node's row
                rows[addr] = WorkerRow(addr, n.get("NodeID"), "error", _task_reason(exc), {})
                continue
            refs[ref] = (addr, time.monotonic())
            pending.append(ref)
        deadline = time.monotonic() + timeout
        while pending:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            try:
                done, pending = ray.wait(pending, num_returns=1, timeout=left)
            except Exception as exc:  # noqa: BLE001 - Ray failed while waiting: each node still waited on says so
                reason = " ".join(f"waiting for the probe failed: {type(exc).__name__}: {exc}".split())[:400]
                for ref in pending:
                    addr, sent = refs[ref]
                    _cancel(ray, ref)
                    rows[addr] = WorkerRow(addr, rows[addr].name, "error", reason, {}, time.monotonic() - sent)
                pending = []
                break
            for ref in done:
                addr, sent = refs[ref]
                dt = time.monotonic() - sent
                try:
                    ans = ray.get(ref, timeout=max(1.0, deadline - time.monotonic()))
                except Exception as exc:  # noqa: BLE001 - the task failed: that node's row
                    rows[addr] = WorkerRow(addr, rows[addr].name, "error", _task_reason(exc), {}, dt)
                    continue
                if not isinstance(ans, dict):
                    rows[addr] = WorkerRow(addr, rows[addr].name, "error",
                                           f"unexpected answer of type {type(ans).__name__}", {}, dt)
                elif ans.get("error"):
                    rows[addr] = WorkerRow(addr, rows[addr].name, "error", f"the probe failed on the node: {ans['error']}", {}, dt)
                else:
                    rows[addr] = WorkerRow(addr, rows[addr].name, "ok", None, ans, dt)
        for ref in pending:
            addr, sent = refs[ref]
            _cancel(ray, ref)
            rows[addr] = WorkerRow(addr, rows[addr].name, "timeout",
                                   f"no answer within {timeout:g} s (the node is hung, overloaded or unreachable, or its "
                                   "runtime environment is still being set up); the probe task was cancelled",
                                   {}, time.monotonic() - sent)
        pending = []
        head = next((_node_address(n) for n in nodes if _is_head(n)), None)
        return ClusterReport(list(rows.values()), timeout, gcs, time.monotonic() - t0, kind="ray", reference=head)
    except BaseException:  # an interrupt mid-wait: no probe task is left behind
        for ref in pending:
            _cancel(ray, ref)
        raise
    finally:
        if own:
            try:
                ray.shutdown()
            except Exception:  # noqa: BLE001 - disconnecting never raises into the caller
                pass


def _cancel(ray: Any, ref: Any) -> None:
    """``ray.cancel(ref, force=True)``: a task not started yet is dropped, a running one's worker
    is killed. Never raises (the task may have finished meanwhile)."""
    try:
        ray.cancel(ref, force=True)
    except Exception:
        logging.getLogger("cudnn_magic").debug("ray.cancel failed", exc_info=True)
