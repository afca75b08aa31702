"""What the executors share: the one dispatch loop, the backend interface it drives, the order jobs start in,
the worker class, and warming the token cache (how many workers run, and where: ``sizing``).

Every executor (local, multi, Ray, a plugin's) is a ``Backend`` — slots that run jobs and report what became of
them — driven by ``dispatch``, which alone decides which job starts when, retries a job whose worker died, and
reports progress. A job may start once its parent (the IID model it starts from) is no longer waiting or
running: either it finished in this run (its weights are then in the cache folder, or travel with the backend)
or it finished in an earlier one (the runner re-trains a parent whose cached weights are missing, so those are
there too).

Long: the dispatch loop and the events and backend interface it speaks are one protocol, read together.
"""

from __future__ import annotations

import importlib
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from graphlib import CycleError, TopologicalSorter
from pathlib import Path
from types import TracebackType
from typing import Protocol

from beluga_core.config.executor_spec import ExecutorSpec
from beluga_core.core.errors import BelugaError
from beluga_core.data.iid.examples import IIDData
from beluga_core.data.suite.suite_schema import Input
from beluga_core.execution.results import JobResult
from beluga_core.execution.step_runners import iid_test_examples
from beluga_core.execution.worker import Worker, iid_train_examples
from beluga_core.planning.jobs import Job
from beluga_core.planning.pack_groups import Packs
from beluga_core.planning.plan import Plan, TaskPlan


class Dependencies:
    """Which of the jobs still to do may start now: those none of whose parent and teachers is waiting or
    running."""

    def __init__(self, jobs: Sequence[Job]) -> None:
        self.unfinished = {j.id for j in jobs}

    def ready(self, job: Job) -> bool:
        return not any(r in self.unfinished for r in job.requires)

    def finished(self, job_id: str) -> None:
        self.unfinished.discard(job_id)


def order_jobs(jobs: Sequence[Job]) -> list[Job]:
    """Parents (IID models) and teachers before the jobs that start from or read them; otherwise plan order."""
    parents = {r for j in jobs for r in j.requires}
    return [j for j in jobs if j.id in parents] + [j for j in jobs if j.id not in parents]


def critical_path_order(jobs: Sequence[Job], cost: Callable[[Job], float] | None = None) -> list[Job]:
    """The jobs by the length of the longest chain each heads, longest first: a job's cost (1 each without
    ``cost``) plus the longest chain among the jobs that need it (its parent's children, a teacher's students).
    Ties keep ``order_jobs``'s order.

    With several workers the run ends when its longest chain does: an IID model whose children wait, started
    late, leaves workers idle at the end. A job's chain is longer than any of its dependents', so parents still
    start before their children; requirements outside ``jobs`` (finished in an earlier run) count for nothing.
    """
    base = order_jobs(jobs)
    ids = {j.id for j in jobs}
    needs = TopologicalSorter({j.id: [r for r in j.requires if r in ids] for j in jobs})
    try:
        upward = list(needs.static_order())   # requirements before the jobs that need them
    except CycleError as exc:
        raise BelugaError(f"jobs require each other in a cycle: {', '.join(i[:12] for i in exc.args[1])}") from None
    by_id = {j.id: j for j in jobs}
    dependents: dict[str, list[str]] = {i: [] for i in ids}
    for j in jobs:
        for r in j.requires:
            if r in ids:
                dependents[r].append(j.id)
    chain: dict[str, float] = {}
    for job_id in reversed(upward):    # every dependent's chain is known before its requirement's
        job = by_id[job_id]
        chain[job_id] = (cost(job) if cost else 1.0) + max((chain[d] for d in dependents[job_id]), default=0.0)
    rank = {j.id: i for i, j in enumerate(base)}
    return sorted(base, key=lambda j: (-chain[j.id], rank[j.id]))


ResultFn = Callable[[JobResult], None]
StepFn = Callable[[Job, str, int, int], None]


class Progress(Protocol):
    """What the dispatch loop tells the run's display (the coordinator supplies it)."""

    def job_started(self, job: Job) -> None: ...
    def job_step(self, job: Job, phase: str, step: int, total: int) -> None: ...
    def job_finished(self, job: Job) -> None: ...
    def job_retried(self, job: Job, attempt: int, why: str) -> None: ...


@dataclass(frozen=True)
class Finished:
    """A job finished; ``result`` goes to the store."""

    job: Job
    result: JobResult


