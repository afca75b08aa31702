"""Paraphrase identification (QQP): a binary text-pair classifier judged by the CheckList QQP suite.

Head and suite share one label space, ``[not_duplicate, duplicate]`` (GLUE's ClassLabel order), so the
suite's probability vectors are the head's. i.i.d. data: ``glue/qqp`` (Hugging Face), a local directory of
TSV / CSV / JSONL / Parquet files with ``question1``, ``question2`` and a ``label`` column — or GLUE's own
``is_duplicate`` column, as in the original ``QQP/train.tsv`` — or the shipped offline fixture
``builtin:qqp-fixture`` (NOT QQP: see ``data/qqp_fixture/PROVENANCE.md``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from beluga_core.errors import BelugaError
from beluga_core.suite.schema import Case, Input
from beluga_core.tasks.base import ClassificationTask
from beluga_core.tasks.iid_data import IIDData, load_classification_iid

_DATA = Path(__file__).resolve().parent.parent / "data"

# GLUE's distributed QQP TSVs name the label column is_duplicate; the Hugging Face glue/qqp dataset, label.
LABEL_COLUMNS = ("label", "is_duplicate")


class ParaphraseTask(ClassificationTask):
    name: ClassVar[str] = "paraphrase"
    head_labels: ClassVar[list[str]] = ["not_duplicate", "duplicate"]
    text_fields: ClassVar[tuple[str, ...]] = ("question1", "question2")
    builtin_iid: ClassVar[dict[str, Path]] = {"qqp-fixture": _DATA / "qqp_fixture"}
    # Accuracy is what G uses (METHOD.md §6); F1 of the duplicate class is stored beside it.
    metrics: ClassVar[tuple[str, ...]] = ("accuracy", "f1")
    primary_metric: ClassVar[str] = "accuracy"

    def load_iid(self, source: str, eval_seed: int) -> IIDData:
        first: BelugaError | None = None
        for label_field in LABEL_COLUMNS:
            try:
                return load_classification_iid(source, text_fields=self.text_fields, label_field=label_field,
                                               eval_seed=eval_seed, builtin=self.builtin_iid)
            except BelugaError as exc:
                # Only a missing label column is worth a second try with GLUE's other spelling.
                if f"missing column(s) '{label_field}'" not in str(exc):
                    raise
                first = first or exc
        assert first is not None
        raise first

    def mft_items(self, case: Case) -> list[tuple[Input, np.ndarray]]:
        """As for any classifier, plus the implication triplets: (x, a), (x, b), (a, b) carry their QQP gold
        labels (the suite's per-input labels), which is what the mft loss trains them on."""
        if case.expectation.kind == "implication_triplet":
            labels: Any = case.label
            if not isinstance(labels, list) or len(labels) != len(case.inputs) or None in labels:
                raise BelugaError(f"case '{case.id}': an implication triplet trains on one gold label per "
                                  "input pair; the case has none")
            return [(x, self.label_target(lab)) for x, lab in zip(case.inputs, labels, strict=True)]
        return super().mft_items(case)
