"""The report as Markdown: sections as ``##`` headings, tables as pipe tables, figures linked as files under
figures/ (PNG shown, SVG linked). Lays out section values only (``section``)."""

from __future__ import annotations

from pathlib import Path

from beluga_core.analysis.report.section import MARKERS, PARTIAL, Block, Cell, Figure, Paragraph, Table
from beluga_core.analysis.report.sections import Report


def _esc(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _cell(cell: Cell) -> str:
    text = _esc(cell.text)
    if cell.pm is not None:
        text += f" ± {cell.pm}"
    if cell.bold or cell.flag:
        text = f"**{text}**"
    if cell.mark:
        text += f" {MARKERS[cell.mark]}"
    if cell.partial:
        text += f" {PARTIAL}"
    return text + _esc(cell.after)


def _table(t: Table) -> list[str]:
    lines = [f"### {_esc(t.title)}", ""] if t.title else []
    lines += [*t.notes, ""] if t.notes else []
    if not t.rows:
        return [*lines, t.empty] if t.empty else lines[:-1]
    groups = {c.group for c in t.columns if c.group is not None}
    header = [f"{c.group}: {c.header}" if c.group is not None and len(groups) > 1 else c.header for c in t.columns]
    align = ["---" if i < t.numeric_from else "---:" for i in range(len(header))]
    lines += ["| " + " | ".join(_esc(h) for h in header) + " |", "| " + " | ".join(align) + " |"]
    return lines + ["| " + " | ".join(_cell(c) for c in r) + " |" for r in t.rows]


def _figure(f: Figure, out_dir: Path) -> list[str]:
    lines = [f"### {_esc(f.title)}", ""] if f.title else []
    png, svg = f.png.relative_to(out_dir).as_posix(), f.svg.relative_to(out_dir).as_posix()
    return [*lines, f"![{_esc(f.alt)}]({png})", "", f"[SVG]({svg})"]


def _block(b: Block, out_dir: Path) -> list[str]:
    if isinstance(b, Table):
        return _table(b)
    if isinstance(b, Figure):
        return _figure(b, out_dir)
    if isinstance(b, Paragraph):
        return list(b.lines)
    return []


def render_markdown(report: Report, out_dir: Path) -> str:
    lines = [f"# {report.title}"]
    for s in report.sections:
        if not s.blocks and not s.notes:
            continue
        if s.title:
            lines += ["", f"## {s.title}"]
        if s.notes:
            lines += ["", *s.notes]
        for b in s.blocks:
            chunk = _block(b, out_dir)
            if chunk:
                lines += ["", *chunk]
    return "\n".join(lines) + "\n"
