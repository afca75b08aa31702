"""The executor plugin kind (``beluga.executors``): where jobs run.

An executor implements ``open``: the ``Backend`` that runs the jobs — ``idle`` (how many more it takes now),
``submit``, and ``events``, which reports ``Finished``, ``Failed`` or ``Lost`` jobs. One dispatch loop, shared
by every executor, decides which job starts when (``order_jobs``, ``Dependencies``: parents and teachers
first; ``critical_path_order`` where several run at once), retries lost jobs and reports ``Progress``; the
coordinator alone writes the store (``ResultFn`` gets each ``JobResult``). ``worker_class(spec)`` gives the
``Worker`` that runs one ``Job`` of the ``Plan``, reporting its steps through a ``StepFn``. An executor says how
many jobs it runs at once, where and why by overriding ``size_workers``: ``Workers``, one ``Slot`` (device,
threads) per worker.

These are the run's internals, public here only because an executor plugin drives them; no other kind needs
them.
"""

from __future__ import annotations

from beluga_core.config.executor_spec import ExecutorSpec
from beluga_core.core.errors import BelugaError
from beluga_core.execution.executors.base import EXECUTORS, Executor, ExecutorOptions, Progress, ResultFn
from beluga_core.execution.results import JobResult
from beluga_core.execution.scheduling import (
    Backend,
    Dependencies,
    Event,
    Failed,
    Finished,
    Lost,
    StepFn,
    critical_path_order,
    order_jobs,
    worker_class,
)
from beluga_core.execution.sizing import Slot, Workers
from beluga_core.execution.worker import Worker
from beluga_core.planning.jobs import Job
from beluga_core.planning.plan import Plan

__all__ = [
    "EXECUTORS",
    "Backend",
    "BelugaError",
    "Dependencies",
    "Event",
    "Executor",
    "ExecutorOptions",
    "ExecutorSpec",
    "Failed",
    "Finished",
    "Job",
    "JobResult",
    "Lost",
    "Plan",
    "Progress",
    "ResultFn",
    "Slot",
    "StepFn",
    "Worker",
    "Workers",
    "critical_path_order",
    "order_jobs",
    "worker_class",
]
