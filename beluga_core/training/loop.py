"""The training loop: a plain loop with dynamic padding and fused AdamW.

A plain loop rather than the HF ``Trainer``: on this kind of machine it is measurably faster for short
sentences (MEASURED.md), it mixes loss types per batch, and methods plug into single updates.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from beluga_core import registry
from beluga_core.methods.base import Method
from beluga_core.training.batches import Batch, TrainSet
from beluga_core.training.encode import Encoder
from beluga_core.training.precision import autocast

ProgressFn = Callable[[int, int], None]


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

    def __init__(self, task: Any, model: torch.nn.Module, encoder: Encoder, device: torch.device,
                 hp: dict[str, Any], n_steps: int, method: Method) -> None:
        self.task = task
        self.model = model
        self.encoder = encoder
        self.device = device
        self.hp = hp
        self.method = method
        self._losses: dict[str, Any] = {}
        params = [p for p in model.parameters() if p.requires_grad]
        decay = method.weight_decay(float(hp.get("weight_decay", 0.0)))
        fused = device.type in ("cuda", "cpu")
        try:
            self.optimizer = torch.optim.AdamW(params, lr=hp["learning_rate"], weight_decay=decay, fused=fused)
        except (RuntimeError, TypeError):
            self.optimizer = torch.optim.AdamW(params, lr=hp["learning_rate"], weight_decay=decay)
        warmup = int(n_steps * float(hp.get("warmup_ratio", 0.0)))
        total = max(1, n_steps)

        def linear(step: int) -> float:  # HF's default schedule: linear warm-up, then linear decay to 0
            if step < warmup:
                return (step + 1) / max(1, warmup)
            return max(0.0, (total - step) / max(1, total - warmup))

        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, linear)
        self.max_grad_norm = hp.get("max_grad_norm")

    def loss_fn(self, name: str) -> Any:
        if name not in self._losses:
            self._losses[name] = registry.get("loss", name)()
        return self._losses[name]

    def logits(self, inputs: list[Any]) -> torch.Tensor:
        batch = {k: v.to(self.device, non_blocking=True) for k, v in self.encoder.collate(inputs).items()}
        with autocast(self.device):
            return self.model(**batch).logits

    def batch_loss(self, batch: Batch) -> torch.Tensor:
        """The loss of one mini-batch; the task knows how its model's outputs meet the loss plugins."""
        return self.task.batch_loss(self, batch)

    def backward_and_step(self, loss: torch.Tensor) -> None:
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if self.max_grad_norm:
            params = [p for p in self.model.parameters() if p.grad is not None]
            torch.nn.utils.clip_grad_norm_(params, self.max_grad_norm)
        self.optimizer.step()
        self.scheduler.step()


def train_stage(task: Any, model: torch.nn.Module, encoder: Encoder, device: torch.device, trainset: TrainSet,
                hp: dict[str, Any], method: Method, seed: int, progress: ProgressFn | None = None) -> TrainStats:
    import time

    start = time.perf_counter()
    rng = random.Random(seed)
    batch_size = int(hp["batch_size"])
    epochs = float(hp["epochs"])
    n_steps = method.n_steps(trainset, batch_size, epochs)
    if n_steps == 0:
        return TrainStats(0, 0, float("nan"), 0.0)
    encoder.encode_many(trainset.inputs())
    trainset.length_of = encoder.length
    method.prepare(model)
    model.train()
    trainer = Trainer(task, model, encoder, device, hp, n_steps, method)
    total = torch.zeros((), device=device)
    steps = examples = 0
    for batches in method.steps(trainset, rng, batch_size, epochs):
        total += method.update(trainer, batches)
        steps += 1
        examples += sum(len(b) for b in batches)
        if progress is not None:
            progress(steps, n_steps)
    model.eval()
    return TrainStats(steps, examples, float(total) / max(1, steps), time.perf_counter() - start)
