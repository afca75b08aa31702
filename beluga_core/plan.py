"""From a validated config and suites to the plan: folds per scenario, and jobs identified by content hash.

A fold is pure data (case ids + held-out group); a job is pure data whose hash is its identity, which is
what makes resume, parallel executors and caching simple.

With a grid search the plan has two phases. Phase 1: the IID models and the grid points (``grid_jobs``,
trained on T_train and scored on T_val). Then the grid points are selected (``beluga_core.grid.select``),
and phase 2 resolves the ``pending`` folds into fold jobs whose hyper-parameters are the chosen values —
their hash includes them, so it exists only after selection, and a different choice never reuses a fold.
"""

from __future__ import annotations

import difflib
import hashlib
import inspect
import json
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from beluga_core import __version__, registry
from beluga_core.config.load import with_config_line
from beluga_core.config.schema import SEEN, STANDARD, BenchmarkConfig, TaskSpec
from beluga_core.errors import BelugaError
from beluga_core.grid.space import check_grid_tables, grid_methods, grid_points, job_hparams
from beluga_core.grid.space import method_hparams as method_hparams
from beluga_core.splits import SuiteSplit, group_ids, split_suite
from beluga_core.suite.io import Suite, load_suite
from beluga_core.tasks.base import configure_task
from beluga_core.training.model import check_config_overrides

# Bumped when training or evaluation code changes what a job computes, so old results are not reused.
JOB_FORMAT = 1

# Where a grid search selects: (None, None) for the seen scenario, (level, group) for a strict-mode fold.
Scope = tuple[str | None, str | None]
# One selection: (task, configuration, method searched, scope).
SelectionKey = tuple[str, str, str, str | None, str | None]


@dataclass(frozen=True)
class Fold:
    scenario: str
    heldout_level: str | None
    heldout_group: str | None
    train_ids: tuple[str, ...]
    eval_ids: tuple[str, ...]


@dataclass(frozen=True)
class Job:
    id: str
    task: str
    config: str
    method: str
    seed: int
    fold: Fold
    parent_id: str | None
    hparams: dict[str, Any]
    score_iid: bool
    model: str
    # "fold" (a model of a scenario, stored in `models`) or "grid" (a grid point: trained on the fold's
    # train ids, scored on its eval ids = T_val, stored in `grid_points`).
    kind: str = "fold"
    point: dict[str, Any] | None = None  # grid jobs: the searched values

    @property
    def scenario(self) -> str:
        return self.fold.scenario

    @property
    def scope(self) -> Scope:
        return (self.fold.heldout_level, self.fold.heldout_group)


@dataclass(frozen=True)
class PendingFold:
    """A fold job whose hyper-parameters are not chosen yet (phase 2 of a grid-search plan)."""

    task: str
    config: str
    method: str
    seed: int
    fold: Fold
    parent_id: str | None
    score_iid: bool
    model: str

    def selection_keys(self, mode: str) -> list[SelectionKey]:
        """The selections this fold needs: its method's, or those of the methods it reuses (lp-ft)."""
        scope: Scope = (self.fold.heldout_level, self.fold.heldout_group) if mode == "strict" else (None, None)
        return [(self.task, self.config, m, *scope) for m in registry.get("method", self.method).reuses or
                (self.method,)]


