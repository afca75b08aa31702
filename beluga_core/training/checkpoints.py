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

Long: the file format, what a stage saves and loads, and when it saves are one contract: the format's version
and the checks before loading guard all three together, and a change to one changes the others.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import random
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import safetensors.torch
import torch

import beluga_core
from beluga_core.config.executor_spec import CheckpointEvery
from beluga_core.contracts.methods import Method
from beluga_core.core.errors import BelugaError
from beluga_core.core.io import atomic_write

log = logging.getLogger("beluga.checkpoints")

FORMAT = "beluga-checkpoint/1"
# "auto" (``auto_interval``): the interval is the largest of
# - AUTO_SHARE of the job's expected time: a kill then loses at most 5 % of the job;
# - AUTO_SAVE_FACTOR save times: saves never cost more than 1/50 = 2 % of the training time. Before a job's first
#   save is measured (and in the dry run) a save's time is estimated from the state it writes (weights, AdamW's
#   moments) at AUTO_WRITE_BYTES_PER_S;
# - AUTO_MIN_INTERVAL_S: never more often than every 30 s, whatever the state's size. A killed job's restart
#   costs ~15 s before training resumes (imports, building the model: benchmarks/drills/RESULTS.md), so saving
#   more often cuts the work a kill loses by less than the restart costs anyway;
# and no save at all in a job expected under AUTO_MIN_JOB_SECONDS (a kill loses under a minute), nor where the
# interval is longer than the job (saves would cost more than they can save).
AUTO_SHARE = 0.05
AUTO_SAVE_FACTOR = 50.0
AUTO_MIN_INTERVAL_S = 30.0
AUTO_MIN_JOB_SECONDS = 60.0
# A save's rate when none is measured yet: the slowest the fold drill measured on a loaded 2-core machine, the
# 272-MB state of MiniLM (encoding, digest, atomic write) in 2.5 s, ≈ 104 MiB/s, rounded down
# (benchmarks/drills/RESULTS.md, "What checkpoints cost"). Deliberately slow: a faster disk only saves more often
# once its first save is measured.
AUTO_WRITE_BYTES_PER_S = 100 * 2 ** 20
# A stage's expected time is projected from its measured step rate once this many seconds have passed (the
# first steps include one-off costs: allocation, lazily built kernels).
PROJECT_AFTER_S = 2.0
RECENT_STEPS = 16


class CheckpointRejected(Exception):
    """A checkpoint that must not be loaded, and why."""


class CheckpointStore(Protocol):
    """Where a worker's checkpoints go: a folder (local and multi-process executors) or, on Ray, the driver."""

    def load(self, job_id: str) -> bytes | None: ...

    def save(self, job_id: str, blob: bytes) -> None: ...

    def discard(self, job_id: str) -> None: ...


