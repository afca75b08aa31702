"""Models from elsewhere as rows of a store, so that every regression view compares them with the store's own.

- from another result store (``OTHER.duckdb::SELECTOR``): the model's i.i.d. predictions and metrics, suite
  outcomes, and stored probabilities are copied, after checking that the two stores' D_test examples and suite
  cases are the same ones;
- from a predictions file (``beluga suite check``'s format): judged on the store's T_test cases (their
  stored definitions, ``case_specs``) with their expectations.

The row has ``config = 'external'``, ``method = 'none'``, scenario ``standard``; ``hparams.provenance`` records
where it came from.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import duckdb
import numpy as np

from beluga_core.contracts.expectations import FlatPredictions
from beluga_core.core.constants import EXTERNAL_CONFIG, EXTERNAL_METHOD, OUTCOME_NAMES, STANDARD
from beluga_core.core.errors import BelugaError
from beluga_core.core.hashing import digest
from beluga_core.core.io import jsonl_records
from beluga_core.data.suite.suite_files import Suite
from beluga_core.data.suite.suite_schema import Case, SuiteHeader
from beluga_core.evaluation.evaluate import evaluate_cases
from beluga_core.evaluation.prediction_files import read_predictions
from beluga_core.execution.results import CasePredictions, IIDResult, JobResult, ModelRecord, Outcomes
from beluga_core.store.opened import StoreHandle
from beluga_core.store.reader import open_store
from beluga_core.store.selectors import select_one

SEPARATOR = "::"


def is_external(reference: str) -> bool:
    """Whether an ``--old`` value names another store (``PATH::SELECTOR``) or a predictions file."""
    return SEPARATOR in reference or reference.endswith((".jsonl", ".jsonl.gz", ".json"))


def import_model(store: StoreHandle, reference: str) -> str:
    """Import ``reference`` into ``store``, open for writing; returns the new (or refreshed) model id."""
    if SEPARATOR in reference:
        other, _, selector = reference.partition(SEPARATOR)
        return _from_store(store, Path(other), selector)
    return _from_predictions(store, Path(reference))


def _rows(con: duckdb.DuckDBPyConnection, sql: str, params: list[Any]) -> list[tuple[Any, ...]]:
    return con.execute(sql, params).fetchall()


def _from_store(store: StoreHandle, other: Path, selector: str) -> str:
    if other.resolve() == store.path.resolve():
        raise BelugaError(f"--old {other}{SEPARATOR}{selector}: that is this store; name its model without the "
                          "store path")
    with open_store(other) as con:
        old = select_one(con, selector, where=str(other))
        if old["heldout_level"] is not None:
            raise BelugaError(f"{other}{SEPARATOR}{selector} is a held-out fold model; import a model that holds "
                              "nothing out (the IID model, a seen model, an update)")
        mid = old["model_id"]
        iid = _rows(con, "SELECT split, example_idx, gold, pred, correct FROM iid_predictions WHERE model_id = ? "
                         "ORDER BY split, example_idx", [mid])
        metrics = _rows(con, "SELECT split, metric, value, is_primary FROM iid_metrics WHERE model_id = ?", [mid])
        probs = dict(((s, i), p) for s, i, p in _rows(con, "SELECT split, example_idx, probs FROM iid_probs "
                                                           "WHERE model_id = ?", [mid]))
        outcomes = _rows(con, "SELECT suite, case_id, outcome, pred FROM outcomes WHERE model_id = ? ORDER BY case_id",
                         [mid])
        predictions = _rows(con, "SELECT suite, case_id, input_idx, probs, answer FROM case_predictions "
                                 "WHERE model_id = ? ORDER BY suite, case_id, input_idx", [mid])
    _check_same_data(store.con, other, iid, outcomes)
    results = []
    for split in sorted({r[0] for r in iid}):
        rows = [r for r in iid if r[0] == split]
        split_metrics = {m: v for s, m, v, _ in metrics if s == split}
        primary = next((m for s, m, _, p in metrics if s == split and p), None) or "accuracy"
        if primary not in split_metrics:
            split_metrics[primary] = float(np.mean([bool(r[4]) for r in rows]))
        vectors = [probs.get((split, r[1])) for r in rows]
        results.append(IIDResult(split, [r[2] for r in rows], [r[3] for r in rows],
                                 np.array([bool(r[4]) for r in rows]),
                                 {k: (float("nan") if v is None else float(v)) for k, v in split_metrics.items()},
                                 primary, np.array(vectors, dtype=np.float32) if all(v is not None for v in vectors)
                                 and vectors else None))
    kept = _case_predictions(predictions)
    provenance = {"store": str(other.resolve()), "model_id": mid, **{k: old[k] for k in
                  ("config", "method", "scenario", "seed", "model_name")}}
    record = ModelRecord(model_id="external-" + digest([str(other.resolve()), mid])[:32], task=old["task"],
                         suite=old["suite"], model_name=old["model_name"], config=EXTERNAL_CONFIG,
                         method=EXTERNAL_METHOD, scenario=STANDARD, seed=old["seed"], split_seed=old["split_seed"],
                         hparams={"provenance": provenance})
    outcome = Outcomes.of([r[1] for r in outcomes], [r[2] for r in outcomes], [r[3] for r in outcomes])
    store.writer().commit(JobResult(record, outcome, results, predictions=kept))
    return record.model_id


def _check_same_data(con: duckdb.DuckDBPyConnection, other: Path, iid: list[tuple[Any, ...]],
                     outcomes: list[tuple[Any, ...]]) -> None:
    """The imported model must have been scored on this store's D_test examples and suite cases."""
    ours = dict(((s, i), g) for s, i, g in _rows(con, """SELECT split, example_idx, any_value(gold)
                                                          FROM iid_predictions GROUP BY ALL""", []))
    if ours and iid:
        shared = [(r[0], r[1]) for r in iid if (r[0], r[1]) in ours]
        differ = [k for k in shared if ours[k] != next(r[2] for r in iid if (r[0], r[1]) == k)]
        if len(shared) < len(iid) or differ:
            raise BelugaError(f"{other}: its model was scored on other i.i.d. examples than this store's "
                              f"({len(iid) - len(shared)} example(s) this store lacks, {len(differ)} with another gold "
                              "label): both runs must use the same i.i.d. data, iid_eval_seed and [sizes] iid_test")
    known = {(s, c) for s, c in _rows(con, "SELECT suite, case_id FROM cases", [])}
    unknown = [(s, c) for s, c, _, _ in outcomes if (s, c) not in known]
    if unknown:
        raise BelugaError(f"{other}: {len(unknown)} of its suite outcomes are on cases this store does not hold "
                          f"(e.g. {unknown[:3]}); both stores must evaluate the same suite")


