"""A method plugin that raises in its first update, for testing how a run records a failed job: named in configs as
``methods = ["failing_method:Failing"]`` (this folder on the import path). ``BELUGA_TEST_FAILING=0`` makes it train
as plain fine-tuning, so that a re-run retries and finishes the same job (the environment is not part of a job's
id)."""

from __future__ import annotations

import os

import torch

from beluga_core.api.methods import Batch, Method, Trainer


class Failing(Method):
    def update(self, trainer: Trainer, batches: list[Batch]) -> torch.Tensor:
        if os.environ.get("BELUGA_TEST_FAILING", "1") != "0":
            raise RuntimeError("the failing method raised on purpose")
        loss = torch.stack([trainer.batch_loss(b) for b in batches]).mean()
        trainer.backward_and_step(loss)
        return loss.detach()