@dataclass(frozen=True)
class Failed:
    """A job raised. Not retried in this run: the same job raises again. ``error`` is the exception where it
    is at hand (raised in this process); ``worker`` says where it ran."""

    job: Job
    traceback: str
    error: BaseException | None = None
    worker: str = ""

    def error_parts(self) -> tuple[str, str]:
        """(the exception's class, its message): from the exception, else from the traceback's last line."""
        if self.error is not None:
            return type(self.error).__name__, str(self.error)
        last = next((line for line in reversed(self.traceback.strip().splitlines()) if line.strip()), "")
        kind, sep, message = last.partition(": ")
        return (kind.rsplit(".", 1)[-1], message) if sep else (last or "error", "")


@dataclass(frozen=True)
class Lost:
    """The process (or node) running a job died: the job goes back to the queue, up to ``max_retries``."""

    job: Job
    why: str
    worker: str = ""


@dataclass(frozen=True)
class JobFailure:
    """A job that failed on every attempt, as the store records it."""

    job: Job
    error_type: str
    message: str
    traceback: str          # its last lines
    attempts: int
    worker: str
    started_at: datetime
    finished_at: datetime

    @property
    def error(self) -> str:
        return f"{self.error_type}: {self.message}" if self.message else self.error_type


TRACEBACK_LINES = 30   # the traceback lines a failure keeps (its end: where it raised)


Event = Finished | Failed | Lost


class Backend(ABC):
    """Slots that run jobs: the part of an executor that differs between local, multi-process and Ray.

    ``dispatch`` calls ``submit`` while ``idle()`` is positive, then ``events`` to learn what became of the
    jobs submitted; a backend never decides what runs next and never writes the store. Used as a context
    manager: leaving it stops whatever it started, also after an error or Ctrl-C.
    """

    @abstractmethod
    def idle(self) -> int:
        """How many more jobs it would start now."""

    # Whether ``submit_pack`` starts several jobs as one pack in one slot (``[executor] pack``).
    packs: bool = False

    @abstractmethod
    def submit(self, job: Job) -> None:
        """Start ``job`` (its parent, if any, has finished)."""

    def submit_pack(self, jobs: Sequence[Job], pack: dict[str, object]) -> None:
        """Start ``jobs`` as the members of one pack, in one slot (only where ``packs``); ``events`` then reports
        each member as it finishes. ``pack`` is what each member's model records of it."""
        raise NotImplementedError(f"{type(self).__name__} does not train packs")

    @abstractmethod
    def events(self, step: StepFn) -> list[Event]:
        """Wait until at least one submitted job finished, failed or was lost and return those events; pass
        each job's step progress to ``step`` meanwhile."""

    def close(self) -> None:  # noqa: B027 - most backends have something to stop, not all
        """Stop what the backend started."""

    def __enter__(self) -> Backend:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


@dataclass
class DispatchStats:
    """What happened to the jobs: how many ran, how many were retried and why."""

    finished: int = 0
    retries: list[tuple[str, int, str]] = field(default_factory=list)  # (job id, attempt, why)


def describe_job(job: Job) -> str:
    """A job as a user finds it: its id prefix, configuration, method, scenario with the held-out (or trained)
    group, and seed."""
    fold = job.fold
    group = fold.heldout_group if fold.heldout_group is not None else None
    scenario = f"{job.scenario}={group}" if group is not None else job.scenario
    return f"{job.id[:12]} ({job.config}/{job.method}/{scenario}, seed {job.seed})"


class JobsFailed(BelugaError):
    """Some jobs failed on every attempt: they are recorded in the store, everything else finished. Exit
    status 1 (the config was valid; the work did not all succeed)."""

    exit_code = 1


FailureFn = Callable[[JobFailure], None]


def _dependents(jobs: Sequence[Job], failed: str) -> set[str]:
    """The ids of the jobs that need ``failed`` (its children, theirs, …): they cannot run now."""
    out: set[str] = set()
    frontier = {failed}
    while frontier:
        frontier = {j.id for j in jobs if j.id not in out and any(r in frontier for r in j.requires)}
        out |= frontier
    return out


