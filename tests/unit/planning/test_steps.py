"""Typed job steps and the complete plan: planning gives every job its evaluation steps (what the worker runs, in
order, each by the runner of its type), the dry run prints them, and the outside teachers are resolved while the
plan is built (and when selection resolves the pending folds), not patched in afterwards."""

from __future__ import annotations

from pathlib import Path
from typing import Any, get_args

import pytest
from helpers import DATA, config_with, run_cli

from beluga_core.config.load import load_config
from beluga_core.core.errors import BelugaError
from beluga_core.execution.step_runners import run_step
from beluga_core.orchestration.teachers import plan_with_stores
from beluga_core.planning.jobs import JobKind
from beluga_core.planning.plan import Plan, build_plan
from beluga_core.planning.steps import (
    Attributions,
    CrossSuites,
    FoldEval,
    IIDTest,
    Probes,
    Step,
    Validation,
    steps_label,
)

# tiny-fewshot (occlusion attributions, probe pools of the length level) with an eval suite, kept probabilities,
# attributions of the held-out cases and a grid search: every step type in one plan.
EVERY_STEP = {
    'cases = "none"': 'cases = "heldout_test"\ncap_per_fold = 2',
    'iid = "builtin:sst2"\n': 'iid = "builtin:sst2"\n[[tasks.eval_suites]]\nsuite = "builtin:sentiment"\n'
                              'cases_per_group = 2\n',
    'store = "tiny-fewshot.duckdb"\n': "",
    "[model]": '[store]\npath = "steps.duckdb"\nkeep_probabilities = true\n\n[model]',
    "[executor]": "[grid]\nenabled = true\nbatch_size = [16]\nepochs = [1]\nlearning_rate = [5e-5, 1e-4]\n"
                  "iid_val = 32\n\n[executor]",
}


