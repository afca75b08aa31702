"""The three built-in training losses of BeLUGA, as ``beluga.losses`` plugins (docs/method.md, "Losses").

Each takes raw logits over the model head's classes, shape ``[B, C]`` (pairs: originals and perturbations
row-aligned), and computes one float32 loss per row; the batch loss is their mean.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import torch
import torch.nn.functional as F

from beluga_core.contracts.losses import ClassLoss, PairLoss, full_precision

__all__ = ["DIRLoss", "INVLoss", "MFTLoss"]


def _check_logits(name: str, logits: torch.Tensor) -> None:
    if logits.dim() != 2 or logits.shape[-1] < 2:
        raise ValueError(f"{name} must have shape [batch, classes] with classes >= 2, got {tuple(logits.shape)}")


def _check_pair(orig_logits: torch.Tensor, pert_logits: torch.Tensor) -> None:
    _check_logits("orig_logits", orig_logits)
    _check_logits("pert_logits", pert_logits)
    if orig_logits.shape != pert_logits.shape:
        raise ValueError(f"orig_logits {tuple(orig_logits.shape)} and pert_logits {tuple(pert_logits.shape)} differ")


class MFTLoss(ClassLoss):
    """Cross-entropy between softmax(logits) and a possibly soft target: −Σ_k t_k log softmax(z)_k per row.

    Soft targets are how the binary sentiment head learns three-way labels (neutral is ``[1/2, 1/2]``). A row
    marked in ``label_sets`` holds a 0/1 mask S of the classes the expectation accepts ("not negative") and
    costs −log Σ_{c ∈ S} softmax(z)_c: any accepted class is right, and the model is not pushed towards a
    particular one. ``targets`` may also be a ``[B]`` integer tensor of class indices.
    """

    def per_row(self, logits: torch.Tensor, targets: torch.Tensor,
                label_sets: torch.Tensor | None = None) -> torch.Tensor:
        _check_logits("logits", logits)
        if targets.dim() == 1 and not targets.is_floating_point():
            targets = F.one_hot(targets.long(), num_classes=logits.shape[-1])
        if targets.shape != logits.shape:
            raise ValueError(f"targets {tuple(targets.shape)} must match logits {tuple(logits.shape)}")
        with full_precision(logits.device):
            log_p = F.log_softmax(logits.float(), dim=-1)
            t = targets.to(device=logits.device, dtype=torch.float32)
            rows = -(t * log_p).sum(dim=-1)
            if label_sets is None:
                return rows
            sets = label_sets.to(device=logits.device, dtype=torch.bool)
            if not bool(sets.any()):
                return rows
            allowed = log_p.masked_fill(t <= 0, float("-inf"))
            return torch.where(sets, -torch.logsumexp(allowed, dim=-1), rows)


class INVLoss(PairLoss):
    """Invariance: −Σ_k ŷ0[k] log ŷi[k] per pair (ŷ = softmax; 0 the original, i the perturbation).

    Minimal (the entropy of ŷ0) when the perturbation's prediction equals the original's. ŷ0 is deliberately
    not detached, as in the reference: the two predictions meet rather than the perturbation chasing a fixed
    target.
    """

    def per_row(self, orig_logits: torch.Tensor, pert_logits: torch.Tensor,
                params: Sequence[Mapping[str, Any]]) -> torch.Tensor:
        _check_pair(orig_logits, pert_logits)
        with full_precision(orig_logits.device):
            p0 = F.softmax(orig_logits.float(), dim=-1)
            log_pi = F.log_softmax(pert_logits.float(), dim=-1)
            return -(p0 * log_pi).sum(dim=-1)


class DIRLoss(PairLoss):
    """Directional: −log(1 − ε) per pair, ε ∈ [0, 1] the violation of the expected change (not detached).

    Each pair's parameters name a ``comparison`` and, for the class-mass comparisons, the ``classes`` (head
    class ids) it concerns — tasks derive both from the case's expectation, never from label names:

    - ``not_less_confident``: ε = max(0, ŷ0[c*] − ŷi[c*]), c* = argmax ŷ0 (intensifiers)
    - ``not_more_confident``: ε = max(0, ŷi[c*] − ŷ0[c*]) (reducers, "used to")
    - ``not_more``: ε = max(0, ŷi[S] − ŷ0[S]), ŷ[S] the probability mass of ``classes`` (a positive phrase
      added: the negative class may not gain)
    - ``not_less``: ε = max(0, ŷ0[S] − ŷi[S])

    The max(0, ·) is ``relu``, whose gradient is zero at 0, so an unchanged prediction is not pushed.
    ``1 − ε`` is clamped below at ``MIN_ONE_MINUS_EPS`` (loss ≤ 13.8 per pair): a saturated head can round ε
    to exactly 1, and −log(0) = inf would poison the batch.
    """

    COMPARISONS: ClassVar[dict[str, int]] = {"not_less_confident": 0, "not_more_confident": 1, "not_more": 2,
                                             "not_less": 3}
    MASS_COMPARISONS: ClassVar[frozenset[str]] = frozenset({"not_more", "not_less"})
    MIN_ONE_MINUS_EPS: ClassVar[float] = 1e-6

    def per_row(self, orig_logits: torch.Tensor, pert_logits: torch.Tensor,
                params: Sequence[Mapping[str, Any]]) -> torch.Tensor:
        _check_pair(orig_logits, pert_logits)
        codes, masks = self.encode(params, orig_logits.shape[-1], orig_logits.device)
        with full_precision(orig_logits.device):
            eps = self.violation(orig_logits, pert_logits, codes, masks)
            return -torch.log(torch.clamp(1.0 - eps, min=self.MIN_ONE_MINUS_EPS))

    def violation(self, orig_logits: torch.Tensor, pert_logits: torch.Tensor, codes: torch.Tensor,
                  masks: torch.Tensor) -> torch.Tensor:
        """ε per pair (float32 ``[k]``); every candidate is computed for every pair and each pair's own is
        gathered, so one batch may mix comparisons without a Python loop."""
        p0 = F.softmax(orig_logits.float(), dim=-1)
        pi = F.softmax(pert_logits.float(), dim=-1)
        c_star = p0.argmax(dim=-1, keepdim=True)  # argmax has no gradient; the gathered values do
        conf_drop = (p0.gather(-1, c_star) - pi.gather(-1, c_star)).squeeze(-1)
        mass_gain = (pi * masks).sum(dim=-1) - (p0 * masks).sum(dim=-1)
        candidates = torch.stack([conf_drop, -conf_drop, mass_gain, -mass_gain], dim=-1)
        return torch.relu(candidates.gather(-1, codes.unsqueeze(-1)).squeeze(-1))

    @classmethod
    def encode(cls, params: Sequence[Mapping[str, Any]], n_classes: int,
               device: torch.device | str | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Comparison codes ``[k]`` and class masks ``[k, C]``, validated; built on the CPU and copied without
        blocking, so a batch costs no device synchronisation."""
        codes, masks = [], torch.zeros((len(params), n_classes), dtype=torch.float32)
        for row, p in enumerate(params):
            name = p.get("comparison")
            if name not in cls.COMPARISONS:
                raise ValueError(f"dir loss: unknown comparison {name!r}; known: {sorted(cls.COMPARISONS)}")
            codes.append(cls.COMPARISONS[name])
            if name in cls.MASS_COMPARISONS:
                classes = p.get("classes")
                if not classes or any(not isinstance(c, int) or not 0 <= c < n_classes for c in classes):
                    raise ValueError(f"dir loss: comparison '{name}' needs 'classes', a list of class ids in "
                                     f"0..{n_classes - 1}; got {classes!r}")
                masks[row, list(classes)] = 1.0
        return (torch.tensor(codes, dtype=torch.long).to(device, non_blocking=True),
                masks.to(device, non_blocking=True))
