"""The few-shot ranking section: per stored ranking (`beluga rank`), each signal's ranking accuracy, its accuracy
over seeds where the zoo is replicated, and the figure of pairwise accuracy against each pair's true gap
(``fewshot_tables`` shapes the values)."""

from __future__ import annotations

from beluga_core.analysis.report.fewshot_tables import FEWSHOT_NOTE, HEADER, SEEDS_HEADER, SEEDS_NOTE, build_fewshot
from beluga_core.analysis.report.section import Block, Cell, Column, Figure, Section, Table
from beluga_core.analysis.report.sections.context import Context


def build(ctx: Context) -> list[Section]:
    d = ctx.data
    tables = build_fewshot(d.fewshot, d.fewshot_pairs, ctx.figures_dir, d.grid_on_seen, d.fewshot_seeds)
    if not tables:
        return []
    blocks: list[Block] = []
    for ft in tables:
        blocks.append(Table([Column(h) for h in HEADER], [[Cell(c) for c in r] for r in ft.rows], 1, ft.title,
                            list(ft.notes)))
        if ft.seed_rows:
            blocks.append(Table([Column(h) for h in SEEDS_HEADER], [[Cell(c) for c in r] for r in ft.seed_rows], 1,
                                f"{ft.title}: over seeds", [SEEDS_NOTE]))
        if ft.png is not None and ft.svg is not None:
            blocks.append(Figure(ft.png, ft.svg, f"{ft.title}: accuracy per pair against its true gap",
                                 "Pairwise ranking accuracy against each pair's true gap"))
    return [Section("fewshot", "Few-shot ranking of models on unseen groups", [FEWSHOT_NOTE], blocks)]
