"""The training loop: a plain loop with dynamic padding and fused AdamW.

A plain loop rather than the HF ``Trainer``: it is faster for short sentences on CPUs (benchmarks/perf), it
mixes loss types per batch, and methods plug into single updates. ``Trainer`` implements the
``contracts.training.Trainer`` protocol that methods and tasks program against.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from beluga_core.contracts.losses import Loss
from beluga_core.contracts.methods import Method
from beluga_core.contracts.registries import LOSSES
from beluga_core.contracts.tasks import Task
from beluga_core.contracts.training import Batch, BatchOutput, Encoder, TrainSet
from beluga_core.core.errors import BelugaError
from beluga_core.training.checkpoints import StageCheckpoints
from beluga_core.training.precision import autocast

ProgressFn = Callable[[int, int], None]
TeacherFn = Callable[[str], torch.nn.Module]
# Rows of one fused forward pass over several mini-batches (Trainer.loss_groups): large enough to amortise
# the per-call overhead of many tiny environment batches (irm), small enough that groups pad little
# (benchmarks/perf/RESULTS.md has the measurement).
FUSED_ROWS = 32


@dataclass
class TrainStats:
    steps: int
    examples: int
    mean_loss: float
    seconds: float


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % (2**32))
    torch.manual_seed(seed)


class Trainer:
    """Owns model, optimizer and schedule for one training stage; methods call back into it."""

    def __init__(self, task: Task, model: torch.nn.Module, encoder: Encoder, device: torch.device,
                 hp: dict[str, Any], n_steps: int, method: Method, teachers: TeacherFn | None = None) -> None:
        self.task = task
        self._teachers = teachers
        self.model = model
        self.encoder = encoder
        self.device = device
        self.hp = hp
        self.method = method
        self._losses: dict[str, Loss] = {}
        # Methods may transform the logits every loss sees (IRM's dummy scale); None leaves them alone.
        self.logit_transform: Callable[[torch.Tensor], torch.Tensor] | None = None
        decay = method.weight_decay(float(hp.get("weight_decay", 0.0)))
        groups = _param_groups(model, decay)
        fused = device.type in ("cuda", "cpu")
        try:
            self.optimizer = torch.optim.AdamW(groups, lr=hp["learning_rate"], weight_decay=decay, fused=fused)
        except (RuntimeError, TypeError):
            self.optimizer = torch.optim.AdamW(groups, lr=hp["learning_rate"], weight_decay=decay)
        warmup = int(n_steps * float(hp.get("warmup_ratio", 0.0)))
        total = max(1, n_steps)

        def linear(step: int) -> float:  # HF's default schedule: linear warm-up, then linear decay to 0
            if step < warmup:
                return (step + 1) / max(1, warmup)
            return max(0.0, (total - step) / max(1, total - warmup))

        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, linear)
        self.max_grad_norm = hp.get("max_grad_norm")

    def loss_fn(self, name: str) -> Loss:
        if name not in self._losses:
            self._losses[name] = LOSSES.get(name)()
        return self._losses[name]

    def logits(self, inputs: list[Any]) -> torch.Tensor:
        """A classifier's logits for ``inputs`` (through ``logit_transform``)."""
        batch = {k: v.to(self.device, non_blocking=True) for k, v in self.encoder.collate(inputs).items()}
        with autocast(self.device):
            logits: torch.Tensor = self.model(**batch).logits
        return logits if self.logit_transform is None else self.logit_transform(logits)

    def batch_output(self, batch: Batch) -> BatchOutput:
        """Loss, per-row losses and logits of one batch; the task knows how its outputs meet the losses."""
        return self.task.batch_outputs(self, [batch])[0]

    def batch_loss(self, batch: Batch) -> torch.Tensor:
        return self.batch_output(batch).loss

    def loss_groups(self, batches: Sequence[Batch]) -> Iterator[list[torch.Tensor]]:
        """Every batch's loss, in groups that each take one forward pass where the task can fuse batches
        (``Task.fuses_batches``); a method back-propagates one group before asking for the next, so one
        group's graph is held at a time.

        For methods that need many small batches per update (IRM: one per environment): one forward per
        batch costs mostly per-call overhead. Batches are grouped by length (padding stays small) up to
        ``FUSED_ROWS`` rows (memory stays bounded)."""
        if not self.task.fuses_batches:
            for b in batches:
                yield [self.batch_loss(b)]
            return
        length = self.encoder.length
        ordered = sorted(batches, key=lambda b: max(map(length, b.inputs)))
        group: list[Batch] = []
        rows = 0
        for b in ordered:
            if group and rows + len(b) > FUSED_ROWS:
                yield [o.loss for o in self.task.batch_outputs(self, group)]
                group, rows = [], 0
            group.append(b)
            rows += len(b)
        if group:
            yield [o.loss for o in self.task.batch_outputs(self, group)]

    def teacher(self, source: str = "iid") -> torch.nn.Module:
        """A frozen copy of another model (see the ``Trainer`` protocol); in eval mode, no gradients."""
        if self._teachers is None:
            raise BelugaError("this trainer has no access to other models (teacher weights)")
        return self._teachers(source)

    def backward_and_step(self, loss: torch.Tensor) -> None:
        self.zero_grad()
        loss.backward()
        self.step()

    def zero_grad(self) -> None:
        self.optimizer.zero_grad(set_to_none=True)

    def step(self) -> None:
        """Clip the accumulated gradients, take one optimizer step and advance the schedule."""
        if self.max_grad_norm:
            params = [p for p in self.model.parameters() if p.grad is not None]
            torch.nn.utils.clip_grad_norm_(params, self.max_grad_norm)
        self.optimizer.step()
        self.scheduler.step()


