"""The executor plugin kind: run jobs somewhere, hand each result back to the coordinator.

The coordinator alone writes the store, so an executor never touches it; ``on_result`` is called in the
coordinator's process for every finished job, in whatever order jobs finish. Jobs whose ``parent_id`` is
among the jobs given must wait for that parent (``scheduling.Dependencies``); the parent's weights reach
other processes through the cache folder (``worker.weights_path``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Protocol

from beluga_core.config.schema import ExecutorSpec
from beluga_core.core.registry import Registry
from beluga_core.execution.results import JobResult
from beluga_core.planning.jobs import Job
from beluga_core.planning.plan import Plan

ResultFn = Callable[[JobResult], None]


class Progress(Protocol):
    def job_started(self, job: Job) -> None: ...
    def job_step(self, job: Job, phase: str, step: int, total: int) -> None: ...
    def job_finished(self, job: Job) -> None: ...


class Executor(ABC):
    """Base of executor plugins; ``spec`` is the config's ``[executor]`` table."""

    def __init__(self, spec: ExecutorSpec) -> None:
        self.spec = spec

    @abstractmethod
    def run(self, plan: Plan, jobs: Sequence[Job], on_result: ResultFn, progress: Progress,
            cache_dir: str) -> None:
        """Run ``jobs`` (parents before the jobs that start from them), calling ``on_result`` for each."""


EXECUTORS: Registry[Executor] = Registry("executor", "beluga.executors", Executor)
