"""The local executor: one process, jobs in sequence, shared model and tokenized data across folds."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from pathlib import Path

from beluga_core.execution.executors.base import Executor, Progress, ResultFn
from beluga_core.execution.scheduling import order_jobs, worker_class
from beluga_core.planning.jobs import Job
from beluga_core.planning.plan import Plan
from beluga_core.training.models import configure_threads


class LocalExecutor(Executor):
    def run(self, plan: Plan, jobs: Sequence[Job], on_result: ResultFn, progress: Progress,
            cache_dir: str) -> None:
        configure_threads(self.spec.threads)
        worker = worker_class(self.spec)(plan, self.spec.device, Path(cache_dir))
        for job in order_jobs(jobs):
            progress.job_started(job)
            result = worker.run(job, partial(progress.job_step, job))
            on_result(result)
            progress.job_finished(job)
