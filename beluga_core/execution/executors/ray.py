"""The Ray executor: folds as Ray tasks with their CPU/GPU needs, on an existing cluster or a local one.

``pip install beluga[ray]``. Config::

    [executor]
    name = "ray"
    threads = 1                      # torch threads per fold (= CPUs each fold asks for, unless cpus_per_fold)
    [executor.options]
    address = "ray://head:10001"     # or "auto"; absent: start a local Ray on this machine
    num_cpus = 2                     # local cluster only: CPUs it may use (default: all)
    gpus_per_fold = 0.5              # GPU share per fold (default 1 on a cluster with GPUs, else 0)
    max_retries = 2                  # re-run a fold whose worker process or node was lost (default 2)

The driver (the coordinator) is the only writer of the store. It tokenizes what the plan reads into the token
cache first and ships those shards (and the IID model's weights for the folds that start from it) through
Ray's object store, so workers need no filesystem shared with the driver; on one machine they also find both
in the cache folder. The shared dispatch loop (``scheduling.dispatch``) submits folds whose parent is done and
retries a fold whose worker process or node was lost (Ray's own task retries are off, so there is one retry
policy for every executor); a fold that raises is reported with its traceback once the folds in flight have
finished; resume works as with the local executor (the runner skips finished jobs).

Checkpoints inside a fold (``[executor] checkpoint_every``) go to the driver: a worker sends each one to a
keeper actor, the driver takes them from it into the run's cache while it waits for folds, and a fold retried
after its worker or node died gets its last checkpoint with it and resumes there.

CPU folds reuse their Ray worker process, keeping the loaded model and tokenized inputs between folds. GPU
folds run each in a fresh process (Ray's default ``max_calls=1`` for GPU tasks): a CUDA context cannot follow
Ray's per-task GPU assignment, so reusing a process could put two folds on one GPU. GPU paths are untested in
this repository's CI (no GPU there).
"""

from __future__ import annotations

import io
import logging
import os
import tempfile
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import Field

from beluga_core.config.executor_spec import ExecutorSpec
from beluga_core.core.errors import BelugaError
from beluga_core.core.io import atomic_write
from beluga_core.execution.executors.base import Executor, ExecutorOptions
from beluga_core.execution.results import JobResult
from beluga_core.execution.scheduling import (
    Backend,
    Event,
    Failed,
    Finished,
    Lost,
    StepFn,
    warm_token_cache,
    worker_class,
)
from beluga_core.execution.sizing import Workers
from beluga_core.execution.worker import keeps_weights, weights_path
from beluga_core.planning.jobs import Job
from beluga_core.planning.plan import Plan
from beluga_core.training.checkpoint_file import FolderCheckpoints, checkpoint_folder

# How often the driver takes the checkpoints the keeper holds while it waits for folds (seconds).
CHECKPOINT_POLL_S = 1.0
# Per Ray worker process: the Worker for the plan it last ran (CPU workers run many folds).
_STATE: dict[str, Any] = {}


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
    """A Ray actor holding each job's latest checkpoint until the driver takes it into the run's cache: nodes
    share no filesystem, and what a dead worker held in the object store is lost with it. An empty checkpoint
    asks the driver to delete its copy (a worker found it bad)."""

    def __init__(self) -> None:
        self.blobs: dict[str, bytes] = {}

    def put(self, job_id: str, blob: bytes) -> None:
        self.blobs[job_id] = blob

    def take(self) -> dict[str, bytes]:
        blobs, self.blobs = self.blobs, {}
        return blobs


class DriverCheckpoints:
    """A Ray worker's checkpoint store: loads the one the driver sent with the job, saves through the keeper.
    A save the keeper does not take (its node died) is lost, not the fold: the fold goes on training."""

    def __init__(self, keeper: Any, job_id: str, blob: bytes | None) -> None:
        self.keeper, self.blobs = keeper, ({job_id: blob} if blob else {})

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


