"""``cluster_check`` against a real Dask cluster whose workers load different cuDNNs.

The scheduler is a real ``dask.distributed.LocalCluster`` (``n_workers=0``); the workers are
real ``dask worker`` processes (with their Nanny) started here, each with its own environment,
because the dynamic loader reads ``LD_LIBRARY_PATH`` only at process start: Dask's
``Nanny(env=...)`` applies its variables inside the already started worker (too late for
``dlopen``), and ``LocalCluster`` gives every worker the same environment. Two of five workers
put a C stand-in ``libcudnn.so.9`` answering 9.1.0 ahead of the real cuDNN wheel; every worker
loads ``libcudnn.so.9`` by soname, so the loader picks the stand-in on those two and the real
wheel on the others.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from helpers.support import REPO, build_cudnn_standin, require_real_cudnn

STANDIN_VERSION = "9.1.0"
N_WHEEL, N_STANDIN = 3, 2


def _worker_env(ld_library_path: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "PYTEST_CURRENT_TEST")}
    if ld_library_path is not None:
        env["LD_LIBRARY_PATH"] = ld_library_path
    env["PYTHONPATH"] = os.pathsep.join([str(REPO)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env["DASK_DISTRIBUTED__WORKER__DAEMON"] = "True"
    return env


class Workers:
    """``dask worker`` processes started with a chosen environment each; stopped at teardown."""

    def __init__(self, address: str, tmp: Path) -> None:
        self.address, self.tmp = address, tmp
        self.procs: dict[str, subprocess.Popen] = {}
        self.pids: set[int] = set()  # worker process ids (children of nannies) to reap

    def start(self, name: str, ld_library_path: str | None, nanny: bool = True, extra_env: dict[str, str] | None = None) -> None:
        d = self.tmp / name
        d.mkdir(parents=True, exist_ok=True)
        cmd = [sys.executable, "-m", "distributed.cli.dask_worker", self.address, "--name", name, "--nthreads", "1",
               "--no-dashboard", "--memory-limit", "0", "--local-directory", str(d), "--death-timeout", "60",
               "--nanny" if nanny else "--no-nanny"]
        log = open(d / "worker.log", "wb")  # noqa: SIM115 - the worker's stdout while it runs
        env = {**_worker_env(ld_library_path), **(extra_env or {})}
        self.procs[name] = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                            cwd=d, start_new_session=True)
        log.close()

    def kill(self, name: str) -> None:
        """Stop one worker at once: SIGKILL to its session (the nanny and its worker)."""
        p = self.procs[name]
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
        p.wait(timeout=10)

    def stop(self) -> None:
        for p in self.procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 8
        for p in self.procs.values():
            try:
                p.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)  # its own session: the nanny and its worker
                p.wait(timeout=5)
        for pid in self.pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def _names(client) -> dict[str, str]:
    return {a: str(w["name"]) for a, w in client.scheduler_info(n_workers=-1)["workers"].items()}


def _wait_for_name(client, name: str, timeout: float = 90) -> str:
    """The address of the worker called ``name`` once it has joined."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = [a for a, n in _names(client).items() if n == name]
        if found:
            return found[0]
        time.sleep(0.2)
    raise AssertionError(f"worker {name} did not join within {timeout} s")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """(client, workers, {name: address}, standin_dir, wheel_dir) for a 5-worker cluster."""
    distributed = pytest.importorskip("distributed")
    wheel = require_real_cudnn()
    tmp = tmp_path_factory.mktemp("dask")
    standin_dir = tmp / "standin"
    build_cudnn_standin(standin_dir, STANDIN_VERSION)

    lc = distributed.LocalCluster(n_workers=0, processes=True, threads_per_worker=1, dashboard_address=":0",
                                  scheduler_port=0, silence_logs=50)
    client = distributed.Client(lc, set_as_default=False)
    workers = Workers(lc.scheduler_address, tmp)
    try:
        for i in range(N_WHEEL):
            workers.start(f"wheel-{i}", str(wheel))
        for i in range(N_STANDIN):
            workers.start(f"standin-{i}", os.pathsep.join([str(standin_dir), str(wheel)]))
        client.wait_for_workers(N_WHEEL + N_STANDIN, timeout=90)
        workers.pids.update(client.run(os.getpid).values())

        def load_cudnn_like_a_framework() -> str:
            # What a framework does: dlopen by soname, the loader searches LD_LIBRARY_PATH.
            import ctypes

            lib = ctypes.CDLL("libcudnn.so.9", mode=ctypes.RTLD_GLOBAL)
            lib.cudnnGetVersion.restype = ctypes.c_size_t
            return str(lib.cudnnGetVersion())

        loaded = client.run(load_cudnn_like_a_framework)
        names = _names(client)
        by_name = {n: a for a, n in names.items()}
        for n, a in by_name.items():
            assert loaded[a] == ("90100" if n.startswith("standin") else loaded[by_name["wheel-0"]]), loaded
        yield client, workers, by_name, standin_dir, wheel
    finally:
        try:
            client.close(timeout=10)
        finally:
            workers.stop()
            lc.close(timeout=10)


