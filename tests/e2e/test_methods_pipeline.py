"""Generalization methods and the grid search end to end, through the real CLI, model and store.

``tests/data/tiny-methods.toml`` is the CI slice of ``benchmarks/methods-smoke.toml`` (every method, in IID+T,
seen scenario; the full 8 x 3 smoke run is ``benchmarks/findings/bench_methods_smoke.py``); the grid test runs a
two-phase search on the example suite.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import DATA, doc_blocks, query, run_benchmark, run_cli
from toy_model import TOY_DIR

# The tests' toy model (tests/toy_model.py): these runs check behaviour, not accuracy.
TOY = TOY_DIR.as_posix()
pytestmark = pytest.mark.slow
METHODS = ["vanilla", "l2", "dropout", "lp", "lp-ft", "irm", "group-dro", "fish"]

GRID = f"""
name = "tiny-grid"
store = "grid.duckdb"
configurations = ["iid-plus-t"]
methods = ["lp-ft"]
scenarios = ["seen", "length"]

[model]
name = "{TOY}"
max_length = 32
config_overrides = {{ num_hidden_layers = 2 }}

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

# Shorter stages than the default 1.5 epochs, to keep CI short.
[method.lp-ft]
lp_epochs = 0.5
ft_epochs = 0.5

"""


def test_every_method_gets_g_scores(tmp_path: Path) -> None:
    store = tmp_path / "m.duckdb"
    run_benchmark(DATA / "tiny-methods.toml", store)
    rows = query(store, "SELECT config, method, scenario, g FROM g_scores ORDER BY ALL")
    assert [(c, m, s) for c, m, s, g in rows if g is not None] == [("iid-plus-t", m, "seen") for m in sorted(METHODS)]
    hp = {m: json.loads(h) for m, h in query(store, "SELECT method, hparams FROM models")}
    assert hp["l2"]["weight_decay"] == 0.1 and hp["vanilla"]["weight_decay"] == 0.0
    assert [s["learning_rate"] for s in hp["lp-ft"]["stages"]] == [1e-3, 5e-5]
    assert hp["irm"]["method"]["penalty_weight"] == 1e4 and hp["dropout"]["method"]["dropout"] == 0.3


def test_grid_search_selects_on_t_val_then_trains_the_folds(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "grid.toml"
    config.write_text(GRID)
    code, dry, err = run_cli(capsys, "run", config, "--dry-run")
    assert code == 0, err
    # 3 grid points (lp-ft reuses vanilla's: 2 learning rates, and lp's: 1) in seen mode; strict mode searches
    # again for each of the 3 length folds.
    assert "7 trainings in all: 4 scenario models + 3 grid points" in dry
    assert "grid mode strict would train 16" in dry

    store = tmp_path / "grid.duckdb"
    printed = run_benchmark(config, store)
    assert "3 trainings planned before selection (3 grid points)" in printed
    assert "4 trainings planned with the selected hyper-parameters" in printed
    points = query(store, "SELECT method, point, status, n_val_suite FROM grid_points ORDER BY ALL")
    assert [(m, s) for m, _, s, _ in points] == [("lp", "done"), ("vanilla", "done"), ("vanilla", "done")]
    assert {n for *_, n in points} == {15}  # T_val: 3 cases of each of the 5 phenomena
    terms = query(store, "SELECT DISTINCT test_type, metric FROM grid_test_type_scores ORDER BY ALL")
    assert terms == [("INV", "objective"), ("INV", "pass_rate"), ("MFT", "objective"), ("MFT", "pass_rate")]
    assert query(store, "SELECT DISTINCT source, metric FROM grid_metrics") == [("iid_val", "accuracy")]
    # lp-ft's folds train stage 1 with lp's choice and stage 2 with vanilla's.
    (chosen_vanilla,) = query(store, "SELECT p.point FROM grid_selections s JOIN grid_points p USING (grid_id) "
                                     "WHERE s.method = 'vanilla'")[0]
    lr = json.loads(chosen_vanilla)["learning_rate"]
    folds = query(store, "SELECT hparams FROM models")
    assert len(folds) == 4
    for (hparams,) in folds:
        hp = json.loads(hparams)
        assert [s["learning_rate"] for s in hp["stages"]] == [1e-3, lr]
        assert hp["method"] == {"lp_epochs": 0.5, "ft_epochs": 0.5}
    assert len(query(store, "SELECT * FROM g_scores WHERE g IS NOT NULL")) == 2  # seen and length

    again = run_benchmark(config, store)
    assert again.count("; running 0") == 2  # no grid point and no fold is trained again

    code, out, err = run_cli(capsys, "select", store, "--criterion", "worst_group", "--top", "2")
    assert code == 0, err
    assert "grid selection by worst_group" in out


HALVING = GRID.replace('methods = ["lp-ft"]', 'methods = ["vanilla"]').replace(
    "learning_rate = [5e-5, 1e-4]\nepochs = [1]",
    'learning_rate = [5e-5, 1e-4, 2e-4]\nepochs = [1, 2]\nstrategy = "halving"')


def test_halving_search_goes_on_from_each_rungs_state_and_selects_at_the_last(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from beluga_core.training import checkpoints as ck

    taken: list[object] = []
    resume_rung = ck.JobCheckpoints.resume_rung

    def recorded(self: ck.JobCheckpoints, *args: object, **kwargs: object) -> ck.Resume | None:
        taken.append(resume := resume_rung(self, *args, **kwargs))   # type: ignore[arg-type]
        return resume

    monkeypatch.setattr(ck.JobCheckpoints, "resume_rung", recorded)
    config = tmp_path / "halving.toml"
    config.write_text(HALVING.split("[grid.methods.lp]")[0])
    store = tmp_path / "grid.duckdb"
    printed = run_benchmark(config, store)
    # 3 learning rates to 1 epoch; the best third (1) goes on to 2 epochs, from the state rung 0 kept.
    assert "3 trainings planned before selection (3 grid points at the first rung of halving)" in printed
    assert "1 trainings planned at the next rung of halving (2 epochs)" in printed
    assert len(taken) == 1 and isinstance(taken[0], ck.Resume)
    rungs = query(store, "SELECT rung, rung_epochs, point->>'epochs' FROM grid_scores ORDER BY ALL")
    assert rungs == [(0, 1.0, "2.0")] * 3 + [(1, 2.0, "2.0")]
    (chosen,) = query(store, "SELECT p.hparams->'halving'->>'rung' FROM grid_selections s "
                             "JOIN grid_points p USING (grid_id)")
    assert chosen == ("1",)
    assert {json.loads(h)["epochs"] for (h,) in query(store, "SELECT hparams FROM models")} == {2.0}
    assert not list((tmp_path / "grid.duckdb.cache" / "rungs").iterdir())   # every kept state dropped once used
    # The grid-search guide's query reads where each point stopped.
    (sql,) = doc_blocks("sql", page="guides/grid-search.md")
    stops = query(store, sql)
    assert sorted((r[2], r[3], r[5]) for r in stops) == [(0, 1.0, False), (0, 1.0, False), (1, 2.0, True)]

    again = run_benchmark(config, store)
    assert again.count("; running 0") == 3   # rung 0, rung 1 and the folds: nothing trained again
    monkeypatch.setenv("COLUMNS", "200")   # the tables' cells on one line
    # The dry run of the finished store forms the rungs and folds the run did, from the stored scores: all done.
    code, dry, err = run_cli(capsys, "run", config, "--dry-run")
    assert code == 0, err
    assert "grid points: 4 planned, 4 done, 0 failed (retried), 0 to run" in dry
    assert "scenario models: 4 planned, 4 done, 0 failed (retried), 0 to run" in dry
    code, out, err = run_cli(capsys, "select", store)
    assert code == 0, err
    assert "successive halving: where each point stopped" in out and "rung 1 (2 epochs)" in out
