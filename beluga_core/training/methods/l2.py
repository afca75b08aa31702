"""l2: decoupled weight decay (AdamW's), λ = 0.1 (docs/method.md, "Generalization methods")."""

from __future__ import annotations

from typing import Any, ClassVar

from beluga_core.training.methods.vanilla import Vanilla


class L2(Vanilla):
    """Plain fine-tuning with decoupled weight decay.

    ``weight_decay`` is a training key, so the plan puts it into the stage's hyper-parameters, where the
    Trainer reads it for AdamW (biases and LayerNorm weights excepted, as HF's Trainer does).
    """

    defaults: ClassVar[dict[str, Any]] = {"weight_decay": 0.1}
