"""What runs in Ray's processes for the Ray executor (``executors.ray``): the long-lived worker of one slot, the
keeper actor that holds checkpoints and step progress for the driver, a worker's checkpoint store that saves through
it, and the node probe. The driver's side (the backend, the sizing, the executor) is ``executors.ray``."""

from __future__ import annotations

import logging
import os
import socket
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from beluga_core.config.executor_spec import ExecutorSpec
from beluga_core.core.io import atomic_write
from beluga_core.execution.results import JobResult
from beluga_core.execution.scheduling import worker_class
from beluga_core.execution.sizing.nodes import ClusterNode, NodeProbe, measure_node
from beluga_core.execution.worker import weights_path
from beluga_core.planning.jobs import Job
from beluga_core.planning.plan import Plan

# How often a worker sends a fold's step progress (seconds); steps can be far faster than a terminal refresh.
STEP_REPORT_EVERY = 0.5


def _worker_cache_dir(wanted: str) -> Path:
    path = Path(wanted)
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / f".probe-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
        return path
    except OSError:  # a node that cannot write the driver's path (no shared filesystem): a local folder
        local = Path(tempfile.gettempdir()) / "beluga-cache" / path.name
        local.mkdir(parents=True, exist_ok=True)
        return local


class CheckpointKeeper:
    """A Ray actor holding each job's latest checkpoint, and each fold's latest step, until the driver takes them:
    nodes share no filesystem, and what a dead worker held in the object store is lost with it. An empty checkpoint
    asks the driver to delete its copy (a worker found it bad)."""

    def __init__(self) -> None:
        self.blobs: dict[str, bytes] = {}
        self.steps: dict[str, tuple[str, int, int]] = {}

    def put(self, job_id: str, blob: bytes) -> None:
        self.blobs[job_id] = blob

    def step(self, job_id: str, phase: str, step: int, total: int) -> None:
        self.steps[job_id] = (phase, step, total)

    def take(self) -> tuple[dict[str, bytes], dict[str, tuple[str, int, int]]]:
        blobs, self.blobs = self.blobs, {}
        steps, self.steps = self.steps, {}
        return blobs, steps


class DriverCheckpoints:
    """A Ray worker's checkpoint store: loads those the driver sent with the jobs, saves through the keeper.
    A save the keeper does not take (its node died) is lost, not the fold: the fold goes on training."""

    def __init__(self, keeper: Any, blobs: dict[str, bytes]) -> None:
        self.keeper, self.blobs = keeper, dict(blobs)

    def load(self, job_id: str) -> bytes | None:
        return self.blobs.get(job_id)

    def save(self, job_id: str, blob: bytes) -> None:
        import ray

        try:
            ray.get(self.keeper.put.remote(job_id, blob))
        except ray.exceptions.RayError as exc:
            logging.getLogger("beluga.checkpoints").warning(
                f"checkpoint of job {job_id[:12]} not kept: the driver's keeper is gone ({type(exc).__name__})")

    def discard(self, job_id: str) -> None:
        self.blobs.pop(job_id, None)
        self.save(job_id, b"")


class SlotWorker:
    """One slot's long-lived worker (a Ray actor): a beluga ``Worker`` built once, on the slot's device, kept with
    its loaded model and inputs for every fold and pack it is given."""

    def __init__(self, plan: Plan, shards: dict[str, bytes], spec: ExecutorSpec, device: str, threads: int,
                 cache_dir: str, keeper: Any) -> None:
        from beluga_core.training import token_cache
        from beluga_core.training.models import configure_threads

        self.cache = _worker_cache_dir(cache_dir)
        token_cache.install_shards(self.cache / "tokens", shards)
        configure_threads(threads)
        if device.startswith("cuda"):
            import torch

            if torch.cuda.is_available():
                # Ray set CUDA_VISIBLE_DEVICES to the GPU it gave this actor: it is this process's cuda:0.
                torch.cuda.set_device(0)
        self.worker = worker_class(spec)(plan, "cuda:0" if device.startswith("cuda") else device, self.cache)
        self.keeper = keeper
        self.last_step: dict[str, float] = {}

    def ready(self) -> dict[str, Any]:
        """Where this actor runs: its process id, node, host, the GPUs Ray gave it and its worker's device."""
        import ray

        ctx = ray.get_runtime_context()
        return {"pid": os.getpid(), "node_id": ctx.get_node_id(), "host": socket.gethostname(),
                "gpu_ids": [str(g) for g in ray.get_gpu_ids()], "device": str(self.worker.device)}

    def _progress(self, job: Job, phase: str, step: int, total: int) -> None:
        now = time.monotonic()
        if phase == "eval" or step == total or now - self.last_step.get(job.id, 0.0) >= STEP_REPORT_EVERY:
            self.last_step[job.id] = now
            self.keeper.step.remote(job.id, phase, step, total)   # not awaited: progress may be dropped, never waited

    def work(self, jobs: list[Job], pack: dict[str, object] | None, parents: list[tuple[str, Any]],
             checkpoints: dict[str, bytes], send_weights: list[str]) -> Iterator[tuple[JobResult, bytes | None]]:
        """Run ``jobs`` (one alone, or the members of ``pack``), yielding each result as it finishes, with its weights
        where the driver needs them (``send_weights``: parents of other folds, and kept weights)."""
        import ray

        for model_id, ref in parents:
            target = weights_path(self.cache, model_id)
            if not target.exists():
                atomic_write(target, ray.get(ref[0]))
        self.worker.checkpoint_store = DriverCheckpoints(self.keeper, checkpoints)
        self.last_step.clear()
        if pack is None:
            (job,) = jobs
            results: Iterator[JobResult] = iter([self.worker.run(job, lambda *a: self._progress(job, *a))])
        else:
            results = self.worker.run_pack(jobs, self._progress, pack=pack)
        for result in results:
            weights = weights_path(self.cache, result.id).read_bytes() if result.id in send_weights else None
            yield result, weights


def probe_node(plan: Plan, spec: ExecutorSpec, device: str, workers: bool, pack_job: str | None,
                node: ClusterNode) -> NodeProbe:
    """On ``node`` (a Ray task pinned there): what one worker and one pack member take there (``measure_node``), or
    what the run's worker class measures instead where it defines ``measure_node`` with the same arguments and
    ``node`` (a test's stand-in for the GPU it does not have)."""
    import ray

    own = getattr(worker_class(spec), "measure_node", None)
    worker, pack = own(plan, device, workers, pack_job, node) if own is not None else \
        measure_node(plan, device, workers, pack_job)
    return NodeProbe(ray.get_runtime_context().get_node_id(), worker, pack)
