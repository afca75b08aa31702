"""The Ray executor's slots, without GPUs: Ray declares GPUs that are not there, and a test-only worker
(tests/ray_fakes.py) runs a GPU slot's folds on the CPU, says where each ran, and stands in for the memory probe.

- Twelve folds on a local Ray of 2 declared GPUs at 2 slots each run in 4 long-lived actors, 3 folds each (the same
  process per actor across its folds), each pair of actors sharing one GPU at 0.5, and the results equal the local
  executor's (one torch thread per fold everywhere, so the numbers are identical).
- Two nodes of one cluster that declare different GPU memory get different worker and pack counts, each from the
  probe that ran on it.

Packs on Ray are tests/e2e/test_packs.py's; a killed Ray worker's fold resuming from its checkpoint is
tests/e2e/test_executors.py's.
"""

from __future__ import annotations

import collections
import importlib.util
import json
import os
import subprocess
from pathlib import Path

import pytest
from helpers import BELUGA, DATA, ENV, REPO, config_with, results, run_benchmark

pytestmark = [pytest.mark.slow, pytest.mark.skipif(
    importlib.util.find_spec("ray") is None,
    reason="Ray is not installed (pip install 'beluga[ray]'); the Ray executor is an optional extra")]

CONFIG = DATA / "ray-slots.toml"
TESTS = str(REPO / "tests")


def test_twelve_folds_on_two_declared_gpus_at_two_slots_run_in_four_long_lived_actors(tmp_path: Path) -> None:
    config = config_with(CONFIG, tmp_path, {'name = "local"': 'name = "ray"'}, append=(
        '\n[executor.options]\nworker = "ray_fakes:CpuAsGpuWorker"\nnum_cpus = 4\nnum_gpus = 2\nfolds_per_gpu = 2\n'))
    store, log, rounds = tmp_path / "ray.duckdb", tmp_path / "folds.jsonl", tmp_path / "rounds"
    rounds.mkdir()
    # Folds finish in rounds of 4 (each actor's k-th fold waits for the others' k-th): on 2 shared cores one actor
    # could otherwise finish two folds while another starts up, and the count per actor would be chance.
    env = {**ENV, "PYTHONPATH": TESTS, "BELUGA_RAY_LOG": str(log), "BELUGA_RAY_ROUNDS": f"{rounds}:4"}
    proc = subprocess.run([*BELUGA, "run", str(config), "--store", str(store)], capture_output=True, text=True,
                          env=env, timeout=600, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    flat = " ".join(proc.stdout.split())
    assert "workers: 4 (Ray, per node: node " in flat
    assert "4 worker(s) of 1 CPU, 0.5 GPU, 1 thread(s) each (options.folds_per_gpu = 2)" in flat, flat
    folds = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert len(folds) == 12 and len({f["job"] for f in folds}) == 12
    by_pid = collections.defaultdict(list)
    for f in folds:
        by_pid[f["pid"]].append(f)
    # 4 actors, 3 folds each, in one process each (the worker's own count goes 1, 2, 3: it was never restarted).
    assert sorted(len(v) for v in by_pid.values()) == [3, 3, 3, 3], by_pid
    assert all(sorted(f["fold_of_worker"] for f in v) == [1, 2, 3] for v in by_pid.values())
    # Each actor holds one declared GPU for all its folds, two actors per GPU (a share of 0.5 each); the GPU slot was
    # scheduled as cuda:0 of its process (Ray's CUDA_VISIBLE_DEVICES) and ran on the CPU (the test-only override).
    gpu_of = {pid: {tuple(f["gpu_ids"]) for f in v} for pid, v in by_pid.items()}
    assert all(len(g) == 1 for g in gpu_of.values())
    assert sorted(collections.Counter(next(iter(g)) for g in gpu_of.values()).items()) == [(("0",), 2), (("1",), 2)]
    assert {(f["scheduled"], f["device"]) for f in folds} == {("cuda:0", "cpu")}
    assert all(f["cuda_visible_devices"] == f["gpu_ids"][0] for f in folds)
    # The same numbers as the local executor's.
    local = tmp_path / "local.duckdb"
    run_benchmark(config_with(CONFIG, tmp_path, name="local.toml"), local)
    assert results(store) == results(local)


def test_two_nodes_with_different_gpu_memory_are_sized_by_their_own_probes(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    import ray
    from ray.cluster_utils import Cluster

    from beluga_core.config.load import load_config
    from beluga_core.execution.executors.base import EXECUTORS
    from beluga_core.execution.sizing import GiB
    from beluga_core.orchestration.teachers import plan_with_stores

    # The nodes' worker processes import the test-only worker from tests/.
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [TESTS, os.environ.get("PYTHONPATH")])))
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False})
    try:
        # One GPU each, "declaring" 24 and 80 GiB free; the big node has fewer CPUs, so its CPUs bound its workers.
        small = cluster.add_node(num_cpus=8, num_gpus=1, resources={"test_gpu_gib": 24, "test_member_gib": 2,
                                                                    "test_pack_base_gib": 1})
        big = cluster.add_node(num_cpus=4, num_gpus=1, resources={"test_gpu_gib": 80, "test_member_gib": 2,
                                                                  "test_pack_base_gib": 1})
        cluster.wait_for_nodes()
        head = cluster.head_node.node_id
        config = config_with(DATA / "tiny-packs.toml", tmp_path, {'name = "local"': 'name = "ray"',
                                                                  "pack = 4": 'pack = "auto"', "threads = 1\n": ""},
                             append=f'\n[executor.options]\nworker = "ray_fakes:CpuAsGpuWorker"\n'
                                    f'address = "{cluster.address}"\n')
        plan = plan_with_stores(load_config(config), config)
        executor = EXECUTORS.get("ray")(plan.config.executor)
        try:
            nodes = {n.node.node_id: n for n in executor.nodes(plan)}
            workers = executor.workers(plan)
            packs = executor.pack_size(plan, plan.jobs)
        finally:
            executor.close()
            ray.shutdown()
    finally:
        cluster.shutdown()
    s, b = nodes[small.node_id], nodes[big.node_id]
    assert nodes[head].actors == 0    # the head declares no GPU: a GPU run's folds skip it
    # Each node sized from the probe that ran on it.
    assert (s.measured_on, b.measured_on) == (small.node_id, big.node_id)
    # Workers per GPU: free × 0.9 // 10 GiB, at most the CPUs at one each: 24 → 2; 80 → 7, cut to 4 by 4 CPUs.
    assert (s.actors, s.gpu_share, s.threads) == (2, 0.5, 4)
    assert (b.actors, b.gpu_share, b.threads) == (4, 0.25, 1)
    # Members per pack: a worker's share of free × 0.9, less the 1 GiB base, over 2 GiB a member:
    # (21.6 / 2 − 1) // 2 = 4 on the small node, (72 / 4 − 1) // 2 = 8 on the big one (the cap on a GPU is 16).
    assert int(24 * GiB * 0.9) // 2 < 11 * GiB and (s.pack and s.pack.size, b.pack and b.pack.size) == (4, 8)
    assert workers.count == 6
    # The run packs at the smaller size, so that a pack fits on either node, and says why.
    assert packs.size == 4 and "the smallest of the nodes'" in packs.why
