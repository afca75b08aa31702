"""What section builders share while a report is built (``Context``)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from beluga_core.analysis.report.g_table_data import GTable, build_g_table
from beluga_core.analysis.report.heatmap_figures import FigureFiles, Heatmap, heatmaps, write_heatmaps
from beluga_core.analysis.report.report_data import ReportData


@dataclass
class Context:
    """What section builders share: the store's rows, where figures go (None: none are drawn, as for the terminal
    table and the result site's pages), and the pieces several sections use, built once."""

    data: ReportData
    figures_dir: Path | None = None
    terminal: bool = False            # building only the sections the terminal table shows

    @cached_property
    def table(self) -> GTable:
        return build_g_table(self.data)

    @cached_property
    def heatmaps(self) -> list[Heatmap]:
        return [f.heatmap for f in self.heatmap_files] if self.figures_dir is not None else heatmaps(self.data)

    @cached_property
    def heatmap_files(self) -> list[FigureFiles]:
        return write_heatmaps(self.data, self.figures_dir) if self.figures_dir is not None else []