def dispatch(backend: Backend, jobs: Sequence[Job], on_result: ResultFn, progress: Progress,
             max_retries: int, on_failure: FailureFn | None = None, *, fail_fast: bool = False,
             critical_path: Callable[[Job], float] | None = None, packs: Packs | None = None,
             pack_setting: int | str = 1) -> DispatchStats:
    """Run ``jobs`` on ``backend``: parents before the jobs that start from them, a job lost with its worker
    retried (first in the queue) up to ``max_retries`` times, every result passed to ``on_result`` as it comes.
    With ``critical_path`` (a job's estimated cost), the jobs start in ``critical_path_order``, else in
    ``order_jobs``'s; either way a job's results do not depend on when it ran.

    A job that raises (or loses its worker more than ``max_retries`` times) is a failure: passed to
    ``on_failure`` (which records it), and the jobs that need it are skipped. The other jobs go on, unless
    ``fail_fast``: then no new job starts once one failed, and the run ends when the jobs in flight have
    finished (their results are kept). Either way a run with failures ends with ``JobsFailed`` naming them;
    a finished job is never lost to another one's failure.

    With ``packs`` and a backend that trains packs, a job starts together with the members of its pack that are
    waiting and ready, in the pack's order, in one slot; each member finishes (or fails, or is lost) by itself.
    """
    waiting = order_jobs(jobs) if critical_path is None else critical_path_order(jobs, critical_path)
    deps = Dependencies(jobs)
    in_flight: set[str] = set()
    attempts: dict[str, int] = {}
    started: dict[str, datetime] = {}
    lost_why: dict[str, str] = {}
    failures: list[JobFailure] = []
    blocked: set[str] = set()
    stats = DispatchStats()

    def fail(event: Failed) -> None:
        job = event.job
        kind, message = event.error_parts()
        tail = "\n".join(event.traceback.rstrip().splitlines()[-TRACEBACK_LINES:])
        failure = JobFailure(job, kind, message, tail, attempts.get(job.id, 0) + 1, event.worker,
                             started.get(job.id, datetime.now(UTC)), datetime.now(UTC))
        failures.append(failure)
        if on_failure is not None:
            on_failure(failure)
        skip = _dependents(jobs, job.id)
        blocked.update(skip)
        waiting[:] = [j for j in waiting if j.id not in skip]
        progress.job_finished(job)

    while waiting or in_flight:
        while not (fail_fast and failures) and backend.idle() > 0:
            job = next((j for j in waiting if deps.ready(j)), None)
            if job is None:
                break
            group = [job]
            if packs is not None and backend.packs:
                order = packs.of(job.id)
                group = [j for j in waiting if j.id in order and (j is job or deps.ready(j))]
                group.sort(key=lambda j: order.index(j.id))
            for member in group:
                waiting.remove(member)
                if member.id in attempts:
                    progress.job_retried(member, attempts[member.id] + 1, lost_why.pop(member.id))
                else:
                    progress.job_started(member)
                started.setdefault(member.id, datetime.now(UTC))
                in_flight.add(member.id)
            # A member of a pack trains as one even when its mates are done or elsewhere (a retried member): its
            # checkpoints were taken in a pack and resume in one, as the rest of its pack would have trained.
            if len(group) == 1 and not (packs is not None and backend.packs and len(packs.of(job.id)) > 1):
                backend.submit(job)
            else:
                backend.submit_pack(group, {"id": uuid.uuid4().hex[:16], "setting": pack_setting,
                                            "size": packs.size if packs else len(group),
                                            "members": [j.id for j in group]})
        if not in_flight:
            if failures:
                break
            raise BelugaError("jobs are waiting for parents that are neither done nor scheduled: "
                              + ", ".join(j.id[:12] for j in waiting[:5]))
        for event in backend.events(progress.job_step):
            job = event.job
            in_flight.discard(job.id)
            if isinstance(event, Finished):
                on_result(event.result)
                deps.finished(job.id)
                stats.finished += 1
                progress.job_finished(job)
            elif isinstance(event, Failed):
                fail(event)
            else:
                attempts[job.id] = attempts.get(job.id, 0) + 1
                if attempts[job.id] > max_retries:
                    attempts[job.id] -= 1  # fail() counts this attempt
                    fail(Failed(job, f"WorkerLost: lost its worker {attempts[job.id] + 1} times (last: "
                                     f"{event.why})", worker=event.worker))
                    continue
                stats.retries.append((job.id, attempts[job.id] + 1, event.why))
                lost_why[job.id] = event.why
                waiting.insert(0, job)
    if failures:
        raise JobsFailed(_failure_summary(failures, blocked, len(waiting)))
    return stats


def _failure_summary(failures: Sequence[JobFailure], blocked: set[str], not_started: int, limit: int = 5) -> str:
    lines = [f"{len(failures)} job(s) failed on every attempt (recorded in the store with their tracebacks: "
             "`beluga store info STORE`, `beluga report STORE`):"]
    for f in failures[:limit]:
        lines.append(f"  job {describe_job(f.job)} failed after {f.attempts} attempt(s) on {f.worker or 'a worker'}: "
                     f"{f.error}")
    if len(failures) > limit:
        lines.append(f"  … and {len(failures) - limit} more")
    if blocked:
        lines.append(f"{len(blocked)} job(s) that start from a failed one did not run.")
    if not_started:
        lines.append(f"{not_started} job(s) did not start ([executor] fail_fast).")
    lines.append("Every other job finished and is in the store; running the same command again retries the failed "
                 "ones.")
    if len(failures) == 1 and failures[0].traceback:
        lines.append(failures[0].traceback)
    return "\n".join(lines)


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