def run_fold(plan_box: list[Any], shards_box: list[Any], parent_box: list[tuple[str, Any]], job: Job,
             spec: ExecutorSpec, device: str, threads: int, cache_dir: str,
             return_weights: bool, keeper: Any = None,
             checkpoint_box: list[Any] | None = None) -> tuple[JobResult, bytes | None]:
    """One fold in a Ray worker. Object refs come boxed in lists so Ray does not fetch them on every call;
    ``parent_box`` holds (model id, weights ref) of the parent and teachers the job reads; ``checkpoint_box``
    the job's checkpoint the driver kept, if any, and ``keeper`` takes the job's new ones."""
    import ray

    from beluga_core.training import token_cache
    from beluga_core.training.models import configure_threads

    key = f"{plan_box[0].hex()}|{device}|{threads}|{cache_dir}"
    if _STATE.get("key") != key:
        cache = _worker_cache_dir(cache_dir)
        token_cache.install_shards(cache / "tokens", ray.get(shards_box[0]))
        configure_threads(threads)
        _STATE.clear()
        _STATE.update(key=key, cache=cache, worker=worker_class(spec)(ray.get(plan_box[0]), device, cache))
    worker, cache = _STATE["worker"], _STATE["cache"]
    for model_id, ref in parent_box:
        target = weights_path(cache, model_id)
        if not target.exists():
            atomic_write(target, ray.get(ref))
    if keeper is not None:
        worker.checkpoint_store = DriverCheckpoints(keeper, job.id, ray.get(checkpoint_box[0]) if checkpoint_box
                                                    else None)
    result = worker.run(job)
    weights = weights_path(cache, job.id).read_bytes() if return_weights else None
    return result, weights


class RayCluster(Backend):
    """Folds as Ray tasks: every fold whose parent is done is submitted at once and Ray queues them by the
    resources they ask for."""

    def __init__(self, ray: Any, started_here: bool, spec: ExecutorSpec, plan: Plan, jobs: Sequence[Job],
                 cache_dir: Path, resources: tuple[float, float, str, int]) -> None:
        from beluga_core.training import token_cache

        self.ray, self.started_here, self.spec, self.cache_dir = ray, started_here, spec, cache_dir
        cpus, gpus, self.device, self.threads = resources
        warm_token_cache(plan, cache_dir)
        self.plan_ref = ray.put(plan.for_workers())
        self.shards_ref = ray.put(token_cache.shard_files(cache_dir / "tokens"))
        self.remote = ray.remote(max_calls=1 if gpus > 0 else 0)(run_fold).options(
            num_cpus=cpus, num_gpus=gpus, max_retries=0, retry_exceptions=False)
        self.parents_needed = {r for j in jobs for r in j.requires}
        self.plan_config = plan.config
        self.parent_refs: dict[str, Any] = {}
        self.running: dict[Any, Job] = {}
        # Checkpoints reach the driver through an actor it polls (``_collect``), placed on the driver's node
        # when it can be; restarted if its node dies (what it held then is lost, not the folds).
        self.checkpoints = FolderCheckpoints(checkpoint_folder(cache_dir))
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=True)
        self.keeper = ray.remote(CheckpointKeeper).options(num_cpus=0, max_restarts=-1,
                                                           scheduling_strategy=here).remote()

    def _collect(self) -> None:
        """Take the checkpoints the keeper holds into the run's cache."""
        try:
            blobs = self.ray.get(self.keeper.take.remote())
        except self.ray.exceptions.RayError:
            return  # the keeper is restarting; its checkpoints come with the next poll or are lost
        for job_id, blob in blobs.items():
            if blob:
                self.checkpoints.save(job_id, blob)
            else:
                self.checkpoints.discard(job_id)

    def _parent_ref(self, parent_id: str) -> Any:
        if parent_id not in self.parent_refs:
            path = weights_path(self.cache_dir, parent_id)  # finished in an earlier run: the coordinator made sure
            self.parent_refs[parent_id] = self.ray.put(path.read_bytes())
        return self.parent_refs[parent_id]

    def idle(self) -> int:
        return 1  # Ray queues what its cluster cannot start yet

    def submit(self, job: Job) -> None:
        boxed = [(r, self._parent_ref(r)) for r in job.requires]
        self._collect()  # a job retried after its worker died resumes from the last checkpoint it sent
        checkpoint = self.checkpoints.load(job.id)
        ref = self.remote.remote([self.plan_ref], [self.shards_ref], boxed, job, self.spec, self.device,
                                 self.threads, str(self.cache_dir),
                                 job.id in self.parents_needed or keeps_weights(self.plan_config, job),
                                 self.keeper, [self.ray.put(checkpoint)] if checkpoint else None)
        self.running[ref] = job

    def events(self, step: StepFn) -> list[Event]:
        done: list[Any] = []
        while not done:
            done, _ = self.ray.wait(list(self.running), num_returns=1, timeout=CHECKPOINT_POLL_S)
            self._collect()
        job = self.running.pop(done[0])
        try:
            result, weights = self.ray.get(done[0])
        except self.ray.exceptions.RayTaskError as exc:  # the fold raised
            return [Failed(job, _describe(exc), worker=f"ray task on {getattr(exc, 'ip', None) or 'a node'}")]
        except self.ray.exceptions.RayError as exc:  # its worker process or node was lost
            return [Lost(job, f"Ray lost its worker ({type(exc).__name__})", worker="ray task")]
        if weights is not None:
            if job.id in self.parents_needed:
                self.parent_refs[job.id] = self.ray.put(weights)
            path = weights_path(self.cache_dir, job.id)
            if not path.exists():  # the worker wrote it elsewhere (no shared filesystem): keep for resume
                atomic_write(path, weights)
        return [Finished(job, result)]

    def close(self) -> None:
        for ref in self.running:
            self.ray.cancel(ref, force=True)
        self.running.clear()
        self._collect()
        if self.started_here:
            self.ray.shutdown()


