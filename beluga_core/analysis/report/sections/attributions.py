"""The attributions section: per failing scoring group, the words its failing cases' attributions weigh most and
least (``attribution_tables`` shapes the values)."""

from __future__ import annotations

from beluga_core.analysis.report.attribution_tables import ATTRIBUTION_NOTE, failing_groups, word_list
from beluga_core.analysis.report.section import Cell, Column, Section, Table
from beluga_core.analysis.report.sections.context import Context

HEADER = ["configuration", "method", "scenario", "group", "attribution", "failing cases", "most attributed",
          "least attributed"]


def build(ctx: Context) -> list[Section]:
    groups = failing_groups(ctx.data.failing_words)
    if not groups:
        return []
    rows = [[Cell(g.config), Cell(g.method), Cell(g.scenario), Cell(g.group), Cell(g.attribution), Cell(str(g.n_cases)),
             Cell(word_list(g.most)), Cell(word_list(g.least))] for g in groups]
    return [Section("attributions", "Attributions of failing groups", [ATTRIBUTION_NOTE],
                    [Table([Column(h) for h in HEADER], rows)])]
