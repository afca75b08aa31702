"""lp: linear probing, the encoder (pooler included) frozen and only the head trained (docs/method.md,
"Generalization methods")."""

from __future__ import annotations

from typing import Any, ClassVar

import torch
from pydantic import Field

from beluga_core.contracts.options import Options
from beluga_core.core.errors import BelugaError
from beluga_core.training.methods.vanilla import Vanilla


def encoder_of(model: torch.nn.Module) -> torch.nn.Module:
    """The pretrained body of a transformers model with a task head: ``base_model`` (BERT's includes the
    pooler); everything outside it is the head."""
    body = getattr(model, "base_model", None)
    if body is None or body is model:
        raise BelugaError(f"linear probing needs a model with a separate head; {type(model).__name__} has no "
                          "base_model distinct from itself")
    return body


class LinearProbingOptions(Options):
    """``[method.lp]``."""

    learning_rate: float = Field(1e-3, gt=0, description=(
        "The probe's learning rate (a training key): far above fine-tuning's, as only the head trains."))


class LinearProbing(Vanilla):
    """Only the head's parameters train; the probe needs larger learning rates than fine-tuning, hence its
    own default (used without a grid search) and its own grid of learning rates."""

    name: ClassVar[str] = "lp"
    Options = LinearProbingOptions
    options: LinearProbingOptions
    grid_axes: ClassVar[dict[str, list[Any]]] = {"learning_rate": [1e-4, 5e-4, 1e-3]}

    def prepare(self, model: torch.nn.Module) -> None:
        for p in encoder_of(model).parameters():
            p.requires_grad_(False)
