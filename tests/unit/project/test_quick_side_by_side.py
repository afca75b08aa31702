"""The side-by-side quick runs' row comparison (benchmarks.perf.quick_side_by_side, issue 57's third point): rows that
differ in a computed value are reported, rows that differ only in when or how long are not."""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb

from beluga_core.store.writer import StoreWriter
from benchmarks.perf.quick_side_by_side import differences


def _store(path: Path) -> Path:
    StoreWriter(path)
    con = duckdb.connect(str(path))
    try:
        con.execute("INSERT INTO iid_probs VALUES ('m1', 'test', 0, [0.25::FLOAT, 0.75::FLOAT]), "
                    "('m1', 'test', 1, [0.5::FLOAT, 0.5::FLOAT])")
        con.execute("INSERT INTO iid_metrics VALUES ('m1', 'test', 'accuracy', 0.5, true)")
    finally:
        con.close()
    return path


def _edit(path: Path, sql: str) -> None:
    con = duckdb.connect(str(path))
    try:
        con.execute(sql)
    finally:
        con.close()


def test_a_float_one_ulp_away_is_a_difference_a_timing_is_not(tmp_path: Path) -> None:
    a = _store(tmp_path / "a.duckdb")
    b = tmp_path / "b.duckdb"
    shutil.copy(a, b)
    assert differences(a, b) == []
    _edit(b, "INSERT INTO models (model_id, run_id, task, suite, model_name, config, method, scenario, status, "
             "train_seconds) VALUES ('m1', 'r1', 't', 's', 'n', 'c', 'vanilla', 'standard', 'done', 1.5)")
    _edit(a, "INSERT INTO models (model_id, run_id, task, suite, model_name, config, method, scenario, status, "
             "train_seconds) VALUES ('m1', 'r2', 't', 's', 'n', 'c', 'vanilla', 'standard', 'done', 2.5)")
    assert differences(a, b) == []  # another run, another time: the same results
    # The next float32 above 0.75: a change no rounding to printed digits would show.
    _edit(b, "UPDATE iid_probs SET probs = [0.25::FLOAT, 0.75000006::FLOAT] WHERE example_idx = 0")
    assert differences(a, b) == ["iid_probs (2 against 2 rows, 1 differing)"]
    c = tmp_path / "c.duckdb"
    shutil.copy(a, c)
    _edit(c, "DELETE FROM iid_metrics")
    assert differences(a, c) == ["iid_metrics (1 against 0 rows, 0 differing)"]
