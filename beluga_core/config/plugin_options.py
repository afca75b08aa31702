"""The config's plugin tables checked against the plugins' ``Options`` (``contracts.options``), at config load:
``[method.NAME]``, the grid's method and task axes, and each ``[[tasks]]`` entry's ``options``.

``[method.NAME]`` takes the method's options and the training keys (``TRAINING_KEYS``: a method's suite step may
set its own learning rate, epochs, …), so its table is checked against one model, ``method_table``: the method's
Options with the training keys beside them (an option of the same name wins: lora's ``learning_rate`` default).
A method that reuses others' selections (lp-ft) takes no training key: its stages train with theirs.
``[grid.methods.NAME]`` and ``[grid.tasks.NAME]`` axes are checked value by value against the same model, so a
grid cannot search ``r = 0`` for lora. The same models give ``schemas/`` and the config reference their plugin
sections (``beluga_core.cli.jsonschema``).

Options set for a plugin the run does not use are accepted (methods come and go from a config's list) with a
warning naming them, so that ``[method.lora] r = 0`` in a run without lora does not pass unnoticed.
"""

from __future__ import annotations

import copy
import functools
import warnings
from collections.abc import Sequence
from typing import Any

from pydantic import Field, create_model

from beluga_core.config.schema import BenchmarkConfig
from beluga_core.config.strict import Strict
from beluga_core.config.training_spec import StageHParams, TrainingSpec
from beluga_core.contracts.methods import TRAINING_KEYS
from beluga_core.contracts.options import Options, undeclared_options, validate_options
from beluga_core.contracts.registries import METHODS, TASKS
from beluga_core.core.errors import BelugaError, ConfigWarning

# The training keys a ``[method.NAME]`` table may set for the method's suite step: a step's overrides
# (``[training.suite]``'s fields, each left out by default) and the gradient clipping of ``[training]``.
_TRAINING_FIELDS: dict[str, Any] = {k: (f.annotation, copy.copy(f)) for k, f in StageHParams.model_fields.items()}
_TRAINING_FIELDS["max_grad_norm"] = (float | None, Field(
    None, gt=0, description=TrainingSpec.model_fields["max_grad_norm"].description))
MethodTrainingKeys = create_model("MethodTrainingKeys", __base__=Options, **_TRAINING_FIELDS)
assert set(MethodTrainingKeys.model_fields) == set(TRAINING_KEYS), "the training keys and their model disagree"


@functools.cache
def method_table(name: str) -> type[Options]:
    """The model of ``[method.NAME]``: the method's Options, and the training keys unless it reuses others'."""
    plugin = METHODS.get(name)
    options = plugin.Options or undeclared_options(plugin)
    if plugin.reuses:
        return options
    # The method's options first, then the training keys it does not declare itself (lora's learning_rate is its
    # own option, with its own default).
    training: dict[str, Any] = {k: (f.annotation, copy.copy(f)) for k, f in MethodTrainingKeys.model_fields.items()
                                if k not in options.model_fields}
    return create_model(f"{options.__name__}Table", __base__=options,
                        __doc__=f"[method.{name}]: {name}'s options and the training keys of its suite step.",
                        **training)


def check_method_table(name: str, values: dict[str, Any]) -> None:
    """``[method.NAME]``'s values, or a ``BelugaError`` naming the field (``method.NAME.KEY``)."""
    plugin = METHODS.get(name)
    model = method_table(name)
    training = sorted(set(values) & set(TRAINING_KEYS) - set(model.model_fields))
    if plugin.reuses and training:
        tables = " / ".join(f"[method.{m}]" for m in plugin.reuses)
        raise BelugaError(f"[method.{name}] sets {training}, but '{name}' trains its stages with the values of "
                          f"{' and '.join(plugin.reuses)}: set them in {tables} (or [training.suite]); '{name}' "
                          f"takes {sorted(model.model_fields) or 'none'}", field=f"method.{name}.{training[0]}")
    validate_options(model, values, f"method.{name}")


def check_task_options(name: str, values: dict[str, Any], where: str) -> None:
    """A ``[[tasks]]`` entry's ``options`` against its task's Options (``where``: ``tasks.0.options``). A task
    plugin that does not load is left to the plan, which names it (a dry run still counts without it); one written
    before Options reads its options itself."""
    try:
        plugin = TASKS.get(name)
    except BelugaError:
        return
    if plugin.Options is not None:
        validate_options(plugin.Options, values, where)


def check_grid_axes(name: str, axes: dict[str, list[Any]], where: str, table: dict[str, Any]) -> None:
    """Grid axes of method ``name`` (``where``: their table, ``grid.methods.lora``): each a field of its
    ``[method.NAME]`` table, each value one that table (``table``, the config's) would take with it. Options checked
    together (ia3's feedforward_modules among its target_modules) are checked again per job, where two axes meet."""
    model = method_table(name)
    for axis, values in axes.items():
        if not isinstance(values, list) or not values:
            raise BelugaError(f"grid axis '{axis}' of method '{name}' needs a non-empty list of values",
                              field=f"{where}.{axis}")
        for value in values:
            validate_options(model, {**table, axis: value}, where)


def warn_unused(tables: dict[str, Any], used: set[str], what: str) -> None:
    """A warning naming each table of ``tables`` (``what``: ``method``, ``grid.methods`` or
    ``attributions.options``) whose plugin the run does not use."""
    unused = sorted(set(tables) - used)
    if unused:
        listed = ", ".join(f"[{what}.{n}]" for n in unused)
        runs = ", ".join(sorted(used)) or "none"
        warnings.warn(f"{listed} set options for {', '.join(unused)}, which this run does not use ("
                      f"{'attribution methods' if what.startswith('attributions') else 'methods'}: {runs}); they have "
                      "no effect", ConfigWarning, stacklevel=2)


def builtin_methods() -> list[str]:
    """The methods this package registers (what the committed schema and reference document)."""
    return [e.name for e in METHODS.entries() if e.target.startswith("beluga_core.")]


def documented_config(methods: Sequence[str]) -> type[BenchmarkConfig]:
    """``BenchmarkConfig`` with ``[method]`` typed per method of ``methods`` (each its ``method_table``): what
    ``schemas/benchmark-config.schema.json`` and the config reference show. A config is validated by
    ``BenchmarkConfig`` and then ``check_method_table``, which these types describe."""
    fields: dict[str, Any] = {}
    for name in methods:
        takes = ("its options (its stages train with the training values of "
                 f"{' and '.join(METHODS.get(name).reuses)})" if METHODS.get(name).reuses
                 else "its options and the training keys of its suite step")
        fields[name.replace("-", "_")] = (method_table(name) | None, Field(None, alias=name, description=(
            f"Method {name}: {takes} (`beluga plugins show {name}`).")))
    tables = create_model("MethodTables", __base__=Strict, __doc__=(
        "Per method, its options (a table per method, [method.NAME]); a table for a method the run does not use "
        "is accepted with a warning."), **fields)
    field = BenchmarkConfig.model_fields["methods_hparams"]
    return create_model("BenchmarkConfig", __base__=BenchmarkConfig, __doc__=BenchmarkConfig.__doc__,
                        methods_hparams=(tables, Field(default_factory=tables, alias="method",
                                                       description=field.description)))
