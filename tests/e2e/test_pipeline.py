"""End to end through the real CLI, model and store: tiny slices that run on CPU in CI.

The kill test SIGKILLs a real ``beluga run`` subprocess in the middle of a fold and shows that the resumed run
ends with the same numbers as an uninterrupted one.
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
from helpers import DATA, REPO, beluga, config_with, query, recompute_g, results, run_benchmark, run_cli

pytestmark = pytest.mark.slow


def test_sentiment_end_to_end(sentiment_store: tuple[Path, str]) -> None:
    store, printed = sentiment_store
    assert "wall time" in printed
    g = {(c, s): (si, ii, gg) for c, s, si, ii, gg in results(store)["g"]}
    assert set(g) == {("iid", "standard"), ("iid-then-t", "seen"), ("iid-then-t", "test_type")}
    # The views agree with a recomputation from the raw tables.
    again = recompute_g(store)
    for (config, scenario), (s_suite, s_iid, gscore) in g.items():
        assert again[("sentiment", config, scenario)] == pytest.approx((s_suite, s_iid, gscore), abs=1e-9)
    # Every functionality has a held-out pass rate (or only skips) in the held-out scenario.
    groups = query(store, "SELECT DISTINCT scoring_group FROM pass_rates WHERE scenario = 'test_type'")
    assert len(groups) == 38
    assert query(store, "SELECT count(*) FROM models WHERE scenario = 'test_type'")[0][0] == 3
    # The IID model is trained once and is the parent of every IID→T model.
    parents = query(store, "SELECT DISTINCT parent_model_id FROM models WHERE config = 'iid-then-t'")
    assert parents == query(store, "SELECT model_id FROM models WHERE config = 'iid'")


def test_store_records_splits_and_what_each_model_trained_on(sentiment_store: tuple[Path, str]) -> None:
    import hashlib
    import json

    store, _ = sentiment_store
    parts = dict(query(store, "SELECT part, count(*) FROM case_splits GROUP BY part"))
    assert set(parts) == {"train", "val", "test"} and sum(parts.values()) == 86420
    kept = dict(query(store, "SELECT part, count(*) FROM case_splits WHERE kept GROUP BY part"))
    assert kept == {"train": 2 * 38, "val": 38, "test": 2 * 38}
    for model_id, digest, n in query(store, "SELECT model_id, train_digest, n_train_suite FROM models"):
        ids = [r[0] for r in query(store, "SELECT case_id FROM model_training_cases WHERE model_id = ? ORDER BY 1",
                                   [model_id])]
        assert len(ids) == n
        if n:
            assert digest == hashlib.sha256(json.dumps(ids, sort_keys=True).encode()).hexdigest()
        else:
            assert digest is None
    assert query(store, "SELECT count(*) FROM training_leaks") == [(0,)]


def test_rerun_skips_finished_folds(sentiment_store: tuple[Path, str]) -> None:
    store, _ = sentiment_store
    before = results(store)
    printed = run_benchmark(DATA / "tiny-sentiment.toml", store)
    assert "running 0" in printed
    assert results(store) == before


def test_report_prints_table(sentiment_store: tuple[Path, str], capsys: pytest.CaptureFixture[str]) -> None:
    store, _ = sentiment_store
    code, out, err = run_cli(capsys, "report", store)
    assert code == 0, err
    assert "iid-then-t" in out and "seen" in out and "test_type" in out


def test_own_levels_end_to_end(executors_store: Path) -> None:
    # The shipped example suite (levels phenomenon / length), its length level held out.
    rows = query(executors_store, "SELECT DISTINCT config, scenario FROM g_scores ORDER BY ALL")
    assert rows == [("iid", "standard"), ("iid-plus-t", "length"), ("iid-plus-t", "seen"),
                    ("iid-then-t", "length"), ("iid-then-t", "seen")]
    held = query(executors_store, "SELECT DISTINCT heldout_group FROM models WHERE scenario = 'length' ORDER BY 1")
    assert held == [("long",), ("medium",), ("short",)]
    groups = query(executors_store, "SELECT DISTINCT scoring_group FROM pass_rates ORDER BY 1")
    assert [g for (g,) in groups] == ["comparison", "contrast", "intensifier", "negation", "plain"]


def test_sigkill_then_resume_gives_same_numbers(executors_store: Path, tmp_path: Path) -> None:
    # The test-only worker of tests/faults.py SIGKILLs the run's own process in the training of its third fold
    # (an IID→T child), with the local executor: two folds are finished by then.
    config = config_with(DATA / "tiny-executors.toml", tmp_path,
                         append='\n[executor.options]\nworker = "faults:FaultyWorker"\n')
    store = tmp_path / "killed.duckdb"
    env = {"PYTHONPATH": str(REPO / "tests"), "BELUGA_FAULT": f"training@3:{tmp_path / 'killed'}"}
    killed = beluga("run", str(config), "--store", str(store), env=env)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    assert query(store, "SELECT config, scenario FROM models ORDER BY started_at") == [
        ("iid", "standard"), ("iid-then-t", "seen")]  # nothing finished was lost, nothing unfinished was kept
    # The cache also loses the IID model's weights: the resumed run trains the parent again (the same numbers)
    # for the IID→T folds still to run, and runs only what is missing.
    (weights,) = (tmp_path / "killed.duckdb.cache").glob("*.pt")
    weights.unlink()
    resumed = beluga("run", str(config), "--store", str(store), env=env)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "running 8" in resumed.stdout  # 7 folds + the parent
    assert results(store) == results(executors_store)
