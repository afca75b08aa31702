"""What a report shows: the sections of ``SECTIONS``, in that order, built once over the store's rows
(``report_data``) as format-free values (``section``), for every renderer (``renderers/``) alike.

A new section is a builder in this package added to ``SECTIONS``: every format then shows it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from beluga_core.analysis.report.heatmap_figures import Heatmap
from beluga_core.analysis.report.report_data import ReportData, read_report_data
from beluga_core.analysis.report.section import Figure, Section
from beluga_core.analysis.report.sections import (
    attributions,
    cross,
    curves,
    degeneracy,
    fewshot,
    g_table,
    halving,
    heatmaps,
    regression,
    scoring_groups,
    seeds,
    status,
    worst_groups,
)
from beluga_core.analysis.report.sections.context import Context
from beluga_core.store.opened import StoreArg

Builder = Callable[[Context], list[Section]]


@dataclass(frozen=True)
class Entry:
    build: Builder
    terminal: bool = False            # the section has a terminal form (the terminal table builds only those)


@dataclass
class Report:
    """A store's report: its title and its sections in order."""

    title: str
    data: ReportData
    sections: list[Section] = field(default_factory=list)

    def section(self, key: str) -> list[Section]:
        return [s for s in self.sections if s.key == key]

    @property
    def heatmaps(self) -> list[Heatmap]:
        """The heatmaps' values (drawn or not)."""
        return [h for s in self.section("heatmaps") for h in cast(list[Heatmap], s.data.get("heatmaps", []))]

    def figures(self, key: str) -> list[Figure]:
        """The figures of the sections ``key``."""
        return [b for s in self.section(key) for b in s.blocks if isinstance(b, Figure)]


# The report's sections in order. Tests add one here (monkeypatch) to see it in every format.
SECTIONS: list[Entry] = [
    Entry(status.build, terminal=True), Entry(g_table.build, terminal=True), Entry(worst_groups.build),
    Entry(heatmaps.build), Entry(seeds.build), Entry(curves.build, terminal=True),
    Entry(cross.build_cross, terminal=True),
    Entry(cross.build_alignment_section), Entry(cross.build_only, terminal=True), Entry(regression.build),
    Entry(fewshot.build), Entry(attributions.build), Entry(degeneracy.build, terminal=True),
    Entry(halving.build), Entry(scoring_groups.build)]


def build_report(data: ReportData, figures_dir: Path | None = None, *, terminal: bool = False) -> Report:
    """Every section of ``data``'s report (``terminal``: only those with a terminal form); figures are drawn
    under ``figures_dir`` (None: none)."""
    ctx = Context(data, figures_dir, terminal)
    sections = [s for e in SECTIONS if e.terminal or not terminal for s in e.build(ctx)]
    return Report(f"beluga report: {data.store.name}", data, sections)


def read_report(store: StoreArg, figures_dir: Path | None = None, variant: str | None = None,
                data: ReportData | None = None) -> Report:
    """The report of ``store`` (an open store, or a path opened for this call; of one variant; ``data``: its rows
    when already read)."""
    data = data if data is not None else read_report_data(store, variant=variant)
    return build_report(data, figures_dir)