@pytest.mark.native
def test_table_marks_exactly_the_workers_with_another_cudnn(cluster):
    from cudnn_magic.engines.cluster import ClusterReport, cluster_check

    client, workers, by_name, standin_dir, wheel = cluster
    standins = {a for n, a in by_name.items() if n.startswith("standin")}
    report = cluster_check(client, timeout=30)
    assert isinstance(report, ClusterReport)
    assert [w.status for w in report.workers] == ["ok"] * 5, [(w.address, w.reason) for w in report.workers]

    # What each worker mapped, as the worker itself reported it.
    for w in report.workers:
        mains = [c for c in w.data["cudnn_loaded"] if c["main"]]
        assert len(mains) == 1, mains
        if w.address in standins:
            assert mains[0]["version"] == STANDIN_VERSION
            assert mains[0]["path"] == os.path.realpath(standin_dir / "libcudnn.so.9")
        else:
            assert mains[0]["version"] != STANDIN_VERSION
            assert mains[0]["path"] == os.path.realpath(wheel / "libcudnn.so.9")
        assert w.data["pid"] in workers.pids and w.data["ld_library_path"] == w.data["ld_library_path_at_start"]

    diff = report.majority_diff()
    assert set(diff["cudnn_mapped"]["differs"]) == standins
    wheel_row = next(w for w in report.workers if w.address not in standins)
    assert diff["cudnn_mapped"]["majority"] == wheel_row.cell("cudnn_mapped")
    # Every column that differs, differs on exactly those two workers.
    assert {a for d in diff.values() for a in d["differs"]} == standins
    assert "cudnn_installed" in diff and "ld_library_path" in diff

    # Text: the differing values carry '*', on those rows only.
    text = report.text()
    for line in text.splitlines():
        if line.startswith("tcp://"):
            addr = line.split()[0]
            assert ("*" + STANDIN_VERSION in line) == (addr in standins), line
            assert ("*" in line) == (addr in standins), line
    assert "2 differ from the majority" in report.summary_line()

    # HTML: highlighted cells only in those rows; everything escaped.
    page = report._repr_mimebundle_()["text/html"]
    rows = [r for r in page.split("<tr")[1:] if "<code>tcp://" in r]
    assert len(rows) == 5
    for r in rows:
        addr = r.split("<code>", 1)[1].split("</code>", 1)[0]
        assert ("cm-diff" in r) == (addr in standins), r[:200]

    # JSON: per-worker contract dicts plus status; plain data end to end.
    doc = report.to_json()
    assert json.loads(json.dumps(doc)) == doc
    assert [w["status"] for w in doc["workers"]] == ["ok"] * 5
    for w in doc["workers"]:
        for key in ("cudnn_loaded", "cudnn_installed", "frameworks", "driver", "gpus", "findings", "host", "pid",
                    "address", "reason"):
            assert key in w
    assert set(doc["differences"]["cudnn_mapped"]["differs"]) == standins


@pytest.mark.native
def test_probe_sends_plain_json_and_imports_no_framework(cluster):
    from cudnn_magic.engines.cluster import worker_probe

    client = cluster[0]
    answers = client.run(worker_probe)
    for a, ans in answers.items():
        assert type(ans) is dict and json.loads(json.dumps(ans)) == ans, a

    def framework_modules() -> list[str]:
        import sys as _sys

        return sorted(m for m in ("torch", "tensorflow", "jax", "cupy", "onnxruntime") if m in _sys.modules)

    assert all(v == [] for v in client.run(framework_modules).values())


