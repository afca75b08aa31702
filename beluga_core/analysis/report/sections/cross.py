"""The cross-suite sections: each model on an eval suite (G and s per scenario column, and the figure of pass rates
per eval group), the alignment of eval groups with the training groups they map to, and the only:LEVEL matrices
(``cross_tables`` and ``alignment`` shape the values)."""

from __future__ import annotations

import numpy as np

from beluga_core.analysis.report.alignment import ALIGNMENT_NOTE, SIDES, build_alignment, interval_text
from beluga_core.analysis.report.cross_tables import (
    CrossTable,
    OnlyMatrix,
    basis,
    build_cross_tables,
    build_only_matrices,
)
from beluga_core.analysis.report.heatmap_figures import MatrixFigure, slug, write_matrices
from beluga_core.analysis.report.section import (
    Block,
    Cell,
    Column,
    Figure,
    KeyNote,
    Paragraph,
    Section,
    Table,
    pct,
)
from beluga_core.analysis.report.sections.context import Context
from beluga_core.analysis.report.sections.g_table import LABELS, labels

CROSS_NOTE = ("Every model of the run is also evaluated on the eval suite: the IID (standard) and seen models on every "
              "eval case, each held-out fold on the eval cases mapped to its held-out group (the suite header's or "
              "the config's maps_to). So a held-out column (mapped) covers the mapped cases only, and the IID "
              "baseline's row shows its standard scenario on the same cases: the reference of that column's "
              "significance test (paired randomization on G, ▲ / ▼ at p < 0.05). s is the unweighted mean of the "
              "eval suite's group pass rates; G combines it with the configuration-method's s_iid.")
ONLY_NOTE = ("One model per group g of the level, trained on g's T_train cases alone (plus its configuration's i.i.d. "
             "data) and evaluated on all of T_test: rows are the group trained on, columns the group evaluated "
             "(the mean of its scoring groups' pass rates). The diagonal is each model on its own group; off the "
             "diagonal, what training on one group buys on the others.")


def cross_figure(t: CrossTable) -> MatrixFigure:
    """Pass rates per eval group (columns) for each configuration-method and scenario column (rows); the IID
    baseline once per basis (all eval cases, or those mapped at a held-out column's level)."""
    rows, values = [], []
    shown: set[tuple[tuple[str, str], str | None]] = set()
    for pair in t.rows:
        for col in t.columns:
            groups = t.groups.get((pair, col))
            cell = t.cell(pair, col)
            if not groups:
                continue
            if cell.shown_from is not None:   # the baseline: its standard scenario on this column's cases
                if (pair, basis(col)) in shown:
                    continue
                shown.add((pair, basis(col)))
                label = f"{pair[0]}/{pair[1]} · {cell.shown_from}" + (f" (mapped at {basis(col)})" if basis(col)
                                                                      else "")
            else:
                label = f"{pair[0]}/{pair[1]} · {col}" + (" (mapped)" if basis(col) else "")
            rows.append(label)
            values.append([np.nan if groups.get(g, (None, None))[0] is None else groups[g][0]
                           for g in t.eval_groups])
    return MatrixFigure(slug("cross", t.task, t.suite, t.eval_suite), f"{t.title}: pass rate per eval group (%)",
                        rows, t.eval_groups, np.array(values, dtype=float).reshape(len(rows), len(t.eval_groups)),
                        f"eval-suite group ({t.eval_suite})", "configuration/method · scenario")


def only_figure(m: OnlyMatrix) -> MatrixFigure:
    return MatrixFigure(slug("only", m.task, m.suite, m.config, m.method, m.level), f"{m.title}: pass rate (%)",
                        m.trained, m.groups, m.values, f"{m.level} evaluated (T_test)", f"trained on this {m.level}",
                        outline_diagonal=True)


def _figures(ctx: Context, matrices: list[MatrixFigure]) -> list[MatrixFigure | None]:
    """The figures drawn (each with its files), or None per matrix where figures are not drawn."""
    if ctx.figures_dir is None:
        return [None] * len(matrices)
    return list(write_matrices(matrices, ctx.figures_dir))


