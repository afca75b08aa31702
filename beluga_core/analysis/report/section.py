"""A report section as a value, free of any output format: a title, notes, and blocks (tables, figures,
paragraphs). Section builders (``sections/``) make them; renderers (``renderers/``) only lay them out, so a section's
words, headers and cells are written once, for the terminal, Markdown, HTML and the result site alike.

Notes are plain text with Markdown's inline marks (``**bold**``, ``*emphasis*``, `` `code` ``), which the Markdown
report keeps and the other formats render or drop. A section has a document form (``blocks``: Markdown, HTML and
the site) and, where the terminal table shows it, a compact form (``brief``: fitted to an 80-column terminal).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

Mark = str          # "better" / "worse": significantly above / below the IID baseline
FIGURES_DIR = "figures"   # where a written report keeps its figures (the result site links the sweep figures there)


@dataclass(frozen=True)
class Cell:
    """One cell: its text and what renderers may colour or format around it."""

    text: str
    pm: str | None = None          # half a 95 % interval, shown after the text ("± 4.1")
    mark: Mark | None = None       # a significance mark (▲ / ▼ after the value; coloured where a format can)
    bold: bool = False             # the best value of its column
    partial: bool = False          # † after the value (the section's notes say what it means)
    after: str = ""                # more text after the value and its mark ("(50.0)")
    group: tuple[str, str] | None = None   # (suite, group): links to the group where a format can (the site)
    flag: bool = False             # a warning (bold in Markdown, red in HTML)
    tip: str = ""                  # what the cell's mark means, on hover (HTML)
    slot: bool = False             # terminal: one character after the value for its mark, blank when unmarked
    shown_from: str | None = None  # a G cell showing another scenario's value (the site links that scenario)


@dataclass(frozen=True)
class Column:
    """A column header: in full, and as the terminal may shorten it when a table does not fit."""

    header: str
    short: str | None = None       # None: the terminal may abbreviate it (value columns) or keeps it (labels)
    group: str | None = None       # a header spanning several columns (the G table's task)
    key: dict[str, object] = field(default_factory=dict, compare=False)   # what the column stands for (the site)


@dataclass
class Table:
    columns: list[Column]
    rows: list[list[Cell]]
    numeric_from: int = 99            # columns from this one on hold figures (right-aligned)
    title: str = ""                   # a sub-heading
    notes: list[str] = field(default_factory=list)   # under the sub-heading
    baseline_first: bool = False      # the first row is the IID baseline (shaded in HTML)
    abbreviate: bool = True           # terminal: value headers may be abbreviated to fit
    same_headers: bool = False        # terminal: abbreviate as the table before it did, so the two read alike
    empty: str = ""                   # shown instead of a table without rows ("" shows nothing)

    @property
    def header(self) -> list[str]:
        return [c.header for c in self.columns]


@dataclass
class Figure:
    """A figure written as PNG and SVG; ``regions``: a title per equal-width column of ``box`` (fractions of the
    image: left, top, width, height), named on hover in HTML."""

    png: Path
    svg: Path
    alt: str
    caption: str
    title: str = ""                   # a sub-heading above it
    regions: list[str] = field(default_factory=list)
    box: tuple[float, float, float, float] | None = None
    hover_note: str = ""              # added to the caption where the regions are named on hover


@dataclass
class Paragraph:
    """Lines of text: one paragraph in Markdown, a note each elsewhere."""

    lines: list[str]
    kind: str = "note"                # "note", "plain" (status lines) or "warning" (led by ``lead``)
    lead: str = ""


@dataclass
class KeyNote:
    """Terminal: where the key of the headers abbreviated since the last key goes (``label: a = b, ...``)."""

    label: str
    sort: bool = False


Block = Table | Figure | Paragraph | KeyNote


@dataclass
class Section:
    key: str                          # what the section is, for formats that place sections on pages (the site)
    title: str
    notes: list[str] = field(default_factory=list)      # under the title
    blocks: list[Block] = field(default_factory=list)   # the document form
    brief: list[Block] = field(default_factory=list)    # the terminal's form; empty: not in the terminal table
    data: dict[str, object] = field(default_factory=dict)   # rows only the result site's pages draw (heatmaps)

    @property
    def tables(self) -> list[Table]:
        return [b for b in self.blocks if isinstance(b, Table)]

    def texts(self) -> list[str]:
        """Every title and note of the section (for the test that renderers hold none of them)."""
        out = [self.title, *self.notes]
        for b in [*self.blocks, *self.brief]:
            if isinstance(b, Table):
                out += [b.title, *b.notes, b.empty]
            elif isinstance(b, Figure):
                out += [b.title, b.caption, b.alt, b.hover_note]
            elif isinstance(b, Paragraph):
                out += [*b.lines, b.lead]
            elif isinstance(b, KeyNote):
                out.append(b.label)
        return [t for t in out if t]


# The symbols of a cell's marks, the same in every format.
MARKERS = {"better": "▲", "worse": "▼"}
PARTIAL = "†"


def pct(v: float | None) -> str:
    """A fraction as a percentage with one decimal, halves rounded away from zero as DuckDB's ``round`` does, so
    that a report's figure is the one ``SELECT round(100 * g, 1)`` gives (81.25 → 81.3; Python's format rounds a
    half to even, 81.2)."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    scaled = 100 * float(v) * 10   # in the order DuckDB computes round(100 * v, 1)
    return f"{math.copysign(math.floor(abs(scaled) + 0.5), scaled) / 10:.1f}"
