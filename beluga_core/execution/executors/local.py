"""The local executor: one process, jobs in sequence, shared model and tokenized data across folds."""

from __future__ import annotations

import os
import socket
import traceback
from collections.abc import Iterator, Sequence
from functools import partial
from pathlib import Path

from beluga_core.core.machine import usable_cores
from beluga_core.execution.executors.base import Executor
from beluga_core.execution.results import JobResult
from beluga_core.execution.scheduling import Backend, Event, Failed, Finished, StepFn, worker_class
from beluga_core.execution.sizing import Slot, Workers
from beluga_core.execution.worker import Worker
from beluga_core.planning.jobs import Job
from beluga_core.planning.plan import Plan
from beluga_core.training.models import configure_threads


class InProcess(Backend):
    """One slot: ``events`` runs the submitted job here (a pack: until its next member finishes). A job that
    raises is reported as failed (a pack's unfinished members all); Ctrl-C (and any other ``BaseException``) goes
    straight up, as the process would."""

    packs = True

    def __init__(self, worker: Worker) -> None:
        self.worker = worker
        self.job: Job | None = None
        self.pack: list[Job] = []
        self.results: Iterator[JobResult] | None = None
        self._step: StepFn | None = None
        self.where = f"local {worker.device} pid {os.getpid()} on {socket.gethostname()}"

    def idle(self) -> int:
        return 0 if self.job or self.pack else 1

    def submit(self, job: Job) -> None:
        self.job = job

    def submit_pack(self, jobs: Sequence[Job], pack: dict[str, object]) -> None:
        self.pack = list(jobs)
        self.results = self.worker.run_pack(self.pack, self._report, pack=pack)

    def _report(self, job: Job, phase: str, step: int, total: int) -> None:
        if self._step is not None:
            self._step(job, phase, step, total)

    def events(self, step: StepFn) -> list[Event]:
        if self.pack:
            return self._pack_event(step)
        job, self.job = self.job, None
        assert job is not None, "events() without a submitted job"
        try:
            return [Finished(job, self.worker.run(job, partial(step, job)))]
        except Exception as exc:
            return [Failed(job, traceback.format_exc(), exc, worker=self.where)]

    def _pack_event(self, step: StepFn) -> list[Event]:
        assert self.results is not None
        self._step = step
        try:
            result = next(self.results)
        except Exception as exc:   # the pack failed: every member still in it fails with it
            failed, self.pack, self.results = self.pack, [], None
            return [Failed(job, traceback.format_exc(), exc, worker=self.where) for job in failed]
        job = next(j for j in self.pack if j.id == result.id)
        self.pack.remove(job)
        if not self.pack:
            self.results = None
        return [Finished(job, result)]


class LocalExecutor(Executor):
    trains_packs = True

    def size_workers(self, plan: Plan) -> Workers:
        threads = self.spec.threads or usable_cores()
        why = f"local executor: one process, jobs in turn, {threads} thread(s)"
        if self.spec.workers not in ("auto", 1):
            why += f"; workers = {self.spec.workers} is for the multi executor (name = \"multi\")"
        return Workers((Slot(self.spec.device, threads),), why, self.spec.workers)

    def open(self, plan: Plan, jobs: Sequence[Job], cache_dir: Path) -> Backend:
        configure_threads(self.size_workers(plan).slots[0].threads)   # the threads the run's line printed
        return InProcess(worker_class(self.spec)(plan, self.spec.device, cache_dir))
