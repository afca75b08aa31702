"""Generalization methods and the grid search end to end, through the real CLI, model and store.

``tests/data/tiny-methods.toml`` is the CI slice of ``benchmarks/methods-smoke.toml`` (every method x every
suite configuration, seen scenario only); the grid test runs a two-phase search on the example suite.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_pipeline import DATA, beluga, query

METHODS = ["vanilla", "l2", "dropout", "lp", "lp-ft", "irm", "group-dro", "fish"]
CONFIGS = ["iid-then-t", "iid-plus-t", "iid-then-iid-plus-t"]

GRID = """
name = "tiny-grid"
store = "grid.duckdb"
configurations = ["iid-plus-t"]
methods = ["vanilla", "lp-ft"]
scenarios = ["seen", "length"]

[model]
name = "embedded:minilm"
max_length = 32

[[tasks]]
name = "sentiment"
suite = "builtin:sst2-phenomena"
iid = "builtin:sst2"

[sizes]
iid_mix = 16
iid_test = 32
suite_train_per_group = 4
suite_val_per_group = 3
suite_test_per_group = 3

[training]
learning_rate = 5e-5
batch_size = 16
epochs = 1

[grid]
enabled = true
batch_size = [8]
learning_rate = [5e-5, 1e-4]
epochs = [1]
iid_val = 32

[grid.methods.lp]
learning_rate = [1e-3]

[executor]
threads = 2
"""


@pytest.mark.slow
def test_every_method_and_configuration_gets_g_scores(tmp_path: Path) -> None:
    store = tmp_path / "m.duckdb"
    proc = beluga("run", str(DATA / "tiny-methods.toml"), "--store", str(store))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    rows = query(store, "SELECT config, method, scenario, g FROM g_scores ORDER BY ALL")
    assert {(c, m) for c, m, s, g in rows if s == "seen" and g is not None} == {(c, m) for c in CONFIGS
                                                                                for m in METHODS}
    assert ("iid", "vanilla", "standard") in {r[:3] for r in rows}
    hp = {(c, m): json.loads(h) for c, m, h in query(store, "SELECT config, method, hparams FROM models")}
    assert hp[("iid-plus-t", "l2")]["weight_decay"] == 0.1
    assert [s["learning_rate"] for s in hp[("iid-plus-t", "lp-ft")]["stages"]] == [1e-3, 5e-5]
    assert hp[("iid-plus-t", "irm")]["method"]["penalty_weight"] == 1e4


@pytest.mark.slow
def test_grid_search_selects_on_t_val_then_trains_the_folds(tmp_path: Path) -> None:
    config = tmp_path / "grid.toml"
    config.write_text(GRID)
    dry = beluga("run", str(config), "--dry-run")
    assert dry.returncode == 0, dry.stderr
    # 3 grid points (vanilla: 2 learning rates; lp: 1) in seen mode; strict mode adds 3 length folds each.
    assert "9 trainings in all: 6 scenario models + 3 grid points" in dry.stdout
    assert "grid mode strict would train 18" in dry.stdout

    proc = beluga("run", str(config))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert "3 trainings planned before selection (3 grid points)" in proc.stdout
    assert "6 trainings planned with the selected hyper-parameters" in proc.stdout
    store = tmp_path / "grid.duckdb"
    points = query(store, "SELECT method, point, status, n_val_suite FROM grid_points ORDER BY ALL")
    assert [(m, s) for m, _, s, _ in points] == [("lp", "done"), ("vanilla", "done"), ("vanilla", "done")]
    assert {n for *_, n in points} == {15}  # T_val: 3 cases of each of the 5 phenomena
    metrics = query(store, "SELECT DISTINCT source, test_type, metric FROM grid_metrics ORDER BY ALL")
    assert ("suite_val", "MFT", "objective") in metrics and ("suite_val", "INV", "objective") in metrics
    assert ("iid_val", None, "accuracy") in metrics
    # The folds use the selected values: vanilla's choice, and lp-ft's stages from lp's and vanilla's.
    (chosen_vanilla,) = query(store, "SELECT p.point FROM grid_selections s JOIN grid_points p USING (grid_id) "
                                     "WHERE s.method = 'vanilla'")[0]
    lr = json.loads(chosen_vanilla)["learning_rate"]
    folds = query(store, "SELECT method, hparams FROM models WHERE config = 'iid-plus-t'")
    assert len(folds) == 2 * 4
    for method, hparams in folds:
        hp = json.loads(hparams)
        if method == "vanilla":
            assert hp["learning_rate"] == lr
        else:
            assert [s["learning_rate"] for s in hp["stages"]] == [1e-3, lr]
    assert len(query(store, "SELECT * FROM g_scores WHERE config = 'iid-plus-t' AND g IS NOT NULL")) == 4

    again = beluga("run", str(config))
    assert again.returncode == 0, again.stderr[-3000:]
    assert again.stdout.count("; running 0") == 2  # no grid point and no fold is trained again

    other = beluga("select", str(store), "--criterion", "worst_group", "--top", "2")
    assert other.returncode == 0, other.stderr
    assert "grid selection by worst_group" in other.stdout
