"""The progress display of ``beluga run``: fold k of n with an ETA, and the steps of the fold in progress."""

from __future__ import annotations

import time

from rich.progress import Progress

from beluga_core.planning.jobs import Job


def job_label(job: Job) -> str:
    label = job.config if job.is_iid_model else f"{job.config}/{job.method}/{job.scenario}"
    if job.is_grid_point:
        label = f"grid {job.config}/{job.method} " + ",".join(
            f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in (job.point or {}).items())
    if job.fold.heldout_group:
        label += f": {job.fold.heldout_group[:40]}"
    return label


class RichProgress:
    """An executor's ``Progress`` on a rich progress display."""

    def __init__(self, progress: Progress, total: int) -> None:
        self.progress = progress
        self.folds = progress.add_task("folds", total=total)
        self.steps = progress.add_task("", total=1, visible=False)

    def job_started(self, job: Job) -> None:
        self.progress.update(self.steps, description=job_label(job), completed=0, total=1, visible=True)

    def job_step(self, job: Job, phase: str, step: int, total: int) -> None:
        if phase == "eval":
            label = self.progress.tasks[self.steps].description.split(" [")[0]
            self.progress.update(self.steps, description=f"{label} [eval]")
            return
        self.progress.update(self.steps, completed=step, total=max(total, 1))

    def job_finished(self, job: Job) -> None:
        self.progress.advance(self.folds)

    def job_retried(self, job: Job, attempt: int, why: str) -> None:
        # A line that stays (with the time: a log of a long run shows when workers died), then the fold again.
        self.progress.console.print(f"[yellow]{time.strftime('%H:%M:%S')} retrying {job_label(job)} (attempt "
                                    f"{attempt}): {why}[/]", soft_wrap=True)
        self.job_started(job)
