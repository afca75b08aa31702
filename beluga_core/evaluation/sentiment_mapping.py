"""Three-way sentiment (negative / neutral / positive) from a binary model, and the binary training targets.

docs/method.md, "Three-way sentiment on a binary model": with p = p(positive) from a binary head, the 3-class
vector [neg, neu, pos] is

- p < 1/3 or p > 2/3:  [1 - p, 0, p]
- 1/2 <= p <= 2/3:     neu = 1 - 3|p - 1/2|, pos = 1 - neu, neg = 0
- 1/3 <= p < 1/2:      neu = 1 - 3|p - 1/2|, neg = 1 - neu, pos = 0

so p = 1/2 is fully neutral and neutrality fades linearly to 1/2 at p = 1/3 and p = 2/3.
"""

from __future__ import annotations

import numpy as np

LABELS = ("negative", "neutral", "positive")
NEGATIVE, NEUTRAL, POSITIVE = 0, 1, 2

# Targets for the binary head, as [p(negative), p(positive)].
BINARY_TARGETS: dict[str, tuple[float, float]] = {
    "negative": (1.0, 0.0),
    "neutral": (0.5, 0.5),
    "positive": (0.0, 1.0),
    # "should be neutral or positive" (CheckList's not-negative MFTs)
    "not_negative": (1 / 3, 2 / 3),
}


def binary_to_three(p_pos: np.ndarray) -> np.ndarray:
    """Map p(positive) of a binary model, shape [N] (or any shape S), to probabilities [N, 3] (S + (3,)),
    ordered [negative, neutral, positive]."""
    p = np.asarray(p_pos, dtype=np.float64)
    neu = 1.0 - 3.0 * np.abs(p - 0.5)
    outer = (p < 1 / 3) | (p > 2 / 3)
    upper = ~outer & (p >= 0.5)
    lower = ~outer & ~upper
    return np.stack([np.where(outer, 1.0 - p, np.where(lower, 1.0 - neu, 0.0)),
                     np.where(outer, 0.0, neu),
                     np.where(outer, p, np.where(upper, 1.0 - neu, 0.0))], axis=-1)


def binary_target(name: str) -> np.ndarray:
    """Binary-head target [p(neg), p(pos)] for 'negative', 'neutral', 'positive' or 'not_negative'."""
    try:
        return np.array(BINARY_TARGETS[name], dtype=np.float64)
    except KeyError:
        raise ValueError(f"unknown sentiment target '{name}'; known: {', '.join(BINARY_TARGETS)}") from None


def binary_targets(labels: np.ndarray) -> np.ndarray:
    """Binary-head targets [N, 2] for three-way label ids (0 negative, 1 neutral, 2 positive)."""
    table = np.array([BINARY_TARGETS[name] for name in LABELS], dtype=np.float64)
    labels = np.asarray(labels)
    if labels.size and (labels.min() < 0 or labels.max() > 2):
        raise ValueError("sentiment label ids must be 0 (negative), 1 (neutral) or 2 (positive)")
    return table[labels]
