"""Typed plugin options (issue 58), for methods: each method's Options are its hyper-parameters, checked at config
load by one validator; the stored settings and job ids stay as they were; options without effect are said."""

from __future__ import annotations

import gzip
import json
import warnings
from pathlib import Path
from typing import Any, ClassVar

import pytest
import torch
from helpers import DATA, REPO

from beluga_core.config.load import parse_config
from beluga_core.config.plugin_options import method_table
from beluga_core.contracts.methods import Method
from beluga_core.contracts.registries import METHODS
from beluga_core.core.errors import BelugaError, ConfigWarning, PluginWarning
from beluga_core.planning.grid_space import job_hparams, method_hparams
from tools.fixtures import build_golden

INTEGER_FLOATS = DATA / "options" / "integer-floats.toml"
# Recorded by the code before Options (3f6da39): tests/data/options/README.md says how.
RECORDED = DATA / "options" / "integer-floats.job_ids.json.gz"

# Each built-in method's defaults as its ``defaults`` dict wrote them before Options (3f6da39): the dict a job's id and
# stored settings hash, so Options may add no default and change none.
DEFAULTS_BEFORE_OPTIONS: dict[str, dict[str, Any]] = {
    "vanilla": {},
    "l2": {"weight_decay": 0.1},
    "dropout": {"dropout": 0.3},
    "lp": {"learning_rate": 1e-3},
    "lp-ft": {"lp_epochs": 1.5, "ft_epochs": 1.5},
    "irm": {"penalty_weight": 1e4, "anneal_fraction": 0.2, "env_level": None},
    "group-dro": {"eta": 0.01, "env_level": None},
    "fish": {"meta_lr": 5e-7, "inner_steps": 5, "env_level": None},
    "distill": {"alpha": 1.0, "temperature": 1.0, "where": "better", "teacher": "start"},
    "reweight": {"base": 0.5, "num_rules": 5, "rules": None},
    "lora": {"r": 8, "alpha": 8, "dropout": 0.1, "target_modules": ["query", "value"], "learning_rate": 5e-4},
    "ia3": {"target_modules": ["key", "value", "output.dense"], "feedforward_modules": ["output.dense"],
            "learning_rate": 3e-3},
    "bitfit": {"learning_rate": 1e-3},
}

BASE = """name = "x"
methods = {methods}
scenarios = ["standard", "seen"]
[[tasks]]
name = "sentiment"
suite = "builtin:sst2-phenomena"
iid = "builtin:sst2"
"""


def parsed(text: str, tmp_path: Path) -> Any:
    path = tmp_path / "c.toml"
    path.write_text(text, encoding="utf-8")
    return parse_config(text, path)


def test_every_builtin_method_declares_options_whose_defaults_are_the_old_dicts() -> None:
    builtin = {e.name for e in METHODS.entries() if e.target.startswith("beluga_core.")}
    assert builtin == set(DEFAULTS_BEFORE_OPTIONS)
    for name, before in DEFAULTS_BEFORE_OPTIONS.items():
        plugin = METHODS.get(name)
        assert plugin.Options is not None, name
        now = plugin.defaults
        assert now == before and [type(v) for v in now.values()] == [type(v) for v in before.values()], name


def test_an_integer_stays_an_integer_and_no_default_enters(tmp_path: Path) -> None:
    cfg = parse_config(INTEGER_FLOATS.read_text(encoding="utf-8"), INTEGER_FLOATS)
    irm = method_hparams(cfg, "irm")
    assert irm == {"penalty_weight": 10000, "anneal_fraction": 0, "env_level": None}
    assert type(irm["penalty_weight"]) is int and type(irm["anneal_fraction"]) is int
    hp = job_hparams(cfg, "lora")
    assert hp["method"]["dropout"] == 0 and type(hp["method"]["dropout"]) is int
    assert type(hp["learning_rate"]) is int   # a training key of the method's table, as written
    vanilla = job_hparams(cfg, "vanilla")
    assert vanilla["method"] == {"learning_rate": 1}   # what the config set, and nothing else
    # The typed instance a plugin reads holds the float; the stored dict keeps what was written.
    method = METHODS.get("irm")(irm)
    assert method.options.penalty_weight == 10000.0 and method.hp["penalty_weight"] == 10000


