"""A training configuration that starts from a model of another store (``[training.configurations.NAME] start =
"store:PATH#SELECTOR"``): adaptive adversarial training, whose suite was generated against the model it trains.

The external store is the session's tiny relation run (``relation_store``: its IID model's weights are kept); the
run that starts from it is one iid-plus-t training on the same suite (a few seconds).
"""

from __future__ import annotations

import io
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import duckdb
import pytest
import torch
from helpers import DATA, config_with, query, run_benchmark, run_cli
from rich.console import Console
from toy_model import TOY_DIR

from beluga_core.cli.plan_view import print_plan
from beluga_core.config.load import load_config
from beluga_core.core.errors import BelugaError
from beluga_core.execution.worker import Worker
from beluga_core.orchestration.plan_summary import summarize_plan
from beluga_core.orchestration.teachers import plan_with_stores, start_model
from beluga_core.planning.plan import Plan, build_plan
from beluga_core.planning.start_sources import StartModel

FIELD = "field 'training.configurations.iid-plus-t.start'"


def _config(tmp: Path, start: str, *, scenarios: str = '["seen"]', configurations: str = '["iid-plus-t"]',
            append: str = "", name: str = "config.toml", test_per_group: int = 1) -> Path:
    """tests/data/tiny-relation.toml as a second run: iid-plus-t starting from ``start``, 32 D_train sentences mixed
    in, 16 scored, one T_test case per group (the same split: the cases it keeps are fewer, none moves)."""
    return config_with(DATA / "tiny-relation.toml", tmp, replace={
        'configurations = ["iid", "iid-then-t"]': f"configurations = {configurations}",
        'scenarios = ["standard", "seen", "family", "only:family"]': f"scenarios = {scenarios}",
        'path = "tiny-relation.duckdb"': 'path = "adaptive.duckdb"', "[sizes]\n": "[sizes]\niid_mix = 32\n",
        "iid_test = 96": "iid_test = 16", "suite_test_per_group = 3": f"suite_test_per_group = {test_per_group}"},
        append=f'\n[training.configurations.iid-plus-t]\nstart = "{start}"\n{append}', name=name)


def _iid_id(store: Path) -> str:
    return str(query(store, "SELECT model_id FROM models WHERE config = 'iid' AND status = 'done'")[0][0])


# -- planning: identity and leaks, with a resolver of known answers ----------------------------------------------

def _resolver(weights: Path, model_id: str, trained: dict[str, frozenset[str]] | None = None,
              iid: str = "builtin:fewrel16") -> Callable[..., StartModel]:
    """A resolver whose answer is known: the model ``model_id``, trained on ``trained``."""
    def resolve(source: str, **_: object) -> StartModel:
        return StartModel(source, model_id, "iid/vanilla@standard#0", "elsewhere.duckdb", str(weights), iid,
                          trained or {})
    return resolve


def _ids(plan: Plan) -> dict[tuple[str, str], str]:
    return {(j.config, j.scenario): j.id for j in plan.jobs}


def test_the_start_models_id_enters_the_job_ids_of_its_configuration_only(tmp_path: Path) -> None:
    weights = tmp_path / "w.pt"
    weights.write_bytes(b"")
    both = '["iid", "iid-plus-t", "iid-then-iid-plus-t"]'
    started = _config(tmp_path, "store:elsewhere.duckdb#iid/vanilla", configurations=both)
    plain = config_with(started, tmp_path, replace={'start = "store:elsewhere.duckdb#iid/vanilla"': 'start = "plm"'},
                        name="plain.toml")
    plan = build_plan(load_config(started), started, starts=_resolver(weights, "a" * 64))
    a = _ids(plan)
    b = _ids(build_plan(load_config(started), started, starts=_resolver(weights, "b" * 64)))
    without = _ids(build_plan(load_config(plain), plain))
    assert a.keys() == without.keys() == {("iid", "standard"), ("iid-plus-t", "seen"), ("iid-then-iid-plus-t", "seen")}
    # Different start models, different jobs; each differs from the same configuration started from the PLM.
    assert len({a[("iid-plus-t", "seen")], b[("iid-plus-t", "seen")], without[("iid-plus-t", "seen")]}) == 3
    # The jobs that do not start from it keep their ids.
    for key in (("iid", "standard"), ("iid-then-iid-plus-t", "seen")):
        assert a[key] == b[key] == without[key]
    job = next(j for j in plan.jobs if j.config == "iid-plus-t")
    assert job.start_model == "a" * 64 and job.parent_id is None and job.requires == ()
    assert plan.tasks[0].settings(job)["start_from"] == {"model_id": "a" * 64, "store": "elsewhere.duckdb",
                                                         "selector": "iid/vanilla@standard#0"}
    # Planning cannot read stores: without the resolver of the layer that can, such a plan is refused.
    with pytest.raises(BelugaError, match="without a start resolver"):
        build_plan(load_config(started), started)


