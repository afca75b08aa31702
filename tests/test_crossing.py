"""Like for like at crossing levels, and marks that agree with their differences (issue 52).

A crossing level's scenario (a level some cases have no group at: `crossing_levels`) scores only the cases with a group
there, so every figure set beside it is computed on those cases too: its Δ, test and interval against the IID baseline,
the baseline's G and s_T in its column, and the seen scenario's on the same cases. The hand-made store below is the one
that printed "ΔG −2.2 ▲" (the issue's "−0.8 ▲"): a scenario whose difference from the baseline is negative over every
case and positive, significantly, on the cases it scores.

Its outcomes are laid out so that every figure is a fraction by hand (CROSSING_TARGETS in store_builder): per
functionality 20 cases with a target (f1, f2, f4; f3 none) and 20 without (f3, f4). A model passes a case with a target
iff its index j < the threshold of its plan, one without iff its index k < the other threshold.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from helpers import query, run_cli
from scipy import stats
from store_builder import (
    CROSSING_LEVEL,
    CROSSING_TARGETS,
    StoreBuilder,
    crossing_cases,
    crossing_suite_row,
    make_cases,
)

from beluga_core.analysis.refresh import refresh
from beluga_core.analysis.replicates.intervals import Replicates, aligned, difference_intervals

ROUNDS = 2000
TASK = "hate"
N_IID = 100
# (config, scenario) → (passing threshold among the cases with a target, among those without; None: not scored).
PLAN: dict[tuple[str, str], tuple[int, int | None]] = {
    ("iid", "standard"): (10, 20),     # 0.5 with a target, 1.0 without
    ("lora", "seen"): (16, 6),         # 0.8 / 0.3
    ("lora", "target"): (13, None),    # 0.65 on the only cases it scores
    ("weak", "seen"): (12, 12),        # 0.6 / 0.6
    ("weak", "target"): (7, None),     # 0.35
}
# D_test: the baseline and lora right on 80 of 100 examples (the same ones), weak on 60 of them.
CORRECT = {"iid": [i % 5 != 0 for i in range(N_IID)], "lora": [i % 5 != 0 for i in range(N_IID)],
           "weak": [i % 5 not in (0, 1) for i in range(N_IID)]}


def g(s: float, s_iid: float) -> float:
    return 2 * s * s_iid / (s + s_iid)


def outcomes(with_target: int, without: int | None, *, bump: dict[str, int] | None = None) -> dict[str, str]:
    """Every case's outcome under a plan's thresholds (``bump``: a functionality's threshold raised by so many)."""
    out = {}
    for c in crossing_cases():
        f = c.groups["functionality"]
        j = int(c.case_id.split("-")[1][1:])
        if CROSSING_LEVEL in c.groups:
            out[c.case_id] = "pass" if j < with_target + (bump or {}).get(f, 0) else "fail"
        elif without is not None:
            out[c.case_id] = "pass" if j < without else "fail"
    return out


def crossing_store(path: Path, seeds: tuple[int, ...] = (42,)) -> Path:
    """The store of the module docstring: lora's target scenario raises f2's threshold by one per further seed, so its
    differences vary a little between seeds."""
    b = StoreBuilder(path, crossing_cases(), row=crossing_suite_row())
    for i, seed in enumerate(seeds):
        for (config, scenario), (with_target, without) in PLAN.items():
            bump = {"f2": i} if (config, scenario) == ("lora", "target") else None
            b.add(config, "vanilla", scenario, outcomes(with_target, without, bump=bump),
                  CORRECT[config] if scenario in ("standard", "seen") else None, task=TASK, seed=seed)
    return path


def plain_store(path: Path) -> Path:
    """A store without a crossing level, with marks either way: 'up' passes what the baseline fails, 'down' fails what
    it passes (and is wrong on more D_test examples)."""
    cases = make_cases(per_group=20)
    b = StoreBuilder(path, cases)
    base = {c.case_id: "pass" if i % 2 else "fail" for i, c in enumerate(cases)}
    b.add("iid", "vanilla", "standard", base, [i % 4 != 0 for i in range(N_IID)])
    for scenario in ("seen", "functionality"):
        b.add("up", "vanilla", scenario, {k: "pass" for k in base}, [True] * N_IID if scenario == "seen" else None)
        b.add("down", "vanilla", scenario, {k: "fail" if i % 3 else v for i, (k, v) in enumerate(base.items())},
              [i % 2 == 0 for i in range(N_IID)] if scenario == "seen" else None)
    return path


STORES: dict[str, Callable[[Path], Path]] = {
    "crossing-1-seed": crossing_store,
    "crossing-3-seeds": lambda p: crossing_store(p, (42, 43, 44)),
    "plain": plain_store,
}


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
    pairs = {(c, m) for c, m in query(store, "SELECT DISTINCT config, method FROM models")}
    seen: dict[str, int] = {}
    wrong: dict[str, str] = {}

    def check(renderer: str, count: Callable[[], int]) -> None:
        try:
            seen[renderer] = count()
        except AssertionError as exc:   # every renderer is checked, and the failure names all that are wrong
            wrong[renderer] = str(exc).splitlines()[0]

    a, b = ("lora", "weak") if "crossing" in name else ("up", "down")
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
    # Not vacuous: every renderer printed marks to check (and the analyze over seeds resolved some orderings).
    assert all(seen[k] > 0 for k in ("analyze", "terminal", "markdown", "html", "site")), seen
    if name == "crossing-3-seeds":
        assert seen["analyze resolved"] > 0, seen
