"""What the executors share: where workers run, which jobs may start, the worker class, and warming the token
cache.

A job may start once its parent (the IID model it starts from) is no longer waiting or running: either it
finished in this run (its weights are then in the cache folder) or it finished in an earlier one (the runner
re-trains a parent whose cached weights are missing, so those are there too).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from beluga_core.config.schema import ExecutorSpec
from beluga_core.core.errors import BelugaError
from beluga_core.data.iid.examples import IIDData
from beluga_core.data.suite.schema import Input
from beluga_core.execution.worker import Worker, iid_test_examples, iid_train_examples
from beluga_core.planning.jobs import Job
from beluga_core.planning.plan import Plan, TaskPlan


@dataclass(frozen=True)
class Slot:
    """One worker: its torch device and the CPU threads it may use."""

    device: str
    threads: int


def gpu_count() -> int:
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def plan_slots(spec: ExecutorSpec, cores: int | None = None, gpus: int | None = None) -> list[Slot]:
    """Workers for a machine: one per GPU (``options.folds_per_gpu`` per GPU), or ``workers`` on the CPU.

    CPU threads are split between workers (cores // workers): oversubscribed threads collapse throughput
    (benchmarks/perf/RESULTS.md). ``threads`` in the config overrides the split, e.g. to match another
    executor's numbers.
    """
    cores = cores if cores is not None else (os.cpu_count() or 1)
    device = spec.device
    if device not in ("auto", "cuda"):
        gpus = 0  # cpu, or one named cuda:N below
    elif gpus is None:
        gpus = gpu_count()
    per_gpu = int(spec.options.get("folds_per_gpu", 1))
    if per_gpu < 1:
        raise BelugaError("executor option folds_per_gpu must be ≥ 1")
    if device.startswith("cuda:"):
        devices = [device] * max(spec.workers, per_gpu)
    elif gpus > 0:
        n = spec.workers if spec.workers > 1 else gpus * per_gpu
        devices = [f"cuda:{i % gpus}" for i in range(n)]
    else:
        devices = ["cpu"] * spec.workers
    threads = spec.threads or max(1, cores // len(devices))
    return [Slot(d, threads) for d in devices]


class Dependencies:
    """Which of the jobs still to do may start now: those whose parent is not waiting or running."""

    def __init__(self, jobs: Sequence[Job]) -> None:
        self.unfinished = {j.id for j in jobs}

    def ready(self, job: Job) -> bool:
        return job.parent_id is None or job.parent_id not in self.unfinished

    def finished(self, job_id: str) -> None:
        self.unfinished.discard(job_id)


def order_jobs(jobs: Sequence[Job]) -> list[Job]:
    """Parents (IID models) before the jobs that start from them; otherwise plan order."""
    parents = {j.parent_id for j in jobs}
    return [j for j in jobs if j.id in parents] + [j for j in jobs if j.id not in parents]


def worker_class(spec: ExecutorSpec) -> type[Worker]:
    """The class that runs jobs: ``Worker``, or a subclass named by ``[executor.options] worker =
    "module:Class"`` (e.g. one that injects faults, for testing how an executor survives them)."""
    name = spec.options.get("worker")
    if not name:
        return Worker
    module, _, attr = str(name).partition(":")
    try:
        cls = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise BelugaError(f"executor option worker = '{name}': cannot load it ({exc})",
                          field="executor.options.worker") from None
    if not (isinstance(cls, type) and issubclass(cls, Worker)):
        raise BelugaError(f"executor option worker = '{name}' is not a subclass of beluga's Worker",
                          field="executor.options.worker")
    return cls


def _plan_inputs(plan: Plan, tp: TaskPlan, iid: IIDData) -> Iterator[Input]:
    """Every input a job of this task may encode: its cases' inputs and the i.i.d. subsets (as the worker)."""
    ids: set[str] = set(tp.split.val)
    for job in tp.jobs:
        ids.update(job.fold.train_ids)
        ids.update(job.fold.eval_ids)
    for cid in sorted(ids):
        yield from tp.suite.case(cid).inputs
    for config in sorted({job.config for job in tp.jobs}):
        yield from (ex.inputs for ex in iid_train_examples(plan.config, config, iid.train))
    yield from (ex.inputs for ex in iid_test_examples(plan.config, iid.test))


def warm_token_cache(plan: Plan, cache_dir: Path) -> dict[str, int]:
    """Tokenize what the plan's jobs will read into the on-disk cache, once, before workers start.

    Only an optimisation (a worker tokenizes, and caches, whatever is still missing); it goes through a
    CPU ``Worker``'s encoders so the cache keys are exactly the workers'. Returns how many inputs were found
    in the cache and how many were tokenized.
    """
    stats = {"cached": 0, "tokenized": 0}
    worker = Worker(plan, "cpu", cache_dir)
    for tp in plan.tasks:
        if not tp.jobs:
            continue
        state = worker.tasks[tp.spec.name]
        for model_name in sorted({j.model for j in tp.jobs}):
            encoder = worker.encoder(state.task, model_name)
            disk = getattr(encoder, "_disk", None)
            if disk is None:
                continue  # this task's encoder keeps no disk cache
            encoder.encode_many(_plan_inputs(plan, tp, worker.iid_data(tp.spec.name)))
            stats["cached"] += disk.hits
            stats["tokenized"] += disk.written
    return stats
