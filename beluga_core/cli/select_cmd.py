"""``beluga select STORE [--criterion …] [--top N]``: apply a selection criterion to stored grid points."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

from beluga_core.orchestration.selection.criteria import CRITERIA, DEFAULT_CRITERION


def select(
    store: Path = typer.Argument(..., help="Result store with grid points (a run with [grid] enabled)."),
    criterion: str = typer.Option(DEFAULT_CRITERION, "--criterion", "-c", help=(
        f"One of {', '.join(CRITERIA)}, or a SQL expression over the grid_scores view's columns "
        "(e.g. 'reference + 0.5 * iid_val'). Higher is better.")),
    top: int = typer.Option(1, "--top", min=1, help="Show the N best grid points of every selection."),
    task: str | None = typer.Option(None, "--task", help="Only this task."),
) -> None:
    """Show which grid point every (task, configuration, method[, held-out group]) selection would choose.

    Nothing is retrained: the store keeps every grid point's validation scores. To train the folds with
    another criterion's choice, set `[grid] criterion` in the config and run it again: finished grid
    points are reused and only folds whose chosen values changed are trained.
    """
    from beluga_core.orchestration.selection.select import rank_grid_points
    from beluga_core.orchestration.selection.show import print_selection
    from beluga_core.store.opened import open_handle

    with open_handle(store) as opened:
        ranked = rank_grid_points(opened.con, criterion, top=top)
    if task is not None:
        ranked = [r for r in ranked if r.key["task"] == task]
    print_selection(ranked, criterion, Console())
