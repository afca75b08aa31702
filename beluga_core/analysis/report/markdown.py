"""The report as Markdown (figures linked as files under figures/)."""

from __future__ import annotations

from pathlib import Path

from beluga_core.analysis.report.alignment import ALIGNMENT_NOTE, SIDES, interval_text
from beluga_core.analysis.report.attribution_tables import ATTRIBUTION_NOTE, word_list
from beluga_core.analysis.report.content import (
    CROSS_NOTE,
    MARKERS,
    ONLY_NOTE,
    PARTIAL,
    ReportContent,
    degeneracy_rule,
    pct,
)
from beluga_core.analysis.report.cross_tables import basis
from beluga_core.analysis.report.degeneracy import format_distribution
from beluga_core.analysis.report.fewshot_tables import FEWSHOT_NOTE, HEADER, SEEDS_HEADER, SEEDS_NOTE
from beluga_core.analysis.report.regression import REGRESSION_NOTE, VOTE_NOTE
from beluga_core.analysis.report.table3 import (
    AVG,
    Cell,
    Column,
    Table3,
    crossing_notes,
    difference_rule,
    interval_notes,
    missing_pm_notes,
)

SIGNIFICANCE_LEGEND = ("▲ / ▼: significantly better / worse than the IID baseline (first row; its suite "
                       "columns are G_standard), p < 0.05: two-tailed binomial sign test for i.i.d., paired "
                       "approximate randomization for G (`beluga analyze STORE` lists every test). **Bold**: best in "
                       "the column.")


def seed_legend(t: Table3) -> str:
    return ("▲ / ▼: better / worse than the IID baseline (first row; its suite columns are G_standard): with two or "
            f"more seeds, {difference_rule(t)} (`beluga analyze STORE` lists every difference). **Bold**: best in "
            "the column.")


