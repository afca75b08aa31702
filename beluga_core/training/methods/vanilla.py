"""Plain fine-tuning: the IID baseline's method, and the base of the methods that change only the model,
the optimizer or the data (l2, dropout, lp, lp-ft)."""

from __future__ import annotations

from typing import ClassVar

import torch

from beluga_core.contracts.methods import Method
from beluga_core.contracts.tasks import Trainer
from beluga_core.contracts.training import Batch


class Vanilla(Method):
    """Plain fine-tuning with AdamW: the mean loss of the update's batches, one optimizer step."""

    state_attributes: ClassVar[tuple[str, ...] | None] = ()  # AdamW's moments are the optimizer's

    def update(self, trainer: Trainer, batches: list[Batch]) -> torch.Tensor:
        loss = sum((trainer.batch_loss(b) for b in batches), torch.zeros((), device=trainer.device)) / len(batches)
        trainer.backward_and_step(loss)
        return loss.detach()
