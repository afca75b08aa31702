"""Grid search without training: the plan's phases, selection from stored scores, the store tables."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from typing import Any

import pytest
from helpers import REPO, run_cli

from beluga_core.config.load import parse_config
from beluga_core.core.errors import BelugaError
from beluga_core.evaluation.gold import case_gold
from beluga_core.execution.results import GridPointRecord, JobResult, Outcomes, ValidationRow
from beluga_core.orchestration.selection.criteria import check_criterion
from beluga_core.orchestration.selection.select import rank_grid_points, select_for_plan
from beluga_core.planning.grid_space import grid_points, job_hparams
from beluga_core.planning.plan import Plan, build_plan, selection_keys
from beluga_core.store.reader import open_store
from beluga_core.store.suite_rows import suite_rows
from beluga_core.store.writer import StoreWriter

BASE = """
name = "g"
configurations = ["iid", "iid-then-t", "iid-plus-t"]
methods = ["vanilla", "lp-ft", "irm"]
scenarios = ["standard", "seen", "length"]
{extra}
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


def plan_of(tmp_path: Path, grid: str = "", extra: str = "") -> Plan:
    path = tmp_path / "g.toml"
    text = BASE.format(grid=grid, extra=extra)
    path.write_text(text)
    return build_plan(parse_config(text, path), path)


def test_seen_mode_plan_has_grid_jobs_then_pending_folds(tmp_path: Path) -> None:
    plan = plan_of(tmp_path)
    # Phase 1 knows only the IID model; every fold waits for a selection.
    assert [j.config for j in plan.jobs] == ["iid"]
    assert len(plan.pending) == 2 * 3 * (1 + 3)  # 2 suite configurations x 3 methods x (seen + 3 lengths)
    # Searched: vanilla (18 points), lp (its own 3 learning rates x 2 batch sizes x 3 epochs), irm (18);
    # lp-ft has no search of its own.
    by_method: dict[str, int] = {}
    for j in plan.grid_jobs:
        by_method[j.method] = by_method.get(j.method, 0) + 1
        assert j.is_grid_point and j.scope == (None, None)
        assert j.fold.train_ids == plan.tasks[0].split.train and j.fold.eval_ids == plan.tasks[0].split.val
    assert by_method == {"vanilla": 2 * 18, "lp": 2 * 18, "irm": 2 * 18}
    lr = {j.hparams["learning_rate"] for j in plan.grid_jobs if j.method == "lp"}
    assert lr == {1e-4, 5e-4, 1e-3}
    iid = plan.jobs[0].id
    assert {j.parent_id for j in plan.grid_jobs if j.config == "iid-then-t"} == {iid}
    assert {j.parent_id for j in plan.grid_jobs if j.config == "iid-plus-t"} == {None}
    assert len({j.id for j in plan.grid_jobs}) == len(plan.grid_jobs)


def test_resolve_puts_the_chosen_values_into_fold_hparams_and_ids(tmp_path: Path) -> None:
    plan = plan_of(tmp_path)
    chosen = {}
    for j in plan.grid_jobs:
        chosen.setdefault((j.task, j.config, j.method, *j.scope), j.point)
    new, left = plan.resolve(chosen)
    assert not left and len(new) == 24 and not plan.pending
    for job in new:
        if job.method == "lp-ft":
            lp_hp, ft_hp = job.hparams["stages"]
            assert lp_hp["learning_rate"] == chosen[("sentiment", job.config, "lp", None, None)]["learning_rate"]
            assert ft_hp["batch_size"] == chosen[("sentiment", job.config, "vanilla", None, None)]["batch_size"]
        else:
            point = chosen[("sentiment", job.config, job.method, None, None)]
            assert all(job.hparams[k] == v for k, v in point.items())
    # Another choice gives other fold ids (the hash holds the values), the same choice the same ids.
    again = plan_of(tmp_path)
    same, _ = again.resolve(chosen)
    assert [j.id for j in same] == [j.id for j in new]
    other = plan_of(tmp_path)
    changed = dict(chosen)
    key = ("sentiment", "iid-plus-t", "vanilla", None, None)
    changed[key] = {**chosen[key], "learning_rate": 5e-5 if chosen[key]["learning_rate"] != 5e-5 else 2e-5}
    moved, _ = other.resolve(changed)
    differ = {(j.config, j.method) for j, k in zip(moved, new, strict=True) if j.id != k.id}
    assert differ == {("iid-plus-t", "vanilla"), ("iid-plus-t", "lp-ft")}