def test_the_integer_floats_config_keeps_the_ids_recorded_before_options() -> None:
    recorded = json.loads(gzip.decompress(RECORDED.read_bytes()))
    now = build_golden.job_ids(INTEGER_FLOATS)
    assert "jobs" in now and len(now["jobs"]) > 20
    assert now == recorded, f"{len(set(now['jobs']) ^ set(recorded['jobs']))} ids differ"


@pytest.mark.parametrize(("table", "field", "fragment"), [
    ("[method.lora]\nr = true\n", "method.lora.r", "valid integer"),
    ("[method.lora]\nr = 8.0\n", "method.lora.r", "valid integer"),
    ("[method.lora]\nr = 0\n", "method.lora.r", "greater than or equal to 1"),
    ("[method.lora]\ntarget_modules = []\n", "method.lora.target_modules", "at least 1 item"),
    ("[method.distill]\nwhere = \"worse\"\n", "method.distill.where", "'better', 'flip', 'correct' or 'all'"),
    ("[method.distill]\nteacher = \"nope\"\n", "method.distill.teacher", "expected 'start'"),
    ("[method.reweight]\nbase = 0\n", "method.reweight.base", "greater than 0"),
    ("[method.fish]\ninner_steps = 2.5\n", "method.fish.inner_steps", "valid integer"),
    ("[method.irm]\nbatch_size = 0\n", "method.irm.batch_size", "greater than or equal to 1"),
    ("[method.irm]\npenalty = 1\n", "method.irm.penalty", "did you mean 'penalty_weight'?"),
    ("[grid.methods.lora]\nr = [4, 0]\n", "grid.methods.lora.r", "greater than or equal to 1"),
    ("[grid.methods.lora]\nrank = [4]\n", "grid.methods.lora.rank", "unknown option"),
    ("[grid.tasks.sentiment]\nr = [4]\n", "grid.tasks.sentiment.r", "unknown option"),
])
def test_a_bad_method_option_names_its_line_and_field(table: str, field: str, fragment: str,
                                                       tmp_path: Path) -> None:
    text = BASE.format(methods='["vanilla", "lora"]') + table
    with pytest.raises(BelugaError) as err:
        parsed(text, tmp_path)
    line = len(BASE.splitlines()) + len(table.splitlines())
    assert err.value.field == field and err.value.line == line, str(err.value)
    assert fragment in err.value.message