@pytest.mark.native
def test_cli_cluster_json_and_exit_code(cluster):
    from cudnn_magic.cli.cluster import cli_cluster

    client, _w, by_name, _s, _wheel = cluster
    out = io.StringIO()
    rc = cli_cluster(client.scheduler.address, timeout=30, as_json=True, out=out)
    doc = json.loads(out.getvalue())
    assert len(doc["workers"]) == 5 and all(w["status"] == "ok" for w in doc["workers"])
    errors = any(f["severity"] == "error" for w in doc["workers"] for f in w["findings"])
    assert rc == (1 if errors else 0)
    out = io.StringIO()
    cli_cluster(client.scheduler.address, timeout=30, as_json=False, out=out)
    assert "cuDNN mapped" in out.getvalue() and by_name["standin-0"] in out.getvalue()


@pytest.mark.native
def test_hung_and_killed_workers_are_reported_while_the_rest_answer(cluster):
    """One worker's event loop is blocked (what an out-of-band call that never returns does:
    ``Client.run`` executes in the loop thread), another is killed while the probe waits on
    it. Both are reported with the reason; the five others answer within the timeout."""
    from cudnn_magic.engines.cluster import cluster_check

    client, workers, by_name, _s, wheel = cluster
    workers.start("hung", str(wheel), nanny=False)
    workers.start("killed", str(wheel), nanny=False)
    _wait_for_name(client, "hung"), _wait_for_name(client, "killed")
    names = {n: a for a, n in _names(client).items()}
    hung, killed = names["hung"], names["killed"]
    pids = client.run(os.getpid, workers=[hung, killed])
    workers.pids.update(pids.values())

    async def block_event_loop(seconds: float) -> None:
        import asyncio
        import time as _time

        await asyncio.sleep(0.2)  # let the worker answer this call first
        _time.sleep(seconds)  # noqa: ASYNC251 - holds the event loop, as a blocking out-of-band call would

    timeout = 6.0
    result: dict = {}
    try:
        client.run(block_event_loop, 60, workers=[hung, killed], wait=False)
        time.sleep(0.5)
        t0 = time.monotonic()
        th = threading.Thread(target=lambda: result.setdefault("r", cluster_check(client, timeout=timeout)),
                              daemon=True)
        th.start()
        time.sleep(1.5)  # the probes are in flight; the killed worker's waits on its blocked loop
        os.kill(pids[killed], signal.SIGKILL)
        th.join(timeout + 15)
        elapsed = time.monotonic() - t0
    finally:  # a worker whose event loop is blocked ignores SIGTERM until the block ends
        for pid in pids.values():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    assert "r" in result, "cluster_check did not return"
    report = result["r"]
    assert elapsed < timeout + 5, elapsed
    status = {w.address: w for w in report.workers}
    assert set(status) == set(names.values())
    assert status[hung].status == "timeout" and f"{timeout:g} s" in status[hung].reason
    # The scheduler's connection to the killed worker closes: reported at once, not at the timeout.
    assert status[killed].status == "error" and "connection to the worker closed" in status[killed].reason
    assert status[killed].elapsed_s < timeout - 1
    for n in by_name:
        assert status[by_name[n]].status == "ok", status[by_name[n]]
    # The failed rows are shown with their reason; they are not compared.
    text = report.text()
    assert "Workers that did not answer" in text and hung in text and "TIMEOUT" in text
    assert {a for d in report.majority_diff().values() for a in d["differs"]} == {
        a for n, a in by_name.items() if n.startswith("standin")}
    assert report.exit_code == 1
    doc = report.to_json()
    assert {w["address"]: w["status"] for w in doc["workers"]}[hung] == "timeout"


