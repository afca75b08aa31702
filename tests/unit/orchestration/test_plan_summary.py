"""The dry run's summary as a value (``beluga_core.orchestration.plan_summary``): what ``beluga run --dry-run``
shows, read here without rich from the plans of two tiny configs, none of them trained."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import DATA, config_with

from beluga_core.config.load import load_config
from beluga_core.execution.executors.base import EXECUTORS
from beluga_core.orchestration.plan_summary import StoreState, summarize_plan
from beluga_core.orchestration.teachers import plan_with_stores
from beluga_core.planning.jobs import JobKind
from beluga_core.planning.plan import Plan

pytestmark = pytest.mark.usefixtures("one_thread")


def _plan(tmp_path: Path, config: str, replace: dict[str, str] | None = None) -> Plan:
    path = config_with(DATA / config, tmp_path, replace)
    return plan_with_stores(load_config(path).with_store_path(str(tmp_path / "summary.duckdb")), path)


def test_the_summary_counts_tiny_steps_per_phase_kind_and_step(tmp_path: Path) -> None:
    plan = _plan(tmp_path, "tiny-steps.toml")
    s = summarize_plan(plan)
    # The config's own comment: the IID model, the seen IID→T model, its 5 phenomenon folds and 2 grid points.
    assert (s.scenario_models, s.grid, s.grid_points, s.trainings) == \
        (7, ("seen", "reference"), {"seen": 2, "strict": 12}, 9)
    (task,) = s.tasks
    assert (task.name, task.cases, task.train, task.val, task.test) == ("sentiment", 300, 10, 10, 10)
    assert [(r.config, r.scenario, r.trainings, r.done) for r in task.folds] == \
        [("iid", "standard", 1, 0), ("iid-then-t", "seen", 1, 0), ("iid-then-t", "phenomenon", 5, 0)]
    assert [(c.config, c.method, c.points, c.seen, c.strict) for c in task.grid or []] == \
        [("iid-then-t", "vanilla", 2, 2, 12)]
    # The 6 IID→T folds wait for the grid search: planned, none to run yet.
    assert [(k.kind, k.planned, k.to_run, k.pending) for k in s.status] == \
        [(JobKind.IID, 1, 1, 0), (JobKind.FOLD, 6, 0, 6), (JobKind.GRID, 2, 2, 0)]
    assert [(r.kind, r.scenarios, r.count) for r in task.steps] == [
        (JobKind.IID, ["standard"], 1), (JobKind.FOLD, ["seen"], 1), (JobKind.FOLD, ["phenomenon"], 5),
        (JobKind.GRID, ["seen"], 2)]
    assert task.steps[-1].steps == "T_val → validation + D_val"
    assert "probes" in task.steps[0].steps and "probes" not in task.steps[1].steps
    (suite,) = task.evals
    assert (suite.name, suite.passes, suite.mapped[0][:2], suite.unmapped) == \
        ("s2lct-sentiment", 5, ("phenomenon", 3), [])
    assert task.only is None and task.kept.probabilities and task.kept.models == 1
    assert task.attributions is not None and task.attributions.methods == ["occlusion"] and task.attributions.pools
    assert [(f.level, f.groups, f.iid) for f in task.fewshot] == [("phenomenon", 5, 1)]
    # "auto" intervals on jobs this short write none.
    assert not task.checkpoints.off and not task.checkpoints.saves
    assert [(r.config, r.jobs) for r in task.checkpoints.rows] == [("iid", 1), ("iid-then-t", 8)]
    assert [(h.what, h.ok, h.status) for h in task.hub] == [("i.i.d. data", True, None), ("model", True, None)]
    (method, _, sizes), = s.methods
    assert method == "vanilla" and sizes[0][1] == sizes[0][2]   # vanilla trains the whole model
    assert (s.packs, s.workers, s.warnings, s.with_store) == (None, None, [], False)


def test_the_summary_reads_done_jobs_packs_checkpoints_and_warnings(tmp_path: Path) -> None:
    plan = _plan(tmp_path, "tiny-packs.toml", {'name = "tiny-packs"\n': 'name = "tiny-packs"\nvariant = "v"\n'})
    executor = EXECUTORS.get("local")(plan.config.executor)
    done = frozenset({plan.jobs[0].id})
    s = summarize_plan(plan, StoreState(done=done, failed=frozenset({plan.jobs[0].id, plan.jobs[1].id})),
                       executor.workers(plan), executor.packs_of(plan, plan.jobs), footprints={})
    assert s.with_store and s.variant == "v" and s.store == str(tmp_path / "summary.duckdb")
    assert s.workers is not None and s.workers.startswith("workers: 1 ")
    # A done job is not failed (its retry succeeded); a failed one runs again.
    (models,) = s.status
    assert (models.planned, models.done, models.failed, models.to_run) == (len(plan.jobs), 1, 1, len(plan.jobs) - 1)
    assert sum(r.done for r in s.tasks[0].folds) == 1
    packs = s.packs
    assert packs is not None and packs.shown and (packs.setting, packs.size) == (4, 4)
    assert [len(g) for g in packs.groups] == [4] and packs.summary.startswith("4 trainings in 1 pack(s)")
    checkpoints = s.tasks[0].checkpoints
    assert checkpoints.saves and checkpoints.slots == 1 and checkpoints.save_bytes is not None
    assert [(r.config, r.method, r.jobs) for r in checkpoints.rows] == [("iid-plus-t", "lora", 4)]
    assert s.methods == [("lora", s.methods[0][1], [])]   # no footprints given: none shown
    assert s.warnings == []
    # What planning says of a task before it trains (here: i.i.d. data one label dominates) is the summary's warning.
    plan.tasks[0].iid_note = "one label dominates"
    assert summarize_plan(plan, footprints={}).warnings == [("warning", "one label dominates")]


def test_an_iid_model_on_all_of_d_train_has_its_checkpoint_interval_set_at_run_time(tmp_path: Path) -> None:
    """With ``iid_train = 0`` the plan does not know how much the IID model trains on: the dry run used to project 0
    examples and say "off (expected < 1 min)" for an IID model of any size; "auto" is decided when it runs."""
    plan = _plan(tmp_path, "tiny-steps.toml", {"iid_train = 64": "iid_train = 0",
                                                "[executor]": '[executor]\ncheckpoint_every = "auto"'})
    (task,) = summarize_plan(plan).tasks
    rows = {(r.config, r.method): dict(r.intervals) for r in task.checkpoints.rows}
    assert list(rows[("iid", "vanilla")]) == ["auto: set at run time from the measured step rate (the plan does not "
                                              "know the job's size)"]
    assert all(w.startswith("off (expected") for w in rows[("iid-then-t", "vanilla")])
