"""The public plugin API: every built-in plugin passes its kind's check, and a plugin that leaves out a required
member is rejected when it is loaded — naming the member — for every kind, also as ``module:Class``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest
import torch
from helpers import run_cli

from beluga_core import api
from beluga_core.api.executors import EXECUTORS, Executor
from beluga_core.api.expectations import (
    EXPECTATIONS,
    FAIL,
    PASS,
    SKIP,
    ExpectationKind,
    KindParams,
    PerInputKind,
    results_from,
)
from beluga_core.api.losses import LOSSES, ClassLoss, Loss
from beluga_core.api.methods import METHODS, Method
from beluga_core.api.tasks import (
    TASKS,
    Case,
    Encoder,
    Example,
    FlatPredictions,
    GroupOf,
    IIDData,
    IIDScores,
    InputPredictions,
    Task,
    TrainSet,
)
from beluga_core.api.training_configs import CONFIGURATIONS, TrainingConfiguration
from beluga_core.core.errors import BelugaError
from beluga_core.core.registry import ALL, Registry


class TaskWithoutOutputs(Task):
    """Everything a task needs but ``batch_outputs``."""

    metrics: ClassVar[tuple[str, ...]] = ("accuracy",)
    primary_metric: ClassVar[str] = "accuracy"

    def load_iid(self, source: str, eval_seed: int) -> IIDData:
        raise NotImplementedError

    def make_encoder(self, tokenizer: Any, max_length: int) -> Encoder:
        raise NotImplementedError

    def build_model(self, model_name: str, *, seed: int = 0, dropout: float | None = None,
                    config_overrides: Mapping[str, Any] | None = None) -> torch.nn.Module:
        raise NotImplementedError

    def build_trainset(self, cases: Sequence[Case], iid: Sequence[Example], env_level: str | None,
                       group_of: GroupOf | None = None) -> TrainSet:
        raise NotImplementedError

    def predict_cases(self, model: torch.nn.Module, encoder: Encoder, cases: Sequence[Case],
                      device: torch.device) -> FlatPredictions:
        raise NotImplementedError

    def predict_iid(self, model: torch.nn.Module, encoder: Encoder, examples: Sequence[Example],
                    device: torch.device) -> InputPredictions:
        raise NotImplementedError

    def score_iid(self, examples: Sequence[Example], predictions: InputPredictions,
                  split: str) -> IIDScores:
        raise NotImplementedError


class MethodWithoutUpdate(Method):
    defaults: ClassVar[dict[str, Any]] = {"level": 0.1}


class LossWithoutRows(ClassLoss):
    pass


class LossWithoutKind(Loss):
    def per_row(self, logits: torch.Tensor) -> torch.Tensor:
        return logits


class KindWithoutEvaluate(ExpectationKind):
    Params = KindParams


class PerInputKindWithoutResults(PerInputKind):
    Params = KindParams


class ConfigurationWithoutSuiteStep(TrainingConfiguration):
    start = "plm"
    uses_iid = True


class ExecutorWithoutOpen(Executor):
    pass


class NotATask:
    metrics = ("accuracy",)


MISSING = [
    (TASKS, "TaskWithoutOutputs", "batch_outputs"),
    (METHODS, "MethodWithoutUpdate", "update"),
    (LOSSES, "LossWithoutRows", "per_row"),
    (LOSSES, "LossWithoutKind", "kind"),
    (EXPECTATIONS, "KindWithoutEvaluate", "evaluate"),
    (EXPECTATIONS, "PerInputKindWithoutResults", "input_results"),
    (CONFIGURATIONS, "ConfigurationWithoutSuiteStep", "uses_suite"),
    (EXECUTORS, "ExecutorWithoutOpen", "open"),
]


@pytest.mark.parametrize(("registry", "name", "member"), MISSING, ids=[m[1] for m in MISSING])
def test_a_plugin_missing_a_required_member_is_rejected_on_load(registry: Registry[Any], name: str,
                                                                member: str) -> None:
    with pytest.raises(BelugaError) as info:
        registry.get(f"{__name__}:{name}")
    message = str(info.value)
    assert f"is missing required member(s) {member}" in message and f"beluga_core.api.{registry.base.__name__}" \
        in message


def test_every_kind_has_a_registry_with_a_base_class_in_the_public_api() -> None:
    kinds = {"task", "method", "loss", "expectation kind", "training configuration", "executor", "attribution",
             "generator", "ranking signal"}
    assert set(ALL) == kinds
    for registry in ALL.values():
        assert getattr(api, registry.base.__name__) is registry.base


def test_every_installed_builtin_passes_its_check() -> None:
    for registry in ALL.values():
        names = registry.names()
        assert names, registry.kind
        for name in names:
            assert issubclass(registry.get(name), registry.base)
    assert "classification" in TASKS.names()


def test_a_class_that_is_not_a_plugin_and_unknown_names() -> None:
    with pytest.raises(BelugaError, match=r"\(NotATask\) is not a subclass of beluga_core.api.Task"):
        TASKS.get(f"{__name__}:NotATask")
    with pytest.raises(BelugaError, match="has no attribute 'Nope'"):
        TASKS.get(f"{__name__}:Nope")
    with pytest.raises(BelugaError, match="cannot import module 'no_such_module'"):
        TASKS.get("no_such_module:Task")
    with pytest.raises(BelugaError, match="unknown method 'vanila'; did you mean 'vanilla'"):
        METHODS.get("vanila")


def test_a_module_class_plugin_works_in_a_config_and_a_broken_one_fails_the_dry_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = ('name = "x"\nconfigurations = ["iid", "iid-plus-t"]\nmethods = ["{method}"]\nscenarios = ["seen"]\n'
            '[[tasks]]\nname = "sentiment"\nsuite = "builtin:sst2-phenomena"\niid = "builtin:sst2"\n')
    good = tmp_path / "good.toml"
    good.write_text(base.format(method="beluga_core.training.methods.vanilla:Vanilla"))
    code, _, err = run_cli(capsys, "run", good, "--dry-run")
    assert code == 0, err
    bad = tmp_path / "bad.toml"
    bad.write_text(base.format(method=f"{__name__}:MethodWithoutUpdate"))
    code, _, err = run_cli(capsys, "run", bad, "--dry-run")
    assert code == 2 and "is missing required member(s) update" in err


def test_results_from_builds_outcomes_for_a_plugin_kind() -> None:
    got = results_from(np.array([True, False, True]), np.array([False, False, True]))
    assert got.tolist() == [PASS, FAIL, SKIP]
