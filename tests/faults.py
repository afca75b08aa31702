"""A worker that dies abruptly, as a worker killed by the OOM killer or a lost node does: for testing how
executors survive it. Test-only: selected with ``[executor.options] worker = "faults:FaultyWorker"`` (with
this folder on PYTHONPATH), so production modules carry no crash hook.

``BELUGA_FAULT = "WHEN:MARKER[,WHEN:MARKER…]"``: for each fault, the first worker to find the file MARKER
absent creates it and dies with exit code 17 — ``before`` a job, in the middle of its ``training`` (at its
second step), or ``sending`` its result (a result too large for one pipe write, with the process killed while
the write is under way). Each fault fires once.
"""

from __future__ import annotations

import os
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


def _faults() -> dict[str, str]:
    """The faults still to fire: {when: marker}."""
    faults = {}
    for spec in filter(None, os.environ.get(FAULT_ENV, "").split(",")):
        when, _, marker = spec.partition(":")
        if when not in ("before", "training", "sending") or not marker:
            raise ValueError(f"{FAULT_ENV} must be before|training|sending:MARKER[,…], got {spec!r}")
        if not Path(marker).exists():
            faults[when] = marker
    return faults


class _DiesWhileSent(JobResult):
    """A result whose pickling starts a timer that kills the process while the pickle is being written."""

    def __reduce__(self) -> Any:
        threading.Timer(0.05, os._exit, args=(17,)).start()
        padding = os.urandom(64 * 1024 * 1024)  # far larger than a pipe's buffer: the write blocks
        return (JobResult, (self.record, self.outcomes, self.iid, self.validation)), {"padding": padding}


class FaultyWorker(Worker):
    def run(self, job: Job, progress: ProgressFn | None = None) -> JobResult:
        faults = _faults()
        if "before" in faults and _claim(faults["before"]):
            os._exit(17)
        if "training" in faults:
            marker = faults["training"]

            def dying(phase: str, step: int, total: int) -> None:
                if phase.startswith("train") and step >= 2 and _claim(marker):
                    os._exit(17)
                if progress is not None:
                    progress(phase, step, total)

            result = super().run(job, dying)
        else:
            result = super().run(job, progress)
        if "sending" in faults and _claim(faults["sending"]):
            return _DiesWhileSent(result.record, result.outcomes, result.iid, result.validation)
        return result