def _esc(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _cell(cell: Cell) -> str:
    text = pct(cell.value)
    if cell.pm is not None and cell.value is not None:
        text += f" ± {pct(cell.pm)}"
    if cell.bold and cell.value is not None:
        text = f"**{text}**"
    if cell.mark:
        text += f" {MARKERS[cell.mark]}"
    if cell.partial:
        text += f" {PARTIAL}"
    return text


def _col_label(col: Column, several_tasks: bool) -> str:
    if col.scenario == AVG:
        return AVG
    label = col.label
    return f"{col.task}: {label}" if several_tasks else label


def _table(header: list[str], rows: list[list[str]], right_from: int = 2) -> list[str]:
    align = ["---" if i < right_from else "---:" for i in range(len(header))]
    lines = ["| " + " | ".join(_esc(h) for h in header) + " |", "| " + " | ".join(align) + " |"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return lines


def cross_markdown(content: ReportContent, out_dir: Path) -> list[str]:
    """The cross-suite tables and figures, and the only:LEVEL matrices."""
    lines: list[str] = []
    if content.cross:
        lines += ["", "## Cross-suite evaluation", "", CROSS_NOTE, ""]
        for t, fig in zip(content.cross, content.cross_figures, strict=True):
            lines += [f"### {_esc(t.title)}", "", "G on the eval suite (s on the eval suite), %.", ""]
            rows = []
            for p in t.rows:
                cells = []
                for c in t.columns:
                    cell = t.cell(p, c)
                    text = "—" if cell.g is None else f"{pct(cell.g)}{' ' + MARKERS[cell.mark] if cell.mark else ''}"
                    cells.append(f"{text} ({pct(cell.s)})")
                rows.append([_esc(p[0]), _esc(p[1]), *cells])
            lines += _table(["configuration", "method", *[f"{c} (mapped)" if basis(c) else c for c in t.columns]],
                            rows)
            if fig.png is not None and fig.svg is not None:
                png, svg = fig.png.relative_to(out_dir).as_posix(), fig.svg.relative_to(out_dir).as_posix()
                lines += ["", f"![{_esc(t.title)}: pass rate per eval group]({png})", "", f"[SVG]({svg})", ""]
    if content.alignment:
        lines += ["", "## Capabilities across suites: templates beside the eval suite", "", ALIGNMENT_NOTE, ""]
        for a in content.alignment:
            lines += [f"### {_esc(a.title)}", "", "Pass rate, % [95 % interval].", ""]
            header = ["eval group", f"maps to ({_esc(a.level)})"]
            for config, method, scenario in a.models:
                header += [f"{_esc(config)}/{_esc(method)} · {_esc(scenario)}: templates", "eval"]
            rows = [[_esc(row[0]), _esc(row[1]), *[interval_text(a.cell(row, model, side)) for model in a.models
                                                  for side in SIDES]] for row in a.rows]
            lines += _table(header, rows)
    if content.only:
        lines += ["", "## Trained on one group alone (only:LEVEL)", "", ONLY_NOTE, ""]
        for m, fig in zip(content.only, content.only_figures, strict=True):
            lines += [f"### {_esc(m.title)}", ""]
            if fig.png is not None and fig.svg is not None:
                lines += [f"![{_esc(m.title)}]({fig.png.relative_to(out_dir).as_posix()})", "",
                          f"[SVG]({fig.svg.relative_to(out_dir).as_posix()})", ""]
    return lines


def _rate(v: tuple[float | None, float | None, dict[str, tuple[float, float]]] | None, which: str) -> str:
    if v is None:
        return "—"
    value = v[0] if which == "nfr" else v[1]
    lo, hi = v[2][which]
    return f"{pct(value)} [{pct(lo)}, {pct(hi)}]"


def regression_markdown(content: ReportContent, out_dir: Path) -> list[str]:
    if not content.regression:
        return []
    lines = ["", "## Regression: negative flips", "", REGRESSION_NOTE, ""]
    rows = [[_esc(r.config), _esc(r.method) + (" †" if r.vote_share else ""), _esc(r.scenario),
             _rate(r.values.get("iid"), "nfr"), _rate(r.values.get("iid"), "pfr"),
             _rate(r.values.get("suite"), "nfr"), _rate(r.values.get("suite"), "pfr")] for r in content.regression]
    lines += _table(["configuration", "method", "scenario", "D_test NFR", "D_test PFR", "suite NFR", "suite PFR"],
                    rows, right_from=3)
    if any(r.vote_share for r in content.regression):
        lines += ["", VOTE_NOTE]
    for fig in content.regression_figures:
        if fig.png is not None and fig.svg is not None:
            lines += ["", f"![{_esc(fig.title)}]({fig.png.relative_to(out_dir).as_posix()})", "",
                      f"[SVG]({fig.svg.relative_to(out_dir).as_posix()})"]
    return lines


def render_markdown(content: ReportContent, out_dir: Path) -> str:
    d, t = content.data, content.table
    lines = [f"# beluga report: {d.store.name}", "", f"Store `{d.store}`."]
    lines += ["", *content.status_lines()]
    several = len(t.tasks) > 1
    lines += ["", "## i.i.d. score and G per scenario (%) — Table 3", "",
              seed_legend(t) if t.n_seeds >= 2 else SIGNIFICANCE_LEGEND, *interval_notes(t), *missing_pm_notes(t),
              *crossing_notes(t),
              "Avg.: mean G over all tasks and generalization scenarios.", ""]
    if not t.rows:
        lines.append("No finished models yet.")
    else:
        header = ["configuration", "method", *[_col_label(c, several) for c in t.columns]]
        rows = [[_esc(p[0]), _esc(p[1]), *[_cell(t.cell(p, c)) for c in t.columns]] for p in t.rows]
        lines += _table(header, rows)

    worst = content.worst_groups()
    if worst:
        lines += ["", "## Worst-group pass rate per scenario (%)", "",
                  "The lowest pass rate among a configuration-method's scoring groups in each scenario (G "
                  "exclusions left out), with the group's number (see *Scoring groups*).", ""]
        keys = list(worst)  # heatmap order: task, then scenario order
        pairs = [p for p in t.rows if any(p in worst[k] for k in keys)]
        header = ["configuration", "method", *[f"{k[0]}: {k[2]}" if several else k[2] for k in keys]]
        rows = []
        for p in pairs:
            cells = []
            for k in keys:
                w = worst[k].get(p)
                cells.append("—" if w is None or w.value is None else f"{pct(w.value)} (#{w.group})")
            rows.append([_esc(p[0]), _esc(p[1]), *cells])
        lines += _table(header, rows)

    if content.figures:
        lines += ["", "## Pass rate per scoring group — Figure 1", ""]
        for f in content.figures:
            h = f.heatmap
            rel_png, rel_svg = f.png.relative_to(out_dir).as_posix(), f.svg.relative_to(out_dir).as_posix()
            lines += [f"### {h.task} — scenario {h.scenario}", "",
                      f"![{h.task}, {h.scenario}: pass rates per scoring group]({rel_png})", "",
                      f"[SVG]({rel_svg})", ""]

    if content.seeds:
        lines += ["", "## Seeds", "", *(f"*{_esc(n)}*" for n in interval_notes(t))]
        for sf in content.seeds:
            if sf.png is not None and sf.svg is not None:
                lines += ["", f"![{_esc(sf.title)}]({sf.png.relative_to(out_dir).as_posix()})", "",
                          f"[SVG]({sf.svg.relative_to(out_dir).as_posix()})"]
    lines += cross_markdown(content, out_dir)
    lines += regression_markdown(content, out_dir)
    if content.fewshot:
        lines += ["", "## Few-shot ranking of models on unseen groups", "", FEWSHOT_NOTE]
        for ft in content.fewshot:
            lines += ["", f"### {_esc(ft.title)}", "", *(f"*{_esc(n)}*" for n in ft.notes), ""]
            lines += _table(HEADER, [[_esc(c) for c in r] for r in ft.rows], right_from=1)
            if ft.seed_rows:
                lines += ["", SEEDS_NOTE, ""]
                lines += _table(SEEDS_HEADER, [[_esc(c) for c in r] for r in ft.seed_rows], right_from=1)
            if ft.png is not None and ft.svg is not None:
                lines += ["", f"![{_esc(ft.title)}: accuracy per pair against its true gap]"
                              f"({ft.png.relative_to(out_dir).as_posix()})", "",
                          f"[SVG]({ft.svg.relative_to(out_dir).as_posix()})"]
    if content.failing:
        lines += ["", "## Attributions of failing groups", "", ATTRIBUTION_NOTE, ""]
        rows = [[_esc(g.config), _esc(g.method), _esc(g.scenario), _esc(g.group), _esc(g.attribution), str(g.n_cases),
                 _esc(word_list(g.most)), _esc(word_list(g.least))] for g in content.failing]
        lines += _table(["configuration", "method", "scenario", "group", "attribution", "failing cases",
                         "most attributed", "least attributed"], rows, right_from=99)

    lines += ["", "## Degeneracy check", "", degeneracy_rule(content), ""]
    if content.degeneracy:
        rows = [[_esc(r.task), _esc(r.config), _esc(r.method), _esc(r.scenario), _esc(format_distribution(r.iid)),
                 _esc(format_distribution(r.mft)), "**collapsed: " + ", ".join(r.flags) + "**" if r.flags else ""]
                for r in content.degeneracy]
        lines += _table(["task", "configuration", "method", "scenario", "D_test predicted (gold)",
                         "MFT cases predicted (gold)", "flag"], rows, right_from=99)

    for layout in d.layouts.values():
        if not any(h.suite == layout.suite for h in content.heatmaps):
            continue
        level = layout.scoring_level or "scoring group"
        lines += ["", f"## Scoring groups of suite {layout.suite}", "",
                  f"Scoring level: {level}" + (f"; grouped by {layout.parent_level}." if layout.parent_level
                                                else "."), ""]
        header = ["#", level, *([layout.parent_level] if layout.parent_level else []), "test type"]
        rows = [[str(g.number), _esc(g.name), *([_esc(g.parent)] if layout.parent_level else []), g.test_type]
                for g in layout.groups]
        lines += _table(header, rows, right_from=99)
    return "\n".join(lines) + "\n"
