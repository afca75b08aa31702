"""The report's sections as values (analysis/report/sections/): every section is built once, the renderers
(analysis/report/renderers/) hold none of a section's words, a section added in one place shows in every format,
and the builders' content, read without any renderer. No training: the toy store of tests/store_builder.py, with
rows added for the sections its runs do not make (cross-suite, alignment, only:LEVEL, ranking, attributions,
seeds)."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from helpers import REPO
from matplotlib.figure import Figure
from rich.console import Console
from store_builder import report_store

from beluga_core.analysis.report import sections
from beluga_core.analysis.report.renderers.html import render_html
from beluga_core.analysis.report.renderers.markdown import render_markdown
from beluga_core.analysis.report.renderers.site import render_overview
from beluga_core.analysis.report.renderers.terminal import print_g_table, render_terminal
from beluga_core.analysis.report.report_data import ReportData, read_report_data
from beluga_core.analysis.report.report_files import write_report
from beluga_core.analysis.report.section import Cell, Column, Paragraph, Section, Table
from beluga_core.analysis.report.sections import Entry, Report, build_report
from beluga_core.analysis.report.sections.context import Context
from beluga_core.analysis.report.site_files import write_site

RENDERERS = REPO / "beluga_core" / "analysis" / "report" / "renderers"
TASK, SUITE, EVAL = "sentiment", "toy", "toy-eval"
V = "vanilla"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("sections") / "toy.duckdb"
    report_store(path, rounds=50)
    return path


def with_every_section(data: ReportData) -> ReportData:
    """``data`` with rows of the views the toy store's runs leave empty, so that every section has something."""
    base = {"task": TASK, "suite": SUITE, "method": V}
    data.cross_summary = [base | {"eval_suite": EVAL, "config": c, "scenario": s, "mapped_level": None, "g": 0.5,
                                  "s_cross": 0.6, "n_replicates": 1}
                          for c, s in (("iid", "standard"), ("iid-plus-t", "seen"))]
    data.cross_pass_rates = [base | {"eval_suite": EVAL, "config": c, "scenario": s, "mapped_level": None,
                                     "eval_group": "e1", "pass_rate": 0.4, "mapped_groups": None}
                             for c, s in (("iid", "standard"), ("iid-plus-t", "seen"))]
    data.alignment_units = [base | {"config": "iid-plus-t", "scenario": "seen", "eval_suite": EVAL,
                                    "mapped_level": "functionality", "eval_group": "e1", "mapped_group": "f1",
                                    "side": side, "unit": f"u{i}", "n_pass": i % 2, "n_eval": 1}
                            for side in ("template", "eval") for i in range(4)]
    data.only_matrix_summary = [base | {"config": "iid-then-t", "level": "class", "trained_group": t,
                                        "eval_group": e, "pass_rate": 0.25} for t in ("c1", "c2") for e in ("c1", "c2")]
    data.fewshot = [{"rank_id": "r1", "level": "class", "source": "store", "task": TASK, "suite": SUITE, "n": 4,
                     "bootstrap": 10, "rng_seed": 0, "ties": "half", "signal": "acc", "accuracy": 0.7, "ci_low": 0.6,
                     "ci_high": 0.8, "pairs_used": 3, "pairs_excluded": 0, "tie_rate": 0.0, "tau_b": 0.4, "top1": 0.5,
                     "top1_ci_low": 0.2, "top1_ci_high": 0.8, "diff_vs_acc": None, "diff_ci_low": None,
                     "diff_ci_high": None, "near_accuracy": 0.6, "far_accuracy": 0.8, "stale": True}]
    data.failing_words = [{"task": TASK, "config": "iid-then-t", "method": V, "scenario": "seen",
                           "scoring_group": "f1", "attribution": "occlusion", "word": w, "mean_score": s, "n": 2,
                           "n_cases": 3} for w, s in (("good", 0.4), ("bad", -0.2))]
    data.seed_scores = [{"task": TASK, "config": "iid-plus-t", "method": V, "variant": "", "scenario": "seen",
                         "seed": seed, "g": g} for seed, g in ((1, 0.5), (2, 0.6))]
    return data