@pytest.mark.native
def test_ld_library_path_set_by_the_nanny_after_start_is_flagged(cluster):
    """``distributed.nanny.environ`` (like ``Nanny(env=...)``) sets LD_LIBRARY_PATH inside the
    already started worker: ``os.environ`` shows the stand-in first, but the loader still
    uses the start value and maps the wheel. The row says so."""
    from cudnn_magic.engines.cluster import cluster_check

    client, workers, _by_name, standin_dir, wheel = cluster
    late = os.pathsep.join([str(standin_dir), str(wheel)])
    # Started without LD_LIBRARY_PATH (an existing variable would take precedence over the
    # config); the nanny then sets it in the worker process.
    workers.start("late-env", None, extra_env={"DASK_DISTRIBUTED__NANNY__ENVIRON": repr({"LD_LIBRARY_PATH": late})})
    try:
        addr = _wait_for_name(client, "late-env")

        def load_and_env() -> tuple[str, str]:
            import ctypes
            import os as _os

            try:
                ctypes.CDLL("libcudnn.so.9", mode=ctypes.RTLD_GLOBAL)
                loaded = "loaded"
            except OSError as exc:
                loaded = str(exc)
            return loaded, _os.environ["LD_LIBRARY_PATH"]

        loaded, env_now = client.run(load_and_env, workers=[addr])[addr]
        assert env_now == late and "cannot open shared object file" in loaded  # the loader never saw it
        row = next(w for w in cluster_check(client, timeout=20).workers if w.address == addr)
        assert row.status == "ok" and row.cell("cudnn_mapped") == "none"
        assert row.cell("ld_library_path").endswith("(set after start; the loader uses (unset))")
        assert "Nanny(env=...)" in (row.env_note() or "") and "Nanny(env=...)" in cluster_check(client, 20).text()
    finally:
        workers.kill("late-env")


@pytest.mark.native
def test_unreachable_scheduler_and_bad_input_give_one_clear_message():
    pytest.importorskip("distributed")
    import socket

    from cudnn_magic.cli.cluster import cli_cluster
    from cudnn_magic.engines.cluster import ClusterCheckError, ClusterInputError, cluster_check

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t0 = time.monotonic()
    with pytest.raises(ClusterCheckError, match="could not connect to the Dask scheduler") as unreachable:
        cluster_check(f"tcp://127.0.0.1:{port}", timeout=2)
    assert time.monotonic() - t0 < 15
    # nothing answering is not the input (the magic says it in one line and the cell goes on) ...
    assert not isinstance(unreachable.value, ClusterInputError)
    # ... an object or a value that names no cluster is (the magic raises UsageError)
    with pytest.raises(ClusterInputError, match=r"expected a dask\.distributed\.Client"):
        cluster_check(42)
    with pytest.raises(ClusterInputError, match="timeout"):
        cluster_check("tcp://127.0.0.1:1", timeout=0)
    with pytest.raises(ClusterInputError, match="is not a Dask scheduler address"):
        cluster_check("tcp://127.0.0.1:notaport", timeout=2)
    assert cli_cluster(f"tcp://127.0.0.1:{port}", timeout=1, out=io.StringIO()) == 2
    assert cli_cluster("tcp://127.0.0.1:notaport", timeout=1, out=io.StringIO()) == 2  # the command line: exit 2 for both


def test_without_dask_the_error_says_what_to_install():
    code = textwrap.dedent("""
        import sys, json
        class NoDask:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in ("dask", "distributed"):
                    raise ModuleNotFoundError(f"No module named {name!r}", name=name)
                return None
        sys.meta_path.insert(0, NoDask())
        from cudnn_magic.cli.cluster import cli_cluster
        from cudnn_magic.engines.cluster import DaskNotInstalledError, cluster_check, worker_probe
        assert "distributed" not in sys.modules
        probe = worker_probe()  # the worker side needs no Dask
        assert "error" not in probe and "cudnn_loaded" in probe, probe
        json.dumps(probe)
        try:
            cluster_check("tcp://127.0.0.1:8786")
        except ImportError as exc:
            assert isinstance(exc, DaskNotInstalledError)
            print("MESSAGE:", exc)
        rc = cli_cluster("tcp://127.0.0.1:8786", 1.0)
        print("RC:", rc)
    """)
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    env["PYTHONPATH"] = str(REPO)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "MESSAGE:" in proc.stdout and "pip install 'cudnn-magic[dask]'" in proc.stdout
    assert "RC: 2" in proc.stdout
    err = proc.stderr.strip().splitlines()
    assert len(err) == 1 and "pip install 'cudnn-magic[dask]'" in err[0], proc.stderr


