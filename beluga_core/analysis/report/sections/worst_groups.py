"""The worst-group section: per configuration-method and heatmap, the lowest pass rate among its scoring groups
(the ``worst_groups`` view), with the group's number."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from beluga_core.analysis.report.heatmap_figures import Heatmap
from beluga_core.analysis.report.report_data import ReportData
from beluga_core.analysis.report.section import Cell, Column, Section, Table, pct
from beluga_core.analysis.report.sections.context import Context

TITLE = "Worst-group pass rate per scenario (%)"
NOTE = "The lowest pass rate among the scoring groups (G exclusions left out), with the group's number."


@dataclass
class WorstGroup:
    """The lowest pass rate among a heatmap row's non-excluded groups (the ``worst_groups`` view)."""

    value: float | None
    group: int | None        # its number in the suite layout


def worst_groups_of(data: ReportData, maps: list[Heatmap]) -> dict[tuple[str, str, str],
                                                                   dict[tuple[str, str], WorstGroup]]:
    """(task, suite, scenario) → pair → its worst group (the ``worst_groups`` view), for every heatmap and row of
    ``maps`` (in their order)."""
    worst: dict[tuple[str, str, str, str, str, str | None], dict[str, Any]] = {
        (r["task"], r["suite"], r["config"], r["method"], r["scenario"], None): r for r in data.worst_groups}
    worst |= {(r["task"], r["suite"], r["config"], r["method"], r["scenario"], r["cases_of"]): r
              for r in data.crossing_worst_groups}
    out: dict[tuple[str, str, str], dict[tuple[str, str], WorstGroup]] = {}
    for h in maps:
        numbers = {g.name: g.number for g in h.layout.groups}
        per_pair = {}
        for pair in h.rows:
            shown = h.shown_from.get(pair)
            r = worst.get((h.task, h.suite, *pair, shown or h.scenario, h.cases_of if shown else None))
            per_pair[pair] = WorstGroup(None, None) if r is None else \
                WorstGroup(r["pass_rate"], numbers.get(r["scoring_group"]))
        out[(h.task, h.suite, h.scenario)] = per_pair
    return out


def build(ctx: Context) -> list[Section]:
    worst = worst_groups_of(ctx.data, ctx.heatmaps)
    keys = list(worst)  # heatmap order: task, then scenario order
    several = len(ctx.table.tasks) > 1
    rows = []
    for p in ctx.table.rows:
        if not any(p in worst[k] for k in keys):
            continue
        cells = []
        for k in keys:
            w = worst[k].get(p)
            cells.append(Cell("—" if w is None or w.value is None else f"{pct(w.value)} (#{w.group})"))
        rows.append([Cell(p[0]), Cell(p[1]), *cells])
    if not rows:
        return []
    columns = [Column("configuration"), Column("method"), *[Column(f"{k[0]}: {k[2]}" if several else k[2])
                                                           for k in keys]]
    return [Section("worst_groups", TITLE, [NOTE], [Table(columns, rows, numeric_from=2)])]
