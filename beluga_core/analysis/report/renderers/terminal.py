"""The terminal table of ``beluga report`` (and the end of a run): the sections that have a terminal form
(``Section.brief``: the G table per task, cross-suite tables, only:LEVEL matrices, degeneracy warnings), laid out
by ``terminal_tables`` to fit the console. A value's mark takes one character after it (blank when unmarked), so
decimal points line up."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from beluga_core.analysis.report.renderers.terminal_tables import ValueColumn, abbreviations, fit
from beluga_core.analysis.report.report_data import read_report_data
from beluga_core.analysis.report.section import PARTIAL, Cell, KeyNote, Paragraph, Section, Table
from beluga_core.analysis.report.sections import build_report
from beluga_core.store.opened import StoreArg

MARKS = {"better": ("▲", "green"), "worse": ("▼", "red")}


def print_g_table(store: StoreArg, console: Console, variant: str | None = None) -> None:
    """Print the terminal form of ``store``'s report (of one variant): its runs recorded as running (still going, or
    interrupted), its scope and failed jobs, the G table, cross-suite tables and degeneracy warnings."""
    report = build_report(read_report_data(store, figures=False, variant=variant), terminal=True)
    render_terminal(report.sections, console)


def render_terminal(sections: list[Section], console: Console) -> None:
    abbreviated: dict[str, str] = {}     # the headers abbreviated since the last key: short → full
    short = False                         # whether the table printed last has abbreviated headers
    for section in sections:
        for block in section.brief:
            if isinstance(block, Table):
                short = _print_table(console, block, abbreviated, short)
            elif isinstance(block, KeyNote):
                items = sorted(abbreviated.items()) if block.sort else list(abbreviated.items())
                if items:
                    console.print(f"{block.label}: " + ", ".join(f"{a} = {full}" for a, full in items) + ".",
                                  style="dim", highlight=False)
                abbreviated.clear()
            elif isinstance(block, Paragraph):
                _print_paragraph(console, block)


def _print_paragraph(console: Console, p: Paragraph) -> None:
    for line in p.lines:
        if p.kind == "plain":
            console.print(line, highlight=False, markup=False, soft_wrap=True)
        elif p.kind == "warning":
            console.print(Text.assemble((p.lead, "yellow"), line))
        else:
            console.print(line, style="dim", highlight=False, markup=False)


def _text(cell: Cell) -> Text:
    """'63.6 ', '63.6±4.1▲' (green: ± half its 95 % interval), '63.6▼' (red), '—   ', and ' †' after a partial
    cell."""
    text = Text(cell.text)
    if not cell.slot:
        return text
    if cell.pm is not None:
        text.append(f"±{cell.pm}", style="dim")
    symbol, style = MARKS.get(cell.mark or "", (" ", ""))
    text.append(symbol)
    if style:
        text.stylize(style)
    if cell.partial:
        text.append(f" {PARTIAL}")
    return text


def _print_table(console: Console, table: Table, abbreviated: dict[str, str], last_short: bool) -> bool:
    """Print ``table`` fitted to the console (``same_headers``: abbreviated if the table before it was); returns
    whether its headers are abbreviated, and adds those to ``abbreviated``."""
    n = table.numeric_from
    label_cols, value_cols = table.columns[:n], table.columns[n:]
    names = [c.header for c in value_cols if c.short is None]
    short_names = abbreviations(names) if table.abbreviate else {h: h for h in names}
    columns = [ValueColumn(c.header, c.short if c.short is not None else short_names[c.header],
                           [_text(r[n + j]) for r in table.rows]) for j, c in enumerate(value_cols)]

    def labels(short: bool) -> list[tuple[str, list[str]]]:
        return [((c.short or c.header) if short else c.header, [r[i].text for r in table.rows])
                for i, c in enumerate(label_cols)]

    tables, short = fit(console, labels, columns, short_only=table.same_headers and last_short)
    for i, t in enumerate(tables):
        part = f" (part {i + 1} of {len(tables)})" if len(tables) > 1 else ""
        console.print(Text(table.title + part, style="bold"))
        console.print(t)
    if short:
        abbreviated.update({a: full for full, a in short_names.items() if a != full})
    return short
