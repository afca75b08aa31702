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
    b.record_test_split()
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


def partial_store(path: Path) -> Path:
    """The toy suite's functionality scenario with the folds of f1 and f2 only (the others missing or failed): on its
    40 cases 'part' passes half where the baseline passes a fifth, while the baseline passes 90 % of f3–f5's."""
    cases = make_cases(per_group=20)
    b = StoreBuilder(path, cases)
    base = {c.case_id: "pass" if int(c.case_id.split("-")[1]) < (4 if c.case_id[:2] in ("f1", "f2") else 18)
            else "fail" for c in cases}
    b.add("iid", "vanilla", "standard", base, [i % 5 != 0 for i in range(N_IID)])
    b.add("part", "vanilla", "seen", base, [i % 5 != 0 for i in range(N_IID)])
    b.add("part", "vanilla", "functionality",
          {c.case_id: "pass" if int(c.case_id.split("-")[1]) < 10 else "fail" for c in cases if c.case_id[:2] in
           ("f1", "f2")})
    return path


STORES: dict[str, Callable[[Path], Path]] = {
    "crossing-1-seed": crossing_store,
    "crossing-3-seeds": lambda p: crossing_store(p, (42, 43, 44)),
    "plain": plain_store,
    "partial": partial_store,
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


# ------------------------------------------------------------------------------------------------ known answers

# s_T by hand (PLAN): over every case, and on the cases with a target (f1, f2, f4; f3 has none).
S_ALL = {"iid": (0.5 + 0.5 + 1.0 + 30 / 40) / 4, "lora": (0.8 + 0.8 + 0.3 + 22 / 40) / 4, "weak": 0.6}
S_TARGET = {"iid": 0.5, "lora": 0.8, "weak": 0.6}                  # the seen (standard) scenario on target cases
S_HELD = {"lora": 0.65, "weak": 0.35}                              # the target scenario
S_IID = {"iid": 0.8, "lora": 0.8, "weak": 0.6}


@pytest.fixture(scope="module")
def one_seed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = crossing_store(tmp_path_factory.mktemp("one") / "s.duckdb")
    refresh(path, rounds=ROUNDS)
    return path


def _dicts(store: Path, sql: str) -> list[dict]:
    import duckdb

    con = duckdb.connect(str(store), read_only=True)
    try:
        cur = con.execute(sql)
        names = [d[0] for d in cur.description]
        return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
    finally:
        con.close()


def test_the_crossing_level_and_the_seen_and_standard_scores_on_its_cases(one_seed: Path) -> None:
    assert query(one_seed, "SELECT * FROM crossing_levels") == [(TASK, "hate", "target")]
    rows = {(r["config"], r["cases_of"]): r for r in _dicts(one_seed, """
        SELECT * FROM g_scores_on_cases WHERE scenario IN ('seen', 'standard')""")}
    # Every case, as g_scores has them; on the target cases: 60 of the 100, in 3 of the 4 functionalities.
    for config in ("iid", "lora", "weak"):
        every, target = rows[(config, None)], rows[(config, "target")]
        assert (every["s_suite"], every["n_cases"], every["n_groups"]) == (pytest.approx(S_ALL[config]), 100, 4)
        assert (target["s_suite"], target["n_cases"], target["n_groups"]) == (pytest.approx(S_TARGET[config]), 60, 3)
        assert target["g"] == pytest.approx(g(S_TARGET[config], S_IID[config]))
    # Held-out scenarios have no restricted rows; the plain views are the every-case rows.
    assert query(one_seed, """SELECT count(*) FROM g_scores_on_cases
                              WHERE cases_of IS NOT NULL AND scenario = 'target'""") == [(0,)]
    assert query(one_seed, "SELECT count(*) FROM g_scores") == \
        query(one_seed, "SELECT count(*) FROM g_scores_on_cases WHERE cases_of IS NULL")
    rates = {r[0]: r[1] for r in query(one_seed, """SELECT scoring_group, pass_rate FROM pass_rates_on_cases
                                                   WHERE config = 'iid' AND cases_of = 'target'""")}
    assert rates == {"f1": 0.5, "f2": 0.5, "f4": 0.5}


def test_the_difference_and_test_against_the_baseline_are_on_the_shared_cases(one_seed: Path) -> None:
    sig = {(r["config"], r["scenario"]): r
           for r in _dicts(one_seed, "SELECT * FROM significance WHERE scope = 'replicate'")}
    lora = sig[("lora", "target")]
    # Over every case the baseline's G would be g(0.6875, 0.8) = 0.7395 and ΔG −2.2; on the 60 shared cases it is +10.2.
    assert lora["base_g"] == pytest.approx(g(S_TARGET["iid"], S_IID["iid"]))
    assert lora["g"] == pytest.approx(g(S_HELD["lora"], S_IID["lora"]))
    assert lora["delta_g"] == pytest.approx(g(0.65, 0.8) - g(0.5, 0.8)) and lora["delta_g"] > 0
    assert (lora["g_mark"], lora["status"]) == ("better", "current") and lora["p_g"] < 0.05
    weak = sig[("weak", "target")]
    assert weak["delta_g"] == pytest.approx(g(0.35, 0.6) - g(0.5, 0.8)) and weak["g_mark"] == "worse"
    # A scenario of every case against the baseline over every case, as before.
    assert sig[("lora", "seen")]["delta_g"] == pytest.approx(g(S_ALL["lora"], 0.8) - g(S_ALL["iid"], 0.8))
    # The stored test is of the same difference, on the same 60 cases.
    (test,) = _dicts(one_seed, """SELECT * FROM significance_tests WHERE scope = 'replicate' AND config = 'lora'
                                  AND scenario = 'target'""")
    assert (test["n_cases"], test["s_suite"], test["base_s_suite"]) == (60, pytest.approx(0.65), pytest.approx(0.5))
    assert test["delta_g"] == pytest.approx(lora["delta_g"], abs=1e-12)
    # The Avg. (both scenarios, one task) is the mean of the two differences, as its pooled test's.
    (avg,) = _dicts(one_seed, """SELECT * FROM significance WHERE scope = 'mean_over_tasks' AND config = 'lora'
                                 AND scenario IS NULL""")
    expected = (lora["delta_g"] + sig[("lora", "seen")]["delta_g"]) / 2
    assert avg["delta_g"] == pytest.approx(expected)
    (pooled,) = _dicts(one_seed, """SELECT delta_g FROM significance_tests WHERE scope = 'mean_over_tasks'
                                    AND config = 'lora' AND scenario IS NULL""")
    assert pooled["delta_g"] == pytest.approx(expected)


def test_table3_shows_the_baseline_and_seen_on_the_crossing_levels_cases(one_seed: Path) -> None:
    rows = {(r["kind"], r["config"], r["scenario"]): r for r in _dicts(one_seed, "SELECT * FROM table3")}
    base = rows[("g", "iid", "target")]
    assert (base["value"], base["s_suite"], base["source_scenario"]) == \
        (pytest.approx(g(0.5, 0.8)), pytest.approx(0.5), "standard")
    assert rows[("g", "iid", "seen")]["value"] == pytest.approx(g(S_ALL["iid"], 0.8))   # every case, as before
    assert rows[("g", "lora", "target")]["s_suite"] == pytest.approx(S_HELD["lora"])
    for config in ("iid", "lora", "weak"):
        seen = rows[("cases", config, "target")]
        assert (seen["value"], seen["s_suite"]) == (pytest.approx(g(S_TARGET[config], S_IID[config])),
                                                    pytest.approx(S_TARGET[config]))
        assert seen["source_scenario"] == ("standard" if config == "iid" else "seen")
    # The baseline's Avg. is the mean of its columns (the target one on the target cases).
    assert rows[("avg", "iid", None)]["value"] == pytest.approx((g(S_ALL["iid"], 0.8) + g(0.5, 0.8)) / 2)
    # Beside each other on the same cases, seen is above the held-out targets (0.8 against 0.65), the reverse of
    # every case's seen (0.6125) against them.
    assert rows[("cases", "lora", "target")]["s_suite"] > rows[("g", "lora", "target")]["s_suite"] > S_ALL["lora"]


def test_the_reports_place_and_explain_the_restricted_columns(one_seed: Path, tmp_path: Path) -> None:
    from beluga_core.analysis.report.content import worst_groups_of
    from beluga_core.analysis.report.figures import heatmaps
    from beluga_core.analysis.report.report_data import read_report_data
    from beluga_core.analysis.report.table3 import Column, build_table3, crossing_notes

    data = read_report_data(one_seed)
    table = build_table3(data)
    assert [c.label for c in table.task_columns(TASK)] == ["i.i.d.", "G seen", "G target", "G seen (target cases)"]
    seen_on_target = Column(TASK, "seen", "target")
    assert table.cell(("lora", "vanilla"), seen_on_target).value == pytest.approx(0.8)
    assert table.cell(("lora", "vanilla"), seen_on_target).mark is None       # not a comparison with the baseline
    # The baseline's restricted figures carry no ± (the stored intervals are over every case).
    assert table.cell(("iid", "vanilla"), Column(TASK, "target")).pm is None
    assert table.cell(("iid", "vanilla"), Column(TASK, "seen")).pm is not None
    assert table.cell(("lora", "vanilla"), Column(TASK, "target")).mark == "better"
    (note,) = crossing_notes(table)
    assert note.startswith("target: a crossing level") and "'seen (target cases)'" in note
    maps = {h.scenario: h for h in heatmaps(data)}
    target, seen = maps["target"], maps["seen"]
    assert target.cases_of == "target" and seen.cases_of is None
    i = target.rows.index(("iid", "vanilla"))
    assert target.values[i, 0] == pytest.approx(0.5)
    assert list(target.values[i, 1:]) == pytest.approx([0.5, 0.5, float("nan"), 0.5], nan_ok=True)
    assert list(seen.values[seen.rows.index(("iid", "vanilla")), 1:]) == pytest.approx([0.5, 0.5, 1.0, 0.75])
    worst = worst_groups_of(data, [target])
    assert worst[(TASK, "hate", "target")][("iid", "vanilla")].value == pytest.approx(0.5)


def test_intervals_over_seeds_pair_the_shared_cases(tmp_path: Path) -> None:
    store = crossing_store(tmp_path / "s.duckdb", (42, 43, 44))
    refresh(store, rounds=ROUNDS)
    diff = {r["statistic"]: r for r in _dicts(store, """SELECT * FROM replicate_summary WHERE config = 'lora'
                                                        AND scenario = 'target' AND base_config = 'iid'""")}
    # lora's f2 threshold 13, 14, 15: s_T 0.65, 0.6667, 0.6833 on the 60 cases with a target, the baseline 0.5 there.
    s_held = np.array([(0.65 + (13 + i) / 20 + 0.65) / 3 for i in range(3)])
    for statistic, per_seed in (("s_suite", s_held - 0.5), ("g", np.array([g(s, 0.8) - g(0.5, 0.8) for s in s_held]))):
        row = diff[statistic]
        assert row["n_cases"] == 60 and row["n_seeds"] == 3
        half = stats.t.ppf(0.975, 2) * per_seed.std(ddof=1) / math.sqrt(3)
        assert (row["mean"], row["seed_lo"], row["seed_hi"]) == pytest.approx(
            (per_seed.mean(), per_seed.mean() - half, per_seed.mean() + half))
        assert row["ordering"] == "A > B"
    # Over every case the old pairing gave lora's 0.65–0.68 against the baseline's 0.6875: a "lower" verdict.
    assert diff["s_suite"]["mean"] > 0


def _rep(case_ids: list[str], groups: list[str], passed: list[list[int]]) -> Replicates:
    names = tuple(sorted(set(groups)))
    p = np.array(passed, dtype=float)
    return Replicates(tuple(range(len(passed))), names, np.array([names.index(x) for x in groups]), p,
                      np.ones_like(p), None, case_ids=tuple(case_ids))


def test_aligned_keeps_the_cases_both_cells_have() -> None:
    # A: a crossing level's scenario, cases a1, a2 (group f1) and b1 (f2); B: the baseline, those and c1 (f3).
    a = _rep(["a1", "a2", "b1"], ["f1", "f1", "f2"], [[1, 1, 1], [1, 0, 1]])
    b = _rep(["a1", "a2", "b1", "c1"], ["f1", "f1", "f2", "f3"], [[0, 1, 0, 1], [0, 0, 0, 1]])
    xa, xb = aligned(a, b)
    assert xa.case_ids == xb.case_ids == ("a1", "a2", "b1") and xa.groups == xb.groups == ("f1", "f2")
    assert xb.passed.tolist() == [[0, 1, 0], [0, 0, 0]]
    # s_T: A (1 + 1) / 2 and (0.5 + 1) / 2; B on the same cases (0.5 + 0) / 2 and 0: differences 0.75, 0.75 (the
    # union would have counted B's c1 and given 1 − 0.5 = 0.5 and 0.75 − 0.333 = 0.417).
    assert (xa.per_seed("s_suite") - xb.per_seed("s_suite")).tolist() == pytest.approx([0.75, 0.75])
    ivs = difference_intervals(a, b, ["s_suite"], 200, np.random.default_rng(0))
    assert ivs["s_suite"]["seed"].mean == pytest.approx(0.75)
    with pytest.raises(ValueError, match="no case"):
        aligned(a, _rep(["z"], ["f9"], [[1], [1]]))


def test_a_held_out_scenario_with_folds_missing_is_compared_on_the_cases_it_has(tmp_path: Path) -> None:
    """Not a crossing level, the same rule: the Δ beside a test is the tested one; Table 3, whose baseline figure is
    over every case, drops a mark its two figures contradict."""
    from beluga_core.analysis.report.report_data import read_report_data
    from beluga_core.analysis.report.table3 import Column, build_table3

    store = partial_store(tmp_path / "s.duckdb")
    refresh(store, rounds=ROUNDS)
    (row,) = _dicts(store, "SELECT * FROM significance WHERE scope = 'replicate' AND scenario = 'functionality'")
    # On f1 and f2: 0.5 against 0.2 (over every case the baseline's 0.62 would make it −0.12).
    assert row["delta_g"] == pytest.approx(g(0.5, 0.8) - g(0.2, 0.8))
    assert row["g_mark"] == "better" and row["p_g"] < 0.05
    (test,) = _dicts(store, """SELECT delta_g, n_cases FROM significance_tests WHERE scope = 'replicate'
                               AND scenario = 'functionality'""")
    assert (test["n_cases"], test["delta_g"]) == (40, pytest.approx(row["delta_g"], abs=1e-12))
    table = build_table3(read_report_data(store, figures=False))
    cell = table.cell(("part", "vanilla"), Column("sentiment", "functionality"))
    base = table.cell(("iid", "vanilla"), Column("sentiment", "functionality"))
    assert cell.partial and cell.value == pytest.approx(g(0.5, 0.8)) and base.value == pytest.approx(g(0.62, 0.8))
    assert cell.mark is None
