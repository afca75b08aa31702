"""A worker that dies abruptly, as a worker killed by the OOM killer or a lost node does: for testing how
executors survive it. Test-only: selected with ``[executor.options] worker = "faults:FaultyWorker"`` (with
this folder on PYTHONPATH), so production modules carry no crash hook.

``BELUGA_FAULT = "WHEN[@N]:MARKER[,…]"``: for each fault, the first worker to find the file MARKER absent
creates it and SIGKILLs its own process — ``before`` a job, or during its ``training`` (at its second step, or
its only one). ``@N`` fires it only in the N-th job that worker process runs (with the local executor: the
run's N-th fold, so the whole ``beluga run`` dies there). Each fault fires once. (A worker killed in the
middle of sending its result is ``tests/midsend``: it has to act below the executor, in the pipe itself.)
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from beluga_core.execution.results import JobResult
from beluga_core.execution.worker import ProgressFn, Worker
from beluga_core.planning.jobs import Job

FAULT_ENV = "BELUGA_FAULT"


def _claim(marker: str) -> bool:
    """True for exactly one process: the one that creates the marker file."""
    try:
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return False
    os.close(fd)
    return True


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _faults(job_number: int) -> dict[str, str]:
    """The faults still to fire in this worker's ``job_number``-th job: {when: marker}."""
    faults = {}
    for spec in filter(None, os.environ.get(FAULT_ENV, "").split(",")):
        when_at, _, marker = spec.partition(":")
        when, _, at = when_at.partition("@")
        if when not in ("before", "training") or not marker or not (at == "" or at.isdigit()):
            raise ValueError(f"{FAULT_ENV} must be before|training[@N]:MARKER[,…], got {spec!r}")
        if (at == "" or int(at) == job_number) and not Path(marker).exists():
            faults[when] = marker
    return faults


class FaultyWorker(Worker):
    jobs_run = 0

    def run(self, job: Job, progress: ProgressFn | None = None) -> JobResult:
        self.jobs_run += 1
        faults = _faults(self.jobs_run)
        if "before" in faults and _claim(faults["before"]):
            _die()
        if "training" in faults:
            marker = faults["training"]

            def dying(phase: str, step: int, total: int) -> None:
                if phase.startswith("train") and step >= min(2, total) and _claim(marker):
                    _die()
                if progress is not None:
                    progress(phase, step, total)

            return super().run(job, dying)
        return super().run(job, progress)

    def run_pack(self, jobs: Sequence[Job], progress: Callable[[Job, str, int, int], None] | None = None,
                 pack: dict[str, Any] | None = None) -> Iterator[JobResult]:
        """A pack counts as one job; ``training`` kills it at the first training step after its first member
        finished (and was committed): mid-pack, with members done and members still training."""
        self.jobs_run += 1
        faults = _faults(self.jobs_run)
        if "before" in faults and _claim(faults["before"]):
            _die()
        finished = 0

        def dying(job: Job, phase: str, step: int, total: int) -> None:
            if "training" in faults and phase.startswith("train") and finished and _claim(faults["training"]):
                _die()
            if progress is not None:
                progress(job, phase, step, total)

        for result in super().run_pack(jobs, dying, pack):
            finished += 1
            yield result
