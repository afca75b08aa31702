"""The Ray executor: long-lived workers, one Ray actor per slot, on an existing cluster or a local one.

``pip install beluga[ray]``. Config::

    [executor]
    name = "ray"
    threads = 1                      # torch threads per worker (= CPUs each asks for, unless cpus_per_fold)
    workers = "auto"                 # per node: sized from a probe run on the node (a number N: N per node)
    pack = "auto"                    # LoRA packs, as on one machine
    [executor.options]
    address = "ray://head:10001"     # or "auto"; absent: start a local Ray on this machine
    num_cpus = 2                     # local cluster only: CPUs it may use (default: all)
    folds_per_gpu = 2                # workers per GPU (a share of 1/2 each); not set: sized by memory
    max_retries = 2                  # re-run a fold whose worker or node was lost (default 2)

**Slots.** Each node of the cluster is sized by itself (``sizing.nodes``): a probe dispatched to the node measures
what one worker (and one pack member) takes on its GPUs, and the node gets as many slots as its memory and CPUs
hold, or ``folds_per_gpu`` per GPU, or one per ``cpus_per_fold`` of its CPUs on a CPU node. A slot is one actor
pinned to its node, asking its CPUs and its GPU share (a whole GPU, or ``1/folds_per_gpu`` of one): Ray gives it
its GPU. The actor keeps its process, CUDA context, loaded model, pristine and parent weights and tokenized inputs
across folds, as the multi executor's workers do: a GPU fold no longer starts a fresh process.

**Dispatch.** The shared dispatch loop (``scheduling.dispatch``) decides which fold (or pack) starts when and its
one retry policy (Ray's own retries are off); this backend gives it to an idle actor, the one that has run fewest
folds. A pack's members stream back one by one as they finish (a Ray streaming generator) and are committed alone,
as in the multi executor. An actor that dies (its process killed, its node lost) fails its fold or pack's unfinished
members as lost, which the loop retries; the actor is replaced on its node while the node lives, and dropped with it
otherwise.

**Data.** The driver (the coordinator) is the only writer of the store. It tokenizes what the plan reads into the
token cache first and ships those shards (and the parents' weights for the folds that start from them) through
Ray's object store, so workers need no filesystem shared with the driver. Checkpoints inside a fold
(``[executor] checkpoint_every``) and step progress go to a keeper actor on the driver's node, which the driver
polls; a fold retried after its worker or node died gets its last checkpoint with it and resumes there.

Long: the backend (actors per slot, their streams, replacing the dead) and the executor (the session, sizing each
node by its probe) are one protocol with the cluster, read together; what runs in Ray's processes is ``ray_actors``.

GPU paths are tested with declared GPUs and a test-only worker that runs a GPU slot's folds on the CPU
(tests/e2e/test_ray_slots.py); no Ray run on a real GPU is recorded yet (benchmarks/perf/RESULTS.md).
"""

from __future__ import annotations

import contextlib
import io
import logging
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import Field, model_validator

from beluga_core.config.executor_spec import ExecutorSpec
from beluga_core.core.errors import BelugaError
from beluga_core.core.io import atomic_write
from beluga_core.execution.executors.base import Executor, ExecutorOptions
from beluga_core.execution.executors.ray_actors import CheckpointKeeper, SlotWorker, probe_node
from beluga_core.execution.scheduling import (
    Backend,
    Event,
    Failed,
    Finished,
    Lost,
    StepFn,
    warm_token_cache,
)
from beluga_core.execution.sizing import PackSize, Slot, Workers
from beluga_core.execution.sizing.nodes import (
    ClusterNode,
    NodeProbe,
    NodeSlots,
    needs_probe,
    run_pack_size,
    size_node,
)
from beluga_core.execution.worker import keeps_weights, weights_path
from beluga_core.planning.jobs import Job
from beluga_core.planning.pack_groups import why_not_packed
from beluga_core.planning.plan import Plan
from beluga_core.training.checkpoint_file import FolderCheckpoints, checkpoint_folder

# How often the driver takes the checkpoints and progress the keeper holds while it waits for folds (seconds).
POLL_S = 1.0
# How long the driver waits for the first actors (and the node probes) to start before it gives up (seconds).
START_TIMEOUT_S = 900.0