class RayOptions(ExecutorOptions):
    address: str | None = Field(None, min_length=1, description=(
        "The cluster to join: ray://HEAD:10001 or \"auto\" (not set: start a local Ray on this machine)."))
    num_cpus: int | None = Field(None, ge=1, description="A local cluster's CPUs (not set: all).")
    num_gpus: int | None = Field(None, ge=0, description="A local cluster's GPUs (not set: all).")
    cpus_per_fold: float | None = Field(None, gt=0, description=(
        "CPUs each fold asks for (not set: [executor] threads, else 1)."))
    gpus_per_fold: float | None = Field(None, ge=0, description=(
        "The GPU share each fold asks for (not set: 1 / folds_per_gpu on a cluster with GPUs, else 0)."))
    log_to_driver: bool = Field(False, description="Workers' output is printed by the driver.")
    runtime_env: dict[str, Any] | None = Field(None, description="Ray's runtime_env for the workers.")


class RayExecutor(Executor):
    Options = RayOptions
    options: RayOptions

    def size_workers(self, plan: Plan) -> Workers:
        why = ("Ray starts as many folds as its cluster's CPUs and GPUs fit, each asking for options.cpus_per_fold "
               "and options.gpus_per_fold")
        if self.spec.workers not in ("auto", 1):
            why += f"; workers = {self.spec.workers} does not apply"
        return Workers((), why, self.spec.workers)

    def _init_ray(self) -> tuple[Any, bool]:
        try:
            import ray
        except ImportError:
            raise BelugaError("the ray executor needs Ray: pip install 'beluga[ray]'") from None
        if ray.is_initialized():
            return ray, False
        opts = self.options
        kwargs: dict[str, Any] = {"log_to_driver": opts.log_to_driver}
        if opts.runtime_env:
            kwargs["runtime_env"] = opts.runtime_env
        if opts.address:
            kwargs["address"] = opts.address
        else:
            kwargs |= {"num_cpus": opts.num_cpus, "num_gpus": opts.num_gpus, "include_dashboard": False}
        ray.init(**kwargs)
        return ray, True

    def _resources(self, ray: Any) -> tuple[float, float, str, int]:
        """CPUs and GPUs one fold asks for, its torch device and its torch threads."""
        opts = self.options
        cluster_gpus = float(ray.cluster_resources().get("GPU", 0))
        if self.spec.device == "cpu":
            gpus = 0.0
        else:
            share = 1.0 / (opts.folds_per_gpu or 1) if cluster_gpus else 0.0
            gpus = float(opts.gpus_per_fold if opts.gpus_per_fold is not None else share)
        if self.spec.device.startswith("cuda") and gpus == 0:
            raise BelugaError(f"device '{self.spec.device}' but the Ray cluster has no GPU (or gpus_per_fold = 0)")
        threads = self.spec.threads or max(1, int(opts.cpus_per_fold or 1))
        cpus = float(opts.cpus_per_fold if opts.cpus_per_fold is not None else threads)
        return cpus, gpus, ("cuda" if gpus > 0 else "cpu"), threads

    def open(self, plan: Plan, jobs: Sequence[Job], cache_dir: Path) -> Backend:
        ray, started_here = self._init_ray()
        try:
            return RayCluster(ray, started_here, self.spec, plan, jobs, cache_dir, self._resources(ray))
        except BaseException:
            if started_here:
                ray.shutdown()
            raise


def _describe(exc: BaseException) -> str:
    buf = io.StringIO()
    traceback.print_exception(exc, file=buf)
    return buf.getvalue().rstrip()[-4000:]