def _row(addr: str, mapped: str, status: str = "ok"):
    from cudnn_magic.engines.cluster import WorkerRow

    data = {"host": "h", "cudnn_loaded": [{"main": True, "version": mapped, "path": f"/x/{mapped}/libcudnn.so.9"}],
            "cudnn_installed": [], "frameworks": [], "gpus": [], "driver": None, "findings": []}
    return WorkerRow(addr, None, status, None if status == "ok" else "no answer", data if status == "ok" else {})


def test_majority_rules_on_rows():
    from cudnn_magic.engines.cluster import ClusterReport

    r = ClusterReport([_row("a", "9.1.0"), _row("b", "9.1.0"), _row("c", "9.3.0"), _row("d", "9.3.0")])
    d = r.majority_diff()["cudnn_mapped"]
    assert d["majority"] is None and set(d["differs"]) == {"a", "b", "c", "d"}  # 2 against 2: no reference
    r = ClusterReport([_row("a", "9.1.0"), _row("b", "9.3.0"), _row("c", "9.3.0"), _row("d", "9.3.0", "timeout")])
    d = r.majority_diff()["cudnn_mapped"]
    assert d["majority"] == "9.3.0 /x/9.3.0/libcudnn.so.9" and set(d["differs"]) == {"a"}
    assert r.exit_code == 1 and [w.address for w in r.failed] == ["d"]
    r = ClusterReport([_row("a", "<b>9</b>")])
    assert "<b>9</b>" not in r.html() and "&lt;b&gt;9&lt;/b&gt;" in r.html()
    assert ClusterReport([]).exit_code == 1 and "no workers" in ClusterReport([]).text()


def test_with_no_majority_the_reference_row_decides():
    """Two Ray nodes hold no majority: the head node (``reference``) is what the other is compared
    with; without a reference (Dask) both are listed; a reference that did not answer is none."""
    from cudnn_magic.engines.cluster import ClusterReport

    head, other = _row("h", "9.27.0"), _row("w", "9.12.0")
    d = ClusterReport([head, other], kind="ray", reference="h").majority_diff()["cudnn_mapped"]
    assert d["reference"] == "head node" and d["majority"] == head.cell("cudnn_mapped") and set(d["differs"]) == {"w"}
    assert set(ClusterReport([head, other]).majority_diff()["cudnn_mapped"]["differs"]) == {"h", "w"}
    r = ClusterReport([_row("h", "9.27.0", "timeout"), other, _row("x", "9.3.0")], kind="ray", reference="h")
    assert r.majority_diff()["cudnn_mapped"]["reference"] is None
    three = ClusterReport([head, other, _row("x", "9.12.0")], kind="ray", reference="h")
    d = three.majority_diff()["cudnn_mapped"]
    assert d["reference"] == "majority" and set(d["differs"]) == {"h"}  # a majority wins over the head
    text = ClusterReport([head, other], kind="ray", reference="h").text()
    assert "Ray cluster" in text and "h (head)" in text and "node(s)" in text and "head node" in text
    doc = ClusterReport([head, other], kind="ray", reference="h").to_json()
    assert doc["kind"] == "ray" and doc["head"] == "h" and [n["node_id"] for n in doc["nodes"]] == [None, None]


def test_framework_verdicts_are_columns():
    from cudnn_magic.engines.cluster import ClusterReport

    a, b, c = _row("a", "9.3.0"), _row("b", "9.3.0"), _row("c", "9.3.0")
    for row, verdict in ((a, "ok"), (b, "ok")):
        row.data["frameworks"] = [{"name": "PyTorch", "verdict": verdict, "cudnn_used": "9.3.0"}]
    c.data["frameworks"] = [{"name": "PyTorch", "verdict": "mismatch", "cudnn_used": "8.9.7"}]
    r = ClusterReport([a, b, c])
    assert ("framework:PyTorch", "PyTorch") in r.columns()
    d = r.majority_diff()
    assert d == {"framework:PyTorch": {"majority": "ok (cuDNN 9.3.0)", "reference": "majority",
                                       "differs": {"c": "mismatch (cuDNN 8.9.7)"}}}
    c.data["frameworks"] = []
    assert ClusterReport([a, b, c]).majority_diff()["framework:PyTorch"]["differs"] == {"c": "not installed"}
