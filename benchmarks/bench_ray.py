"""``cudnn-magic check --ray`` against the least a Ray user can run on every node: a no-op task
pinned to each node and ``ray.get`` on them all. Side by side, alternately, medians.

A real two-node ``ray.cluster_utils.Cluster`` (the head and one more node, every raylet on
127.0.0.1) is started inside a private network namespace with only ``lo`` (as the tests do:
tests/helpers/ray_scenario.py), then:

* in one connected driver (a kernel that called ``ray.init``): ``ray_check()`` against
  ``ray.get([noop.options(NodeAffinitySchedulingStrategy(node, soft=False)).remote() ...])``,
  alternately, ``--repeat`` times each after one warm-up of each (the job's workers exist);
* as whole processes (what a shell user waits for: interpreter start, connect, a new job whose
  workers start on every node): ``cudnn-magic check --ray ADDRESS --json`` against
  ``python -c "ray.init(ADDRESS); ray.get(<no-op per node>)"``, alternately, ``--repeat-cli`` times.

Usage (root: the namespace needs CAP_SYS_ADMIN):
    python benchmarks/bench_ray.py [--repeat N] [--repeat-cli N]
Prints a markdown table (seconds) and writes benchmarks/results/ray.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from helpers.ray_scenario import kill_namespace, netns_command  # noqa: E402  (the tests' private-namespace launcher)

NOOP_CLI = r"""
import sys, ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
ray.init(address=sys.argv[1], logging_level="ERROR", log_to_driver=False)
noop = ray.remote(num_cpus=0)(lambda: None)
ray.get([noop.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False)).remote()
         for n in ray.nodes() if n["Alive"]])
ray.shutdown()
"""


def _inside(repeat: int, repeat_cli: int, out: str) -> None:
    import ray
    from ray.cluster_utils import Cluster
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from cudnn_magic.engines.cluster_ray import ray_check

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    try:
        cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, logging_level="ERROR", log_to_driver=False)
        noop = ray.remote(num_cpus=0)(lambda: None)

        def plain() -> None:
            ray.get([noop.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False)).remote()
                     for n in ray.nodes() if n["Alive"]])

        def check() -> None:
            rep = ray_check(None, timeout=120)
            assert [w.status for w in rep.workers] == ["ok", "ok"], [(w.address, w.reason) for w in rep.workers]

        res: dict[str, list[float]] = {"ray_check (connected driver)": [], "ray.get no-op per node (connected driver)": [],
                                       "cudnn-magic check --ray (process)": [], "python ray.get no-op per node (process)": []}
        plain(), check()  # warm-up: the job's workers are started once
        for _ in range(repeat):
            for name, fn in (("ray_check (connected driver)", check), ("ray.get no-op per node (connected driver)", plain)):
                t0 = time.perf_counter()
                fn()
                res[name].append(time.perf_counter() - t0)
        ray.shutdown()
        env = dict(os.environ)
        for _ in range(repeat_cli):
            for name, cmd in (("cudnn-magic check --ray (process)",
                               [sys.executable, "-m", "cudnn_magic", "check", "--ray", cluster.address, "--json"]),
                              ("python ray.get no-op per node (process)", [sys.executable, "-c", NOOP_CLI, cluster.address])):
                t0 = time.perf_counter()
                p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600, check=False)
                res[name].append(time.perf_counter() - t0)
                assert p.returncode in (0, 1), p.stderr[-2000:]
        Path(out).write_text(json.dumps(res))
    finally:
        cluster.shutdown()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--repeat-cli", type=int, default=3)
    ap.add_argument("--inside", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.inside:
        _inside(a.repeat, a.repeat_cli, a.inside)
        return
    results = ROOT / "benchmarks" / "results"
    results.mkdir(parents=True, exist_ok=True)
    raw = results / "ray.raw.json"
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "RAY_ADDRESS")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "tests")])
    ns_file = results / "ray.netns"
    env["CUDNN_MAGIC_NETNS_FILE"] = str(ns_file)
    try:
        p = subprocess.run(netns_command(__file__, "--repeat", str(a.repeat), "--repeat-cli", str(a.repeat_cli),
                                         "--inside", str(raw)), env=env, timeout=3600, capture_output=True, text=True, check=False)
    finally:  # what Ray left in the private namespace, if the run was cut short
        if ns_file.exists():
            if ns_file.read_text() != os.readlink("/proc/self/ns/net"):
                kill_namespace(ns_file.read_text())
            ns_file.unlink()
    if p.returncode != 0:
        sys.exit(f"the benchmark failed (exit {p.returncode}):\n{p.stderr[-4000:]}")
    res = json.loads(raw.read_text())
    raw.unlink()
    rows = {k: {"median_s": statistics.median(v), "min_s": min(v), "max_s": max(v), "n": len(v), "runs_s": v}
            for k, v in res.items()}
    (results / "ray.json").write_text(json.dumps(rows, indent=1))
    print("| two-node cluster, 127.0.0.1 | median (s) | min | max | n |\n|---|---|---|---|---|")
    for k, r in rows.items():
        print(f"| {k} | {r['median_s']:.3f} | {r['min_s']:.3f} | {r['max_s']:.3f} | {r['n']} |")


if __name__ == "__main__":
    main()
