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
    another criterion's choice, run the config with that [grid] criterion as a variant of its own
    (`beluga run CONFIG --variant NAME`; a store keeps one set of settings per cell). A successive-halving
    search ([grid] strategy = "halving") is ranked at its last rung (its earlier rungs were promoted by the
    run's criterion, which another one does not redo), and the rung each point stopped at is shown.
    """
    from beluga_core.orchestration.selection.select import rank_grid_points
    from beluga_core.orchestration.selection.show import print_halving, print_selection
    from beluga_core.store.connection import table_names
    from beluga_core.store.opened import open_handle

    with open_handle(store) as opened:
        ranked = rank_grid_points(opened.con, criterion, top=top)
        halving = [] if "grid_halving" not in table_names(opened.con) else \
            [dict(zip(("task", "config", "method", "scope_level", "scope_group", "point", "stopped_rung",
                       "stopped_epochs", "reference_by_rung", "chosen"), r, strict=True))
             for r in opened.con.execute("SELECT task, config, method, scope_level, scope_group, point, stopped_rung, "
                                         "stopped_epochs, reference_by_rung, chosen FROM grid_halving "
                                         "ORDER BY ALL").fetchall()]
    if task is not None:
        ranked = [r for r in ranked if r.key["task"] == task]
        halving = [r for r in halving if r["task"] == task]
    console = Console()
    print_selection(ranked, criterion, console)
    print_halving(halving, console)
