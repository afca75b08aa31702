"""Behavioral testing of any model, no training: predictions judged case by case, scored by the store's views.

The outcomes go into an in-memory store (and, with ``store``, into a result store too) as an external model,
and pass rates and s_T are read from the same ``pass_rates`` / ``suite_scores`` views a run uses: each score
has one definition.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from beluga_core.core.constants import OUTCOME_NAMES
from beluga_core.core.errors import BelugaError
from beluga_core.core.io import atomic_write
from beluga_core.data.suite.suite_files import Suite
from beluga_core.evaluation.evaluate import evaluate_cases
from beluga_core.evaluation.gold import case_gold
from beluga_core.evaluation.prediction_files import read_predictions
from beluga_core.evaluation.suites import load_checked_suite
from beluga_core.execution.results import Outcomes
from beluga_core.store.suite_rows import suite_rows
from beluga_core.store.writer import StoreWriter


@dataclass(frozen=True)
class GroupRate:
    """A scoring group's row of the ``pass_rates`` view."""

    group: str
    cases: int
    passes: int
    fails: int
    skips: int
    rate: float | None


@dataclass
class CheckResult:
    suite: Suite  # as evaluated: corrected unless --as-released
    outcomes: np.ndarray
    level: str
    rates: list[GroupRate]
    s_t: float | None
    as_released: bool
    n_corrected: int
    out: Path
    model_id: str | None = None
    seconds: dict[str, float] = field(default_factory=dict)


def check_suite(suite_spec: str | Path, predictions: str | Path, out: str | Path, *, store: str | Path | None = None,
                as_released: bool = False, model_name: str | None = None) -> CheckResult:
    """Load, evaluate, write OUT (and the store); what ``beluga suite check`` does, minus the printing."""
    t0 = time.perf_counter()
    released = load_checked_suite(suite_spec)
    t1 = time.perf_counter()
    preds = read_predictions(predictions, released)
    t2 = time.perf_counter()
    suite = released if as_released else released.with_corrections()
    n_corrected = 0 if as_released else sum(c.correction is not None for c in released.cases)
    try:
        codes = evaluate_cases(suite.cases, preds, label_space=suite.header.label_space)
    except ValueError as exc:  # predictions that do not suit an expectation (e.g. strings for a score check)
        raise BelugaError(f"cannot evaluate: {exc}", source=predictions) from None
    t3 = time.perf_counter()
    out_path = write_outcomes(out, suite, codes)
    name = model_name or Path(predictions).name.split(".")[0]
    memory = StoreWriter.in_memory()
    model_id = _record(memory, suite, codes, name)
    rates, s_t = _scores(memory, suite, model_id)
    result = CheckResult(suite, codes, suite.header.scoring_level, rates, s_t, as_released, n_corrected, out_path)
    t4 = time.perf_counter()
    if store is not None:
        result.model_id = _record(StoreWriter(store), suite, codes, name)
    result.seconds = {"load": t1 - t0, "predictions": t2 - t1, "evaluate": t3 - t2, "write": t4 - t3,
                      "total": time.perf_counter() - t0}
    return result


def _record(writer: StoreWriter, suite: Suite, codes: np.ndarray, model_name: str) -> str:
    suite_row, cases = suite_rows(suite, case_gold)
    outcomes = Outcomes.of([c.id for c in suite.cases], [OUTCOME_NAMES[int(o)] for o in codes.tolist()])
    return writer.record_external_evaluation(model_name=model_name, task=suite.header.task or suite.header.name,
                                             suite=suite_row, cases=cases, outcomes=outcomes)


def _scores(memory: StoreWriter, suite: Suite, model_id: str) -> tuple[list[GroupRate], float | None]:
    """Group pass rates (in the order groups first appear in the suite) and s_T, from the views."""
    with memory.connection() as con:
        rows = con.execute("""SELECT p.scoring_group, p.n_pass + p.n_fail + p.n_skip, p.n_pass, p.n_fail, p.n_skip,
                                     p.pass_rate
                              FROM pass_rates p JOIN models m USING (task, suite, model_name, config, method,
                                                                     scenario)
                              WHERE m.model_id = ?""", [model_id]).fetchall()
        (s_t,) = con.execute("""SELECT s.s_suite FROM suite_scores s JOIN models m USING (task, suite, model_name,
                                                                                      config, method, scenario)
                                WHERE m.model_id = ?""", [model_id]).fetchone() or (None,)
    level = suite.header.scoring_level
    order = {g: i for i, g in enumerate(dict.fromkeys(suite.group_of(c, level) for c in suite.cases))}
    rates = [GroupRate(str(g), int(n), int(p), int(f), int(s), None if r is None else float(r))
             for g, n, p, f, s, r in rows]
    return sorted(rates, key=lambda r: order[r.group]), None if s_t is None else float(s_t)


def write_outcomes(path: str | Path, suite: Suite, outcomes: np.ndarray) -> Path:
    """Per-case outcomes as JSON Lines (gzip when the name ends in .gz), written atomically."""
    path = Path(path)
    groups_json: dict[tuple[tuple[str, str], ...], str] = {}  # a suite has few distinct group dicts
    names = {k: json.dumps(v) for k, v in OUTCOME_NAMES.items()}
    lines = []
    for case, outcome in zip(suite.cases, outcomes.tolist(), strict=True):
        key = tuple(case.groups.items())
        g = groups_json.get(key)
        if g is None:
            g = groups_json[key] = json.dumps(case.groups, ensure_ascii=False, sort_keys=True)
        lines.append(f'{{"id": {json.dumps(case.id, ensure_ascii=False)}, "groups": {g}, '
                     f'"test_type": {json.dumps(case.test_type)}, "outcome": {names[outcome]}}}\n')
    try:
        return atomic_write(path, "".join(lines).encode("utf-8"), gzip_level=9 if path.suffix == ".gz" else None)
    except OSError as exc:
        raise BelugaError(f"cannot write outcomes ({exc})", source=path) from None
