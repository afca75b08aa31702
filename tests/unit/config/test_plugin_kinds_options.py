"""Generators, ranking signals and executors declare their options as one strict ``Options`` model (issue 58), as
methods, tasks and attribution estimators do (``test_plugin_options.py``): the defaults a suite header and a stored
ranking record stay the dicts they were, one check names the option, and a plugin written before Options works
with its dict (names checked) and one warning."""

from __future__ import annotations

import random
import re
import warnings
from collections.abc import Iterator
from typing import Any, ClassVar

import pytest
from helpers import REPO

from beluga_core.config.executor_spec import ExecutorSpec
from beluga_core.contracts.generators import Generator, Perturbed, SourceInstance
from beluga_core.contracts.options import NoOptions
from beluga_core.contracts.registries import GENERATORS, SIGNALS
from beluga_core.contracts.signals import ProbeCase, Signal
from beluga_core.core.errors import BelugaError, PluginWarning
from beluga_core.core.registry import Registry
from beluga_core.execution.executors.base import EXECUTORS, ExecutorOptions, check_executor_options

# Each built-in's ``defaults`` dict as written before it declared Options (commit 866fee2): a generated suite's
# header records these values (with what --option set), a stored ranking a signal's.
DEFAULTS_BEFORE_OPTIONS: dict[str, dict[str, Any]] = {
    "cda": {"k": 1, "threshold": 0.2, "na_label": "no_relation", "attribution": "ig-diagnose",
            "attribution_options": {}, "only_correct": False},
    "context": {"functions": ["punctuation", "strip_punctuation", "change_location", "change_names",
                              "change_number", "contractions", "add_typos"], "skip_years": True},
    "cue-removal": {"num_rules": 5, "rules": None},
    "entity-swap": {"roles": ["head", "tail"], "skip_years": True, "semantics": "slot", "family": None},
    "hotflip": {"beam": 10, "max_words": 2, "same_pos": True, "gradient": "local", "samples": 16},
    "ig-contrast": {"k": [1, 2], "threshold": 0.2, "na_label": "no_relation", "attribution": "ig-diagnose"},
    "masked-entity-freq": {"keep_origin": True},
    "masked-entity-k": {"k": 0.5, "keep_origin": True},
    "pwws": {"budget": 500, "synonyms": None},
    "s2lct": {"spec": "builtin:s2lct-sentiment", "seeds": 10, "lexicon": "vader", "only": [], "expand": False,
              "parser": None, "grammar": None, "mlm": None, "masked": 10, "top": 5, "suggestions": 60, "keep": 20,
              "selection": "confidence"},
    "entity-only-debiased": {}, "masked-entity": {}, "only-entity": {},
}
SIGNAL_DEFAULTS_BEFORE_OPTIONS: dict[str, dict[str, Any]] = {
    "const": {"normalize": "l1", "words": ["unless", "if", "whether", "although", "though", "because", "since",
                                           "while", "in case", "probably", "supposedly", "hopefully", "maybe",
                                           "perhaps"]},
    "index-diff": {"normalize": "l1", "variant": "signed"},
    "perturbation-focus": {"normalize": "l1", "max_perturbations": 4},
    "window": {"normalize": "l1", "words": [], "regex": "", "half_width": 2},
    **{name: {"normalize": "l1"} for name in ("first-tok", "max-diff", "sum-diff", "swap-avg", "swap-max-diff")},
    **{name: {} for name in ("acc", "conf", "conf-gt", "random")},
}


def _builtin(registry: Registry[Any]) -> set[str]:
    return {e.name for e in registry.entries() if e.target.startswith("beluga_core.")}


@pytest.mark.parametrize(("registry", "before"), [(GENERATORS, DEFAULTS_BEFORE_OPTIONS),
                                                  (SIGNALS, SIGNAL_DEFAULTS_BEFORE_OPTIONS)])
def test_every_builtin_declares_options_whose_defaults_are_the_old_dicts(registry: Registry[Any],
                                                                        before: dict[str, dict[str, Any]]) -> None:
    assert _builtin(registry) == set(before)
    for name, old in before.items():
        plugin = registry.get(name)
        # Declared (NoOptions for none), not derived from a defaults dict (with_defaults makes its models there).
        assert plugin.Options is NoOptions or plugin.Options.__module__ == plugin.__module__, name
        now = plugin.defaults
        assert now == old and {k: type(v) for k, v in now.items()} == {k: type(v) for k, v in old.items()}, name


def test_a_generator_reads_typed_options_and_records_the_values_as_given() -> None:
    swap = GENERATORS.get("masked-entity-k")({"k": 1})
    assert swap.options.k == 1.0 and type(swap.options.k) is float     # typed: the model's float
    assert swap.option_values == {"k": 1, "keep_origin": True}         # recorded: the integer as given
    assert type(swap.option_values["k"]) is int


@pytest.mark.parametrize(("name", "options", "field", "said"), [
    ("context", {"functions": []}, "options.functions", "at least 1 item"),
    ("context", {"skip_years": "no"}, "options.skip_years", "valid boolean"),
    ("entity-swap", {"semantics": ["slot", "slot"]}, "options.semantics", "distinct"),
    ("entity-swap", {"family": " "}, "options.family", "should match pattern"),
    ("hotflip", {"beam": 101}, "options.beam", "less than or equal to 100"),
    ("hotflip", {"gradient": "global"}, "options.gradient", "'local' or 'expected'"),
    ("pwws", {"budget": 1}, "options.budget", "greater than or equal to 2"),
    ("cue-removal", {"num_rules": True}, "options.num_rules", "valid integer"),
    ("ig-contrast", {"k": [1, 0]}, "options.k", "greater than 0"),
    ("s2lct", {"selection": "best"}, "options.selection", "'confidence' or 'random'"),
    ("only-entity", {"k": 1}, "options.k", "unknown option; it takes no options"),
])
def test_a_bad_generator_option_is_refused_by_its_options(name: str, options: dict[str, Any], field: str,
                                                          said: str) -> None:
    with pytest.raises(BelugaError) as err:
        GENERATORS.get(name)(options)
    assert err.value.field == field and said in err.value.message, str(err.value)


