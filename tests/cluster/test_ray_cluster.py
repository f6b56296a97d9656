"""``ray_check`` / ``cudnn-magic check --ray`` against a real local Ray cluster whose second node's
workers load an older real cuDNN (tests/helpers/ray_scenario.py runs it, in a private network namespace
with only loopback: every connection Ray makes stays on 127.0.0.1). Skipped, with the reason, only
when Ray is not installed (``pip install 'cudnn-magic[ray]'``; ``.ci/run`` installs it)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap

import pytest

from helpers.real_wheels import install_wheel
from helpers.support import REPO, require_real_cudnn

TESTS = REPO / "tests"
TIMEOUT_S = 10  # as tests/helpers/ray_scenario.py
SCENARIO_TIMEOUT_S = 900  # the whole scenario: about 1.5-3 minutes, more on a loaded 2-core machine
# The first test starts the scenario (module fixture): pytest-timeout's 300 s would cut it short.
pytestmark = pytest.mark.timeout(SCENARIO_TIMEOUT_S + 60)


@pytest.fixture(scope="module")
def scenario(tmp_path_factory):
    pytest.importorskip("ray", reason="Ray is not installed: pip install 'cudnn-magic[ray]'")
    from helpers.ray_scenario import kill_namespace, netns_command  # the scenario's own module: imports no Ray

    wheel = require_real_cudnn()
    old = install_wheel("nvidia-cudnn-jit-cu12", "9.12.0.46") / "nvidia" / "cudnn_jit" / "lib"
    out = tmp_path_factory.mktemp("ray") / "scenario.json"
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "PYTEST_CURRENT_TEST", "RAY_ADDRESS")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), str(TESTS)])
    env["RAY_raylet_start_wait_time_s"] = "180"  # a loaded 2-core machine: let a raylet take longer to register
    ns_file = out.with_suffix(".netns")
    env["CUDNN_MAGIC_NETNS_FILE"] = str(ns_file)
    try:
        p = subprocess.run(netns_command(str(TESTS / "helpers" / "ray_scenario.py"), str(out), str(old)), env=env,
                           capture_output=True, text=True, timeout=SCENARIO_TIMEOUT_S)
    finally:  # whatever Ray left in the private namespace (a cut-short run) goes with it
        if ns_file.exists() and ns_file.read_text() != os.readlink("/proc/self/ns/net"):
            kill_namespace(ns_file.read_text())
    if p.returncode == 97:
        pytest.fail("a private network namespace is needed to keep Ray on loopback: " + p.stderr.strip())
    assert p.returncode == 0 and out.exists(), p.stderr[-6000:]
    doc = json.loads(out.read_text())
    doc["wheel"], doc["old"] = str(wheel), str(old)
    return doc


def _rows(doc: dict) -> dict[str, dict]:
    return {n["address"]: n for n in doc["nodes"]}


def _mapped(node: dict) -> list[tuple[str, str]]:
    return [(c["path"], c["version"]) for c in node["cudnn_loaded"] if c["main"]]


@pytest.mark.native
def test_two_nodes_the_second_with_an_older_cudnn_is_the_one_differing_row(scenario):
    assert scenario["interfaces"] == ["lo"]
    api = scenario["api"]
    doc, old_node = api["json"], scenario["old_node"]
    assert api["still_connected"] is True  # the driver's own connection is used and left open
    assert doc["kind"] == "ray" and doc["address"] == scenario["address"]
    rows = _rows(doc)
    assert set(rows) == set(scenario["nodes"]) and len(rows) == 2
    assert all(r["status"] == "ok" for r in rows.values()), [(a, r["reason"]) for a, r in rows.items()]
    assert {a: r["node_id"] for a, r in rows.items()} == scenario["nodes"]
    head = doc["head"]
    assert head != old_node and head in rows
    # What each node's worker mapped, as that worker reported it: the runtime env's setup hook loaded
    # libcudnn.so.9 by soname; on the second node LD_LIBRARY_PATH (its env_vars) gave the 9.12 copy.
    old_real = os.path.realpath(os.path.join(scenario["old"], "libcudnn.so.9"))
    assert _mapped(rows[old_node]) == [(old_real, "9.12.0")]
    assert rows[old_node]["ld_library_path"] == rows[old_node]["ld_library_path_at_start"] == scenario["old"]
    assert _mapped(rows[head]) == [] and rows[head]["ld_library_path"] is None
    assert "cudnn-shadowed" in {f["id"] for f in rows[old_node]["findings"]}
    # Two nodes hold no majority: the head node is the reference, and only the second node differs.
    diff = doc["differences"]
    assert {a for d in diff.values() for a in d["differs"]} == {old_node}
    assert diff["cudnn_mapped"]["reference"] == "head node" and diff["cudnn_mapped"]["majority"] == "none"
    assert {"cudnn_mapped", "cudnn_installed", "ld_library_path", "findings"} <= set(diff)
    for line in api["text"].splitlines():
        if line.startswith("127.0.0.1:"):
            assert ("*" in line) == line.startswith(old_node + " "), line
    assert "(head)" in api["text"] and "1 differ from the majority (or, with none, the head node)" in api["text"]
    rows_html = [r for r in api["html"].split("<tr")[1:] if "<code>127.0.0.1:" in r]
    assert len(rows_html) == 2 and all(("cm-diff" in r) == (f"<code>{old_node}</code>" in r) for r in rows_html)


@pytest.mark.native
def test_the_magic_uses_the_kernels_connection(scenario):
    magic, api = scenario["magic"], scenario["api"]["json"]
    assert magic["still_connected"] is True and magic["view"] == "ClusterReport"
    doc = magic["json"]
    assert doc["kind"] == "ray" and doc["address"] == api["address"] and doc["head"] == api["head"]
    assert {n["address"]: _mapped(n) for n in doc["nodes"]} == {n["address"]: _mapped(n) for n in api["nodes"]}
    assert set(doc["differences"]) == set(api["differences"])


@pytest.mark.native
def test_no_ray_at_the_address_is_one_line_within_the_timeout(scenario):
    for kind, words in (("closed", "nothing answers at"), ("not_ray", "within 5 s")):
        run = scenario["no_ray"][kind]
        assert run["rc"] == 2 and run["doc"] is None, run
        mine = [ln for ln in run["stderr"].splitlines() if ln.startswith("cudnn-magic: ")]
        assert len(mine) == 1 and words in mine[0] and "could not connect to the Ray cluster" in mine[0], run["stderr"]
        assert run["elapsed_s"] < 5 + 25, run["elapsed_s"]  # the timeout, plus starting Python and Ray's import


@pytest.mark.native
def test_cli_runs_in_the_job_runtime_env_and_prints_one_entry_per_node(scenario):
    with_env, plain = scenario["cli_with_env"], scenario["cli_plain"]
    for run in (with_env, plain):
        assert run["doc"] is not None, run["stderr"]
        assert len(run["doc"]["nodes"]) == 2 and all(n["status"] == "ok" for n in run["doc"]["nodes"])
        errors = any(f["severity"] == "error" for n in run["doc"]["nodes"] for f in n["findings"])
        assert run["rc"] == (1 if errors else 0)
    old_node = scenario["old_node"]
    old_real = os.path.realpath(os.path.join(scenario["old"], "libcudnn.so.9"))
    # --runtime-env (a YAML file) reached the workers: its setup hook mapped the 9.12 copy there ...
    assert _mapped(_rows(with_env["doc"])[old_node]) == [(old_real, "9.12.0")]
    # ... and without it the job's workers load nothing; the node still differs by its LD_LIBRARY_PATH.
    assert all(_mapped(n) == [] for n in plain["doc"]["nodes"])
    assert set(plain["doc"]["differences"]["ld_library_path"]["differs"]) == {old_node}
    bad = scenario["cli_bad_env"]
    assert bad["rc"] == 2 and bad["doc"] is None
    assert len(bad["stderr"].strip().splitlines()) == 1 and "not valid JSON" in bad["stderr"]


@pytest.mark.native
def test_a_hung_node_is_a_timeout_row_and_its_task_is_cancelled(scenario):
    t = scenario["timeout"]
    rows = _rows(t["json"])
    hung = scenario["hung_node"]
    assert len(rows) == 3 and rows[hung]["status"] == "timeout"
    assert f"no answer within {TIMEOUT_S} s" in rows[hung]["reason"] and "cancelled" in rows[hung]["reason"]
    assert all(r["status"] == "ok" for a, r in rows.items() if a != hung), [(a, r["reason"]) for a, r in rows.items()]
    assert t["elapsed_s"] < TIMEOUT_S + 6, t["elapsed_s"]
    assert t["still_connected"] is True
    assert scenario["probes_left"] == []  # after the raylet resumed, no probe task ran or runs
    assert "Nodes that did not answer" in t["text"] and "TIMEOUT" in t["text"]
    assert {a for d in t["json"]["differences"].values() for a in d["differs"]} == {scenario["old_node"]}


def test_without_ray_the_error_says_what_to_install():
    code = textwrap.dedent("""
        import sys
        class NoRay:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] == "ray":
                    raise ModuleNotFoundError(f"No module named {name!r}", name=name)
                return None
        sys.meta_path.insert(0, NoRay())
        from cudnn_magic.cli.cluster import cli_ray
        from cudnn_magic.engines.cluster_ray import RayNotInstalledError, ray_check
        try:
            ray_check("127.0.0.1:6379")
        except ImportError as exc:
            assert isinstance(exc, RayNotInstalledError)
            print("MESSAGE:", exc)
        print("RC:", cli_ray("127.0.0.1:6379", timeout=1.0))
    """)
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    env["PYTHONPATH"] = str(REPO)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "pip install 'cudnn-magic[ray]'" in proc.stdout and "RC: 2" in proc.stdout
    err = proc.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("cudnn-magic: ") and "pip install 'cudnn-magic[ray]'" in err[0]


def test_runtime_env_input_and_bad_timeouts_are_one_clear_sentence(tmp_path):
    """Each is the input (``ClusterInputError``: the magic raises ``UsageError``), found before Ray is
    imported or anything connected."""
    from cudnn_magic.engines.cluster import ClusterInputError
    from cudnn_magic.engines.cluster_ray import parse_runtime_env, ray_check

    assert parse_runtime_env(None) is None and parse_runtime_env("") is None
    assert parse_runtime_env('{"env_vars": {"A": "1"}}') == {"env_vars": {"A": "1"}}
    f = tmp_path / "env.json"
    f.write_text('{"pip": ["x"]}')
    assert parse_runtime_env(str(f)) == {"pip": ["x"]}
    for bad, words in (("[1, 2]", "JSON object"), ("{nope", "not valid JSON"), (str(tmp_path / "missing.json"),
                                                                                 "not JSON and not a readable file")):
        with pytest.raises(ClusterInputError, match=words):
            parse_runtime_env(bad)
    with pytest.raises(ClusterInputError, match="more than 0"):
        ray_check("auto", timeout=0)


_RAY_LOG = re.compile(r"^\[\d{4}-\d\d-\d\d [\d:,]+ [DIWEF] \d+ \d+\]|^\(raylet\)|\x1b\[")


@pytest.mark.native
def test_rays_own_logs_reach_neither_stderr_nor_a_later_cell(scenario):
    """Ray's driver logs from C++ threads for as long as it lives (a ``ray.init`` to a port that
    accepts and never answers retries for more than ten minutes): its warnings went to the CLI's
    stderr beside the one line, and in a kernel into the output of whatever cell ran later, from a
    thread the check left running."""
    for kind in ("closed", "not_ray"):
        err = scenario["no_ray"][kind]["stderr"].strip().splitlines()
        assert len(err) == 1 and err[0].startswith("cudnn-magic: "), err
    k = scenario["kernel_silent"]
    lines = [ln for ln in k["silent"].splitlines() if ln.strip()]
    assert len(lines) == 1 and "could not connect to the Ray cluster" in lines[0], k["silent"]
    assert k["silent_s"] < 3 + 30, k["silent_s"]
    later = k["later"].splitlines()
    assert not [ln for ln in later if _RAY_LOG.search(ln)], later
    assert "cudnn-magic-ray" not in k["later"], later


@pytest.mark.native
def test_an_interrupt_mid_check_leaves_the_kernel_usable_and_no_task_running(scenario):
    steps = scenario["kernel_interrupt"]
    for mode in ("child", "connected"):
        s = steps[mode]
        assert s["status"] == "error" and s["ename"] == "KeyboardInterrupt", (mode, s)
        assert s["interrupt_s"] < 20 and s["next_s"] < 20 and "alive 2" in s["next"], (mode, s)
        assert s["children"] == [], (mode, s)  # the check's child process ended with it
        assert s["probes_after"] == [], (mode, s)  # no probe started once the hung node resumed


@pytest.mark.native
def test_a_node_that_dies_mid_check_is_a_row_and_the_json_stays_json(scenario):
    d = scenario["node_died"]
    assert d["doc"] is not None, d["stdout_head"]
    rows = _rows(d["doc"])
    dead = scenario["hung_node"]
    assert rows[dead]["status"] in ("error", "timeout") and rows[dead]["reason"], rows[dead]
    assert all(r["status"] == "ok" for a, r in rows.items() if a != dead), [(a, r["reason"]) for a, r in rows.items()]
    assert d["rc"] == 1 and d["elapsed_s"] < 2 * 60 + 30
    assert len(d["stderr"].strip().splitlines()) <= 1, d["stderr"]


@pytest.mark.native
def test_a_runtime_env_ray_refuses_is_one_line_that_says_so(scenario):
    r = scenario["refused_env"]
    assert r["rc"] == 2 and r["doc"] is None
    lines = r["stderr"].strip().splitlines()
    assert len(lines) == 1 and "Ray refused the runtime environment (--runtime-env)" in lines[0], lines
    assert "/nonexistent-dir" in lines[0] and "could not connect" not in lines[0]


def test_address_typos_are_one_sentence_at_once():
    """A port no port can be, spaces around the address (pasted), and an empty address (an unset
    shell variable: ``--ray "$RAY_ADDR"``): the port was tried as is, the spaces made ``ray.init``
    retry until the timeout, and ``--ray ""`` ran the plain check of this machine, exit 0."""
    import socket
    import time

    pytest.importorskip("ray", reason="Ray is not installed: pip install 'cudnn-magic[ray]'")
    from cudnn_magic.engines.cluster import ClusterCheckError, ClusterInputError
    from cudnn_magic.engines.cluster_ray import _check_in_child, ray_check

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    for addr, words, bad_input in (("127.0.0.1:99999", "99999 is not a port number", True),
                                   ("127.0.0.1:0", "0 is not a port number", True),
                                   (f" 127.0.0.1:{port} ", f"nothing answers at 127.0.0.1:{port}", False)):
        t0 = time.monotonic()
        with pytest.raises(ClusterCheckError, match=words) as info:
            ray_check(addr, timeout=30)
        assert time.monotonic() - t0 < 10, addr
        assert isinstance(info.value, ClusterInputError) is bad_input, addr  # the magic: UsageError, or one line
    # the check's own process (when this one is not connected) sends back which of the two it was
    for addr, bad_input in (("127.0.0.1:0", True), (f"127.0.0.1:{port}", False)):
        with pytest.raises(ClusterCheckError) as info:
            _check_in_child(addr, None, 5)
        assert isinstance(info.value, ClusterInputError) is bad_input, (addr, info.value)
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "RAY_ADDRESS")}
    env["PYTHONPATH"] = str(REPO)
    for flag in ("--ray", "--dask"):
        r = subprocess.run([sys.executable, "-m", "cudnn_magic", "check", flag, " "], capture_output=True, text=True,
                           env=env, timeout=120)
        assert r.returncode == 2 and r.stdout == "", (flag, r)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and f"{flag} needs the cluster's address" in lines[0], (flag, r.stderr)
