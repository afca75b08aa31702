"""The loss plugin kind (``beluga.losses``): what a suite case trains with, one value per row of a batch.

A loss derives from ``ClassLoss`` (one input's logits against a target), ``PairLoss`` (an original's and a
perturbation's logits) or ``SpanPairLoss`` (start and end logits with each pair's token ``Alignment``) and
implements ``per_row``; calling it reduces the rows to the batch loss.
"""

from __future__ import annotations

from beluga_core.contracts.losses import Alignment, ClassLoss, Loss, PairLoss, SpanLogits, SpanPairLoss
from beluga_core.contracts.registries import LOSSES
from beluga_core.core.errors import BelugaError

__all__ = ["LOSSES", "Alignment", "BelugaError", "ClassLoss", "Loss", "PairLoss", "SpanLogits", "SpanPairLoss"]
