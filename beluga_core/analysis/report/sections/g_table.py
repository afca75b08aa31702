"""The G table section (the paper's Table 3): i.i.d. score and G per scenario for every configuration-method,
with its legend and notes; in the terminal, per task a G table and an s_T table, then the Avg. column and the keys
of what is shown (``g_table.build_g_table`` builds the table itself, for every format alike)."""

from __future__ import annotations

from beluga_core.analysis.report.g_table_data import (
    AVG,
    PARTIAL_NOTE,
    Cell,
    GTable,
    Pair,
    crossing_notes,
    difference_rule,
    interval_notes,
    missing_pm_notes,
)
from beluga_core.analysis.report.section import (
    PARTIAL,
    Block,
    Column,
    KeyNote,
    Paragraph,
    Section,
    Table,
    pct,
)
from beluga_core.analysis.report.section import Cell as Shown
from beluga_core.analysis.report.sections.context import Context
from beluga_core.core.constants import BASELINE, STANDARD, pair_order

TITLE = "i.i.d. score and G per scenario (%) — Table 3"
SIGNIFICANCE_LEGEND = ("▲ / ▼: significantly better / worse than the IID baseline (first row; its suite "
                       "columns are G_standard), p < 0.05: two-tailed binomial sign test for i.i.d., paired "
                       "approximate randomization for G (`beluga analyze STORE` lists every test). **Bold**: best in "
                       "the column.")
AVG_NOTE = "Avg.: mean G over all tasks and generalization scenarios."
TIPS = {"better": "significantly better than the IID baseline (p < 0.05)",
        "worse": "significantly worse than the IID baseline (p < 0.05)"}
LABELS = [Column("configuration", "config"), Column("method", "method")]


def seed_legend(t: GTable) -> str:
    return ("▲ / ▼: better / worse than the IID baseline (first row; its suite columns are G_standard): with two or "
            f"more seeds, {difference_rule(t)} (`beluga analyze STORE` lists every difference). **Bold**: best in "
            "the column.")


def legend(t: GTable) -> str:
    return seed_legend(t) if t.n_seeds >= 2 else SIGNIFICANCE_LEGEND


def _cell(cell: Cell) -> Shown:
    has = cell.value is not None
    return Shown(pct(cell.value), pct(cell.pm) if cell.pm is not None and has else None, cell.mark,
                 cell.bold and has, cell.partial, tip=TIPS.get(cell.mark or "", ""), shown_from=cell.shown_from)


def build(ctx: Context) -> list[Section]:
    t = ctx.table
    columns = [Column(c.label, group=c.task, key={"task": c.task, "scenario": c.scenario, "label": c.label,
                                                   "g": c.is_g}) for c in t.columns]
    rows = [[Shown(p[0]), Shown(p[1]), *[_cell(t.cell(p, c)) for c in t.columns]] for p in t.rows]
    table = Table(LABELS + columns, rows, numeric_from=2, baseline_first=bool(t.rows) and t.rows[0] == BASELINE,
                  empty="No finished models yet.")
    notes = [legend(t), *interval_notes(t), *missing_pm_notes(t), *crossing_notes(t), AVG_NOTE]
    return [Section("g_table", TITLE, notes, [table], brief=brief(t) if t.rows else [], data={"avg": AVG})]


# -- the terminal's form -----------------------------------------------------------------------------------------

def _value(value: float | None, cell: Cell | None = None) -> Shown:
    """'63.6' with '±4.1' (half its 95 % interval), its mark and † after a partial cell."""
    pm = pct(cell.pm) if value is not None and cell is not None and cell.pm is not None else None
    return Shown(pct(value), pm, cell.mark if cell is not None else None,
                 partial=cell is not None and cell.partial, slot=True)


def labels(rows: list[Pair]) -> tuple[list[Column], list[list[Shown]]]:
    """The label columns of ``rows``: configuration, and method where they have several."""
    several = len({m for _, m in rows}) > 1
    return LABELS[:2 if several else 1], [[Shown(c), Shown(m)][:2 if several else 1] for c, m in rows]


def brief(table: GTable) -> list[Block]:
    """Per task: i.i.d. score and G per scenario (with Avg. when the store has one task), then s_T per scenario;
    with several tasks, the Avg. column as a table of its own; then the keys of what is shown."""
    several = len(table.tasks) > 1
    avg = table.avg_column
    out: list[Block] = []
    for task in table.tasks:
        columns = table.task_columns(task)
        rows = [p for p in table.rows if any((p, c) in table.cells for c in columns)]
        methods = sorted({m for _, m in rows})
        heads, label_cells = labels(rows)
        shown = columns + ([avg] if avg is not None and not several else [])
        g_heads = [Column(c.name, None if c.is_g else c.name) for c in shown]
        g_rows = [[*lab, *[_value(table.cell(p, c).value, table.cell(p, c)) for c in shown]]
                  for p, lab in zip(rows, label_cells, strict=True)]
        s_rows = [[*lab, *[_value(table.cell(p, c).s_suite, Cell(None, pm=table.cell(p, c).s_pm)) for c in columns
                           if c.is_g]] for p, lab in zip(rows, label_cells, strict=True)]
        method_note = f"; method {methods[0]}" if len(methods) == 1 else ""
        title = f"{task}: i.i.d. score, then G per scenario (%){method_note}"
        out += [Table(heads + g_heads, g_rows, len(heads), title),
                Table(heads + [Column(c.name) for c in columns if c.is_g], s_rows, len(heads),
                      f"{task}: s_T per scenario (%)", same_headers=True)]
    if several and avg is not None:
        rows = [p for p in table.rows if (p, avg) in table.cells]
        heads, label_cells = labels(rows)
        out.append(Table([*heads, Column(AVG, AVG)], [[*lab, _value(table.cell(p, avg).value, table.cell(p, avg))]
                                                      for p, lab in zip(rows, label_cells, strict=True)],
                         len(heads), "G averaged over tasks and scenarios (%)"))
    out.append(KeyNote("Scenarios", sort=True))
    out.append(Paragraph(keys(table)))
    return out


def keys(table: GTable) -> list[str]:
    notes = []
    standard_only = pair_order({p for (p, _), c in table.cells.items() if c.shown_from == STANDARD})
    if standard_only == [BASELINE]:
        notes.append(f"{BASELINE[0]}: the IID baseline; every scenario column shows its standard scenario.")
    elif standard_only:
        notes.append(", ".join(f"{c}/{m}" for c, m in standard_only) + ": evaluated in the standard scenario "
                     "only, shown in every scenario column.")
    cells = table.cells.values()
    notes += crossing_notes(table)
    notes += interval_notes(table) + missing_pm_notes(table)
    if any(c.mark for c in cells):
        notes.append("▲ / ▼: better / worse than the IID baseline: " + (
            f"{difference_rule(table)}." if table.n_seeds >= 2 else "randomization test, p < 0.05."))
    if any(c.partial for c in cells):
        notes.append(f"{PARTIAL} {PARTIAL_NOTE}")
    return notes