def _param_groups(model: torch.nn.Module, decay: float) -> list[dict[str, Any]]:
    """Trainable parameters; with weight decay, biases and LayerNorm weights get none (HF's convention)."""
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    if not decay:
        return [{"params": [p for _, p in named]}]
    no_decay = {id(m.weight) for m in model.modules() if isinstance(m, torch.nn.LayerNorm)}
    plain = [p for n, p in named if n.endswith("bias") or id(p) in no_decay]
    decayed = [p for n, p in named if not (n.endswith("bias") or id(p) in no_decay)]
    return [g for g in ({"params": decayed, "weight_decay": decay}, {"params": plain, "weight_decay": 0.0})
            if g["params"]]


def train_stage(task: Task, model: torch.nn.Module, encoder: Encoder, device: torch.device, trainset: TrainSet,
                hp: dict[str, Any], method: Method, seed: int, progress: ProgressFn | None = None,
                teachers: TeacherFn | None = None, checkpoints: StageCheckpoints | None = None,
                stop_epochs: float | None = None) -> TrainStats:
    """Train one stage. With ``checkpoints``, save its state when one is due, and first resume from the
    checkpoint it carries (``StageCheckpoints.resumed``). ``stop_epochs``: stop after the updates of that many epochs,
    the schedule still spanning ``hp["epochs"]`` (a rung of a halving search, ``planning.halving``); its state is
    then kept where ``checkpoints`` says (``StageCheckpoints.keep_to``), for the next rung to go on from."""
    import time

    start = time.perf_counter()
    rng = random.Random(seed)
    batch_size = int(hp["batch_size"])
    epochs = float(hp["epochs"])
    n_steps = method.n_steps(trainset, batch_size, epochs)
    stop = n_steps if stop_epochs is None else min(n_steps, method.n_steps(trainset, batch_size, stop_epochs))
    if n_steps == 0:
        return TrainStats(0, 0, float("nan"), 0.0)
    encoder.encode_many(trainset.inputs())
    trainset.length_of = encoder.length
    # Every stage starts with all weights trainable; a method then freezes what it must (lp's encoder).
    for p in model.parameters():
        p.requires_grad_(True)
    method.prepare(model)
    # The method's finish runs however the stage ends: a worker's next job loads its weights into this model
    # object, which must be plain again (no adapters) for that.
    try:
        model.train()
        # A fresh optimizer and schedule per stage (lp-ft's second stage must not inherit the probe's state).
        trainer = Trainer(task, model, encoder, device, hp, method.optimizer_steps(n_steps), method, teachers)
        method.start(trainer, trainset, n_steps)
        total = torch.zeros((), device=device)
        steps = examples = 0
        updates = iter(method.steps(trainset, rng, batch_size, epochs))
        if checkpoints is not None:
            resumed = checkpoints.resumed(updates, model, trainer.optimizer, trainer.scheduler, method, n_steps, device)
            if resumed is not None:
                steps, examples, total = resumed
                if progress is not None:
                    progress(steps, stop)
        for batches in itertools.islice(updates, max(0, stop - steps)):
            total += method.update(trainer, batches)
            steps += 1
            examples += sum(len(b) for b in batches)
            if progress is not None:
                progress(steps, stop)
            if checkpoints is not None and checkpoints.due(steps, stop):
                checkpoints.save(steps, n_steps, examples, total, model, trainer.optimizer, trainer.scheduler, method,
                                 device)
        if checkpoints is not None and checkpoints.keep_to is not None and steps < n_steps:
            checkpoints.keep(steps, n_steps, examples, total, model, trainer.optimizer, trainer.scheduler, method,
                             device)
    finally:
        method.finish(model)
    model.eval()
    return TrainStats(steps, examples, float(total) / max(1, steps), time.perf_counter() - start)
