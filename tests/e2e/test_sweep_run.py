"""A sweep end to end (tests/data/sweep-tiny.toml: two points, two seeds, the toy model): killed by SIGKILL once in
each point and resumed, it ends as an uninterrupted sweep does; the IID models are one model each, trained once and
shared by both points; `beluga store check` passes; and the curve's per-seed rows equal s_T, s_iid and G recomputed
here from the raw tables, point by point."""

from __future__ import annotations

import shutil
import signal
from collections import defaultdict
from pathlib import Path

import pytest
from helpers import DATA, REPO, beluga, config_with, query

from beluga_core.analysis.sweeps.curves import read_curves
from beluga_core.execution.worker import cache_dir_for, weights_path

pytestmark = pytest.mark.usefixtures("one_thread")

FAULTY = '\n[executor.options]\nworker = "faults:FaultyWorker"\n'
POINTS = ("suite_train_per_group-2", "suite_train_per_group-4")


def _curve(store: Path) -> list[tuple[object, ...]]:
    return query(store, "SELECT variant, config, method, scenario, seed, s_suite, s_iid, g, baseline_g "
                        "FROM sweep_curve_seeds ORDER BY ALL")


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[int]]:
    tmp = tmp_path_factory.mktemp("sweep")
    config = config_with(DATA / "sweep-tiny.toml", tmp, append=FAULTY)
    whole, killed = tmp / "whole.duckdb", tmp / "killed.duckdb"
    env = {"PYTHONPATH": str(REPO / "tests")}
    done = beluga("run", str(config), "--store", str(whole), env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    # Point 1 has 18 jobs (2 IID models, 16 folds), point 2 16 (the IID models are done): the local executor's worker
    # counts a point's jobs, so @5 dies in point 1, and in the resumed run (14 jobs left in point 1) @15 in point 2.
    counts = []
    for fault in (f"before@5:{tmp / 'a'}", f"before@15:{tmp / 'b'}"):
        run = beluga("run", str(config), "--store", str(killed), env={**env, "BELUGA_FAULT": fault})
        assert run.returncode == -signal.SIGKILL, run.stdout[-2000:] + run.stderr[-3000:]
        counts.append(query(killed, "SELECT count(*) FROM models WHERE status = 'done'")[0][0])
        if len(counts) == 1:
            # Killed inside point 1: both points are recorded, unfinished, and give no verdict yet.
            curves = read_curves(killed)
            assert sorted(p for _, p in curves.unfinished) == [0, 1]
            assert curves.verdicts and all(v.verdict.startswith("point unfinished") for v in curves.verdicts)
    resumed = beluga("run", str(config), "--store", str(killed), env=env)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    return whole, killed, counts


def test_a_sweep_killed_in_each_point_resumes_to_the_uninterrupted_result(stores: tuple[Path, Path, list[int]]) -> None:
    whole, killed, counts = stores
    assert 0 < counts[0] < 18 < counts[1] < 34        # the first kill inside point 1, the second inside point 2
    for store in (whole, killed):
        assert query(store, "SELECT status, count(*) FROM models GROUP BY ALL") == [("done", 34)]
        assert [r[0] for r in query(store, "SELECT variant FROM sweep_points ORDER BY position")] == list(POINTS)
    assert _curve(killed) == _curve(whole)
    assert len(_curve(whole)) == 2 * 2 * (1 + 2 * 2)   # points × seeds × (baseline + 2 configurations × 2 scenarios)


def test_the_iid_model_is_one_model_shared_by_every_point(stores: tuple[Path, Path, list[int]]) -> None:
    whole, _, _ = stores
    iid = dict(query(whole, "SELECT seed, model_id FROM models WHERE config = 'iid'"))
    assert len(iid) == 2
    # One row, one set of weights, a member of both points; every IID→T fold of both points starts from it.
    for model_id in iid.values():
        assert sorted(r[0] for r in query(whole, "SELECT variant FROM point_models WHERE model_id = ?",
                                          [model_id])) == list(POINTS)
        assert weights_path(cache_dir_for(whole), model_id).exists()
    parents = query(whole, "SELECT DISTINCT m.variant, m.seed, m.parent_model_id FROM models m "
                           "WHERE config = 'iid-then-t' ORDER BY ALL")
    assert parents == [(v, s, iid[s]) for v in POINTS for s in sorted(iid)]
    assert len(list(cache_dir_for(whole).glob("*.pt"))) == 2
    # Both points' curves hold the same baseline: the one model's scores.
    base = query(whole, "SELECT variant, seed, g FROM sweep_curve_seeds WHERE is_baseline ORDER BY ALL")
    assert [(s, g) for v, s, g in base if v == POINTS[0]] == [(s, g) for v, s, g in base if v == POINTS[1]]


def test_store_check_passes(stores: tuple[Path, Path, list[int]]) -> None:
    for store in stores[:2]:
        check = beluga("store", "check", str(store))
        assert check.returncode == 0, check.stdout[-3000:] + check.stderr[-2000:]


def test_the_curve_rows_equal_the_scores_recomputed_from_the_raw_tables(stores: tuple[Path, Path, list[int]]) -> None:
    whole, _, _ = stores
    # Per point: its models (point_models), their outcomes scored by group, and s_iid from the seen model (the
    # baseline: its own), computed here without beluga's views.
    rows = query(whole, """SELECT p.variant, m.config, m.scenario, m.seed, c.scoring_group, o.outcome
                           FROM point_models p JOIN models m ON m.model_id = p.model_id
                           JOIN outcomes o ON o.model_id = m.model_id
                           JOIN cases c ON c.suite = o.suite AND c.case_id = o.case_id WHERE m.status = 'done'""")
    counts: dict[tuple[object, ...], list[int]] = defaultdict(lambda: [0, 0])
    for variant, config, scenario, seed, group, outcome in rows:
        if outcome != "skip":
            counts[(variant, config, scenario, seed, group)][outcome == "pass"] += 1
    rates: dict[tuple[object, ...], list[float]] = defaultdict(list)
    for (variant, config, scenario, seed, _), (fails, passes) in counts.items():
        rates[(variant, config, scenario, seed)].append(passes / (passes + fails))
    iid = {(v, c, s): x for v, c, s, x in query(whole, """
        SELECT p.variant, m.config, m.seed, x.value FROM point_models p JOIN models m ON m.model_id = p.model_id
        JOIN iid_metrics x ON x.model_id = m.model_id
        WHERE x.split = 'test' AND x.is_primary AND m.scenario IN ('seen', 'standard')""")}
    stored = {(v, c, sc, s): (st, si, g, b) for v, c, _, sc, s, st, si, g, b in _curve(whole)}
    assert set(stored) == set(rates)
    for key, values in rates.items():
        variant, config, _scenario, seed = key
        s_t = sum(values) / len(values)
        s_iid = iid[(variant, config, seed)]
        g = 2 * s_t * s_iid / (s_t + s_iid) if s_t + s_iid else 0.0
        base_t = sum(rates[(variant, "iid", "standard", seed)]) / len(rates[(variant, "iid", "standard", seed)])
        base_iid = iid[(variant, "iid", seed)]
        base_g = 2 * base_t * base_iid / (base_t + base_iid) if base_t + base_iid else 0.0
        assert stored[key] == pytest.approx((s_t, s_iid, g, base_g), abs=1e-12), key


def test_a_run_of_a_points_settings_alone_reuses_its_models(stores: tuple[Path, Path, list[int]],
                                                            tmp_path: Path) -> None:
    """The second point's config without [sweep] has the point's job ids: run into the sweep's store it trains
    nothing, and its own variant ('') reports the point's scores."""
    whole = tmp_path / "copy.duckdb"   # a copy: the other tests read the sweep's store as the sweep left it
    shutil.copyfile(stores[0], whole)
    shutil.copytree(cache_dir_for(stores[0]), cache_dir_for(whole))
    alone = config_with(DATA / "sweep-tiny.toml", tmp_path, replace={
        '"sizes.suite_train_per_group" = [2, 4]': "", '"sizes.iid_mix" = [16, 32]': "",
        "suite_train_per_group = 2": "suite_train_per_group = 4", "iid_mix = 16": "iid_mix = 32"})
    before = query(whole, "SELECT count(*) FROM models")
    run = beluga("run", str(alone), "--store", str(whole))
    assert run.returncode == 0, run.stderr[-3000:]
    assert query(whole, "SELECT count(*) FROM models") == before
    scores = "SELECT config, method, scenario, seed, s_suite, s_iid, g FROM g_scores WHERE variant = ? ORDER BY ALL"
    assert query(whole, scores, [""]) == query(whole, scores, [POINTS[1]]) != []
