"""The regression section: negative and positive flip rates per configuration-method-scenario against each
model's old model, and NFR per scoring group as figures (``report.regression`` shapes the values)."""

from __future__ import annotations

from beluga_core.analysis.report.flip_rates import REGRESSION_NOTE, VOTE_NOTE, build_regression
from beluga_core.analysis.report.heatmap_figures import write_matrices
from beluga_core.analysis.report.section import Block, Cell, Column, Figure, Paragraph, Section, Table, pct
from beluga_core.analysis.report.sections.context import Context

Rates = tuple[float | None, float | None, dict[str, tuple[float, float]]]
HEADER = ["configuration", "method", "scenario", "D_test NFR", "D_test PFR", "suite NFR", "suite PFR"]


def rate(v: Rates | None, which: str) -> str:
    if v is None:
        return "—"
    value = v[0] if which == "nfr" else v[1]
    lo, hi = v[2][which]
    return f"{pct(value)} [{pct(lo)}, {pct(hi)}]"


def build(ctx: Context) -> list[Section]:
    lines, figures = build_regression(ctx.data)
    if not lines:
        return []
    rows = [[Cell(r.config), Cell(r.method + (" †" if r.vote_share else "")), Cell(r.scenario),
             *[Cell(rate(r.values.get(source), which)) for source in ("iid", "suite") for which in ("nfr", "pfr")]]
            for r in lines]
    blocks: list[Block] = [Table([Column(h) for h in HEADER], rows, numeric_from=3)]
    if any(r.vote_share for r in lines):
        blocks.append(Paragraph([VOTE_NOTE]))
    if ctx.figures_dir is not None:
        blocks += [Figure(f.png, f.svg, f.title, f.title) for f in write_matrices(figures, ctx.figures_dir)
                   if f.png is not None and f.svg is not None]
    return [Section("regression", "Regression: negative flips", [REGRESSION_NOTE], blocks)]