@dataclass
class TaskPlan:
    spec: TaskSpec
    suite: Suite
    split: SuiteSplit
    jobs: list[Job] = field(default_factory=list)
    skipped_groups: dict[str, list[str]] = field(default_factory=dict)
    common: dict[str, Any] = field(default_factory=dict)  # what every job id of the task hashes
    model: str = ""
    grid_jobs: list[Job] = field(default_factory=list)
    pending: list[PendingFold] = field(default_factory=list)
    unavailable: str | None = None  # why the task plugin cannot be loaded (dry runs only)
    folds: list[Fold] = field(default_factory=list)  # the suite scenarios' folds (one set for every seed)

    def fold_job(self, pending: PendingFold, hp: dict[str, Any]) -> Job:
        conf = registry.get("training configuration", pending.config)
        if conf.uses_iid:
            hp = {**hp, "iid_for_mix": True}
        fold = pending.fold
        job_id = _digest({
            **self.common, "seed": pending.seed, "config": pending.config, "method": pending.method,
            "hparams": hp, "parent": pending.parent_id, "scenario": fold.scenario, "heldout": fold.heldout_group,
            "train": _ids_digest(fold.train_ids), "eval": _ids_digest(fold.eval_ids), "score_iid": pending.score_iid,
            "beluga": __version__.split(".")[0],
        })
        return Job(job_id, pending.task, pending.config, pending.method, pending.seed, fold, pending.parent_id, hp,
                   pending.score_iid, pending.model)


@dataclass
class Plan:
    config: BenchmarkConfig
    config_path: Path
    tasks: list[TaskPlan]

    def for_workers(self) -> Plan:
        """The plan with each suite cut to the cases its jobs (and the folds still pending a grid search) read:
        what is sent to worker processes (the whole sentiment suite pickles to ~44 MB, seconds per worker to
        send and to load)."""
        tasks = []
        for tp in self.tasks:
            # tp.folds covers the folds still pending a grid search; the IID and grid jobs have their own.
            folds = [*tp.folds, *(j.fold for j in (*tp.jobs, *tp.grid_jobs))]
            read = {c for f in folds for c in (*f.train_ids, *f.eval_ids)}
            tasks.append(replace(tp, suite=tp.suite.subset(read)))
        return replace(self, tasks=tasks)

    @property
    def jobs(self) -> list[Job]:
        """The jobs whose identity is known: IID models and folds (all of them without a grid search)."""
        return [j for t in self.tasks for j in t.jobs]

    @property
    def grid_jobs(self) -> list[Job]:
        return [j for t in self.tasks for j in t.grid_jobs]

    @property
    def pending(self) -> list[PendingFold]:
        return [p for t in self.tasks for p in t.pending]

    def store_path(self) -> Path:
        p = Path(self.config.store)
        return p if p.is_absolute() else (self.config_path.parent / p).resolve()

    def resolve(self, chosen: dict[SelectionKey, dict[str, Any]]) -> tuple[list[Job], list[PendingFold]]:
        """Turn pending folds into jobs with the chosen grid points; returns the new jobs and the folds left
        pending because a selection they need is missing (no grid point of it finished)."""
        new: list[Job] = []
        left: list[PendingFold] = []
        mode = self.config.grid.mode
        for tp in self.tasks:
            still: list[PendingFold] = []
            for pending in tp.pending:
                keys = pending.selection_keys(mode)
                if any(k not in chosen for k in keys):
                    still.append(pending)
                    continue
                plugin = registry.get("method", pending.method)
                if plugin.reuses:
                    hp = job_hparams(self.config, pending.method, reused={k[2]: chosen[k] for k in keys},
                                     configuration=pending.config)
                else:
                    hp = job_hparams(self.config, pending.method, chosen[keys[0]], configuration=pending.config)
                job = tp.fold_job(pending, hp)
                tp.jobs.append(job)
                new.append(job)
            tp.pending = still
            left += still
        return new, left


