"""Corrections for testing many hypotheses at once."""

from __future__ import annotations

from collections.abc import Sequence


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the order given: the k-th smallest of m p-values times (m − k + 1),
    made non-decreasing in that order and capped at 1. Rejecting where the adjusted p is below α controls the
    family-wise error rate at α (Holm 1979), uniformly more powerful than Bonferroni's m · p."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        adjusted[i] = running
    return adjusted
