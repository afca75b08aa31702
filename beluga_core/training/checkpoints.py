"""Checkpoints inside a job: its training state saved at an interval, so that a killed run resumes mid-fold.

A checkpoint is one safetensors file per job, ``CACHE/checkpoints/JOB_ID.safetensors``, written atomically
(a reader sees the old file or the new one, never half of one) and deleted once the job's result is in the
store. It holds every tensor of the training state (weights, optimizer moments, the method's tensors, the torch,
CUDA and numpy generators, the loss sum) and, as JSON in the safetensors header, the rest: which job and
beluga version wrote it, the stage and step, the optimizer's groups, the schedule, the method's other state and
Python's generator. Nothing is pickled, so loading a file can execute nothing, whoever wrote it; a file that is
cut short, altered, from another job or another beluga version is discarded with a warning and the job starts
over (``CheckpointRejected`` says why).

The data order is not saved: a stage's batches come from a generator seeded by the job, so a resumed stage
replays it to the saved step (cheap: batches are made, not encoded or trained). What a method keeps between
updates travels through ``Method.state_dict`` / ``load_state_dict``; a method that does not define its state
(``Method.checkpointable``) trains without checkpoints.

The file itself (format, checks, the folder it lives in) is ``training.checkpoint_file``'s; the "auto" interval
rule and the dry run's estimates are ``training.checkpoint_interval``'s.
"""

from __future__ import annotations

import json
import logging
import random
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from beluga_core.config.executor_spec import CheckpointEvery
from beluga_core.contracts.methods import Method
from beluga_core.core.errors import BelugaError
from beluga_core.training.checkpoint_file import CheckpointRejected, CheckpointStore, decode, encode
from beluga_core.training.checkpoint_interval import (
    AUTO_MIN_JOB_SECONDS,
    PROJECT_AFTER_S,
    RECENT_STEPS,
    auto_interval,
    estimated_save_seconds,
    training_state_bytes,
)

log = logging.getLogger("beluga.checkpoints")


# -- what a stage saves and loads ----------------------------------------------------------------------------
def _split(prefix: str, state: dict[str, Any], tensors: dict[str, torch.Tensor]) -> dict[str, Any]:
    """Move the tensors of ``state`` into ``tensors`` (under ``prefix/key``); return the JSON rest."""
    rest: dict[str, Any] = {}
    for key, value in state.items():
        if isinstance(value, torch.Tensor):
            tensors[f"{prefix}/{key}"] = value
        else:
            rest[key] = value
    return rest


def _joined(prefix: str, rest: dict[str, Any], tensors: dict[str, torch.Tensor]) -> dict[str, Any]:
    start = f"{prefix}/"
    return {**rest, **{k[len(start):]: v for k, v in tensors.items() if k.startswith(start) and "/" not in
                       k[len(start):]}}


def _rng_state(tensors: dict[str, torch.Tensor]) -> dict[str, Any]:
    tensors["rng/torch"] = torch.get_rng_state()
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        for i, s in enumerate(torch.cuda.get_rng_state_all()):
            tensors[f"rng/cuda/{i}"] = s
    kind, keys, pos, has_gauss, cached = np.random.get_state()
    tensors["rng/numpy"] = torch.from_numpy(np.asarray(keys, dtype=np.int64))
    version, internal, gauss_next = random.getstate()
    return {"numpy": [kind, int(pos), int(has_gauss), float(cached)],
            "python": [version, list(internal), gauss_next]}


def _set_rng_state(rest: dict[str, Any], tensors: dict[str, torch.Tensor]) -> None:
    torch.set_rng_state(tensors["rng/torch"])
    cuda = sorted((k for k in tensors if k.startswith("rng/cuda/")), key=lambda k: int(k.rsplit("/", 1)[1]))
    if cuda and torch.cuda.is_available():
        torch.cuda.set_rng_state_all([tensors[k] for k in cuda])
    kind, pos, has_gauss, cached = rest["numpy"]
    np.random.set_state((kind, tensors["rng/numpy"].numpy().astype(np.uint32), pos, has_gauss, cached))
    version, internal, gauss_next = rest["python"]
    random.setstate((version, tuple(internal), gauss_next))


