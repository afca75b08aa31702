"""The sweep section: per sweep and task, G, s_T and s_iid against the swept value (mean ± half the seed-level 95 %
interval), the curve figure (one line per configuration-method, a panel per scenario, the IID baseline's band), and
per point the verdict of every ordering with its interval, p and Holm-adjusted p (``analysis.sweeps.curves``)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING

from beluga_core.analysis.report.heatmap_figures import pyplot, save_figure, slug
from beluga_core.analysis.report.section import Cell, Column, Figure, Section, Table, pct
from beluga_core.analysis.report.sections.context import Context
from beluga_core.analysis.sweeps.curves import ALPHA, KINDS, CurveRow, Curves, Estimate, Verdict
from beluga_core.core.constants import scenario_order

if TYPE_CHECKING:
    from matplotlib.figure import Figure as PlotFigure

NOTES = [
    "Each point is the mean over its seeds ± half the seed-level 95 % t interval (mean ± t(n−1)·sd/√n); — where a "
    "point has one seed. The IID baseline is trained once and shared by every point of a sweep whose key it does "
    "not read.",
    "Verdicts: A − B paired by seed, both scored on the cases both score (a held-out scenario scores its groups' "
    "cases only), its 95 % interval and two-sided t test; Holm's correction over every test of "
    f"the sweep (all points and orderings). **holds**: A > B with the Holm-adjusted p below {ALPHA}; **reversed**: "
    "A < B likewise; otherwise not resolved. Scenario orderings run from seen through the held-out levels, finest "
    "(most groups) first.",
]


def build(ctx: Context) -> list[Section]:
    curves = ctx.data.curves
    if not curves.rows:
        return []
    return curve_sections(curves, ctx.figures_dir)


def curve_figure_name(sweep: str, task: str) -> str:
    """The curve figure's file name (without suffix) under a report's figures folder (the result site links it)."""
    return slug("curve", sweep, task)


def curve_sections(curves: Curves, figures_dir: Path | None) -> list[Section]:
    """One section per sweep and task."""
    out = []
    tests = curves.n_tests
    for sweep, task, axis in curves.sweeps():
        rows = [r for r in curves.rows if (r.sweep, r.task, r.axis) == (sweep, task, axis)]
        verdicts = [v for v in curves.verdicts if (v.sweep, v.task, v.axis) == (sweep, task, axis)]
        values = sorted({(r.position, r.value) for r in rows})
        waiting = {p: why for (s, p), why in curves.unfinished.items() if s == sweep}
        name = f"'{sweep}': " if len({s for s, _, _ in curves.sweeps()}) > 1 else ""
        g = _value_table(rows, values, "g", f"{name}G against {axis}", waiting)
        blocks: list[Table | Figure] = [g, _value_table(rows, values, "s_suite", f"{name}s_T against {axis}", waiting),
                                        _iid_table(rows, values, axis, waiting)]
        if figures_dir is not None:
            png, svg = save_figure(draw_curve(rows, axis, f"{task}: G against {axis}"), figures_dir,
                                   curve_figure_name(sweep, task))
            blocks.insert(0, Figure(png, svg, f"{task}: G against {axis}", f"{task}: G against {axis}, one line per "
                                    "configuration-method, a panel per scenario; bars: 95 % seed-level intervals; "
                                    "grey band: the IID baseline's"))
        blocks.append(_verdict_table(verdicts, axis, tests.get(sweep, 0)))
        # The terminal's: a verdict table per configuration-method, narrow enough for 80 columns.
        pairs = sorted({(v.config, v.method) for v in verdicts})
        brief = [_verdict_table([v for v in verdicts if (v.config, v.method) == pair], axis, tests.get(sweep, 0),
                                brief=f"{pair[0]}/{pair[1]}") for pair in pairs]
        out.append(Section("curves", f"Sweep '{sweep}': {task} against {axis}", list(NOTES), list(blocks),
                           brief=[g, *brief]))
    return out


def _pm(e: Estimate) -> Cell:
    half = e.half
    return Cell(pct(e.mean), pm=None if half is None else f"{100 * half:.1f}", slot=True)


def _label(v: float) -> str:
    return f"{v:g}"


def _headers(values: list[tuple[int, float]], waiting: dict[int, str]) -> list[Column]:
    """A column per point; † after a point whose models are not all done."""
    return [Column(_label(v) + (" †" if p in waiting else "")) for p, v in values]


def _waiting_notes(values: list[tuple[int, float]], waiting: dict[int, str]) -> list[str]:
    return [f"† point {_label(v)} is unfinished ({waiting[p]}): its figures are of the models done so far; re-run the "
            "sweep to finish it" for p, v in values if p in waiting]


def _value_table(rows: list[CurveRow], values: list[tuple[int, float]], stat: str, title: str,
                 waiting: dict[int, str]) -> Table:
    cells: dict[tuple[str, str, str], dict[int, Estimate]] = defaultdict(dict)
    for r in rows:
        cells[(r.config, r.method, r.scenario)][r.position] = getattr(r, stat)
    order = scenario_order({k[2] for k in cells})
    keys = sorted(cells, key=lambda k: (not (k[0] == "iid" and k[2] == "standard"), k[0], k[1], order.index(k[2])))
    table_rows = [[Cell(f"{c}/{m}"), Cell(s), *(_pm(cells[(c, m, s)][p]) if p in cells[(c, m, s)] else Cell("—")
                                               for p, _ in values)] for c, m, s in keys]
    return Table([Column("configuration/method"), Column("scenario"), *_headers(values, waiting)],
                 table_rows, numeric_from=2, title=title, baseline_first=True, abbreviate=False,
                 notes=_waiting_notes(values, waiting))


def _iid_table(rows: list[CurveRow], values: list[tuple[int, float]], axis: str, waiting: dict[int, str]) -> Table:
    """s_iid per configuration-method: its seen model's (the baseline: its own), the same in every scenario."""
    cells: dict[tuple[str, str], dict[int, Estimate]] = defaultdict(dict)
    for r in rows:
        if r.scenario in ("seen", "standard"):
            cells[(r.config, r.method)][r.position] = r.s_iid
    keys = sorted(cells, key=lambda k: (k[0] != "iid", k))
    return Table([Column("configuration/method"), *_headers(values, waiting)],
                 [[Cell(f"{c}/{m}"), *(_pm(cells[(c, m)][p]) if p in cells[(c, m)] else Cell("—") for p, _ in values)]
                  for c, m in keys], numeric_from=1, title=f"s_iid against {axis}", baseline_first=True,
                 abbreviate=False)