class FolderCheckpoints:
    """Checkpoints as files in one folder (the run's cache): what survives a killed process."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def path(self, job_id: str) -> Path:
        return self.folder / f"{job_id}.safetensors"

    def load(self, job_id: str) -> bytes | None:
        path = self.path(job_id)
        return path.read_bytes() if path.exists() else None

    def save(self, job_id: str, blob: bytes) -> None:
        self._drop_partial(job_id)
        atomic_write(self.path(job_id), blob)

    def discard(self, job_id: str) -> None:
        self._drop_partial(job_id)
        self.path(job_id).unlink(missing_ok=True)

    def _drop_partial(self, job_id: str) -> None:
        """Remove the half-written files of saves killed mid-write (SIGKILL skips atomic_write's clean-up): one
        job is saved by one process at a time, so any of its temporaries is dead when a new save starts."""
        for tmp in self.folder.glob(f".{self.path(job_id).name}.*.tmp"):
            tmp.unlink(missing_ok=True)

    def job_ids(self) -> set[str]:
        return {p.name.removesuffix(".safetensors") for p in self.folder.glob("*.safetensors")}


def checkpoint_folder(cache_dir: Path) -> Path:
    return cache_dir / "checkpoints"


# -- the file ------------------------------------------------------------------------------------------------
def _digest(tensors: dict[str, torch.Tensor]) -> str:
    h = hashlib.sha256()
    for name in sorted(tensors):
        t = tensors[name]
        h.update(f"{name}|{t.dtype}|{tuple(t.shape)}|".encode())
        h.update(t.detach().reshape(-1).contiguous().view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def encode(tensors: dict[str, torch.Tensor], meta: dict[str, Any]) -> bytes:
    """The checkpoint file: ``tensors`` (on the CPU) and ``meta`` with the format, version and a digest."""
    cpu: dict[str, torch.Tensor] = {}
    seen: set[int] = set()
    for k, v in tensors.items():
        t = v.detach().to("cpu").contiguous()
        if t.numel() and t.untyped_storage().data_ptr() in seen:   # tied weights: safetensors refuses shared memory
            t = t.clone()
        seen.add(t.untyped_storage().data_ptr())
        cpu[k] = t
    header = {**meta, "format": FORMAT, "beluga": beluga_core.__version__, "digest": _digest(cpu)}
    return safetensors.torch.save(cpu, metadata={"beluga": json.dumps(header)})


def read_header(blob: bytes) -> dict[str, Any]:
    """The beluga part of a checkpoint's header, read without touching its tensors."""
    if len(blob) < 8:
        raise CheckpointRejected(f"cut short ({len(blob)} bytes)")
    n = int.from_bytes(blob[:8], "little")
    if n <= 0 or 8 + n > len(blob):
        raise CheckpointRejected("not a safetensors file, or cut short (its header runs past the end)")
    try:
        header = json.loads(blob[8:8 + n])
        meta = json.loads(header["__metadata__"]["beluga"])
    except (ValueError, KeyError, TypeError) as exc:
        raise CheckpointRejected(f"no beluga checkpoint header ({type(exc).__name__})") from None
    if not isinstance(meta, dict):
        raise CheckpointRejected("its beluga header is not a JSON object")
    return meta


def _length(blob: bytes) -> int:
    """The file length a safetensors header announces: the header, then every tensor's bytes."""
    n = int.from_bytes(blob[:8], "little")
    header = json.loads(blob[8:8 + n])
    ends = [int(v["data_offsets"][1]) for k, v in header.items() if k != "__metadata__"]
    return 8 + n + max(ends, default=0)


def peek(path: Path) -> dict[str, Any]:
    """A checkpoint file's beluga header, reading its first bytes only (``beluga store info``); a file whose
    length is not the one its header announces is rejected (cut short)."""
    with path.open("rb") as f:
        head = f.read(8)
        n = int.from_bytes(head, "little") if len(head) == 8 else 0
        blob = head + f.read(n) if 0 < n < 2**24 else head
    meta = read_header(blob)
    size, expected = path.stat().st_size, _length(blob)
    if size != expected:
        raise CheckpointRejected(f"cut short ({size:,} of {expected:,} bytes)" if size < expected else
                                 f"{size - expected:,} bytes past its end")
    return meta


def decode(blob: bytes, job_id: str) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    """A checkpoint's tensors and header, checked: format, beluga version, job and digest. Raises
    ``CheckpointRejected`` for anything else."""
    meta = read_header(blob)
    if meta.get("format") != FORMAT:
        raise CheckpointRejected(f"format {meta.get('format')!r}, expected {FORMAT!r}")
    if meta.get("beluga") != beluga_core.__version__:
        raise CheckpointRejected(f"written by beluga {meta.get('beluga')}, this is {beluga_core.__version__}")
    if meta.get("job_id") != job_id:
        raise CheckpointRejected(f"written by job {str(meta.get('job_id'))[:12]}, not this one ({job_id[:12]})")
    expected = _length(blob)
    if expected != len(blob):
        raise CheckpointRejected(f"cut short ({len(blob):,} of {expected:,} bytes)" if expected > len(blob) else
                                 f"{len(blob) - expected:,} bytes past its end")
    try:
        tensors = safetensors.torch.load(blob)
    except Exception as exc:  # safetensors raises its own error types for a damaged file
        raise CheckpointRejected(f"its tensors do not load ({type(exc).__name__}: {exc})") from None
    if _digest(tensors) != meta.get("digest"):
        raise CheckpointRejected("its tensors differ from the digest written with them (the file was altered)")
    return tensors, meta


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
            tensors, meta = decode(blob, self.job_id)
            if meta.get("n_stages") != n_stages or not 0 <= int(meta["stage"]) < n_stages:
                raise CheckpointRejected(f"stage {meta.get('stage')} of {meta.get('n_stages')}, this job has "
                                         f"{n_stages}")
            if meta.get("device") != self.device.type:
                raise CheckpointRejected(f"written on {meta.get('device')}, this worker trains on "
                                         f"{self.device.type}")
        except (CheckpointRejected, KeyError, ValueError, TypeError) as exc:
            self.reject(str(exc))
            return None
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


def checkpoint_bytes(n_parameters: int) -> int:
    """A checkpoint's size: fp32 weights and AdamW's two moments (the rest is kilobytes)."""
    return 12 * n_parameters


def training_state_bytes(model: torch.nn.Module) -> int:
    """What a checkpoint of ``model``'s training writes: its state (every weight and buffer) and AdamW's two
    moments of its trainable parameters (a LoRA job's moments are its adapters' and head's only)."""
    weights = sum(t.numel() * t.element_size() for t in model.state_dict().values())
    return weights + 2 * sum(p.numel() * p.element_size() for p in model.parameters() if p.requires_grad)


def estimated_save_seconds(n_bytes: int) -> float:
    """A save's time before one is measured: ``n_bytes`` at ``AUTO_WRITE_BYTES_PER_S``."""
    return n_bytes / AUTO_WRITE_BYTES_PER_S


def auto_interval(job_seconds: float, save_seconds: float) -> float:
    """The "auto" interval of a job expected to take ``job_seconds`` whose saves take ``save_seconds``: 5 % of
    the job, but at least 50 save times (saves cost at most 2 % of training) and 30 s (constants above)."""
    return max(AUTO_SHARE * job_seconds, AUTO_SAVE_FACTOR * save_seconds, AUTO_MIN_INTERVAL_S)


def describe_interval(interval: CheckpointEvery, expected_seconds: float | None,
                      save_bytes: int | None = None) -> str:
    """What the dry run says of a job's interval; ``save_bytes``: what a save writes, when known (its time is then
    estimated at ``AUTO_WRITE_BYTES_PER_S``)."""
    if interval.mode == "off":
        return "off"
    if interval.mode != "auto":
        return f"every {interval}"
    if expected_seconds is None or not math.isfinite(expected_seconds):
        return "auto: set at run time from the measured step rate (the plan does not know the job's size)"
    if expected_seconds < AUTO_MIN_JOB_SECONDS:
        return "off (expected < 1 min)"
    save = 0.0 if save_bytes is None else estimated_save_seconds(save_bytes)
    every = auto_interval(expected_seconds, save)
    share, by_cost = AUTO_SHARE * expected_seconds, AUTO_SAVE_FACTOR * save
    why = (f"5 % of ≈ {expected_seconds / 60:.0f} min" if every == share else
           f"50 × a ≈ {save:.1f}-s save of {save_bytes / 2 ** 20:.0f} MiB at {AUTO_WRITE_BYTES_PER_S // 2 ** 20} MiB/s"
           if every == by_cost and save_bytes is not None else f"the {AUTO_MIN_INTERVAL_S:.0f}-s floor")
    if every >= expected_seconds:
        return f"none (a save is due every ≈ {every:.0f} s, {why}; the job ≈ {expected_seconds / 60:.0f} min)"
    return f"every ≈ {every:.0f} s ({why})"


@dataclass
class StageCheckpoints:
    """A stage's part of its job's checkpoints: where it stands in the job, and the state to resume it from."""

    job: JobCheckpoints
    stage: int
    n_stages: int
    prior: tuple[int, int, float]   # (steps, examples, seconds) of the stages before
    resume: Resume | None = None

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

    def save(self, step: int, n_steps: int, examples: int, loss_sum: torch.Tensor, model: torch.nn.Module,
             optimizer: torch.optim.Optimizer, scheduler: torch.optim.lr_scheduler.LRScheduler, method: Method,
             device: torch.device) -> None:
        self.job.save(lambda: stage_blob(self.job.job_id, self.stage, self.n_stages, step, n_steps, examples,
                                         loss_sum, self.prior, model, optimizer, scheduler, method, device))
