"""Slots per node of a cluster (the Ray executor): how many long-lived workers each node runs, the GPU share and CPUs
each asks for, and the pack size its memory holds, from a probe run on that node.

A node is sized as the multi executor sizes one machine (``workers``, ``pack_size``), from what the node itself
measured: its GPUs' free memory and what one worker, and one pack member, takes there (``measure_node``, run on the
node by the executor). The sizing itself (``size_node``) is a pure function of the node's declared resources and
its probe, so that it is tested without a cluster.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from beluga_core.config.executor_spec import ExecutorSpec
from beluga_core.execution.sizing.memory import GiB, MemoryUnknown, NothingToMeasure, memory_margin
from beluga_core.execution.sizing.pack_size import PackMemory, PackSize, plan_pack_size
from beluga_core.execution.sizing.workers import WorkerMemory, cpu_budget, workers_per_gpu
from beluga_core.planning.pack_groups import AUTO_PACK
from beluga_core.planning.plan import Plan

# Ray takes fractional GPU requests to 4 decimal places: a share is rounded down to them, so that k shares of 1/k
# still fit on one GPU.
SHARE_DECIMALS = 4


@dataclass(frozen=True)
class ClusterNode:
    """A node as the cluster declares it: its id, host, CPUs, GPUs and every other resource it declares."""

    node_id: str
    host: str
    cpus: float
    gpus: float
    resources: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class NodeProbe:
    """What a probe measured on one node (``measure_node``): where it ran, what one worker takes on its GPUs (or why
    that is unknown), and what a pack takes (or why unknown)."""

    ran_on: str                          # the node id the probe found itself on
    workers: WorkerMemory | str | None   # None: not asked for
    pack: PackMemory | str | None


@dataclass(frozen=True)
class NodeSlots:
    """One node's slots: ``actors`` workers, each asking ``cpus`` CPUs and ``gpu_share`` of a GPU, running torch on
    ``device`` with ``threads`` threads; ``pack``: members per pack its memory holds (None: packs not asked for)."""

    node: ClusterNode
    actors: int
    device: str
    gpu_share: float
    cpus: float
    threads: int
    why: str
    pack: PackSize | None = None
    measured_on: str | None = None   # the node id the probe it was sized from ran on

    def line(self) -> str:
        share = f", {self.gpu_share:g} GPU" if self.gpu_share else ""
        pack = f"; packs of up to {self.pack.size} ({self.pack.why})" if self.pack is not None else ""
        return (f"node {self.node.host} ({self.node.node_id[:8]}): {self.actors} worker(s) of {self.cpus:g} CPU"
                f"{share}, {self.threads} thread(s) each ({self.why}){pack}")


def gpu_run(spec: ExecutorSpec, gpus_per_fold: float | None) -> bool:
    """Whether the run's folds ask for GPUs where the cluster has them (``device`` not "cpu", no zero share)."""
    return spec.device != "cpu" and gpus_per_fold != 0


def needs_probe(spec: ExecutorSpec, options: Any, node: ClusterNode, recorded_pack: int | None) -> tuple[bool, bool]:
    """(measure a worker, measure a pack) on ``node``: a worker where ``workers = "auto"`` sizes a GPU node by memory;
    a pack where ``pack = "auto"`` has no size recorded yet."""
    on_gpu = node.gpus > 0 and gpu_run(spec, options.gpus_per_fold)
    worker = (on_gpu and spec.workers == "auto" and options.folds_per_gpu is None
              and options.gpus_per_fold is None)
    pack = spec.pack == "auto" and recorded_pack is None
    return worker, pack


def _share(per_gpu: int) -> float:
    scale = 10 ** SHARE_DECIMALS
    return math.floor(scale / per_gpu) / scale


