"""Sentiment analysis: a binary SST-2 classifier, judged by a binary or a three-way (negative / neutral /
positive) suite through the binary-to-three mapping (docs/method.md, "Three-way sentiment on a binary
model"). For a true three-class model of the same suite, use ``classification`` with ``builtin:sst3``."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from beluga_core.contracts.options import NoOptions
from beluga_core.core.errors import BelugaError
from beluga_core.data.suite.suite_schema import Case, SuiteHeader
from beluga_core.evaluation.sentiment_mapping import LABELS, NEGATIVE, POSITIVE, binary_target, binary_to_three
from beluga_core.tasks.classification import ClassificationTask, Target


class SentimentTask(ClassificationTask):
    metrics: ClassVar[tuple[str, ...]] = ("accuracy",)
    offline_iid: ClassVar[str | None] = "builtin:sst2"
    fixed_head: ClassVar[tuple[str, ...] | None] = ("negative", "positive")
    text_fields: ClassVar[tuple[str, ...] | None] = ("sentence",)
    Options = NoOptions  # its columns are fixed: it takes no options

    def maps_suite(self, header: SuiteHeader) -> bool:
        return list(header.label_space or []) == list(LABELS)

    def to_suite_probs(self, head_probs: np.ndarray) -> np.ndarray:
        if self.suite_matches_head or head_probs.shape[-1] == 3:
            return head_probs
        return binary_to_three(head_probs[..., -1])

    def if_label_applies(self) -> bool:
        # The three-way suite's neutral "not negative" answers train towards p = 1/2 (the mapping's neutral).
        return self.suite_matches_head

    def head_class(self, suite_class: int, case: Case) -> int:
        if self.suite_matches_head:
            return suite_class
        if suite_class == NEGATIVE:
            return 0
        if suite_class == POSITIVE:
            return 1
        raise BelugaError(f"case '{case.id}': the binary head has no class for '{LABELS[suite_class]}'")

    def eq_target(self, suite_class: int, case: Case) -> Target:
        if self.suite_matches_head:
            return super().eq_target(suite_class, case)
        return binary_target(LABELS[suite_class]).astype(np.float32), False

    def not_eq_target(self, suite_class: int, case: Case) -> Target:
        if not self.suite_matches_head and suite_class == NEGATIVE:
            return binary_target("not_negative").astype(np.float32), False
        return super().not_eq_target(suite_class, case)
