"""The multi-worker executor: one worker process per GPU (or several per GPU), or N CPU worker processes.

The coordinator (this process) stays the only writer: workers send each finished job back over their own pipe and
``on_result`` commits it here. Each worker is a long-lived ``Worker`` (sharing model, pristine weights and
tokenized inputs across its jobs), so results depend only on the job, not on which worker ran it — with the
same device type and thread count per fold, the numbers equal the local executor's.

- Jobs whose parent (the IID model) is still waiting or running wait for it; the parent's weights reach the
  other workers through the cache folder (the worker writes them before reporting the job done).
- A worker that dies (killed, out of memory, segfault) is replaced and its job is retried, up to
  ``options.max_retries`` times (default 2); then the run stops naming the job. A job that raises is
  reported with its traceback once the jobs in flight on the other workers have finished.
- Workers are forked from a fork server that has imported torch, transformers and the worker code once (spawned
  where there is no fork server: Windows). A worker, or the replacement of a dead one, then starts in well under
  a second instead of importing them again (~6 s on 2 CPU cores). The server itself never runs torch: forking a
  process that has started torch's thread pools or a CUDA context can hang, so the coordinator is never forked.

GPU paths (one worker per ``cuda:i``, ``options.folds_per_gpu`` workers sharing one GPU) follow the same
code; they are untested on a GPU in this repository's CI.
"""

from __future__ import annotations

import multiprocessing as mp
import pickle
import queue
import signal
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

from beluga_core.config.schema import ExecutorSpec
from beluga_core.core.errors import BelugaError
from beluga_core.execution.executors.base import Executor, Progress, ResultFn
from beluga_core.execution.scheduling import Dependencies, Slot, order_jobs, plan_slots, warm_token_cache, worker_class
from beluga_core.planning.jobs import Job
from beluga_core.planning.plan import Plan

# How often a worker forwards step progress (seconds); steps can be far faster than a terminal refresh.
STEP_REPORT_EVERY = 0.5
# A worker that has not started within this many seconds is treated as dead.
START_TIMEOUT = 900.0


def _worker_main(plan: Plan, spec: ExecutorSpec, slot: Slot, cache_dir: str, inbox: Any, outbox: Connection,
                 wid: int) -> None:
    from beluga_core.training.models import configure_threads

    # Ctrl-C reaches every process of the terminal's group: the coordinator handles it and stops workers.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    configure_threads(slot.threads)
    if slot.device.startswith("cuda"):
        import torch

        # Otherwise every worker also opens a context on cuda:0 (pinned copies, caching allocator).
        torch.cuda.set_device(slot.device)
    worker = worker_class(spec)(plan, slot.device, Path(cache_dir))
    outbox.send(("ready", wid, None))
    parent = mp.parent_process()
    while True:
        try:
            job: Job | None = inbox.get(timeout=2.0)
        except queue.Empty:
            if parent is not None and not parent.is_alive():
                return  # the coordinator was killed (kill -9): do not linger as an orphan
            continue
        if job is None:
            return
        last = 0.0

        def step(phase: str, s: int, n: int, job: Job = job) -> None:
            nonlocal last
            now = time.monotonic()
            if phase == "eval" or now - last >= STEP_REPORT_EVERY or s == n:
                last = now
                outbox.send(("step", wid, (job.id, phase, s, n)))

        try:
            result = worker.run(job, step)
        except BaseException:  # reported to the coordinator, which decides; the worker stays usable
            outbox.send(("error", wid, (job.id, traceback.format_exc())))
            continue
        outbox.send(("result", wid, result))


# What the fork server imports before it forks the first worker: the heavy part of every worker's start-up.
_PRELOAD = ["beluga_core.execution.worker", "transformers.modeling_utils"]


def _context() -> Any:
    if "forkserver" in mp.get_all_start_methods():
        ctx = mp.get_context("forkserver")
        ctx.set_forkserver_preload(_PRELOAD)  # ignored when the server already runs (a second run in-process)
        return ctx
    return mp.get_context("spawn")


def _next_message(procs: dict[int, _Proc]) -> tuple[str, int, Any] | None:
    """The next message of any worker (waiting up to a second), or None; a channel broken by a dying worker
    yields nothing (its process is then found dead and replaced)."""
    channels = [p.results for p in procs.values() if not p.results.closed]
    ready = wait(channels, timeout=1.0)
    for channel in channels:
        if channel not in ready:
            continue
        try:
            message: tuple[str, int, Any] = channel.recv()
            return message
        except (EOFError, OSError, pickle.UnpicklingError):
            channel.close()
    return None


@dataclass
class _Proc:
    slot: Slot
    process: Any
    inbox: Any
    # The worker's own channel back (a pipe written synchronously by the worker, with no feeder thread): a
    # worker that dies mid-message breaks only this channel, never the other workers'.
    results: Connection
    started: float
    ready: bool = False
    job: Job | None = None


