"""``beluga run --tiny``: what it shrinks, what it keeps, the hub names it replaces (and says so), and
``[sizes] groups_per_level``, the sampled held-out groups it relies on. No training here: the shipped configs'
tiny runs are tests/e2e/test_every_config.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import REPO, run_cli

from beluga_core.config.load import load_config
from beluga_core.config.tiny import TINY, tiny_config, tiny_store_path
from beluga_core.core.errors import BelugaError
from beluga_core.data.splits import split_suite
from beluga_core.evaluation.suites import load_checked_suite
from beluga_core.planning.folds import make_folds

BENCH = REPO / "benchmarks"


def test_tiny_keeps_what_runs_and_replaces_hub_names() -> None:
    cfg = load_config(BENCH / "full.toml")
    tiny, notes = tiny_config(cfg)
    # What runs is the config's.
    for field in ("configurations", "methods", "scenarios", "seeds", "split", "executor"):
        assert getattr(tiny, field) == getattr(cfg, field), field
    assert [t.name for t in tiny.tasks] == ["sentiment", "paraphrase", "reading"]
    assert [t.suite for t in tiny.tasks] == [t.suite for t in cfg.tasks]
    assert tiny.grid.enabled and (tiny.grid.mode, tiny.grid.criterion) == (cfg.grid.mode, cfg.grid.criterion)
    # Hub names: the embedded model and each task's shipped stand-in, every one said.
    assert tiny.model.name == "embedded:minilm" and tiny.model.task_models == {"reading": "embedded:minilm"}
    assert [t.iid for t in tiny.tasks] == ["builtin:sst2", "builtin:qqp-fixture", "builtin:squad-fixture"]
    said = "\n".join(notes)
    for where, name in (("model.name", "bert-base-uncased"), ("model.task_models.reading",
                                                               "bert-large-uncased-whole-word-masking"),
                        ("tasks.0.iid", "glue/sst2"), ("tasks.1.iid", "glue/qqp"), ("tasks.2.iid", "squad")):
        assert f"{where} '{name}' is a hub" in said, (where, said)
    # How much shrinks.
    s = tiny.sizes
    assert (s.iid_train, s.iid_mix, s.iid_test, s.suite_train_per_group, s.suite_val_per_group,
            s.suite_test_per_group, s.groups_per_level) == (32, 8, 16, 1, 1, 1, 1)
    assert tiny.model.config_overrides == {"num_hidden_layers": 1} and tiny.model.max_length == TINY["max_length"]
    assert (tiny.training.epochs, tiny.training.batch_size) == (1, 64)
    assert tiny.grid.base_axes() == {"batch_size": [64], "learning_rate": [2e-5], "epochs": [1]}
    # The task's own axes (reading's batch sizes) and the config's per-task ones: one point, 64 or more.
    assert tiny.grid.tasks["reading"] == {"batch_size": [64]}
    assert tiny.grid.methods["lp"]["learning_rate"] == [1e-4] and "lp-ft" not in tiny.grid.methods
    assert tiny.tasks[2].options == {"max_length": 96, "doc_stride": 24, "max_query_length": 32, "n_best": 5}
    assert tiny.store_spec.path.endswith("runs/full.tiny.duckdb")


def test_tiny_keeps_named_groups_and_sections_at_small_sizes() -> None:
    cfg = load_config(BENCH / "quick-rank-sentiment.toml")
    tiny, _ = tiny_config(cfg)
    assert tiny.sizes.suite_test_per_group_of == dict.fromkeys(cfg.sizes.suite_test_per_group_of, 1)
    assert tiny.fewshot.enabled and tiny.fewshot.levels == cfg.fewshot.levels
    assert (tiny.fewshot.n, tiny.fewshot.pool_cap, tiny.fewshot.perturbations) == (2, 4, 1)
    assert tiny.attributions.methods == ["tokig"] and tiny.attributions.cases == "none"
    assert tiny.attributions.cap_per_fold == 2 and tiny.attributions.options["tokig"]["steps"] == 4
    assert tiny.store_spec.keep_probabilities == cfg.store_spec.keep_probabilities
    smoke, _ = tiny_config(load_config(BENCH / "methods-smoke.toml"))
    assert smoke.model.config_overrides == {"num_hidden_layers": 1}              # 3 layers there
    assert smoke.methods_hparams["lp-ft"] == {"lp_epochs": 0.5, "ft_epochs": 0.5}  # not training keys: kept
    assert smoke.sizes.iid_mix_of == {} and smoke.training.iid.learning_rate == 2e-4
    cross, _ = tiny_config(load_config(BENCH / "quick-cross.toml"))
    assert [e.cases_per_group for e in cross.tasks[0].eval_specs()] == [1]
    assert tiny_store_path("../runs/quick.duckdb") == "../runs/quick.tiny.duckdb"


def test_tiny_stops_on_a_hub_dataset_without_a_stand_in(tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "c.toml"
    config.write_text('name = "c"\nconfigurations = ["iid"]\nscenarios = ["standard"]\n[[tasks]]\n'
                      'name = "classification"\nsuite = "builtin:sentiment"\niid = "someone/intents"\n')
    with pytest.raises(BelugaError, match="ships no offline stand-in"):
        tiny_config(load_config(config))
    code, _, err = run_cli(capsys, "run", config, "--tiny", "--dry-run")
    assert code == 2 and "line 7" in err and "tasks.0.iid" in err and "someone/intents" in err


def test_groups_per_level_samples_the_folds_of_each_level() -> None:
    suite = load_checked_suite("builtin:sst2-phenomena")
    split = split_suite(suite, 123)
    scenarios = ["seen", "phenomenon", "length", "only:length"]
    every, _ = make_folds(suite, split, scenarios)
    one, _ = make_folds(suite, split, scenarios, groups_per_level=1, seed=123)
    assert make_folds(suite, split, scenarios, groups_per_level=1, seed=123)[0] == one   # seeded, stable
    count = {s: sum(1 for f in every if (f.heldout_level or (f.trained_level and "only")) == s)
             for s in ("phenomenon", "length", "only")}
    assert count["phenomenon"] > 1 and count["length"] > 1 and count["only"] > 1
    levels = [f.heldout_level or f"only:{f.trained_level}" if f.scenario != "seen" else "seen" for f in one]
    assert sorted(levels) == ["length", "only:length", "phenomenon", "seen"]
    assert set(one) <= set(every)
