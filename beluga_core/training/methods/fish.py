"""fish: gradient matching by Fish (Shi et al. 2021) as docs/method.md, "Generalization methods" specifies it.

Per outer step: remember θ, take ``inner_steps`` inner steps over that many environments drawn uniformly
(one batch each) with the stage's AdamW — whose state carries over between outer steps —, which leaves θ̃;
then set θ ← θ + ε(θ̃ − θ) with ε = meta_lr / (lr · inner_steps) (5e-7 / (lr · 5) by default).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any, ClassVar

import torch
from pydantic import Field

from beluga_core.contracts.methods import EnvironmentMethod
from beluga_core.contracts.options import Options
from beluga_core.contracts.tasks import Trainer
from beluga_core.contracts.training import Batch, TrainSet


class FishOptions(Options):
    """``[method.fish]``."""

    meta_lr: float = Field(5e-7, gt=0, description=(
        "The meta learning rate: θ ← θ + ε(θ̃ − θ) with ε = meta_lr / (learning_rate · inner_steps)."))
    inner_steps: int = Field(5, ge=1, description="Inner steps per outer step, each on an environment drawn uniformly.")
    env_level: str | None = Field(None, description=(
        "The level whose groups are the environments (None: the suite's scoring level)."))


class Fish(EnvironmentMethod):
    Options = FishOptions
    options: FishOptions
    state_attributes: ClassVar[tuple[str, ...] | None] = ()  # ε comes from start; AdamW's state is the optimizer's

    def __init__(self, hparams: dict[str, Any] | None = None) -> None:
        super().__init__(hparams)
        self.epsilon = 0.0

    @property
    def inner_steps(self) -> int:
        return int(self.hp["inner_steps"])

    def _per_update(self, n_envs: int) -> int:
        return self.inner_steps

    def optimizer_steps(self, n_steps: int) -> int:
        return n_steps * self.inner_steps  # the schedule runs over inner steps

    def start(self, trainer: Trainer, trainset: TrainSet, n_steps: int) -> None:
        self.epsilon = float(self.hp["meta_lr"]) / (float(trainer.hp["learning_rate"]) * self.inner_steps)

    def steps(self, trainset: TrainSet, rng: random.Random, batch_size: int, epochs: float) -> Iterator[list[Batch]]:
        sampler = trainset.env_sampler(rng, batch_size)
        k = self.inner_steps
        for _ in range(self.n_steps(trainset, batch_size, epochs)):
            # Distinct environments when there are enough of them (the gradients Fish aligns are across
            # environments); otherwise drawn with replacement.
            envs = rng.sample(sampler.envs, k) if len(sampler.envs) >= k else rng.choices(sampler.envs, k=k)
            yield [sampler.next(env) for env in envs]

    def update(self, trainer: Trainer, batches: list[Batch]) -> torch.Tensor:
        params = [p for p in trainer.model.parameters() if p.requires_grad]
        start = [p.detach().clone() for p in params]
        total = torch.zeros((), device=trainer.device)
        for batch in batches:
            loss = trainer.batch_loss(batch)
            trainer.backward_and_step(loss)
            total += loss.detach()
        with torch.no_grad():
            for p, theta in zip(params, start, strict=True):
                # θ + ε(θ̃ − θ), written in place of θ̃
                p.sub_(theta).mul_(self.epsilon).add_(theta)
        return total / len(batches)
