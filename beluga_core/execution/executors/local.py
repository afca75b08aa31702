"""The local executor: one process, jobs in sequence, shared model and tokenized data across folds."""

from __future__ import annotations

import os
import socket
import traceback
from collections.abc import Sequence
from functools import partial
from pathlib import Path

from beluga_core.execution.executors.base import Executor
from beluga_core.execution.scheduling import Backend, Event, Failed, Finished, StepFn, worker_class
from beluga_core.execution.sizing import Slot, Workers
from beluga_core.execution.worker import Worker
from beluga_core.planning.jobs import Job
from beluga_core.planning.plan import Plan
from beluga_core.training.models import configure_threads


class InProcess(Backend):
    """One slot: ``events`` runs the submitted job here. A job that raises is reported as failed; Ctrl-C
    (and any other ``BaseException``) goes straight up, as the process would."""

    def __init__(self, worker: Worker) -> None:
        self.worker = worker
        self.job: Job | None = None
        self.where = f"local {worker.device} pid {os.getpid()} on {socket.gethostname()}"

    def idle(self) -> int:
        return 0 if self.job else 1

    def submit(self, job: Job) -> None:
        self.job = job

    def events(self, step: StepFn) -> list[Event]:
        job, self.job = self.job, None
        assert job is not None, "events() without a submitted job"
        try:
            return [Finished(job, self.worker.run(job, partial(step, job)))]
        except Exception as exc:
            return [Failed(job, traceback.format_exc(), exc, worker=self.where)]


class LocalExecutor(Executor):
    def size_workers(self, plan: Plan) -> Workers:
        threads = self.spec.threads or (os.cpu_count() or 1)
        why = f"local executor: one process, jobs in turn, {threads} thread(s)"
        if self.spec.workers not in ("auto", 1):
            why += f"; workers = {self.spec.workers} is for the multi executor (name = \"multi\")"
        return Workers((Slot(self.spec.device, threads),), why, self.spec.workers)

    def open(self, plan: Plan, jobs: Sequence[Job], cache_dir: Path) -> Backend:
        configure_threads(self.spec.threads)
        return InProcess(worker_class(self.spec)(plan, self.spec.device, cache_dir))
