"""Paraphrase identification (QQP): a binary text-pair classifier judged by the CheckList QQP suite.

Head and suite share one label space, ``[not_duplicate, duplicate]`` (GLUE's ClassLabel order). i.i.d. data:
``glue/qqp`` (Hugging Face), a local directory of TSV / CSV / JSONL / Parquet files with ``question1``,
``question2`` and a ``label`` column — or GLUE's own ``is_duplicate`` column, as in the original
``QQP/train.tsv`` — or the shipped offline fixture ``builtin:qqp-fixture`` (NOT QQP: see its PROVENANCE.md).
"""

from __future__ import annotations

from typing import Any, ClassVar

from beluga_core.contracts.options import NoOptions
from beluga_core.core.errors import BelugaError
from beluga_core.data.suite.suite_schema import Case, Input
from beluga_core.tasks.classification import ClassificationTask, Target


class ParaphraseTask(ClassificationTask):
    # Accuracy is what G uses; F1 of the duplicate class is stored beside it (and joins the MFT validation
    # objective, as in the reference).
    metrics: ClassVar[tuple[str, ...]] = ("accuracy", "f1")
    offline_iid: ClassVar[str | None] = "builtin:qqp-fixture"  # not QQP: see its PROVENANCE.md
    fixed_head: ClassVar[tuple[str, ...] | None] = ("not_duplicate", "duplicate")
    text_fields: ClassVar[tuple[str, ...] | None] = ("question1", "question2")
    Options = NoOptions  # its columns are fixed: it takes no options
    label_fields: ClassVar[tuple[str, ...]] = ("label", "is_duplicate")

    def mft_items(self, case: Case) -> list[tuple[Input, Target]]:
        """As for any classifier, plus the implication triplets: (x, a), (x, b), (a, b) carry their QQP gold
        labels (the suite's per-input labels), which is what they train on."""
        if case.expectation.kind == "implication_triplet":
            labels: Any = case.label
            if not isinstance(labels, list) or len(labels) != len(case.inputs) or None in labels:
                raise BelugaError(f"case '{case.id}': an implication triplet trains on one gold label per "
                                  "input pair; the case has none")
            return [(x, self.eq_target(self.class_id(lab, case), case))
                    for x, lab in zip(case.inputs, labels, strict=True)]
        return super().mft_items(case)