@pytest.fixture(scope="module")
def every_step(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return config_with(DATA / "tiny-fewshot.toml", tmp_path_factory.mktemp("steps"), replace=EVERY_STEP)


def _plan(config: Path) -> Plan:
    return build_plan(load_config(config), config)


def test_planning_gives_every_job_its_typed_steps_in_order(every_step: Path) -> None:
    plan = _plan(every_step)
    (tp,) = plan.tasks
    model = FoldEval("T_test", keep_probabilities=True)
    cross = CrossSuites(("sentiment",), keep_probabilities=True)
    occlusion = Attributions(("occlusion",))
    probes = Probes(("occlusion",), perturbations=4)
    iid_test = IIDTest(keep_probabilities=True)
    # The IID model is a candidate for every group's probe pool; the seen folds are scored i.i.d.; the folds of
    # the [fewshot] level predict their group's pool; a grid point is judged on T_val and validated, nothing more.
    want = {(JobKind.IID, "standard"): (model, cross, occlusion, probes, iid_test),
            (JobKind.FOLD, "seen"): (model, cross, occlusion, iid_test),
            (JobKind.FOLD, "length"): (model, cross, occlusion, probes),
            (JobKind.GRID, "seen"): (FoldEval("T_val", keep_probabilities=False), Validation(iid_val=32))}
    planned = tp.planned_steps(plan.config)
    assert {(kind, fold.scenario): steps for kind, fold, steps in planned} == want
    assert len(planned) == 1 + 2 * 4 + 2 * 2   # the IID model, 2 configurations x 4 folds, 2 x 2 grid points
    assert all(j.steps == want[(j.kind, j.fold.scenario)] for j in [*plan.jobs, *plan.grid_jobs])
    # Selection turns the pending folds into jobs with the steps the dry run showed for them.
    pending = {(p.config, p.fold): tp.steps_of(plan.config, p, JobKind.FOLD) for p in plan.pending}
    chosen = {(j.task, j.config, j.method, *j.scope): j.point for j in plan.grid_jobs}
    new, left = plan.resolve(chosen)
    assert not left and len(new) == len(pending)
    assert all(j.steps == pending[(j.config, j.fold)] for j in new)
    assert steps_label(want[(JobKind.IID, "standard")]) == \
        "T_test → cross sentiment → attributions occlusion → probes + attributions occlusion → D_test"


def test_without_options_a_model_is_judged_on_t_test_and_d_test_only(tmp_path: Path) -> None:
    plan = _plan(config_with(DATA / "tiny-sentiment.toml", tmp_path))
    steps = {(j.kind, j.fold.scenario, j.steps) for j in plan.jobs}
    plain = FoldEval("T_test", keep_probabilities=False)
    scored = (plain, IIDTest(keep_probabilities=False))
    assert steps == {(JobKind.IID, "standard", scored), (JobKind.FOLD, "seen", scored),
                     (JobKind.FOLD, "test_type", (plain,))}


def test_attributions_of_no_cases_are_no_step(tmp_path: Path) -> None:
    """tiny-fewshot attributes its probe pools only (``cases = "none"``): its models have a probe step that
    attributes, and no attributions step that would attribute nothing."""
    plan = _plan(config_with(DATA / "tiny-fewshot.toml", tmp_path))
    assert plan.jobs and all(j.step(Attributions) is None for j in plan.jobs)
    probes = [j.step(Probes) for j in plan.jobs if j.step(Probes) is not None]
    assert probes and all(p.attribute_with == ("occlusion",) for p in probes)


def test_every_step_type_has_a_runner() -> None:
    assert set(get_args(Step)) <= set(run_step.registry)
    with pytest.raises(TypeError, match="no runner for evaluation step str"):
        run_step("T_test", None)   # type: ignore[arg-type]


def test_the_dry_run_prints_each_jobs_steps(every_step: Path, capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "250")   # one table row per line
    code, out, err = run_cli(capsys, "run", every_step, "--dry-run")
    assert code == 0, err
    rows = [" ".join(cell.strip() for cell in line.split("│")[1:-1]) for line in
            out.split("evaluation steps, in the order each model runs them")[1].split("└")[0].splitlines()
            if line.startswith("│")]
    assert rows == [
        "IID models standard 1 T_test → cross sentiment → attributions occlusion → probes + attributions occlusion "
        "→ D_test",
        "scenario models seen 2 T_test → cross sentiment → attributions occlusion → D_test",
        "scenario models length 6 T_test → cross sentiment → attributions occlusion → probes + attributions "
        "occlusion",
        "grid points seen 4 T_val → validation + D_val"]


DISTILL = {'scenarios = ["standard", "seen", "test_type"]\n':
           'scenarios = ["standard", "seen", "test_type"]\nmethods = ["vanilla", "distill"]\n'}


def _distill_from(tmp_path: Path, teacher: str, extra: str = "") -> Path:
    return config_with(DATA / "tiny-sentiment.toml", tmp_path, replace=DISTILL,
                       append=f'\n[method.distill]\nteacher = "{teacher}"\n{extra}')


def test_outside_teachers_are_resolved_when_the_plan_is_built(tmp_path: Path) -> None:
    (tmp_path / "teacher.pt").write_bytes(b"")
    config = _distill_from(tmp_path, "path:teacher.pt")
    plan = plan_with_stores(load_config(config), config)
    assert plan.teachers == {"path:teacher.pt": str(tmp_path / "teacher.pt")}
    # Planning cannot read stores: without the resolver of the layer that can, such a plan is refused.
    with pytest.raises(BelugaError, match="without a teacher resolver"):
        _plan(config)
    # The plan's resolver stays with the coordinator: workers read the resolved sources.
    assert plan.for_workers().teacher_weights is None and plan.for_workers().teachers == plan.teachers


def test_a_missing_teacher_stops_the_dry_run_naming_its_line(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    config = _distill_from(tmp_path, "path:nowhere.pt")
    code, _, err = run_cli(capsys, "run", config, "--dry-run")
    line = next(i for i, text in enumerate(config.read_text().splitlines(), 1) if text.startswith("teacher ="))
    assert code == 2 and f"line {line}, field 'method.distill.teacher'" in err and "no such file or folder" in err


def test_selection_resolves_the_teachers_of_the_folds_it_makes(tmp_path: Path) -> None:
    calls: list[str] = []

    def resolver(source: str, *, task: str, model: str, base: Path) -> str:
        calls.append(source)
        return str(base / source.split(":", 1)[1])

    config = _distill_from(tmp_path, "path:t.pt", "[grid]\nenabled = true\nbatch_size = [16]\nepochs = [1]\n"
                                                  "learning_rate = [5e-5]\n")
    plan = build_plan(load_config(config), config, teachers=resolver)
    assert calls == ["path:t.pt"] and plan.teachers == {"path:t.pt": str(tmp_path / "t.pt")}  # by the grid points
    plan.teachers.clear()
    chosen: dict[Any, Any] = {(j.task, j.config, j.method, *j.scope): j.point for j in plan.grid_jobs}
    new, _ = plan.resolve(chosen)
    assert any(j.method == "distill" for j in new)
    assert calls == ["path:t.pt"] * 2 and plan.teachers == {"path:t.pt": str(tmp_path / "t.pt")}
