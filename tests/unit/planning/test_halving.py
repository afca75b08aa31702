"""Successive halving as part of the plan (``planning.halving``), without training: the rungs' sizes, rung 0's jobs,
the dry run's counts, promotion by the stored scores and selection at the last rung."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import run_cli

from beluga_core.config.load import parse_config
from beluga_core.core.errors import BelugaError
from beluga_core.evaluation.gold import case_gold
from beluga_core.execution.results import GridPointRecord, JobResult, Outcomes, ValidationRow
from beluga_core.orchestration.selection.select import promote_rungs, rank_grid_points, select_for_plan
from beluga_core.planning.estimate import job_costs
from beluga_core.planning.halving import kept, rung_of, rung_sizes
from beluga_core.planning.jobs import Job
from beluga_core.planning.plan import Plan, build_plan
from beluga_core.store.reader import open_store
from beluga_core.store.suite_rows import suite_rows
from beluga_core.store.writer import StoreWriter

BASE = """
name = "h"
configurations = ["iid", "iid-then-t"]
methods = ["vanilla", "irm"]
scenarios = ["standard", "seen", "length"]
[[tasks]]
name = "sentiment"
suite = "builtin:sst2-phenomena"
iid = "builtin:sst2"
[sizes]
suite_train_per_group = 4
suite_val_per_group = 3
suite_test_per_group = 3
[grid]
enabled = true
{grid}
"""


def plan_of(tmp_path: Path, grid: str = "") -> Plan:
    path = tmp_path / "h.toml"
    text = BASE.format(grid=grid)
    path.write_text(text)
    return build_plan(parse_config(text, path), path)


def test_each_rung_keeps_the_top_third_rounded_up() -> None:
    assert [kept(n, 3) for n in (0, 1, 2, 3, 4, 6, 7, 18)] == [0, 1, 1, 1, 2, 2, 3, 6]
    assert rung_sizes(6, 3, 3) == [6, 2, 1] and rung_sizes(18, 3, 3) == [18, 6, 2] and rung_sizes(9, 2, 2) == [9, 5]


def test_rung_zero_trains_every_point_to_the_smallest_budget_on_the_largest_ones_schedule(tmp_path: Path) -> None:
    full = plan_of(tmp_path)
    plan = plan_of(tmp_path, 'strategy = "halving"')
    # The reference grid: batch sizes {8, 16} x learning rates {2e-5, 3e-5, 5e-5}; epochs {1, 2, 3} are the rungs.
    searches = plan.halving
    assert [(s.key[2], len(s.points), s.budgets) for s in searches] == [("vanilla", 6, (1.0, 2.0, 3.0)),
                                                                       ("irm", 6, (1.0, 2.0, 3.0))]
    assert len(plan.grid_jobs) == 12 and len(full.grid_jobs) == 36
    by_point = {(j.method, tuple(sorted((j.point or {}).items()))): j for j in full.grid_jobs}
    for job in plan.grid_jobs:
        assert job.point is not None and job.point["epochs"] == 3.0
        assert job.hparams["epochs"] == 3.0   # the schedule of the largest budget
        assert job.hparams["halving"] == {"rung": 0, "epochs": 1.0, "from_epochs": 0.0}
        # One training across rungs: its seed is the full search's point of the largest budget.
        same = by_point[(job.method, tuple(sorted(job.point.items())))]
        assert job.training_id == same.id and job.id != same.id and job.resume_from is None
    later = plan.planned_rungs()
    assert [rung_of(j.hparams).index for j, _ in later if j.method == "vanilla"] == [1, 1, 2]  # type: ignore[union-attr]


def test_halving_trains_four_times_fewer_grid_examples_on_the_reference_grid(tmp_path: Path) -> None:
    """Examples x epochs of the grid phase as the dry run counts them: per search, 6 points x (1 + 2 + 3) epochs in
    full; 6 x 1 + 2 x (2 - 1) + 1 x (3 - 2) with halving: 36 against 9 passes over T_train."""
    full, halving = plan_of(tmp_path), plan_of(tmp_path, 'strategy = "halving"')

    def grid_examples(plan: Plan) -> float:
        cost = job_costs(plan)
        return sum(cost(j).examples for j in [*plan.grid_jobs, *(j for j, _ in plan.planned_rungs())])

    rows = job_costs(full)(full.grid_jobs[0]).examples / float(full.grid_jobs[0].hparams["epochs"])
    assert grid_examples(full) == pytest.approx(2 * 36 * rows)
    assert grid_examples(halving) == pytest.approx(2 * 9 * rows)


def test_the_epochs_axis_must_hold_two_budgets(tmp_path: Path) -> None:
    with pytest.raises(BelugaError, match=r"epochs axis needs two or more distinct positive values .*\[2\.0\]"):
        plan_of(tmp_path, 'strategy = "halving"\nepochs = [2]')


def test_the_dry_run_shows_the_rungs(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")   # the table's cells on one line
    (tmp_path / "h.toml").write_text(BASE.format(grid='strategy = "halving"'))
    code, out, err = run_cli(capsys, "run", tmp_path / "h.toml", "--dry-run")
    assert code == 0, err
    assert "6 → 2 → 1 at 1, 2, 3 epochs" in out
    assert "+ 18 grid trainings (the rungs of successive halving; grid mode seen, criterion reference)" in out
    assert "grid points: 18 planned, 0 done, 0 failed (retried), 12 to run (+ 6 once the rungs before have run" \
        in " ".join(out.split())


def _commit(writer: StoreWriter, plan: Plan, job: Job, reference: float) -> None:
    tp = plan.tasks[0]
    val = list(tp.split.val)
    record = GridPointRecord(grid_id=job.id, task=job.task, config=job.config, method=job.method,
                             point=job.point or {}, suite=tp.suite.header.name, model_name=job.model, seed=job.seed,
                             split_seed=123, hparams=job.hparams)
    metrics = [ValidationRow("suite_val", "MFT", "objective", reference)]
    writer.commit(JobResult(record, Outcomes.of(val, ["pass"] * len(val), ["1"] * len(val)), validation=metrics))


def test_promotion_goes_on_with_the_best_third_and_selection_takes_the_last_rung(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, 'strategy = "halving"')
    store = tmp_path / "s.duckdb"
    writer = StoreWriter(store)
    writer.ensure_suite(*suite_rows(plan.tasks[0].suite, case_gold))
    vanilla, irm = plan.halving
    # Rung 0 of vanilla: points scored 0.1 .. 0.6 in an order unlike the points'; irm's rung 0 does not finish.
    scores = [0.3, 0.6, 0.1, 0.5, 0.2, 0.4]
    for job, score in zip(vanilla.rungs[0], scores, strict=True):
        _commit(writer, plan, job, score)
    new, ranked = promote_rungs(store, plan)
    # reference: MFT's objective + INV's (its pass rate, 1: every case passes)
    assert [r.value for r in ranked] == pytest.approx([1.6, 1.5])
    winners = [vanilla.rungs[0][1], vanilla.rungs[0][3]]   # 0.6 and 0.5, the top third of 6: 2, in point order
    assert [j.resume_from for j in new] == [w.id for w in winners] and irm.rungs[1] == []
    for j, w in zip(new, winners, strict=True):
        assert j.point == w.point and j.training_id == w.training_id
        assert j.hparams["halving"] == {"rung": 1, "epochs": 2.0, "from_epochs": 1.0}
    # Rung 1 reverses the order; rung 2 trains the one that goes on, and scores lower than rung 0's best.
    for job, score in zip(new, [0.7, 0.8], strict=True):
        _commit(writer, plan, job, score)
    (last,), _ = promote_rungs(store, plan)
    assert last.point == winners[1].point and last.hparams["halving"]["epochs"] == 3.0
    _commit(writer, plan, last, 0.05)
    assert vanilla.complete and promote_rungs(store, plan) == ([], [])
    chosen, _ = select_for_plan(store, plan)
    assert chosen == {("sentiment", "iid-then-t", "vanilla", None, None): last.point}
    with open_store(store) as con:
        (best,) = rank_grid_points(con, "reference")   # the store alone: the last rung, not rung 0's 1.6
        assert (best.grid_id, best.n_points) == (last.id, 1) and best.value == pytest.approx(1.05)
        stops = con.execute("SELECT point, stopped_rung, stopped_epochs, reference_by_rung FROM grid_halving "
                            "ORDER BY stopped_rung DESC, point").fetchall()
    assert stops[0][1:3] == (2, 3.0) and stops[0][3] == pytest.approx([1.5, 1.8, 1.05])
    assert sorted(r[1] for r in stops) == [0, 0, 0, 0, 1, 2]


@pytest.mark.parametrize(("grid", "d_val"), [("", 436), ("iid_val = 32", 32), ("score_iid_val = false", 0)])
def test_a_grid_point_costs_its_t_val_inputs_and_the_d_val_it_is_scored_on(tmp_path: Path, grid: str,
                                                                           d_val: int) -> None:
    plan = plan_of(tmp_path, grid)
    cases = {c.id: c for c in plan.tasks[0].suite.cases}
    cost = job_costs(plan, iid_val={"sentiment": 436})   # D_val: SST-2's validation set's first half
    for job in plan.grid_jobs[:3]:
        assert cost(job).inputs == sum(len(cases[i].inputs) for i in job.fold.eval_ids) + d_val
    first = plan.grid_jobs[0]
    unknown = job_costs(plan)(first).inputs   # D_val's size unknown: only a cap is counted
    assert unknown == sum(len(cases[i].inputs) for i in first.fold.eval_ids) + (32 if grid == "iid_val = 32" else 0)


def test_a_reduction_without_halving_is_refused_and_a_recorded_config_reads_back(tmp_path: Path) -> None:
    from beluga_core.config.schema import BenchmarkConfig

    with pytest.raises(BelugaError, match="reduction is successive halving's"):
        plan_of(tmp_path, "reduction = 2")
    for grid in ("", 'strategy = "halving"\nreduction = 2'):
        cfg = plan_of(tmp_path, grid).config   # as a run records it (runs.effective_config): every field set
        assert BenchmarkConfig.model_validate(cfg.model_dump(mode="json", by_alias=True)) == cfg
