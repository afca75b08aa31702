"""The degeneracy check: predicted-label distributions on D_test and on MFT cases against gold, flagged where they
collapsed (``report.degeneracy`` groups the view's rows); in the terminal, a warning per degenerate
configuration-method."""

from __future__ import annotations

from collections import defaultdict

from beluga_core.analysis.report.degeneracy_rows import (
    DegeneracyRow,
    collapsed_summary,
    degeneracy_rows,
    format_distribution,
)
from beluga_core.analysis.report.section import Block, Cell, Column, Paragraph, Section, Table
from beluga_core.analysis.report.sections.context import Context

HEADER = ["task", "configuration", "method", "scenario", "D_test predicted (gold)", "MFT cases predicted (gold)",
          "flag"]


def degeneracy_rule(rows: list[DegeneracyRow]) -> str:
    mft_gold = any(r.mft is not None and r.mft.has_gold for r in rows)
    gold = "Gold labels are the store's (each case's expected label, recorded by the run)." if mft_gold else \
        "The store holds no gold label for these MFT cases: MFT shows predictions only."
    return ("Predicted-label distribution on D_test (the models whose s_iid G uses) and on the MFT cases of T_test, "
            "against gold, summed over replicates. *Collapsed* (the store's `degeneracy` "
            "view): at "
            "least 20 predictions, the most frequent label ≥ 90 % of them and ≥ 20 points above its gold share (just "
            f"the share where gold is unknown), in some replicate. {gold} \"+\" after a gold share: \"not X\" gold "
            "cases may also have that label.")


def build(ctx: Context) -> list[Section]:
    rows = degeneracy_rows(ctx.data)
    cells = [[Cell(r.task), Cell(r.config), Cell(r.method), Cell(r.scenario), Cell(format_distribution(r.iid)),
              Cell(format_distribution(r.mft)), Cell("collapsed: " + ", ".join(r.flags), flag=True) if r.flags
              else Cell("")] for r in rows]
    return [Section("degeneracy", "Degeneracy check", [degeneracy_rule(rows)],
                    [Table([Column(h) for h in HEADER], cells)], brief=brief(rows))]


def brief(rows: list[DegeneracyRow]) -> list[Block]:
    """One warning per configuration-method whose predictions collapsed (docs/method.md, "Scores"; the
    ``degeneracy`` view): its G scores measure a constant predictor, which passes many INV and DIR tests
    trivially."""
    d_test: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    mft: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    for row in rows:
        key = (row.task, row.config, row.method)
        if "D_test" in row.flags:
            d_test[key].append(f"D_test {format_distribution(row.iid)}")
        if "MFT" in row.flags and row.mft is not None:
            mft[key].append(f"{row.scenario} {collapsed_summary(row.mft)}")
    flagged = sorted(set(d_test) | set(mft))
    if not flagged:
        return []
    lines = []
    for key in flagged:
        parts = d_test[key] + ([f"MFT cases ({', '.join(mft[key])})"] if mft[key] else [])
        lines.append(f" {key[0]} {key[1]}/{key[2]}: one label dominates on {'; '.join(parts)}")
    return [Paragraph(lines, kind="warning", lead="degenerate"),
            Paragraph(["(predicted-label shares; the Markdown/HTML report's degeneracy check has the details)"])]