def _verdict_table(verdicts: list[Verdict], axis: str, n_tests: int, *, brief: str = "") -> Table:
    """Per point and ordering: Δ = A − B in percentage points, its 95 % interval, p, Holm's p and the verdict
    (``brief``: the terminal's table of that configuration-method, with the interval beside Δ and no raw p)."""
    marks = {"holds": "better", "reversed": "worse"}
    rows = []
    for v in verdicts:
        d = v.diff
        interval = "—" if d.lo is None or d.hi is None else f"[{100 * d.lo:+.1f}, {100 * d.hi:+.1f}]"
        delta = Cell("—" if d.mean is None else f"{100 * d.mean:+.1f}", mark=marks.get(v.verdict), slot=True)
        holm_p = Cell("—" if v.p_holm is None else f"{v.p_holm:.4f}")
        if brief:
            ordering = f"{v.a} > {'IID' if v.b == 'IID baseline' else v.b}"
            rows.append([Cell(_label(v.value)), Cell(ordering), delta, Cell(interval), holm_p, Cell(v.verdict)])
        else:
            rows.append([Cell(_label(v.value)), Cell(KINDS[v.kind]), Cell(f"{v.config}/{v.method}"),
                         Cell(v.ordering), Cell(str(d.n)), delta, Cell(interval),
                         Cell("—" if d.p is None else f"{d.p:.4f}"), holm_p, Cell(v.verdict)])
    if brief:
        return Table([Column("value"), Column("ordering (G; s_iid)"), Column("Δ"), Column("95 %"), Column("Holm p"),
                      Column("verdict")], rows, numeric_from=99, abbreviate=False,
                     title=f"{brief}: verdicts per point of {axis} (Holm over the sweep's {n_tests} tests)")
    return Table([Column(axis), Column("comparison"), Column("configuration/method"), Column("ordering"),
                  Column("seeds"), Column("Δ (points)"), Column("95 % interval"), Column("p"), Column("Holm p"),
                  Column("verdict")], rows, numeric_from=99, abbreviate=False,
                 title=f"Verdicts per point of {axis} (Holm over the sweep's {n_tests} tests)")


def draw_curve(rows: list[CurveRow], axis: str, title: str) -> PlotFigure:
    """G against the swept value: a panel per scenario (seen and the held-out levels), a line per
    configuration-method with its seed-level intervals, and the IID baseline's mean and interval as a band."""
    plt = pyplot()
    scenarios = [s for s in scenario_order({r.scenario for r in rows}) if s != "standard"]
    fig = plt.figure(figsize=(max(6.0, 3.2 * len(scenarios)), 3.8), dpi=110, layout="constrained")
    axes = fig.subplots(1, max(1, len(scenarios)), sharey=True, squeeze=False)[0]
    baseline = sorted((r for r in rows if r.is_baseline), key=lambda r: r.value)
    pairs = sorted({r.pair for r in rows if not r.is_baseline})
    colours = plt.get_cmap("tab10")
    values = sorted({r.value for r in rows})
    log = len(values) > 2 and min(values) > 0 and max(values) / min(values) >= 8
    for ax, scenario in zip(axes, scenarios, strict=False):
        if baseline:
            xs = [r.value for r in baseline]
            ax.plot(xs, [100 * (r.g.mean or 0) for r in baseline], color="grey", linewidth=1, label="iid/vanilla")
            if all(r.g.lo is not None for r in baseline):
                ax.fill_between(xs, [100 * (r.g.lo or 0) for r in baseline], [100 * (r.g.hi or 0) for r in baseline],
                                color="grey", alpha=0.2, linewidth=0)
        for i, pair in enumerate(pairs):
            pts = sorted((r for r in rows if r.pair == pair and r.scenario == scenario and r.g.mean is not None),
                         key=lambda r: r.value)
            if not pts:
                continue
            ys = [100 * (r.g.mean or 0) for r in pts]
            err = [100 * (r.g.half or 0) for r in pts]
            ax.errorbar([r.value for r in pts], ys, yerr=err, color=colours(i % 10), marker="o", markersize=3,
                        capsize=3, linewidth=1.3, label=f"{pair[0]}/{pair[1]}")
        if log:
            ax.set_xscale("log", base=2)
        ax.set_xticks(values, [_label(v) for v in values], fontsize=7)
        ax.minorticks_off()
        ax.set_title(scenario, fontsize=9)
        ax.set_xlabel(axis.rsplit(".", 1)[-1], fontsize=8)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("G (%)")
    axes[0].legend(fontsize=7, frameon=False, loc="best")
    fig.suptitle(title, fontsize=9, x=0.01, ha="left")
    return fig
