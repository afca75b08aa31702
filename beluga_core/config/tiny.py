"""``beluga run --tiny``: a config at the smallest sizes, to check in minutes that it runs end to end.

Everything that decides *what* runs stays: tasks and suites, configurations, methods, every scenario kind,
seeds, the split, the executor, ``[grid]`` (mode and criterion), ``[attributions]``, ``[fewshot]``,
``[store]``'s options and the ensembles. What decides *how much* shrinks (``TINY`` has the values): i.i.d. and
suite sizes, one group per held-out level and per ``only:LEVEL`` scenario (``[sizes] groups_per_level``), one
encoder layer, a short ``max_length`` (and the task's ``tiny_options``: reading's windows), at most one epoch
in batches of at least 64 (an optimizer step is most of a tiny fold's cost), one grid point per axis, two
attributed inputs per model at small budgets, probes of two cases, one case per eval-suite group.

A hub model becomes ``embedded:minilm`` and a hub dataset the task's shipped stand-in (``Task.offline_iid``),
so that a tiny run never downloads; each substitution is reported. The numbers of a tiny run mean nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from beluga_core.config.schema import BenchmarkConfig, TaskSpec
from beluga_core.config.training_spec import StageHParams
from beluga_core.contracts.registries import ATTRIBUTIONS, METHODS, TASKS
from beluga_core.core.errors import BelugaError
from beluga_core.data.pretrained import check_config_overrides

TINY_MODEL = "embedded:minilm"
TINY: dict[str, int] = {
    "iid_train": 32, "iid_mix": 8, "iid_test": 16, "suite_train_per_group": 1, "suite_val_per_group": 1,
    "suite_test_per_group": 1, "groups_per_level": 1, "num_hidden_layers": 1, "max_length": 32, "epochs": 1,
    "batch_size": 64,
    "iid_val": 16, "cap_per_fold": 2, "steps": 4, "samples": 16, "probe_n": 2, "pool_cap": 4, "perturbations": 1,
    "cases_per_group": 1,
}
# The attribution budgets a tiny run lowers (run_budget keys of the built-in methods).
_BUDGETS = ("steps", "samples")


def _at_most(value: int | float, cap: int) -> Any:
    """``value`` capped at ``cap``; 0 (all) becomes ``cap``."""
    return cap if not value else min(value, cap)


def is_hub_name(value: str) -> bool:
    """A resolved config value naming a Hugging Face hub model or dataset: not a built-in, an embedded model or a
    local path (``load_config`` makes local paths absolute)."""
    return not value.startswith(("builtin:", "embedded:")) and not Path(value).is_absolute()


def tiny_store_path(path: str) -> str:
    """Where a tiny run's results go unless ``--store`` says: beside the config's store, ``NAME.tiny.duckdb``, so
    that they never mix with a real run's."""
    p = Path(path)
    return str(p.with_name(f"{p.stem}.tiny{p.suffix or '.duckdb'}"))


