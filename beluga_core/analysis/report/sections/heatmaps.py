"""The heatmaps section (the paper's Figure 1): a figure per task × scenario of scoring-group pass rates
(``heatmap_figures`` draws them), each column named on hover where a format can; the result site draws its own from the
same ``Heatmap`` values."""

from __future__ import annotations

from beluga_core.analysis.report.heatmap_figures import FigureFiles, column_key
from beluga_core.analysis.report.section import Figure, Section
from beluga_core.analysis.report.sections.context import Context

TITLE = "Pass rate per scoring group — Figure 1"


def regions(f: FigureFiles) -> list[str]:
    """A title per column of the heatmap (numbers and strip included): the column's group."""
    h = f.heatmap
    level = h.layout.scoring_level or "scoring group"
    titles = ["avg: s_T, the mean pass rate over the scoring groups"]
    for (label, name), g in zip(column_key(h), h.layout.groups, strict=True):
        about = ", ".join([g.test_type, *([f"{h.layout.parent_level} {g.parent}"] if g.parent else []),
                           *(["excluded from s_T and G"] if g.name in h.excluded else [])])
        titles.append(f"{label}: {level} {name} ({about})")
    return titles


def build(ctx: Context) -> list[Section]:
    maps = ctx.heatmaps
    if not maps:
        return []
    figures: list[Figure] = []
    for f in ctx.heatmap_files:
        h = f.heatmap
        figures.append(Figure(f.png, f.svg, f"{h.task}, scenario {h.scenario}: pass rates per scoring group", "",
                              f"{h.task} — scenario {h.scenario}", regions(f) if f.columns is not None else [],
                              f.columns, "a column names its group on hover"))
    return [Section("heatmaps", TITLE, blocks=list(figures), data={"heatmaps": maps})]