@dataclass(frozen=True)
class Resume:
    """A checked checkpoint: the stage and step it stands at, and its state."""

    stage: int
    step: int
    tensors: dict[str, torch.Tensor]
    meta: dict[str, Any]

    def describe(self) -> str:
        stage = f"stage {self.stage + 1} of {self.meta['n_stages']}, " if self.meta["n_stages"] > 1 else ""
        return f"{stage}step {self.step} of {self.meta['n_steps']}"

    @property
    def prior(self) -> tuple[int, int, float]:
        """(steps, examples, seconds) of the stages before this one."""
        steps, examples, seconds = self.meta["prior"]
        return int(steps), int(examples), float(seconds)

    def check_fits(self, model: torch.nn.Module, optimizer: torch.optim.Optimizer, n_steps: int) -> None:
        """Raise ``CheckpointRejected`` unless the state fits this stage's model, optimizer and length: what is
        checked before anything is changed, so a rejected checkpoint leaves the job as it was."""
        if self.meta["n_steps"] != n_steps:
            raise CheckpointRejected(f"its stage has {self.meta['n_steps']} steps, this one {n_steps}")
        ours = {k: (tuple(v.shape), v.dtype) for k, v in model.state_dict().items()}
        theirs = {k[len("model/"):]: (tuple(v.shape), v.dtype) for k, v in self.tensors.items()
                  if k.startswith("model/")}
        if ours != theirs:
            differ = sorted(set(ours) ^ set(theirs)) or sorted(k for k in ours if ours[k] != theirs[k])
            raise CheckpointRejected(f"its weights do not fit this model ({len(differ)} differ, e.g. {differ[0]})")
        groups = optimizer.state_dict()["param_groups"]
        saved = self.meta["optimizer"]["param_groups"]
        if [len(g["params"]) for g in groups] != [len(g["params"]) for g in saved]:
            raise CheckpointRejected("its optimizer's parameter groups differ from this stage's")
        params = [p for g in optimizer.param_groups for p in g["params"]]
        for i, p in enumerate(params):
            for key in ("exp_avg", "exp_avg_sq"):
                t = self.tensors.get(f"optimizer/{i}/{key}")
                if t is not None and tuple(t.shape) != tuple(p.shape):
                    raise CheckpointRejected(f"its optimizer state {i}/{key} has shape {tuple(t.shape)}, the "
                                             f"parameter {tuple(p.shape)}")

    def restore(self, model: torch.nn.Module, optimizer: torch.optim.Optimizer,
                scheduler: torch.optim.lr_scheduler.LRScheduler, method: Method,
                device: torch.device) -> tuple[int, int, torch.Tensor]:
        """Load the state into the stage's objects; returns (steps, examples, loss sum) of the stage so far."""
        model.load_state_dict({k[len("model/"):]: v for k, v in self.tensors.items() if k.startswith("model/")})
        saved = self.meta["optimizer"]
        state: dict[int, dict[str, Any]] = {}
        for key, rest in saved["state"].items():
            i = int(key)
            state[i] = _joined(f"optimizer/{i}", rest, self.tensors)
        groups = [{**g, "betas": tuple(g["betas"])} if "betas" in g else g for g in saved["param_groups"]]
        optimizer.load_state_dict({"state": state, "param_groups": groups})
        scheduler.load_state_dict(self.meta["scheduler"])
        method.load_state_dict({k: (v.to(device) if isinstance(v, torch.Tensor) else v)
                                for k, v in _joined("method", self.meta["method"], self.tensors).items()})
        _set_rng_state(self.meta["rng"], self.tensors)
        return int(self.meta["step"]), int(self.meta["examples"]), self.tensors["loop/loss_sum"].to(device)


def stage_blob(job_id: str, stage: int, n_stages: int, step: int, n_steps: int, examples: int,
               loss_sum: torch.Tensor, prior: tuple[int, int, float], model: torch.nn.Module,
               optimizer: torch.optim.Optimizer, scheduler: torch.optim.lr_scheduler.LRScheduler,
               method: Method, device: torch.device) -> bytes:
    """The checkpoint of ``job_id`` after ``step`` updates of stage ``stage``."""
    tensors: dict[str, torch.Tensor] = {f"model/{k}": v for k, v in model.state_dict().items()}
    opt = optimizer.state_dict()
    opt_state = {str(i): _split(f"optimizer/{i}", s, tensors) for i, s in opt["state"].items()}
    method_state = method.state_dict()
    assert method_state is not None, "a method without state_dict trains without checkpoints"
    rest = _split("method", method_state, tensors)
    try:
        json.dumps(rest)
    except (TypeError, ValueError) as exc:
        raise BelugaError(f"method {type(method).__name__}: state_dict() returned a value that is neither a tensor "
                          f"nor JSON ({exc}); a checkpoint carries tensors and JSON values only (numbers, strings, "
                          "lists, dicts)") from None
    tensors["loop/loss_sum"] = loss_sum
    # saved_at: when the state was taken (wall clock), for `store info` and the drills' accounting of lost work.
    meta = {"job_id": job_id, "device": device.type, "saved_at": time.time(), "stage": stage, "n_stages": n_stages,
            "step": step,
            "n_steps": n_steps, "examples": examples, "prior": list(prior),
            "optimizer": {"state": opt_state, "param_groups": opt["param_groups"]},
            "scheduler": scheduler.state_dict(), "method": rest,
            "rng": _rng_state(tensors)}
    return encode(tensors, meta)


