"""l2: decoupled weight decay (AdamW's), λ = 0.1 (docs/method.md, "Generalization methods")."""

from __future__ import annotations

from pydantic import Field

from beluga_core.contracts.options import Options
from beluga_core.training.methods.vanilla import Vanilla


class L2Options(Options):
    """``[method.l2]``."""

    weight_decay: float = Field(0.1, ge=0, description="AdamW's decoupled weight decay λ (a training key).")


class L2(Vanilla):
    """Plain fine-tuning with decoupled weight decay.

    ``weight_decay`` is a training key, so the plan puts it into the stage's hyper-parameters, where the
    Trainer reads it for AdamW (biases and LayerNorm weights excepted, as HF's Trainer does).
    """

    Options = L2Options
    options: L2Options
