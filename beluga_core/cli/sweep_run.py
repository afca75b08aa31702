"""``beluga run CONFIG`` of a config with ``[sweep]``: every point's plan, priced by the dry run or run in order into
one store (``orchestration.sweep_plans``)."""

from __future__ import annotations

import contextlib
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from beluga_core.cli.plan_view import print_plan
from beluga_core.config.load import with_config_line
from beluga_core.config.schema import BenchmarkConfig
from beluga_core.core.errors import BelugaError
from beluga_core.orchestration.coordinator import run_plan, sweep_point_row
from beluga_core.orchestration.plan_summary import dry_run_summary
from beluga_core.orchestration.preflight import method_footprints, require_hub_names
from beluga_core.orchestration.settings_guard import check_settings
from beluga_core.orchestration.sweep_plans import new_jobs_only, sweep_plans
from beluga_core.planning.estimate import describe
from beluga_core.planning.plan import Plan
from beluga_core.store.opened import open_handle
from beluga_core.store.writer import StoreWriter


def run_sweep(cfg: BenchmarkConfig, path: Path, store_path: Path, console: Console, *, dry_run: bool,
              changes: list[str], lock_timeout: float, calibrate: bool) -> None:
    """Every point of ``cfg``'s sweep, in order, into one store (``orchestration.sweep_plans``); the dry run prices
    each point's trainings that no earlier point has."""
    with open_handle(store_path) if store_path.exists() else contextlib.nullcontext() as opened:
        try:
            plans = sweep_plans(cfg, path, allow_missing_tasks=dry_run, config_changes=changes, store=opened)
        except BelugaError as exc:
            raise with_config_line(exc, path) from None
        if dry_run:
            seen: set[str] = set()
            total = 0.0
            for plan in plans:
                assert plan.point is not None
                shared = sum(j.id in seen for j in plan.jobs)
                console.rule(f"sweep point {plan.point.position + 1} of {len(plans)}: {plan.point.label} "
                             f"(variant {plan.point.variant})")
                print_capped(plan, console)
                if shared:
                    console.print(f"{shared} job(s) shared with earlier points (the same ids: trained once), not "
                                  "counted again", highlight=False)
                try:
                    footprints = method_footprints(plan)
                except BelugaError as exc:
                    raise with_config_line(exc, path) from None
                summary = dry_run_summary(new_jobs_only(plan, seen), footprints, store=opened, calibrate=calibrate)
                print_plan(summary, console)
                check_settings(plan, opened=opened)
                if summary.pricing is not None:
                    total += summary.pricing.total.wall
                seen |= {j.id for j in plan.jobs}
            console.rule("sweep")
            console.print(f"{len(plans)} points, {len(seen)} jobs in all; estimated wall time of the whole sweep: "
                          f"{describe(total)} (the points run one after another)", highlight=False)
            return
    # Every point and its models recorded before the first trains: a point not reached, or interrupted, reads as
    # unfinished (sweep_progress) rather than as absent or complete.
    store_path.parent.mkdir(parents=True, exist_ok=True)
    writer = StoreWriter(store_path, lock_timeout=lock_timeout)
    for plan in plans:
        writer.record_sweep_point(sweep_point_row(plan), [j.id for j in plan.jobs if not j.is_grid_point])
    for plan in plans:
        assert plan.point is not None
        console.rule(f"sweep point {plan.point.position + 1} of {len(plans)}: {plan.point.label} "
                     f"(variant {plan.point.variant})")
        print_capped(plan, console)
        require_hub_names(plan, path)
        # Each point's end prints its report's terminal form, the sweep's curves so far included.
        run_plan(plan, console, lock_timeout=lock_timeout, calibrate=calibrate)


def print_capped(plan: Plan, console: Console) -> None:
    for where, groups in plan.capped.items():
        task, part = where.split(" ", 1)
        console.print(f"[yellow]{task}: {len(groups)} group(s) hold fewer T_{part} cases than this point asks and "
                      f"use all they hold:[/] {escape(', '.join(groups))}", soft_wrap=True)