def build_cross(ctx: Context) -> list[Section]:
    tables = build_cross_tables(ctx.data)
    if not tables:
        return []
    blocks: list[Block] = []
    for t, fig in zip(tables, _figures(ctx, [cross_figure(t) for t in tables]), strict=True):
        rows = [[Cell(p[0]), Cell(p[1]), *[Cell(pct(t.cell(p, c).g), mark=t.cell(p, c).mark,
                                                after=f" ({pct(t.cell(p, c).s)})") for c in t.columns]]
                for p in t.rows]
        columns = [*LABELS, *[Column(f"{c} (mapped)" if basis(c) else c) for c in t.columns]]
        blocks.append(Table(columns, rows, 2, t.title, ["G on the eval suite (s on the eval suite), %."]))
        if fig is not None and fig.png is not None and fig.svg is not None:
            caption = f"{t.title}: pass rate per eval group"
            blocks.append(Figure(fig.png, fig.svg, caption, caption))
    return [Section("cross", "Cross-suite evaluation", [CROSS_NOTE], blocks,
                    brief=[b for t in tables for b in cross_brief(t)])]


def cross_brief(t: CrossTable) -> list[Block]:
    """G and s on the eval suite per scenario column (held-out columns on the eval cases mapped to the held-out
    groups; the IID baseline on the same cases as each column)."""
    heads, label_cells = labels(t.rows)

    def value(v: float | None, mark: str | None = None, pm: float | None = None) -> Cell:
        return Cell(pct(v), pct(pm) if v is not None and pm is not None else None, mark, slot=True)

    g_rows = [[*lab, *[value(t.cell(p, c).g, t.cell(p, c).mark, t.cell(p, c).pm) for c in t.columns]]
              for p, lab in zip(t.rows, label_cells, strict=True)]
    s_rows = [[*lab, *[value(t.cell(p, c).s) for c in t.columns]] for p, lab in zip(t.rows, label_cells, strict=True)]
    value_heads = [Column(c) for c in t.columns]
    out: list[Block] = [Table(heads + value_heads, g_rows, len(heads), f"{t.title}: G per scenario (%)"),
                        Table(heads + value_heads, s_rows, len(heads), f"{t.title}: s on the eval suite (%)",
                              same_headers=True)]
    held = [c for c in t.columns if basis(c) is not None]
    if held:
        out.append(Paragraph([f"{', '.join(held)}: on the eval cases mapped to the held-out groups; the IID "
                              "baseline's row shows its standard scenario on the same cases."]))
    out.append(KeyNote("Scenarios"))
    return out


def build_alignment_section(ctx: Context) -> list[Section]:
    tables = build_alignment(ctx.data.alignment_units)
    if not tables:
        return []
    blocks: list[Block] = []
    for a in tables:
        columns = [Column("eval group"), Column(f"maps to ({a.level})")]
        for config, method, scenario in a.models:
            columns += [Column(f"{config}/{method} · {scenario}: templates"), Column("eval")]
        rows = [[Cell(row[0], group=(a.eval_suite, row[0])), Cell(row[1], group=(a.suite, row[1])),
                 *[Cell(interval_text(a.cell(row, model, side))) for model in a.models for side in SIDES]]
                for row in a.rows]
        blocks.append(Table(columns, rows, 2, a.title, ["Pass rate, % [95 % interval]."]))
    return [Section("alignment", "Capabilities across suites: templates beside the eval suite", [ALIGNMENT_NOTE],
                    blocks)]


def build_only(ctx: Context) -> list[Section]:
    matrices = build_only_matrices(ctx.data)
    if not matrices:
        return []
    blocks: list[Block] = []
    for m, fig in zip(matrices, _figures(ctx, [only_figure(m) for m in matrices]), strict=True):
        rows = [[Cell(name), *[Cell(pct(float(v))) for v in m.values[i]]] for i, name in enumerate(m.trained)]
        blocks.append(Table([Column(f"trained on ({m.level})"), *[Column(g) for g in m.groups]], rows, 1, m.title))
        if fig is not None and fig.png is not None and fig.svg is not None:
            blocks.append(Figure(fig.png, fig.svg, m.title, m.title))
    return [Section("only", "Trained on one group alone (only:LEVEL)", [ONLY_NOTE], blocks,
                    brief=[b for m in matrices for b in only_brief(m)])]


def only_brief(m: OnlyMatrix) -> list[Block]:
    """The train-group × eval-group pass rates, groups numbered (their key under the table)."""
    numbers = {g: str(i + 1) for i, g in enumerate(m.groups)}
    rows = [[Cell(f"{numbers.get(t, '?')} {t}"),
             *[Cell(pct(None if np.isnan(v) else float(v)), slot=True) for v in m.values[i]]]
            for i, t in enumerate(m.trained)]
    return [Table([Column("trained on", "trained on"), *[Column(numbers[g], numbers[g]) for g in m.groups]], rows, 1,
                  f"{m.title}: pass rate (%) on each {m.level}"),
            Paragraph([f"{m.level} groups: " + "; ".join(f"{numbers[g]} = {g}" for g in m.groups)])]
