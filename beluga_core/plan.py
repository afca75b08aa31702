"""From a validated config and suites to the plan: folds per scenario, and jobs identified by content hash.

A fold is pure data (case ids + held-out group); a job is pure data whose hash is its identity, which is
what makes resume, parallel executors and caching simple.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from beluga_core import __version__, registry
from beluga_core.config.schema import SEEN, STANDARD, BenchmarkConfig, TaskSpec
from beluga_core.errors import BelugaError
from beluga_core.splits import SuiteSplit, group_ids, split_suite
from beluga_core.suite.io import Suite, load_suite
from beluga_core.tasks.base import configure_task

# Bumped when training or evaluation code changes what a job computes, so old results are not reused.
JOB_FORMAT = 1


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

    @property
    def scenario(self) -> str:
        return self.fold.scenario


@dataclass
class TaskPlan:
    spec: TaskSpec
    suite: Suite
    split: SuiteSplit
    jobs: list[Job] = field(default_factory=list)
    skipped_groups: dict[str, list[str]] = field(default_factory=dict)


@dataclass
class Plan:
    config: BenchmarkConfig
    config_path: Path
    tasks: list[TaskPlan]

    @property
    def jobs(self) -> list[Job]:
        return [j for t in self.tasks for j in t.jobs]

    def store_path(self) -> Path:
        p = Path(self.config.store)
        return p if p.is_absolute() else (self.config_path.parent / p).resolve()


def _digest(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()


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


def method_hparams(cfg: BenchmarkConfig, method: str) -> dict[str, Any]:
    plugin = registry.get("method", method)
    defaults = dict(getattr(plugin, "defaults", {}) or {})
    overrides = cfg.methods_hparams.get(method, {})
    unknown = set(overrides) - set(defaults)
    if unknown:
        raise BelugaError(f"[method.{method}] sets unknown hyper-parameter(s) {sorted(unknown)}; "
                          f"'{method}' takes {sorted(defaults) or 'none'}")
    return defaults | overrides


def build_plan(cfg: BenchmarkConfig, config_path: Path) -> Plan:
    tasks: list[TaskPlan] = []
    model_of = cfg.model.task_models
    for spec in cfg.tasks:
        # The task checks its own settings (iid_metric, options), so a dry run catches mistakes in them.
        configure_task(registry.get("task", spec.name)(), spec)
        suite = load_suite(spec.suite)
        if spec.apply_corrections:
            suite = suite.effective()
        _check_levels(cfg, suite, config_path)
        sizes = cfg.sizes
        split = split_suite(suite, cfg.split.seed, cfg.split.ratios,
                            (sizes.suite_train_per_group, sizes.suite_val_per_group, sizes.suite_test_per_group))
        folds, skipped = make_folds(suite, split, cfg.scenarios)
        tp = TaskPlan(spec, suite, split, skipped_groups=skipped)
        model = model_of.get(spec.name, cfg.model.name)
        common = {
            "format": JOB_FORMAT, "task": spec.name, "suite": suite.header.name,
            "suite_cases": len(suite.cases), "corrections": spec.apply_corrections, "iid": spec.iid,
            "model": model, "max_length": cfg.model.max_length, "split": cfg.split.model_dump(mode="json"),
            "sizes": sizes.model_dump(),
            # Only when set, so the ids of jobs that use neither stay as they were.
            **({"iid_metric": spec.iid_metric} if spec.iid_metric else {}),
            **({"task_options": spec.options} if spec.options else {}),
        }
        for seed in cfg.seeds:
            iid_hp = cfg.training.stage("iid")
            iid_fold = Fold(STANDARD, None, None, (), split.test)
            iid_id = _digest({**common, "seed": seed, "config": "iid", "method": "vanilla", "hparams": iid_hp,
                              "eval": _digest(iid_fold.eval_ids)})
            needs_iid = any(registry.get("training configuration", c).start == "iid" or c == "iid"
                            for c in cfg.configurations)
            if needs_iid:
                tp.jobs.append(Job(iid_id, spec.name, "iid", "vanilla", seed, iid_fold, None, iid_hp, True, model))
            for config_name in cfg.configurations:
                conf = registry.get("training configuration", config_name)
                if conf.is_baseline():
                    continue
                for method in cfg.methods:
                    hp = {**cfg.training.stage("suite"), "method": method_hparams(cfg, method)}
                    if conf.uses_iid:
                        hp["iid_for_mix"] = True
                    parent = iid_id if conf.start == "iid" else None
                    for fold in folds:
                        score_iid = fold.scenario == SEEN or cfg.score_folds_on_iid_test
                        job_id = _digest({
                            **common, "seed": seed, "config": config_name, "method": method, "hparams": hp,
                            "parent": parent, "scenario": fold.scenario, "heldout": fold.heldout_group,
                            "train": _digest(fold.train_ids), "eval": _digest(fold.eval_ids),
                            "score_iid": score_iid, "beluga": __version__.split(".")[0],
                        })
                        tp.jobs.append(Job(job_id, spec.name, config_name, method, seed, fold, parent, hp,
                                           score_iid, model))
        tasks.append(tp)
    return Plan(cfg, config_path, tasks)
