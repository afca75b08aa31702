"""dropout: hidden and attention dropout 0.3 instead of the models' 0.1 (docs/method.md, "Generalization methods")."""

from __future__ import annotations

from typing import Any, ClassVar

from beluga_core.training.methods.vanilla import Vanilla


class Dropout(Vanilla):
    """Plain fine-tuning of a model built with a higher dropout probability."""

    defaults: ClassVar[dict[str, Any]] = {"dropout": 0.3}

    def model_overrides(self) -> dict[str, Any]:
        # task.build_model(..., dropout=p) sets the hidden and the attention-probability dropout.
        return {"dropout": float(self.hp["dropout"])}