def size_node(spec: ExecutorSpec, options: Any, node: ClusterNode, probe: NodeProbe | None,
              recorded_pack: int | None = None, gpu_cluster: bool = False) -> NodeSlots:
    """``node``'s slots under ``[executor]`` (``spec``) and its options (``options``: ``RayOptions``), from ``probe``
    (what ran on the node; None where nothing was to be measured). ``gpu_cluster``: some node has a GPU, so the run's
    folds ask for one and a node without any takes none.

    A GPU node: ``options.gpus_per_fold`` as the share when set; else ``options.folds_per_gpu`` per GPU; else with
    ``workers = "auto"`` as many per GPU as its free memory holds at what one worker took in the probe and its CPUs
    allow (``workers_per_gpu``, the node's least GPU setting the count, so that one share fits every GPU); a number N:
    N workers. A CPU node: N, or with ``auto`` one per ``cpus_per_fold`` (else ``threads``, else 1) of its CPUs. Never
    more workers than the node's CPUs give each its CPUs."""
    on_gpu = node.gpus > 0 and gpu_run(spec, options.gpus_per_fold)
    cpus_set = options.cpus_per_fold
    if gpu_cluster and gpu_run(spec, options.gpus_per_fold) and not on_gpu:
        return NodeSlots(node, 0, "cpu", 0.0, 0.0, 1, "no GPU: the run's folds ask for one")
    margin = memory_margin(spec)
    gpus = int(node.gpus)
    if on_gpu:
        if options.gpus_per_fold is not None:
            share = float(options.gpus_per_fold)
            actors = max(1, math.floor(node.gpus / share + 1e-9))
            why = f"options.gpus_per_fold = {share:g}"
        else:
            if options.folds_per_gpu is not None:
                per_gpu, why = int(options.folds_per_gpu), f"options.folds_per_gpu = {options.folds_per_gpu}"
            elif spec.workers != "auto":
                per_gpu, why = max(1, -(-int(spec.workers) // max(1, gpus))), f"workers = {spec.workers}"
            else:
                per_gpu, why = _auto_per_gpu(spec, node, probe, margin)
            share = _share(per_gpu)
            actors = int(spec.workers) if spec.workers != "auto" and options.folds_per_gpu is None \
                else per_gpu * max(1, gpus)
        threads = spec.threads or max(1, int(cpus_set or node.cpus // max(1, actors)))
        device = "cuda"
    else:
        share = 0.0
        each = cpus_set or spec.threads or 1
        if spec.workers != "auto":
            actors, why = int(spec.workers), f"workers = {spec.workers}"
        else:
            actors = max(1, math.floor(node.cpus / each + 1e-9))
            why = f"auto: {node.cpus:g} CPUs at {each:g} each"
        threads = spec.threads or max(1, int(each))
        device = "cpu"
    cpus = float(cpus_set if cpus_set is not None else threads)
    fit = math.floor(node.cpus / cpus + 1e-9) if cpus > 0 else actors
    if actors > fit:
        why += f"; cut to {fit}: the node's {node.cpus:g} CPUs at {cpus:g} each"
        actors = fit
    pack = None
    if spec.pack != 1:
        kind = "cuda" if on_gpu else "cpu"
        sharing = (actors // max(1, gpus)) if on_gpu else actors

        def memory() -> PackMemory:
            if probe is None or probe.pack is None:
                raise NothingToMeasure("no training packs before the grid search; measured after it")
            if isinstance(probe.pack, str):
                raise MemoryUnknown(probe.pack)
            return probe.pack

        pack = plan_pack_size(spec.pack, kind, AUTO_PACK[kind], max(1, sharing), memory, recorded_pack, margin)
    return NodeSlots(node, actors, device, share, cpus, threads, why, pack,
                     probe.ran_on if probe is not None else None)


def _auto_per_gpu(spec: ExecutorSpec, node: ClusterNode, probe: NodeProbe | None, margin: float) -> tuple[int, str]:
    budget = cpu_budget(int(node.cpus), spec.threads)
    gpus = max(1, int(node.gpus))
    mem = probe.workers if probe is not None else None
    if not isinstance(mem, WorkerMemory):
        return 1, f"auto: per-worker GPU memory unknown ({mem or 'not measured'}): one worker per GPU"
    counts = workers_per_gpu(mem.free[:gpus] or (0,), mem.per_worker, budget, margin)
    per_gpu = min(counts)
    fits = ", ".join(f"{f / GiB:.1f} GiB free" for f in mem.free[:gpus])
    return per_gpu, (f"auto: {per_gpu} per GPU on {gpus} GPU(s), measured on this node: {fits}; "
                     f"{mem.per_worker / GiB:.2f} GiB per worker ({mem.how}), {margin:.0%} kept free; "
                     f"{node.cpus:g} CPUs allow {budget}")


def measure_node(plan: Plan, device: str, workers: bool, pack_job: str | None) -> tuple[Any, Any]:
    """On the node (the executor runs it there): what one worker takes on its GPUs (``workers``), and what a pack of
    ``pack_job``'s kind takes on ``device``; each a ``WorkerMemory`` / ``PackMemory``, or why it is unknown."""
    from beluga_core.execution.sizing.pack_probe import pack_memory
    from beluga_core.execution.sizing.worker_probe import gpu_worker_memory

    def attempt(measure: Callable[[], Any]) -> Any:
        try:
            return measure()
        except MemoryUnknown as exc:
            return str(exc)

    worker = attempt(lambda: gpu_worker_memory(plan, "cuda:0")) if workers else None
    pack = attempt(lambda: pack_memory(plan, pack_job, device)) if pack_job is not None else None
    return worker, pack


def run_pack_size(nodes: list[NodeSlots], setting: int | str) -> PackSize:
    """The run's pack size from each node's: the smallest, so that a pack fits on whichever node Ray places it and
    the packs are formed once, in plan order, whatever node runs them (as on one machine: a resumed run forms the
    same packs, and their members pad as they did)."""
    sized = [n for n in nodes if n.pack is not None and n.actors > 0]
    if not sized:
        return PackSize(1, "no node takes packs", setting)
    least = min(sized, key=lambda n: n.pack.size if n.pack else 0)
    assert least.pack is not None
    per_node = "; ".join(f"{n.node.host} ({n.node.node_id[:8]}) {n.pack.size if n.pack else '-'}" for n in sized)
    if len({n.pack.size for n in sized if n.pack}) == 1:
        return PackSize(least.pack.size, least.pack.why, setting, least.pack.final)
    return PackSize(least.pack.size, f"the smallest of the nodes' (per node: {per_node}), so that a pack fits "
                    f"wherever Ray places it; {least.node.host}: {least.pack.why}", setting,
                    all(n.pack.final for n in sized if n.pack))