@pytest.fixture(scope="module")
def full(store: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Report, Path]:
    out = tmp_path_factory.mktemp("full")
    # The figures' files are written (empty), not drawn: these tests read the sections' values, not pixels.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Figure, "savefig", lambda self, fname, *args, **kwargs: Path(fname).write_bytes(b""))
        return build_report(with_every_section(read_report_data(store)), out / "figures"), out


# ------------------------------------------------------------------------------------------ renderers hold no words


def test_every_section_is_built_and_no_renderer_holds_its_words(full: tuple[Report, Path]) -> None:
    report, _ = full
    keys = {s.key for s in report.sections}
    assert keys == {"status", "g_table", "worst_groups", "heatmaps", "seeds", "cross", "alignment", "only",
                    "regression", "fewshot", "attributions", "degeneracy", "scoring_groups"}
    brief = build_report(with_every_section(read_report_data(report.data.store, figures=False)), terminal=True)
    texts = {t for s in [*report.sections, *brief.sections] for t in s.texts()}
    # Titles and notes a renderer would print verbatim: a renderer lays them out, it does not hold them.
    assert {"i.i.d. score and G per scenario (%) — Table 3", "Degeneracy check", "Cross-suite evaluation",
            "Attributions of failing groups"} <= texts
    sources = {p.name: p.read_text(encoding="utf-8") for p in RENDERERS.glob("*.py")}
    assert set(sources) >= {"terminal.py", "markdown.py", "html.py", "site.py"}
    # Whole words: "Seeds" is a section's title, "OverSeeds" a class name.
    found = [(t, name) for t in texts for name, src in sources.items()
             if re.search(rf"(?<!\w){re.escape(t)}(?!\w)", src)]
    assert not found, f"section words in a renderer: {found}"


# ------------------------------------------------------------------------------------------ a section in one place

TITLE, NOTE = "A section the test adds", "Its note, written once."


def _test_section(ctx: Context) -> list[Section]:
    table = Table([Column("name"), Column("value")], [[Cell("alpha"), Cell("42.0", mark="better", slot=True)]],
                  numeric_from=1)
    brief = Table([Column("name", "name"), Column("value", "value")], table.rows, 1, TITLE)
    return [Section("test_section", TITLE, [NOTE], [table], brief=[brief, Paragraph([NOTE])])]


@pytest.mark.usefixtures("figures_not_drawn")
def test_a_section_added_in_one_place_shows_in_every_format(store: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sections, "SECTIONS", [*sections.SECTIONS, Entry(_test_section, terminal=True)])
    buf = io.StringIO()
    print_g_table(store, Console(file=buf, width=100, color_system=None))
    terminal = buf.getvalue()
    md = write_report(store, tmp_path / "md", "md")[0].read_text(encoding="utf-8")
    html = write_report(store, tmp_path / "html", "html")[0].read_text(encoding="utf-8")
    write_site(store, tmp_path / "site", full_report=False)
    shard = (tmp_path / "site" / "data" / "overview-0.js").read_text(encoding="utf-8")
    overview = json.loads(shard[shard.index(",") + 1:shard.rindex(");")])
    (site,) = [t for t in overview["sections"] if t["title"] == TITLE]
    assert site["note"] == NOTE and site["rows"] == [["alpha", "42.0 ▲"]] and site["header"] == ["name", "value"]
    assert TITLE in terminal and NOTE in terminal and "alpha" in terminal and "42.0▲" in terminal
    assert f"## {TITLE}\n\n{NOTE}\n\n| name | value |\n| --- | ---: |\n| alpha | 42.0 ▲ |" in md
    assert f"<h2>{TITLE}</h2><p class=\"note\">{NOTE}</p>" in html
    assert "<td>alpha</td><td class=\"num better\">42.0 ▲</td>" in html
    # Last in the list, last in every document.
    assert md.rindex("## ") == md.index(f"## {TITLE}") and html.rindex("<h2>") == html.index(f"<h2>{TITLE}")


# ------------------------------------------------------------------------------------------ builders, no renderer


