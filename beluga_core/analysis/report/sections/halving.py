"""Where the points of each successive-halving search stopped (``[grid] strategy = "halving"``; the store's
``grid_halving`` view): the rung and epochs each reached, and the point the run chose."""

from __future__ import annotations

import json

from beluga_core.analysis.report.section import Cell, Column, Section, Table
from beluga_core.analysis.report.sections.context import Context

HEADER = ["task", "configuration", "method", "scope", "point", "stopped at", "reference by rung", "chosen"]


def point_text(point: str) -> str:
    """A point's values as ``name=value`` pairs (its JSON text where it is not an object)."""
    try:
        values = json.loads(point)
        return ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in values.items())
    except (ValueError, AttributeError):
        return point


def stopped_at(row: dict[str, object]) -> str:
    """E.g. "rung 1 (2 epochs)": the last rung a point reached and the epochs it had trained to there."""
    epochs = float(str(row["stopped_epochs"]))
    return f"rung {row['stopped_rung']} ({epochs:g} epoch{'' if epochs == 1 else 's'})"


def scope_text(row: dict[str, object]) -> str:
    """A selection's scope: "seen", or the held-out "level=group" of a strict search."""
    return "seen" if row["scope_level"] is None else f"{row['scope_level']}={row['scope_group']}"


def by_rung_text(values: list[float | None], digits: int = 3) -> str:
    """A point's criterion at each rung it reached, e.g. "1.500 → 1.800"."""
    return " → ".join("—" if v is None else f"{v:.{digits}f}" for v in values)


def build(ctx: Context) -> list[Section]:
    rows = ctx.data.halving
    if not rows:
        return []
    cells = []
    for r in rows:
        cells.append([Cell(r["task"]), Cell(r["config"]), Cell(r["method"]), Cell(scope_text(r)),
                      Cell(point_text(r["point"])), Cell(stopped_at(r)), Cell(by_rung_text(r["reference_by_rung"])),
                      Cell("chosen" if r["chosen"] else "")])
    note = ("Each search trained every point to the smallest epoch count, then went on with the best "
            "`1/reduction` of them (`[grid] reduction`) by the run's criterion on T_val, to the largest epoch "
            "count, where it chose. *reference by rung*: the reference criterion (the sum over test types of their "
            "T_val metric) at each rung the point reached.")
    return [Section("halving", "Grid search by successive halving", [note],
                    [Table([Column(h) for h in HEADER], cells, numeric_from=6)])]
