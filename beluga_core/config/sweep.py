"""``[sweep]``: one size-like setting over several values, each value a point of its own in one store.

A sweep names a setting by its dotted path and lists its values; further keys of the table are paired with the
first, value by value (IID+T's ``sizes.iid_mix`` grown with ``sizes.suite_train_per_group``, so that IID+T does
not turn into IID→T as the suite grows). The first key is the curve's axis.

Each point is the config with those values set, run under a variant of its own (``point_variant``: every view keys
on it). The point's variant is not part of any job's identity: a job that does not read the swept keys (the IID
model of a suite-size sweep) has one id at every point, is trained once, and counts at every point
(``point_models``). Only keys that change what a model trains on or how may be swept: a curve's points must be
scored on the same test cases, so T_test's and D_test's sizes, the split and the seeds are not sweepable.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from beluga_core.config.plugin_options import check_method_table
from beluga_core.config.schema import BenchmarkConfig, SizeSpec, TrainingSpec
from beluga_core.config.training_spec import StageHParams
from beluga_core.core.errors import BelugaError, did_you_mean

# The [sizes] keys a sweep may set: the test sizes are left out (a curve's points are scored on the same cases).
SWEEPABLE_SIZES = ("iid_train", "iid_mix", "suite_train_per_group", "suite_val_per_group")
_NOT_SWEEPABLE = {
    "sizes.suite_test_per_group": "T_test's size",
    "sizes.suite_test_per_group_of": "T_test's size",
    "sizes.iid_test": "D_test's size",
    "sizes.groups_per_level": "which groups get a fold",
}
assert set(SWEEPABLE_SIZES) < set(SizeSpec.model_fields), "a sweepable size that [sizes] does not have"


@dataclass(frozen=True)
class SweepPoint:
    """One value of a sweep: its position, the variant its rows are stored under, and the settings it sets."""

    position: int
    variant: str
    axis: str  # the first key of [sweep]: the curve's x axis
    values: dict[str, Any]  # every swept key → this point's value (the axis first)

    @property
    def value(self) -> Any:
        return self.values[self.axis]

    @property
    def label(self) -> str:
        return ", ".join(f"{k} = {v}" for k, v in self.values.items())


def sweep_points(cfg: BenchmarkConfig) -> list[SweepPoint]:
    """The points of the config's ``[sweep]`` (none without one), in the order its values are listed."""
    if not cfg.sweep:
        return []
    axis = next(iter(cfg.sweep))
    n = len(cfg.sweep[axis])
    return [SweepPoint(i, point_variant(cfg.variant, axis, cfg.sweep[axis][i]), axis,
                       {k: v[i] for k, v in cfg.sweep.items()}) for i in range(n)]


def point_variant(base: str, axis: str, value: Any) -> str:
    """The variant a point's rows are stored under: the base variant (if any), '+', the axis's last name, '-', the
    value ("suite_train_per_group-8"); a letter or digit first, as every variant name."""
    text = f"{value:g}" if isinstance(value, float) else str(value)
    name = f"{axis.rsplit('.', 1)[-1]}-{text}"
    return f"{base}+{name}" if base else name


def point_config(cfg: BenchmarkConfig, point: SweepPoint) -> BenchmarkConfig:
    """The config of one point: the swept keys set to the point's values, without ``[sweep]``, under the base
    variant (the point's own variant names its rows, not its jobs: ``TaskPlan.row_variant``)."""
    data = cfg.model_dump(by_alias=True, exclude_unset=True)
    data.pop("sweep", None)
    for key, value in point.values.items():
        _set(data, key.split("."), value)
    try:
        return BenchmarkConfig.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise BelugaError(f"the value {point.values} of point {point.position + 1} gives an invalid config: "
                          f"{'.'.join(str(p) for p in err.get('loc', ()))}: {err.get('msg', 'invalid')}",
                          field=f"sweep.{point.axis}") from None


def _set(data: dict[str, Any], path: list[str], value: Any) -> None:
    for name in path[:-1]:
        data = data.setdefault(name, {})
    data[path[-1]] = value


