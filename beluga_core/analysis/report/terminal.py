"""The terminal table of ``beluga report``: the paper's Table 3 (``table3.build_table3``, the same table the
Markdown and HTML reports show), one table per task: i.i.d. score, G per scenario (and Avg.), then a compact
table of s_T per scenario; under them, a warning per degenerate configuration-method.

Made to be read in an 80-column terminal and in a CI log (where rich renders 80 columns, without colour):
cells never wrap. When a table is wider than the console its scenario headers are abbreviated (with a key
under the table), then its columns are set one space apart instead of two, and when that is not enough its
value columns go into several tables, each repeating the configuration (and method) columns. A value's
significance mark takes one character after it (blank when unmarked), so decimal points line up.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from beluga_core.analysis.ranking.over_seeds import NOTE as OVER_SEEDS_NOTE
from beluga_core.analysis.ranking.over_seeds import OverSeeds
from beluga_core.analysis.ranking.rank import REFERENCE, Ranking
from beluga_core.analysis.ranking.save import interval, percent, skip_lines
from beluga_core.analysis.report.cross_tables import (
    CrossCell,
    CrossTable,
    OnlyMatrix,
    basis,
    build_cross_tables,
    build_only_matrices,
)
from beluga_core.analysis.report.degeneracy import (
    DegeneracyRow,
    collapsed_summary,
    degeneracy_rows,
    format_distribution,
)
from beluga_core.analysis.report.report_data import read_report_data, run_lines, scope_lines
from beluga_core.analysis.report.table3 import (
    AVG,
    PARTIAL_NOTE,
    Cell,
    Pair,
    Table3,
    build_table3,
    crossing_notes,
    difference_rule,
    interval_notes,
    missing_pm_notes,
)
from beluga_core.core.constants import BASELINE, STANDARD, pair_order
from beluga_core.store.opened import StoreArg

MARKS = {"better": ("▲", "green"), "worse": ("▼", "red")}
PARTIAL = "†"
ABBREVIATE_TO = 6         # scenario headers longer than this are abbreviated when a table does not fit
_UNBOUNDED = 10_000       # a width to measure a table's natural width at


def print_g_table(store: StoreArg, console: Console, variant: str | None = None) -> None:
    """Print Table 3 of ``store`` (of one variant), its runs recorded as running (still going, or interrupted), its
    failed jobs and the degeneracy warnings (``beluga report`` and the end of a run)."""
    data = read_report_data(store, figures=False, variant=variant)
    table = build_table3(data)
    for line in [*run_lines(data), *scope_lines(data)]:
        console.print(line, highlight=False, markup=False, soft_wrap=True)
    if not table.rows:
        console.print(f"no finished models in {data.store} yet", highlight=False)
        return
    print_table3(table, console)
    print_cross_tables(build_cross_tables(data), console)
    print_only_matrices(build_only_matrices(data), console)
    print_degeneracy(degeneracy_rows(data), console)


# ------------------------------------------------------------------------------------------------ Table 3


@dataclass
class _ValueColumn:
    header: str                 # the full header
    short: str                  # the abbreviated header (the same where short enough)
    cells: list[Text]           # one per row


def _abbreviations(names: Sequence[str], width: int = ABBREVIATE_TO) -> dict[str, str]:
    """name → a header of at most ``width`` characters where possible ("functionality" → "funct."), distinct
    for distinct names; names that fit stay whole."""
    out = {n: n if len(n) <= width else n[:width - 1].rstrip("_-. ") + "." for n in names}
    for length in range(width, max(map(len, names), default=0) + 1):
        clashes = {v for v in out.values() if list(out.values()).count(v) > 1}
        if not clashes:
            break
        for n in names:
            if out[n] in clashes:
                out[n] = n if len(n) <= length else n[:length].rstrip("_-. ") + "."
    return out


def _value_text(value: float | None, cell: Cell | None = None) -> Text:
    """'63.6 ', '63.6±4.1▲' (green: ± half its 95 % interval), '63.6▼' (red), '—   ', and ' †' after a partial
    cell."""
    text = Text("—" if value is None else f"{100 * value:.1f}")
    if value is not None and cell is not None and cell.pm is not None:
        text.append(f"±{100 * cell.pm:.1f}", style="dim")
    symbol, style = MARKS.get(cell.mark or "", (" ", "")) if cell is not None else (" ", "")
    text.append(symbol)
    if style:
        text.stylize(style)
    if cell is not None and cell.partial:
        text.append(f" {PARTIAL}")
    return text


def _table(labels: list[tuple[str, list[str]]], columns: list[_ValueColumn], *, short: bool,
           gap: int = 2) -> Table:
    # SIMPLE_HEAD: a rule under the header, and a blank one character wide between columns; padding adds the
    # rest of the gap.
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, header_style="bold", expand=False,
                  padding=(0, gap - 1, 0, 0))
    for header, _ in labels:
        table.add_column(header, no_wrap=True, overflow="fold")
    for col in columns:
        table.add_column(col.short if short else col.header, justify="right", no_wrap=True)
    n_rows = len(labels[0][1]) if labels else 0
    for i in range(n_rows):
        table.add_row(*[values[i] for _, values in labels], *[col.cells[i] for col in columns])
    return table


def _width(console: Console, table: Table) -> int:
    return console.measure(table, options=console.options.update_width(_UNBOUNDED)).maximum


def _fit(console: Console, labels: Callable[[bool], list[tuple[str, list[str]]]], columns: list[_ValueColumn],
         *, short_only: bool = False) -> tuple[list[Table], bool]:
    """The tables that show ``columns`` within the console's width, and whether headers are abbreviated:
    one table with full headers (unless ``short_only``), else with abbreviated headers, else with those and
    columns one space apart, else the value columns split over several tables (as many columns each as fit,
    two spaces apart), each repeating the label columns. Cells never wrap; only where a single column is
    wider than the console does a label fold."""
    tiers = [(False, 2), (True, 2), (True, 1)]
    for short, gap in tiers[1:] if short_only else tiers:
        table = _table(labels(short), columns, short=short, gap=gap)
        if _width(console, table) <= console.width:
            return [table], short
    chunks: list[list[_ValueColumn]] = [[]]
    for col in columns:
        trial = chunks[-1] + [col]
        if chunks[-1] and _width(console, _table(labels(True), trial, short=True)) > console.width:
            chunks.append([col])
        else:
            chunks[-1] = trial
    return [_table(labels(True), chunk, short=True) for chunk in chunks], True


def _print_tables(console: Console, title: str, labels: Callable[[bool], list[tuple[str, list[str]]]],
                  columns: list[_ValueColumn], *, short_only: bool = False) -> bool:
    """Print ``title`` and the fitted tables; returns whether headers were abbreviated."""
    tables, short = _fit(console, labels, columns, short_only=short_only)
    for i, table in enumerate(tables):
        part = f" ({i + 1}/{len(tables)})" if len(tables) > 1 else ""
        console.print(Text(title + part, style="bold"))
        console.print(table)
    return short


def _labels(rows: list[Pair], show_method: bool) -> Callable[[bool], list[tuple[str, list[str]]]]:
    """The label columns of ``rows``: configuration (and method), headed in full or short."""
    def labels(short: bool) -> list[tuple[str, list[str]]]:
        out = [("config" if short else "configuration", [c for c, _ in rows])]
        if show_method:
            out.append(("method", [m for _, m in rows]))
        return out
    return labels


def print_table3(table: Table3, console: Console) -> None:
    """Per task: i.i.d. score and G per scenario (with Avg. when the store has one task), then s_T per
    scenario; with several tasks, the Avg. column as a table of its own; then the keys of what is shown."""
    several = len(table.tasks) > 1
    avg = table.avg_column
    abbreviated: dict[str, str] = {}
    for task in table.tasks:
        columns = table.task_columns(task)
        rows = [p for p in table.rows if any((p, c) in table.cells for c in columns)]
        methods = sorted({m for _, m in rows})
        labels = _labels(rows, show_method=len(methods) > 1)
        g_columns = [c for c in columns if c.is_g]
        short_names = _abbreviations([c.name for c in g_columns])
        shown = columns + ([avg] if avg is not None and not several else [])
        g_table = [_ValueColumn(c.name, short_names.get(c.name, c.name),
                                [_value_text(table.cell(p, c).value, table.cell(p, c)) for p in rows])
                   for c in shown]
        s_table = [_ValueColumn(c.name, short_names[c.name],
                                [_value_text(table.cell(p, c).s_suite, Cell(None, pm=table.cell(p, c).s_pm))
                                 for p in rows]) for c in g_columns]
        method_note = f"; method {methods[0]}" if len(methods) == 1 else ""
        short = _print_tables(console, f"{task}: i.i.d. score, then G per scenario (%){method_note}", labels,
                              g_table)
        # The same headers as the G table's, so the two read alike.
        short = _print_tables(console, f"{task}: s_T per scenario (%)", labels, s_table, short_only=short) or short
        if short:
            abbreviated.update({a: full for full, a in short_names.items() if a != full})

    if several and avg is not None:
        rows = [p for p in table.rows if (p, avg) in table.cells]
        _print_tables(console, "G averaged over tasks and scenarios (%)",
                      _labels(rows, show_method=len({m for _, m in rows}) > 1),
                      [_ValueColumn(AVG, AVG, [_value_text(table.cell(p, avg).value, table.cell(p, avg))
                                               for p in rows])])
    _print_keys(table, console, abbreviated)


def _print_keys(table: Table3, console: Console, abbreviated: dict[str, str]) -> None:
    notes = []
    if abbreviated:
        notes.append("Scenarios: " + ", ".join(f"{s} = {full}" for s, full in sorted(abbreviated.items())) + ".")
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
    for note in notes:
        console.print(note, style="dim", highlight=False)


def print_value_table(console: Console, title: str, labels: list[tuple[str, list[str]]],
                      values: list[tuple[str, list[str]]], *, abbreviate: bool = True) -> None:
    """A titled table of label columns and right-aligned value columns that fits the console (abbreviated,
    tightened or split as Table 3 is); for the other commands' tables (``beluga regress``, ``beluga rank``).
    Without ``abbreviate`` headers stay whole, for tables with no key under them: the columns are only
    tightened, then split."""
    names = [h for h, _ in values]
    short = _abbreviations(names) if abbreviate else {h: h for h in names}
    columns = [_ValueColumn(h, short[h], [Text(v) for v in cells]) for h, cells in values]
    _print_tables(console, title, lambda _short: labels, columns)


def print_ranking(ranking: Ranking, console: Console, *, title: str, skipped: dict[str, str]) -> None:
    """``beluga rank``'s table (one row per signal, 95 % intervals in brackets), fitted to the console as
    ``print_value_table`` fits any table, then what was skipped and why."""
    rows = list(ranking.summaries.items())
    values = [
        ("dir", [f"{ranking.specs[name].direction:+d}" for name, _ in rows]),
        ("accuracy %", [f"{percent(s.accuracy)} {interval(*s.ci)}" for _, s in rows]),
        ("pairs used / excl.", [f"{s.pairs_used} / {s.pairs_excluded}" for _, s in rows]),
        ("ties %", [percent(s.tie_rate) for _, s in rows]),
        ("τ-b", ["–" if math.isnan(s.tau_b) else f"{s.tau_b:.2f}" for _, s in rows]),
        ("top-1 %", [f"{percent(s.top1)} {interval(*s.top1_ci)}" for _, s in rows]),
        (f"Δ vs {REFERENCE}", ["" if math.isnan(s.diff) else f"{100 * s.diff:+.1f} {interval(*s.diff_ci)}"
                               for _, s in rows]),
        ("p (≤0)", ["" if math.isnan(s.p_one_sided) else f"{s.p_one_sided:.3f}" for _, s in rows]),
        ("near / far %", [f"{percent(s.near)} / {percent(s.far)}" for _, s in rows]),
    ]
    print_value_table(console, title, [("signal", [name for name, _ in rows])], values, abbreviate=False)
    console.print("[lo, hi]: 95 % intervals (two-stage bootstrap: groups, then probes).", style="dim", highlight=False,
                  markup=False)
    groups = ranking.groups
    sizes = [len(g.candidates) for g in groups]
    console.print(f"{len(groups)} group(s) of level '{ranking.level}', {min(sizes, default=0)}–{max(sizes, default=0)} "
                  f"candidate models each; probes: B = {ranking.bootstrap} of n = {ranking.n} cases (seed "
                  f"{ranking.seed}), the same for every signal; ties count {ranking.ties}.", highlight=False)
    for line in skip_lines(ranking, skipped):
        console.print(f"[yellow]skipped[/] {escape(line)}", highlight=False)
    for note in ranking.notes:
        console.print(f"[yellow]note[/]: {escape(note)}", highlight=False)


def print_over_seeds(over: dict[tuple[str, str], OverSeeds], console: Console, *, order: Sequence[str] = ()) -> None:
    """``beluga rank``'s ranking accuracy over seeds (a replicated zoo), one row per signal in ``order``'s order."""
    if not over:
        return
    rank = {name: i for i, name in enumerate(order)}
    rows = sorted(over.values(), key=lambda o: (rank.get(o.signal, len(rank)), o.signal))
    n = sorted({o.n_seeds for o in rows})
    values = [("accuracy % [95 % t]", [o.text() for o in rows]),
              ("seeds", [str(o.n_seeds) for o in rows]),
              ("per seed %", [o.per_seed_text() for o in rows])]
    print_value_table(console, f"Ranking accuracy over {'–'.join(map(str, (n[0], n[-1]) if len(n) > 1 else n))} "
                               "seeds", [("signal", [o.signal for o in rows])], values, abbreviate=False)
    console.print(OVER_SEEDS_NOTE, style="dim", highlight=False, markup=False)


# ------------------------------------------------------------------------------------------------ cross-suite


def print_cross_tables(tables: list[CrossTable], console: Console) -> None:
    """Per eval suite: G and s on it per scenario column (held-out columns on the eval cases mapped to the
    held-out groups; the IID baseline on the same cases as each column)."""
    for t in tables:
        methods = sorted({m for _, m in t.rows})
        labels = _labels(t.rows, show_method=len(methods) > 1)
        short = _abbreviations(t.columns)
        g_cols = [_ValueColumn(c, short[c], [_value_text(t.cell(p, c).g, _mark(t.cell(p, c))) for p in t.rows])
                  for c in t.columns]
        s_cols = [_ValueColumn(c, short[c], [_value_text(t.cell(p, c).s) for p in t.rows]) for c in t.columns]
        abbreviated = _print_tables(console, f"{t.title}: G per scenario (%)", labels, g_cols)
        abbreviated = _print_tables(console, f"{t.title}: s on the eval suite (%)", labels, s_cols,
                                    short_only=abbreviated) or abbreviated
        held = [c for c in t.columns if basis(c) is not None]
        notes = []
        if held:
            notes.append(f"{', '.join(held)}: on the eval cases mapped to the held-out groups; the IID baseline's "
                         "row shows its standard scenario on the same cases.")
        if abbreviated:
            notes.append("Scenarios: " + ", ".join(f"{a} = {c}" for c, a in short.items() if a != c) + ".")
        for note in notes:
            console.print(note, style="dim", highlight=False)


def _mark(cell: CrossCell) -> Cell:
    return Cell(cell.g, cell.mark, pm=cell.pm)


def print_only_matrices(matrices: list[OnlyMatrix], console: Console) -> None:
    """Each only:LEVEL scenario's train-group × eval-group pass rates, groups numbered (key under the table)."""
    for m in matrices:
        numbers = {g: str(i + 1) for i, g in enumerate(m.groups)}
        cols = [_ValueColumn(numbers[g], numbers[g], [_value_text(None if np.isnan(v) else float(v))
                                                     for v in m.values[:, j]]) for j, g in enumerate(m.groups)]

        def labels(short: bool, m: OnlyMatrix = m, numbers: dict[str, str] = numbers) -> list[tuple[str, list[str]]]:
            return [("trained on", [f"{numbers.get(g, '?')} {g}" for g in m.trained])]

        _print_tables(console, f"{m.title}: pass rate (%) on each {m.level}", labels, cols)
        console.print(f"{m.level} groups: " + "; ".join(f"{numbers[g]} = {g}" for g in m.groups), style="dim",
                      highlight=False)


# ------------------------------------------------------------------------------------------------ degeneracy


def print_degeneracy(rows: list[DegeneracyRow], console: Console) -> None:
    """One warning line per configuration-method whose predictions collapsed (docs/method.md, "Scores"; the
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
    for key in flagged:
        parts = d_test[key] + ([f"MFT cases ({', '.join(mft[key])})"] if mft[key] else [])
        console.print(Text.assemble(("degenerate", "yellow"), f" {key[0]} {key[1]}/{key[2]}: one label dominates "
                                                              f"on {'; '.join(parts)}"))
    if flagged:
        console.print("(predicted-label shares; the Markdown/HTML report's degeneracy check has the details)",
                      style="dim", highlight=False)

