"""dropout: hidden and attention dropout 0.3 instead of the models' 0.1 (docs/method.md, "Generalization methods")."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from beluga_core.contracts.options import Options
from beluga_core.training.methods.vanilla import Vanilla


class DropoutOptions(Options):
    """``[method.dropout]``."""

    dropout: float = Field(0.3, ge=0, lt=1, description="The hidden and attention dropout probability.")


class Dropout(Vanilla):
    """Plain fine-tuning of a model built with a higher dropout probability."""

    Options = DropoutOptions
    options: DropoutOptions

    def model_overrides(self) -> dict[str, Any]:
        # task.build_model(..., dropout=p) sets the hidden and the attention-probability dropout.
        return {"dropout": float(self.hp["dropout"])}
