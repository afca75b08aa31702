"""Everything a Markdown or HTML report shows, read once from the store's views (``build_content``)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from beluga_core.analysis.report.alignment import AlignmentTable, build_alignment
from beluga_core.analysis.report.attribution_tables import FailingGroup, failing_groups
from beluga_core.analysis.report.cross_tables import (
    CrossTable,
    OnlyMatrix,
    basis,
    build_cross_tables,
    build_only_matrices,
)
from beluga_core.analysis.report.degeneracy import DegeneracyRow, degeneracy_rows
from beluga_core.analysis.report.fewshot_tables import FewshotTable, build_fewshot
from beluga_core.analysis.report.figures import FigureFiles, Heatmap, MatrixFigure, slug, write_heatmaps, write_matrices
from beluga_core.analysis.report.regression import RegressionLine, build_regression
from beluga_core.analysis.report.report_data import ReportData, read_report_data, run_lines, scope_lines
from beluga_core.analysis.report.seeds import SeedFigure, write_seed_figures
from beluga_core.analysis.report.table3 import PARTIAL_NOTE, Table3, build_table3
from beluga_core.store.opened import StoreArg

PARTIAL = "†"
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
MARKERS = {"better": "▲", "worse": "▼"}


def pct(v: float | None) -> str:
    """A fraction as a percentage with one decimal, halves rounded away from zero as DuckDB's ``round`` does, so
    that a report's figure is the one ``SELECT round(100 * g, 1)`` gives (81.25 → 81.3; Python's format rounds a
    half to even, 81.2)."""
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return "—"
    scaled = 100 * float(v) * 10   # in the order DuckDB computes round(100 * v, 1)
    return f"{math.copysign(math.floor(abs(scaled) + 0.5), scaled) / 10:.1f}"


@dataclass
class WorstGroup:
    """The lowest pass rate among a heatmap row's non-excluded groups (the ``worst_groups`` view)."""

    value: float | None
    group: int | None        # its number in the suite layout


@dataclass
class ReportContent:
    data: ReportData
    table: Table3
    figures: list[FigureFiles]
    degeneracy: list[DegeneracyRow]
    cross: list[CrossTable] = field(default_factory=list)
    cross_figures: list[MatrixFigure] = field(default_factory=list)    # one per cross table
    only: list[OnlyMatrix] = field(default_factory=list)
    only_figures: list[MatrixFigure] = field(default_factory=list)     # one per only matrix
    regression: list[RegressionLine] = field(default_factory=list)
    regression_figures: list[MatrixFigure] = field(default_factory=list)  # NFR per scoring group, per task
    failing: list[FailingGroup] = field(default_factory=list)             # attributions of failing groups
    alignment: list[AlignmentTable] = field(default_factory=list)         # eval groups beside their mapped groups
    fewshot: list[FewshotTable] = field(default_factory=list)             # stored rankings (beluga rank)
    seeds: list[SeedFigure] = field(default_factory=list)                 # G per seed, mean and interval

    @property
    def heatmaps(self) -> list[Heatmap]:
        return [f.heatmap for f in self.figures]

    def worst_groups(self) -> dict[tuple[str, str, str], dict[tuple[str, str], WorstGroup]]:
        """(task, suite, scenario) → pair → its worst group, for every heatmap and row (in heatmap order)."""
        return worst_groups_of(self.data, self.heatmaps)

    def status_lines(self) -> list[str]:
        """What the report covers: models so far, a run in progress, significance state."""
        d = self.data
        lines = [f"{d.n_done} model(s) done, {d.n_failed} failed; read {d.read_at:%Y-%m-%d %H:%M:%S} UTC.",
                 *scope_lines(d)]
        lines += run_lines(d)
        if any(c.partial for c in self.table.cells.values()):
            lines.append(f"{PARTIAL} {PARTIAL_NOTE}")
        status = self.table.significance_status
        if not self.table.has_significance:
            lines.append("No significance tests in this store yet: run `beluga analyze STORE` to mark cells.")
        elif status.get("stale") or status.get("missing"):
            lines.append(f"Significance: {status.get('current', 0)} test(s) current, {status.get('stale', 0)} "
                         f"stale, {status.get('missing', 0)} missing; only current tests mark cells "
                         "(run `beluga analyze STORE` to refresh).")
        return lines


def worst_groups_of(data: ReportData, maps: list[Heatmap]) -> dict[tuple[str, str, str],
                                                                   dict[tuple[str, str], WorstGroup]]:
    """(task, suite, scenario) → pair → its worst group (the ``worst_groups`` view), for every heatmap and row of
    ``maps`` (in their order); the Markdown / HTML reports' table and the result site's alike."""
    worst: dict[tuple[str, str, str, str, str, str | None], dict[str, Any]] = {
        (r["task"], r["suite"], r["config"], r["method"], r["scenario"], None): r for r in data.worst_groups}
    worst |= {(r["task"], r["suite"], r["config"], r["method"], r["scenario"], r["cases_of"]): r
              for r in data.crossing_worst_groups}
    out: dict[tuple[str, str, str], dict[tuple[str, str], WorstGroup]] = {}
    for h in maps:
        numbers = {g.name: g.number for g in h.layout.groups}
        per_pair = {}
        for pair in h.rows:
            shown = h.shown_from.get(pair)
            r = worst.get((h.task, h.suite, *pair, shown or h.scenario, h.cases_of if shown else None))
            per_pair[pair] = WorstGroup(None, None) if r is None else \
                WorstGroup(r["pass_rate"], numbers.get(r["scoring_group"]))
        out[(h.task, h.suite, h.scenario)] = per_pair
    return out


def build_content(store: StoreArg, figures_dir: Path, variant: str | None = None,
                  data: ReportData | None = None) -> ReportContent:
    """Everything the report shows; ``data``: the store's rows when already read (the result site reads them once)."""
    data = data if data is not None else read_report_data(store, variant=variant)
    cross, only = build_cross_tables(data), build_only_matrices(data)
    regression, nfr_figures = build_regression(data)
    return ReportContent(data, build_table3(data), write_heatmaps(data, figures_dir), degeneracy_rows(data),
                         cross, write_matrices([cross_figure(t) for t in cross], figures_dir),
                         only, write_matrices([only_figure(m) for m in only], figures_dir),
                         regression, write_matrices(nfr_figures, figures_dir), failing_groups(data.failing_words),
                         build_alignment(data.alignment_units),
                         build_fewshot(data.fewshot, data.fewshot_pairs, figures_dir, data.grid_on_seen,
                                       data.fewshot_seeds),
                         write_seed_figures(data, figures_dir))


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


def degeneracy_rule(content: ReportContent) -> str:
    mft_gold = any(r.mft is not None and r.mft.has_gold for r in content.degeneracy)
    gold = "Gold labels are the store's (each case's expected label, recorded by the run)." if mft_gold else \
        "The store holds no gold label for these MFT cases: MFT shows predictions only."
    return ("Predicted-label distribution on D_test (the models whose s_iid G uses) and on the MFT cases of T_test, "
            "against gold, summed over replicates. *Collapsed* (the store's `degeneracy` "
            "view): at "
            "least 20 predictions, the most frequent label ≥ 90 % of them and ≥ 20 points above its gold share (just "
            f"the share where gold is unknown), in some replicate. {gold} \"+\" after a gold share: \"not X\" gold "
            "cases may also have that label.")
