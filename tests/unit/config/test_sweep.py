"""``[sweep]``: what may be swept, how points are named and configured, and that jobs that do not read the swept key
keep one identity across points (planning only: nothing trains here)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import DATA, config_with, run_cli

from beluga_core.config.load import load_config
from beluga_core.config.sweep import point_config, sweep_points
from beluga_core.orchestration.sweep_plans import sweep_plans

SWEEP = DATA / "sweep-tiny.toml"
AXIS = '"sizes.suite_train_per_group" = [2, 4]'


def test_points_are_named_after_the_axis_and_set_every_paired_key(tmp_path: Path) -> None:
    cfg = load_config(config_with(SWEEP, tmp_path))
    points = sweep_points(cfg)
    assert [p.variant for p in points] == ["suite_train_per_group-2", "suite_train_per_group-4"]
    assert points[1].values == {"sizes.suite_train_per_group": 4, "sizes.iid_mix": 32}
    at = point_config(cfg, points[1])
    assert (at.sizes.suite_train_per_group, at.sizes.iid_mix, at.sweep, at.variant) == (4, 32, {}, "")
    named = load_config(config_with(SWEEP, tmp_path, append='\n', replace={'name = "sweep-tiny"':
                                                                            'name = "sweep-tiny"\nvariant = "b"'}))
    assert sweep_points(named)[0].variant == "b+suite_train_per_group-2"


@pytest.mark.parametrize(("line", "said"), [
    ('"sizes.suite_test_per_group" = [2, 4]', "sets T_test's size: a curve's points are compared on the same cases"),
    ('"sizes.suite_trian_per_group" = [2, 4]', "did you mean 'sizes.suite_train_per_group'?"),
    ('"split.seed" = [1, 2]', "cannot be swept"),
    ('"sizes.iid_mix" = [16, 32, 64]', "3 values, but the sweep's axis sizes.suite_train_per_group has 2"),
    ('"training.suite.epochs" = [1, "two"]', "expected numbers"),
    ('"method.vanilla.rho" = [1, 2]', "unknown option"),
    ('"method.lora.r" = [1, 2]', "method 'lora' is not one of the run's methods"),
    ('"sizes.iid_mix" = 16', "Input should be a valid list"),
    # A per-configuration table the sweep would write for a configuration the run lacks: the sweep's key is named.
    ('"training.configurations.iid-then-iid-plus-t.epochs" = [1, 2]',
     "point 1 (sizes.suite_train_per_group = 2, training.configurations.iid-then-iid-plus-t.epochs = 1): "
     "'iid-then-iid-plus-t' is not a configuration of this run"),
])
def test_a_bad_sweep_key_names_its_line_and_field(line: str, said: str, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    config = config_with(SWEEP, tmp_path, replace={'"sizes.iid_mix" = [16, 32]': line})
    code, _, err = run_cli(capsys, "run", config, "--dry-run")
    key = line.split(" = ")[0].strip('"')
    assert code == 2 and "Traceback" not in err
    text = " ".join(err.split())
    assert f"line {config.read_text().splitlines().index(line) + 1}, field 'sweep.{key}'" in text, text
    assert said in text, text


@pytest.mark.parametrize(("axis", "said"), [
    ('"sizes.suite_train_per_group" = [2]', "a sweep needs at least two values"),
    ('"sizes.suite_train_per_group" = [2, 2]', "the axis lists a value more than once"),
    ('"sizes.suite_train_per_group" = [-1, 2]', "greater than or equal to 0"),
])
def test_a_bad_axis_is_refused(axis: str, said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = config_with(SWEEP, tmp_path, replace={AXIS: axis, '"sizes.iid_mix" = [16, 32]': ""})
    code, _, err = run_cli(capsys, "run", config, "--dry-run")
    assert code == 2 and said in " ".join(err.split()) and "field 'sweep.sizes.suite_train_per_group'" in err


def test_a_sweep_with_a_grid_search_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = config_with(SWEEP, tmp_path, append="\n[grid]\nenabled = true\n")
    code, _, err = run_cli(capsys, "run", config, "--dry-run")
    assert code == 2 and "field 'grid.enabled'" in err and "a sweep runs without a grid search" in " ".join(err.split())


def test_jobs_that_do_not_read_the_swept_key_keep_one_id_across_points(tmp_path: Path) -> None:
    config = config_with(SWEEP, tmp_path)
    first, second = sweep_plans(load_config(config), config)
    iid = {j.seed: j.id for j in first.jobs if j.is_iid_model}
    assert iid == {j.seed: j.id for j in second.jobs if j.is_iid_model} and len(iid) == 2
    folds = [{j.id for j in p.jobs if not j.is_iid_model} for p in (first, second)]
    assert folds[0] and not folds[0] & folds[1]          # every fold reads the T_train size
    # IID→T folds start from the one IID model at both points; the rows take the point's variant, the ids do not.
    assert {j.parent_id for p in (first, second) for j in p.jobs if j.config == "iid-then-t"} == set(iid.values())
    assert [tp.rows_variant for p in (first, second) for tp in p.tasks] == ["suite_train_per_group-2",
                                                                            "suite_train_per_group-4"]
    # The point's jobs are those of a run of the point's own config without [sweep], id for id.
    alone = config_with(SWEEP, tmp_path, replace={AXIS: "", '"sizes.iid_mix" = [16, 32]': "",
                                                  "suite_train_per_group = 2": "suite_train_per_group = 4",
                                                  "iid_mix = 16": "iid_mix = 32"}, name="alone.toml")
    from beluga_core.orchestration.teachers import plan_with_stores
    assert {j.id for j in plan_with_stores(load_config(alone), alone).jobs} == {j.id for j in second.jobs}


def test_groups_that_hold_fewer_cases_than_a_point_asks_are_listed(tmp_path: Path) -> None:
    config = config_with(SWEEP, tmp_path, replace={AXIS: '"sizes.suite_train_per_group" = [2, 400]'})
    small, large = sweep_plans(load_config(config), config)
    assert small.capped == {}
    ((where, groups),) = large.capped.items()
    assert where == "sentiment train" and groups   # every phenomenon of the suite holds fewer than 400