def test_missing_selection_leaves_folds_pending(tmp_path: Path) -> None:
    plan = plan_of(tmp_path)
    chosen = {(j.task, j.config, j.method, *j.scope): j.point for j in plan.grid_jobs if j.method != "lp"}
    new, left = plan.resolve(chosen)
    assert {p.method for p in left} == {"lp-ft"} and all(j.method != "lp-ft" for j in new)


def test_strict_mode_searches_per_fold_without_the_heldout_group(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, grid='mode = "strict"\nbatch_size = [8]\nepochs = [1]\nlearning_rate = [2e-5]\n'
                                  '[grid.methods.lp]\nlearning_rate = [1e-3]\n')
    tp = plan.tasks[0]
    scopes = {j.scope for j in plan.grid_jobs}
    assert scopes == {(None, None), ("length", "long"), ("length", "medium"), ("length", "short")}
    for j in plan.grid_jobs:
        if j.scope == (None, None):
            continue
        level, group = j.scope
        groups = {tp.suite.group_of(tp.suite.case(c), level) for c in (*j.fold.train_ids, *j.fold.eval_ids)}
        assert group not in groups
        assert set(j.fold.eval_ids) < set(tp.split.val)
    # 2 configurations x 3 searched methods x 4 scopes x 1 point
    assert len(plan.grid_jobs) == 24
    keys = {k for p in plan.pending for k in selection_keys(p, "strict")}
    assert {k[3:] for k in keys} == scopes
    seen = plan_of(tmp_path, grid="batch_size = [8]\nepochs = [1]\nlearning_rate = [2e-5]\n"
                                  "[grid.methods.lp]\nlearning_rate = [1e-3]\n")
    # The strict search's seen scope is the seen-mode search itself (same jobs, same ids).
    assert {j.id for j in seen.grid_jobs} == {j.id for j in plan.grid_jobs if j.scope == (None, None)}


def test_axes_merge_task_method_and_config_overrides(tmp_path: Path) -> None:
    cfg = plan_of(tmp_path, grid="[grid.tasks.sentiment]\nbatch_size = [2, 3]\n"
                                 "[grid.methods.irm]\npenalty_weight = [100.0, 10000.0]\n").config
    assert {p["batch_size"] for p in grid_points(cfg, "sentiment", "vanilla")} == {2, 3}
    irm = grid_points(cfg, "sentiment", "irm")
    assert len(irm) == 2 * 3 * 3 * 2
    hp = job_hparams(cfg, "irm", irm[0])
    assert hp["method"]["penalty_weight"] == irm[0]["penalty_weight"] and "penalty_weight" not in hp
    with pytest.raises(BelugaError, match="unknown option; did you mean 'penalty_weight'"):
        plan_of(tmp_path, grid="[grid.methods.irm]\npenalty = [1.0]\n")


def test_reading_searches_its_own_batch_sizes_unless_the_config_says_otherwise(tmp_path: Path) -> None:
    cfg = plan_of(tmp_path).config
    # reading's own search (docs/method.md, "Hyper-parameter selection")
    assert {p["batch_size"] for p in grid_points(cfg, "reading", "vanilla")} == {2, 3}
    assert {p["batch_size"] for p in grid_points(cfg, "sentiment", "vanilla")} == {8, 16}
    assert {p["learning_rate"] for p in grid_points(cfg, "reading", "lp")} == {1e-4, 5e-4, 1e-3}
    cfg = plan_of(tmp_path, grid="[grid.tasks.reading]\nbatch_size = [4]\n").config
    assert {p["batch_size"] for p in grid_points(cfg, "reading", "vanilla")} == {4}


