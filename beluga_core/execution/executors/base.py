"""The executor plugin kind: where jobs run.

An executor supplies a ``Backend`` (``open``); the dispatch loop every executor shares
(``scheduling.dispatch``) decides which job starts when, retries a job whose worker died (up to
``[executor.options] max_retries``, default 2) and reports progress. The coordinator alone writes the store:
``on_result`` is called in its process for every finished job, in whatever order jobs finish, and
``on_failure`` for every job that failed on every attempt. A job whose
parent (the IID model it starts from) is among the jobs given starts once that parent has finished; the
parent's weights reach other processes through the cache folder (``worker.weights_path``). An executor that
runs several jobs at once (``Executor.workers``) starts the longest chain of jobs first
(``scheduling.critical_path_order``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field

from beluga_core.config.executor_spec import ExecutorSpec
from beluga_core.contracts.options import DeclaresOptions, Options, PluginOptions, checked_options
from beluga_core.core.registry import Registry
from beluga_core.execution.scheduling import Backend, FailureFn, Progress, ResultFn, dispatch
from beluga_core.execution.sizing import (
    DEFAULT_MARGIN,
    NothingToMeasure,
    PackMemory,
    PackSize,
    Workers,
    memory_margin,
    pack_memory,
    plan_pack_size,
)
from beluga_core.planning.estimate import job_seconds
from beluga_core.planning.jobs import Job
from beluga_core.planning.pack_groups import AUTO_PACK, Packs, form_packs, why_not_packed
from beluga_core.planning.plan import Plan

__all__ = ["EXECUTORS", "Executor", "ExecutorOptions", "Progress", "ResultFn", "check_executor_options"]


class ExecutorOptions(Options):
    """``[executor.options]`` every executor understands (the dispatch loop's and the sizing's); an executor's own
    Options derive from this model."""

    max_retries: int = Field(2, ge=0, description="Re-runs of a job whose worker process (or node) was lost.")
    worker: str | None = Field(None, pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$", description=(
        "module:Class of a subclass of beluga's Worker that runs the jobs (e.g. one that injects faults, to test "
        "how an executor survives them)."))
    folds_per_gpu: int | None = Field(None, ge=1, description=(
        "Workers per GPU (not set: workers = \"auto\" sizes them by the GPU's free memory; 1 each otherwise)."))
    memory_margin: float = Field(DEFAULT_MARGIN, ge=0, lt=1, description=(
        "The fraction of a device's free memory that sizing workers and packs keeps free."))


class Executor(DeclaresOptions, ABC):
    """Base of executor plugins; ``spec`` is the config's ``[executor]`` table, ``self.options`` its
    ``[executor.options]`` validated by the executor's ``Options`` (``ExecutorOptions`` or a subclass)."""

    Options: ClassVar[type[PluginOptions] | None] = ExecutorOptions
    # Whether its backend trains packs (``Backend.submit_pack``): without, ``[executor] pack`` trains every job alone.
    trains_packs: ClassVar[bool] = False

    def __init__(self, spec: ExecutorSpec) -> None:
        self.spec = spec
        self.options: Any = checked_options(type(self), spec.options, "executor.options")
        self.max_retries = int(self.options.max_retries if self.Options is not None
                               else spec.options.get("max_retries", 2))
        self._workers: Workers | None = None
        self._pack_size: PackSize | None = None

    def workers(self, plan: Plan) -> Workers:
        """How many jobs run at once, where, and why: the dry run prints it, the store records it with the run,
        and more than one (or an unknown number) starts the critical path first. Worked out once per executor
        (``size_workers``)."""
        workers: Workers | None = getattr(self, "_workers", None)   # a plugin's __init__ may not call this one's
        if workers is None:
            workers = self._workers = self.size_workers(plan)
        return workers

    def size_workers(self, plan: Plan) -> Workers:
        """The executor's workers on this machine; an executor that does not say runs as many jobs at once as
        its backend's ``idle`` allows."""
        return Workers((), f"executor {self.spec.name!r} starts as many jobs as its backend takes",
                       self.spec.workers)

    def close(self) -> None:
        """Release what the executor holds across a run's phases (a cluster connection it started); the run calls
        it once, at its end, whatever happened."""

    @abstractmethod
    def open(self, plan: Plan, jobs: Sequence[Job], cache_dir: Path) -> Backend:
        """The backend that will run ``jobs`` (start workers, a cluster connection, …; ``Backend.close``
        stops them)."""

    def run(self, plan: Plan, jobs: Sequence[Job], on_result: ResultFn, progress: Progress,
            cache_dir: str, on_failure: FailureFn | None = None, packs: Packs | None = None) -> None:
        """Run ``jobs`` through the shared dispatch loop, calling ``on_result`` for each finished one and
        ``on_failure`` for each that failed on every attempt (then ``JobsFailed`` at the end). ``packs``: the
        packs of the phase's jobs (``packs_of``), where the backend trains packs."""
        if not jobs:
            return
        # One worker takes as long whatever the order: it keeps the plan's (parents and teachers first).
        cost = None if self.workers(plan).count == 1 else job_seconds(plan)
        with self.open(plan, jobs, Path(cache_dir)) as backend:
            dispatch(backend, jobs, on_result, progress, self.max_retries, on_failure, fail_fast=self.spec.fail_fast,
                     critical_path=cost, packs=packs, pack_setting=self.spec.pack)

    def packs_of(self, plan: Plan, jobs: Sequence[Job]) -> Packs:
        """The packs ``[executor] pack`` forms of ``jobs`` (all of a phase's, done ones too, so that a resumed run
        forms the packs the interrupted one did) on this executor's device."""
        if not self.trains_packs:
            return replace(form_packs(jobs, 1), note=f"the {self.spec.name} executor trains every job alone")
        size = self.pack_size(plan, jobs)
        return replace(form_packs(jobs, size.size), why=size.why)

    def pack_size(self, plan: Plan, jobs: Sequence[Job], recorded: int | None = None) -> PackSize:
        """Members per pack on this executor's device, and why (``sizing.plan_pack_size``): "auto" measures what
        a member takes with a probe of the first of ``jobs`` that packs, once per executor (both phases of a run
        pack alike); ``recorded``: the size the store recorded for an earlier run of this config, kept."""
        from beluga_core.training.models import pick_device

        known: PackSize | None = getattr(self, "_pack_size", None)
        if known is not None:
            return known
        slots = self.workers(plan).slots
        device = slots[0].device if slots else self.spec.device
        kind = pick_device(device).type if device == "auto" else ("cpu" if device == "cpu" else "cuda")
        probe = next((j for j in jobs if why_not_packed(j) is None), None)
        on_device = max(1, sum(s.device == device for s in slots))

        def memory() -> PackMemory:
            if probe is None:
                raise NothingToMeasure("no training packs before the grid search; measured after it")
            return pack_memory(plan, probe.id, device if device != "auto" else kind)

        size = plan_pack_size(self.spec.pack, kind, AUTO_PACK[kind], on_device, memory, recorded,
                              memory_margin(self.spec))
        if size.final:   # kept for the run; else a later phase's jobs are measured
            self._pack_size = size
        return size


EXECUTORS: Registry[Executor] = Registry("executor", "beluga.executors", Executor)


def check_executor_options(spec: ExecutorSpec) -> None:
    """``[executor.options]`` against the executor's Options, or a ``BelugaError`` naming the field
    (``executor.options.KEY``). ``beluga run`` calls it before it plans or trains anything: the config loader sits
    below the executors in the layers and does not load them."""
    checked_options(EXECUTORS.get(spec.name), spec.options, "executor.options")
