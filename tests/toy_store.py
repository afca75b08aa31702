"""The toy store of the store's tests, shared by both halves (tests/unit/store/test_store.py: views recomputed
independently, writer transactions; tests/e2e/test_store_run.py: readers and writers in other processes): a
five-functionality suite, hand-made models with known outcomes, and the helpers that commit and read them."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import duckdb
import numpy as np

from beluga_core.execution.results import IIDResult, JobResult, ModelRecord, Outcomes
from beluga_core.store.rows import CaseRow, SuiteRow
from beluga_core.store.writer import StoreWriter

SUITE = "toy"


# functionality -> (class, test type). f4's cases always skip (a group with no evaluable case);
# f5 is excluded from G for the sentiment task only.
FUNCS = {"f1": ("A", "MFT"), "f2": ("A", "INV"), "f3": ("B", "DIR"), "f4": ("B", "MFT"), "f5": ("B", "DIR")}


LABELS = ("negative", "neutral", "positive")


def make_cases() -> list[CaseRow]:
    rows = [CaseRow(f"{f}-{j}", tt, {"class": cls, "functionality": f}, "2" if tt == "MFT" else None)
            for f, (cls, tt) in FUNCS.items() for j in range(4)]
    # A case of T_train: in the suite, never evaluated, so it must not affect any view.
    rows.append(CaseRow("f1-train", "MFT", {"class": "A", "functionality": "f1"}, "0"))
    return rows


SUITE_ROW = SuiteRow(SUITE, ("class", "functionality"), "functionality", "text", LABELS)


CASES = make_cases()


TEST_CASES = [c for c in CASES if c.case_id != "f1-train"]


def group_of(case: CaseRow, level: str) -> str:
    return case.group(level)


class Dataset:
    """Hand-made models with their raw rows, kept in Python to recompute every view independently."""

    def __init__(self) -> None:
        self.models: list[dict[str, Any]] = []
        self.outcomes: dict[str, list[tuple[str, str, str | None]]] = {}
        self.metrics: dict[str, list[tuple[str, str, float, bool]]] = {}
        self.predictions: dict[str, list[tuple[str, int, str, str, bool]]] = {}
        self.exclusions = {("sentiment", "f5")}
        self.rng = random.Random(20240601)

    def add(self, *, task: str, config: str, method: str, scenario: str, seed: int, group: str | None = None,
            status: str = "done", always: str | None = None, accuracy: float | None = None,
            primary: bool = True) -> str:
        mid = f"{task}/{config}/{method}/{scenario}/{group}/s{seed}/{status}"
        level = None if scenario in ("standard", "seen") else scenario
        cases = [c for c in TEST_CASES if level is None or group_of(c, level) == group]
        outs = []
        for c in cases:
            if c.group("functionality") == "f4":
                outcome = "skip"
            else:
                outcome = always or self.rng.choices(("pass", "fail", "skip"), (0.5, 0.35, 0.15))[0]
            outs.append((c.case_id, outcome, self.rng.choice((*LABELS, None))))
        acc = self.rng.uniform(0.6, 0.95) if accuracy is None else accuracy
        self.models.append(dict(model_id=mid, task=task, suite=SUITE, model_name="bert", config=config,
                                method=method, scenario=scenario, heldout_level=level, heldout_group=group,
                                seed=seed, split_seed=123, status=status, hparams={"lr": 2e-5, "epochs": 3},
                                train_seconds=1.5, eval_seconds=0.5,
                                error="CUDA out of memory" if status == "failed" else None))
        self.outcomes[mid] = outs
        self.metrics[mid] = [("test", "accuracy", acc, primary), ("test", "f1", acc - 0.05, False),
                             ("val", "accuracy", acc + 0.01, primary)]
        self.predictions[mid] = [("test", i, self.rng.choice(LABELS[::2]), self.rng.choice(LABELS[::2]),
                                  False) for i in range(10)]
        self.predictions[mid] = [(s, i, g, p, g == p) for s, i, g, p, _ in self.predictions[mid]]
        return mid


def build_dataset() -> Dataset:
    d = Dataset()
    for seed in (1, 2):
        d.add(task="sentiment", config="iid", method="vanilla", scenario="standard", seed=seed)
        for config, method in (("iid-then-t", "vanilla"), ("iid-plus-t", "l2")):
            d.add(task="sentiment", config=config, method=method, scenario="seen", seed=seed)
            for f in FUNCS:
                d.add(task="sentiment", config=config, method=method, scenario="functionality", seed=seed,
                      group=f)
    for cls in ("A", "B"):
        d.add(task="sentiment", config="iid-then-t", method="vanilla", scenario="class", seed=1, group=cls)
    for tt in ("MFT", "INV", "DIR"):
        d.add(task="sentiment", config="iid-plus-t", method="l2", scenario="test_type", seed=2, group=tt)
    # Failed models: their rows must be invisible to every score view.
    d.add(task="sentiment", config="iid-then-t", method="dropout", scenario="seen", seed=1, status="failed")
    d.add(task="sentiment", config="iid-then-t", method="dropout", scenario="functionality", seed=1,
          group="f2", status="failed")
    # Task 'zero': s_T = s_iid = 0 (G is 0, not NULL); its seen model has no primary metric (G is NULL).
    d.add(task="zero", config="iid", method="vanilla", scenario="standard", seed=1, always="fail",
          accuracy=0.0)
    d.add(task="zero", config="iid-then-t", method="vanilla", scenario="seen", seed=1, primary=False)
    return d


def to_result(m: dict[str, Any], d: Dataset) -> JobResult:
    """A dataset model as the worker would hand it to the writer."""
    mid = m["model_id"]
    iid = []
    for split in ("test", "val"):
        metrics = {name: v for sp, name, v, _ in d.metrics[mid] if sp == split}
        primary = [name for sp, name, _, p in d.metrics[mid] if sp == split and p]
        if not primary:
            continue  # a model without a primary metric reports none (G is NULL for it)
        preds = [p for p in d.predictions[mid] if p[0] == split]
        iid.append(IIDResult(split, [p[2] for p in preds], [p[3] for p in preds],
                             np.array([p[4] for p in preds], dtype=bool), metrics, primary[0]))
    outs = d.outcomes[mid]
    return JobResult(ModelRecord(**m), Outcomes.of([o[0] for o in outs], [o[1] for o in outs], [o[2] for o in outs]),
                     iid)


def write_dataset(path: Path, d: Dataset) -> StoreWriter:
    w = StoreWriter(path)
    run_id = w.begin_run("bench.toml", "seeds = [1, 2]\n", device="cpu")
    assert w.ensure_suite(SUITE_ROW, CASES) == len(CASES)
    w.set_task_head("sentiment", SUITE, ["negative", "positive"])
    w.set_g_exclusions("sentiment", [g for t, g in d.exclusions if t == "sentiment"])
    for m in d.models:
        w.commit(to_result(m, d), run_id)
    w.finish_run(run_id, "done")
    return w


def view(path: Path, name: str, key_cols: tuple[str, ...]) -> dict[tuple, dict[str, Any]]:
    # Plain duckdb, nothing of beluga: what any SQL user sees.
    con = duckdb.connect(str(path), read_only=True)
    try:
        cur = con.execute(f"SELECT * FROM {name}")
        cols = [c[0] for c in cur.description]
        rows = [dict(zip(cols, r, strict=True)) for r in cur.fetchall()]
    finally:
        con.close()
    out = {}
    for r in rows:
        key = tuple(r[k] for k in key_cols)
        assert key not in out, f"{name}: duplicate key {key}"
        out[key] = r
    return out


def record(mid: str, **kw: Any) -> ModelRecord:
    fields = {"model_id": mid, "task": "sentiment", "suite": SUITE, "config": "iid-then-t", "method": "vanilla",
              "scenario": "seen", "seed": 1, "split_seed": 123, **kw}
    if fields["scenario"] not in ("standard", "seen") and "heldout_level" not in kw:
        fields["heldout_level"] = fields["scenario"]
    return ModelRecord(**fields)


def outcomes_of(pairs: list[tuple[str, str]]) -> Outcomes:
    return Outcomes.of([c for c, _ in pairs], [o for _, o in pairs])


def all_outcomes(outcome: str = "pass") -> list[tuple[str, str]]:
    return [(c.case_id, outcome) for c in TEST_CASES]


IID = [IIDResult("test", ["2"] * 5, ["0"] * 5, np.zeros(5, dtype=bool), {"accuracy": 0.5}, "accuracy")]


def result(mid: str, outcomes: list[tuple[str, str]] | None = None, iid: bool = True, **kw: Any) -> JobResult:
    return JobResult(record(mid, **kw), outcomes_of(outcomes if outcomes is not None else all_outcomes()),
                     IID if iid else [])


def rows_of(path: Path, mid: str) -> dict[str, int]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return {t: con.execute(f"SELECT count(*) FROM {t} WHERE model_id = ?", [mid]).fetchall()[0][0]
                for t in ("models", "iid_predictions", "iid_metrics", "outcomes")}
    finally:
        con.close()