def test_what_the_start_model_trained_on_counts_as_trained_on(tmp_path: Path) -> None:
    weights = tmp_path / "w.pt"
    weights.write_bytes(b"")
    config = _config(tmp_path, "store:elsewhere.duckdb#x", scenarios='["seen", "family"]')
    suite_plan = build_plan(load_config(config), config, starts=_resolver(weights, "c" * 64)).tasks[0]
    suite, split = suite_plan.suite, suite_plan.split
    name = suite.header.name
    # Clean: it trained on every T_train case, and no fold is scored on one or holds a group out.
    clean = _config(tmp_path, "store:elsewhere.duckdb#x", scenarios='["seen"]', name="clean.toml")
    build_plan(load_config(clean), clean, starts=_resolver(weights, "c" * 64, {name: frozenset(split.train)}))
    # A T_test case it trained on: every fold scored on it leaks; its family held out leaks too.
    test_case, train_case = suite.case(split.test[0]), suite.case(split.train[0])
    fam_test, fam_train = test_case.groups["family"], train_case.groups["family"]
    trained = {name: frozenset({test_case.id, train_case.id})}
    with pytest.raises(BelugaError) as err:
        build_plan(load_config(config), config, starts=_resolver(weights, "c" * 64, trained))
    message = str(err.value)
    assert f"1 case(s) of suite '{name}' that its jobs are scored on (T_test): {test_case.id}" in message
    expected = {fam_test: 2} if fam_test == fam_train else {fam_test: 1, fam_train: 1}
    held = ", ".join(f"family={g} ({n} case(s))" for g, n in sorted(expected.items()))
    assert f"held-out group(s) it trained on cases of, which its folds hold out: {held}" in message
    assert "field 'training.configurations.iid-plus-t.start'" in message
    # Cases of another suite are not this suite's; another i.i.d. source is refused (its D_train may hold D_test).
    build_plan(load_config(clean), clean, starts=_resolver(weights, "c" * 64, {"other": frozenset(split.test)}))
    with pytest.raises(BelugaError, match=re.escape("trains on i.i.d. builtin:fewrel16. D_train and D_test")):
        build_plan(load_config(clean), clean, starts=_resolver(weights, "c" * 64, iid="builtin:sst2"))
    with pytest.raises(BelugaError, match="its weights were not kept"):
        build_plan(load_config(clean), clean, starts=_resolver(tmp_path / "none.pt", "c" * 64))


def test_a_malformed_start_is_refused_naming_its_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = _config(tmp_path, "store:runs/x.duckdb")
    code, _, err = run_cli(capsys, "run", config, "--dry-run")
    assert code == 2 and "training.configurations.iid-plus-t.start" in err and "store:PATH#SELECTOR" in err


# -- a real external store ------------------------------------------------------------------------------------------

