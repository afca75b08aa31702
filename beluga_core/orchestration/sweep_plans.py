"""A sweep's plans (``[sweep]``, ``config.sweep``): one plan per point, run one after another into one store.

Each point is planned as a run of its own config (the swept keys set), its rows stored under the point's variant
(``TaskPlan.row_variant``). Job ids leave the point out, so a job that does not read the swept keys has the same id
at every point: the first point trains it, the later ones find it done (resume is "skip ids already done"), and the
store records it as a model of every point (``point_models``). Points run in order, each with the executor's
workers, so that an interrupted sweep resumes where it stopped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from beluga_core.config.schema import BenchmarkConfig
from beluga_core.config.sweep import SweepPoint, point_config, sweep_points
from beluga_core.core.errors import BelugaError
from beluga_core.data.splits import group_ids
from beluga_core.orchestration.teachers import plan_with_stores
from beluga_core.planning.plan import Plan
from beluga_core.store.opened import StoreHandle

# The swept [sizes] keys that cap a part of every scoring group, and the part they cap.
_CAPS = {"sizes.suite_train_per_group": "train", "sizes.suite_val_per_group": "val"}


def sweep_plans(cfg: BenchmarkConfig, config_path: Path, *, allow_missing_tasks: bool = False,
                config_changes: Sequence[str] = (), store: StoreHandle | None = None) -> list[Plan]:
    """The plan of every point of ``cfg``'s sweep, in order (``plan_with_stores``' arguments)."""
    points = sweep_points(cfg)
    plans = []
    for point in points:
        at = point_config(cfg, point)
        change = f"[sweep] point {point.position + 1} of {len(points)}: {point.label} (variant {point.variant})"
        try:
            plan = plan_with_stores(at, config_path, allow_missing_tasks=allow_missing_tasks,
                                    config_changes=(*config_changes, change), store=store)
        except BelugaError as exc:
            # A setting the sweep made (a per-configuration key of a configuration the run lacks): the sweep's key.
            key = next((k for k in point.values if exc.field and (k == exc.field or k.startswith(exc.field + "."))),
                       None)
            if key is None:
                raise
            raise BelugaError(f"point {point.position + 1} ({point.label}): {exc.message}",
                              field=f"sweep.{key}") from None
        for tp in plan.tasks:
            tp.row_variant = point.variant
        plan.point = point
        plan.capped = capped_groups(plan, point)
        plans.append(plan)
    return plans


def capped_groups(plan: Plan, point: SweepPoint) -> dict[str, list[str]]:
    """Per task and swept cap ("TASK train"), the scoring groups whose part holds fewer cases than the point asks:
    they train (or select) on all they hold, and the run goes on."""
    out: dict[str, list[str]] = {}
    for key, part in _CAPS.items():
        cap = point.values.get(key)
        if not cap:
            continue
        for tp in plan.tasks:
            level = tp.suite.header.scoring_level
            # The part before the caps (``SuiteSplit.parts``): what each group holds.
            held = group_ids(tp.suite, [cid for cid, p in tp.split.parts.items() if p == part], level)
            short = sorted(g for g, ids in held.items() if len(ids) < cap)
            if short:
                out[f"{tp.spec.name} {part}"] = short
    return out


def new_jobs_only(plan: Plan, earlier: set[str]) -> Plan:
    """``plan`` without the jobs an earlier point already has (the dry run prices each training once)."""
    return replace(plan, tasks=[replace(tp, jobs=[j for j in tp.jobs if j.id not in earlier]) for tp in plan.tasks])
