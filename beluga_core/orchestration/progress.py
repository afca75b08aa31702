"""The progress display of ``beluga run``: fold k of n with an ETA, and the steps of the fold in progress.

The ETA weighs each training by its estimated seconds (``orchestration.pricing``'s cost model, where the run
gives it): the time the finished trainings took, scaled by the estimate of those left against theirs. On a
terminal that is rich's live bar. Without one (a CI log, ``nohup``, ``| tee``) rich draws the bar once, when
the phase ends; there the display prints a plain line instead every ``PROGRESS_LINE_EVERY_S`` seconds and at the
phase's end: trainings done of the phase's, elapsed time, ETA, and the training last heard from.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from rich.console import Console
from rich.progress import Progress

from beluga_core.planning.halving import rung_of
from beluga_core.planning.jobs import Job


def job_label(job: Job) -> str:
    label = job.config if job.is_iid_model else f"{job.config}/{job.method}/{job.scenario}"
    if job.is_grid_point:
        rung = rung_of(job.hparams)
        point = {k: v for k, v in (job.point or {}).items() if rung is None or k != "epochs"}
        label = f"grid {job.config}/{job.method} " + ",".join(
            f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in point.items())
        if rung is not None:   # a halving rung: the epochs it trains to, not the point's budget
            label += f" rung {rung.index} ({rung.epochs:g} epochs)"
    if job.fold.heldout_group:
        label += f": {job.fold.heldout_group[:40]}"
    return label


# The live bar's ETA column: the display's own (``eta``), weighed by the estimate, not rich's count-based one.
ETA_COLUMN = "{task.fields[eta]}"

# Without a terminal, a progress line this often (seconds). 30 s: a log shows a stalled or slow run within half a
# minute, while a day-long run adds about 3,000 lines to it, not one per training step (a step takes well under
# a second on a small model).
PROGRESS_LINE_EVERY_S = 30.0


def live_display(console: Console) -> bool:
    """Whether rich redraws a live display on ``console`` (else it shows it once, when it stops): rich's own
    test in ``Live.refresh``."""
    return console.is_jupyter or (console.is_terminal and not console.is_dumb_terminal)


def duration(seconds: float) -> str:
    """A duration as a log line shows it: 42s, 3m05s, 2h07m."""
    s = max(0, round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


class RichProgress:
    """An executor's ``Progress`` on a rich progress display; without a terminal, plain lines at an interval
    (``every`` seconds of ``clock``) and at the end of the phase (module docstring)."""

    def __init__(self, progress: Progress, total: int, *, clock: Callable[[], float] = time.monotonic,
                 every: float = PROGRESS_LINE_EVERY_S, costs: Mapping[str, float] | None = None) -> None:
        self.progress = progress
        self.folds = progress.add_task("folds", total=total, eta="")   # eta: the ETA column (ETA_COLUMN)
        self.steps = progress.add_task("", total=1, visible=False, eta="")
        self.lines = not live_display(progress.console)
        self.clock, self.every = clock, every
        self.started = self.last_line = clock()
        self.total, self.done = total, 0
        self.current = ""   # the training last heard from, with its step
        self.costs = dict(costs or {})   # job id → its estimated seconds
        self.estimated_done = 0.0       # the finished trainings'
        self.finished: set[str] = set()

    def job_started(self, job: Job) -> None:
        self.progress.update(self.steps, description=job_label(job), completed=0, total=1, visible=True)
        self._heard(job_label(job))

    def job_step(self, job: Job, phase: str, step: int, total: int) -> None:
        if phase == "eval":
            label = self.progress.tasks[self.steps].description.split(" [")[0]
            self.progress.update(self.steps, description=f"{label} [eval]")
            self._heard(f"{job_label(job)} [eval]")
            return
        self.progress.update(self.steps, completed=step, total=max(total, 1))
        self._heard(f"{job_label(job)} [step {step}/{max(total, 1)}]")

    def job_finished(self, job: Job) -> None:
        self.progress.advance(self.folds)
        self.done += 1
        if job.id not in self.finished:
            self.finished.add(job.id)
            self.estimated_done += self.costs.get(job.id, 0.0)
        self.progress.update(self.folds, eta=f"ETA {self.eta()}")
        if self.lines and self.done == self.total:
            self._line()                    # the phase's last line, whenever the previous one was
        else:
            self._heard(self.current)

    def _heard(self, current: str) -> None:
        self.current = current
        if self.lines and self.clock() - self.last_line >= self.every:
            self._line()

    def eta(self) -> str:
        """The time left: the finished trainings' time, scaled by the estimated seconds of those left against
        theirs (by count where no estimate is given); "done" at the end."""
        elapsed = self.clock() - self.started
        if self.done >= self.total:
            return "done"
        if self.done and self.estimated_done > 0:
            left = sum(self.costs.values()) - self.estimated_done
            return duration(elapsed / self.estimated_done * max(left, 0.0))
        if self.done:
            return duration(elapsed / self.done * (self.total - self.done))
        return "unknown until a training finishes"

    def _line(self) -> None:
        now = self.clock()
        self.last_line = now
        now_at = f"; now: {self.current}" if self.current and self.done < self.total else ""
        self.progress.console.print(f"{time.strftime('%H:%M:%S')} progress: {self.done}/{self.total} trainings, "
                                    f"elapsed {duration(now - self.started)}, ETA {self.eta()}{now_at}",
                                    highlight=False, markup=False, soft_wrap=True)

    def job_retried(self, job: Job, attempt: int, why: str) -> None:
        # A line that stays (with the time: a log of a long run shows when workers died), then the fold again.
        self.progress.console.print(f"[yellow]{time.strftime('%H:%M:%S')} retrying {job_label(job)} (attempt "
                                    f"{attempt}): {why}[/]", soft_wrap=True)
        self.job_started(job)
