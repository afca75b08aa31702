"""What a plan costs (``orchestration.pricing`` over ``planning.estimate``, rates from ``execution.calibration``):
each formula against hand-computed values, the counts recomputed from the suite by rules written here, and the
calibration's cache."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import DATA, config_with

from beluga_core.config.load import load_config
from beluga_core.contracts.registries import LOSSES
from beluga_core.execution import calibration
from beluga_core.execution.calibration import Measured, StepShape, pass_flops
from beluga_core.execution.sizing import Workers
from beluga_core.orchestration.pricing import fit_fixed_and_factor, price, simulate
from beluga_core.orchestration.teachers import plan_with_stores
from beluga_core.planning.estimate import DEFAULT_EVAL_RATE, DEFAULT_TRAIN_RATE, Rates, TaskRates, job_costs
from beluga_core.planning.plan import Plan

pytestmark = pytest.mark.usefixtures("one_thread")


def _plan(tmp_path: Path, config: str = "tiny-sentiment.toml") -> Plan:
    path = config_with(DATA / config, tmp_path)
    return plan_with_stores(load_config(path).with_store_path(str(tmp_path / "priced.duckdb")), path)


def test_the_schedule_of_a_chain_and_two_lone_jobs_on_two_workers() -> None:
    # a (3 s) before b (2 s); c (4 s) and d (1 s) alone; in that order. Two workers: a and c at 0; a ends at 3, b
    # starts (ready, and before d in the order) and ends at 5; c ends at 4, d starts and ends at 5. One worker: 10.
    ids, requires = ["a", "b", "c", "d"], {"b": ["a"]}
    seconds = {"a": 3.0, "b": 2.0, "c": 4.0, "d": 1.0}
    assert simulate(ids, requires, seconds, 2) == (5.0, 5.0)
    assert simulate(ids, requires, seconds, 1) == (10.0, 5.0)
    # Three workers: the chain a → b (5 s) is the whole run; a requirement outside the jobs counts as done.
    assert simulate(ids, requires, seconds, 3) == (5.0, 5.0)
    assert simulate(["b", "d"], requires, seconds, 2) == (2.0, 2.0)


def test_a_pass_counts_two_flops_per_parameter_and_token_and_attention() -> None:
    # 2 layers of 10 parameters, hidden 4, 3 tokens: forward 2 · 3 · (2 · 10 + 4 · 3 · 4) = 408; training 3 × 408.
    assert pass_flops(10, 2, 4, 3, train=False) == 408
    assert pass_flops(10, 2, 4, 3, train=True) == 1224
    # A step of 8 rows at 0.8 s per step and 0.1 s per row: 0.2 s per row.
    assert Measured(0.8, 0.1, "", "").seconds(8) == pytest.approx(0.2)


def test_a_batch_not_measured_takes_the_nearest_measured_one() -> None:
    r = TaskRates({8: 0.5, 32: 0.25}, 0.01, "calibrated")
    assert (r.train_seconds(8), r.train_seconds(16), r.train_seconds(24), r.train_seconds(64)) == \
        (0.5, 0.5, 0.25, 0.25)   # 16 is 8 from both: the smaller batch, the slower and safer guess


def test_a_store_fit_splits_a_fixed_cost_from_a_factor() -> None:
    # stored = 2 + 1.5 · predicted exactly: least squares finds both.
    predicted = [1.0, 2.0, 4.0, 8.0]
    fixed, factor = fit_fixed_and_factor(predicted, [2 + 1.5 * x for x in predicted], 0.1)
    assert (fixed, factor) == (pytest.approx(2.0), pytest.approx(1.5))
    # Predictions all alike cannot tell a fixed cost from a factor: the fixed cost given is kept, and the factor makes
    # the totals agree: (4 · 3 − 4 · 0.5) / (4 · 2) = 1.25.
    assert fit_fixed_and_factor([2.0] * 4, [3.0] * 4, 0.5) == (0.5, pytest.approx(1.25))
    # A fit with a negative fixed cost is not sensible: the totals again, (10 + 20 − 2 · 0.1) / 3.
    assert fit_fixed_and_factor([1.0, 2.0], [10.0, 20.0 + 5.0], 0.1)[0] >= 0


def _rows(case) -> int:   # the tasks' training sets, read here from classification.py's rules
    if LOSSES.get(case.loss).kind == "single":
        return len(case.inputs) if case.test_type == "MFT" else 1
    return 2 if len(case.inputs) >= 2 else 0


def test_every_job_costs_its_cases_rows_and_inputs_at_the_rates(tmp_path: Path) -> None:
    plan = _plan(tmp_path)
    cfg = plan.config
    (tp,) = plan.tasks
    rates = Rates(per_task={"sentiment": TaskRates({16: 0.02}, 0.001, "test")}, fixed=0.3)
    cost = job_costs(plan, rates, iid_test={"sentiment": 64}, iid_train={"sentiment": 1000})
    cases = {c.id: c for c in tp.suite.cases}
    for job in plan.jobs:
        c = cost(job)
        if job.is_iid_model:
            examples = cfg.sizes.iid_train * 1.0   # [sizes] iid_train = 200 wins over D_train's size; 1 epoch
        else:
            examples = float(sum(_rows(cases[i]) for i in job.fold.train_ids))   # iid-then-t mixes nothing in
        inputs = sum(len(cases[i].inputs) for i in job.fold.eval_ids) + (64 if job.score_iid else 0)
        assert (c.examples, c.inputs) == (examples, inputs), job.id
        assert c.seconds == pytest.approx(0.3 + 0.02 * examples + 0.001 * inputs)


def test_the_plan_priced_at_the_defaults_sums_its_jobs_per_phase(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BELUGA_CALIBRATION", "off")
    plan = _plan(tmp_path)
    (tp,) = plan.tasks
    cases = {c.id: c for c in tp.suite.cases}
    p = price(plan, Workers((), "test", 1))
    names = [ph.name for ph in p.phases]
    assert names == ["IID models", "scenario models", "evaluation (in the rows above)", "in all"]
    iid, folds, evaluation, total = p.phases
    fold_jobs = [j for j in plan.jobs if not j.is_iid_model]
    assert (iid.trainings, folds.trainings, total.trainings) == (1, len(fold_jobs), len(plan.jobs))
    examples = sum(sum(_rows(cases[i]) for i in j.fold.train_ids) for j in fold_jobs)
    inputs = sum(sum(len(cases[i].inputs) for i in j.fold.eval_ids) + (64 if j.score_iid else 0) for j in fold_jobs)
    assert (folds.examples, folds.inputs) == (examples, inputs)
    # Every job in turn: 0.1 s fixed + examples / 64 + inputs / 350 (the defaults).
    assert folds.seconds == pytest.approx(0.1 * len(fold_jobs) + examples / DEFAULT_TRAIN_RATE
                                          + inputs / DEFAULT_EVAL_RATE)
    assert evaluation.inputs == iid.inputs + folds.inputs
    assert total.seconds == pytest.approx(iid.seconds + folds.seconds)
    # One worker: the wall is every job in turn; the critical path the IID model and its longest child.
    assert total.wall == pytest.approx(total.seconds)
    child = max(0.1 + sum(_rows(cases[i]) for i in j.fold.train_ids) / DEFAULT_TRAIN_RATE
                + (sum(len(cases[i].inputs) for i in j.fold.eval_ids) + (64 if j.score_iid else 0))
                / DEFAULT_EVAL_RATE for j in fold_jobs)
    assert total.critical_path == pytest.approx(iid.seconds + child)
    assert any("BELUGA_CALIBRATION=off" in s for s in p.sources)
    # The record `beluga run` keeps with the run: the same figures.
    rec = p.record()
    assert [(r["name"], r["trainings"]) for r in rec["phases"]] == [(ph.name, ph.trainings) for ph in p.phases]


def test_a_shape_is_measured_once_then_read_from_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    model = str(DATA / "models" / "toy-bert")
    shape = StepShape(model, "{}", 2, 12, True, 8, "cpu", "fp32", 1)
    first = calibration.calibrate([shape])[shape]
    assert isinstance(first, Measured) and not first.cached and first.per_row > 0 and first.per_step > 0
    assert "random-init" in first.how and "scaled to" in first.how
    (entry,) = (tmp_path / "cache" / "beluga" / "calibration").glob("*.json")
    key = json.loads(entry.read_text())["key"]
    assert key["shape"]["model"] == model and key["versions"]["beluga"] and key["cpu"]
    calls: list[StepShape] = []
    real = calibration.measure
    monkeypatch.setattr(calibration, "measure", lambda s, models=None: calls.append(s) or real(s, models))
    again = calibration.calibrate([shape])[shape]
    assert isinstance(again, Measured) and again.cached and (again.per_row, again.per_step) == \
        (first.per_row, first.per_step) and not calls
    fresh = calibration.calibrate([shape], refresh=True)[shape]
    assert isinstance(fresh, Measured) and not fresh.cached and calls == [shape]
    # Another precision is another shape: measured, not read.
    calibration.calibrate([StepShape(model, "{}", 2, 12, True, 8, "cpu", "bf16", 1)])
    assert len(calls) == 2
    # A model whose config is nowhere: why, not a number.
    unknown = StepShape("no-such-org/no-such-model", "{}", 2, 12, True, 8, "cpu", "fp32", 1)
    assert "not on this machine" in str(calibration.calibrate([unknown])[unknown])


def test_hub_models_of_the_shipped_configs_have_their_shapes_here() -> None:
    for name, (layers, hidden) in {"bert-base-uncased": (12, 768),
                                   "bert-large-uncased-whole-word-masking": (24, 1024)}.items():
        found = calibration.model_config(name, None, 2)
        assert found is not None
        config, whence = found
        assert (config.num_hidden_layers, config.hidden_size) == (layers, hidden)
        assert whence in ("beluga's copy of its hub config", "its config on this machine")


def test_store_info_sets_a_runs_estimate_against_what_it_took(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    from datetime import datetime, timedelta

    import duckdb
    from helpers import run_cli
    from store_builder import StoreBuilder, make_cases

    path = tmp_path / "timed.duckdb"
    builder = StoreBuilder(path)
    cases = {c.case_id: "pass" for c in make_cases()}
    iid = builder.add("iid", "vanilla", "standard", cases)
    folds = builder.add("iid-then-t", "vanilla", "test_type", cases)
    started = datetime(2026, 1, 1, 12)
    estimate = {"workers": 2, "sources": ["calibrated here"],
                "phases": [{"name": "IID models", "trainings": 1, "examples": 10, "inputs": 5, "seconds": 100.0,
                            "wall": 100.0},
                           {"name": "scenario models", "trainings": len(folds), "examples": 10, "inputs": 5,
                            "seconds": 40.0, "wall": 20.0},
                           {"name": "evaluation (in the rows above)", "trainings": 0, "examples": 0, "inputs": 10,
                            "seconds": 5.0, "wall": 0.0},
                           {"name": "in all", "trainings": 1 + len(folds), "examples": 20, "inputs": 10,
                            "seconds": 140.0, "wall": 120.0}]}
    run_id = builder.writer.begin_run(run_id="r1", started_at=started, executor={"workers": 2, "estimate": estimate})
    builder.writer.finish_run(run_id, finished_at=started + timedelta(seconds=180))
    with duckdb.connect(str(path)) as con:   # what the run's jobs took: the IID model 150 s, each fold 10 + 2 s
        con.execute("UPDATE models SET run_id = 'r1', train_seconds = 140, eval_seconds = 10 WHERE model_id = ?", iid)
        con.execute("UPDATE models SET run_id = 'r1', train_seconds = 10, eval_seconds = 2 WHERE scenario = "
                    "'test_type'")
    code, out, _ = run_cli(capsys, "store", "info", path)
    assert code == 0
    lines = [line.strip() for line in out.splitlines()]
    assert "run r1 (done): estimated 2m00s with 2 worker(s), took 3m00s (×1.50 the estimate)" in lines
    assert "IID models: 1 estimated at 1m40s of compute; 1 done in 2m30s (×1.50)" in lines
    took = 12 * len(folds)
    assert (f"scenario models: {len(folds)} estimated at 40s of compute; {len(folds)} done in {took}s "
            f"(×{took / 40:.2f})") in lines
    assert "rates: calibrated here" in lines


def test_the_dry_runs_token_count_never_downloads_a_tokenizer(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a network a download attempt waits out its timeouts (140 s of full.toml's dry run, measured): the
    pricing reads a tokenizer only where this machine has it, else MiniLM's."""
    import transformers

    from beluga_core.core.errors import BelugaError
    from beluga_core.orchestration import pricing

    asked: list[dict[str, object]] = []

    def from_pretrained(path: object, **kwargs: object) -> object:
        asked.append(kwargs)
        raise OSError("not in the local cache")

    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", from_pretrained)
    with pytest.raises(BelugaError):
        pricing._tokenizer.__wrapped__("bert-base-uncased")
    assert asked == [{"local_files_only": True}]
