"""A worker that dies abruptly, as a worker killed by the OOM killer or a lost node does: for testing how
executors survive it. Test-only: selected with ``[executor.options] worker = "faults:FaultyWorker"`` (with
this folder on PYTHONPATH), so production modules carry no crash hook.

``BELUGA_FAULT = "WHEN[@N]:MARKER[,…]"``: for each fault, the first worker to find the file MARKER absent
creates it and SIGKILLs its own process — ``before`` a job, during its ``training`` (at its second step, or
its only one), or ``sending`` its result (a result too large for one pipe write, with the process killed
while the write is under way). ``@N`` fires it only in the N-th job that worker process runs (with the local
executor: the run's N-th fold, so the whole ``beluga run`` dies there). Each fault fires once.
"""

from __future__ import annotations

import os
import signal
import threading
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
        if when not in ("before", "training", "sending") or not marker or not (at == "" or at.isdigit()):
            raise ValueError(f"{FAULT_ENV} must be before|training|sending[@N]:MARKER[,…], got {spec!r}")
        if (at == "" or int(at) == job_number) and not Path(marker).exists():
            faults[when] = marker
    return faults


class _DiesWhileSent(JobResult):
    """A result whose pickling starts a timer that kills the process while the pickle is being written."""

    def __reduce__(self) -> Any:
        threading.Timer(0.05, _die).start()
        padding = os.urandom(64 * 1024 * 1024)  # far larger than a pipe's buffer: the write blocks
        return (JobResult, (self.record, self.outcomes, self.iid, self.validation)), {"padding": padding}


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

            result = super().run(job, dying)
        else:
            result = super().run(job, progress)
        if "sending" in faults and _claim(faults["sending"]):
            return _DiesWhileSent(result.record, result.outcomes, result.iid, result.validation)
        return result
