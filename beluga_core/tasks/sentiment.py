"""Sentiment analysis: a binary SST-2 model judged by a three-way (negative / neutral / positive) suite."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from beluga_core.tasks.base import ClassificationTask
from beluga_core.tasks.sentiment_labels import binary_to_three

_DATA = Path(__file__).resolve().parent.parent / "data"

# Suite label ids (0 negative, 1 neutral, 2 positive) as targets on the binary head (METHOD.md §1).
_TARGETS = {0: (1.0, 0.0), 1: (0.5, 0.5), 2: (0.0, 1.0)}
_NOT_NEGATIVE = (1.0 / 3.0, 2.0 / 3.0)


class SentimentTask(ClassificationTask):
    name: ClassVar[str] = "sentiment"
    head_labels: ClassVar[list[str]] = ["negative", "positive"]
    text_fields: ClassVar[tuple[str, ...]] = ("sentence",)
    builtin_iid: ClassVar[dict[str, Path]] = {"sst2": _DATA / "sst2"}

    def to_suite_probs(self, head_probs: np.ndarray) -> np.ndarray:
        if head_probs.shape[-1] == 3:
            return head_probs
        return binary_to_three(head_probs[..., -1])

    def label_target(self, label: Any) -> np.ndarray:
        try:
            return np.asarray(_TARGETS[int(label)], dtype=np.float32)
        except (KeyError, TypeError, ValueError):
            return super().label_target(label)

    def not_label_target(self, value: Any) -> np.ndarray:
        if int(value) == 0:
            return np.asarray(_NOT_NEGATIVE, dtype=np.float32)
        return super().not_label_target(value)
