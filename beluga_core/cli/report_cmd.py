"""``beluga report STORE [--format md|html|site --out DIR] [--compare OTHER]``."""

from __future__ import annotations

import contextlib
from pathlib import Path

import typer
from rich.console import Console

from beluga_core.core.errors import BelugaError


def report(
    store: Path = typer.Argument(..., help="A beluga result store (DuckDB file)."),
    fmt: str | None = typer.Option(None, "--format", metavar="md|html|site",
                                   help="Write a Markdown or a self-contained HTML report (with figures), or a "
                                        "static result site (heatmap down to every case), to --out instead of "
                                        "printing the table."),
    out: Path | None = typer.Option(None, "--out", help="Folder for the report and its figures (with --format)."),
    variant: str | None = typer.Option(None, "--variant", help="The variant to report (`beluga run --variant`); "
                                       "default: the unnamed one, else the store's only one."),
    compare: Path | None = typer.Option(None, "--compare", metavar="OTHER",
                                        help="With --format site: a second store on the same site (its models "
                                             "beside this store's on every case and in the flips page)."),
) -> None:
    """Print Table 3 (i.i.d. score, G per scenario, Avg.) and s_T per scenario for every configuration-method,
    fitted to the terminal's width (80 columns in a CI log), and any degenerate model (works while a run goes on).

    With --format md|html --out DIR: write the full report (Table 3 with significance marks, pass-rate
    heatmaps as PNG and SVG, worst-group pass rates, the degeneracy check) into DIR.

    With --format site --out DIR: a static site (open DIR/index.html from disk, or put DIR on any static host):
    the report with clickable heatmaps, a page per configuration × method × scenario, per group and per case (every
    model's prediction side by side), flips between any two models, cross-suite alignment and rankings.
    """
    if not store.exists():
        raise BelugaError("no such result store", source=store)
    if compare is not None and fmt != "site":
        raise BelugaError("--compare needs --format site (two stores on one site)")
    from beluga_core.store.opened import open_handle

    if fmt is None:
        if out is not None:
            raise BelugaError("--out needs --format md, html or site")
        from beluga_core.analysis.report.renderers.terminal import print_g_table

        with open_handle(store) as opened:
            print_g_table(opened, Console(), variant)
        return
    from beluga_core.analysis.report.report_files import FORMATS, write_report

    if fmt not in (*FORMATS, "site"):
        raise BelugaError(f"--format must be one of {', '.join(FORMATS)}, site; got {fmt!r}")
    if out is None:
        raise BelugaError(f"--format {fmt} needs --out DIR (the report and its figures go there)")
    if fmt == "site":
        from beluga_core.analysis.report.site_files import write_site

        console = Console()
        # Each store opened once, read-only (the site attaches them beside these connections).
        with open_handle(store) as opened, contextlib.ExitStack() as more:
            other = more.enter_context(open_handle(compare)) if compare is not None else None
            summary = write_site(opened, out, variant=variant, compare=other,
                                 progress=lambda line: console.print(line, style="dim", markup=False, highlight=False))
        console.print(summary.line(), markup=False, highlight=False)
        return
    with open_handle(store) as opened:
        path, report = write_report(opened, out, fmt, variant)
    n = len(report.figures("heatmaps"))
    Console().print(f"wrote {path} ({n} heatmap(s) as PNG and SVG in {path.parent / 'figures'})")
