"""group-dro: online Group-DRO (Sagawa et al. 2020) as docs/method.md, "Generalization methods" specifies it.

Each step draws one environment g uniformly; its weight becomes w_g · exp(η · loss_g), the weights are
renormalised, and the step minimises w_g · loss_g. Weights start uniform and persist over the whole stage,
so environments whose loss stays high gain weight.
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


class GroupDROOptions(Options):
    """``[method.group-dro]``."""

    eta: float = Field(0.01, ge=0, description="The step size η of the environments' weights: w_g · exp(η · loss_g).")
    env_level: str | None = Field(None, description=(
        "The level whose groups are the environments (None: the suite's scoring level)."))


class GroupDRO(EnvironmentMethod):
    name: ClassVar[str] = "group-dro"
    Options = GroupDROOptions
    options: GroupDROOptions
    state_attributes: ClassVar[tuple[str, ...] | None] = ("weights",)  # renewed every step; envs come from start

    def __init__(self, hparams: dict[str, Any] | None = None) -> None:
        super().__init__(hparams)
        self.envs: list[str] = []
        self.weights: torch.Tensor | None = None

    def start(self, trainer: Trainer, trainset: TrainSet, n_steps: int) -> None:
        self.envs = trainset.envs()
        self.weights = torch.full((len(self.envs),), 1.0 / max(1, len(self.envs)), device=trainer.device)

    def steps(self, trainset: TrainSet, rng: random.Random, batch_size: int, epochs: float) -> Iterator[list[Batch]]:
        sampler = trainset.env_sampler(rng, batch_size)
        for _ in range(self.n_steps(trainset, batch_size, epochs)):
            yield [sampler.next(rng.choice(sampler.envs))]

    def env_weights(self) -> dict[str, float]:
        assert self.weights is not None
        return dict(zip(self.envs, self.weights.tolist(), strict=True))

    def update(self, trainer: Trainer, batches: list[Batch]) -> torch.Tensor:
        assert self.weights is not None, "start() sets up the weights"
        (batch,) = batches
        g = self.envs.index(batch.envs[0])
        loss = trainer.batch_loss(batch)
        # The weight update uses the loss value only (no gradient through the weights), on the device.
        self.weights[g] = self.weights[g] * torch.exp(float(self.hp["eta"]) * loss.detach().float())
        self.weights /= self.weights.sum()
        trainer.backward_and_step(self.weights[g] * loss)
        return loss.detach()
