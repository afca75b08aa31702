"""The scoring groups sections: per suite a heatmap shows, its groups by number, with their parent group and test
type (the key of the heatmaps' and the worst-group table's numbers)."""

from __future__ import annotations

from beluga_core.analysis.report.section import Cell, Column, Section, Table
from beluga_core.analysis.report.sections.context import Context


def build(ctx: Context) -> list[Section]:
    out = []
    for layout in ctx.data.layouts.values():
        if not any(h.suite == layout.suite for h in ctx.heatmaps):
            continue
        level = layout.scoring_level or "scoring group"
        parent = [layout.parent_level] if layout.parent_level else []
        rows = [[Cell(str(g.number)), Cell(g.name), *([Cell(g.parent or "")] if parent else []), Cell(g.test_type)]
                for g in layout.groups]
        note = f"Scoring level: {level}" + (f"; grouped by {layout.parent_level}." if layout.parent_level else ".")
        out.append(Section("scoring_groups", f"Scoring groups of suite {layout.suite}", [note],
                           [Table([Column(h) for h in ["#", level, *parent, "test type"]], rows)]))
    return out