@dataclass(eq=False)
class _Actor:
    slot: NodeSlots
    handle: Any
    started: float
    info: Any = None                                      # the ready() ref, then its dict
    assigned: list[Job] = field(default_factory=list)     # its fold, or its pack's members still running
    stream: Any = None                                    # the ObjectRefGenerator of what it runs
    folds: int = 0


class RayCluster(Backend):
    """Long-lived actors, one per slot of every node (``RayExecutor.nodes``), each running a fold or pack at a time."""

    packs = True

    def __init__(self, ray: Any, spec: ExecutorSpec, plan: Plan, jobs: Sequence[Job], cache_dir: Path,
                 nodes: Sequence[NodeSlots]) -> None:
        from beluga_core.training import token_cache

        self.ray, self.spec, self.cache_dir = ray, spec, cache_dir
        warm_token_cache(plan, cache_dir)
        self.plan_ref = ray.put(plan.for_workers())
        self.shards_ref = ray.put(token_cache.shard_files(cache_dir / "tokens"))
        self.parents_needed = {r for j in jobs for r in j.requires}
        self.plan_config = plan.config
        self.parent_refs: dict[str, Any] = {}
        self.checkpoints = FolderCheckpoints(checkpoint_folder(cache_dir))
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=True)
        # Checkpoints and progress reach the driver through an actor it polls (``_collect``), on the driver's node
        # when it can be; restarted if its node dies (what it held then is lost, not the folds).
        self.keeper = ray.remote(CheckpointKeeper).options(num_cpus=0, max_restarts=-1,
                                                           scheduling_strategy=here).remote()
        self.actor_class = ray.remote(SlotWorker)
        self.actors: list[_Actor] = []
        for slot in nodes:
            for _ in range(slot.actors):
                self._start(slot)
        if not self.actors:
            raise BelugaError("no node of the Ray cluster can take a fold: " + "; ".join(n.line() for n in nodes))
        self._wait_ready()

    def _start(self, slot: NodeSlots) -> _Actor:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        handle = self.actor_class.options(
            num_cpus=slot.cpus, num_gpus=slot.gpu_share, max_restarts=0, max_task_retries=0,
            scheduling_strategy=NodeAffinitySchedulingStrategy(slot.node.node_id, soft=False),
        ).remote(self.plan_ref, self.shards_ref, self.spec, slot.device, slot.threads, str(self.cache_dir),
                 self.keeper)
        actor = _Actor(slot, handle, time.monotonic())
        actor.info = handle.ready.remote()
        self.actors.append(actor)
        return actor

    def _wait_ready(self) -> None:
        """Wait for every actor to have started: one that cannot (its worker class does not build, its resources are
        never free) stops the run here, saying why, rather than failing every fold it is given."""
        pending = {a.info: a for a in self.actors}
        deadline = time.monotonic() + START_TIMEOUT_S
        while pending:
            done, _ = self.ray.wait(list(pending), num_returns=len(pending), timeout=POLL_S)
            for ref in done:
                actor = pending.pop(ref)
                try:
                    actor.info = self.ray.get(ref)
                except self.ray.exceptions.RayError as exc:
                    raise BelugaError(f"a Ray worker failed to start on node {actor.slot.node.host}: "
                                      f"{_describe(exc)[-1500:]}") from None
            if pending and time.monotonic() > deadline:
                raise BelugaError(f"{len(pending)} Ray worker(s) did not start within {START_TIMEOUT_S:.0f} s (the "
                                  "cluster does not free the CPUs and GPUs they ask for?)")

    def _collect(self, step: StepFn | None = None) -> None:
        """Take the checkpoints and progress the keeper holds: checkpoints into the run's cache, steps to ``step``."""
        try:
            blobs, steps = self.ray.get(self.keeper.take.remote())
        except self.ray.exceptions.RayError:
            return  # the keeper is restarting; its checkpoints come with the next poll or are lost
        for job_id, blob in blobs.items():
            if blob:
                self.checkpoints.save(job_id, blob)
            else:
                self.checkpoints.discard(job_id)
        if step is not None:
            running = {j.id: j for a in self.actors for j in a.assigned}
            for job_id, (phase, s, n) in steps.items():
                if job_id in running:
                    step(running[job_id], phase, s, n)

    def _parent_ref(self, parent_id: str) -> Any:
        if parent_id not in self.parent_refs:
            path = weights_path(self.cache_dir, parent_id)  # finished in an earlier run: the coordinator made sure
            self.parent_refs[parent_id] = self.ray.put(path.read_bytes())
        return self.parent_refs[parent_id]

    def idle(self) -> int:
        return sum(not a.assigned for a in self.actors)

    def submit(self, job: Job) -> None:
        self._send([job], None)

    def submit_pack(self, jobs: Sequence[Job], pack: dict[str, object]) -> None:
        self._send(list(jobs), pack)

    def _send(self, jobs: list[Job], pack: dict[str, object] | None) -> None:
        actor = min((a for a in self.actors if not a.assigned), key=lambda a: a.folds)
        self._collect()  # a job retried after its worker died resumes from the last checkpoint it sent
        checkpoints = {j.id: blob for j in jobs if (blob := self.checkpoints.load(j.id)) is not None}
        # Refs boxed in a list, so that Ray ships them as refs and the worker fetches only those it lacks.
        parents = [(r, [self._parent_ref(r)]) for r in sorted({r for j in jobs for r in j.requires})]
        send = [j.id for j in jobs if j.id in self.parents_needed or keeps_weights(self.plan_config, j)]
        actor.assigned = list(jobs)
        actor.folds += len(jobs)
        actor.stream = actor.handle.work.options(num_returns="streaming").remote(jobs, pack, parents, checkpoints,
                                                                                 send)

    def events(self, step: StepFn) -> list[Event]:
        out: list[Event] = []
        while not out:
            streams = {a.stream: a for a in self.actors if a.assigned}
            if not streams:
                raise BelugaError("the Ray backend was asked for events with no fold running")
            ready, _ = self.ray.wait(list(streams), num_returns=1, timeout=POLL_S)
            self._collect(step)
            for stream in ready:
                self._next(streams[stream], out)
        return out

    def _next(self, actor: _Actor, out: list[Event]) -> None:
        """What ``actor``'s stream says now: a member finished, the fold or pack raised, or the actor died."""
        where = self._where(actor)
        try:
            ref = next(actor.stream)
            result, weights = self.ray.get(ref)
        except StopIteration:   # the stream ended: every member reported (none is left, unless the worker erred)
            out += [Failed(j, "the Ray worker ended without a result", worker=where) for j in actor.assigned]
            actor.assigned, actor.stream = [], None
            return
        except self.ray.exceptions.RayTaskError as exc:   # the fold raised: every member still in it fails with it
            out += [Failed(j, _describe(exc), worker=where) for j in actor.assigned]
            actor.assigned, actor.stream = [], None
            return
        except self.ray.exceptions.RayError as exc:   # its process or node was lost
            out += [Lost(j, f"Ray lost its worker ({type(exc).__name__})", worker=where) for j in actor.assigned]
            self._replace(actor)
            return
        job = next(j for j in actor.assigned if j.id == result.id)
        actor.assigned.remove(job)
        if not actor.assigned:
            actor.stream = None
        if weights is not None:
            if job.id in self.parents_needed:
                self.parent_refs[job.id] = self.ray.put(weights)
            path = weights_path(self.cache_dir, job.id)
            if not path.exists():  # the worker wrote it elsewhere (no shared filesystem): kept for resume
                atomic_write(path, weights)
        out.append(Finished(job, result))

    def _replace(self, actor: _Actor) -> None:
        """A dead actor's slot: a new actor on its node while the node lives; with the node gone, the slot goes too."""
        self.actors.remove(actor)
        with contextlib.suppress(Exception):
            self.ray.kill(actor.handle)
        alive = {n["NodeID"] for n in self.ray.nodes() if n.get("Alive")}
        if actor.slot.node.node_id in alive:
            self._start(actor.slot)
        elif not self.actors:
            raise BelugaError("every node the run's Ray workers were on is gone; run the same command again when the "
                              "cluster is back (finished folds are in the store)")
        else:
            logging.getLogger("beluga.ray").warning(f"node {actor.slot.node.host} ({actor.slot.node.node_id[:8]}) is "
                                                    f"gone: its slot with it; {len(self.actors)} worker(s) go on")

    def _where(self, actor: _Actor) -> str:
        info = actor.info if isinstance(actor.info, dict) else {}
        return (f"ray worker pid {info.get('pid', '?')} ({actor.slot.device}, {actor.slot.threads} thread(s)) on "
                f"{actor.slot.node.host}")

    def close(self) -> None:
        for actor in self.actors:
            with contextlib.suppress(Exception):
                self.ray.kill(actor.handle)
        self.actors.clear()
        self._collect()
        with contextlib.suppress(Exception):
            self.ray.kill(self.keeper)


