"""The invariance loss of extractive reading comprehension, as the ``span-inv`` loss plugin.

A perturbation (a typo in the question, a sentence added to the context, a name changed everywhere) may move
the answer's token positions, so the original's and the perturbation's start / end distributions cannot be
compared position by position. They are compared only over the positions both inputs share: the tokens of
unchanged words, found — as the reference did — by aligning the two token-id sequences with
``difflib.SequenceMatcher``'s longest matching blocks. Over those positions each distribution is
renormalised, and the loss is the mean of the start and end divergences.

Divergence: ``"kl"`` (the default) is the cross-entropy −Σ p0 log pi minus the original's entropy, i.e.
KL(p0 ‖ pi): zero exactly when the restricted distributions agree, and with the same gradient for the
perturbation as the cross-entropy. ``"ce"`` is the plain cross-entropy, as the classification ``inv`` loss
(minimal, not zero, at agreement: there it equals the entropy of p0). As for ``inv``, p0 is not detached.
"""

from __future__ import annotations

from collections.abc import Sequence
from difflib import SequenceMatcher
from typing import Literal

import numpy as np
import torch
import torch.nn.functional as F

from beluga_core.contracts.losses import Alignment, SpanLogits, SpanPairLoss, full_precision

__all__ = ["SpanINVLoss", "aligned_positions"]

def aligned_positions(original: Sequence[int], perturbed: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """Index pairs (i, j) with ``original[i] == perturbed[j]`` inside the longest matching blocks, in order.

    ``autojunk`` is off: its popularity heuristic (sequences of 200+ items) would drop frequent tokens such
    as "the" from the matching and so break long unchanged stretches apart.
    """
    matcher = SequenceMatcher(None, list(original), list(perturbed), autojunk=False)
    i_idx: list[int] = []
    j_idx: list[int] = []
    for block in matcher.get_matching_blocks():
        i_idx.extend(range(block.a, block.a + block.size))
        j_idx.extend(range(block.b, block.b + block.size))
    return np.asarray(i_idx, dtype=np.int64), np.asarray(j_idx, dtype=np.int64)


def aligned_weights(alignments: Sequence[Alignment], device: torch.device) -> torch.Tensor:
    """1 for a pair whose inputs share a position, 0 for one that shares none (it does not count)."""
    return torch.tensor([float(len(np.asarray(i)) > 0) for i, _ in alignments], device=device)


class SpanINVLoss(SpanPairLoss):
    """span-inv: per pair, the mean over {start, end} of the divergence of the restricted distributions.

    Called with the originals' and the perturbations' (start, end) logits (``[k, L]`` each, row b of the
    originals paired with row b of the perturbations; padded widths may differ) and, per pair, the aligned
    positions ``(i, j)`` into the two rows. A pair with no shared position has loss 0 and is left out of the
    batch mean.
    """

    def __init__(self, divergence: Literal["kl", "ce"] = "kl") -> None:
        if divergence not in ("kl", "ce"):
            raise ValueError(f"divergence must be 'kl' or 'ce', got {divergence!r}")
        self.divergence = divergence

    def per_row(self, orig: SpanLogits, pert: SpanLogits, alignments: Sequence[Alignment]) -> torch.Tensor:
        (orig_start, orig_end), (pert_start, pert_end) = orig, pert
        k = orig_start.shape[0]
        if not (orig_end.shape[0] == pert_start.shape[0] == pert_end.shape[0] == len(alignments) == k):
            raise ValueError(f"{k} originals need as many perturbations, end rows and alignments; got "
                             f"{orig_end.shape[0]}, {pert_start.shape[0]}, {pert_end.shape[0]}, {len(alignments)}")
        device = orig_start.device
        # Keeps the graph connected (a zero with zero gradient) for pairs that share no position.
        zero = 0.0 * (orig_start.float().sum() + pert_start.float().sum())
        rows = []
        with full_precision(device):
            for b, (i, j) in enumerate(alignments):
                i_t = torch.as_tensor(np.asarray(i), dtype=torch.long, device=device)
                j_t = torch.as_tensor(np.asarray(j), dtype=torch.long, device=device)
                if i_t.numel() != j_t.numel():
                    raise ValueError(f"pair {b}: {i_t.numel()} original positions against {j_t.numel()} perturbed")
                if i_t.numel() == 0:
                    rows.append(zero)
                    continue
                rows.append(0.5 * (self._divergence(orig_start[b, i_t], pert_start[b, j_t])
                                   + self._divergence(orig_end[b, i_t], pert_end[b, j_t])))
        return torch.stack(rows) if rows else zero.reshape(0)

    def __call__(self, orig: SpanLogits, pert: SpanLogits, alignments: Sequence[Alignment]) -> torch.Tensor:
        """The mean over the pairs that share a position."""
        return self.reduce(self.per_row(orig, pert, alignments), aligned_weights(alignments, orig[0].device))

    def _divergence(self, orig: torch.Tensor, pert: torch.Tensor) -> torch.Tensor:
        log_p0 = F.log_softmax(orig.float(), dim=-1)
        log_pi = F.log_softmax(pert.float(), dim=-1)
        p0 = log_p0.exp()
        ce = -(p0 * log_pi).sum()
        if self.divergence == "ce":
            return ce
        return ce + (p0 * log_p0).sum()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(divergence={self.divergence!r})"
