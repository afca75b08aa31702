"""Flooding (Ishida et al., 2020) as a beluga method plugin: train on |L − b| + b instead of L.

Below the flood level b the gradient changes sign, so the model stops driving its training loss to zero (a
regulariser against memorising the suite's templates). Everything else is plain fine-tuning, inherited.
It imports nothing but beluga's public API.
"""

from __future__ import annotations

from typing import ClassVar

import torch
from pydantic import Field

from beluga_core.api.methods import Batch, Method, Options, Trainer


class FloodingOptions(Options):
    """Each field is a hyper-parameter, overridable from `[method.flooding]` and searchable in a grid; beluga
    checks a config's values against its type and bounds when it loads the config."""

    level: float = Field(0.05, ge=0, description="The flood level b: the loss is trained as |L - b| + b.")


class Flooding(Method):
    Options = FloodingOptions
    options: FloodingOptions
    # Nothing of the method's own changes between updates: its jobs can resume from checkpoints.
    state_attributes: ClassVar[tuple[str, ...] | None] = ()

    def update(self, trainer: Trainer, batches: list[Batch]) -> torch.Tensor:
        loss = torch.stack([trainer.batch_loss(b) for b in batches]).mean()
        level = self.options.level
        trainer.backward_and_step((loss - level).abs() + level)
        return loss.detach()