def test_a_run_starts_from_a_model_of_another_store(relation_store: Path, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    iid = _iid_id(relation_store)
    config, store = _config(tmp_path, f"store:{relation_store}#iid/vanilla"), tmp_path / "adaptive.duckdb"
    plan = plan_with_stores(load_config(config).with_store_path(str(store)), config)
    dry = io.StringIO()
    print_plan(summarize_plan(plan), Console(file=dry, width=200))   # what `beluga run --dry-run` prints
    assert (f"iid-plus-t: its 1 job(s) start from model {iid[:12]} (iid/vanilla@standard#42) of {relation_store}, "
            "trained on i.i.d. builtin:fewrel16 and no suite case") in " ".join(dry.getvalue().split())
    job = plan.jobs[0]
    # The worker loads the kept weights as they are.
    kept = torch.load(plan.tasks[0].starts["iid-plus-t"].weights, map_location="cpu", weights_only=True)
    state = Worker(plan.for_workers(), device="cpu")._start_state(job, plan.tasks[0])
    assert state.keys() == kept.keys() and all(torch.equal(state[k], kept[k]) for k in kept)
    run_benchmark(config, store, plan)
    rows = query(store, "SELECT model_id, config, parent_model_id, settings->'start_from'->>'model_id', "
                        "settings->>'start_model' FROM models WHERE status = 'done'")
    assert rows == [(job.id, "iid-plus-t", None, iid, iid)]
    assert query(store, "SELECT count(*) FROM training_leaks") == [(0,)]
    code, _, err = run_cli(capsys, "store", "check", store)
    assert code == 0, err
    code, out, err = run_cli(capsys, "report", store)
    assert code == 0, err
    assert (f"iid-plus-t starts from model {iid[:12]} (iid/vanilla@standard#42) of {relation_store}, another "
            "store's") in " ".join(out.split())


def test_a_start_model_that_trained_on_what_the_run_scores_is_refused(relation_store: Path, tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    seen = f"store:{relation_store}#iid-then-t/vanilla@seen"
    trained = query(relation_store, "SELECT count(*) FROM model_training_cases t JOIN models m USING (model_id) "
                                    "WHERE m.config = 'iid-then-t' AND m.scenario = 'seen'")[0][0]
    assert trained > 0
    # Its family held out: the family is not unseen.
    code, _, err = run_cli(capsys, "run", _config(tmp_path, seen, scenarios='["seen", "family"]'), "--dry-run")
    assert code == 2 and FIELD in err and "held-out group(s) it trained on cases of" in err, err
    assert f"{trained:,} suite cases" in " ".join(err.split())
    # Another split: T_test cases of this run (all of them) are T_train cases it trained on.
    other_split = _config(tmp_path, seen, append="\n[split]\nseed = 7\n", test_per_group=0)
    code, _, err = run_cli(capsys, "run", other_split, "--dry-run")
    assert code == 2 and FIELD in err and "that its jobs are scored on (T_test)" in err, err
    # Clean: the same split and nothing held out; it then stops only because its weights were not kept.
    code, _, err = run_cli(capsys, "run", _config(tmp_path, seen), "--dry-run")
    assert code == 2 and FIELD in err and "its weights were not kept" in err, err


@pytest.mark.parametrize(("start", "expected"), [
    ("store:{tmp}/missing.duckdb#iid/vanilla", "no such result store"),
    ("store:{store}#iid/lora", "names no done model"),
    ("store:{store}#iid-then-t/vanilla@family", "names 4 models"),
])
def test_a_start_that_names_no_one_model_stops_the_dry_run(relation_store: Path, tmp_path: Path, start: str,
                                                           expected: str, capsys: pytest.CaptureFixture[str]) -> None:
    config = _config(tmp_path, start.format(tmp=tmp_path, store=relation_store))
    code, _, err = run_cli(capsys, "run", config, "--dry-run")
    line = next(i for i, text in enumerate(config.read_text().splitlines(), 1) if text.startswith("start ="))
    assert code == 2 and f"line {line}, {FIELD}" in err and expected in " ".join(err.split()), err


def test_a_start_model_of_another_task_label_space_or_status_is_refused(relation_store: Path, tmp_path: Path) -> None:
    common = {"task": "relation", "model": str(TOY_DIR), "model_config": {}, "base": tmp_path}
    source = f"store:{relation_store}#iid/vanilla"
    with pytest.raises(BelugaError, match=r"names no done model of task 'sentiment' .*, only of task.s. relation"):
        start_model(source, labels=None, **{**common, "task": "sentiment"})
    with pytest.raises(BelugaError, match="has a head with classes"):
        start_model(source, labels=["yes", "no"], **common)
    with pytest.raises(BelugaError, match="config_overrides"):
        start_model(source, labels=None, **{**common, "model_config": {"num_hidden_layers": 1}})
    # A model that is not done (its run failed or was interrupted).
    copy = tmp_path / "copy.duckdb"
    shutil.copy(relation_store, copy)
    con = duckdb.connect(str(copy))
    con.execute("UPDATE models SET status = 'failed' WHERE model_id = ?", [_iid_id(relation_store)])
    con.close()
    with pytest.raises(BelugaError, match=r"names no done model in .*is failed"):
        start_model(f"store:{copy}#iid/vanilla", labels=None, **common)
