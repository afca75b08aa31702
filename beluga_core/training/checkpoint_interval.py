"""When a job saves a checkpoint under ``checkpoint_every = "auto"``, and what the dry run says of it: the interval
rule, its constants, and the estimates it starts from before a save is measured (a save's size and time).

docs/guides/speed-and-scale.md ("The rule of "auto"") explains the rule to users; ``training.checkpoints``'
``JobCheckpoints`` applies it while a job trains.
"""

from __future__ import annotations

import math

import torch

from beluga_core.config.executor_spec import CheckpointEvery

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
