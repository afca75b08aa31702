"""A test-only worker for the Ray executor on a machine without GPUs: a GPU slot's folds run on the CPU, each fold
says where it ran, folds can be made to finish in rounds, and the node probe reads the node's declared memory.
Selected with ``[executor.options] worker = "ray_fakes:CpuAsGpuWorker"`` (with tests/ on PYTHONPATH); it derives
from the fault-injecting worker (tests/faults.py), so ``BELUGA_FAULT`` works with it too.

- **Device override**: Ray gives a GPU slot's actor a GPU it declares but does not have; the worker trains on the
  CPU instead, and records the device it was given.
- ``BELUGA_RAY_LOG=FILE``: one JSON line per finished fold: job id, process id, node, the GPU ids Ray gave the actor,
  ``CUDA_VISIBLE_DEVICES``, the device scheduled and the one used.
- ``BELUGA_RAY_ROUNDS=FOLDER:N``: a worker that has finished its k-th fold waits until N workers have finished
  their k-th (files in FOLDER), so that N workers take the same number of folds whatever their speed.
- **Fake probe** (``measure_node``, which the Ray executor's node probe calls where a worker class defines it): the
  node's free GPU memory is its declared resource ``test_gpu_gib`` (GiB, on each of its GPUs); one worker takes
  ``test_worker_gib`` (default 10), a pack ``test_pack_base_gib`` (default 2) plus ``test_member_gib`` (default 1)
  per member.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from faults import FaultyWorker

from beluga_core.execution.results import JobResult
from beluga_core.execution.sizing import GiB, PackMemory, WorkerMemory
from beluga_core.execution.sizing.nodes import ClusterNode
from beluga_core.execution.worker import ProgressFn
from beluga_core.planning.jobs import Job
from beluga_core.planning.plan import Plan

LOG_ENV = "BELUGA_RAY_LOG"
ROUNDS_ENV = "BELUGA_RAY_ROUNDS"
ROUND_TIMEOUT_S = 300.0


class CpuAsGpuWorker(FaultyWorker):
    def __init__(self, plan: Plan, device: str = "auto", cache_dir: Path | None = None) -> None:
        self.scheduled = str(device)
        super().__init__(plan, "cpu" if self.scheduled.startswith("cuda") else device, cache_dir)
        self.folds_done = 0

    def _finished(self, job: Job) -> None:
        self.folds_done += 1
        log = os.environ.get(LOG_ENV)
        if log:
            import ray

            line = {"job": job.id, "pid": os.getpid(), "node": ray.get_runtime_context().get_node_id(),
                    "gpu_ids": [str(g) for g in ray.get_gpu_ids()],
                    "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
                    "scheduled": self.scheduled, "device": str(self.device), "fold_of_worker": self.folds_done}
            with open(log, "a", encoding="utf-8") as f:
                f.write(json.dumps(line) + "\n")
        rounds = os.environ.get(ROUNDS_ENV)
        if rounds:
            folder, _, n = rounds.rpartition(":")
            Path(folder, f"{self.folds_done}-{os.getpid()}").touch()
            deadline = time.monotonic() + ROUND_TIMEOUT_S
            while (len(list(Path(folder).glob(f"{self.folds_done}-*"))) < int(n)
                   and time.monotonic() < deadline):
                time.sleep(0.05)

    def run(self, job: Job, progress: ProgressFn | None = None) -> JobResult:
        result = super().run(job, progress)
        self._finished(job)
        return result

    def run_pack(self, jobs: Sequence[Job], progress: Callable[[Job, str, int, int], None] | None = None,
                 pack: dict[str, Any] | None = None) -> Iterator[JobResult]:
        by_id = {j.id: j for j in jobs}
        for result in super().run_pack(jobs, progress, pack):
            self._finished(by_id[result.id])
            yield result

    @classmethod
    def measure_node(cls, plan: Plan, device: str, workers: bool, pack_job: str | None,
                node: ClusterNode) -> tuple[WorkerMemory | str | None, PackMemory | str | None]:
        res = node.resources
        free = int(res["test_gpu_gib"] * GiB)
        worker = WorkerMemory((free,) * int(node.gpus), int(res.get("test_worker_gib", 10) * GiB),
                              f"fake probe on node {node.node_id[:8]}") if workers else None
        pack = PackMemory(free, int(res.get("test_pack_base_gib", 2) * GiB), int(res.get("test_member_gib", 1) * GiB),
                          f"fake probe on node {node.node_id[:8]}") if pack_job is not None else None
        return worker, pack
