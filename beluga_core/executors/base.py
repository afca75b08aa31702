"""What an executor plugin implements: run jobs somewhere, hand each result back to the coordinator.

The coordinator alone writes the store, so an executor never touches it; ``on_result`` is called in the
coordinator's process for every finished job, in whatever order jobs finish.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from beluga_core.config.schema import ExecutorSpec
from beluga_core.plan import Job, Plan
from beluga_core.worker import JobResult

ResultFn = Callable[[JobResult], None]


class Progress(Protocol):
    def job_started(self, job: Job) -> None: ...
    def job_step(self, job: Job, phase: str, step: int, total: int) -> None: ...
    def job_finished(self, job: Job) -> None: ...


class Executor(Protocol):
    def __init__(self, spec: ExecutorSpec) -> None: ...

    def run(self, plan: Plan, jobs: Sequence[Job], on_result: ResultFn, progress: Progress,
            cache_dir: str) -> None: ...