class RayOptions(ExecutorOptions):
    address: str | None = Field(None, min_length=1, description=(
        "The cluster to join: ray://HEAD:10001 or \"auto\" (not set: start a local Ray on this machine)."))
    num_cpus: int | None = Field(None, ge=1, description="A local cluster's CPUs (not set: all).")
    num_gpus: int | None = Field(None, ge=0, description="A local cluster's GPUs (not set: all).")
    cpus_per_fold: float | None = Field(None, gt=0, description=(
        "CPUs each worker asks for (not set: [executor] threads, else 1 on a CPU node; on a GPU node the node's "
        "CPUs shared by its workers)."))
    gpus_per_fold: float | None = Field(None, ge=0, description=(
        "The GPU share each worker asks for (not set: 1 / folds_per_gpu, or sized by memory; 0: the folds run on "
        "CPUs)."))
    log_to_driver: bool = Field(False, description="Workers' output is printed by the driver.")
    runtime_env: dict[str, Any] | None = Field(None, description="Ray's runtime_env for the workers.")

    @model_validator(mode="after")
    def _local_sizes_only_without_address(self) -> RayOptions:
        # They size a Ray this run starts; a cluster joined counts its own resources, so they would be ignored.
        given = [k for k in ("num_cpus", "num_gpus") if getattr(self, k) is not None]
        if self.address and given:
            raise ValueError(f"{' and '.join(given)} size a local Ray started for the run; with address set, the "
                             "cluster's own resources count: remove them, or remove address")
        return self


