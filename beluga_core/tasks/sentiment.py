"""Sentiment analysis: a binary SST-2 model judged by a three-way (negative / neutral / positive) suite."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from beluga_core.tasks.base import ClassificationTask
from beluga_core.tasks.sentiment_labels import LABELS, binary_target, binary_to_three

_DATA = Path(__file__).resolve().parent.parent / "data"



class SentimentTask(ClassificationTask):
    name: ClassVar[str] = "sentiment"
    head_labels: ClassVar[list[str]] = ["negative", "positive"]
    text_fields: ClassVar[tuple[str, ...]] = ("sentence",)
    builtin_iid: ClassVar[dict[str, Path]] = {"sst2": _DATA / "sst2"}

    # A suite with the head's two labels (e.g. the shipped SST-2 phenomena suite) needs no mapping; the
    # CheckList suite's three labels go through METHOD.md §1's mapping.

    def to_suite_probs(self, head_probs: np.ndarray) -> np.ndarray:
        if self.suite_matches_head or head_probs.shape[-1] == 3:
            return head_probs
        return binary_to_three(head_probs[..., -1])

    def label_target(self, label: Any) -> np.ndarray:
        if self.suite_matches_head:
            return super().label_target(label)
        try:
            return binary_target(LABELS[int(label)]).astype(np.float32)
        except (IndexError, TypeError, ValueError):
            return super().label_target(label)

    def not_label_target(self, value: Any) -> np.ndarray:
        if not self.suite_matches_head and int(value) == 0:
            return binary_target("not_negative").astype(np.float32)
        return super().not_label_target(value)