# -- when to save ----------------------------------------------------------------------------------------------
@dataclass
class JobCheckpoints:
    """One job's checkpoints: the one to resume from, and when the next save is due.

    ``interval`` is the config's; with "auto" a save is due once ``auto_interval`` has passed since the last one:
    5 % of the job's projected time (projected from the measured step rate), but at least 50 save times (the last
    save's, or before any, estimated from ``training_state_bytes``) and 30 s; never in a job projected under a
    minute."""

    store: CheckpointStore
    job_id: str
    interval: CheckpointEvery
    device: torch.device
    warn: Callable[[str], None] = field(default=log.warning)
    saves: int = 0
    save_seconds: float = 0.0   # the last save's
    # What a save writes (``training_state_bytes``), set as each stage starts: a save's time until one is measured.
    state_bytes: int = 0
    bytes_written: int = 0
    _last: float = field(default_factory=lambda: time.perf_counter())
    _stage_start: float = field(default_factory=lambda: time.perf_counter())
    _before_stage: float = 0.0   # seconds of the job's earlier stages
    _first_step: int = 0   # the stage's step when this process took it up (> 0 when resumed)
    _last_step_end: float = field(default_factory=lambda: time.perf_counter())
    # The last few steps' durations: batches padded to their longest input vary several-fold, and a save is
    # anticipated by the longest recent step, not the last one.
    _recent_steps: deque[float] = field(default_factory=lambda: deque(maxlen=RECENT_STEPS))

    def resume(self, n_stages: int) -> Resume | None:
        """The job's checkpoint, checked; a bad one is discarded with a warning (None: start over)."""
        try:
            blob = self.store.load(self.job_id)
        except OSError as exc:
            self.warn(f"checkpoint of job {self.job_id[:12]} unreadable ({exc}); the job starts over")
            return None
        if blob is None:
            return None
        try:
            return self._checked(blob, self.job_id, n_stages)
        except (CheckpointRejected, KeyError, ValueError, TypeError) as exc:
            self.reject(str(exc))
            return None

    def resume_rung(self, store: CheckpointStore, job_id: str, n_stages: int) -> Resume | None:
        """The state the previous rung's job ``job_id`` kept (a halving search's, ``planning.halving``), checked; None
        (with a warning where it is there but unusable): this rung trains from the start, to the same model."""
        try:
            blob = store.load(job_id)
            return None if blob is None else self._checked(blob, job_id, n_stages)
        except (OSError, CheckpointRejected, KeyError, ValueError, TypeError) as exc:
            self.warn(f"the state rung job {job_id[:12]} kept is unusable ({exc}); job {self.job_id[:12]} trains "
                      "from the start")
            return None

    def _checked(self, blob: bytes, job_id: str, n_stages: int) -> Resume:
        tensors, meta = decode(blob, job_id)
        if meta.get("n_stages") != n_stages or not 0 <= int(meta["stage"]) < n_stages:
            raise CheckpointRejected(f"stage {meta.get('stage')} of {meta.get('n_stages')}, this job has {n_stages}")
        if meta.get("device") != self.device.type:
            raise CheckpointRejected(f"written on {meta.get('device')}, this worker trains on {self.device.type}")
        return Resume(int(meta["stage"]), int(meta["step"]), tensors, meta)

    def reject(self, why: str) -> None:
        self.warn(f"checkpoint of job {self.job_id[:12]} discarded: {why}; the job starts over")
        self.store.discard(self.job_id)

    def stage_started(self, seconds_before: float, step: int = 0) -> None:
        self._stage_start = self._last_step_end = time.perf_counter()
        self._before_stage = seconds_before
        self._first_step = step

    def due(self, step: int, n_steps: int) -> bool:
        """Whether a save is due after ``step`` of the stage's ``n_steps`` updates (never after its last)."""
        if self.interval.mode == "off" or step >= n_steps:
            return False
        if self.interval.mode == "steps":
            return step % int(self.interval.every) == 0
        now = time.perf_counter()
        self._recent_steps.append(now - self._last_step_end)
        self._last_step_end = now
        # Saved at the step that would otherwise carry the time since the last save past the interval: a kill then
        # loses at most one interval of training, not an interval and a step.
        since = now - self._last + min(max(self._recent_steps), now - self._last)
        if self.interval.mode == "seconds":
            return since >= self.interval.every
        in_stage = now - self._stage_start
        if in_stage < PROJECT_AFTER_S or step <= self._first_step:
            return False
        projected = self._before_stage + in_stage / (step - self._first_step) * n_steps
        save = self.save_seconds or estimated_save_seconds(self.state_bytes)   # before the first save: estimated
        return projected >= AUTO_MIN_JOB_SECONDS and since >= auto_interval(projected, save)

    def save(self, blob: Callable[[], bytes]) -> None:
        start = time.perf_counter()
        # Said before the state is taken: a kill during the encoding or the write then shows where training
        # stopped (the fold drill separates the save's own time from the training it loses).
        log.debug("job %s: checkpoint %d: taking the state", self.job_id[:12], self.saves + 1)
        data = blob()
        try:
            self.store.save(self.job_id, data)
        except OSError as exc:  # a full disk costs the checkpoint, not the job
            self.warn(f"checkpoint of job {self.job_id[:12]} not saved ({exc}); the job goes on without it")
        self._last = self._last_step_end = time.perf_counter()   # the save's time is no step's
        self.save_seconds = self._last - start
        self.saves += 1
        self.bytes_written = len(data)
        log.debug("job %s: checkpoint %d saved (%d bytes, %.2f s)", self.job_id[:12], self.saves, len(data),
                  self.save_seconds)


