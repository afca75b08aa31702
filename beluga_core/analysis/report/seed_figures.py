"""The report's seed figure: per task, G of every configuration-method in every scenario column, one dot per
seed, with the mean over seeds and its 95 % interval (``replicate_summary``'s default kind). Drawn only when a
cell has two or more seeds."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from beluga_core.analysis.report.heatmap_figures import DPI, pyplot, save_figure, slug
from beluga_core.analysis.report.report_data import ReportData
from beluga_core.core.constants import pair_order, scenario_order

if TYPE_CHECKING:
    from matplotlib.figure import Figure

Pair = tuple[str, str]


@dataclass
class SeedFigure:
    slug: str
    title: str
    scenarios: list[str]
    rows: list[Pair]
    per_seed: dict[tuple[Pair, str], list[float]]
    intervals: dict[tuple[Pair, str], tuple[float, float | None, float | None]] = field(default_factory=dict)
    label: str = ""
    png: Path | None = None
    svg: Path | None = None


def seed_figures(data: ReportData) -> list[SeedFigure]:
    """One figure per task whose cells have two or more seeds."""
    per_seed: dict[str, dict[tuple[Pair, str], list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in data.seed_scores:
        if r["g"] is not None and not str(r["scenario"]).startswith("only:"):
            per_seed[r["task"]][((r["config"], r["method"]), r["scenario"])].append(float(r["g"]))
    intervals: dict[str, dict[tuple[Pair, str], tuple[float, float | None, float | None]]] = defaultdict(dict)
    labels: dict[str, str] = {}
    for r in data.replicates:
        if r["statistic"] == "g" and r["grp"] == "" and r["base_config"] is None and r["status"] == "current":
            intervals[r["task"]][((r["config"], r["method"]), r["scenario"])] = (r["mean"], r["lo"], r["hi"])
            labels[r["task"]] = r["interval_label"]
    out = []
    for task in sorted(per_seed):
        cells = per_seed[task]
        if max(map(len, cells.values()), default=0) < 2:
            continue
        rows = pair_order({p for p, _ in cells})
        scenarios = scenario_order({s for _, s in cells})
        out.append(SeedFigure(slug("seeds", task), f"{task}: G per scenario, one dot per seed; mean and 95 % "
                              f"interval ({labels.get(task, 'none stored: run beluga analyze')})", scenarios, rows,
                              dict(cells), intervals[task], labels.get(task, "")))
    return out


def draw_seed_figure(f: SeedFigure) -> Figure:
    plt = pyplot()
    width = max(6.0, 1.2 + 1.3 * len(f.scenarios) * max(1, len(f.rows)) / 2)
    fig = plt.figure(figsize=(width, 4.2), dpi=DPI, layout="constrained")
    ax = fig.add_subplot()
    colours = plt.get_cmap("tab10")
    step = 0.8 / max(1, len(f.rows))
    for i, pair in enumerate(f.rows):
        colour = colours(i % 10)
        for j, scenario in enumerate(f.scenarios):
            x = j - 0.4 + step * (i + 0.5)
            values = f.per_seed.get((pair, scenario), [])
            if not values:
                continue
            jitter = np.linspace(-step / 6, step / 6, len(values)) if len(values) > 1 else [0.0]
            ax.scatter([x + d for d in jitter], [100 * v for v in values], s=12, color=colour, alpha=0.6,
                       label=f"{pair[0]} / {pair[1]}" if j == 0 else None, zorder=2)
            mean, lo, hi = f.intervals.get((pair, scenario), (float(np.mean(values)), None, None))
            if lo is not None and hi is not None:
                ax.errorbar([x], [100 * mean], yerr=[[100 * (mean - lo)], [100 * (hi - mean)]], fmt="_",
                            color=colour, markersize=14, capsize=3, linewidth=1.4, zorder=3)
            else:
                ax.scatter([x], [100 * mean], marker="_", s=200, color=colour, zorder=3)
    ax.set_xticks(range(len(f.scenarios)), f.scenarios, fontsize=8)
    ax.set_ylabel("G (%)")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=7, frameon=False, loc="best")
    ax.set_title(f.title, loc="left", fontsize=9, wrap=True)
    return fig


def write_seed_figures(data: ReportData, out_dir: Path) -> list[SeedFigure]:
    figures = seed_figures(data)
    for f in figures:
        f.png, f.svg = save_figure(draw_seed_figure(f), out_dir, f.slug)
    return figures
