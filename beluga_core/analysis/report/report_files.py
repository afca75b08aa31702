"""``beluga report --format md|html --out DIR``: write the report and its figures into DIR."""

from __future__ import annotations

from pathlib import Path

from beluga_core.analysis.report.report_data import ReportData
from beluga_core.analysis.report.section import FIGURES_DIR
from beluga_core.analysis.report.sections import Report, read_report
from beluga_core.store.opened import StoreArg

FORMATS = ("md", "html")


def write_report(store: StoreArg, out_dir: str | Path, fmt: str, variant: str | None = None,
                 data: ReportData | None = None) -> tuple[Path, Report]:
    """Write ``report.md`` (figures linked) or ``report.html`` (figures embedded) and the figures (PNG and SVG
    under ``figures/``) into ``out_dir``; returns the report's path and what it shows."""
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}, got {fmt!r}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    report = read_report(store, out / FIGURES_DIR, variant, data)
    if fmt == "md":
        from beluga_core.analysis.report.renderers.markdown import render_markdown

        path, text = out / "report.md", render_markdown(report, out)
    else:
        from beluga_core.analysis.report.renderers.html import render_html

        path, text = out / "report.html", render_html(report)
    path.write_text(text, encoding="utf-8")
    return path, report
