"""The pass-rate heatmaps (the paper's Figure 1): one per task × scenario of scoring-group pass rates.

Rows are configuration-method pairs (the IID baseline first, with its standard-scenario pass rates);
columns are the average (s_T) and then every scoring group, numbered in suite order and kept together by the
suite's parent level (e.g. functionalities by class), with a line between parents. A colour strip under the
matrix and the colour of each column number give the test type; a key under it names the group of each number
(the HTML report also names it on hover over the column). Values are the report views' means over
replicates (``scenario_summary``, ``pass_rate_summary``); nothing is averaged here.
"""

from __future__ import annotations

import math
import re
import textwrap
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

from beluga_core.analysis.report.report_data import ReportData, SuiteLayout
from beluga_core.core.constants import pair_order, scenario_order

DPI = 150
TEST_TYPE_COLOURS = {"MFT": "#1f6fd1", "INV": "#d17a1f", "DIR": "#7a3fbf", "mixed": "#555555"}
_EXTRA_COLOURS = ("#2a9d8f", "#e76f51", "#6d597a", "#8d99ae")
# The key under a heatmap (number → group name): names cut to KEY_NAME_CHARS characters (the report's group list
# has them whole), a key column per KEY_COLUMN_INCHES of the matrix's width, KEY_LINE_INCHES a line, and no key
# beyond KEY_MAX_GROUPS groups (it would outgrow the figure; the report's group list names them).
KEY_NAME_CHARS = 44
KEY_COLUMN_INCHES = 2.6
KEY_LINE_INCHES = 0.13
KEY_MAX_GROUPS = 150
_NON_MATRIX_INCHES = 3.0   # about what the row labels and the colour bar take of a heatmap's width


