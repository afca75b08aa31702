"""The report as one self-contained HTML page: inline CSS, figures embedded as base64 PNG, no scripts, so it
opens from disk in any browser without a server."""

from __future__ import annotations

import base64
from html import escape
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
from beluga_core.analysis.report.figures import FigureFiles, MatrixFigure, column_key
from beluga_core.analysis.report.regression import REGRESSION_NOTE, VOTE_NOTE
from beluga_core.analysis.report.seeds import SeedFigure
from beluga_core.analysis.report.table3 import (
    AVG,
    Cell,
    crossing_notes,
    difference_rule,
    interval_notes,
    missing_pm_notes,
)
from beluga_core.core.constants import BASELINE

STYLE = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 2em auto;
       max-width: 1400px; padding: 0 1.5em; color: #1f2328; }
h1 { font-size: 1.6em; } h2 { font-size: 1.25em; margin-top: 2em; border-bottom: 1px solid #d0d7de; }
h3 { font-size: 1.05em; }
table { border-collapse: collapse; margin: .6em 0; font-variant-numeric: tabular-nums; }
th, td { border: 1px solid #d0d7de; padding: .25em .6em; }
th { background: #f6f8fa; } td.num { text-align: right; white-space: nowrap; }
tr.baseline td { background: #f6f8fa; }
.better { color: #1a7f37; } .worse { color: #cf222e; }
.flag { color: #cf222e; font-weight: 600; }
.note { color: #57606a; } figure { margin: 1em 0; } figure img { max-width: 100%; height: auto; }
code { background: #f6f8fa; padding: 0 .25em; }
.heat { position: relative; display: inline-block; max-width: 100%; }
.heat img { display: block; }
.heat .col { position: absolute; } .heat .col:hover { outline: 1px solid #1f2328; }
"""


def _num_cell(cell: Cell) -> str:
    text = escape(pct(cell.value))
    if cell.pm is not None and cell.value is not None:
        text += f' <span class="pm">± {escape(pct(cell.pm))}</span>'
    if cell.mark:
        text += f" {MARKERS[cell.mark]}"
    if cell.bold and cell.value is not None:
        text = f"<b>{text}</b>"
    if cell.partial:
        text += f" {PARTIAL}"
    cls = "num" + (f" {cell.mark}" if cell.mark else "")
    title = {"better": "significantly better than the IID baseline (p < 0.05)",
             "worse": "significantly worse than the IID baseline (p < 0.05)"}.get(cell.mark or "", "")
    return f'<td class="{cls}"' + (f' title="{title}"' if title else "") + f">{text}</td>"


def _table3(content: ReportContent) -> str:
    t = content.table
    if not t.rows:
        return "<p>No finished models yet.</p>"
    head1 = ['<th rowspan="2">configuration</th>', '<th rowspan="2">method</th>']
    for task in t.tasks:
        n = sum(1 for c in t.columns if c.task == task)
        head1.append(f'<th colspan="{n}">{escape(task)}</th>')
    if any(c.scenario == AVG for c in t.columns):
        head1.append(f'<th rowspan="2">{AVG}</th>')
    head2 = [f"<th>{escape(c.label)}</th>" for c in t.columns if c.scenario != AVG]
    body = []
    for i, p in enumerate(t.rows):
        cells = "".join(_num_cell(t.cell(p, c)) for c in t.columns)
        cls = ' class="baseline"' if i == 0 and p == BASELINE else ""
        body.append(f"<tr{cls}><td>{escape(p[0])}</td><td>{escape(p[1])}</td>{cells}</tr>")
    return (f"<table><thead><tr>{''.join(head1)}</tr><tr>{''.join(head2)}</tr></thead>"
            f"<tbody>{''.join(body)}</tbody></table>")


def _simple_table(header: list[str], rows: list[list[str]], numeric_from: int = 99) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f'<td{" class=num" if i >= numeric_from else ""}>{c}</td>'
                                    for i, c in enumerate(r)) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _png_data_uri(path: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")


def _figure(fig: MatrixFigure | SeedFigure, caption: str) -> str:
    if fig.png is None:
        return ""
    svg = f" (also <code>{escape(fig.svg.name)}</code>)" if fig.svg is not None else ""
    return (f"<figure><img alt=\"{escape(caption)}\" src=\"{_png_data_uri(fig.png)}\">"
            f"<figcaption>{escape(caption)}{svg}</figcaption></figure>")


def _heatmap_image(f: FigureFiles, alt: str) -> str:
    """A heatmap's PNG with its columns named on hover: a box over each column (numbers and strip included) whose
    title is the column's group, placed in percentages of the image so that it follows the image's scaling."""
    img = f"<img alt=\"{escape(alt)}\" src=\"{_png_data_uri(f.png)}\">"
    if f.columns is None:
        return img
    h = f.heatmap
    left, top, width, height = f.columns
    level = h.layout.scoring_level or "scoring group"
    titles = ["avg: s_T, the mean pass rate over the scoring groups"]
    for (label, name), g in zip(column_key(h), h.layout.groups, strict=True):
        about = ", ".join([g.test_type, *([f"{h.layout.parent_level} {g.parent}"] if g.parent else []),
                           *(["excluded from s_T and G"] if g.name in h.excluded else [])])
        titles.append(f"{label}: {level} {name} ({about})")
    step = width / len(titles)
    boxes = "".join(f'<span class="col" style="left:{100 * (left + j * step):.3f}%;top:{100 * top:.3f}%;'
                    f'width:{100 * step:.3f}%;height:{100 * height:.3f}%" title="{escape(t)}"></span>'
                    for j, t in enumerate(titles))
    return f'<div class="heat">{img}{boxes}</div>'


def _cross_html(content: ReportContent) -> list[str]:
    parts: list[str] = []
    if content.cross:
        parts += ["<h2>Cross-suite evaluation</h2>", f'<p class="note">{escape(CROSS_NOTE)}</p>']
        for t, fig in zip(content.cross, content.cross_figures, strict=True):
            rows = []
            for p in t.rows:
                cells = []
                for c in t.columns:
                    cell = t.cell(p, c)
                    mark = f' <span class="{cell.mark}">{MARKERS[cell.mark]}</span>' if cell.mark else ""
                    cells.append(f"{escape(pct(cell.g))}{mark} ({escape(pct(cell.s))})")
                rows.append([escape(p[0]), escape(p[1]), *cells])
            parts += [f"<h3>{escape(t.title)}</h3>",
                      '<p class="note">G on the eval suite (s on the eval suite), %.</p>',
                      _simple_table(["configuration", "method",
                                     *[f"{c} (mapped)" if basis(c) else c for c in t.columns]], rows, numeric_from=2),
                      _figure(fig, f"{t.title}: pass rate per eval group")]
    if content.alignment:
        parts += ["<h2>Capabilities across suites: templates beside the eval suite</h2>",
                  f'<p class="note">{escape(ALIGNMENT_NOTE)}</p>']
        for a in content.alignment:
            header = ["eval group", f"maps to ({a.level})"]
            for c, m, sc in a.models:
                header += [f"{c}/{m} · {sc}: templates", "eval"]
            rows = [[escape(row[0]), escape(row[1]), *[escape(interval_text(a.cell(row, model, side)))
                                                       for model in a.models for side in SIDES]] for row in a.rows]
            parts += [f"<h3>{escape(a.title)}</h3>", '<p class="note">Pass rate, % [95 % interval].</p>',
                      _simple_table(header, rows, numeric_from=2)]
    if content.only:
        parts += ["<h2>Trained on one group alone (only:LEVEL)</h2>", f'<p class="note">{escape(ONLY_NOTE)}</p>']
        parts += [_figure(fig, m.title) for m, fig in zip(content.only, content.only_figures, strict=True)]
    return parts


def _regression_html(content: ReportContent) -> list[str]:
    if not content.regression:
        return []
    from beluga_core.analysis.report.markdown import _rate

    rows = [[escape(r.config), escape(r.method) + (" †" if r.vote_share else ""), escape(r.scenario),
             escape(_rate(r.values.get("iid"), "nfr")), escape(_rate(r.values.get("iid"), "pfr")),
             escape(_rate(r.values.get("suite"), "nfr")), escape(_rate(r.values.get("suite"), "pfr"))]
            for r in content.regression]
    parts = ["<h2>Regression: negative flips</h2>", f'<p class="note">{escape(REGRESSION_NOTE)}</p>',
             _simple_table(["configuration", "method", "scenario", "D_test NFR", "D_test PFR", "suite NFR",
                            "suite PFR"], rows, numeric_from=3)]
    if any(r.vote_share for r in content.regression):
        parts.append(f'<p class="note">{escape(VOTE_NOTE)}</p>')
    parts += [_figure(fig, fig.title) for fig in content.regression_figures]
    return parts


def render_html(content: ReportContent) -> str:
    d, t = content.data, content.table
    parts = [f"<h1>beluga report: {escape(d.store.name)}</h1>", f"<p>Store <code>{escape(str(d.store))}</code>.</p>"]
    parts += [f'<p class="note">{escape(line)}</p>' for line in content.status_lines()]
    rule = (f"with two or more seeds, {escape(difference_rule(t))} (<code>beluga analyze STORE</code> lists every "
            "difference)" if t.n_seeds >= 2 else
            "p &lt; 0.05: two-tailed binomial sign test for i.i.d., paired approximate randomization for G "
            "(<code>beluga analyze STORE</code> lists every test)")
    parts += ["<h2>i.i.d. score and G per scenario (%) — Table 3</h2>",
              '<p class="note">Scores significantly above / below the IID baseline (first row; its suite columns '
              'are G_standard) in <span class="better">green ▲</span> / <span class="worse">red ▼</span>, '
              f"{rule}. <b>Bold</b>: best in the column. Avg.: mean G over all tasks and generalization "
              "scenarios.</p>", *(f'<p class="note">{escape(n)}</p>'
                                       for n in [*interval_notes(t), *missing_pm_notes(t), *crossing_notes(t)]),
              _table3(content)]

    worst = content.worst_groups()
    if worst:
        keys = list(worst)  # heatmap order: task, then scenario order
        several = len(t.tasks) > 1
        rows = []
        for p in t.rows:
            if not any(p in worst[k] for k in keys):
                continue
            cells = []
            for k in keys:
                w = worst[k].get(p)
                cells.append("—" if w is None or w.value is None else f"{pct(w.value)} (#{w.group})")
            rows.append([escape(p[0]), escape(p[1]), *cells])
        parts += ["<h2>Worst-group pass rate per scenario (%)</h2>",
                  '<p class="note">The lowest pass rate among the scoring groups (G exclusions left out), with the '
                  "group's number.</p>",
                  _simple_table(["configuration", "method", *[f"{k[0]}: {k[2]}" if several else k[2] for k in keys]],
                                rows, numeric_from=2)]

    if content.figures:
        parts.append("<h2>Pass rate per scoring group — Figure 1</h2>")
        for f in content.figures:
            h = f.heatmap
            alt = f"{h.task}, scenario {h.scenario}: pass rates per scoring group"
            hover = "; a column names its group on hover" if f.columns is not None else ""
            parts.append(f"<figure>{_heatmap_image(f, alt)}"
                         f"<figcaption>{escape(h.task)} — scenario {escape(h.scenario)} "
                         f"(also <code>{escape(f.svg.name)}</code>){hover}</figcaption></figure>")

    if content.seeds:
        parts.append("<h2>Seeds</h2>")
        parts += [_figure(f, f.title) for f in content.seeds]
    parts += _cross_html(content)
    parts += _regression_html(content)
    if content.fewshot:
        parts += ["<h2>Few-shot ranking of models on unseen groups</h2>", f'<p class="note">{escape(FEWSHOT_NOTE)}</p>']
        for ft in content.fewshot:
            parts += [f"<h3>{escape(ft.title)}</h3>", *(f'<p class="note">{escape(n)}</p>' for n in ft.notes),
                      _simple_table(HEADER, [[escape(c) for c in r] for r in ft.rows], numeric_from=1)]
            if ft.seed_rows:
                parts += [f'<p class="note">{escape(SEEDS_NOTE)}</p>',
                          _simple_table(SEEDS_HEADER, [[escape(c) for c in r] for r in ft.seed_rows], numeric_from=1)]
            if ft.png is not None:
                parts.append(f"<figure><img alt=\"{escape(ft.title)}\" src=\"{_png_data_uri(ft.png)}\"><figcaption>"
                             f"Pairwise ranking accuracy against each pair's true gap</figcaption></figure>")
    if content.failing:
        rows = [[escape(g.config), escape(g.method), escape(g.scenario), escape(g.group), escape(g.attribution),
                 str(g.n_cases), escape(word_list(g.most)), escape(word_list(g.least))] for g in content.failing]
        parts += ["<h2>Attributions of failing groups</h2>", f'<p class="note">{escape(ATTRIBUTION_NOTE)}</p>',
                  _simple_table(["configuration", "method", "scenario", "group", "attribution", "failing cases",
                                 "most attributed", "least attributed"], rows)]

    parts += ["<h2>Degeneracy check</h2>", f'<p class="note">{escape(degeneracy_rule(content))}</p>']
    if content.degeneracy:
        rows = [[escape(r.task), escape(r.config), escape(r.method), escape(r.scenario),
                 escape(format_distribution(r.iid)), escape(format_distribution(r.mft)),
                 f'<span class="flag">collapsed: {escape(", ".join(r.flags))}</span>' if r.flags else ""]
                for r in content.degeneracy]
        parts.append(_simple_table(["task", "configuration", "method", "scenario", "D_test predicted (gold)",
                                    "MFT cases predicted (gold)", "flag"], rows))

    for layout in d.layouts.values():
        if not any(h.suite == layout.suite for h in content.heatmaps):
            continue
        level = layout.scoring_level or "scoring group"
        header = ["#", level, *([layout.parent_level] if layout.parent_level else []), "test type"]
        rows = [[str(g.number), escape(g.name), *([escape(g.parent or "")] if layout.parent_level else []),
                 escape(g.test_type)] for g in layout.groups]
        parts += [f"<h2>Scoring groups of suite {escape(layout.suite)}</h2>", _simple_table(header, rows)]

    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>beluga report: {escape(d.store.name)}</title><style>{STYLE}</style></head>"
            f"<body>{''.join(parts)}</body></html>\n")