def test_config_mistakes_are_caught_before_training(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(BASE.format(grid='criterion = "best"', extra=""))
    code, _, err = run_cli(capsys, "run", path, "--dry-run")
    assert code == 2 and "grid criterion 'best'" in err and "line 17" in err
    plan_of(tmp_path, grid='criterion = "reference + 0.5 * coalesce(iid_val, 0)"')
    with pytest.raises(BelugaError, match="unknown option"):
        plan_of(tmp_path, extra="[method.irm]\npenalty = 3\n")
    with pytest.raises(BelugaError, match="env_level 'domain' is not a level"):
        plan_of(tmp_path, extra='[method.irm]\nenv_level = "domain"\n')
    plan_of(tmp_path, extra='[method.irm]\nenv_level = "length"\n')


def test_dry_run_counts_without_the_task_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from beluga_core.contracts.registries import TASKS

    def broken(name: str) -> Any:
        raise BelugaError("task plugin 'sentiment' (x:Y) failed to load: No module named 'x'")

    monkeypatch.setattr(TASKS, "get", broken)
    path = tmp_path / "g.toml"
    text = BASE.format(grid="", extra="")
    with pytest.raises(BelugaError, match="failed to load"):
        build_plan(parse_config(text, path), path)
    plan = build_plan(parse_config(text, path), path, allow_missing_tasks=True)
    assert "failed to load" in (plan.tasks[0].unavailable or "") and len(plan.pending) == 24


# --------------------------------------------------------------------------------------------- store


def _store_with_points(tmp_path: Path, plan: Plan) -> Path:
    store = tmp_path / "s.duckdb"
    writer = StoreWriter(store)
    tp = plan.tasks[0]
    writer.ensure_suite(*suite_rows(tp.suite, case_gold))
    # Three points of one selection: p0 best on the reference objective, p1 on the worst group, p2 on D_val.
    val = list(tp.split.val)
    jobs = [j for j in plan.grid_jobs if j.config == "iid-plus-t" and j.method == "vanilla"][:3]
    groups = {c: tp.suite.group_of(tp.suite.case(c), "phenomenon") for c in val}
    rank_in_group = {c: sum(1 for d in val[:k] if groups[d] == groups[c]) for k, c in enumerate(val)}
    for i, job in enumerate(jobs):
        outcomes = []
        for c in val:
            if i == 0:
                ok = groups[c] != "negation"   # great everywhere but one group
            elif i == 1:
                ok = rank_in_group[c] % 2 == 0 or groups[c] == "negation"  # mediocre, but no group at zero
            else:
                ok = False
            outcomes.append((c, "pass" if ok else "fail", "1"))
        metrics = [ValidationRow("suite_val", "MFT", "objective", [0.9, 0.6, 0.1][i]),
                   ValidationRow("suite_val", "INV", "objective", [0.8, 0.6, 0.1][i]),
                   ValidationRow("iid_val", None, "accuracy", [0.5, 0.6, 0.9][i], True)]
        record = GridPointRecord(grid_id=job.id, task=job.task, config=job.config, method=job.method,
                                 point=job.point or {}, suite=tp.suite.header.name, model_name=job.model,
                                 seed=job.seed, split_seed=123, hparams=job.hparams)
        writer.commit(JobResult(record, Outcomes.of([c for c, _, _ in outcomes], [o for _, o, _ in outcomes],
                                                    [p for _, _, p in outcomes]), validation=metrics))
    return store


def test_criteria_choose_among_stored_points_without_retraining(tmp_path: Path) -> None:
    plan = plan_of(tmp_path)
    store = _store_with_points(tmp_path, plan)
    jobs = [j for j in plan.grid_jobs if j.config == "iid-plus-t" and j.method == "vanilla"][:3]
    with open_store(store) as con:
        scores = {r[0]: r[1:] for r in con.execute(
            "SELECT grid_id, reference, iid_val, reference_iid, n_test_types FROM grid_scores").fetchall()}
        assert scores[jobs[0].id] == pytest.approx((1.7, 0.5, 2.2, 2))
        picks = {}
        for criterion in ("reference", "worst_group", "iid_val", "reference_iid", "g_val", "-reference"):
            (best,) = rank_grid_points(con, criterion)
            picks[criterion] = jobs.index(next(j for j in jobs if j.id == best.grid_id))
            assert best.n_points == 3 and best.rank == 1
        ranked = rank_grid_points(con, "reference", top=3)
        assert [r.rank for r in ranked] == [1, 2, 3] and [r.value for r in ranked] == pytest.approx([1.7, 1.2, 0.2])
        per_group = con.execute("SELECT count(DISTINCT scoring_group) FROM grid_pass_rates").fetchall()[0][0]
        assert per_group == 5
    assert picks == {"reference": 0, "worst_group": 1, "iid_val": 2, "reference_iid": 0, "g_val": 1,
                     "-reference": 2}
    chosen, _ = select_for_plan(store, plan)
    assert chosen == {("sentiment", "iid-plus-t", "vanilla", None, None): jobs[0].point}


def test_select_command_applies_another_criterion(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from beluga_core.cli.app import main

    monkeypatch.setenv("COLUMNS", "250")
    plan = plan_of(tmp_path)
    store = _store_with_points(tmp_path, plan)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["select", str(store), "--criterion", "worst_group", "--top", "2"])
    text = out.getvalue()
    assert "grid selection by worst_group" in text and "iid-plus-t" in text
    with pytest.raises(SystemExit) as bad:
        main(["select", str(store), "--criterion", "no_such_column"])
    assert bad.value.code == 2


def test_grid_objective_terms_are_views_of_the_outcomes(tmp_path: Path) -> None:
    """Without a task objective, a test type's term is its T_val pass rate; with an F1 (QQP), the mean of
    the two; a stored objective (reading) replaces both."""
    plan = plan_of(tmp_path)
    store = tmp_path / "t.duckdb"
    writer = StoreWriter(store)
    tp = plan.tasks[0]
    writer.ensure_suite(*suite_rows(tp.suite, case_gold))
    val = list(tp.split.val)
    types = {c: tp.suite.case(c).test_type for c in val}
    job = plan.grid_jobs[0]
    outcomes = ["pass" if k % 3 else "fail" for k in range(len(val))]
    record = GridPointRecord(grid_id=job.id, task=job.task, config=job.config, method=job.method,
                             point=job.point or {}, suite=tp.suite.header.name, seed=job.seed, split_seed=123)
    writer.commit(JobResult(record, Outcomes.of(val, outcomes), validation=[ValidationRow("suite_val", "MFT", "f1",
                                                                                           0.4)]))
    rate = {t: sum(o == "pass" for c, o in zip(val, outcomes, strict=True) if types[c] == t)
            / sum(1 for c in val if types[c] == t) for t in set(types.values())}
    with open_store(store) as con:
        got = dict(con.execute("SELECT test_type || '/' || metric, value FROM grid_test_type_scores").fetchall())
    assert got["MFT/pass_rate"] == pytest.approx(rate["MFT"]) and got["INV/pass_rate"] == pytest.approx(rate["INV"])
    assert got["MFT/objective"] == pytest.approx((rate["MFT"] + 0.4) / 2)
    assert got["INV/objective"] == pytest.approx(rate["INV"])


def test_check_criterion_accepts_names_and_expressions() -> None:
    check_criterion("worst_group")
    check_criterion("0.7 * mean_pass + 0.3 * iid_val")
    with pytest.raises(BelugaError):
        check_criterion("mean_pass +")


def test_full_benchmark_validates_and_its_dry_run_prints_the_whole_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    from beluga_core.cli.app import main

    monkeypatch.setenv("COLUMNS", "250")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["run", str(REPO / "benchmarks" / "full.toml"), "--dry-run"])
    text = out.getvalue()
    for task, suite in (("sentiment", "sentiment"), ("paraphrase", "qqp"), ("reading", "squad")):
        assert f"task {task}: suite {suite}" in text and f"task {task}: grid search" in text
    assert "model bert-large-uncased-whole-word-masking" in text
    # 3 tasks x 3 suite configurations x 7 searched methods (lp-ft reuses lp's and vanilla's) x 18 points.
    assert "4761 trainings in all: 3627 scenario models + 1134 grid points" in text
    assert "grid mode strict would train 60705" in text
    # Priced (tests price at the defaults: BELUGA_CALIBRATION=off): the three IID models train all of D_train, by the
    # published sizes of SST-2, QQP and SQuAD, for [training] epochs = 3.
    assert "cost on this machine (1 worker(s))" in text and "BELUGA_CALIBRATION=off" in text
    priced = text[text.index("cost on this machine"):]
    iid_row = next(line for line in priced.splitlines() if line.startswith("│ IID "))
    assert f"{(67_349 + 363_846 + 87_599) * 3:,}" in iid_row
    assert "its published sizes, 363,846 D_train / 20,215 D_test (half of validation)" in text
