"""The relation task: entity markers as single existing vocabulary ids, micro-F1 without the NA class, the label
space it requires, its i.i.d. data, and a tiny end-to-end run on FewRel-16 with the shipped diagnostic suite."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import query


def test_a_tiny_relation_run_holds_families_out_and_stores_per_relation_scores(relation_store: Path) -> None:
    scenarios = query(relation_store, "SELECT DISTINCT scenario, heldout_group FROM models ORDER BY ALL")
    families = {"context", "entity", "selection-bias", "semantic-bias"}
    assert {g for s, g in scenarios if s == "family"} == families
    assert {s for s, _ in scenarios if s.startswith("only:")} == {f"only:family={f}" for f in families}
    metrics = dict(query(relation_store, "SELECT metric, value FROM iid_metrics m JOIN models USING (model_id) "
                                         "WHERE config = 'iid' AND split = 'test'"))
    assert set(metrics) == {"micro_f1", "accuracy", "macro_f1"}
    # No model predicts the untrained NA class here, so micro-F1 is accuracy (docs/guides/tasks.md says so).
    assert metrics["micro_f1"] == pytest.approx(metrics["accuracy"])
    assert query(relation_store, "SELECT count(DISTINCT label) FROM iid_class_scores")[0][0] == 16
    # A held-out family's fold is scored inside its family only, and trained without it.
    leaks = query(relation_store, "SELECT count(*) FROM training_leaks")[0][0]
    assert leaks == 0
