"""The grid of a (task, method): which values each hyper-parameter takes, and the job hyper-parameters.

Axes merge in this order, each replacing the axis of the same name: the config's ``[grid]`` axes, the
task's (``[grid.tasks.NAME]``, e.g. reading's batch sizes), the method's own (``Method.grid_axes``, lp's
learning rates) and the config's per-method ones (``[grid.methods.NAME]``).
"""

from __future__ import annotations

import itertools
from typing import Any

from beluga_core import registry
from beluga_core.config.schema import BenchmarkConfig
from beluga_core.errors import BelugaError
from beluga_core.methods.base import TRAINING_KEYS


def method_hparams(cfg: BenchmarkConfig, method: str) -> dict[str, Any]:
    """The method's defaults with the config's ``[method.NAME]`` overrides (unknown names are an error)."""
    plugin = registry.get("method", method)
    defaults = dict(getattr(plugin, "defaults", {}) or {})
    overrides = cfg.methods_hparams.get(method, {})
    unknown = set(overrides) - set(defaults) - set(TRAINING_KEYS)
    if unknown:
        raise BelugaError(f"[method.{method}] sets unknown hyper-parameter(s) {sorted(unknown)}; "
                          f"'{method}' takes {sorted(defaults) or 'none'} and the training keys "
                          f"{list(TRAINING_KEYS)}")
    return defaults | overrides


def job_hparams(cfg: BenchmarkConfig, method: str, point: dict[str, Any] | None = None,
                reused: dict[str, dict[str, Any] | None] | None = None,
                configuration: str | None = None) -> dict[str, Any]:
    """A suite step's hyper-parameters: ``[training]`` (+ ``[training.suite]``, + the configuration's
    ``[training.configurations.NAME]``), then the method's training-key defaults and overrides, then a grid
    point; the method's own under ``method``.

    A method that reuses others' selections (lp-ft) gets their full hyper-parameters, each with its
    chosen point from ``reused``, under ``stages``.
    """
    plugin = registry.get("method", method)
    mh = method_hparams(cfg, method)
    point = point or {}
    hp = cfg.training.stage("suite", configuration)
    hp |= {k: v for k, v in mh.items() if k in TRAINING_KEYS}
    for key, value in point.items():
        if key in TRAINING_KEYS:
            hp[key] = value
        if key in mh or key not in TRAINING_KEYS:
            mh[key] = value
    hp["method"] = mh
    if plugin.reuses:
        hp["stages"] = [job_hparams(cfg, m, (reused or {}).get(m), configuration=configuration)
                        for m in plugin.reuses]
    return hp


def grid_methods(methods: list[str]) -> list[str]:
    """The methods that get a search of their own: each method, or the ones it reuses (lp-ft → lp, vanilla)."""
    out: list[str] = []
    for m in methods:
        for g in registry.get("method", m).reuses or (m,):
            if g not in out:
                out.append(g)
    return out


def axes_for(cfg: BenchmarkConfig, task: str, method: str) -> dict[str, list[Any]]:
    plugin = registry.get("method", method)
    axes = cfg.grid.base_axes()
    axes |= cfg.grid.tasks.get(task, {})
    axes |= dict(getattr(plugin, "grid_axes", {}) or {})
    axes |= cfg.grid.methods.get(method, {})
    known = set(TRAINING_KEYS) | set(getattr(plugin, "defaults", {}) or {})
    for name, values in axes.items():
        if name not in known:
            raise BelugaError(f"grid axis '{name}' is neither a training key ({', '.join(TRAINING_KEYS)}) nor a "
                              f"hyper-parameter of method '{method}' ({', '.join(sorted(plugin.defaults)) or 'none'})",
                              field=f"grid.methods.{method}")
        if not isinstance(values, list) or not values:
            raise BelugaError(f"grid axis '{name}' of method '{method}' needs a non-empty list of values",
                              field=f"grid.methods.{method}")
    return axes


def grid_points(cfg: BenchmarkConfig, task: str, method: str) -> list[dict[str, Any]]:
    """Every combination of the axes, in a fixed order (axes sorted by name, values as listed)."""
    axes = axes_for(cfg, task, method)
    names = sorted(axes)
    return [dict(zip(names, values, strict=True)) for values in itertools.product(*(axes[n] for n in names))]