def check_sweep(cfg: BenchmarkConfig) -> None:
    """Every key of ``[sweep]`` a sweepable setting, every list of one length (at least two distinct values on the
    axis), and every point's config valid: the errors name ``sweep.KEY``."""
    if not cfg.sweep:
        return
    lengths = {k: len(v) for k, v in cfg.sweep.items()}
    axis = next(iter(cfg.sweep))
    for key, values in cfg.sweep.items():
        field = f"sweep.{key}"
        why = _unsweepable(cfg, key)
        if why:
            raise BelugaError(why, field=field)
        if lengths[key] != lengths[axis]:
            raise BelugaError(f"{lengths[key]} values, but the sweep's axis {axis} has {lengths[axis]}: paired keys "
                              "take one value per point", field=field)
        if any(isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) for v in values):
            raise BelugaError(f"expected numbers (one per point), got {values}", field=field)
    axis_values = cfg.sweep[axis]
    if len(axis_values) < 2:
        raise BelugaError("a sweep needs at least two values", field=f"sweep.{axis}")
    if len(set(axis_values)) != len(axis_values):
        raise BelugaError(f"the axis lists a value more than once: {axis_values}", field=f"sweep.{axis}")
    variants = [p.variant for p in sweep_points(cfg)]
    if len(set(variants)) != len(variants) or any(len(v) > 64 for v in variants):
        raise BelugaError(f"the points' variant names {variants} must be distinct and at most 64 characters",
                          field=f"sweep.{axis}")
    for point in sweep_points(cfg):
        at = point_config(cfg, point)
        for key in point.values:
            parts = key.split(".")
            if parts[0] != "method":
                continue
            if parts[1] not in cfg.methods:
                raise BelugaError(f"method '{parts[1]}' is not one of the run's methods ({', '.join(cfg.methods)})",
                                  field=f"sweep.{key}")
            try:
                check_method_table(parts[1], at.methods_hparams.get(parts[1], {}))
            except BelugaError as exc:
                raise BelugaError(f"point {point.position + 1} ({point.label}): {exc.message}",
                                  field=f"sweep.{key}") from None


def _unsweepable(cfg: BenchmarkConfig, key: str) -> str | None:
    """Why ``key`` cannot be swept, or None."""
    parts = key.split(".")
    if key in _NOT_SWEEPABLE:
        return (f"{key} sets {_NOT_SWEEPABLE[key]}: a curve's points are compared on the same cases, so it "
                f"cannot be swept; sweepable: {', '.join(sweepable_keys())}")
    head = parts[0]
    if head == "sizes":
        if len(parts) == 2 and parts[1] in SWEEPABLE_SIZES:
            return None
        if len(parts) == 3 and parts[1] == "iid_mix_of":
            return None
        return f"'{key}' is not a sweepable size{did_you_mean(key, sweepable_keys())}"
    if head == "training":
        fields = set(TrainingSpec.model_fields) - {"iid", "suite", "configurations"}
        stage_fields = set(StageHParams.model_fields)
        if len(parts) == 2 and parts[1] in fields:
            return None
        if len(parts) == 3 and parts[1] in ("iid", "suite") and parts[2] in stage_fields:
            return None
        if len(parts) == 4 and parts[1] == "configurations" and parts[3] in stage_fields:
            return None
        return (f"'{key}' is not a training value: training.KEY, training.iid.KEY, training.suite.KEY or "
                f"training.configurations.NAME.KEY, KEY one of {', '.join(sorted(stage_fields))}")
    if head == "method":
        if len(parts) == 3:
            return None  # checked against the method's Options with every point's config
        return f"'{key}': a method option is swept as method.NAME.OPTION (e.g. method.lora.r)"
    return (f"'{key}' cannot be swept{did_you_mean(key, sweepable_keys())}; sweepable: sizes.KEY, training.KEY, "
            "method.NAME.OPTION")


def sweepable_keys() -> list[str]:
    """The sweepable keys, as the errors and the docs list them (per-name tables as NAME)."""
    return [*(f"sizes.{k}" for k in SWEEPABLE_SIZES), "sizes.iid_mix_of.NAME", "training.KEY",
            "training.suite.KEY", "training.iid.KEY", "training.configurations.NAME.KEY", "method.NAME.OPTION"]

