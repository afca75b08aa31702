"""``beluga report``: the terminal table, the Markdown and HTML reports, the heatmaps, the degeneracy check,
reports of a run in progress and of suites with other levels, and the headless-Chromium screenshot."""

from __future__ import annotations

import io
import random
import re
import statistics
from datetime import datetime
from html.parser import HTMLParser
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pytest
from PIL import Image
from rich.console import Console
from store_builder import (
    FUNCTIONALITIES,
    StoreBuilder,
    make_cases,
    mft_gold,
    perturb,
    random_outcomes,
    report_store,
)

from beluga_core.analysis.refresh import refresh
from beluga_core.analysis.report.degeneracy_rows import degeneracy_rows, format_distribution
from beluga_core.analysis.report.g_table_data import AVG, IID, Column, build_g_table
from beluga_core.analysis.report.heatmap_figures import DPI, draw_heatmap, heatmaps
from beluga_core.analysis.report.renderers.terminal import print_g_table
from beluga_core.analysis.report.report_data import read_report_data
from beluga_core.analysis.report.report_files import write_report
from beluga_core.analysis.report.section import pct
from beluga_core.analysis.report.sections.worst_groups import worst_groups_of
from beluga_core.analysis.significance import analyze_store
from beluga_core.cli.app import main
from beluga_core.core.constants import BASELINE
from beluga_core.store.reader import fetch_dicts
from beluga_core.store.rows import CaseRow, SuiteRow
from beluga_core.store.writer import StoreWriter

ROUNDS = 500


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("report") / "toy.duckdb"
    report_store(path)
    return path