def _digest(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()


@lru_cache(maxsize=8192)
def _ids_digest(ids: tuple[str, ...]) -> str:
    # The same fold's (tens of thousands of) case ids recur in every configuration, method and grid point.
    return _digest(ids)


def make_folds(suite: Suite, split: SuiteSplit, scenarios: list[str]) -> tuple[list[Fold], dict[str, list[str]]]:
    """Folds for the suite scenarios; also the groups per level that get no fold (no T_test case)."""
    folds: list[Fold] = []
    skipped: dict[str, list[str]] = {}
    if SEEN in scenarios:
        folds.append(Fold(SEEN, None, None, split.train, split.test))
    for level in scenarios:
        if level in (STANDARD, SEEN):
            continue
        test_by_group = group_ids(suite, split.test, level)
        train_by_group = group_ids(suite, split.train, level)
        all_groups = sorted(set(test_by_group) | set(train_by_group))
        skipped[level] = [g for g in all_groups if g not in test_by_group]
        for group in sorted(test_by_group):
            train = tuple(c for c in split.train if suite.group_of(suite.case(c), level) != group)
            folds.append(Fold(level, level, group, train, tuple(test_by_group[group])))
    return folds, skipped


def _check_levels(cfg: BenchmarkConfig, suite: Suite, config_path: Path) -> None:
    holdable = suite.header.holdable_levels()
    for scenario in cfg.heldout_levels:
        if scenario not in holdable:
            raise BelugaError(
                f"scenario '{scenario}' is not a level of suite '{suite.header.name}' ({suite.path}); "
                f"scenarios are standard, seen, or one of its levels: {', '.join(holdable)}",
                source=config_path, field="scenarios")


def _check_size_groups(per_group_of: dict[str, int], suite: Suite, config_path: Path) -> None:
    level = suite.header.scoring_level
    groups = {suite.group_of(c, level) for c in suite.cases}
    for name in per_group_of:
        if name not in groups:
            close = difflib.get_close_matches(name, sorted(groups), n=1, cutoff=0.6)
            hint = f"; did you mean '{close[0]}'?" if close else f"; its groups are: {', '.join(sorted(groups))}"
            raise BelugaError(f"'{name}' is not a {level} of suite '{suite.header.name}'{hint}",
                              source=config_path, field=f"sizes.suite_test_per_group_of.{name}")


def _check_configuration_keys(cfg: BenchmarkConfig, config_path: Path) -> None:
    """Per-configuration settings must name a configuration of the run that has the step they set."""
    checks = (("sizes.iid_mix_of", cfg.sizes.iid_mix_of, lambda c: c.uses_iid and c.uses_suite,
               "mix i.i.d. data into the suite step"),
              ("training.configurations", cfg.training.configurations, lambda c: c.uses_suite,
               "have a suite step"))
    for where, table, has_step, what in checks:
        eligible = [c for c in cfg.configurations if has_step(registry.get("training configuration", c))]
        for name in table:
            if name in eligible:
                continue
            if name in cfg.configurations:
                message = f"'{name}' does not {what}; the run's configurations that do: {', '.join(eligible) or 'none'}"
            else:
                message = registry.unknown_name_message("configuration of this run", name, eligible)
            raise BelugaError(message, source=config_path, field=f"{where}.{name}")


def _check_config_overrides(cfg: BenchmarkConfig, spec: TaskSpec, model: str, config_path: Path) -> None:
    if not cfg.model.config_overrides:
        return
    build = registry.get("task", spec.name).build_model
    if "config_overrides" not in inspect.signature(build).parameters:
        raise BelugaError(f"task '{spec.name}' cannot apply [model] config_overrides: its build_model takes no "
                          "config_overrides argument", source=config_path, field="model.config_overrides")
    try:
        check_config_overrides(model, cfg.model.config_overrides)
    except BelugaError as exc:
        raise BelugaError(exc.message, source=config_path, field=exc.field) from None


def _check_env_level(hp: dict[str, Any], method: str, suite: Suite, config_path: Path) -> None:
    level = hp.get("method", {}).get("env_level")
    holdable = suite.header.holdable_levels()
    if level is not None and level not in holdable:
        raise BelugaError(f"[method.{method}] env_level '{level}' is not a level of suite '{suite.header.name}'; "
                          f"choose one of {', '.join(holdable)} (default: the scoring level)",
                          source=config_path, field=f"method.{method}.env_level")


def _load_task(spec: TaskSpec, allow_missing: bool) -> str | None:
    """Load and configure the task plugin; with ``allow_missing`` (a dry run), a plugin that cannot be
    imported is reported instead of failing, since the plan itself needs only the suite."""
    try:
        plugin = registry.get("task", spec.name)
    except BelugaError as exc:
        if allow_missing:
            return str(exc)
        raise
    # The task checks its own settings (iid_metric, options), so a dry run catches mistakes in them.
    configure_task(plugin(), spec)
    return None


def build_plan(cfg: BenchmarkConfig, config_path: Path, *, allow_missing_tasks: bool = False) -> Plan:
    """The plan of a config. With a grid search, fold jobs wait in ``pending`` until ``Plan.resolve``."""
    try:
        return _build_plan(cfg, config_path, allow_missing_tasks)
    except BelugaError as exc:
        raise with_config_line(exc, config_path) from None


def _build_plan(cfg: BenchmarkConfig, config_path: Path, allow_missing_tasks: bool) -> Plan:
    tasks: list[TaskPlan] = []
    model_of = cfg.model.task_models
    _check_configuration_keys(cfg, config_path)
    check_grid_tables(cfg)
    for spec in cfg.tasks:
        unavailable = _load_task(spec, allow_missing_tasks)
        suite = load_suite(spec.suite)
        if spec.apply_corrections:
            suite = suite.effective()
        _check_levels(cfg, suite, config_path)
        sizes = cfg.sizes
        _check_size_groups(sizes.suite_test_per_group_of, suite, config_path)
        split = split_suite(suite, cfg.split.seed, cfg.split.ratios,
                            (sizes.suite_train_per_group, sizes.suite_val_per_group, sizes.suite_test_per_group),
                            sizes.suite_test_per_group_of)
        folds, skipped = make_folds(suite, split, cfg.scenarios)
        model = model_of.get(spec.name, cfg.model.name)
        if unavailable is None:
            _check_config_overrides(cfg, spec, model, config_path)
        common = {
            "format": JOB_FORMAT, "task": spec.name, "suite": suite.header.name,
            "suite_cases": len(suite.cases), "corrections": spec.apply_corrections, "iid": spec.iid,
            "model": model, "max_length": cfg.model.max_length, "split": cfg.split.model_dump(mode="json"),
            # Per-group and per-configuration exceptions only when set, so the ids of jobs without them stay
            # as they were.
            "sizes": sizes.model_dump(exclude={k for k in ("suite_test_per_group_of", "iid_mix_of")
                                               if not getattr(sizes, k)}),
            # Only when set, so the ids of jobs that use neither stay as they were.
            **({"iid_metric": spec.iid_metric} if spec.iid_metric else {}),
            **({"task_options": spec.options} if spec.options else {}),
            **({"model_config": cfg.model.config_overrides} if cfg.model.config_overrides else {}),
        }
        tp = TaskPlan(spec, suite, split, skipped_groups=skipped, common=common, model=model,
                      unavailable=unavailable, folds=folds)
        for method in {*cfg.methods, *grid_methods(cfg.methods)}:
            _check_env_level(job_hparams(cfg, method), method, suite, config_path)
        iid_ids: dict[int, str] = {}
        for seed in cfg.seeds:
            iid_hp = cfg.training.stage("iid")
            iid_fold = Fold(STANDARD, None, None, (), split.test)
            iid_id = _digest({**common, "seed": seed, "config": "iid", "method": "vanilla", "hparams": iid_hp,
                              "eval": _ids_digest(iid_fold.eval_ids)})
            iid_ids[seed] = iid_id
            needs_iid = any(registry.get("training configuration", c).start == "iid" or c == "iid"
                            for c in cfg.configurations)
            if needs_iid:
                tp.jobs.append(Job(iid_id, spec.name, "iid", "vanilla", seed, iid_fold, None, iid_hp, True, model))
            for config_name in cfg.configurations:
                conf = registry.get("training configuration", config_name)
                if conf.is_baseline():
                    continue
                parent = iid_id if conf.start == "iid" else None
                for method in cfg.methods:
                    for fold in folds:
                        pending = PendingFold(spec.name, config_name, method, seed, fold, parent,
                                              fold.scenario == SEEN or cfg.score_folds_on_iid_test, model)
                        if cfg.grid.enabled:
                            tp.pending.append(pending)
                        else:
                            tp.jobs.append(tp.fold_job(pending, job_hparams(cfg, method,
                                                                            configuration=config_name)))
        if cfg.grid.enabled and tp.pending:  # nothing to select for without suite folds
            _add_grid_jobs(cfg, tp, folds, iid_ids)
        tasks.append(tp)
    plan = Plan(cfg, config_path, tasks)
    if cfg.grid.enabled:
        from beluga_core.grid.criteria import check_criterion

        check_criterion(cfg.grid.criterion, config_path)
    return plan


def selection_scopes(tp: TaskPlan, folds: list[Fold], mode: str) -> list[tuple[Scope, Fold]]:
    """Where a search trains and selects: the seen scenario (T_train, T_val) and, in strict mode, every
    held-out fold too (its T_train without the group, and T_val without the group)."""
    seen = Fold(SEEN, None, None, tp.split.train, tp.split.val)
    out: list[tuple[Scope, Fold]] = [((None, None), seen)]
    if mode != "strict":
        return out
    for fold in folds:
        if fold.heldout_level is None:
            continue
        level, group = fold.heldout_level, fold.heldout_group
        val = tuple(c for c in tp.split.val if tp.suite.group_of(tp.suite.case(c), level) != group)
        out.append(((level, group), Fold(level, level, group, fold.train_ids, val)))
    return out


def _add_grid_jobs(cfg: BenchmarkConfig, tp: TaskPlan, folds: list[Fold], iid_ids: dict[int, str]) -> None:
    seed = cfg.grid.seed if cfg.grid.seed is not None else cfg.seeds[0]
    iid_id = iid_ids.get(seed) or _digest({**tp.common, "seed": seed, "config": "iid", "method": "vanilla",
                                           "hparams": cfg.training.stage("iid"),
                                           "eval": _ids_digest(tp.split.test)})
    if seed not in iid_ids and any(j.config == "iid" for j in tp.jobs):
        # A grid seed outside `seeds` needs its own IID model for the configurations that start from one.
        iid = next(j for j in tp.jobs if j.config == "iid")
        tp.jobs.insert(0, Job(iid_id, iid.task, "iid", "vanilla", seed, iid.fold, None, iid.hparams, True,
                              iid.model))
    iid_val = {"iid_val": cfg.grid.iid_val, "score_iid_val": cfg.grid.score_iid_val}
    for config_name in cfg.configurations:
        conf = registry.get("training configuration", config_name)
        if conf.is_baseline():
            continue
        parent = iid_id if conf.start == "iid" else None
        for method in grid_methods(cfg.methods):
            points = grid_points(cfg, tp.spec.name, method)
            for scope, fold in selection_scopes(tp, folds, cfg.grid.mode):
                train_digest, eval_digest = _ids_digest(fold.train_ids), _ids_digest(fold.eval_ids)
                for point in points:
                    hp = job_hparams(cfg, method, point, configuration=config_name)
                    job_id = _digest({
                        **tp.common, "kind": "grid", "seed": seed, "config": config_name, "method": method,
                        "hparams": hp, "parent": parent, "scope": list(scope),
                        "train": train_digest, "eval": eval_digest, **iid_val,
                        "beluga": __version__.split(".")[0],
                    })
                    tp.grid_jobs.append(Job(job_id, tp.spec.name, config_name, method, seed, fold, parent, hp,
                                            False, tp.model, kind="grid", point=point))
