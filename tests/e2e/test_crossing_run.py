"""Every mark agrees with the sign of what it marks, in every renderer (issue 52): `beluga analyze`, `beluga report` on
the terminal, its Markdown and HTML reports and its site, each run through the CLI on the hand-made stores of
``crossing_stores`` (no training). The figures themselves are checked in tests/unit/analysis/test_crossing.py and
test_report.py; this drives the whole analysis-to-report path five ways per store, the unit tier's slowest test
(18 s), so it runs here."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path

import pytest
from crossing_stores import ROUNDS, STORES
from helpers import query, run_cli

from beluga_core.analysis.refresh import refresh


@pytest.fixture(scope="module", params=sorted(STORES))
def analysed(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    path = STORES[request.param](tmp_path_factory.mktemp(request.param) / "s.duckdb")
    refresh(path, rounds=ROUNDS)
    return request.param, path


# ------------------------------------------------------------------------------------------------ the mark test

MARK = re.compile("[▲▼]")
NUMBER = re.compile(r"[+-−]?\d+\.\d+")
DIRECTION = {"▲": 1, "▼": -1}


def _number(text: str) -> float | None:
    m = NUMBER.search(text)
    return None if m is None else float(m.group(0).replace("−", "-"))


def _sign(x: float) -> int:
    return (x > 0) - (x < 0)


def check_table(rows: list[list[str]], where: str, n_labels: int = 2) -> int:
    """Every marked cell of a table whose rows start with ``n_labels`` label cells (configuration, method) against the
    IID baseline's row: the mark's direction is the sign of (the cell's value − the baseline's in the same column).
    Returns the number of marks checked."""
    base = next((r for r in rows if r[0].strip() == "iid" and (n_labels == 1 or r[1].strip() == "vanilla")), None)
    n = 0
    for r in rows:
        for i, cell in enumerate(r[n_labels:], start=n_labels):
            for mark in MARK.findall(cell):
                assert base is not None, f"{where}: a mark {mark} in a table without the IID baseline's row: {r}"
                value, reference = _number(cell), _number(base[i])
                assert value is not None and reference is not None, f"{where}: {mark} on {cell!r} beside {base[i]!r}"
                assert _sign(value - reference) == DIRECTION[mark], \
                    f"{where}: {r[:n_labels]} column {i}: {cell!r} marked {mark} against the baseline's {base[i]!r}"
                n += 1
    return n


def analyze_marks(out: str) -> dict[str, int]:
    """``beluga analyze``'s tables (rich, one row a line at a wide console): a mark in a Δ cell has the sign of that Δ;
    "higher / lower: resolved" the sign of the row's Δ, and its hierarchical interval excludes 0 on that side."""
    counts = {"mark": 0, "resolved": 0}
    header: list[str] = []
    for line in out.splitlines():
        if "┃" in line:
            header = [c.strip() for c in line.split("┃")[1:-1]]
            continue
        if "│" not in line or not header:
            continue
        cells = dict(zip(header, [c.strip() for c in line.split("│")[1:-1]], strict=False))
        for name, cell in cells.items():
            for mark in MARK.findall(cell):
                assert name.startswith("Δ"), f"a mark outside a Δ column: {line}"
                value = _number(cell)
                assert value is not None and _sign(value) == DIRECTION[mark], f"analyze: {cell!r} in {line}"
                counts["mark"] += 1
        ordering = cells.get("ordering", "")
        if "resolved" in ordering and "not resolved" not in ordering:
            direction = 1 if ordering.startswith("higher") else -1
            delta = _number(cells["Δ"])
            lo, hi = (float(x.replace("−", "-")) for x in NUMBER.findall(cells["hierarchical"]))
            assert delta is not None and _sign(delta) == direction, f"analyze: {ordering} on Δ {cells['Δ']}: {line}"
            assert (lo > 0 if direction > 0 else hi < 0), f"analyze: {ordering} on the interval [{lo}, {hi}]: {line}"
            counts["resolved"] += 1
    return counts


def terminal_marks(out: str, pairs: set[tuple[str, str]]) -> int:
    """``beluga report``'s tables (no rules between columns): per table, each row's values in column order."""
    n = 0
    configs = {c for c, _ in pairs}
    table: list[list[str]] = []
    title = ""

    def flush() -> int:
        return check_table(table, f"terminal {title!r}", n_labels=1) if table else 0

    for line in out.splitlines():
        words = line.split()
        if words and words[0] in configs:
            # The label column(s), then one value per column: "71.7", "71.7±1.2▲", "—" († after a partial value).
            rest = line.split(maxsplit=1)[1] if len(words) > 1 else ""
            if len({m for _, m in pairs}) > 1:
                rest = rest.split(maxsplit=1)[1]
            values = [m.group(0) for m in re.finditer(r"(—|\d+\.\d)(±\d+\.\d)?[▲▼]?", rest)]
            table.append([words[0], *values])
        elif line.strip() and not set(line.strip()) <= set("─━ "):
            if any(w in ("configuration", "config") for w in words):
                continue   # a header
            n += flush()
            table, title = [], line.strip()
    n += flush()
    assert "▲" not in out.replace("▲ / ▼", "") or n, "terminal: marks printed but none checked"
    return n


