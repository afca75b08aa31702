"""dropout: hidden and attention dropout 0.3 instead of the models' 0.1 (METHOD.md §5)."""

from __future__ import annotations

from typing import Any, ClassVar

from beluga_core.contracts.methods import Method


class Dropout(Method):
    """Plain fine-tuning of a model built with a higher dropout probability."""

    defaults: ClassVar[dict[str, Any]] = {"dropout": 0.3}

    def model_overrides(self) -> dict[str, Any]:
        # task.build_model(..., dropout=p) sets the hidden and the attention-probability dropout.
        return {"dropout": float(self.hp["dropout"])}