def test_options_of_a_method_the_run_does_not_use_are_checked_and_said(tmp_path: Path) -> None:
    with pytest.raises(BelugaError, match="greater than or equal to 1"):
        parsed(BASE.format(methods='["vanilla"]') + "[method.lora]\nr = 0\n", tmp_path)
    with pytest.warns(ConfigWarning, match=r"\[method.lora\], \[method.l2\]|\[method.l2\], \[method.lora\]") as said:
        parsed(BASE.format(methods='["vanilla"]') + "[method.lora]\nr = 4\n[method.l2]\nweight_decay = 0.2\n",
               tmp_path)
    assert "which this run does not use (methods: vanilla)" in str(said[0].message)
    with pytest.warns(ConfigWarning, match=r"\[grid.methods.irm\]"):
        parsed(BASE.format(methods='["vanilla"]') + "[grid.methods.irm]\npenalty_weight = [1.0]\n", tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # lp-ft trains lp's and vanilla's choices: their tables have effect
        parsed(BASE.format(methods='["lp-ft"]') + "[method.lp]\nlearning_rate = 1e-2\n", tmp_path)


class LegacyMethod(Method):
    """A plugin written before Options: a defaults dict."""

    defaults: ClassVar[dict[str, Any]] = {"level": 0.05}

    def update(self, trainer: Any, batches: list[Any]) -> torch.Tensor:
        raise NotImplementedError


def test_a_plugin_without_options_works_with_its_dict_and_one_warning(tmp_path: Path) -> None:
    name = f"{__name__}:LegacyMethod"
    with pytest.warns(PluginWarning, match="declares no Options"):
        plugin = METHODS.get(name)
    assert plugin.Options is None and plugin(None).hp == {"level": 0.05} and plugin(None).options is None
    assert set(method_table(name).model_fields) >= {"level", "learning_rate"}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        METHODS.get(name)   # once: loaded plugins are kept


def test_a_table_model_takes_the_options_and_the_training_keys_an_option_of_both_wins() -> None:
    lora = method_table("lora")
    assert set(lora.model_fields) == {"r", "alpha", "dropout", "target_modules", "learning_rate", "batch_size",
                                      "epochs", "weight_decay", "warmup_ratio", "max_grad_norm"}
    assert lora.model_fields["learning_rate"].default == 5e-4
    assert set(method_table("lp-ft").model_fields) == {"lp_epochs", "ft_epochs"}   # it takes no training key


def test_the_committed_schema_rejects_a_bad_lora_rank_and_takes_a_good_one() -> None:
    # jsonschema comes with the test extra's ray (not a test dependency of its own: the GPU kit locks those).
    jsonschema = pytest.importorskip("jsonschema", reason="jsonschema is not installed (ray, of the test extra, "
                                     "brings it)")
    schema = json.loads((REPO / "schemas" / "benchmark-config.schema.json").read_text(encoding="utf-8"))
    good = {"name": "x", "tasks": [{"name": "sentiment", "suite": "s", "iid": "i"}], "method": {"lora": {"r": 4}}}
    jsonschema.validate(good, schema)
    for bad in ({"r": 0}, {"r": 8.5}, {"rank": 4}, {"dropout": 1.0}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate({**good, "method": {"lora": bad}}, schema)
    props = schema["$defs"]
    assert {"LoRAOptionsTable", "IRMOptionsTable", "GroupDROOptionsTable"} <= set(props)


def test_a_subclass_of_a_typed_plugin_with_a_defaults_dict_keeps_its_parents_types() -> None:
    from beluga_core.training.methods.lora import LoRA

    class WideLoRA(LoRA):
        defaults: ClassVar[dict[str, Any]] = {"r": 16, "alpha": 32, "dropout": 0.1,
                                              "target_modules": ["query", "key", "value"], "learning_rate": 5e-4}

    assert WideLoRA.defaults["r"] == 16 and WideLoRA.Options is not LoRA.Options
    method = WideLoRA()
    assert method.options.r == 16 and method.options.target_modules == ["query", "key", "value"]
    with pytest.raises(BelugaError, match="greater than or equal to 1") as err:
        WideLoRA({"r": 0})
    assert err.value.field == "method.lora.r"


def test_task_subclasses_keep_their_options_or_take_none() -> None:
    from beluga_core.contracts.options import NoOptions
    from beluga_core.contracts.tasks import TaskSettings
    from beluga_core.tasks.classification import ClassificationOptions, ClassificationTask

    class Reviews(ClassificationTask):   # overrides configure, keeps its parent's options
        def configure(self, settings: TaskSettings) -> None:
            super().configure(settings)

    class Fixed(ClassificationTask):     # fixed columns: nothing to choose
        text_fields: ClassVar[tuple[str, ...] | None] = ("review",)

    assert Reviews.Options is ClassificationOptions and Fixed.Options is NoOptions
    task = Reviews()
    task.configure(TaskSettings(options={"text_field": "review"}))
    assert task.iid_columns() == (("review",), ("label",))
    with pytest.raises(BelugaError, match="it takes no options"):
        Fixed().configure(TaskSettings(options={"text_field": "review"}))


def test_a_grid_value_is_checked_with_the_methods_table(tmp_path: Path) -> None:
    # ia3's feedforward_modules must be among its target_modules: a grid of target_modules is checked against the
    # table's feedforward_modules, not against the defaults alone (the table itself is checked as it stands).
    text = BASE.format(methods='["ia3"]') + ('[method.ia3]\nfeedforward_modules = ["intermediate.dense"]\n'
                                             'target_modules = ["key", "value", "intermediate.dense"]\n'
                                             '[grid.methods.ia3]\ntarget_modules = [["key", "intermediate.dense"]]\n')
    parsed(text, tmp_path)
    bad = text.replace('[["key", "intermediate.dense"]]', '[["key", "value"]]')
    with pytest.raises(BelugaError, match="each must be one of target_modules") as err:
        parsed(bad, tmp_path)
    assert err.value.field == "grid.methods.ia3.feedforward_modules"
