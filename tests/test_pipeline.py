"""End to end through the real CLI, model and store: tiny slices that run on CPU in CI.

The kill test SIGKILLs a real ``beluga run`` subprocess mid-way and shows that the resumed run ends with
the same numbers as an uninterrupted one.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

DATA = Path(__file__).resolve().parent / "data"
BELUGA = [sys.executable, "-m", "beluga_core"]
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "200"}


def beluga(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*BELUGA, *args], capture_output=True, text=True, env=ENV, timeout=timeout)


def query(store: Path, sql: str) -> list[tuple]:
    con = duckdb.connect(str(store), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def results(store: Path) -> dict[str, list[tuple]]:
    """Everything a run computes, rounded to float noise, keyed by what it is."""
    return {
        "pass_rates": query(store, "SELECT config, scenario, scoring_group, n_pass, n_fail, n_skip FROM pass_rates "
                                   "ORDER BY ALL"),
        "g": query(store, "SELECT config, scenario, round(s_suite, 9), round(s_iid, 9), round(g, 9) FROM g_scores "
                          "ORDER BY ALL"),
        "models": query(store, "SELECT model_id, status FROM models ORDER BY ALL"),
        "iid": query(store, "SELECT model_id, example_idx, pred FROM iid_predictions ORDER BY ALL"),
    }


@pytest.fixture(scope="module")
def sentiment_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    store = tmp_path_factory.mktemp("sentiment") / "s.duckdb"
    proc = beluga("run", str(DATA / "tiny-sentiment.toml"), "--store", str(store))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return store, proc


@pytest.fixture(scope="module")
def phenomena_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    store = tmp_path_factory.mktemp("phenomena") / "p.duckdb"
    proc = beluga("run", str(DATA / "tiny-phenomena.toml"), "--store", str(store))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return store


def test_sentiment_end_to_end(sentiment_store: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    store, proc = sentiment_store
    assert "wall time" in proc.stdout
    g = {(c, s): (si, ii, gg) for c, s, si, ii, gg in results(store)["g"]}
    assert set(g) == {("iid", "standard"), ("iid-then-t", "seen"), ("iid-then-t", "test_type")}
    for s_suite, s_iid, gscore in g.values():
        assert 0 <= s_suite <= 1 and 0 <= s_iid <= 1
        assert gscore == pytest.approx(2 * s_suite * s_iid / (s_suite + s_iid) if s_suite + s_iid else 0.0)
    # Every functionality has a held-out pass rate (or only skips) in the held-out scenario.
    groups = query(store, "SELECT DISTINCT scoring_group FROM pass_rates WHERE scenario = 'test_type'")
    assert len(groups) == 38
    n_folds = query(store, "SELECT count(*) FROM models WHERE scenario = 'test_type'")[0][0]
    assert n_folds == 3
    # The IID model is trained once and is the parent of every IID→T model.
    parents = query(store, "SELECT DISTINCT parent_model_id FROM models WHERE config = 'iid-then-t'")
    iid = query(store, "SELECT model_id FROM models WHERE config = 'iid'")
    assert parents == iid


def test_rerun_skips_finished_folds(sentiment_store: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    store, _ = sentiment_store
    before = results(store)
    start = time.perf_counter()
    proc = beluga("run", str(DATA / "tiny-sentiment.toml"), "--store", str(store))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "running 0" in proc.stdout
    assert time.perf_counter() - start < 60
    assert results(store) == before


def test_report_prints_table(sentiment_store: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    store, _ = sentiment_store
    proc = beluga("report", str(store))
    assert proc.returncode == 0, proc.stderr
    assert "iid-then-t" in proc.stdout and "G seen" in proc.stdout and "G test_type" in proc.stdout


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
