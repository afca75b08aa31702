"""irm: IRMv1 (Arjovsky et al. 2019) as docs/method.md, "Generalization methods" specifies it.

A dummy scale w (ones, one per class) multiplies the logits every loss sees; the penalty of environment e is
‖∇_w R_e(w)‖² at w = 1, so it is zero exactly when rescaling the logits cannot lower any environment's risk.
Each step takes one batch from every environment; the penalty weight is 1 for the first ``anneal_fraction``
of the steps and ``penalty_weight`` afterwards, and the total loss is divided by the weight when it exceeds 1
(DomainBed's form), so the gradient scale stays comparable across the switch.
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
from beluga_core.core.errors import BelugaError


def irm_penalty(risk: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """‖∂ risk / ∂ scale‖², kept differentiable so the penalty trains the model."""
    (grad,) = torch.autograd.grad(risk, [scale], create_graph=True, allow_unused=True)
    if grad is None:
        raise BelugaError("irm: the task's loss does not depend on the logits Trainer.logits returns, so the "
                          "dummy scale cannot be applied; the task's batch_loss must compute logits through it")
    return (grad.float() ** 2).sum()


class IRMOptions(Options):
    """``[method.irm]``."""

    penalty_weight: float = Field(1e4, ge=0, description=(
        "The penalty's weight after the annealing steps (1 before them); the loss is divided by it when above 1."))
    anneal_fraction: float = Field(0.2, ge=0, le=1, description=(
        "The share of the stage's steps with penalty weight 1."))
    env_level: str | None = Field(None, description=(
        "The level whose groups are the environments (None: the suite's scoring level)."))


class IRM(EnvironmentMethod):
    Options = IRMOptions
    options: IRMOptions
    batches_per_update: ClassVar[int | None] = None  # one batch from every environment
    # The step count sets the penalty weight; the dummy scale stays ones (it is a probe, never stepped).
    state_attributes: ClassVar[tuple[str, ...] | None] = ("step_count",)

    def __init__(self, hparams: dict[str, Any] | None = None) -> None:
        super().__init__(hparams)
        self.n_steps_total = 0
        self.step_count = 0
        self.scale: torch.Tensor | None = None
        self.last_penalty: torch.Tensor | None = None

    def penalty_weight_at(self, step: int) -> float:
        """The weight of the penalty at update ``step`` (0-based): 1 until the annealing point, then the full one."""
        anneal_steps = int(float(self.hp["anneal_fraction"]) * self.n_steps_total)
        return float(self.hp["penalty_weight"]) if step >= anneal_steps else 1.0

    def start(self, trainer: Trainer, trainset: TrainSet, n_steps: int) -> None:
        self.n_steps_total = n_steps
        self.step_count = 0
        # Per class when the head has a fixed number of classes; a scalar otherwise (span logits, whose last
        # dimension is the sequence length).
        n = trainer.task.num_labels
        shape = (n,) if n else ()
        scale = torch.ones(shape, device=trainer.device, requires_grad=True)
        self.scale = scale
        trainer.logit_transform = lambda logits: logits * scale

    def steps(self, trainset: TrainSet, rng: random.Random, batch_size: int, epochs: float) -> Iterator[list[Batch]]:
        sampler = trainset.env_sampler(rng, batch_size)
        for _ in range(self.n_steps(trainset, batch_size, epochs)):
            yield [sampler.next(env) for env in sampler.envs]

    def update(self, trainer: Trainer, batches: list[Batch]) -> torch.Tensor:
        assert self.scale is not None, "start() sets up the dummy scale"
        weight = self.penalty_weight_at(self.step_count)
        divisor = weight if weight > 1.0 else 1.0
        n = len(batches)
        trainer.zero_grad()
        total = torch.zeros((), device=trainer.device)
        penalty_sum = torch.zeros((), device=trainer.device)
        # The objective is a sum over environments, so each group of environments (one forward pass) is
        # back-propagated on its own: the same gradient as one backward of the sum, one group's graph held
        # at a time.
        for risks in trainer.loss_groups(batches):
            penalties = [irm_penalty(risk, self.scale) for risk in risks]
            part = sum((r + weight * p for r, p in zip(risks, penalties, strict=True)),
                       torch.zeros((), device=trainer.device)) / (n * divisor)
            part.backward()
            total += part.detach()
            penalty_sum += sum(p.detach() for p in penalties)
        self.scale.grad = None  # the scale is a probe, not a parameter
        trainer.step()
        self.step_count += 1
        self.last_penalty = penalty_sum / n
        return total
