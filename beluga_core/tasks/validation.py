"""A grid point's validation scores on T_val, per test type (METHOD.md §5's selection objective).

The reference selects on the sum over test types of their validation metric: mft accuracy ((accuracy + F1)
/ 2 for QQP), inv and dir pass rates. Per test type the rows hold ``pass_rate`` (pooled over the type's
cases, skips left out), the type's ``objective`` term and, for MFT, ``accuracy`` (and ``f1`` when the
task computes F1). A task plugin with other validation metrics (reading comprehension: start/end token
accuracy) defines ``validation_metrics(model, encoder, cases, outcomes, device)`` returning such rows; an
``objective`` row per test type is what the reference criterion sums.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import torch

SUITE_VAL = "suite_val"


def _row(test_type: str, metric: str, value: float | None) -> dict[str, Any]:
    return {"source": SUITE_VAL, "test_type": test_type, "metric": metric, "value": value, "is_primary": False}


def _binary_f1(pairs: Sequence[tuple[int, int]]) -> float:
    tp = sum(1 for gold, pred in pairs if gold == 1 and pred == 1)
    denom = sum(1 for gold, pred in pairs if pred == 1) + sum(1 for gold, _ in pairs if gold == 1)
    return 2 * tp / denom if denom else 0.0


def default_validation_metrics(task: Any, cases: Sequence[Any],
                               outcomes: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    labelled: list[tuple[int, int]] = []
    for case, out in zip(cases, outcomes, strict=True):
        if out["outcome"] != "skip":
            counts[case.test_type][out["outcome"] == "pass"] += 1
        if case.test_type == "MFT" and isinstance(case.label, int) and str(out.get("pred", "")).isdigit():
            labelled.append((case.label, int(out["pred"])))
    with_f1 = "f1" in getattr(task, "metrics", ())
    rows = []
    for test_type in sorted(counts):
        fail, passed = counts[test_type]
        rate = passed / (passed + fail) if passed + fail else None
        rows.append(_row(test_type, "pass_rate", rate))
        objective = rate
        if test_type == "MFT":
            # An MFT case is (nearly always) one labelled input, so its pass rate is the accuracy over MFT
            # inputs; F1 is over the first input's prediction against the case's label.
            rows.append(_row(test_type, "accuracy", rate))
            if with_f1 and rate is not None:
                f1 = _binary_f1(labelled)
                rows.append(_row(test_type, "f1", f1))
                objective = (rate + f1) / 2
        rows.append(_row(test_type, "objective", objective))
    return rows


def suite_validation_metrics(task: Any, model: torch.nn.Module, encoder: Any, cases: Sequence[Any],
                             outcomes: Sequence[dict[str, Any]], device: torch.device) -> list[dict[str, Any]]:
    if hasattr(task, "validation_metrics"):
        rows = list(task.validation_metrics(model, encoder, cases, outcomes, device))
        return [{"source": SUITE_VAL, "is_primary": False, **r} for r in rows]
    return default_validation_metrics(task, cases, outcomes)
