"""The result site's overview of one store (``site.overview``): the report's sections as the data the page's
script draws (``site_assets/site.js``): the G table with links into scenario pages, the heatmaps with links into
group pages, and the other sections' tables, each placed on the page that shows it. Lays out section values
only (``section``); the page shows text, so a note's Markdown bold marks are dropped."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from beluga_core.analysis.report.heatmap_figures import Heatmap
from beluga_core.analysis.report.report_data import ReportData
from beluga_core.analysis.report.section import FIGURES_DIR, MARKERS, PARTIAL, Cell, Section, Table, pct
from beluga_core.analysis.report.sections import Report
from beluga_core.analysis.report.sections.curves import curve_figure_name
from beluga_core.analysis.report.site_cases import Arm, SuiteInfo

TableCell = str | list[str] | None      # text, or [text, href]
# The pages that show sections as tables besides the overview (which shows every other section's tables): the
# cross-suite page and the ranking page; and the sections the pages draw in their own way (the G table, the
# heatmaps, the status lines) or not at all (their figures and group lists: the site has its own group pages).
PAGES = {"alignment": ("cross", "alignment", "only"), "ranking": ("fewshot",)}
DRAWN = ("status", "g_table", "heatmaps", "seeds", "scoring_groups")


def text(note: str) -> str:
    return note.replace("**", "")


def cell_text(cell: Cell) -> str:
    out = cell.text
    if cell.pm is not None:
        out += f" ± {cell.pm}"
    if cell.mark:
        out += f" {MARKERS[cell.mark]}"
    if cell.partial:
        out += f" {PARTIAL}"
    return out + cell.after


def _group_href(suites: dict[str, SuiteInfo], suite: str, group: str) -> str | None:
    s = suites.get(suite)
    g = next((g for g in s.groups if g["name"] == group), None) if s else None
    return None if s is None or g is None else f"#/group/{s.index}/{g['gi']}"


def _cell(cell: Cell, suites: dict[str, SuiteInfo]) -> TableCell:
    href = _group_href(suites, *cell.group) if cell.group is not None else None
    return [cell_text(cell), href] if href else cell_text(cell)


def _table(section: Section, t: Table, suites: dict[str, SuiteInfo]) -> dict[str, Any]:
    notes = [*t.notes, *section.notes, *[line for b in section.blocks if not isinstance(b, Table)
                                         for line in getattr(b, "lines", [])]]
    return {"title": t.title or section.title, "note": text(" ".join(notes)), "header": t.header,
            "rows": [[_cell(c, suites) for c in r] for r in t.rows], "numeric_from": t.numeric_from}


def _g_table(section: Section) -> dict[str, Any]:
    """The G table as the page draws it (linking its G cells to scenario pages): its first note is the legend."""
    (t,) = section.tables
    n = t.numeric_from
    return {
        "title": section.title, "legend": text(section.notes[0]), "notes": [text(n) for n in section.notes[1:]],
        "columns": [c.key for c in t.columns[n:]],
        "rows": [{"config": r[0].text, "method": r[1].text,
                  "cells": [{"t": cell_text(c), "mark": c.mark, "bold": c.bold, "from": c.shown_from}
                            for c in r[n:]]} for r in t.rows],
        "avg": section.data.get("avg"),
    }


def _arm_of(arms: list[Arm], store: int, task: str, suite: str, config: str, method: str, scenario: str) -> int | None:
    return next((a.index for a in arms if a.store == store and a.key["task"] == task and a.key["suite"] == suite
                 and a.key["config"] == config and a.key["method"] == method and a.key["scenario"] == scenario), None)


def _heatmap(h: Heatmap, store: int, arms: list[Arm], suites: dict[str, SuiteInfo]) -> dict[str, Any]:
    site_suite = suites.get(h.suite)
    gi = {g["name"]: g["gi"] for g in site_suite.groups} if site_suite else {}
    return {
        "task": h.task, "suite": h.suite, "si": site_suite.index if site_suite else None,
        "scenario": h.scenario, "groups": [gi.get(g.name) for g in h.layout.groups],
        "numbers": [g.number for g in h.layout.groups], "names": [g.name for g in h.layout.groups],
        "test_types": [g.test_type for g in h.layout.groups], "parents": [g.parent for g in h.layout.groups],
        "excluded": sorted(h.excluded), "scoring_level": h.layout.scoring_level,
        "rows": [{"config": p[0], "method": p[1], "from": h.shown_from.get(p),
                  "on": h.cases_of if p in h.shown_from else None,
                  "arm": _arm_of(arms, store, h.task, h.suite, *p, h.shown_from.get(p, h.scenario)),
                  "v": [None if math.isnan(x) else round(float(x), 4) for x in h.values[i]]}
                 for i, p in enumerate(h.rows)]}


def render_overview(report: Report, store: int, arms: list[Arm], suites: dict[str, SuiteInfo],
                    full_report: str | None) -> dict[str, Any]:
    """One store's report as the site's overview shows it; every number comes from the report's sections."""
    data: ReportData = report.data
    pages: dict[str, list[dict[str, Any]]] = {"sections": [], **{page: [] for page in PAGES}}
    for s in report.sections:
        if s.key not in DRAWN:
            page = next((page for page, keys in PAGES.items() if s.key in keys), "sections")
            pages[page] += [_table(s, t, suites) for t in s.tables]
    (g,) = report.section("g_table")
    status = [line for s in report.section("status") for b in s.blocks[1:] for line in getattr(b, "lines", [])]
    return {
        "store": store, "name": data.store.name, "path": str(data.store), "variant": data.variant,
        "status": status, "report": full_report, "table3": _g_table(g),
        "heatmaps_title": next((s.title for s in report.section("heatmaps")), ""),
        "heatmaps": [_heatmap(h, store, arms, suites) for h in report.heatmaps],
        "sections": pages["sections"], "alignment": pages["alignment"], "ranking": pages["ranking"],
        "scenarios": [{k: r[k] for k in ("task", "suite", "config", "method", "scenario", "n_replicates",
                                         "n_incomplete")} | {f"{k}_t": pct(r[k]) for k in ("g", "s_suite", "s_iid")}
                      for r in data.scenario_scores],
        "seeds": [[r["task"], r["config"], r["method"], r["scenario"], r["seed"], pct(r["g"])]
                  for r in data.seed_scores],
        # A sweep's curve figures, drawn by the full report beside the site (none without it): the overview shows
        # them above the sweep's tables.
        "figures": [{"src": f"{Path(full_report).parent.as_posix()}/{FIGURES_DIR}/{curve_figure_name(sweep, task)}.png",
                     "alt": f"{task}: G against {axis}", "caption": f"Sweep '{sweep}': {task}, G against {axis} "
                     "(one line per configuration-method, a panel per scenario; bars: 95 % seed-level intervals; "
                     "grey band: the IID baseline's)"}
                    for sweep, task, axis in data.curves.sweeps()] if full_report else [],
    }
