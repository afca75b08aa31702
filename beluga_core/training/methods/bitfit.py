"""bitfit: only the bias terms of the pretrained body train, with the task head (Ben Zaken et al. 2022, "BitFit:
Simple Parameter-efficient Fine-tuning for Transformer-based Masked Language-models"): under 0.1 % of BERT's
parameters, and no adapter to merge (the model keeps its architecture). Every bias of the body trains, the
LayerNorms' included, as in the paper's code. Learning rate 1e-3, searched over the paper's range
{1e-4, 4e-4, 1e-3}: far above full fine-tuning's, as few parameters move.
"""

from __future__ import annotations

from typing import Any, ClassVar

import torch
from pydantic import Field

from beluga_core.contracts.options import Options
from beluga_core.training.methods.lp import encoder_of
from beluga_core.training.methods.vanilla import Vanilla


class BitFitOptions(Options):
    """``[method.bitfit]``."""

    learning_rate: float = Field(1e-3, gt=0, description=(
        "The suite step's learning rate (a training key): far above full fine-tuning's, as few parameters move."))


class BitFit(Vanilla):
    Options = BitFitOptions
    options: BitFitOptions
    grid_axes: ClassVar[dict[str, list[Any]]] = {"learning_rate": [1e-4, 4e-4, 1e-3]}

    def prepare(self, model: torch.nn.Module) -> None:
        for name, p in encoder_of(model).named_parameters():
            p.requires_grad_(name.rsplit(".", 1)[-1] == "bias")
