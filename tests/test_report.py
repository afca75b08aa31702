"""``beluga report``: the terminal table, the Markdown and HTML reports, the heatmaps, the degeneracy check,
reports of a run in progress and of suites with other levels, and the headless-Chromium screenshot."""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pytest
from PIL import Image
from store_builder import FUNCTIONALITIES, StoreBuilder, make_cases, perturb, random_outcomes

from beluga_core.analysis.report.build import write_report
from beluga_core.analysis.report.data import read_report_data
from beluga_core.analysis.report.degeneracy import Distribution, degeneracy_rows, suite_mft_gold
from beluga_core.analysis.report.figures import DPI, draw_heatmap, heatmaps
from beluga_core.analysis.report.table3 import AVG, IID, Column, build_table3
from beluga_core.analysis.significance import analyze_store
from beluga_core.cli.app import main
from beluga_core.store import CaseRow, StoreWriter

REPO = Path(__file__).resolve().parents[1]
ROUNDS = 500


def write_toy_suite(path: Path, cases: list[CaseRow], gold: dict[str, str | None]) -> None:
    """Just enough of a suite file for the MFT gold lookup: header name and label space, ids, labels."""
    lines = [json.dumps({"kind": "suite", "name": "toy", "label_space": ["negative", "neutral", "positive"]})]
    for c in cases:
        label = gold.get(c.case_id)
        exp = {"kind": "not_eq", "value": 0} if label is None else {"kind": "eq", "target": "label"}
        lines.append(json.dumps({"id": c.case_id, "test_type": c.test_type, "label": label, "expectation": exp}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def build_store(path: Path, *, analyse: bool = True) -> dict[str, object]:
    """Baseline; iid-then-t a noisy copy; iid-plus-t right wherever the baseline is wrong, and degenerate:
    it predicts label 1 for every D_test example and every MFT case."""
    b = StoreBuilder(path)
    rng = random.Random(1)
    mft = [c for c in b.cases if c.test_type == "MFT"]
    gold = {c.case_id: (None if i % 5 == 0 else str(i % 3)) for i, c in enumerate(mft)}
    suite_file = path.with_name("toy.jsonl")
    write_toy_suite(suite_file, b.cases, gold)
    run = b.writer.begin_run(path.with_name("bench.toml"),
                             f'[[tasks]]\nname = "sentiment"\nsuite = "{suite_file.name}"\n')
    base = random_outcomes(b.cases, rng)
    correct = [rng.random() < 0.75 for _ in range(120)]
    golds = [str(i % 2) for i in range(120)]
    balanced = {c.case_id: str(i % 3) for i, c in enumerate(mft)}
    b.add("iid", "vanilla", "standard", base, correct, golds=golds, case_preds=balanced)
    noisy = perturb(base, rng, 0.3)
    better = {cid: "pass" if o == "fail" else o for cid, o in base.items()}
    ones = {c.case_id: "1" for c in mft}
    for scenario in ("seen", "functionality", "class"):
        b.add("iid-then-t", "vanilla", scenario, noisy, correct if scenario == "seen" else None, golds=golds,
              case_preds=balanced)
        b.add("iid-plus-t", "vanilla", scenario, better, [True] * 120 if scenario == "seen" else None,
              golds=golds, preds=["1"] * 120 if scenario == "seen" else None, case_preds=ones)
    b.writer.finish_run(run)
    if analyse:
        analyze_store(path, rounds=ROUNDS, seed=0)
    return {"builder": b, "base": base, "run": run}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("report") / "toy.duckdb"
    build_store(path)
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
    t = build_table3(read_report_data(store))
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
    suite_mft_gold(data)
    assert data.mft_gold_source and "toy.jsonl" in data.mft_gold_source
    rows = {(r.config, r.scenario): r for r in degeneracy_rows(data)}
    assert rows[("iid-plus-t", "seen")].flags == ["D_test", "MFT"]
    assert rows[("iid-plus-t", "functionality")].flags == ["MFT"]     # folds together: every MFT case says 1
    assert rows[("iid", "standard")].flags == []
    assert rows[("iid-then-t", "seen")].flags == []
    assert rows[("iid-plus-t", "seen")].iid.pred == {"1": 120}


def test_collapse_rule() -> None:
    assert Distribution({"0": 95, "1": 5}, {"0": 47, "1": 53}).collapsed is True
    assert Distribution({"0": 95, "1": 5}, {"0": 90, "1": 10}).collapsed is False   # gold is that skewed too
    assert Distribution({"0": 85, "1": 15}, {"0": 50, "1": 50}).collapsed is False  # below 90 %
    assert Distribution({"2": 95, "0": 5}).collapsed is True                        # gold unknown: share only
    assert Distribution({"0": 10}).collapsed is None                                # too few predictions
    # "not 0" gold may be label 2: an upper bound of 2's gold share, so no flag from an uncertain gold.
    assert Distribution({"2": 95, "0": 5}, {"not 0": 80, "0": 20}).collapsed is False


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


def test_suite_with_its_own_levels(tmp_path: Path) -> None:
    # Domains are the scoring level; demographics cross them (no parent level); test type is one MFT.
    cases = [CaseRow(f"{d}-{g}-{j}", "MFT", d, {"domain": d, "demographic": g})
             for d in ("books", "films", "music") for g in ("women", "men") for j in range(6)]
    path = tmp_path / "levels.duckdb"
    b = StoreBuilder(path, cases, suite="reviews")
    rng = random.Random(4)
    base = random_outcomes(cases, rng)
    b.add("iid", "vanilla", "standard", base, [True, False, True] * 20)
    for scenario in ("seen", "demographic"):
        b.add("iid-plus-t", "vanilla", scenario, perturb(base, rng, 0.4), [True] * 60 if scenario == "seen" else None)
    analyze_store(path, rounds=ROUNDS)
    out, content = write_report(path, tmp_path / "out", "html")
    layout = content.data.layouts["reviews"]
    assert layout.scoring_level == "domain" and layout.parent_level is None
    assert [g.name for g in layout.groups] == ["books", "films", "music"]
    assert {h.scenario for h in content.heatmaps} == {"seen", "demographic"}
    worst = content.worst_groups()[("sentiment", "reviews", "demographic")]
    h = next(h for h in content.heatmaps if h.scenario == "demographic")
    row = h.rows.index(("iid-plus-t", "vanilla"))
    assert worst[("iid-plus-t", "vanilla")].value == pytest.approx(np.nanmin(h.values[row, 1:]))
    text = out.read_text(encoding="utf-8")
    assert "G demographic" in text and "Worst-group pass rate" in text


# ------------------------------------------------------------------------------------------------ CLI


def test_cli_report_terminal_and_files(store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main(["report", str(store)])
    out = capsys.readouterr().out
    assert "G seen" in out and "▲" in out
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


def test_screenshot_in_headless_chromium(store: Path, tmp_path: Path) -> None:
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        from screenshot_report import find_chromium
    finally:
        sys.path.pop(0)
    if find_chromium() is None:
        pytest.skip("chromium is not installed: run `python benchmarks/screenshot_report.py` (installs Debian's "
                    "chromium with apt-get) to produce the screenshot")
    out = tmp_path / "shot"
    done = subprocess.run([sys.executable, str(REPO / "benchmarks" / "screenshot_report.py"), str(store),
                           "--out", str(out), "--no-install"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    with Image.open(out / "report.png") as im:
        assert im.size[0] == 1400 and im.size[1] > 1000
        assert len(np.unique(np.asarray(im.convert("RGB")).reshape(-1, 3), axis=0)) > 50


def test_store_builder_cases_are_the_toy_suite() -> None:
    assert len(make_cases(3)) == 3 * len(FUNCTIONALITIES)
