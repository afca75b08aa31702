"""The report as one self-contained HTML page: inline CSS, figures embedded as base64 PNG, no scripts, so it
opens from disk in any browser without a server. Lays out section values only (``section``)."""

from __future__ import annotations

import base64
import re
from html import escape
from pathlib import Path

from beluga_core.analysis.report.section import MARKERS, PARTIAL, Block, Cell, Figure, Paragraph, Table
from beluga_core.analysis.report.sections import Report

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
_INLINE = [(re.compile(r"\*\*(.+?)\*\*"), r"<b>\1</b>"), (re.compile(r"`([^`]+)`"), r"<code>\1</code>")]


def inline(text: str) -> str:
    """A note's text as HTML: escaped, with its Markdown marks for bold and code rendered."""
    out = escape(text)
    for pattern, repl in _INLINE:
        out = pattern.sub(repl, out)
    return out


def _cell(cell: Cell, numeric: bool) -> str:
    text = escape(cell.text)
    if cell.pm is not None:
        text += f' <span class="pm">± {escape(cell.pm)}</span>'
    if cell.mark:
        text += f" {MARKERS[cell.mark]}"
    if cell.bold:
        text = f"<b>{text}</b>"
    if cell.partial:
        text += f" {PARTIAL}"
    text += escape(cell.after)
    if cell.flag:
        text = f'<span class="flag">{text}</span>'
    if not numeric:
        return f"<td>{text}</td>"
    cls = "num" + (f" {cell.mark}" if cell.mark else "")
    return f'<td class="{cls}"' + (f' title="{escape(cell.tip)}"' if cell.tip else "") + f">{text}</td>"


def _head(t: Table) -> str:
    if not any(c.group for c in t.columns):
        return "<tr>" + "".join(f"<th>{escape(c.header)}</th>" for c in t.columns) + "</tr>"
    first: list[str] = []
    second: list[str] = []
    spans: dict[str, int] = {}
    for c in t.columns:
        if c.group is not None:
            spans[c.group] = spans.get(c.group, 0) + 1
    for c in t.columns:
        if c.group is None:
            first.append(f'<th rowspan="2">{escape(c.header)}</th>')
        else:
            if c.group in spans:
                first.append(f'<th colspan="{spans.pop(c.group)}">{escape(c.group)}</th>')
            second.append(f"<th>{escape(c.header)}</th>")
    return f"<tr>{''.join(first)}</tr><tr>{''.join(second)}</tr>"


def _table(t: Table) -> list[str]:
    parts = [f"<h3>{escape(t.title)}</h3>"] if t.title else []
    parts += [f'<p class="note">{inline(n)}</p>' for n in t.notes]
    if not t.rows:
        return parts + ([f"<p>{escape(t.empty)}</p>"] if t.empty else [])
    body = []
    for i, r in enumerate(t.rows):
        cls = ' class="baseline"' if i == 0 and t.baseline_first else ""
        body.append(f"<tr{cls}>" + "".join(_cell(c, j >= t.numeric_from) for j, c in enumerate(r)) + "</tr>")
    return [*parts, f"<table><thead>{_head(t)}</thead><tbody>{''.join(body)}</tbody></table>"]


def _png_data_uri(path: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")


def _figure(f: Figure) -> list[str]:
    """A figure's PNG; with ``regions``, a box over each column of its ``box`` whose title names it on hover,
    placed in percentages of the image so that it follows the image's scaling."""
    img = f"<img alt=\"{escape(f.alt)}\" src=\"{_png_data_uri(f.png)}\">"
    if f.regions and f.box is not None:
        left, top, width, height = f.box
        step = width / len(f.regions)
        boxes = "".join(f'<span class="col" style="left:{100 * (left + j * step):.3f}%;top:{100 * top:.3f}%;'
                        f'width:{100 * step:.3f}%;height:{100 * height:.3f}%" title="{escape(t)}"></span>'
                        for j, t in enumerate(f.regions))
        img = f'<div class="heat">{img}{boxes}</div>'
    caption = (f"{escape(f.caption)} " if f.caption else "") + f"(also <code>{escape(f.svg.name)}</code>)"
    if f.regions and f.hover_note:
        caption += f"; {escape(f.hover_note)}"
    heading = [f"<h3>{escape(f.title)}</h3>"] if f.title else []
    return [*heading, f"<figure>{img}<figcaption>{caption}</figcaption></figure>"]


def _block(b: Block) -> list[str]:
    if isinstance(b, Table):
        return _table(b)
    if isinstance(b, Figure):
        return _figure(b)
    if isinstance(b, Paragraph):
        cls = "" if b.kind == "plain" else ' class="note"'
        return [f"<p{cls}>{inline(line)}</p>" for line in b.lines]
    return []


def render_html(report: Report) -> str:
    parts = [f"<h1>{escape(report.title)}</h1>"]
    for s in report.sections:
        if not s.blocks and not s.notes:
            continue
        if s.title:
            parts.append(f"<h2>{escape(s.title)}</h2>")
        parts += [f'<p class="note">{inline(n)}</p>' for n in s.notes]
        for b in s.blocks:
            parts += _block(b)
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{escape(report.title)}</title><style>{STYLE}</style></head>"
            f"<body>{''.join(parts)}</body></html>\n")