def _case_predictions(rows: list[tuple[Any, ...]]) -> list[CasePredictions]:
    out = []
    for suite in sorted({r[0] for r in rows}):
        sub = [r for r in rows if r[0] == suite]
        case_ids = list(dict.fromkeys(r[1] for r in sub))
        lengths = [sum(1 for r in sub if r[1] == c) for c in case_ids]
        if sub[0][3] is not None:
            flat = FlatPredictions.from_arrays(probs=np.array([r[3] for r in sub], dtype=np.float64), lengths=lengths)
        else:
            flat = FlatPredictions.from_arrays(answers=[r[4] for r in sub], lengths=lengths)
        out.append(CasePredictions(suite, case_ids, flat))
    return out


def _from_predictions(store: StoreHandle, path: Path) -> str:
    """A predictions file judged on the store's T_test cases of the suite it names."""
    if not path.exists():
        raise BelugaError("no such predictions file", source=path)
    con = store.con
    suites = _rows(con, """SELECT s.suite, s.label_space::VARCHAR, s.levels::VARCHAR, s.scoring_level,
                                  s.input_kind, min(m.task)
                           FROM suites s JOIN models m ON m.suite = s.suite GROUP BY ALL""", [])
    if len(suites) != 1:
        raise BelugaError(f"{store.path}: a predictions file can be imported into a store of one training suite; this "
                          f"one has {len(suites)}")
    name, space, levels, scoring, input_kind, task = suites[0]
    test = [r[0] for r in _rows(con, """SELECT DISTINCT s.case_id FROM case_splits s JOIN splits p USING
                                       (split_id) WHERE p.suite = ? AND s.part = 'test' AND s.kept
                                       ORDER BY 1""", [name])]
    specs = dict(_rows(con, "SELECT case_id, spec::VARCHAR FROM case_specs WHERE suite = ?", [name]))
    split_seed = _rows(con, "SELECT min(seed) FROM splits WHERE suite = ?", [name])[0][0]
    missing = [c for c in test if c not in specs]
    if not test or missing:
        raise BelugaError(f"{store.path}: its T_test cases of suite '{name}' have no stored definitions (case_specs); "
                          "re-run the config with this beluga to record them")
    header = SuiteHeader(name=name, levels=json.loads(levels), scoring_level=scoring, input_kind=input_kind,
                         label_space=json.loads(space) if space else None, task=task)
    suite = Suite(header, [Case.model_validate_json(specs[c]) for c in test])
    wanted = set(test)
    with tempfile.TemporaryDirectory() as tmp:
        subset = Path(tmp) / path.name.removesuffix(".gz")
        kept_lines = []
        for _, rec in jsonl_records(path, "predictions file"):
            if isinstance(rec, dict) and rec.get("id") in wanted:
                kept_lines.append(json.dumps(rec))
        subset.write_text("\n".join(kept_lines) + "\n", encoding="utf-8")
        try:
            flat = read_predictions(subset, suite)
        except BelugaError as exc:
            raise BelugaError(exc.message.replace(str(subset), str(path)), source=path) from None
    codes = evaluate_cases(suite.cases, flat, label_space=suite.header.label_space)
    outcomes = Outcomes.of(test, [OUTCOME_NAMES[int(c)] for c in codes])
    record = ModelRecord(model_id="external-" + digest([str(path.resolve()), name])[:32], task=task, suite=name,
                         model_name=path.name, config=EXTERNAL_CONFIG, method=EXTERNAL_METHOD, scenario=STANDARD,
                         split_seed=split_seed, hparams={"provenance": {"predictions": str(path.resolve())}})
    store.writer().commit(JobResult(record, outcomes, predictions=[CasePredictions(name, test, flat)]))
    return record.model_id
