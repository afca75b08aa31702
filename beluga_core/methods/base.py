"""The base class a generalization-method plugin implements.

A method adjusts the model and optimizer and performs one update from a list of mini-batches, as
DomainBed's ``Algorithm.update(minibatches)``. Adding a method is one subclass plus one entry point in
``beluga.methods``; its ``defaults`` are its hyper-parameters, each overridable from the config.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, ClassVar

import torch

from beluga_core.training.batches import Batch, TrainSet

if TYPE_CHECKING:
    from beluga_core.training.loop import Trainer


class Method:
    name: ClassVar[str] = "base"
    defaults: ClassVar[dict[str, Any]] = {}
    # Methods that need one batch per environment ask for env-homogeneous batches.
    needs_environments: ClassVar[bool] = False

    def __init__(self, hparams: dict[str, Any] | None = None) -> None:
        self.hp: dict[str, Any] = {**self.defaults, **(hparams or {})}

    def model_overrides(self) -> dict[str, Any]:
        """Keyword arguments for loading the model (e.g. dropout probabilities)."""
        return {}

    def prepare(self, model: torch.nn.Module) -> None:
        """Adjust the model before the optimizer is built (e.g. freeze the encoder)."""

    def weight_decay(self, base: float) -> float:
        return base

    def steps(self, trainset: TrainSet, rng: random.Random, batch_size: int, epochs: float) -> Iterator[list[Batch]]:
        """The mini-batches of each update; by default one interleaved batch per step."""
        for batch in trainset.batches(rng, batch_size, epochs, by_env=self.needs_environments):
            yield [batch]

    def n_steps(self, trainset: TrainSet, batch_size: int, epochs: float) -> int:
        import math

        return math.ceil(epochs * trainset.batches_per_epoch(batch_size, self.needs_environments))

    def update(self, trainer: Trainer, batches: list[Batch]) -> torch.Tensor:
        """One optimisation step; returns the detached loss (no host sync: logging reads it rarely)."""
        loss = sum((trainer.batch_loss(b) for b in batches), torch.zeros((), device=trainer.device)) / len(batches)
        trainer.backward_and_step(loss)
        return loss.detach()