def tiny_config(cfg: BenchmarkConfig) -> tuple[BenchmarkConfig, list[str]]:
    """``cfg`` at tiny sizes (see the module), and one line per change a reader should know of: the sizes, and
    every hub name replaced."""
    notes: list[str] = []
    tasks = [_tiny_task(i, spec, notes) for i, spec in enumerate(cfg.tasks)]
    model = cfg.model
    names = {"model.name": model.name, **{f"model.task_models.{k}": v for k, v in model.task_models.items()}}
    for where, name in names.items():
        if is_hub_name(name):
            notes.append(f"{where} '{name}' is a hub model: {TINY_MODEL} instead")
    swap = {name: TINY_MODEL for name in names.values() if is_hub_name(name)}
    model = model.model_copy(update={
        "name": swap.get(model.name, model.name),
        "task_models": {k: swap.get(v, v) for k, v in model.task_models.items()},
        "max_length": min(model.max_length, TINY["max_length"]),
        "config_overrides": _fewer_layers(model.config_overrides, [swap.get(n, n) for n in names.values()], notes)})
    s = cfg.sizes
    sizes = s.model_copy(update={
        **{k: _at_most(getattr(s, k), TINY[k]) for k in ("iid_train", "iid_mix", "iid_test", "suite_train_per_group",
                                                         "suite_val_per_group", "suite_test_per_group",
                                                         "groups_per_level")},
        # The named groups and configurations stay (a misspelt one is still an error); their sizes shrink.
        "suite_test_per_group_of": {k: _at_most(v, TINY["suite_test_per_group"])
                                    for k, v in s.suite_test_per_group_of.items()},
        "iid_mix_of": {k: _at_most(v, TINY["iid_mix"]) for k, v in s.iid_mix_of.items()}})
    t = cfg.training
    training = t.model_copy(update={
        "epochs": min(t.epochs, TINY["epochs"]), "batch_size": max(t.batch_size, TINY["batch_size"]),
        "iid": _few_steps(t.iid), "suite": _few_steps(t.suite),
        "configurations": {k: _few_steps(v) for k, v in t.configurations.items()}})
    methods_hparams = {m: _few_steps_dict(hp) for m, hp in cfg.methods_hparams.items()}
    fewshot = cfg.fewshot.model_copy(update={
        "n": min(cfg.fewshot.n, TINY["probe_n"]), "pool_cap": _at_most(cfg.fewshot.pool_cap, TINY["pool_cap"]),
        "perturbations": min(cfg.fewshot.perturbations, TINY["perturbations"])})
    tiny = cfg.model_copy(update={
        "tasks": tasks, "model": model, "sizes": sizes, "training": training, "methods_hparams": methods_hparams,
        "grid": _one_point(cfg, tasks) if cfg.grid.enabled else cfg.grid,
        "attributions": _cheap_attributions(cfg), "fewshot": fewshot,
        "store": cfg.store_spec.model_copy(update={"path": tiny_store_path(cfg.store_spec.path)}),
        # A sweep's first two points, their values as set: a sweep's run and curves are checked, not its sizes.
        "sweep": {k: v[:2] for k, v in cfg.sweep.items()}})
    if len(next(iter(cfg.sweep.values()), [])) > 2:
        notes.append(f"[sweep]: its first 2 of {len(next(iter(cfg.sweep.values())))} points, their values as set")
    layers = tiny.model.config_overrides.get("num_hidden_layers")
    notes.insert(0, f"tiny sizes: {sizes.iid_train} i.i.d. training examples ({sizes.iid_mix} mixed into a fold), "
                    f"{sizes.iid_test} D_test; {sizes.suite_train_per_group} / {sizes.suite_val_per_group} / "
                    f"{sizes.suite_test_per_group} T_train / T_val / T_test case(s) per scoring group; "
                    f"{sizes.groups_per_level} group per held-out level and only:LEVEL scenario; "
                    + (f"{layers} encoder layer(s), " if layers else "")
                    + f"max_length {tiny.model.max_length}; at most {TINY['epochs']} epoch in batches of at least "
                    f"{TINY['batch_size']}"
                    + ("; one grid point per axis" if cfg.grid.enabled else "")
                    + ". Its numbers mean nothing: it checks that the config runs.")
    return tiny, notes


def _tiny_task(index: int, spec: TaskSpec, notes: list[str]) -> TaskSpec:
    caps = TASKS.get(spec.name).tiny_options
    update: dict[str, Any] = {
        "eval_suites": [e.model_copy(update={"cases_per_group": TINY["cases_per_group"]}) for e in spec.eval_specs()],
        "options": {**spec.options, **{k: min(int(spec.options.get(k, cap)), cap) for k, cap in caps.items()}}}
    if is_hub_name(spec.iid):
        stand_in = TASKS.get(spec.name).offline_iid
        if stand_in is None:
            raise BelugaError(f"'{spec.iid}' is a hub dataset, and task '{spec.name}' ships no offline stand-in for "
                              "a tiny run: name a local folder or a builtin: dataset", field=f"tasks.{index}.iid")
        notes.append(f"tasks.{index}.iid '{spec.iid}' is a hub dataset: {stand_in} instead (task {spec.name}'s "
                     "shipped stand-in)")
        update["iid"] = stand_in
    return spec.model_copy(update=update)