def test_the_sections_content(full: tuple[Report, Path]) -> None:
    report, out = full
    (g,) = report.section("g_table")
    (table,) = g.tables
    assert table.header[:3] == ["configuration", "method", "i.i.d."] and table.baseline_first
    assert table.rows[0][0].text == "iid" and g.notes[-1].startswith("Avg.:")
    assert any(c.bold for r in table.rows for c in r) and all(c.tip for r in table.rows for c in r if c.mark)
    (worst,) = report.section("worst_groups")
    assert [r[0].text for r in worst.tables[0].rows] == [r[0].text for r in table.rows]
    assert all(c.text == "—" or "(#" in c.text for r in worst.tables[0].rows for c in r[2:])
    (degeneracy,) = report.section("degeneracy")
    assert [c.text for r in degeneracy.tables[0].rows for c in r if c.flag] and "Gold labels" in degeneracy.notes[0]
    (cross,) = report.section("cross")
    assert cross.tables[0].title == f"{TASK} ({SUITE}) evaluated on {EVAL}"
    assert [c.text + c.after for c in cross.tables[0].rows[1][2:]] == ["50.0 (60.0)"]
    (only,) = report.section("only")
    assert [[c.text for c in r] for r in only.tables[0].rows] == [["c1", "25.0", "25.0"], ["c2", "25.0", "25.0"]]
    (fewshot,) = report.section("fewshot")
    assert any("stale" in n for n in fewshot.tables[0].notes)
    (attributions,) = report.section("attributions")
    assert attributions.tables[0].rows[0][6].text.startswith("good +0.4 (2)")
    (seeds,) = report.section("seeds")
    assert seeds.notes == [] and seeds.title == "Seeds"
    figures = report.figures("seeds")
    assert len(figures) == 1 and figures[0].png.is_file() and figures[0].png.parent == out / "figures"
    assert len(report.figures("heatmaps")) == len(report.heatmaps) == 3
    assert report.section("scoring_groups")[0].title == f"Scoring groups of suite {SUITE}"


def test_the_terminal_form_of_the_degeneracy_check(full: tuple[Report, Path]) -> None:
    (degeneracy,) = full[0].section("degeneracy")
    warnings, key = degeneracy.brief
    assert isinstance(warnings, Paragraph) and warnings.kind == "warning" and warnings.lead == "degenerate"
    assert [line.split(":")[0] for line in warnings.lines] == [f" {TASK} iid-plus-t/{V}"]
    assert isinstance(key, Paragraph) and key.kind == "note"


def test_every_format_renders_the_full_report(full: tuple[Report, Path]) -> None:
    report, out = full
    md, html = render_markdown(report, out), render_html(report)
    for s in report.sections:
        if s.title:
            assert f"## {s.title}" in md and s.title.replace("'", "&#x27;") in html
    overview = render_overview(report, 0, [], {}, None)
    assert [t["title"] for t in overview["alignment"]][:1] == [f"{TASK} ({SUITE}) evaluated on {EVAL}"]
    assert [t["title"] for t in overview["sections"]] == [
        "Worst-group pass rate per scenario (%)", "Regression: negative flips", "Attributions of failing groups",
        "Degeneracy check"]
    buf = io.StringIO()
    render_terminal(build_report(report.data, terminal=True).sections, Console(file=buf, width=80, color_system=None))
    assert "evaluated on toy-eval: G per scenario (%)" in buf.getvalue()


# ------------------------------------------------------------------------------------------ one number, every format


def test_the_terminal_shows_the_number_every_other_format_shows() -> None:
    # 5 of 16 cases: 31.25 %, a half. DuckDB's round (the views, the Markdown, HTML and site tables) gives 31.3;
    # Python's format gave the terminal 31.2 beside them.
    from beluga_core.analysis.report.g_table_data import Cell as GCell
    from beluga_core.analysis.report.sections import g_table as g_section

    assert g_section._value(5 / 16).text == "31.3" == g_section._cell(GCell(5 / 16)).text
    assert g_section._value(13 / 16, GCell(13 / 16, pm=1 / 16)).pm == "6.3"
