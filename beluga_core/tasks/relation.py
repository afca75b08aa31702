"""Relation classification: which relation holds between a marked head and tail entity of a sentence.

Inputs are texts with inline markers, ``[E1] head [/E1] … [E2] tail [/E2]`` (``data.iid.relation``); the encoder
maps the four markers to the vocabulary's ``[unused0]``–``[unused3]`` (registered as special tokens: one id
each, no new ids, the embedding matrix is not resized), as OpenNRE does for BERT. The representation is the
model's pooled [CLS] vector with one linear layer on top (what DiagnoseRE ran).

The head is the suite's label space, which must be the data's relations followed by the NA label (option
``na_label``, default ``no_relation``) as the last class, so that the IID model, models trained on
counterfactual cases labelled NA and every later model share one head. On data without NA instances (FewRel)
the NA class is never trained, and micro-F1 equals accuracy as long as no model predicts it.

Metrics: micro-F1 over the non-NA relations (OpenNRE's definition; the primary metric), accuracy and macro-F1;
per-relation precision and recall and the confusion matrix are the store's ``iid_class_scores`` and
``iid_confusion`` views.

i.i.d. data: ``builtin:fewrel16`` (FewRel's 16 validation relations: D_train = its train part, D_val / D_test =
the seeded halves of its val part; its pool part is in no split), or a folder holding ``train`` and ``dev`` (or
``val`` / ``validation``) files in FewRel JSON, TACRED JSON or OpenNRE JSON Lines.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from pydantic import Field

from beluga_core.contracts.options import Options
from beluga_core.contracts.tasks import TaskSettings
from beluga_core.core.errors import BelugaError
from beluga_core.data.iid.examples import IIDData, IIDExample
from beluga_core.data.iid.relation_data import load_relation_iid
from beluga_core.data.iid.relation_instances import MARKERS, NA_LABEL
from beluga_core.data.suite.suite_schema import Input, SuiteHeader
from beluga_core.evaluation.metrics import accuracy, macro_f1, micro_f1_excluding
from beluga_core.tasks.classification import ClassificationTask
from beluga_core.training.encode import Encoder

VOCAB_MARKERS = ("[unused0]", "[unused1]", "[unused2]", "[unused3]")


class MarkerEncoder(Encoder):
    """Tokenizes marked texts with each entity marker as one existing vocabulary id."""

    disk_format: ClassVar[str | None] = "ids+token_types/relation-markers/1"

    def __init__(self, tokenizer: Any, max_length: int) -> None:
        vocab = tokenizer.get_vocab()
        missing = [t for t in VOCAB_MARKERS if t not in vocab]
        if missing:
            raise BelugaError(f"the relation task marks entities with {', '.join(VOCAB_MARKERS)}, which this model's "
                              f"vocabulary lacks ({', '.join(missing)}); use a BERT-vocabulary model (e.g. "
                              "embedded:minilm, bert-base-uncased)", field="model")
        before = len(tokenizer)
        # Already in the vocabulary: registering them as special only stops the tokenizer from splitting them.
        tokenizer.add_tokens(list(VOCAB_MARKERS), special_tokens=True)
        if len(tokenizer) != before or tokenizer.convert_tokens_to_ids(list(VOCAB_MARKERS)) != [vocab[t] for t in
                                                                                              VOCAB_MARKERS]:
            raise BelugaError("registering the entity markers changed the tokenizer's vocabulary; beluga needs them "
                              "to keep their ids", field="model")
        super().__init__(tokenizer, max_length)

    @staticmethod
    def model_text(x: Input) -> str:
        if not isinstance(x, str):
            raise BelugaError("a relation input is one marked text, not a pair")
        return " ".join(VOCAB_MARKERS[MARKERS.index(w)] if w in MARKERS else w for w in x.split())

    def _tokenize(self, missing: list[Input]) -> None:
        step = 4096
        for start in range(0, len(missing), step):
            chunk = missing[start:start + step]
            enc = self.tokenizer([self.model_text(x) for x in chunk], truncation=True, max_length=self.max_length)
            types = enc.get("token_type_ids")
            for i, x in enumerate(chunk):
                self._cache[x] = (enc["input_ids"][i], types[i] if types is not None else None)


class RelationOptions(Options):
    """The ``options`` of a ``relation`` task."""

    na_label: str = Field(NA_LABEL, min_length=1, description=(
        "The label of \"no relation\": the suite's last class, left out of micro-F1 (OpenNRE's definition)."))


class RelationTask(ClassificationTask):
    metrics: ClassVar[tuple[str, ...]] = ("micro_f1", "accuracy", "macro_f1")
    primary_metric: ClassVar[str] = "micro_f1"
    offline_iid: ClassVar[str | None] = "builtin:fewrel16"
    Options = RelationOptions
    options: RelationOptions

    def __init__(self) -> None:
        super().__init__()
        self.na_label = NA_LABEL

    def configure(self, settings: TaskSettings) -> None:
        super().configure(settings)
        self.na_label = self.options.na_label

    def use_suite(self, header: SuiteHeader) -> None:
        if header.input_kind != "text":
            raise BelugaError(f"task '{self.name}' reads one marked text per input; suite '{header.name}' has "
                              f"{header.input_kind} inputs")
        space = header.label_space or []
        if not space or space[-1] != self.na_label:
            raise BelugaError(f"task '{self.name}': the suite's label space must be the relations followed by the NA "
                              f"label '{self.na_label}' as the last class (one head for every model); suite "
                              f"'{header.name}' has {space}")
        super().use_suite(header)

    def load_iid(self, source: str, eval_seed: int) -> IIDData:
        data = load_relation_iid(source, eval_seed=eval_seed)
        head = self.head_labels
        names = [self.settings.label_map.get(n, n) for n in data.label_names]
        unknown = sorted(set(names) - set(head))
        if unknown:
            raise BelugaError(f"the i.i.d. relations of {source} {unknown} are not in the suite's label space {head}"
                              + " (after label_map)" * bool(self.settings.label_map), field="iid")
        order = [head.index(n) for n in names]

        def renumber(examples: Sequence[Any]) -> list[IIDExample]:
            return [IIDExample(ex.inputs, order[ex.label]) for ex in examples]

        return IIDData(renumber(data.train), renumber(data.val), renumber(data.test), data.source, head)

    def make_encoder(self, tokenizer: Any, max_length: int) -> MarkerEncoder:
        return MarkerEncoder(tokenizer, max_length)

    def iid_metrics(self, pred: np.ndarray, gold: np.ndarray) -> dict[str, float]:
        na = len(self.head_labels) - 1
        return {"micro_f1": micro_f1_excluding(pred, gold, na), "accuracy": accuracy(pred, gold),
                "macro_f1": macro_f1(pred, gold)}
