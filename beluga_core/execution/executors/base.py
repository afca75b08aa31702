"""The executor plugin kind: where jobs run.

An executor supplies a ``Backend`` (``open``); the dispatch loop every executor shares
(``scheduling.dispatch``) decides which job starts when, retries a job whose worker died (up to
``[executor.options] max_retries``, default 2) and reports progress. The coordinator alone writes the store:
``on_result`` is called in its process for every finished job, in whatever order jobs finish, and
``on_failure`` for every job that failed on every attempt. A job whose
parent (the IID model it starts from) is among the jobs given starts once that parent has finished; the
parent's weights reach other processes through the cache folder (``worker.weights_path``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path

from beluga_core.config.schema import ExecutorSpec
from beluga_core.core.errors import BelugaError
from beluga_core.core.registry import Registry
from beluga_core.execution.scheduling import Backend, FailureFn, Progress, ResultFn, dispatch
from beluga_core.planning.jobs import Job
from beluga_core.planning.plan import Plan

__all__ = ["EXECUTORS", "Executor", "Progress", "ResultFn"]


class Executor(ABC):
    """Base of executor plugins; ``spec`` is the config's ``[executor]`` table."""

    def __init__(self, spec: ExecutorSpec) -> None:
        self.spec = spec
        try:
            self.max_retries = int(spec.options.get("max_retries", 2))
        except (TypeError, ValueError):
            raise BelugaError(f"executor option max_retries must be a whole number, got "
                              f"{spec.options.get('max_retries')!r}", field="executor.options.max_retries") from None
        if self.max_retries < 0:
            raise BelugaError("executor option max_retries must be ≥ 0", field="executor.options.max_retries")

    @abstractmethod
    def open(self, plan: Plan, jobs: Sequence[Job], cache_dir: Path) -> Backend:
        """The backend that will run ``jobs`` (start workers, a cluster connection, …; ``Backend.close``
        stops them)."""

    def run(self, plan: Plan, jobs: Sequence[Job], on_result: ResultFn, progress: Progress,
            cache_dir: str, on_failure: FailureFn | None = None) -> None:
        """Run ``jobs`` through the shared dispatch loop, calling ``on_result`` for each finished one and
        ``on_failure`` for each that failed on every attempt (then ``JobsFailed`` at the end)."""
        if not jobs:
            return
        with self.open(plan, jobs, Path(cache_dir)) as backend:
            dispatch(backend, jobs, on_result, progress, self.max_retries, on_failure, fail_fast=self.spec.fail_fast)


EXECUTORS: Registry[Executor] = Registry("executor", "beluga.executors", Executor)