class RayExecutor(Executor):
    Options = RayOptions
    options: RayOptions
    trains_packs = True

    def __init__(self, spec: ExecutorSpec) -> None:
        super().__init__(spec)
        self._ray: Any = None
        self._started_here = False
        self._nodes: list[NodeSlots] | None = None

    def _session(self) -> Any:
        """Ray, connected (once per executor: sizing and every phase's workers use the one session)."""
        if self._ray is not None:
            return self._ray
        try:
            import ray
        except ImportError:
            raise BelugaError("the ray executor needs Ray: pip install 'beluga[ray]'") from None
        if not ray.is_initialized():
            opts = self.options
            kwargs: dict[str, Any] = {"log_to_driver": opts.log_to_driver}
            if opts.runtime_env:
                kwargs["runtime_env"] = opts.runtime_env
            if opts.address:
                kwargs["address"] = opts.address
            else:
                kwargs |= {"num_cpus": opts.num_cpus, "num_gpus": opts.num_gpus, "include_dashboard": False}
            try:
                ray.init(**kwargs)
            except Exception as exc:   # no cluster there, none reachable, Ray Client missing: the config's to fix
                where = f"the Ray cluster at {opts.address!r}" if opts.address else "a local Ray"
                hint = (" (ray:// addresses need Ray Client: pip install 'ray[client]')" if opts.address
                        and opts.address.startswith("ray://") else
                        " (\"auto\" joins a cluster started on this machine with `ray start --head`)"
                        if opts.address == "auto" else "")
                raise BelugaError(f"cannot start or join {where}{hint}: {type(exc).__name__}: {str(exc)[:300]}",
                                  field="executor.options.address" if opts.address else "executor.options") from None
            self._started_here = True
        self._ray = ray
        return ray

    def close(self) -> None:
        if self._ray is not None and self._started_here:
            self._ray.shutdown()
        self._ray, self._started_here = None, False

    def cluster_nodes(self) -> list[ClusterNode]:
        """The cluster's live nodes as they declare themselves."""
        ray = self._session()
        nodes = []
        for n in ray.nodes():
            if not n.get("Alive"):
                continue
            res = dict(n.get("Resources") or {})
            nodes.append(ClusterNode(n["NodeID"], str(n.get("NodeManagerHostname") or n.get("NodeManagerAddress")),
                                     float(res.get("CPU", 0)), float(res.get("GPU", 0)), res))
        return nodes

    def nodes(self, plan: Plan, recorded_pack: int | None = None) -> list[NodeSlots]:
        """Every node's slots, each from a probe dispatched to it where something is to be measured (once)."""
        if self._nodes is not None:
            return self._nodes
        ray = self._session()
        opts = self.options
        cluster = self.cluster_nodes()
        if self.spec.device.startswith("cuda") and not any(n.gpus for n in cluster):
            raise BelugaError(f"device '{self.spec.device}' but the Ray cluster has no GPU", field="executor.device")
        if self.spec.device.startswith("cuda") and opts.gpus_per_fold == 0:
            raise BelugaError(f"device '{self.spec.device}' but gpus_per_fold = 0", field="executor.options")
        gpu_cluster = any(n.gpus for n in cluster)
        pack_job = next((j.id for j in (*plan.jobs, *plan.grid_jobs) if why_not_packed(j) is None), None)
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        probes: dict[str, Any] = {}
        remote = ray.remote(max_calls=1)(probe_node)
        plan_ref = None
        for node in cluster:
            worker, pack = needs_probe(self.spec, opts, node, recorded_pack)
            if not (worker or (pack and pack_job is not None)):
                continue
            plan_ref = plan_ref if plan_ref is not None else ray.put(plan.for_workers())
            device = "cuda:0" if node.gpus and self.spec.device != "cpu" and opts.gpus_per_fold != 0 else "cpu"
            # A task of its own on the node, holding the node's GPUs while it measures, gone when it is done.
            probes[node.node_id] = remote.options(
                num_cpus=0, num_gpus=node.gpus if device != "cpu" else 0, max_retries=0,
                scheduling_strategy=NodeAffinitySchedulingStrategy(node.node_id, soft=False),
            ).remote(plan_ref, self.spec, device, worker, pack_job if pack else None, node)
        measured: dict[str, NodeProbe] = {}
        for node_id, ref in probes.items():
            try:
                measured[node_id] = ray.get(ref, timeout=START_TIMEOUT_S)
            except Exception as exc:   # the probe could not run there: sized as if nothing were measured
                text = f"the probe on this node failed: {type(exc).__name__}: {str(exc)[:200]}"
                measured[node_id] = NodeProbe(node_id, text, text)
        self._nodes = [size_node(self.spec, opts, n, measured.get(n.node_id), recorded_pack, gpu_cluster)
                       for n in cluster]
        return self._nodes

    def size_workers(self, plan: Plan) -> Workers:
        nodes = self.nodes(plan)
        slots = tuple(Slot(n.device, n.threads) for n in nodes for _ in range(n.actors))
        why = "Ray, per node: " + " | ".join(n.line() for n in nodes)
        return Workers(slots, why, self.spec.workers)

    def pack_size(self, plan: Plan, jobs: Sequence[Job], recorded: int | None = None) -> PackSize:
        known: PackSize | None = getattr(self, "_pack_size", None)
        if known is not None:
            return known
        if self.spec.pack != "auto":   # a number is the same on every node: no cluster to ask
            size = PackSize(int(self.spec.pack), f"pack = {self.spec.pack}", self.spec.pack)
        elif recorded is not None:
            size = PackSize(recorded, f"auto: {recorded}, as the store's first run of it measured (kept, so that a "
                            "resumed run forms the packs the interrupted one did)", self.spec.pack)
        else:
            size = run_pack_size(self.nodes(plan), self.spec.pack)
        if size.final:
            self._pack_size = size
        return size

    def open(self, plan: Plan, jobs: Sequence[Job], cache_dir: Path) -> Backend:
        # A node lost in an earlier phase of the run (the grid's) keeps no slot: its actors could never start.
        alive = {n.node_id for n in self.cluster_nodes()}
        nodes = [n for n in self.nodes(plan) if n.node.node_id in alive]
        return RayCluster(self._session(), self.spec, plan, jobs, cache_dir, nodes)


def _describe(exc: BaseException) -> str:
    buf = io.StringIO()
    traceback.print_exception(exc, file=buf)
    return buf.getvalue().rstrip()[-4000:]
