"""The multi-worker executor: one worker process per GPU (or several per GPU), or N CPU worker processes.

The coordinator (this process) stays the only writer: each worker sends its progress and finished jobs back
over its own pipe, and the shared dispatch loop (``scheduling.dispatch``) commits them here. Each worker is a
long-lived ``Worker`` (sharing model, pristine weights and tokenized inputs across its jobs), so results depend
only on the job, not on which worker ran it — with the same device type and thread count per fold, the numbers
equal the local executor's.

- Jobs whose parent (the IID model) is still waiting or running wait for it; the parent's weights reach the
  other workers through the cache folder (the worker writes them before reporting the job done).
- No channel is shared, and no process writes through a feeder thread: a worker killed in the middle of a
  message (OOM killer, segfault, ``kill -9``) breaks only its own pipe. The coordinator waits on every pipe
  and every worker's process sentinel together (``multiprocessing.connection.wait``), so a death is seen at
  once, whether or not the worker was sending; the worker is replaced and its job retried, up to
  ``options.max_retries`` times (default 2); then the run stops naming the job. A job that raises is reported
  with its traceback once the jobs in flight on the other workers have finished.
- Workers are forked from a fork server that has imported torch, transformers and the worker code once (spawned
  where there is no fork server: Windows). A worker, or the replacement of a dead one, then starts in well under
  a second instead of importing them again (~6 s on 2 CPU cores). The server itself never runs torch: forking a
  process that has started torch's thread pools or a CUDA context can hang, so the coordinator is never forked.

How many workers, on which devices: ``sizing.plan_workers`` (``[executor] workers``; ``auto`` measures on GPUs
what one worker takes). GPU paths (one worker per ``cuda:i``, several workers sharing one GPU) follow the same
code; they are untested on a GPU in this repository's CI.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import pickle
import signal
import socket
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

from beluga_core.config.executor_spec import ExecutorSpec
from beluga_core.core.errors import BelugaError
from beluga_core.execution.executors.base import Executor
from beluga_core.execution.scheduling import (
    Backend,
    Event,
    Failed,
    Finished,
    Lost,
    StepFn,
    warm_token_cache,
    worker_class,
)
from beluga_core.execution.sizing import Slot, WorkerMemory, Workers, gpu_worker_memory, plan_workers
from beluga_core.planning.jobs import Job
from beluga_core.planning.plan import Plan

# How often a worker forwards step progress (seconds); steps can be far faster than a terminal refresh.
STEP_REPORT_EVERY = 0.5
# A worker that has not started within this many seconds is treated as dead.
START_TIMEOUT = 900.0


def _worker_main(plan: Plan, spec: ExecutorSpec, slot: Slot, cache_dir: str, inbox: Connection,
                 outbox: Connection) -> None:
    from beluga_core.training.models import configure_threads

    # Ctrl-C reaches every process of the terminal's group: the coordinator handles it and stops workers.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    configure_threads(slot.threads)
    if slot.device.startswith("cuda"):
        import torch

        # Otherwise every worker also opens a context on cuda:0 (pinned copies, caching allocator).
        torch.cuda.set_device(slot.device)
    worker = worker_class(spec)(plan, slot.device, Path(cache_dir))
    outbox.send(("ready", None))
    parent = mp.parent_process()
    last: dict[str, float] = {}   # per job, when its progress was last sent

    def step(job: Job, phase: str, s: int, n: int) -> None:
        now = time.monotonic()
        if phase == "eval" or now - last.get(job.id, 0.0) >= STEP_REPORT_EVERY or s == n:
            last[job.id] = now
            outbox.send(("step", (job.id, phase, s, n)))

    while True:
        if not inbox.poll(2.0):
            if parent is not None and not parent.is_alive():
                return  # the coordinator was killed (kill -9): do not linger as an orphan
            continue
        try:
            message: Job | tuple[list[Job], dict[str, Any]] | None = inbox.recv()
        except EOFError:
            return  # the coordinator closed the pipe
        if message is None:
            return
        last.clear()
        if isinstance(message, Job):
            try:
                result = worker.run(message, partial(step, message))
            except BaseException:  # reported to the coordinator, which decides; the worker stays usable
                outbox.send(("error", (message.id, traceback.format_exc())))
                continue
            outbox.send(("result", result))
            continue
        members, pack = message
        unfinished = {j.id for j in members}
        try:
            for result in worker.run_pack(members, step, pack=pack):
                unfinished.discard(result.id)
                outbox.send(("result", result))
        except BaseException:   # the pack failed: every member still in it fails with it
            tb = traceback.format_exc()
            for job_id in sorted(unfinished):
                outbox.send(("error", (job_id, tb)))


# What the fork server imports before it forks the first worker: the heavy part of every worker's start-up.
_PRELOAD = ["beluga_core.execution.worker", "transformers.modeling_utils"]


def _context() -> Any:
    if "forkserver" in mp.get_all_start_methods():
        ctx = mp.get_context("forkserver")
        ctx.set_forkserver_preload(_PRELOAD)  # ignored when the server already runs (a second run in-process)
        return ctx
    return mp.get_context("spawn")


@dataclass(eq=False)
class _Proc:
    slot: Slot
    process: Any
    # Both pipes are this worker's alone, written synchronously (no feeder thread): a process that dies
    # mid-message breaks only its own channel.
    jobs: Connection
    results: Connection
    started: float
    ready: bool = False
    assigned: list[Job] = field(default_factory=list)   # its job, or the members of its pack still running


def _exit_reason(process: Any) -> str:
    code = process.exitcode
    if code is not None and code < 0:
        try:
            return f"its worker process was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"its worker process was killed by signal {-code}"
    return f"its worker process exited (code {code})"


class WorkerPool(Backend):
    """Long-lived worker processes, one job (or pack) each at a time; a dead one is replaced at once."""

    packs = True

    def __init__(self, spec: ExecutorSpec, plan: Plan, slots: Sequence[Slot], cache_dir: Path) -> None:
        self.spec = spec
        self.cache_dir = str(cache_dir)
        self.ctx = _context()
        self.plan = plan.for_workers()
        self.procs: list[_Proc] = []
        for slot in slots:
            self._start(slot)

    def _start(self, slot: Slot) -> None:
        jobs_out, jobs_in = self.ctx.Pipe(duplex=False)
        results_in, results_out = self.ctx.Pipe(duplex=False)
        p = self.ctx.Process(target=_worker_main,
                             args=(self.plan, self.spec, slot, self.cache_dir, jobs_out, results_out),
                             name="beluga-worker", daemon=True)
        p.start()
        # The worker holds the only other ends: its death closes both channels.
        jobs_out.close()
        results_out.close()
        self.procs.append(_Proc(slot, p, jobs_in, results_in, time.monotonic()))

    def idle(self) -> int:
        return sum(not p.assigned for p in self.procs)

    def submit(self, job: Job) -> None:
        self._send([job], job)

    def submit_pack(self, jobs: Sequence[Job], pack: dict[str, object]) -> None:
        self._send(list(jobs), (list(jobs), pack))

    def _send(self, jobs: list[Job], message: object) -> None:
        # A worker still starting takes it too (it reads it once ready), so a retried job waits for nobody.
        p = min((p for p in self.procs if not p.assigned), key=lambda p: not p.ready)
        p.assigned = jobs
        with contextlib.suppress(OSError):  # the worker is dead: its sentinel reports it, with the job, in events()
            p.jobs.send(message)

    def events(self, step: StepFn) -> list[Event]:
        out: list[Event] = []
        while not out:
            by_channel = {p.results: p for p in self.procs}
            by_sentinel = {p.process.sentinel: p for p in self.procs}
            ready = wait([*by_channel, *by_sentinel], timeout=5.0)
            for obj in ready:
                if obj in by_channel:
                    p = by_channel[obj]
                    if p in self.procs and not self._receive(p, step, out):
                        self._replace(p, "its channel broke mid-message", out)
            for obj in ready:
                if obj in by_sentinel:
                    p = by_sentinel[obj]
                    if p in self.procs:
                        # What it sent before dying still counts (a result sent, then killed).
                        while p.results.poll() and self._receive(p, step, out):
                            pass
                        if p in self.procs:
                            self._replace(p, _exit_reason(p.process), out)
            for p in list(self.procs):
                if not p.ready and time.monotonic() - p.started > START_TIMEOUT:
                    p.process.kill()
                    p.process.join(5)
                    self._replace(p, f"its worker did not start within {START_TIMEOUT:.0f} s", out)
        return out

    def _receive(self, p: _Proc, step: StepFn, out: list[Event]) -> bool:
        """Handle one message of ``p``; False when its channel is broken (the worker died mid-message)."""
        try:
            kind, payload = p.results.recv()
        except (EOFError, OSError, pickle.UnpicklingError):
            return False
        if kind == "ready":
            p.ready = True
            return True
        job_id = payload.id if kind == "result" else payload[0]
        job = next((j for j in p.assigned if j.id == job_id), None)
        if job is None:
            return True
        if kind == "step":
            step(job, *payload[1:])
        elif kind in ("result", "error"):
            p.assigned.remove(job)
            out.append(Finished(job, payload) if kind == "result" else Failed(job, payload[1], worker=_where(p)))
        return True

    def _replace(self, p: _Proc, why: str, out: list[Event]) -> None:
        self.procs.remove(p)
        p.jobs.close()
        p.results.close()
        p.process.join(timeout=1)  # its channel broke: it is exiting, or broken beyond use
        if p.process.is_alive():
            p.process.kill()
            p.process.join(timeout=5)
        code = p.process.exitcode
        if not p.ready and code is not None and code > 0:
            raise BelugaError(f"a worker process failed to start (exit code {code}); run with the local "
                              "executor to see why")
        out += [Lost(job, why, worker=_where(p)) for job in p.assigned]
        self._start(p.slot)

    def close(self) -> None:
        for p in self.procs:
            with contextlib.suppress(OSError):
                p.jobs.send(None)
        deadline = time.monotonic() + 10
        for p in self.procs:
            p.process.join(timeout=max(0.1, deadline - time.monotonic()))
            if p.process.is_alive():
                p.process.terminate()
                p.process.join(timeout=5)
            p.jobs.close()
            p.results.close()
        self.procs.clear()


def _where(p: _Proc) -> str:
    return f"multi worker pid {p.process.pid} ({p.slot.device}, {p.slot.threads} thread(s)) on {socket.gethostname()}"


class MultiExecutor(Executor):
    trains_packs = True

    def size_workers(self, plan: Plan) -> Workers:
        device = self.spec.device if self.spec.device.startswith("cuda:") else "cuda:0"

        def memory() -> WorkerMemory:
            return gpu_worker_memory(plan, device)

        return plan_workers(self.spec, memory=memory)

    def open(self, plan: Plan, jobs: Sequence[Job], cache_dir: Path) -> Backend:
        slots = list(self.workers(plan).slots)[:max(1, len(jobs))]
        warm_token_cache(plan, cache_dir)
        return WorkerPool(self.spec, plan, slots, cache_dir)
