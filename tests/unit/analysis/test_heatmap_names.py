"""Heatmap columns carry their group's name (issue 55): on hover over the column in the HTML report, and in a key
under the figure (PNG / SVG, so the Markdown report's too); the result site names them on hover (site.js)."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pytest
from PIL import Image
from store_builder import report_store

from beluga_core.analysis.report import heatmap_figures as figures
from beluga_core.analysis.report.heatmap_figures import column_key, draw_heatmap, heatmaps
from beluga_core.analysis.report.report_data import read_report_data
from beluga_core.analysis.report.report_files import write_report


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("names") / "toy.duckdb"
    report_store(path, analyse=False)
    return path


class Figures(HTMLParser):
    """Per heatmap figure of the report: its PNG (data URI) and its column boxes (style, title)."""

    def __init__(self) -> None:
        super().__init__()
        self.figures: list[tuple[str, list[tuple[dict[str, float], str]]]] = []
        self.depth = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "div" and a.get("class") == "heat":
            self.figures.append(("", []))
        elif self.figures and tag == "img" and not self.figures[-1][0] and not self.figures[-1][1]:
            self.figures[-1] = (a["src"] or "", [])
        elif self.figures and tag == "span" and a.get("class") == "col":
            box = {k: float(v) for k, v in re.findall(r"([a-z]+):([0-9.]+)%", a["style"] or "")}
            self.figures[-1][1].append((box, a["title"] or ""))


def test_html_report_names_each_column_on_hover(store: Path, tmp_path: Path) -> None:
    path, _ = write_report(store, tmp_path, "html")
    parser = Figures()
    parser.feed(path.read_text(encoding="utf-8"))
    maps = heatmaps(read_report_data(store))
    assert len(parser.figures) == len(maps) == 3
    for h, (_, boxes) in zip(maps, parser.figures, strict=True):
        groups = h.layout.groups
        assert len(boxes) == 1 + len(groups)
        assert boxes[0][1].startswith("avg")
        for (_, title), g in zip(boxes[1:], groups, strict=True):
            assert title.startswith(f"{g.number}: functionality {g.name} ({g.test_type}, class {g.parent}")
        # Tied to its column: the box over column j lies on that column of the PNG, whose strip there has the
        # colour of the group's test type (the bottom of the box is the bottom of the strip).
        png = tmp_path / "figures" / f"heatmap-{h.slug}.png"
        with Image.open(png) as im:
            rgb = np.asarray(im.convert("RGB")).astype(int)
        height, width = rgb.shape[:2]
        types = list(dict.fromkeys(g.test_type for g in groups))
        for (box, _), g in zip(boxes[1:], groups, strict=True):
            x = round((box["left"] + box["width"] / 2) / 100 * width)
            y = round((box["top"] + box["height"]) / 100 * height) - 8
            colour = figures.test_type_colour(g.test_type, types)   # (imported as such, pytest would collect it)
            want = np.array([round(255 * c) for c in matplotlib.colors.to_rgb(colour)])
            assert np.abs(rgb[y, x] - want).max() <= 3, (g.name, rgb[y, x], want)
        left = [b["left"] for b, _ in boxes]
        assert left == sorted(left) and left[0] > 0 and left[-1] + boxes[-1][0]["width"] < 100


def test_the_figure_has_a_key_of_numbers_and_names(store: Path) -> None:
    h = next(h for h in heatmaps(read_report_data(store)) if h.scenario == "functionality")
    assert column_key(h) == [("1", "f1"), ("2", "f3"), ("3", "f2"), ("4", "f4"), ("5", "f5")]
    fig = draw_heatmap(h)
    try:
        texts = [t.get_text() for t in fig.texts]
        for label, name in column_key(h):
            i = texts.index(name)
            assert texts[i - 1] == label          # each name beside its number
        assert "the key below" in fig.axes[1].get_xlabel()
    finally:
        plt.close(fig)