def pyplot() -> Any:
    """matplotlib's pyplot on the Agg backend (files only; never a window, and no display on servers), imported
    when a figure is drawn: a command that draws none (``beluga run``, ``--help``) does not pay its second."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def test_type_colour(test_type: str, order: list[str]) -> str:
    if test_type in TEST_TYPE_COLOURS:
        return TEST_TYPE_COLOURS[test_type]
    others = [t for t in order if t not in TEST_TYPE_COLOURS]
    return _EXTRA_COLOURS[others.index(test_type) % len(_EXTRA_COLOURS)]


@dataclass
class Heatmap:
    """The data of one heatmap: ``values[i, 0]`` is row i's s_T, ``values[i, 1 + j]`` group j's pass rate."""

    task: str
    suite: str
    scenario: str
    rows: list[tuple[str, str]]
    layout: SuiteLayout
    values: np.ndarray           # (n_rows, 1 + n_groups), fractions; NaN where not evaluable / not run
    excluded: set[str]
    shown_from: dict[tuple[str, str], str] = field(default_factory=dict)  # rows showing another scenario
    # A crossing level's heatmap: the rows shown from another scenario (the IID baseline's standard) are on the cases
    # with a group at this level, the cases the scenario scores.
    cases_of: str | None = None

    @property
    def slug(self) -> str:
        return re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{self.task}-{self.suite}-{self.scenario}")


def heatmaps(data: ReportData) -> list[Heatmap]:
    """One Heatmap per (task, suite) and scenario column of ``report_columns``: its configuration-methods (those
    evaluated in the standard scenario only, as the IID baseline, show their standard scenario: in a crossing level's
    column on the cases with a group at the level), s_T from ``scenario_summary`` and the group pass rates from
    ``pass_rate_summary`` (their ``_on_cases`` rows in a crossing level's column)."""
    s_t: dict[tuple[str, str, str, str, str, str | None], float | None] = {
        (r["task"], r["suite"], r["config"], r["method"], r["scenario"], None): r["s_suite"]
        for r in data.scenario_scores}
    s_t |= {(r["task"], r["suite"], r["config"], r["method"], r["scenario"], r["cases_of"]): r["s_suite"]
            for r in data.crossing_scores}
    rates: dict[tuple[str, str, str, str, str, str | None, str], float | None] = {
        (r["task"], r["suite"], r["config"], r["method"], r["scenario"], None, r["scoring_group"]): r["pass_rate"]
        for r in data.pass_rates}
    rates |= {(r["task"], r["suite"], r["config"], r["method"], r["scenario"], r["cases_of"], r["scoring_group"]):
              r["pass_rate"] for r in data.crossing_pass_rates}
    crossing = {(r["task"], r["suite"], r["cases_of"]) for r in data.crossing_scores}
    excluded: dict[tuple[str, str], set[str]] = defaultdict(set)
    for r in data.pass_rates:
        if r["excluded"]:
            excluded[(r["task"], r["suite"])].add(r["scoring_group"])
    columns: dict[tuple[str, str, str], dict[tuple[str, str], str]] = defaultdict(dict)
    for r in data.columns:
        if r["suite"] in data.layouts:
            columns[(r["task"], r["suite"], r["scenario"])][(r["config"], r["method"])] = r["source_scenario"]
    out = []
    for task, suite in sorted({(t, s) for t, s, _ in columns}):
        layout = data.layouts[suite]
        for scenario in scenario_order({sc for t, s, sc in columns if (t, s) == (task, suite)}):
            sources = columns[(task, suite, scenario)]
            pairs = pair_order(set(sources))
            values = np.full((len(pairs), 1 + len(layout.groups)), np.nan)
            cases_of = scenario if (task, suite, scenario) in crossing else None
            for i, pair in enumerate(pairs):
                key = (task, suite, *pair, sources[pair], cases_of if sources[pair] != scenario else None)
                values[i, 0] = _value(s_t.get(key))
                for j, g in enumerate(layout.groups):
                    values[i, 1 + j] = _value(rates.get((*key, g.name)))
            out.append(Heatmap(task, suite, scenario, pairs, layout, values, excluded[(task, suite)],
                               {p: sc for p, sc in sources.items() if sc != scenario}, cases_of))
    return out


def column_key(h: Heatmap) -> list[tuple[str, str]]:
    """(column label, group name) of every group column, in column order: the number the figure shows (``*``: a G
    exclusion) and the group it stands for. The names are the suite layout's, held once per suite."""
    return [(f"{g.number}{'*' if g.name in h.excluded else ''}", g.name) for g in h.layout.groups]


def _key_shape(h: Heatmap, width: float) -> tuple[int, int]:
    """(columns, lines) of the key under a heatmap ``width`` inches wide; (0, 0): no key."""
    n = len(h.layout.groups)
    if not n or n > KEY_MAX_GROUPS:
        return 0, 0
    columns = max(1, min(n, int((width - _NON_MATRIX_INCHES) // KEY_COLUMN_INCHES)))
    return columns, math.ceil(n / columns)


def shown_on(h: Heatmap) -> str:
    """How a row shown from another scenario is labelled beyond that scenario's name: on which cases."""
    return f", {h.cases_of} cases" if h.cases_of else ""


def _value(v: float | None) -> float:
    return float("nan") if v is None else float(v)


def draw_heatmap(h: Heatmap) -> Figure:
    import matplotlib.colors
    from matplotlib.patches import Patch

    plt = pyplot()
    n_rows, n_cols = h.values.shape
    groups = h.layout.groups
    width = max(7.0, 2.6 + 0.3 * n_cols)
    key_columns, key_lines = _key_shape(h, width)
    key_height = KEY_LINE_INCHES * key_lines + 0.1 if key_lines else 0.0
    height = round((2.4 + 0.42 * n_rows + key_height) * DPI) / DPI   # whole pixels: the PNG is that size exactly
    fig = plt.figure(figsize=(width, height), dpi=DPI)
    # The key takes the bottom key_height inches; the matrix, its strip and colour bar are laid out above it.
    fig.set_layout_engine("constrained", rect=(0, key_height / height, 1, 1 - key_height / height))
    grid = fig.add_gridspec(2, 2, height_ratios=[max(n_rows, 1), 0.35], width_ratios=[1, 0.015])
    ax = fig.add_subplot(grid[0, 0])
    strip = fig.add_subplot(grid[1, 0], sharex=ax)
    cax = fig.add_subplot(grid[0, 1])

    cmap = plt.get_cmap("RdYlGn").with_extremes(bad="#d9d9d9")   # grey: no evaluable case / not run
    image = ax.imshow(100 * h.values, cmap=cmap, vmin=0, vmax=100, aspect="auto", interpolation="nearest")
    fig.colorbar(image, cax=cax, label="pass rate (%)")
    if n_cols <= 80:
        for (i, j), v in np.ndenumerate(h.values):
            if not np.isnan(v):
                ax.text(j, i, f"{100 * v:.0f}", ha="center", va="center", fontsize=6,
                        color="white" if v < 0.2 or v > 0.85 else "black")

    type_order = list(dict.fromkeys(g.test_type for g in groups))
    ax.set_yticks(range(n_rows), [f"{c} / {m}" + (f" ({h.shown_from[(c, m)]}{shown_on(h)})" if (c, m) in h.shown_from
                                                   else "") for c, m in h.rows])
    ax.set_ylabel("configuration / method")
    ax.tick_params(axis="x", labelbottom=False, bottom=False)
    ax.set_title(f"{h.task} ({h.suite}): pass rates (%), scenario '{h.scenario}'", loc="left", fontsize=10)

    # Separate the average column, and the groups of one parent from the next.
    ax.axvline(0.5, color="black", linewidth=1.6)
    spans = _parent_spans(h)
    for start, _, _ in spans[1:]:
        ax.axvline(start + 0.5, color="black", linewidth=0.9)
    if h.layout.parent_level:
        top = ax.secondary_xaxis("top")
        top.set_xticks([(a + b) / 2 for a, b, _ in spans], [name for _, _, name in spans], fontsize=7)
        top.tick_params(length=0)

    colours = [test_type_colour(g.test_type, type_order) for g in groups]
    strip_rgb = np.array([[matplotlib.colors.to_rgb("#ffffff")] + [matplotlib.colors.to_rgb(c) for c in colours]])
    strip.imshow(strip_rgb, aspect="auto", interpolation="nearest")
    strip.set_yticks([])
    labels = ["avg"] + [f"{g.number}{'*' if g.name in h.excluded else ''}" for g in groups]
    strip.set_xticks(range(n_cols), labels, fontsize=6, rotation=90 if max(map(len, labels)) > 3 else 0)
    for tick, colour in zip(strip.get_xticklabels()[1:], colours, strict=True):
        tick.set_color(colour)
    level = h.layout.scoring_level or "scoring group"
    parent = f", grouped by {h.layout.parent_level}" if h.layout.parent_level else ""
    where = "the key below" if key_lines else "the report's group list"
    strip.set_xlabel(f"{level} (numbered as in {where}{parent}); colour = test type", fontsize=8)
    handles = [Patch(color=test_type_colour(t, type_order), label=t) for t in type_order]
    strip.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7, frameon=False,
                 title="test type", title_fontsize=7)
    if key_lines:
        _draw_key(fig, ax, h, key_columns, key_lines, colours)
    return fig


def _draw_key(fig: Figure, ax: Axes, h: Heatmap, columns: int, lines: int, colours: list[str]) -> None:
    from matplotlib.transforms import blended_transform_factory, offset_copy

    """Number → group name in the figure's bottom band, column by column across the matrix's width (the numbers in
    their test type's colour): x in the matrix's axes fraction, y in inches from the figure's bottom."""
    at = blended_transform_factory(ax.transAxes, fig.dpi_scale_trans)
    after_number = offset_copy(at, fig=fig, x=0.25, units="inches")
    for i, (label, name) in enumerate(column_key(h)):
        col, line = divmod(i, lines)
        x, y = col / columns, KEY_LINE_INCHES * (lines - line - 0.5) + 0.05
        shown = name if len(name) <= KEY_NAME_CHARS else name[:KEY_NAME_CHARS - 1] + "…"
        fig.text(x, y, label, transform=at, ha="left", va="center", fontsize=6, color=colours[i],
                 fontweight="bold")
        fig.text(x, y, shown, transform=after_number, ha="left", va="center", fontsize=6)


def _parent_spans(h: Heatmap) -> list[tuple[int, int, str]]:
    """(first column, last column, parent) runs over the group columns (column 1 is group 0)."""
    spans: list[tuple[int, int, str]] = []
    for j, g in enumerate(h.layout.groups, start=1):
        name = g.parent or ""
        if spans and spans[-1][2] == name:
            spans[-1] = (spans[-1][0], j, name)
        else:
            spans.append((j, j, name))
    return spans


# Where a column band lies in the saved image, as fractions of its width and height: (left, top, width, height).
Box = tuple[float, float, float, float]


@dataclass
class FigureFiles:
    heatmap: Heatmap
    png: Path
    svg: Path
    # The matrix's columns with their number strip, in the PNG (fractions; column j of 1 + n_groups is the j-th
    # equal slice): where the HTML report names each column's group on hover.
    columns: Box | None = None


def save_figure(fig: Figure, out_dir: Path, name: str,
                drawn: Callable[[Figure], None] | None = None) -> tuple[Path, Path]:
    """Write ``fig`` as ``out_dir/name.png`` and ``.svg`` and close it (also when saving fails); ``drawn`` sees the
    figure once the PNG is written (its layout final)."""
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        png, svg = out_dir / f"{name}.png", out_dir / f"{name}.svg"
        fig.savefig(png, dpi=DPI)
        if drawn is not None:
            drawn(fig)
        fig.savefig(svg)
    finally:
        pyplot().close(fig)
    return png, svg


def column_band(fig: Figure) -> Box:
    """The columns of a drawn heatmap (its matrix axes down to the bottom of its strip) in image fractions."""
    matrix, strip = fig.axes[0].get_position(), fig.axes[1].get_position()
    return matrix.x0, 1 - matrix.y1, matrix.width, matrix.y1 - strip.y0


def write_heatmaps(data: ReportData, out_dir: Path) -> list[FigureFiles]:
    """Draw every heatmap as PNG and SVG under ``out_dir``."""
    out = []
    for h in heatmaps(data):
        bands: list[Box] = []
        png, svg = save_figure(draw_heatmap(h), out_dir, f"heatmap-{h.slug}", partial(_measure, bands))
        out.append(FigureFiles(h, png, svg, bands[0] if bands else None))
    return out


def _measure(into: list[Box], fig: Figure) -> None:
    into.append(column_band(fig))


@dataclass
class MatrixFigure:
    """A labelled matrix of pass rates (fractions; NaN: nothing evaluable), drawn like Figure 1's heatmaps."""

    slug: str
    title: str
    rows: list[str]
    columns: list[str]
    values: np.ndarray
    xlabel: str
    ylabel: str
    outline_diagonal: bool = False    # box the cells whose row and column name the same group
    colormap: str = "RdYlGn"          # pass rates: green is good; "Reds" for rates where high is bad
    label: str = "pass rate (%)"
    png: Path | None = None
    svg: Path | None = None


def draw_matrix(m: MatrixFigure) -> Figure:
    from matplotlib.patches import Rectangle

    plt = pyplot()
    n_rows, n_cols = m.values.shape
    width = max(6.0, 3.0 + 0.45 * n_cols + 0.06 * max(map(len, m.rows), default=0))
    columns = [c if len(c) <= 32 else c[:31] + "…" for c in m.columns]
    rotated = max(map(len, columns), default=0) > 3
    height = 2.2 + 0.42 * n_rows + (0.065 * max(map(len, columns), default=0) if rotated else 0)
    fig = plt.figure(figsize=(width, height), dpi=DPI, layout="constrained")
    ax = fig.add_subplot()
    cmap = plt.get_cmap(m.colormap).with_extremes(bad="#d9d9d9")
    finite = m.values[~np.isnan(m.values)]
    # Pass rates span 0–100; other rates (NFR) use the range they reach, so that small ones stay visible.
    vmax = 100.0 if m.colormap == "RdYlGn" else max(5.0, 100 * float(finite.max()) if finite.size else 5.0)
    image = ax.imshow(100 * m.values, cmap=cmap, vmin=0, vmax=vmax, aspect="auto", interpolation="nearest")
    fig.colorbar(image, ax=ax, label=m.label)
    for (i, j), v in np.ndenumerate(m.values):
        if not np.isnan(v):
            dark = v < 0.2 or v > 0.85 if m.colormap == "RdYlGn" else 100 * v > 0.6 * vmax
            ax.text(j, i, f"{100 * v:.0f}", ha="center", va="center", fontsize=7, color="white" if dark else "black")
    ax.set_yticks(range(n_rows), m.rows, fontsize=7)
    ax.set_xticks(range(n_cols), columns, fontsize=7, rotation=90 if rotated else 0)
    if m.outline_diagonal:
        for i, row in enumerate(m.rows):
            if row in m.columns:
                j = m.columns.index(row)
                ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, edgecolor="black", linewidth=1.6))
    ax.set_xlabel(m.xlabel, fontsize=8)
    ax.set_ylabel(m.ylabel, fontsize=8)
    # The title spans the figure (the row labels take part of it), wrapped to its width.
    fig.suptitle("\n".join(textwrap.wrap(m.title, int(width * 11))), x=0.02, ha="left", fontsize=9)
    return fig


def write_matrices(matrices: list[MatrixFigure], out_dir: Path) -> list[MatrixFigure]:
    """Draw every matrix as PNG and SVG under ``out_dir`` (setting their paths)."""
    for m in matrices:
        m.png, m.svg = save_figure(draw_matrix(m), out_dir, m.slug)
    return matrices


def slug(*parts: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", "-".join(parts))
