"""Tables fitted to the terminal: made to be read in an 80-column terminal and in a CI log (where rich renders 80
columns, without colour), cells never wrap. When a table is wider than the console its value headers are
abbreviated (with a key under the table), then its columns are set one space apart instead of two, and when that
is not enough its value columns go into several tables, each repeating the label columns. The report's terminal
table (``terminal``) and the other commands' tables (``beluga regress``, ``beluga rank``) are laid out here.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from beluga_core.analysis.ranking.over_seeds import NOTE as OVER_SEEDS_NOTE
from beluga_core.analysis.ranking.over_seeds import OverSeeds
from beluga_core.analysis.ranking.rank import REFERENCE, Ranking
from beluga_core.analysis.ranking.save import interval, percent, skip_lines

ABBREVIATE_TO = 6         # value headers longer than this are abbreviated when a table does not fit
_UNBOUNDED = 10_000       # a width to measure a table's natural width at


@dataclass
class ValueColumn:
    header: str                 # the full header
    short: str                  # the abbreviated header (the same where short enough)
    cells: list[Text]           # one per row


def abbreviations(names: Sequence[str], width: int = ABBREVIATE_TO) -> dict[str, str]:
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


def _table(labels: list[tuple[str, list[str]]], columns: list[ValueColumn], *, short: bool,
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


def fit(console: Console, labels: Callable[[bool], list[tuple[str, list[str]]]], columns: list[ValueColumn],
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
    chunks: list[list[ValueColumn]] = [[]]
    for col in columns:
        trial = chunks[-1] + [col]
        if chunks[-1] and _width(console, _table(labels(True), trial, short=True)) > console.width:
            chunks.append([col])
        else:
            chunks[-1] = trial
    return [_table(labels(True), chunk, short=True) for chunk in chunks], True


def print_tables(console: Console, title: str, labels: Callable[[bool], list[tuple[str, list[str]]]],
                 columns: list[ValueColumn], *, short_only: bool = False) -> bool:
    """Print ``title`` and the fitted tables; returns whether headers were abbreviated."""
    tables, short = fit(console, labels, columns, short_only=short_only)
    for i, table in enumerate(tables):
        part = f" (part {i + 1} of {len(tables)})" if len(tables) > 1 else ""
        console.print(Text(title + part, style="bold"))
        console.print(table)
    return short


def print_value_table(console: Console, title: str, labels: list[tuple[str, list[str]]],
                      values: list[tuple[str, list[str]]], *, abbreviate: bool = True) -> None:
    """A titled table of label columns and right-aligned value columns that fits the console (abbreviated,
    tightened or split as the G table is); for the other commands' tables (``beluga regress``, ``beluga rank``).
    Without ``abbreviate`` headers stay whole, for tables with no key under them: the columns are only
    tightened, then split."""
    names = [h for h, _ in values]
    short = abbreviations(names) if abbreviate else {h: h for h in names}
    columns = [ValueColumn(h, short[h], [Text(v) for v in cells]) for h, cells in values]
    print_tables(console, title, lambda _short: labels, columns)


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
