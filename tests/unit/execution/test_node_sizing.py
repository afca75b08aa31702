"""Slots per node of a cluster (``sizing.nodes.size_node``), from the node's declared resources and its probe:
hand-computed counts, shares and pack sizes; no cluster."""

from __future__ import annotations

import pytest

from beluga_core.config.executor_spec import ExecutorSpec
from beluga_core.execution.executors.ray import RayOptions
from beluga_core.execution.sizing import GiB, PackMemory, WorkerMemory
from beluga_core.execution.sizing.nodes import ClusterNode, NodeProbe, run_pack_size, size_node


def node(cpus: float, gpus: float, name: str = "n1") -> ClusterNode:
    return ClusterNode(name * 4, name, cpus, gpus)


def probe(free_gib: float, gpus: int, worker_gib: float = 10, base_gib: float = 1, member_gib: float = 2) -> NodeProbe:
    return NodeProbe("x", WorkerMemory((int(free_gib * GiB),) * gpus, int(worker_gib * GiB), "test"),
                     PackMemory(int(free_gib * GiB), int(base_gib * GiB), int(member_gib * GiB), "test"))


def sized(n: ClusterNode, p: NodeProbe | None = None, gpu_cluster: bool = True, **spec: object) -> tuple:
    options = RayOptions(**spec.pop("options", {}))   # type: ignore[arg-type]
    s = size_node(ExecutorSpec(name="ray", **spec), options, n, p, gpu_cluster=gpu_cluster)  # type: ignore[arg-type]
    return s.actors, s.device, s.gpu_share, s.cpus, s.threads, s.pack.size if s.pack else None


def test_folds_per_gpu_gives_each_gpu_that_many_workers_at_an_even_share() -> None:
    # 2 GPUs × 2 = 4 workers of 0.5; 4 CPUs shared out: 1 thread (and CPU) each.
    assert sized(node(4, 2), options={"folds_per_gpu": 2}) == (4, "cuda", 0.5, 1.0, 1, None)
    # A third of a GPU is rounded down to Ray's 4 decimals, so that three fit on one GPU.
    assert sized(node(6, 1), options={"folds_per_gpu": 3})[2] == 0.3333


def test_auto_on_a_gpu_node_holds_what_its_memory_and_cpus_allow() -> None:
    # 40 GiB free, 10 % kept: 36 // 10 = 3 per GPU; 16 CPUs allow 16: 3 × 2 GPUs = 6 workers, 16 // 6 = 2 threads.
    assert sized(node(16, 2), probe(40, 2)) == (6, "cuda", 0.3333, 2.0, 2, None)
    # 4 CPUs allow 4 workers in all: 2 per GPU, though memory holds 3.
    assert sized(node(4, 2), probe(40, 2))[:3] == (4, "cuda", 0.5)
    # Nothing measured: one per GPU.
    assert sized(node(8, 2), NodeProbe("x", "the probe failed", None))[:3] == (2, "cuda", 1.0)


def test_a_cpu_node_runs_one_worker_per_cpus_per_fold_and_none_in_a_gpu_run() -> None:
    assert sized(node(8, 0), gpu_cluster=False, options={"cpus_per_fold": 2}) == (4, "cpu", 0.0, 2.0, 2, None)
    assert sized(node(8, 0), gpu_cluster=False, threads=4)[:5] == (2, "cpu", 0.0, 4.0, 4)
    assert sized(node(8, 0), gpu_cluster=True)[0] == 0
    # device = "cpu": the GPUs are not asked for; every node runs CPU workers.
    assert sized(node(4, 2), device="cpu")[:3] == (4, "cpu", 0.0)


def test_workers_are_cut_to_what_the_nodes_cpus_give_each() -> None:
    # folds_per_gpu = 4 on 2 GPUs asks for 8 workers of 2 CPUs (threads = 2) on a 10-CPU node: 5 fit.
    assert sized(node(10, 2), threads=2, options={"folds_per_gpu": 4})[:4] == (5, "cuda", 0.25, 2.0)


def test_a_nodes_pack_size_is_what_a_workers_share_of_its_memory_holds() -> None:
    # Per worker: 40 × 0.9 / 3 = 12 GiB; less the 1 GiB base, over 2 GiB a member: 5 (the cap on a GPU is 16).
    assert sized(node(16, 1), probe(40, 1), pack="auto")[0] == 3
    assert sized(node(16, 1), probe(40, 1), pack="auto")[5] == 5
    # 80 GiB at 4 workers (4 CPUs): 18 GiB each → 8.
    assert sized(node(4, 1), probe(80, 1), pack="auto")[5] == 8


def test_the_run_packs_at_the_smallest_nodes_size() -> None:
    options = RayOptions()
    spec = ExecutorSpec(name="ray", pack="auto")
    small = size_node(spec, options, node(16, 1, "a"), probe(40, 1), gpu_cluster=True)
    big = size_node(spec, options, node(4, 1, "b"), probe(80, 1), gpu_cluster=True)
    run = run_pack_size([small, big], "auto")
    assert (small.pack and small.pack.size, big.pack and big.pack.size, run.size) == (5, 8, 5)
    assert "the smallest of the nodes' (per node: a (aaaa) 5; b (bbbb) 8)" in run.why


@pytest.mark.parametrize("workers", [3, 5])
def test_a_number_of_workers_is_that_many_on_each_gpu_node(workers: int) -> None:
    assert sized(node(8, 2), workers=workers)[0] == workers