class _Tables(HTMLParser):
    """Every <table> of a page as rows of cell texts."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self._row: list[str] | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self._row = []
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._row is not None and self._cell is not None:
            self._row.append("".join(self._cell))
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self.tables[-1].append(self._row)
            self._row = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def html_marks(text: str, where: str) -> int:
    parser = _Tables()
    parser.feed(text)
    return sum(check_table(t, f"{where} table {i}") for i, t in enumerate(parser.tables))


def markdown_marks(text: str) -> int:
    n, table = 0, []
    for line in [*text.splitlines(), ""]:
        if line.startswith("|"):
            table.append([c.strip() for c in line.strip().strip("|").split(" | ")])
        elif table:
            n += check_table(table, "markdown")
            table = []
    return n


def site_marks(site: Path) -> int:
    """The site's data shards: Table 3 (cells with their text and mark) and every other table (rows of texts)."""
    n = 0
    for shard in sorted((site / "data").rglob("*.js")):
        text = shard.read_text()
        m = re.match(r"BELUGA\.add\((\"[^\"]*\"),(.*)\);\s*$", text, re.S)
        if m is None:
            continue
        data = json.loads(m.group(2))

        def walk(x: object, path: str) -> int:
            found = 0
            if isinstance(x, dict):
                if "rows" in x and isinstance(x["rows"], list) and x["rows"] and isinstance(x["rows"][0], dict) \
                        and "cells" in x["rows"][0]:
                    for raw in x["rows"]:   # the mark field and the text's symbol agree
                        for c in raw["cells"]:
                            symbols = MARK.findall(c["t"])
                            assert symbols == ([{"better": "▲", "worse": "▼"}[c["mark"]]] if c["mark"] else []), \
                                f"site {path}: {c}"
                    found += check_table([[r["config"], r["method"], *[c["t"] for c in r["cells"]]] for r in x["rows"]],
                                         f"site {path}")
                elif "rows" in x and isinstance(x["rows"], list) and x["rows"] and isinstance(x["rows"][0], list):
                    rows = [[c if isinstance(c, str) else str(c[0]) if isinstance(c, list) and c else str(c)
                             for c in r] for r in x["rows"]]
                    found += check_table(rows, f"site {path}")
                else:
                    found += sum(walk(v, f"{path}.{k}") for k, v in x.items())
            elif isinstance(x, list):
                found += sum(walk(v, f"{path}[{i}]") for i, v in enumerate(x))
            return found

        n += walk(data, shard.name)
    return n


def test_every_mark_agrees_with_the_sign_of_what_it_marks(analysed: tuple[str, Path], tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Every ▲ / ▼ and "higher / lower: resolved" that `beluga analyze`, `beluga report` (terminal), its Markdown and
    HTML reports and its site print, on the store that printed "ΔG −2.2 ▲" among others."""
    name, store = analysed
    monkeypatch.setenv("COLUMNS", "400")   # rich: one table row a line
    # The marks are the subject, not the figures (tests/unit/analysis/test_report.py draws those): the reports write
    # empty image files instead of rendering each heatmap twice per format (most of this test's time).
    monkeypatch.setattr("matplotlib.figure.Figure.savefig", lambda self, fname, **kw: Path(fname).write_bytes(b""))
    pairs = {(c, m) for c, m in query(store, "SELECT DISTINCT config, method FROM models")}
    seen: dict[str, int] = {}
    wrong: dict[str, str] = {}

    def check(renderer: str, count: Callable[[], int]) -> None:
        try:
            seen[renderer] = count()
        except AssertionError as exc:   # every renderer is checked, and the failure names all that are wrong
            wrong[renderer] = str(exc).splitlines()[0]

    a, b = {"plain": ("up", "down"), "partial": ("part", "iid")}.get(name, ("lora", "weak"))
    code, out, err = run_cli(capsys, "analyze", store, "--rounds", str(ROUNDS), "--compare", a, b)
    assert code == 0, err
    check("analyze", lambda: analyze_marks(out)["mark"])
    check("analyze resolved", lambda: analyze_marks(out)["resolved"])

    code, terminal, err = run_cli(capsys, "report", store)
    assert code == 0, err
    check("terminal", lambda: terminal_marks(terminal, pairs))
    for fmt in ("md", "html", "site"):
        code, _, err = run_cli(capsys, "report", store, "--format", fmt, "--out", tmp_path / fmt)
        assert code == 0, err
    check("markdown", lambda: markdown_marks((tmp_path / "md" / "report.md").read_text()))
    check("html", lambda: html_marks((tmp_path / "html" / "report.html").read_text(), "html"))
    check("site", lambda: site_marks(tmp_path / "site") + sum(html_marks(p.read_text(), f"site {p.name}")
                                                              for p in (tmp_path / "site").rglob("*.html")))
    assert not wrong, wrong
    # Not vacuous: every renderer printed marks to check (and the analyze over seeds resolved some orderings). In
    # the partial store Table 3 sets part's 50.0 (its 40 cases) beside the baseline's 62.0 (every case): no mark there.
    renderers = ("analyze",) if name == "partial" else ("analyze", "terminal", "markdown", "html", "site")
    assert all(seen[k] > 0 for k in renderers), seen
    if name == "crossing-3-seeds":
        assert seen["analyze resolved"] > 0, seen