def _fewer_layers(overrides: dict[str, Any], models: list[str], notes: list[str]) -> dict[str, Any]:
    """``overrides`` keeping at most ``TINY`` encoder layers, where every model of the run has the setting."""
    layers = min(int(overrides.get("num_hidden_layers") or TINY["num_hidden_layers"]), TINY["num_hidden_layers"])
    fewer = {**overrides, "num_hidden_layers": layers}
    for name in dict.fromkeys(models):
        try:
            check_config_overrides(name, fewer)
        except BelugaError:
            notes.append(f"model '{name}' has no num_hidden_layers setting: its layers are kept")
            return overrides
    return fewer


def _few_steps(stage: StageHParams) -> Any:
    """A stage's own values at most one epoch, in batches of at least ``TINY["batch_size"]``."""
    return stage.model_copy(update=_few_steps_dict(stage.model_dump(include={"epochs", "batch_size"},
                                                                    exclude_none=True)))


def _few_steps_dict(hp: dict[str, Any]) -> dict[str, Any]:
    """Training keys (a stage's, a method's ``[method.NAME]``) at most one epoch, batches of at least 64."""
    out = dict(hp)
    if isinstance(hp.get("epochs"), int | float):
        out["epochs"] = min(hp["epochs"], TINY["epochs"])
    if isinstance(hp.get("batch_size"), int):
        out["batch_size"] = max(hp["batch_size"], TINY["batch_size"])
    return out


def _one_point(cfg: BenchmarkConfig, tasks: list[TaskSpec]) -> Any:
    """``[grid]`` with the first value of every axis: the config's, each task's and each searched method's own."""
    g = cfg.grid

    def first(axes: dict[str, list[Any]]) -> dict[str, list[Any]]:
        return {k: [_few_steps_dict({k: v[0]}).get(k, v[0])] for k, v in axes.items()}

    task_axes = {t.name: first({**TASKS.get(t.name).grid_axes, **g.tasks.get(t.name, {})}) for t in tasks}
    searched = dict.fromkeys(r for m in cfg.methods for r in METHODS.get(m).reuses or (m,))
    method_axes = {m: first({**METHODS.get(m).grid_axes, **g.methods.get(m, {})}) for m in searched}
    return g.model_copy(update={
        "batch_size": [max(g.batch_size[0], TINY["batch_size"])], "learning_rate": g.learning_rate[:1],
        "epochs": [min(g.epochs[0], TINY["epochs"])],
        "tasks": {**g.tasks, **{k: v for k, v in task_axes.items() if v}},
        "methods": {**g.methods, **{k: v for k, v in method_axes.items() if v}},
        "iid_val": _at_most(g.iid_val, TINY["iid_val"])})


def _cheap_attributions(cfg: BenchmarkConfig) -> Any:
    """``[attributions]`` with two inputs per model and small budgets (integrated-gradient steps, samples)."""
    spec = cfg.attributions
    options = {}
    for name in spec.methods:
        own = dict(spec.options.get(name, {}))
        budget = {**ATTRIBUTIONS.get(name).run_budget, **own}
        options[name] = own | {k: min(int(budget[k]), TINY[k]) for k in _BUDGETS if isinstance(budget.get(k), int)}
    return spec.model_copy(update={"cap_per_fold": _at_most(spec.cap_per_fold, TINY["cap_per_fold"]),
                                   "options": {**spec.options, **options}})


__all__ = ["TINY", "is_hub_name", "tiny_config", "tiny_store_path"]
