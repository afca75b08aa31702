"""The local executor: one process, jobs in sequence, shared model and tokenized data across folds."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from beluga_core.config.schema import ExecutorSpec
from beluga_core.executors.base import Progress, ResultFn
from beluga_core.plan import Job, Plan
from beluga_core.training.model import configure_threads
from beluga_core.worker import Worker


class LocalExecutor:
    def __init__(self, spec: ExecutorSpec) -> None:
        self.spec = spec

    def run(self, plan: Plan, jobs: Sequence[Job], on_result: ResultFn, progress: Progress,
            cache_dir: str) -> None:
        configure_threads(self.spec.threads)
        worker = Worker(plan, self.spec.device, Path(cache_dir))
        for job in order_jobs(jobs):
            progress.job_started(job)
            result = worker.run(job, lambda phase, s, n, job=job: progress.job_step(job, phase, s, n))
            on_result(result)
            progress.job_finished(job)


def order_jobs(jobs: Sequence[Job]) -> list[Job]:
    """Parents (IID models) before the jobs that start from them; otherwise plan order."""
    ids = {j.id for j in jobs}
    parents = [j for j in jobs if any(k.parent_id == j.id for k in jobs)]
    rest = [j for j in jobs if j not in parents]
    assert all(p.id in ids for p in parents)
    return parents + rest
