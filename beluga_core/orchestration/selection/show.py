"""Printing grid selections (``beluga run`` between its phases, ``beluga select``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

from beluga_core.analysis.report.sections.halving import by_rung_text, point_text, scope_text, stopped_at
from beluga_core.orchestration.selection.select import Ranked


def _num(value: object) -> str:
    return "–" if value is None else f"{value:.4f}" if isinstance(value, float) else str(value)


def print_selection(ranked: Sequence[Ranked], criterion: str, console: Console,
                    extra: Sequence[str] = ("reference", "mean_pass", "worst_group", "iid_val"),
                    title: str = "grid selection") -> None:
    """One row per (selection key, rank): the point, the criterion's value and a few other criteria."""
    if not ranked:
        console.print("no finished grid points to select from")
        return
    others = [c for c in extra if c != criterion]
    table = Table(title=f"{title} by {criterion}", title_justify="left")
    for col in ("task", "configuration", "method", "scope", "rank", "of", "point", criterion, *others):
        table.add_column(col, justify="right" if col not in ("task", "configuration", "method", "scope", "point")
                         else "left", overflow="fold")
    for r in ranked:
        k = r.key
        scope = "seen" if k["scope_level"] is None else f"{k['scope_level']}={k['scope_group']}"
        table.add_row(k["task"], k["config"], k["method"], scope, str(r.rank), str(r.n_points), point_text(r.point),
                      _num(r.value), *(_num(r.scores.get(c)) for c in others))
    console.print(table)


def print_halving(rows: Sequence[dict[str, Any]], console: Console) -> None:
    """Where each point of the store's successive-halving searches stopped (the ``grid_halving`` view's rows)."""
    if not rows:
        return
    table = Table(title="successive halving: where each point stopped (promoted by the run's criterion)",
                  title_justify="left")
    for col in ("task", "configuration", "method", "scope", "point", "stopped at", "reference by rung", "chosen"):
        table.add_column(col, overflow="fold")
    for r in rows:
        table.add_row(r["task"], r["config"], r["method"], scope_text(r), point_text(r["point"]),
                      stopped_at(r), by_rung_text(r["reference_by_rung"], 4),
                      "yes" if r["chosen"] else "")
    console.print(table)
