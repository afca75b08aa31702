"""The relation task: entity markers as single existing vocabulary ids, micro-F1 without the NA class, the label
space it requires, its i.i.d. data, and a tiny end-to-end run on FewRel-16 with the shipped diagnostic suite."""

from __future__ import annotations

import numpy as np
import pytest

from beluga_core.contracts.registries import TASKS
from beluga_core.contracts.tasks import TaskSettings
from beluga_core.core.errors import BelugaError
from beluga_core.data.suite.suite_schema import SuiteHeader
from beluga_core.evaluation.metrics import micro_f1_excluding
from beluga_core.tasks.relation import VOCAB_MARKERS, MarkerEncoder, RelationTask
from beluga_core.training.models import load_sequence_classifier, load_tokenizer


def test_markers_are_one_existing_id_each_and_the_embeddings_keep_their_size() -> None:
    tokenizer = load_tokenizer("embedded:minilm")
    size, vocab = len(tokenizer), tokenizer.get_vocab()
    encoder = MarkerEncoder(tokenizer, 64)
    ids, _ = encoder["[E2] Paris [/E2] is the capital of [E1] France [/E1] ."]
    marker_ids = [vocab[t] for t in VOCAB_MARKERS]
    assert len(tokenizer) == size
    # [CLS] [unused2] paris [unused3] is the capital of [unused0] france [unused1] . [SEP]
    assert [i for i in ids if i in marker_ids] == [marker_ids[2], marker_ids[3], marker_ids[0], marker_ids[1]]
    assert len(ids) == 13
    model = load_sequence_classifier("embedded:minilm", 17)
    assert model.get_input_embeddings().weight.shape[0] == size


def test_micro_f1_without_na_known_answers() -> None:
    na = 3
    gold = np.array([0, 0, 1, 2, 3, 3])
    pred = np.array([0, 1, 1, 3, 3, 0])
    # Non-NA predictions: 0, 1, 1, 0 (4); correct non-NA: 0, 1 (2); non-NA gold: 4 → P = R = 0.5, F1 = 0.5.
    assert micro_f1_excluding(pred, gold, na) == pytest.approx(0.5)
    # Without NA in gold or predictions it is accuracy.
    gold2, pred2 = np.array([0, 1, 2, 2]), np.array([0, 1, 1, 2])
    assert micro_f1_excluding(pred2, gold2, na) == pytest.approx(0.75)
    assert micro_f1_excluding(np.array([3, 3]), np.array([0, 1]), na) == 0.0


def _task(**options: str) -> RelationTask:
    task = TASKS.get("relation")()
    assert isinstance(task, RelationTask)
    task.name = "relation"
    task.configure(TaskSettings(options=options))
    return task


def test_the_label_space_must_end_with_the_na_label() -> None:
    header = SuiteHeader(name="s", levels=["family"], scoring_level="family", input_kind="text",
                         label_space=["spouse", "mother"])
    with pytest.raises(BelugaError, match="followed by the NA label 'no_relation'"):
        _task().use_suite(header)
    task = _task(na_label="NA")
    task.use_suite(header.model_copy(update={"label_space": ["spouse", "NA"]}))
    assert task.head_labels == ["spouse", "NA"]
    with pytest.raises(BelugaError, match="unknown option"):
        _task(na="x")


def test_fewrel16_iid_data_is_renumbered_into_the_head() -> None:
    from beluga_core.data.iid.relation_data import fewrel16_relation_names

    names = sorted(fewrel16_relation_names().values())
    task = _task()
    task.use_suite(SuiteHeader(name="s", levels=["family"], scoring_level="family", input_kind="text",
                               label_space=[*names, "no_relation"]))
    data = task.load_iid("builtin:fewrel16", eval_seed=42)
    assert (len(data.train), len(data.val), len(data.test)) == (6400, 800, 800)
    assert data.label_names[-1] == "no_relation" and max(ex.label for ex in data.train) == 15
    assert all(ex.inputs.count("[E1]") == 1 for ex in data.test)
