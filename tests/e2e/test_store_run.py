"""The DuckDB result store: schema, writer transactions, views recomputed independently, readers."""

from __future__ import annotations

import random
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pytest
from helpers import REPO

from beluga_core.core.errors import BelugaError
from beluga_core.execution.results import IIDResult, JobResult, ModelRecord, Outcomes
from beluga_core.store import connection as connection_mod
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


# ------------------------------------------------------------------- independent recomputation


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


@pytest.fixture(scope="module")
def dataset() -> Dataset:
    return build_dataset()


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, dataset: Dataset) -> Path:
    path = tmp_path_factory.mktemp("store") / "results.duckdb"
    write_dataset(path, dataset)
    return path


# --------------------------------------------------------------------------------- the views


# ----------------------------------------------------------------------------- the writer


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


@pytest.fixture
def writer(tmp_path: Path) -> StoreWriter:
    w = StoreWriter(tmp_path / "w.duckdb")
    w.ensure_suite(SUITE_ROW, CASES)
    return w


def test_crash_mid_commit_leaves_no_rows(writer: StoreWriter, tmp_path: Path) -> None:
    # The process dies inside the transaction (no rollback, no close): DuckDB's WAL must drop it.
    script = textwrap.dedent(f"""
        import os, sys
        sys.path[:0] = ["tests", "tests/e2e"]
        from beluga_core.store.writer import StoreWriter
        from test_store_run import result
        StoreWriter._insert_outcomes = lambda *a: os._exit(3)
        StoreWriter({str(writer.path)!r}).commit(result("m1"))
    """)
    proc = subprocess.run([sys.executable, "-c", script], cwd=REPO,
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 3, proc.stderr
    assert sum(rows_of(writer.path, "m1").values()) == 0
    writer.commit(result("m2"))
    assert writer.done_ids() == {"m2"}


def test_writer_waits_for_a_reader_in_another_process(writer: StoreWriter,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    script = textwrap.dedent(f"""
        import time, duckdb
        con = duckdb.connect({str(writer.path)!r}, read_only=True)
        print("open", flush=True)
        time.sleep(2.5)
        con.close()
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "open"
        # While it waits, the writer says every LOCK_REPORT_EVERY seconds which process holds the store.
        monkeypatch.setattr(connection_mod, "LOCK_REPORT_EVERY", 0.25)
        said: list[str] = []
        writer.store.on_wait = said.append
        writer.store.lock_timeout = 1.2
        with pytest.raises(BelugaError, match=rf"held open by process {proc.pid} \(.*python.*\).*waited 1 s"):
            writer.commit(result("m0"))
        assert len(said) >= 2 and all(f"process {proc.pid}" in m and "at most 1 s" in m for m in said), said
        writer.store.lock_timeout = 60.0
        start = time.monotonic()
        writer.commit(result("m1"))
        assert time.monotonic() - start > 0.3  # it did wait for the reader
    finally:
        proc.wait(timeout=30)
    assert writer.done_ids() == {"m1"}


def test_reader_process_sees_commits_as_they_land(writer: StoreWriter) -> None:
    script = textwrap.dedent(f"""
        import time
        from beluga_core.store.reader import fetch_dicts
        seen = []
        for _ in range(15):
            seen.append(len(fetch_dicts({str(writer.path)!r}, "models_status")))
            time.sleep(0.02)
        print(seen[0], seen[-1])
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    for seed in range(8):
        writer.commit(result(f"m{seed}", seed=seed))
        time.sleep(0.05)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0
    first, last = map(int, out.split())
    assert first <= last <= 8


# --------------------------------------------------------------------- creating and opening
