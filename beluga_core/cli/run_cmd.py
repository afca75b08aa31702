"""``beluga run CONFIG [--store PATH] [--dry-run]``."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from beluga_core.cli.app import app
from beluga_core.config.load import load_config
from beluga_core.plan import Plan, build_plan


def print_plan(plan: Plan, console: Console, done: set[str] | None = None) -> None:
    done = done or set()
    for tp in plan.tasks:
        counts: Counter[tuple[str, str, str]] = Counter()
        finished: Counter[tuple[str, str, str]] = Counter()
        for job in tp.jobs:
            key = (job.config, job.method, job.scenario)
            counts[key] += 1
            finished[key] += job.id in done
        table = Table(title=f"task {tp.spec.name}: suite {tp.suite.header.name} "
                            f"({len(tp.suite.cases):,} cases; T_train {len(tp.split.train):,} / "
                            f"T_val {len(tp.split.val):,} / T_test {len(tp.split.test):,} used)",
                      title_justify="left")
        for col in ("configuration", "method", "scenario", "trainings"):
            table.add_column(col, justify="right" if col == "trainings" else "left")
        if done:
            table.add_column("done", justify="right")
        for (config, method, scenario), n in counts.items():
            row = [config, method, scenario, str(n)]
            if done:
                row.append(str(finished[(config, method, scenario)]))
            table.add_row(*row)
        table.add_row("total", "", "", str(sum(counts.values())), *( [str(sum(finished.values()))] if done else []),
                      style="bold")
        console.print(table)
        for level, groups in tp.skipped_groups.items():
            if groups:
                console.print(f"  held-out {level}: no fold for {len(groups)} group(s) without T_test cases: "
                              f"{', '.join(groups[:5])}{' …' if len(groups) > 5 else ''}")
    total = len(plan.jobs)
    console.print(f"[bold]{total} trainings in all[/] ({len(done & {j.id for j in plan.jobs})} already in the store)"
                  f"; store: {plan.store_path()}")


@app.command("run")
def run(
    config: Path = typer.Argument(..., help="Benchmark config (TOML)."),
    store: Path | None = typer.Option(None, "--store", help="Result store; overrides the config's `store`."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Validate and print the plan; train nothing."),
) -> None:
    """Train and evaluate every fold of a benchmark config; results go to a DuckDB store."""
    console = Console()
    cfg = load_config(config)
    if store is not None:
        cfg = cfg.model_copy(update={"store": str(store.resolve())})
    plan = build_plan(cfg, config.resolve())
    if dry_run:
        print_plan(plan, console)
        return
    from beluga_core.runner import run_plan

    run_plan(plan, console)
