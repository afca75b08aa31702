"""End to end through the real CLI, model and store: tiny slices that run on CPU in CI.

The kill test SIGKILLs a real ``beluga run`` subprocess mid-way and shows that the resumed run ends with
the same numbers as an uninterrupted one.
"""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import duckdb
import pytest
from helpers import BELUGA, DATA, ENV, beluga, query, recompute_g, results, run_benchmark, run_cli

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def phenomena_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    store = tmp_path_factory.mktemp("phenomena") / "p.duckdb"
    run_benchmark(DATA / "tiny-phenomena.toml", store)
    return store


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


def test_own_levels_end_to_end(phenomena_store: Path) -> None:
    rows = query(phenomena_store, "SELECT DISTINCT config, scenario FROM g_scores ORDER BY ALL")
    assert rows == [("iid", "standard"), ("iid-plus-t", "length"), ("iid-plus-t", "seen")]
    held = query(phenomena_store, "SELECT DISTINCT heldout_group FROM models WHERE scenario = 'length' ORDER BY 1")
    assert held == [("long",), ("medium",), ("short",)]
    groups = query(phenomena_store, "SELECT DISTINCT scoring_group FROM pass_rates ORDER BY 1")
    assert [g for (g,) in groups] == ["comparison", "contrast", "intensifier", "negation", "plain"]


def test_sigkill_then_resume_gives_same_numbers(phenomena_store: Path, tmp_path: Path) -> None:
    store = tmp_path / "killed.duckdb"
    proc = subprocess.Popen([*BELUGA, "run", str(DATA / "tiny-phenomena.toml"), "--store", str(store)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=ENV)
    deadline = time.time() + 300
    done = 0
    try:
        while time.time() < deadline and proc.poll() is None:
            time.sleep(0.5)
            if store.exists():
                try:
                    done = query(store, "SELECT count(*) FROM models")[0][0]
                except duckdb.Error:
                    continue  # the writer holds the file for a moment
                if done >= 2:
                    break
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert 2 <= done < 5, f"kill point missed ({done} models done)"
    kept = query(store, "SELECT count(*) FROM models")[0][0]
    assert kept >= done  # nothing finished was lost
    resumed = beluga("run", str(DATA / "tiny-phenomena.toml"), "--store", str(store))
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"running {5 - kept}" in resumed.stdout
    assert results(store) == results(phenomena_store)