@pytest.mark.parametrize(("name", "options", "field", "said"), [
    ("max-diff", {"normalize": "softmax"}, "options.normalize", "'l1', 'none' or 'max'"),
    ("index-diff", {"variant": "mean"}, "options.variant", "'signed' or 'abs'"),
    ("window", {}, "options", "give the feature word"),
    ("window", {"regex": "("}, "options.regex", "not a regular expression"),
    ("window", {"words": ["x"], "half_width": -1}, "options.half_width", "greater than or equal to 0"),
    ("const", {"words": "if"}, "options.words", "valid list"),
    ("perturbation-focus", {"max_perturbations": 0}, "options.max_perturbations", "greater than or equal to 1"),
    ("acc", {"normalize": "l1"}, "options.normalize", "it takes no options"),
])
def test_a_bad_signal_option_is_refused_by_its_options(name: str, options: dict[str, Any], field: str,
                                                       said: str) -> None:
    with pytest.raises(BelugaError) as err:
        SIGNALS.get(name)(options)
    assert err.value.field == field and said in err.value.message, str(err.value)


@pytest.mark.parametrize(("name", "options", "field", "said"), [
    ("local", {"max_retries": -1}, "executor.options.max_retries", "greater than or equal to 0"),
    ("multi", {"folds_per_gpu": 1.5}, "executor.options.folds_per_gpu", "valid integer"),
    ("multi", {"memory_margin": 1}, "executor.options.memory_margin", "less than 1"),
    ("multi", {"worker": "faults.FaultyWorker"}, "executor.options.worker", "should match pattern"),
    ("local", {"gpus_per_fold": 1}, "executor.options.gpus_per_fold", "unknown option"),   # ray's, not local's
    ("ray", {"gpu_per_fold": 1}, "executor.options.gpu_per_fold", "did you mean 'gpus_per_fold'?"),
    ("ray", {"num_cpus": 0}, "executor.options.num_cpus", "greater than or equal to 1"),
    ("ray", {"log_to_driver": "yes"}, "executor.options.log_to_driver", "valid boolean"),
])
def test_a_bad_executor_option_is_refused_before_the_run(name: str, options: dict[str, Any], field: str,
                                                         said: str) -> None:
    with pytest.raises(BelugaError) as err:
        check_executor_options(ExecutorSpec(name=name, options=options))
    assert err.value.field == field and said in err.value.message, str(err.value)


def test_the_executors_take_the_options_every_shipped_config_and_drill_sets() -> None:
    check_executor_options(ExecutorSpec(name="multi", options={"max_retries": 25, "worker": "faults:FaultyWorker",
                                                               "folds_per_gpu": 2, "memory_margin": 0.5}))
    # num_cpus sizes a local Ray only (refused beside an address: tests/unit/execution/test_ray_options.py).
    check_executor_options(ExecutorSpec(name="ray", options={"address": "auto", "cpus_per_fold": 2,
                                                             "gpus_per_fold": 0.5, "max_retries": 2}))
    check_executor_options(ExecutorSpec(name="ray", options={"num_cpus": 4, "num_gpus": 2, "folds_per_gpu": 2,
                                                             "worker": "ray_fakes:CpuAsGpuWorker"}))
    for name in EXECUTORS.names():
        assert issubclass(EXECUTORS.get(name).Options or NoOptions, ExecutorOptions), name


class OldGenerator(Generator):
    """A generator written before Options: a defaults dict."""

    family: ClassVar[str] = "old"
    defaults: ClassVar[dict[str, Any]] = {"level": 2}

    def perturb(self, instance: SourceInstance, rng: random.Random) -> Iterator[Perturbed]:
        yield Perturbed("old", instance.input)


class OldSignal(Signal):
    """A signal written before Options: a defaults dict."""

    defaults: ClassVar[dict[str, Any]] = {"level": 2}

    def value(self, case: ProbeCase) -> float | None:
        return None


@pytest.mark.parametrize("plugin", [OldGenerator, OldSignal])
def test_a_plugin_without_options_keeps_its_dict_its_names_checked_with_one_warning(plugin: type[Any]) -> None:
    registry = GENERATORS if plugin is OldGenerator else SIGNALS
    reference = f"{__name__}:{plugin.__qualname__}"
    with pytest.warns(PluginWarning, match="declares no Options"):
        cls = registry.get(reference)
    assert cls.Options is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        made = cls({"level": 3})
    assert made.options == {"level": 3} and made.option_values == {"level": 3}
    with pytest.raises(BelugaError, match="did you mean 'level'"):
        cls({"levle": 3})


def test_no_hand_written_unknown_option_check_is_left() -> None:
    # One check of a plugin's options (contracts.options.validate_options): no module compares option names with a
    # plugin's defaults itself, nor words an unknown option's error of its own.
    own = REPO / "beluga_core" / "contracts" / "options.py"
    pattern = re.compile(r"unknown option|set\([^)]*\)\s*-\s*set\([^)]*defaults|not in (self\.|cls\.)?defaults\b")
    found = [f"{path.relative_to(REPO)}:{i}" for path in (REPO / "beluga_core").rglob("*.py") if path != own
             for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if pattern.search(line)]
    assert found == []
