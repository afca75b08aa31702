"""The hand-made stores of the regression tests, both halves (tests/unit/training/test_regression.py: the flip
views' known answers; tests/e2e/test_regression_run.py: a real run): eight cases in two groups, a writer over them,
and models committed with chosen outcomes and predictions."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import numpy as np

from beluga_core.contracts.expectations import FlatPredictions
from beluga_core.data.suite.suite_files import case_json
from beluga_core.data.suite.suite_schema import Case
from beluga_core.execution.results import CasePredictions, IIDResult, JobResult, ModelRecord, Outcomes
from beluga_core.store.rows import CaseRow, SuiteRow
from beluga_core.store.writer import StoreWriter

CLOCK = [datetime(2025, 1, 1)]


def regression_case(i: int, group: str, label: int) -> Case:
    return Case(id=f"c{i}", groups={"skill": group}, test_type="MFT", loss="mft", inputs=[f"text {i}"], label=label,
                expectation={"kind": "eq", "target": "label"})


CASES = [regression_case(i, "g1" if i < 4 else "g2", i % 2) for i in range(8)]


def regression_writer(path: Path) -> StoreWriter:
    writer = StoreWriter(path)
    writer.ensure_suite(SuiteRow("toy", ("skill",), "skill", "text", ("negative", "positive")),
                        [CaseRow(c.id, "MFT", dict(c.groups), str(c.label)) for c in CASES])
    writer.set_task_head("sentiment", "toy", ["negative", "positive"])
    writer.record_case_specs("toy", [(c.id, case_json(c)) for c in CASES])
    return writer


def add_model(writer: StoreWriter, mid: str, config: str, *, correct: list[bool] | None = None,
           outcomes: dict[str, str] | None = None, seed: int | None = 0, scenario: str = "standard",
           group: str | None = None, parent: str | None = None, method: str = "vanilla",
           iid_probs: list[list[float]] | None = None, case_probs: dict[str, list[float]] | None = None) -> None:
    CLOCK[0] += timedelta(seconds=1)
    iid = []
    if correct is not None:
        gold = ["1"] * len(correct)
        pred = ["1" if c else "0" for c in correct]
        iid = [IIDResult("test", gold, pred, np.array(correct), {"accuracy": float(np.mean(correct))}, "accuracy",
                         None if iid_probs is None else np.array(iid_probs, dtype=np.float32))]
    o = outcomes or {}
    kept = []
    if case_probs:
        ids = list(case_probs)
        kept = [CasePredictions("toy", ids, FlatPredictions.from_arrays(
            probs=np.array([case_probs[c] for c in ids]), lengths=[1] * len(ids)))]
    record = ModelRecord(model_id=mid, task="sentiment", suite="toy", model_name="m", config=config, method=method,
                         scenario=scenario, heldout_level=scenario if group else None, heldout_group=group,
                         seed=seed, split_seed=1, parent_model_id=parent, finished_at=CLOCK[0])
    writer.commit(JobResult(record, Outcomes.of(list(o), list(o.values())), iid, predictions=kept))
