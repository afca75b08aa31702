"""Hand-written ``TargetModel``s for the model-dependent generators' tests (tests/unit/generators/test_adversarial.py,
tests/unit/generators/test_cda.py, tests/e2e/test_adversarial_run.py): each answers what its test needs and refuses
the rest."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from beluga_core.contracts.generators import TokenScores, WordGradients


def sigmoid(z: float) -> float:
    return 1 / (1 + math.exp(-z))


class PartialTarget:
    """What a test's target does not answer raises, so that a generator asking for it fails loudly."""

    def word_gradients(self, xs: Sequence[str], label: str) -> list[WordGradients]:
        raise NotImplementedError

    def substituted_gradients(self, x: str, label: str, words: Sequence[int],
                              embeddings: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError

    def embeddings(self) -> np.ndarray:
        raise NotImplementedError

    def vocabulary(self) -> Sequence[str]:
        raise NotImplementedError

    def attribute(self, x: str, label: str, method: str, options: Mapping[str, Any]) -> TokenScores:
        raise NotImplementedError


class BagOfWords(PartialTarget):
    """A logistic bag-of-words model: P(pos | x) = σ(Σ_w β_w). A ``TargetModel`` for PWWS (probabilities only)."""

    BETA: ClassVar[dict[str, float]] = {"good": 2.0, "great": 1.0, "fine": 0.5, "bad": -2.0, "poor": -1.0}

    def __init__(self) -> None:
        self.name = "bag of words"
        self.labels = ("neg", "pos")
        self.queries = 0
        self.unk_token = "[UNK]"

    def probabilities(self, inputs: Sequence[Any]) -> np.ndarray:
        self.queries += len(inputs)
        p = np.array([sigmoid(sum(self.BETA.get(w, 0.0) for w in str(x).split())) for x in inputs])
        return np.stack([1 - p, p], axis=1)
