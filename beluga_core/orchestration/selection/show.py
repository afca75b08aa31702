"""Printing grid selections (``beluga run`` between its phases, ``beluga select``)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from rich.console import Console
from rich.table import Table

from beluga_core.orchestration.selection.select import Ranked


def _point(text: str) -> str:
    try:
        return ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in json.loads(text).items())
    except (ValueError, AttributeError):
        return text


def _num(value: object) -> str:
    return "–" if value is None else f"{value:.4f}" if isinstance(value, float) else str(value)


def print_selection(ranked: Sequence[Ranked], criterion: str, console: Console,
                    extra: Sequence[str] = ("reference", "mean_pass", "worst_group", "iid_val")) -> None:
    """One row per (selection key, rank): the point, the criterion's value and a few other criteria."""
    if not ranked:
        console.print("no finished grid points to select from")
        return
    others = [c for c in extra if c != criterion]
    table = Table(title=f"grid selection by {criterion}", title_justify="left")
    for col in ("task", "configuration", "method", "scope", "rank", "of", "point", criterion, *others):
        table.add_column(col, justify="right" if col not in ("task", "configuration", "method", "scope", "point")
                         else "left", overflow="fold")
    for r in ranked:
        k = r.key
        scope = "seen" if k["scope_level"] is None else f"{k['scope_level']}={k['scope_group']}"
        table.add_row(k["task"], k["config"], k["method"], scope, str(r.rank), str(r.n_points), _point(r.point),
                      _num(r.value), *(_num(r.scores.get(c)) for c in others))
    console.print(table)