@pytest.fixture(scope="module")
def md_report(store: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path, _ = write_report(store, tmp_path_factory.mktemp("md"), "md")
    return path


@pytest.fixture(scope="module")
def html_report(store: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path, _ = write_report(store, tmp_path_factory.mktemp("html"), "html")
    return path


# ------------------------------------------------------------------------------------------- Table 3


def test_table3_rows_columns_marks_and_bold(store: Path) -> None:
    t = build_g_table(read_report_data(store))
    assert t.rows[0] == ("iid", "vanilla")                       # the IID baseline first
    assert [c.label for c in t.columns] == [IID, "G seen", "G class", "G functionality", AVG]
    perfect = ("iid-plus-t", "vanilla")
    for col in t.columns:
        cell = t.cell(perfect, col)
        assert cell.mark == "better", col
        assert cell.bold, col                                   # right everywhere: best in every column
    base = [t.cell(("iid", "vanilla"), c) for c in t.columns]
    assert all(c.mark is None for c in base)
    # The baseline's suite columns are its G_standard; its Avg. too.
    g_values = {c.value for c, col in zip(base, t.columns, strict=True) if col.scenario != IID}
    assert len(g_values) == 1
    avg = t.cell(perfect, Column(None, AVG)).value
    per_scenario = [t.cell(perfect, c).value for c in t.columns if c.scenario not in (IID, AVG)]
    assert avg == pytest.approx(sum(per_scenario) / len(per_scenario))


def test_table3_values_are_the_views_means(tmp_path: Path) -> None:
    """Two tasks × two seeds: every cell is a mean over seeds (g_summary), the Avg. the mean over tasks."""
    b = StoreBuilder(tmp_path / "seeds.duckdb")
    rng = random.Random(2)
    for task in ("sentiment", "paraphrase"):
        for seed in (1, 2):
            base = random_outcomes(b.cases, rng)
            b.add("iid", "vanilla", "standard", base, [rng.random() < 0.7 for _ in range(40)], task=task, seed=seed)
            for scenario in ("seen", "class"):
                b.add("iid-then-t", "vanilla", scenario, perturb(base, rng, 0.4),
                      [rng.random() < 0.8 for _ in range(40)] if scenario == "seen" else None, task=task, seed=seed)
    t = build_g_table(read_report_data(b.path, figures=False))
    g = fetch_dicts(b.path, "g_scores")

    def mean(key: str, task: str, config: str, scenario: str) -> float:
        return statistics.fmean(r[key] for r in g
                                if (r["task"], r["config"], r["scenario"]) == (task, config, scenario))

    pair = ("iid-then-t", "vanilla")
    assert t.tasks == ["paraphrase", "sentiment"]
    per_task = []
    for task in t.tasks:
        scenarios = ("seen", "class")
        cells = [t.cell(pair, Column(task, sc)) for sc in scenarios]
        assert [c.value for c in cells] == pytest.approx([mean("g", task, "iid-then-t", sc) for sc in scenarios])
        assert [c.s_suite for c in cells] == pytest.approx([mean("s_suite", task, "iid-then-t", sc)
                                                            for sc in scenarios])
        assert t.cell(pair, Column(task, IID)).value == pytest.approx(mean("s_iid", task, "iid-then-t", "seen"))
        base = t.cell(BASELINE, Column(task, "class"))
        assert base.value == pytest.approx(mean("g", task, "iid", "standard")) and base.shown_from == "standard"
        per_task.append(statistics.fmean(c.value for c in cells))
    assert t.cell(pair, Column(None, AVG)).value == pytest.approx(statistics.fmean(per_task))


def test_the_avg_mark_over_seeds_is_the_seed_level_interval(tmp_path: Path) -> None:
    """Two seeds, each arm's every seed significantly better by its own test. iid-then-t's seeds differ in size
    (one fixes every failure, the other a few): their t interval spans 0, so no ▲, where every seed's test
    agreeing used to give one; iid-plus-t's seeds agree closely: ▲. Recomputed here from the g_scores rows."""
    b = StoreBuilder(tmp_path / "avg.duckdb")
    rng = random.Random(5)
    correct = [rng.random() < 0.7 for _ in range(120)]
    base = random_outcomes(b.cases, rng)
    for seed in (1, 2):
        fails = [c for c, o in base.items() if o == "fail"]
        b.add("iid", "vanilla", "standard", base, correct, seed=seed)
        erratic = {c: "pass" if o == "fail" and (seed == 1 or c in fails[:14]) else o for c, o in base.items()}
        steady = {c: "pass" if o == "fail" and c not in fails[:3 * seed] else o for c, o in base.items()}
        for scenario in ("seen", "class"):
            b.add("iid-then-t", "vanilla", scenario, erratic, correct if scenario == "seen" else None, seed=seed)
            b.add("iid-plus-t", "vanilla", scenario, steady, correct if scenario == "seen" else None, seed=seed)
    refresh(b.path, rounds=ROUNDS, seed=0)   # what `beluga analyze` does: the tests and the intervals over seeds
    data = read_report_data(b.path, figures=False)
    per_seed = {r["seed"]: r for r in data.significance or [] if r["scope"] == "mean_over_tasks"
                and r["scenario"] is None and r["config"] == "iid-then-t"}
    assert {s: r["g_mark"] for s, r in per_seed.items()} == {1: "better", 2: "better"}   # each seed's own test
    g = fetch_dicts(b.path, "g_scores")

    def avg_delta(config: str, seed: int) -> float:
        mine = {r["scenario"]: r["g"] for r in g if r["config"] == config and r["seed"] == seed}
        base = next(r["g"] for r in g if r["config"] == "iid" and r["seed"] == seed)
        return statistics.fmean(v - base for v in mine.values())

    for config, expected in (("iid-then-t", None), ("iid-plus-t", "better")):
        d = [avg_delta(config, seed) for seed in (1, 2)]
        half = 12.706 * statistics.stdev(d) / 2 ** 0.5     # t(0.975, 1 df) · sd / √2
        lo, hi = statistics.fmean(d) - half, statistics.fmean(d) + half
        assert (lo > 0) == (expected == "better") and hi > 0, (config, d, lo, hi)
        assert build_g_table(data).cell((config, "vanilla"), Column(None, AVG)).mark == expected, config
    assert "Avg. over two or more seeds: the seed-level t interval" in print_table_text(b.path)


def test_a_figure_over_equal_seeds_says_why_it_has_no_interval(tmp_path: Path) -> None:
    b = StoreBuilder(tmp_path / "flat.duckdb")
    rng = random.Random(8)
    base, correct = random_outcomes(b.cases, rng), [rng.random() < 0.7 for _ in range(120)]
    arm = perturb(base, rng, 0.3)
    for seed in (1, 2):   # both seeds give the same outcomes: no spread between training runs
        b.add("iid", "vanilla", "standard", base, correct, seed=seed)
        for scenario in ("seen", "class"):
            b.add("iid-then-t", "vanilla", scenario, arm, correct if scenario == "seen" else None, seed=seed)
    refresh(b.path, rounds=ROUNDS, seed=0)
    t = build_g_table(read_report_data(b.path, figures=False))
    cell = t.cell(("iid-then-t", "vanilla"), Column("sentiment", "class"))
    assert cell.n_seeds == 2 and cell.pm is None and cell.mark is None
    text = " ".join(print_table_text(b.path).split())
    flat = text.split("Without ± over seeds: ")[1].split(": their seeds gave the same value")[0].split(", ")
    columns = ("G class", "G seen", "i.i.d.")
    assert sorted(flat) == sorted(f"{p}/vanilla {c}" for p in ("iid", "iid-then-t") for c in columns)
    assert "Avg.: the mean of the G columns, without ±" in text
    write_report(b.path, tmp_path / "md", "md")
    md = (tmp_path / "md" / "report.md").read_text(encoding="utf-8")
    assert md.count("Without ± over seeds:") == 1 and md.count("Avg.: the mean of the G columns") == 1   # Table 3's


def print_table_text(path: Path) -> str:
    out = io.StringIO()
    print_g_table(path, Console(file=out, width=200))
    return out.getvalue()


# ------------------------------------------------------------------------------------ the terminal table

CONFIGS = ("iid-then-t", "iid-plus-t", "iid-then-iid-plus-t")
HELD_OUT = ("class", "functionality", "demographic", "test_type")


def build_wide_store(path: Path, methods: tuple[str, ...]) -> Path:
    """The IID baseline and three configurations (with ``methods``), each in seen + 4 held-out scenarios."""
    cases = [CaseRow(f"{f}-{j}", tt, {"class": cls, "functionality": f, "demographic": ("women", "men")[j % 2]})
             for f, (cls, tt) in FUNCTIONALITIES.items() for j in range(8)]
    b = StoreBuilder(path, cases)
    rng = random.Random(7)
    base = random_outcomes(cases, rng)
    b.add("iid", "vanilla", "standard", base, [rng.random() < 0.7 for _ in range(60)])
    better = {cid: "pass" if o == "fail" else o for cid, o in base.items()}
    for config, method in zip(CONFIGS, methods, strict=True):
        outcomes = better if config == "iid-plus-t" else perturb(base, rng, 0.5)
        for scenario in ("seen", *HELD_OUT):
            b.add(config, method, scenario, outcomes, [True] * 60 if scenario == "seen" else None)
    analyze_store(path, rounds=200, seed=0)
    return path


WIDE_METHODS = [("vanilla",) * 3, ("vanilla", "group_dro", "lp_ft")]


@pytest.fixture(scope="module")
def wide_stores(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, ...], Path]:
    """A wide store per methods tuple, built once for the tests below (which only read them)."""
    root = tmp_path_factory.mktemp("wide")
    return {m: build_wide_store(root / f"wide-{i}.duckdb", m) for i, m in enumerate(WIDE_METHODS)}


@pytest.mark.parametrize("methods", WIDE_METHODS, ids=["one", "three"])
def test_terminal_table_fits_80_columns(wide_stores: dict[tuple[str, ...], Path], methods: tuple[str, ...]) -> None:
    path = wide_stores[methods]
    table = build_g_table(read_report_data(path, figures=False))
    assert len(table.rows) == 4 and len([c for c in table.columns if c.is_g]) == 5
    g_values = {pct(c.value) for (_, col), c in table.cells.items() if col.is_g or col.scenario == AVG}
    plain = Console(file=io.StringIO(), width=80)                      # a CI log: no terminal
    coloured = Console(file=io.StringIO(), width=80, force_terminal=True, color_system="truecolor", record=True)
    for console in (plain, coloured):
        print_g_table(path, console)
        text = coloured.export_text() if console is coloured else plain.file.getvalue()
        lines = text.splitlines()
        assert max(map(len, lines)) <= 80, text
        tokens = {t.rstrip("▲▼") for line in lines for t in line.split()}     # a mark follows its value
        for name in ("iid", *CONFIGS, *(methods if len(set(methods)) > 1 else ())):
            assert name in tokens, (name, text)
        assert g_values <= tokens, (g_values - tokens, text)
        assert "▲" in text and "s_T per scenario" in text
        assert "…" not in text                                       # nothing cut off
    assert "\x1b[" in coloured.file.getvalue()                        # a terminal gets colour


def test_terminal_table_at_full_width(wide_stores: dict[tuple[str, ...], Path]) -> None:
    path = wide_stores[("vanilla",) * 3]
    console = Console(file=io.StringIO(), width=160)
    print_g_table(path, console)
    text = console.file.getvalue()
    assert "functionality" in text and "Scenarios:" not in text      # room enough: whole scenario names
    assert "(part 1 of 2)" not in text


def test_markdown_report(md_report: Path) -> None:
    text = md_report.read_text(encoding="utf-8")
    table = [line for line in text.splitlines() if line.startswith("| ")]
    header = table[0]
    assert "i.i.d." in header and "G seen" in header and "Avg." in header
    assert table[2].startswith("| iid | vanilla |")               # baseline first
    perfect = next(line for line in table if line.startswith("| iid-plus-t | vanilla | **"))
    assert perfect.count("▲") == 5 and perfect.count("**") == 10  # every column: marked better and bold
    for link in re.findall(r"\]\((figures/[^)]+)\)", text):
        assert (md_report.parent / link).is_file(), link
    assert "collapsed" in text and "Scoring groups of suite toy" in text


def test_html_report_is_self_contained(html_report: Path) -> None:
    text = html_report.read_text(encoding="utf-8")

    class Collect(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.refs: list[str] = []
            self.open: list[str] = []

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            self.refs += [v or "" for k, v in attrs if k in ("src", "href")]
            if tag not in ("meta", "img", "br"):
                self.open.append(tag)

        def handle_endtag(self, tag: str) -> None:
            assert self.open and self.open[-1] == tag, (tag, self.open[-3:])
            self.open.pop()

    parser = Collect()
    parser.feed(text)
    assert not parser.open
    assert parser.refs and all(r.startswith("data:image/png;base64,") for r in parser.refs)
    assert "<script" not in text and "http://" not in text and "https://" not in text
    assert 'class="num better"' in text and "<b>" in text


# ------------------------------------------------------------------------------------------- heatmaps


def test_heatmap_shape_axes_and_png(store: Path, html_report: Path) -> None:
    data = read_report_data(store)
    maps = {h.scenario: h for h in heatmaps(data)}
    assert set(maps) == {"seen", "functionality", "class"}
    h = maps["functionality"]
    assert h.rows[0] == ("iid", "vanilla") and len(h.rows) == 3
    assert h.values.shape == (3, 1 + len(FUNCTIONALITIES))
    # Groups kept together by class, in suite order; numbered in that order.
    assert [g.name for g in h.layout.groups] == ["f1", "f3", "f2", "f4", "f5"]
    assert [g.parent for g in h.layout.groups] == ["Vocabulary"] * 2 + ["Negation"] * 3
    assert h.layout.parent_level == "class" and h.layout.scoring_level == "functionality"
    # iid-plus-t passes every case the baseline failed: its pass rate is 1 wherever a case was evaluable.
    row = h.rows.index(("iid-plus-t", "vanilla"))
    assert np.all(h.values[row, 1:] == 1.0)

    fig = draw_heatmap(h)
    try:
        ax, strip = fig.axes[0], fig.axes[1]
        assert ax.get_ylabel() == "configuration / method"
        assert [t.get_text() for t in ax.get_yticklabels()][1:] == ["iid-plus-t / vanilla", "iid-then-t / vanilla"]
        assert "functionality" in strip.get_xlabel() and "test type" in strip.get_xlabel()
        assert [t.get_text() for t in strip.get_xticklabels()] == ["avg", "1", "2", "3", "4", "5"]
        assert "functionality" in ax.get_title(loc="left")
        w, hgt = fig.get_size_inches()
        expected = (round(w * DPI), round(hgt * DPI))
    finally:
        plt.close(fig)
    png = html_report.parent / "figures" / f"heatmap-{h.slug}.png"
    assert png.is_file() and png.with_suffix(".svg").is_file()
    with Image.open(png) as im:
        assert im.size == expected
        colours = len(np.unique(np.asarray(im.convert("RGB")).reshape(-1, 3), axis=0))
    assert colours > 50                                           # drawn, not blank


# ------------------------------------------------------------------------------------------- degeneracy


def test_degeneracy_flags_the_collapsed_model(store: Path) -> None:
    data = read_report_data(store)
    rows = {(r.config, r.scenario): r for r in degeneracy_rows(data)}
    assert rows[("iid-plus-t", "seen")].flags == ["D_test", "MFT"]
    assert rows[("iid-plus-t", "functionality")].flags == ["MFT"]     # folds together: every MFT case says 1
    assert rows[("iid", "standard")].flags == []
    assert rows[("iid-then-t", "seen")].flags == []
    iid = rows[("iid-plus-t", "seen")].iid
    assert iid.n == 120 and [(s.label, s.name, s.share) for s in iid.labels] == [
        ("0", "negative", 0.0), ("1", "positive", 1.0)]
    assert format_distribution(iid) == "negative: 0.0 % (gold 50.0 %), positive: 100.0 % (gold 50.0 %)"
    # MFT: names from the suite's label space; gold from the cases, "not 0" counted as possibly 1 or 2.
    gold = mft_gold(make_cases())
    mft = rows[("iid-plus-t", "seen")].mft
    one = next(s for s in mft.labels if s.label == "1")
    assert one.name == "neutral" and one.share == 1.0
    assert one.gold_share == pytest.approx(sum(g == "1" for g in gold.values()) / len(gold))
    assert one.gold_share_upper == pytest.approx(sum(g in ("1", "not 0") for g in gold.values()) / len(gold))
    assert "neutral: 100.0 % (gold " in format_distribution(mft) and "%+)" in format_distribution(mft)
    assert not any(s.label.startswith("not ") for s in mft.labels)


def test_degeneracy_rule_is_the_views(tmp_path: Path) -> None:
    """The flag is the degeneracy view's: the top share against gold, "not X" gold as an upper bound."""
    cases = [CaseRow(f"m-{j}", "MFT", {"functionality": "m"}, "not 0" if j < 32 else "0") for j in range(40)]
    cases += [CaseRow(f"e-{j}", "MFT", {"functionality": "e"}, str(j % 2)) for j in range(40)]
    b = StoreBuilder(tmp_path / "rule.duckdb", cases)
    # Predicts 2 on 95 % of the "m" cases: 80 % of their gold may be 2 ("not 0"), so no flag.
    m_only = {c.case_id: "pass" for c in cases if c.case_id.startswith("m-")}
    b.add("iid-then-t", "vanilla", "seen", m_only, case_preds={f"m-{j}": "2" if j < 38 else "0" for j in range(40)})
    # Predicts 0 on 95 % of the "e" cases, whose gold is half 0: collapsed.
    e_only = {c.case_id: "pass" for c in cases if c.case_id.startswith("e-")}
    b.add("iid-plus-t", "vanilla", "seen", e_only, case_preds={f"e-{j}": "0" if j < 38 else "1" for j in range(40)})
    # 19 predictions: too few to tell, whatever they are.
    few = {f"e-{j}": "pass" for j in range(19)}
    b.add("iid-then-iid-plus-t", "vanilla", "seen", few, case_preds={f"e-{j}": "1" for j in range(19)})
    rows = {r.config: r for r in degeneracy_rows(read_report_data(b.path))}
    assert rows["iid-then-t"].flags == [] and rows["iid-then-t"].mft.top.label == "2"
    assert rows["iid-plus-t"].flags == ["MFT"]
    assert rows["iid-then-iid-plus-t"].flags == []


# ------------------------------------------------------------------------------ runs in progress, levels


def test_report_of_a_run_in_progress(tmp_path: Path) -> None:
    path = tmp_path / "running.duckdb"
    b = StoreBuilder(path)
    rng = random.Random(3)
    run = b.writer.begin_run(None, "")
    base = random_outcomes(b.cases, rng)
    b.add("iid", "vanilla", "standard", base, [True, False] * 30)
    b.add("iid-then-t", "vanilla", "seen", perturb(base, rng, 0.3), [True] * 60)
    # Only the Vocabulary fold of the class scenario is done.
    vocab = {c.case_id: base[c.case_id] for c in b.cases if c.groups["class"] == "Vocabulary"}
    b.add("iid-then-t", "vanilla", "class", vocab)
    out, _ = write_report(path, tmp_path / "out", "md")
    text = out.read_text(encoding="utf-8")
    assert f"Run {run} is still going" in text
    assert "No significance tests in this store yet" in text
    assert "†" in text.split("## Worst-group")[0]          # the partial class scenario
    # The report holds no connection: the run's writer goes on at once.
    b.add("iid-then-t", "vanilla", "functionality", base)
    StoreWriter(path, lock_timeout=1).finish_run(run)


class OwnLevelsBuilder(StoreBuilder):
    """A StoreBuilder of a suite with levels of its own (StoreBuilder records the toy suite's levels)."""

    def __init__(self, path: Path, cases: list[CaseRow], suite: SuiteRow) -> None:
        StoreWriter(path).ensure_suite(suite, cases)
        self.path, self.suite, self.cases = path, suite.suite, list(cases)
        self.writer = StoreWriter(path)
        self.clock = datetime(2024, 6, 1)


def test_suite_with_its_own_levels(tmp_path: Path) -> None:
    # Domains are the scoring level; demographics cross them (no parent level); test type is one MFT.
    cases = [CaseRow(f"{d}-{g}-{j}", "MFT", {"domain": d, "demographic": g})
             for d in ("books", "films", "music") for g in ("women", "men") for j in range(6)]
    path = tmp_path / "levels.duckdb"
    b = OwnLevelsBuilder(path, cases, SuiteRow("reviews", ("domain", "demographic"), "domain", "text",
                                               ("negative", "positive")))
    rng = random.Random(4)
    base = random_outcomes(cases, rng)
    b.add("iid", "vanilla", "standard", base, [True, False, True] * 20)
    for scenario in ("seen", "demographic"):
        b.add("iid-plus-t", "vanilla", scenario, perturb(base, rng, 0.4), [True] * 60 if scenario == "seen" else None)
    analyze_store(path, rounds=ROUNDS)
    out, report = write_report(path, tmp_path / "out", "html")
    layout = report.data.layouts["reviews"]
    assert layout.scoring_level == "domain" and layout.parent_level is None
    assert [g.name for g in layout.groups] == ["books", "films", "music"]
    assert {h.scenario for h in report.heatmaps} == {"seen", "demographic"}
    worst = worst_groups_of(report.data, report.heatmaps)[("sentiment", "reviews", "demographic")]
    h = next(h for h in report.heatmaps if h.scenario == "demographic")
    row = h.rows.index(("iid-plus-t", "vanilla"))
    assert worst[("iid-plus-t", "vanilla")].value == pytest.approx(np.nanmin(h.values[row, 1:]))
    text = out.read_text(encoding="utf-8")
    assert "G demographic" in text and "Worst-group pass rate" in text


# ------------------------------------------------------------------------------------------------ CLI


def test_cli_report_terminal_and_files(store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main(["report", str(store)])
    out = capsys.readouterr().out
    assert "seen" in out and "i.i.d." in out and "▲" in out
    assert max(map(len, out.splitlines())) <= 80                       # stdout is no terminal: 80 columns
    # The collapsed iid-plus-t model is named under the table; the others are not.
    warnings = [line for line in out.splitlines() if line.startswith("degenerate")]
    assert warnings and all("iid-plus-t/vanilla" in w for w in warnings), out
    assert "D_test negative:" in " ".join(out.split())  # label names, not ids
    assert "iid-then-t/" not in out
    main(["report", str(store), "--format", "html", "--out", str(tmp_path / "h")])
    assert (tmp_path / "h" / "report.html").is_file()
    for bad in (["--format", "pdf", "--out", str(tmp_path)], ["--format", "md"], ["--out", str(tmp_path)]):
        with pytest.raises(SystemExit) as exc:
            main(["report", str(store), *bad])
        assert exc.value.code == 2


# ----------------------------------------------------------------------------------------- screenshot


def test_store_builder_cases_are_the_toy_suite() -> None:
    assert len(make_cases(3)) == 3 * len(FUNCTIONALITIES)


def test_a_reported_percentage_is_the_one_sql_rounds_to() -> None:
    """The report's 81.25 % read 81.2 (half to even) where `SELECT round(100 * g, 1)` gives 81.3."""
    import duckdb

    halves = [k / 10_000 for k in range(-10_000, 10_001, 25)]        # every x.x5 %, exactly representable or not
    rng = np.random.default_rng(3)
    values = [*halves, *rng.random(2000).tolist(), 0.8125, 1 / 3, 2 / 3]
    sql = duckdb.sql("SELECT round(100 * v, 1) FROM (SELECT unnest(?::DOUBLE[]) AS v)", params=[values]).fetchall()
    assert [pct(v) for v in values] == [f"{r:.1f}" for r, in sql]
    assert pct(0.8125) == "81.3" and pct(-0.8125) == "-81.3" and pct(None) == "—"
