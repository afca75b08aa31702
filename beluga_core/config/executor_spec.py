"""``[executor]``: where and how a run's jobs run (its executor, device, workers, packs, checkpoints), and the
checkpoint interval it reads. Apart from ``deterministic``, no key here enters a job's identity."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationInfo, field_validator

from beluga_core.config.strict import Strict

_TIME_UNITS = {"s": 1.0, "sec": 1.0, "second": 1.0, "seconds": 1.0, "min": 60.0, "minute": 60.0,
               "minutes": 60.0, "h": 3600.0, "hour": 3600.0, "hours": 3600.0}


@dataclass(frozen=True)
class CheckpointEvery:
    """``[executor] checkpoint_every`` read: ``auto``, ``off``, every ``steps`` updates or every ``seconds``."""

    mode: Literal["auto", "off", "steps", "seconds"]
    every: float = 0.0

    @classmethod
    def parse(cls, value: object) -> CheckpointEvery:
        if isinstance(value, bool):
            raise ValueError("expected a number of steps (500), a time (\"90 s\", \"5 min\"), \"auto\" or \"off\", "
                             "not true / false (for no checkpoints: \"off\")")
        if isinstance(value, int):
            if value < 1:
                raise ValueError("a number of steps must be ≥ 1 (for no checkpoints: \"off\")")
            return cls("steps", value)
        if not isinstance(value, str):
            raise ValueError("expected a number of steps (500, \"500 steps\"), a time (\"90 s\", \"5 min\"), "
                             "\"auto\" or \"off\"")
        text = value.strip().lower()
        if text in ("auto", "off"):
            return cls("auto" if text == "auto" else "off")
        match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([a-z]*)", text)
        if match is None:
            raise ValueError("expected a number of steps (500, \"500 steps\"), a time (\"90 s\", \"5 min\"), "
                             "\"auto\" or \"off\"")
        number, unit = float(match[1]), match[2]
        if unit in ("", "step", "steps"):
            if number < 1 or number != int(number):
                raise ValueError("a number of steps must be a whole number ≥ 1")
            return cls("steps", int(number))
        if unit not in _TIME_UNITS:
            raise ValueError(f"unknown unit {unit!r}: use steps, s, min or h")
        if number <= 0:
            raise ValueError("a checkpoint interval must be > 0 (for no checkpoints: \"off\")")
        return cls("seconds", number * _TIME_UNITS[unit])

    def __str__(self) -> str:
        if self.mode in ("auto", "off"):
            return self.mode
        if self.mode == "steps":
            return f"{int(self.every)} step{'s' if self.every != 1 else ''}"
        return f"{self.every:g} s"


class ExecutorSpec(Strict):
    """``[executor]``: where and how the jobs run."""

    name: str = Field("local", description="Executor plugin (entry point group beluga.executors).")
    device: str = Field("auto", description="auto (GPU when there is one), cpu, cuda, cuda:N.")
    threads: int = Field(0, ge=0, description="torch CPU threads per worker (0 = the usable cores / workers: "
                         "OMP_NUM_THREADS when set, else the CPUs of the process's affinity mask).")
    precision: Literal["auto", "fp32", "bf16"] = Field(
        "auto", description="auto: bf16 autocast on GPUs and on CPUs with native bf16, else fp32.")
    workers: Annotated[int, Field(ge=1)] | Literal["auto"] = Field("auto", description=(
        "Jobs run at once, by the executors that run several (multi; ray per node). \"auto\": on a CPU one worker "
        "using every "
        "core; on GPUs, per GPU as many workers as the CPU cores (at least one thread each) and the GPU's free "
        "memory allow, with the memory one worker takes measured by a short forward and backward pass of the "
        "model at the run's largest batch size (estimated when it cannot be measured); options.folds_per_gpu, "
        "when set, fixes the count per GPU. A number: that many (1 on GPUs: one per GPU). Ray sizes each node by a "
        "probe run on it (a CPU node: one worker per options.cpus_per_fold of its CPUs). `beluga run --dry-run` "
        "prints the choice and why; never part of a job's identity."))
    pack: Annotated[int, Field(ge=1)] | Literal["auto"] = Field(1, description=(
        "LoRA trainings per pack: jobs of the same task, base model, start weights, method and hyper-parameters "
        "(the learning rate may differ) train together in one worker, one pass of the frozen base per step over "
        "every member's batch, each member with its own adapters, head, optimizer, clipping, data order and "
        "dropout. 1: every job alone (bit for bit as before packs). \"auto\": as many as the device's free memory "
        "holds beside the pack's base at a member's measured share, up to 8 on a CPU and 16 on a GPU; a probe "
        "measures per member the peak of one training step with 2 members less the peak with 1, at the batch size "
        "of the first training that packs, with every row max_length tokens (kept in the user's cache folder: "
        "BELUGA_PROBE_CACHE=refresh measures again); recorded with the run and kept by a later run on the same "
        "store. Packs are "
        "as even as the size allows (4 trainings at 3: 2 + 2). The local, multi and ray executors train packs (on "
        "Ray, \"auto\" is measured on every node and the run packs at the smallest node's size). Job ids do not "
        "change; a packed model's results equal its sequential training's up to float rounding (models.pack "
        "records its pack). `beluga run --dry-run` prints the packs."))
    fail_fast: bool = Field(False, description=(
        "Stop starting jobs once one failed (the jobs in flight finish). Default: a failed job is recorded in "
        "the store and the jobs that do not need it go on."))
    deterministic: bool = Field(False, description=(
        "Bit-identical results run after run (same device type, precision and threads): deterministic torch "
        "algorithms; on CUDA also a fixed cuBLAS workspace and math attention. Part of every job's identity "
        "when true; models record it in models.device."))
    checkpoint_every: str | int = Field("auto", description=(
        "How often a job saves its training state into the run's cache, so that a killed run resumes inside the "
        "fold: a number of steps (500 or \"500 steps\"), a time (\"90 s\", \"5 min\"), \"off\", or \"auto\": "
        "every 5 % of the job's expected time, but at most once per 50 save times (saves cost at most 2 % of the "
        "training; a save's time is estimated from the state it writes at 100 MiB/s until one is measured) and "
        "every 30 s; none for a job expected under a minute, nor where that interval exceeds the job. Not part "
        "of a job's identity: a resumed job stores the figures an "
        "uninterrupted one would."))
    options: dict[str, Any] = Field(default_factory=dict, description=(
        "The executor's options, its Options model (`beluga plugins show local`, `multi`, `ray`): every executor "
        "takes max_retries, worker, folds_per_gpu and memory_margin; ray also address, num_cpus, num_gpus, "
        "cpus_per_fold, gpus_per_fold, log_to_driver and runtime_env. Checked when `beluga run` starts, before "
        "anything is planned or trained (the config loader does not load executors)."))

    @field_validator("workers", "pack", mode="before")
    @classmethod
    def _auto_or_count(cls, value: object, info: ValidationInfo) -> object:
        # Before pydantic's own coercion, which would read true as 1 and "2" as 2.
        if isinstance(value, str) and value.strip().lower() == "auto":
            return "auto"
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            what = "workers" if info.field_name == "workers" else "trainings per pack"
            raise ValueError(f"expected \"auto\" or a whole number of {what} ≥ 1")
        return value

    @field_validator("checkpoint_every", mode="before")
    @classmethod
    def _interval(cls, value: object) -> str:
        # Before pydantic's own coercion, which would read true as 1 step and 1.5 as a bad string.
        return str(CheckpointEvery.parse(value))

    @property
    def checkpoint_interval(self) -> CheckpointEvery:
        return CheckpointEvery.parse(self.checkpoint_every)