class MultiExecutor(Executor):
    def __init__(self, spec: ExecutorSpec) -> None:
        super().__init__(spec)
        self.max_retries = int(spec.options.get("max_retries", 2))

    def run(self, plan: Plan, jobs: Sequence[Job], on_result: ResultFn, progress: Progress,
            cache_dir: str) -> None:
        if not jobs:
            return
        slots = plan_slots(self.spec)
        slots = slots[:max(1, len(jobs))]
        warm_token_cache(plan, Path(cache_dir))
        ctx = _context()
        worker_plan = plan.for_workers()
        procs: dict[int, _Proc] = {}
        next_wid = 0

        def start(slot: Slot) -> None:
            nonlocal next_wid
            inbox = ctx.Queue()
            results, sender = ctx.Pipe(duplex=False)
            p = ctx.Process(target=_worker_main,
                            args=(worker_plan, self.spec, slot, cache_dir, inbox, sender, next_wid),
                            name=f"beluga-worker-{next_wid}", daemon=True)
            p.start()
            sender.close()  # the worker holds the only sending end: its death closes the channel
            procs[next_wid] = _Proc(slot, p, inbox, results, time.monotonic())
            next_wid += 1

        for slot in slots:
            start(slot)
        waiting = order_jobs(jobs)
        by_id = {j.id: j for j in jobs}
        deps = Dependencies(jobs)
        attempts: dict[str, int] = {}
        failure: tuple[Job, str] | None = None
        try:
            while waiting or any(p.job is not None for p in procs.values()):
                if failure is None:
                    for p in procs.values():
                        if p.ready and p.job is None:
                            job = next((j for j in waiting if deps.ready(j)), None)
                            if job is None:
                                break
                            waiting.remove(job)
                            p.job = job
                            progress.job_started(job)
                            p.inbox.put(job)
                elif not any(p.job is not None for p in procs.values()):
                    break
                if waiting and failure is None and not any(p.job is not None for p in procs.values()) \
                        and all(p.ready for p in procs.values()):
                    raise BelugaError("jobs are waiting for parents that are neither done nor scheduled: "
                                      + ", ".join(j.id[:12] for j in waiting[:5]))
                self._check_alive(procs, start, waiting, attempts)
                message = _next_message(procs)
                if message is None:
                    continue
                kind, wid, payload = message
                origin = procs.get(wid)
                if origin is None:
                    continue  # a message from a worker replaced meanwhile
                if kind == "ready":
                    origin.ready = True
                elif kind == "step":
                    job_id, phase, s, n = payload
                    if origin.job is not None and origin.job.id == job_id:
                        progress.job_step(origin.job, phase, s, n)
                elif kind == "result":
                    job, origin.job = origin.job, None
                    if job is None or job.id != payload.id:
                        continue
                    on_result(payload)
                    deps.finished(job.id)
                    progress.job_finished(job)
                elif kind == "error":
                    job_id, tb = payload
                    origin.job = None
                    if failure is None:
                        failure = (by_id[job_id], tb)
        finally:
            for p in procs.values():
                if p.process.is_alive():
                    p.inbox.put(None)
            deadline = time.monotonic() + 10
            for p in procs.values():
                p.process.join(timeout=max(0.1, deadline - time.monotonic()))
                if p.process.is_alive():
                    p.process.terminate()
                    p.process.join(timeout=5)
        if failure is not None:
            job, tb = failure
            raise BelugaError(f"job {job.id[:12]} ({job.config}/{job.method}/{job.scenario}) failed in a worker:\n"
                              f"{tb.rstrip()}")

    def _check_alive(self, procs: dict[int, _Proc], start: Any, waiting: list[Job],
                     attempts: dict[str, int]) -> None:
        """Replace dead workers; put the job a dead worker held back at the front of the queue."""
        for wid, p in list(procs.items()):
            alive = p.process.is_alive()
            if alive and (p.ready or time.monotonic() - p.started < START_TIMEOUT):
                continue
            if alive:
                p.process.terminate()
            p.results.close()
            del procs[wid]
            job = p.job
            if job is None and not p.ready:
                raise BelugaError(f"a worker process failed to start (exit code {p.process.exitcode}); "
                                  "run with the local executor to see why")
            if job is not None:
                attempts[job.id] = attempts.get(job.id, 0) + 1
                if attempts[job.id] > self.max_retries:
                    raise BelugaError(f"job {job.id[:12]} ({job.config}/{job.method}/{job.scenario}) killed its "
                                      f"worker {attempts[job.id]} times (last exit code {p.process.exitcode}); "
                                      "giving up. Finished jobs are in the store; re-running resumes.")
                waiting.insert(0, job)
            start(p.slot)
