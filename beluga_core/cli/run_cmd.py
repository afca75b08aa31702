"""``beluga run CONFIG [--store PATH] [--dry-run]``: the dry run prints the plan's summary
(``beluga_core.orchestration.plan_summary``, formatted by ``beluga_core.cli.plan_view``)."""

from __future__ import annotations

import contextlib
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape

from beluga_core.cli.plan_view import print_plan
from beluga_core.config.load import load_config, with_config_line
from beluga_core.config.tiny import tiny_config
from beluga_core.core.errors import BelugaError
from beluga_core.execution.executors.base import EXECUTORS, check_executor_options
from beluga_core.orchestration.coordinator import run_plan
from beluga_core.orchestration.plan_summary import dry_run_summary
from beluga_core.orchestration.preflight import method_footprints, require_hub_names
from beluga_core.orchestration.selection.criteria import check_criterion
from beluga_core.orchestration.settings_guard import check_settings
from beluga_core.orchestration.teachers import plan_with_stores
from beluga_core.planning.plan import store_path_of
from beluga_core.store.connection import DEFAULT_LOCK_TIMEOUT_S
from beluga_core.store.opened import open_handle


def run(
    config: Path = typer.Argument(..., help="Benchmark config (TOML)."),
    store: Path | None = typer.Option(None, "--store", help="Result store; overrides the config's `store`."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Validate and print the plan; train nothing."),
    variant: str | None = typer.Option(
        None, "--variant", help="Name this run's settings as a variant of their own (overrides the config's "
        "`variant`): its models never share a view row with another variant's, and a store refuses a re-run with "
        "changed settings unless it names one."),
    lock_timeout: float = typer.Option(
        DEFAULT_LOCK_TIMEOUT_S, "--lock-timeout", min=0,
        help="Seconds a commit waits for a reader that holds the store open (a report, a duckdb CLI) before "
             "the run stops; finished folds stay committed and re-running resumes."),
    tiny: bool = typer.Option(False, "--tiny", help=(
        "Run the config at the smallest sizes to check that it works end to end (minutes on a CPU for most "
        "configs): every task, configuration, method, scenario kind, executor and option kept; sizes, one group "
        "per held-out level, one layer and one epoch; a hub model or dataset replaced by the offline stand-in "
        "(said so). Results go to STORE.tiny.duckdb unless --store says; their numbers mean nothing.")),
    calibrate: bool = typer.Option(False, "--calibrate", help=(
        "Measure this machine's training and evaluation rates for the plan's models again (a few capped steps of "
        "a randomly initialised model of each shape) instead of reading them from the user's cache; the time "
        "estimates use them until the run's store has finished trainings of its own.")),
) -> None:
    """Train and evaluate every fold of a benchmark config; results go to a DuckDB store."""
    console = Console()
    cfg = load_config(config)
    changes: list[str] = []  # recorded with the run (runs.config_changes), beside the config it runs
    if tiny:
        try:
            cfg, notes = tiny_config(cfg)
        except BelugaError as exc:
            raise with_config_line(exc, config.resolve()) from None
        for note in notes:
            console.print(f"[bold]--tiny[/]: {escape(note)}", highlight=False)
        changes += [f"--tiny: {note}" for note in notes]
    if store is not None:
        cfg = cfg.with_store_path(str(store.resolve()))
        changes.append(f"--store {store.resolve()}")
    if variant is not None:
        cfg = cfg.with_variant(variant)
        changes.append(f"--variant {variant}")
    path = config.resolve()
    try:
        EXECUTORS.require(cfg.executor.name, field="executor.name")
        check_executor_options(cfg.executor)
        if cfg.grid.enabled:
            check_criterion(cfg.grid.criterion)
    except BelugaError as exc:
        raise with_config_line(exc, path) from None
    store_path = store_path_of(cfg, path)
    # Planning reads the run's store (its done ids; the dry run its state and slots) through one read-only open,
    # closed before the run: the run writes it through its own writer, one transaction per commit.
    if cfg.sweep:
        if cfg.grid.enabled:
            raise with_config_line(BelugaError(
                "a sweep runs without a grid search: each point would search again, and a grid point shared by two "
                "points selects for one only; set the searched values in [training] or [method.NAME], or sweep "
                "them", field="grid.enabled"), path)
        from beluga_core.cli.sweep_run import run_sweep

        run_sweep(cfg, path, store_path, console, dry_run=dry_run, changes=changes, lock_timeout=lock_timeout,
                  calibrate=calibrate)
        return
    with open_handle(store_path) if store_path.exists() else contextlib.nullcontext() as opened:
        plan = plan_with_stores(cfg, path, allow_missing_tasks=dry_run, config_changes=changes, store=opened)
        try:
            footprints = method_footprints(plan)
        except BelugaError as exc:
            raise with_config_line(exc, path) from None
        if dry_run:
            print_plan(dry_run_summary(plan, footprints, store=opened, calibrate=calibrate), console)
            check_settings(plan, opened=opened)
            return
    require_hub_names(plan, path)
    run_plan(plan, console, lock_timeout=lock_timeout, calibrate=calibrate)