def checkpointable(method: Method, hparams: dict[str, Any]) -> bool:
    """Whether a job of ``method`` can resume from checkpoints: every stage's method says what its state is."""
    return all(type(m).checkpointable() for m, _ in method.stages(hparams))


@dataclass
class StageCheckpoints:
    """A stage's part of its job's checkpoints: where it stands in the job, and the state to resume it from."""

    job: JobCheckpoints
    stage: int
    n_stages: int
    prior: tuple[int, int, float]   # (steps, examples, seconds) of the stages before
    resume: Resume | None = None
    # Where the stage's state is kept when it stops short of its schedule (a halving rung the next one goes on from).
    keep_to: CheckpointStore | None = None

    def resumed(self, updates: Iterator[Any], model: torch.nn.Module, optimizer: torch.optim.Optimizer,
                scheduler: torch.optim.lr_scheduler.LRScheduler, method: Method, n_steps: int,
                device: torch.device) -> tuple[int, int, torch.Tensor] | None:
        """Bring a stage that has a checkpoint to its step: check it fits, replay the data order to the step,
        load the state. Returns (steps, examples, loss sum) so far, or None for a stage that starts afresh.
        Raises ``CheckpointRejected`` before changing anything when the checkpoint does not fit."""
        self.job.state_bytes = training_state_bytes(model)
        if self.resume is None:
            self.job.stage_started(self.prior[2])
            return None
        self.resume.check_fits(model, optimizer, n_steps)
        for i in range(self.resume.step):   # the data order: the stage's seeded generator, replayed
            if next(updates, None) is None:
                raise CheckpointRejected(f"its step {self.resume.step} is past the stage's data ({i} updates)")
        try:
            restored = self.resume.restore(model, optimizer, scheduler, method, device)
        except Exception as exc:  # past the checks, yet not loadable: the worker starts the job over from scratch
            raise CheckpointRejected(f"its state does not load ({type(exc).__name__}: {exc})") from exc
        self.job.stage_started(self.prior[2], self.resume.step)
        return restored

    def due(self, step: int, n_steps: int) -> bool:
        return self.job.due(step, n_steps)

    def keep(self, step: int, n_steps: int, examples: int, loss_sum: torch.Tensor, model: torch.nn.Module,
             optimizer: torch.optim.Optimizer, scheduler: torch.optim.lr_scheduler.LRScheduler, method: Method,
             device: torch.device) -> None:
        """Keep the state the stage stopped at in ``keep_to``, under the job's id (a failed write costs the next rung
        a training from the start, not this job)."""
        assert self.keep_to is not None
        blob = stage_blob(self.job.job_id, self.stage, self.n_stages, step, n_steps, examples, loss_sum, self.prior,
                          model, optimizer, scheduler, method, device)
        try:
            self.keep_to.save(self.job.job_id, blob)
        except OSError as exc:
            self.job.warn(f"the state of rung job {self.job.job_id[:12]} not kept ({exc}); the next rung trains it "
                          "from the start")

    def save(self, step: int, n_steps: int, examples: int, loss_sum: torch.Tensor, model: torch.nn.Module,
             optimizer: torch.optim.Optimizer, scheduler: torch.optim.lr_scheduler.LRScheduler, method: Method,
             device: torch.device) -> None:
        self.job.save(lambda: stage_blob(self.job.job_id, self.stage, self.n_stages, step, n_steps, examples,
                                         loss_sum, self.prior, model, optimizer, scheduler, method, device))
