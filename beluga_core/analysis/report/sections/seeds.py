"""The seeds section: per task, G of every configuration-method in every scenario column, one dot per seed, with
the mean over seeds and its interval (``report.seeds`` draws the figures)."""

from __future__ import annotations

from beluga_core.analysis.report.g_table_data import interval_notes
from beluga_core.analysis.report.section import Figure, Section
from beluga_core.analysis.report.sections.context import Context
from beluga_core.analysis.report.seed_figures import write_seed_figures


def build(ctx: Context) -> list[Section]:
    if ctx.figures_dir is None:
        return []
    figures = [Figure(f.png, f.svg, f.title, f.title) for f in write_seed_figures(ctx.data, ctx.figures_dir)
               if f.png is not None and f.svg is not None]
    if not figures:
        return []
    return [Section("seeds", "Seeds", interval_notes(ctx.table), list(figures))]
