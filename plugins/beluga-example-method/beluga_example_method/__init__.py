"""Flooding (Ishida et al., 2020) as a beluga method plugin: train on |L − b| + b instead of L.

Below the flood level b the gradient changes sign, so the model stops driving its training loss to zero (a
regulariser against memorising the suite's templates). Everything else is plain fine-tuning, inherited.
"""

from __future__ import annotations

from typing import Any, ClassVar

import torch

from beluga_core.contracts.methods import Method


class Flooding(Method):
    name = "flooding"
    # Each default is a hyper-parameter, overridable from `[method.flooding]` and searchable in a grid.
    defaults: ClassVar[dict[str, Any]] = {"level": 0.05}

    def update(self, trainer: Any, batches: list[Any]) -> torch.Tensor:
        loss = sum((trainer.batch_loss(b) for b in batches), torch.zeros((), device=trainer.device)) / len(batches)
        level = float(self.hp["level"])
        flooded = (loss - level).abs() + level
        trainer.backward_and_step(flooded)
        return loss.detach()
