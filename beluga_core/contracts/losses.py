"""The loss plugin kinds: what a test type trains with, with one typed call per kind.

A loss computes one value per row (``per_row``) from the model outputs of a batch; calling it reduces them
to the batch loss (the mean, unless the loss says otherwise). ``kind`` tells the batcher what a row is:
``"single"`` — one input with a target —, or ``"pair"`` — an original and one of its perturbations.

- ``ClassLoss`` (single): logits ``[B, C]`` against ``targets`` — a ``[B, C]`` float distribution, a
  ``[B]`` integer class index, or, for rows marked in ``label_sets``, a 0/1 mask of the allowed classes.
- ``PairLoss`` (pair): the originals' and the perturbations' logits ``[k, C]`` with one parameter dict per
  pair (e.g. a directional comparison and the classes it concerns).
- ``SpanPairLoss`` (pair): start and end logits of originals and perturbations with the token alignment of
  each pair (extractive reading comprehension).

Losses compute in float32 with autocast off (``full_precision``): the log-softmax of a saturated head and the
``1 − ε`` of the directional loss lose most of their precision in bf16.
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
import torch

from beluga_core.contracts.training import BatchKind

__all__ = ["Alignment", "ClassLoss", "Loss", "PairLoss", "SpanLogits", "SpanPairLoss", "full_precision"]

SpanLogits = tuple[torch.Tensor, torch.Tensor]
# Per pair: positions (i, j) of the tokens the original and the perturbation share.
Alignment = tuple[np.ndarray | torch.Tensor | Sequence[int], np.ndarray | torch.Tensor | Sequence[int]]


@contextlib.contextmanager
def full_precision(device: torch.device) -> Iterator[None]:
    """Disable autocast for ``device`` so float32 maths is not cast back down (no-op where autocast is
    unknown, e.g. ``meta``)."""
    try:
        ctx: contextlib.AbstractContextManager[Any] = torch.autocast(device_type=device.type, enabled=False)
    except (RuntimeError, ValueError):
        ctx = contextlib.nullcontext()
    with ctx:
        yield


class Loss(ABC):
    """Base of every loss plugin; subclass one of ``ClassLoss``, ``PairLoss`` or ``SpanPairLoss``."""

    kind: ClassVar[BatchKind]
    required_attributes: ClassVar[tuple[str, ...]] = ("kind",)

    @staticmethod
    def reduce(rows: torch.Tensor, weights: torch.Tensor | None = None) -> torch.Tensor:
        """The batch loss from the per-row losses: their mean, or their ``weights``-weighted mean (a row
        with weight 0 does not count; all zero: a zero still connected to the graph)."""
        if weights is None:
            return rows.mean()
        total = weights.sum()
        # torch.where rather than an `if`: no host synchronisation per batch on an accelerator.
        return torch.where(total > 0, (rows * weights).sum() / total.clamp_min(1e-12), rows.sum() * 0.0)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class ClassLoss(Loss):
    """A loss over one input's class logits and its target."""

    kind: ClassVar[BatchKind] = "single"

    @abstractmethod
    def per_row(self, logits: torch.Tensor, targets: torch.Tensor,
                label_sets: torch.Tensor | None = None) -> torch.Tensor:
        """Float32 loss per row, shape ``[B]``."""

    def __call__(self, logits: torch.Tensor, targets: torch.Tensor,
                 label_sets: torch.Tensor | None = None) -> torch.Tensor:
        return self.reduce(self.per_row(logits, targets, label_sets))


class PairLoss(Loss):
    """A loss comparing an original's and a perturbation's class logits."""

    kind: ClassVar[BatchKind] = "pair"

    @abstractmethod
    def per_row(self, orig_logits: torch.Tensor, pert_logits: torch.Tensor,
                params: Sequence[Mapping[str, Any]]) -> torch.Tensor:
        """Float32 loss per pair, shape ``[k]``."""

    def __call__(self, orig_logits: torch.Tensor, pert_logits: torch.Tensor,
                 params: Sequence[Mapping[str, Any]]) -> torch.Tensor:
        return self.reduce(self.per_row(orig_logits, pert_logits, params))


class SpanPairLoss(Loss):
    """A loss comparing an original's and a perturbation's start / end logits over aligned tokens."""

    kind: ClassVar[BatchKind] = "pair"

    @abstractmethod
    def per_row(self, orig: SpanLogits, pert: SpanLogits, alignments: Sequence[Alignment]) -> torch.Tensor:
        """Float32 loss per pair, shape ``[k]``."""

    def __call__(self, orig: SpanLogits, pert: SpanLogits, alignments: Sequence[Alignment]) -> torch.Tensor:
        return self.reduce(self.per_row(orig, pert, alignments))
