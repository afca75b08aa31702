"""The grid of a (task, method): which values each hyper-parameter takes, and the job hyper-parameters.

Axes merge in this order, each replacing the axis of the same name: the config's ``[grid]`` axes, the
task's own (``grid_axes`` of the task plugin: reading's batch sizes {2, 3}), the config's per-task ones
(``[grid.tasks.NAME]``), the method's own (``Method.grid_axes``, lp's learning rates) and the config's
per-method ones (``[grid.methods.NAME]``).
"""

from __future__ import annotations

import itertools
from typing import Any, Literal

from beluga_core.config.schema import BenchmarkConfig
from beluga_core.contracts.methods import TRAINING_KEYS
from beluga_core.contracts.registries import METHODS, TASKS
from beluga_core.core.errors import BelugaError
from beluga_core.planning.halving import budgets


def method_hparams(cfg: BenchmarkConfig, method: str) -> dict[str, Any]:
    """The method's defaults with the config's ``[method.NAME]`` overrides, as written (checked at config load
    against the method's Options: ``config.plugin_options``)."""
    return dict(METHODS.get(method).defaults) | cfg.methods_hparams.get(method, {})


def job_hparams(cfg: BenchmarkConfig, method: str, point: dict[str, Any] | None = None,
                reused: dict[str, dict[str, Any] | None] | None = None,
                configuration: str | None = None, step: Literal["iid", "suite"] = "suite") -> dict[str, Any]:
    """A suite step's hyper-parameters: ``[training]`` (+ ``[training.suite]``, + the configuration's
    ``[training.configurations.NAME]``), then the method's training-key defaults and overrides, then a grid
    point; the method's own under ``method``.

    A method that reuses others' selections (lp-ft) gets their full hyper-parameters, each with its
    chosen point from ``reused``, under ``stages``.
    """
    plugin = METHODS.get(method)
    mh = method_hparams(cfg, method)
    point = point or {}
    hp = cfg.training.stage(step, configuration)
    hp |= {k: v for k, v in mh.items() if k in TRAINING_KEYS}
    for key, value in point.items():
        if key in TRAINING_KEYS:
            hp[key] = value
        if key in mh or key not in TRAINING_KEYS:
            mh[key] = value
    hp["method"] = mh
    if plugin.reuses:
        hp["stages"] = [job_hparams(cfg, m, (reused or {}).get(m), configuration=configuration, step=step)
                        for m in plugin.reuses]
    return hp


def grid_methods(methods: list[str]) -> list[str]:
    """The methods that get a search of their own: each method, or the ones it reuses (lp-ft → lp, vanilla)."""
    out: list[str] = []
    for m in methods:
        for g in METHODS.get(m).reuses or (m,):
            if g not in out:
                out.append(g)
    return out


def check_grid_tables(cfg: BenchmarkConfig) -> None:
    """``[grid.methods.NAME]`` of a method without a search of its own (lp-ft) could never apply."""
    for method in cfg.grid.methods:
        reuses = METHODS.get(method).reuses
        if reuses:
            raise BelugaError(f"'{method}' has no grid search of its own: it reuses the choices of "
                              f"{' and '.join(reuses)}; search their values in {_tables('grid.methods', reuses)}",
                              field=f"grid.methods.{method}")


def _tables(prefix: str, methods: tuple[str, ...]) -> str:
    return " / ".join(f"[{prefix}.{m}]" for m in methods)


def _task_axes(task: str) -> dict[str, list[Any]]:
    try:
        plugin = TASKS.get(task)
    except BelugaError:
        return {}  # a dry run without the task plugin (the plan reports it) counts the config's axes
    return dict(plugin.grid_axes)


def axes_for(cfg: BenchmarkConfig, task: str, method: str) -> dict[str, list[Any]]:
    plugin = METHODS.get(method)
    axes = cfg.grid.base_axes()
    axes |= _task_axes(task)
    axes |= cfg.grid.tasks.get(task, {})
    axes |= dict(plugin.grid_axes)
    axes |= cfg.grid.methods.get(method, {})  # the config's axes are checked at load (config.plugin_options)
    return axes


def grid_points(cfg: BenchmarkConfig, task: str, method: str) -> list[dict[str, Any]]:
    """Every combination of the axes, in a fixed order (axes sorted by name, values as listed)."""
    return _combinations(axes_for(cfg, task, method))


def halving_points(cfg: BenchmarkConfig, task: str, method: str) -> tuple[list[dict[str, Any]], tuple[float, ...]]:
    """A successive-halving search's points and its rungs' epoch budgets (``planning.halving``): every combination
    of the axes but epochs, each with the largest budget as its epochs (what the chosen point trains), in
    ``grid_points``' order."""
    axes = axes_for(cfg, task, method)
    field = f"grid.methods.{method}.epochs" if "epochs" in cfg.grid.methods.get(method, {}) else "grid.epochs"
    epochs = axes.pop("epochs", None) or [cfg.training.stage("suite")["epochs"]]
    rungs = budgets(epochs, field)
    largest = max(epochs, key=float)  # as written, so the point reads as the full search's point of that budget
    return [dict(sorted((p | {"epochs": largest}).items())) for p in _combinations(axes)], rungs


def _combinations(axes: dict[str, list[Any]]) -> list[dict[str, Any]]:
    names = sorted(axes)
    return [dict(zip(names, values, strict=True)) for values in itertools.product(*(axes[n] for n in names))]
