"""Everything a Markdown or HTML report shows, computed once from the store (``build_content``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from beluga_core.analysis.report.data import ReportData, read_report_data
from beluga_core.analysis.report.degeneracy import (
    COLLAPSE_EXCESS,
    COLLAPSE_SHARE,
    MIN_PREDICTIONS,
    DegeneracyRow,
    degeneracy_rows,
    suite_mft_gold,
)
from beluga_core.analysis.report.figures import FigureFiles, Heatmap, write_heatmaps
from beluga_core.analysis.report.table3 import Table3, build_table3

PARTIAL = "†"
MARKERS = {"better": "▲", "worse": "▼"}


def pct(v: float | None) -> str:
    return "—" if v is None or (isinstance(v, float) and np.isnan(v)) else f"{100 * v:.1f}"


@dataclass
class WorstGroup:
    """Lowest pass rate among a heatmap row's non-excluded groups (mean over replicates)."""

    value: float | None
    group: int | None        # its number in the suite layout


@dataclass
class ReportContent:
    data: ReportData
    table: Table3
    figures: list[FigureFiles]
    degeneracy: list[DegeneracyRow]

    @property
    def heatmaps(self) -> list[Heatmap]:
        return [f.heatmap for f in self.figures]

    def worst_groups(self) -> dict[tuple[str, str, str], dict[tuple[str, str], WorstGroup]]:
        """(task, suite, scenario) → pair → its worst group."""
        out: dict[tuple[str, str, str], dict[tuple[str, str], WorstGroup]] = {}
        for h in self.heatmaps:
            keep = [j for j, g in enumerate(h.layout.groups) if g.name not in h.excluded]
            per_pair = {}
            for i, pair in enumerate(h.rows):
                vals = h.values[i, 1:][keep]
                if np.all(np.isnan(vals)):
                    per_pair[pair] = WorstGroup(None, None)
                    continue
                j = keep[int(np.nanargmin(vals))]
                per_pair[pair] = WorstGroup(float(h.values[i, 1 + j]), h.layout.groups[j].number)
            out[(h.task, h.suite, h.scenario)] = per_pair
        return out

    def status_lines(self) -> list[str]:
        """What the report covers: models so far, a run in progress, significance state."""
        d = self.data
        lines = [f"{d.n_done} model(s) done, {d.n_failed} failed; read {d.read_at:%Y-%m-%d %H:%M:%S} UTC."]
        for r in d.running:
            lines.append(f"Run {r['run_id']} is still going (started {r['started_at']:%Y-%m-%d %H:%M:%S} UTC): "
                         "this report shows what is finished so far.")
        if any(c.partial for c in self.table.cells.values()):
            lines.append(f"{PARTIAL} a held-out scenario with folds still missing (fewer cases than its seen "
                         "scenario).")
        status = self.table.significance_status
        if not self.table.has_significance:
            lines.append("No significance tests in this store yet: run `beluga analyze STORE` to mark cells.")
        elif status.get("stale") or status.get("missing"):
            lines.append(f"Significance: {status.get('current', 0)} test(s) current, {status.get('stale', 0)} "
                         f"stale, {status.get('missing', 0)} missing; only current tests mark cells "
                         "(run `beluga analyze STORE` to refresh).")
        return lines


def build_content(store: str | Path, figures_dir: Path) -> ReportContent:
    data = read_report_data(store)
    suite_mft_gold(data)
    return ReportContent(data, build_table3(data), write_heatmaps(data, figures_dir), degeneracy_rows(data))


def degeneracy_rule(content: ReportContent) -> str:
    source = content.data.mft_gold_source
    gold = f"Gold of MFT cases from {source}." if source else \
        "The store holds no gold label for MFT cases (and no suite file was found): MFT shows predictions only."
    return (f"Predicted-label distribution on D_test (the models whose s_iid G uses) and on the MFT cases of T_test, "
            f"against gold (METHOD.md §6). *Collapsed*: at least {MIN_PREDICTIONS} predictions, the most frequent "
            f"label ≥ {100 * COLLAPSE_SHARE:.0f} % of them and ≥ {100 * COLLAPSE_EXCESS:.0f} points above its gold "
            f"share (just the share where gold is unknown), in some replicate. {gold} Labels are the ids the store "
            "writes; \"+\" after a gold share: \"not X\" gold cases may also have that label.")
