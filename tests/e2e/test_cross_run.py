"""Cross-suite evaluation and the only:LEVEL scenarios: which eval cases each fold sees, the views against
independent recomputations on hand-made stores, config errors, and a tiny real run."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import DATA, config_with, doc_blocks, query, run_benchmark, run_cli

from beluga_core.planning.jobs import Fold

# ------------------------------------------------------------------------------------------ hand-made suites


def fold(level: str | None, group: str | None) -> Fold:
    return Fold(level or "seen", group, (), ())


# ------------------------------------------------------------------------------------------ hand-made stores


# ------------------------------------------------------------------------------------------ config errors

def _tiny(tmp_path: Path, append: str = "", replace: dict[str, str] | None = None) -> Path:
    return config_with(DATA / "tiny-sentiment.toml", tmp_path, replace=replace, append=append)


# ------------------------------------------------------------------------------------------ a real run

CROSS_RUN = """
[[tasks.eval_suites]]
suite = "builtin:sst2-phenomena"
cases_per_group = 4
[tasks.eval_suites.maps_to.functionality]
negation = "simple negations: negative"
intensifier = "intensifiers"
plain = "Sentiment-laden words in context"
"""


@pytest.fixture(scope="module")
def cross_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    tmp = tmp_path_factory.mktemp("cross")
    config = _tiny(tmp, CROSS_RUN, {'scenarios = ["standard", "seen", "test_type"]':
                                    'scenarios = ["standard", "seen", "class", "only:class"]'})
    store = tmp / "cross.duckdb"
    return config, store, run_benchmark(config, store)


def test_a_run_evaluates_every_model_on_the_eval_suite_as_mapped(cross_store: tuple[Path, Path, str],
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    _config, store, printed = cross_store
    assert "evaluated on sst2-phenomena" in printed
    n_eval = query(store, "SELECT count(*) FROM cases WHERE suite = 'sst2-phenomena'")[0][0]
    assert n_eval == 300
    # Models that hold nothing out: the 20 sampled eval cases (4 per phenomenon); folds: their mapped cases.
    per_model = query(store, """SELECT m.scenario, m.heldout_group, m.trained_group, e.n_cases
                                FROM cross_evaluations e JOIN models m USING (model_id) ORDER BY ALL""")
    assert all(n == 20 for sc, _, _, n in per_model if sc in ("standard", "seen") or sc.startswith("only:"))
    by_class = {g: n for sc, g, _, n in per_model if sc == "class"}
    # negation → Negation (4), intensifier and plain → Vocabulary (8); other classes: none.
    assert by_class["Negation"] == 4 and by_class["Vocabulary"] == 8
    assert sum(by_class.values()) == 12
    assert {sc for sc, _, _, _ in per_model if sc.startswith("only:")} == \
        {f"only:class={c}" for c in ("Fairness", "NER", "Negation", "Robustness", "SRL", "Temporal", "Vocabulary")}
    assert run_cli(capsys, "store", "check", store)[0] == 0
    # G on the eval suite uses the configuration-method's s_iid.
    for s, s_iid, g in query(store, "SELECT s_cross, s_iid, g FROM cross_scores WHERE s_cross IS NOT NULL"):
        assert g == pytest.approx(2 * s * s_iid / (s + s_iid))
    # Significance of cross-suite G against the IID baseline on the same cases.
    status = query(store, "SELECT DISTINCT status FROM cross_significance")
    assert status == [("current",)]


def test_the_report_shows_the_cross_table_and_the_matrix(cross_store: tuple[Path, Path, str], tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    _, store, printed = cross_store
    assert "trained on one class alone" in printed
    code, _out, _ = run_cli(capsys, "report", store, "--format", "md", "--out", tmp_path)
    assert code == 0
    text = (tmp_path / "report.md").read_text()
    assert "## Cross-suite evaluation" in text and "class (mapped)" in text
    assert "## Capabilities across suites" in text and "iid-then-t/vanilla · class: templates" in text
    assert "## Trained on one group alone (only:LEVEL)" in text
    assert len(list((tmp_path / "figures").glob("only-*.png"))) == 1
    assert len(list((tmp_path / "figures").glob("cross-*.png"))) == 1


def test_the_dry_run_prints_what_cross_evaluation_adds(cross_store: tuple[Path, Path, str],
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    config, store, _ = cross_store
    code, out, _ = run_cli(capsys, "run", config, "--store", store, "--dry-run")
    assert code == 0
    out = " ".join(out.split())
    assert "only:class: 7 more trainings" in out and "eval suite sst2-phenomena (20 of 300 cases evaluated)" in out
    assert "class: 12 cases mapped, derived from functionality" in out


# ------------------------------------------------------------------------------------------ the guide

def _readme_blocks(language: str) -> list[str]:
    """The tested blocks of the cross-suite guide (they were the README's)."""
    return doc_blocks(language, page="guides/cross-suite.md")


def test_the_readme_cross_suite_queries_run(cross_store: tuple[Path, Path, str]) -> None:
    (block,) = _readme_blocks("sql")
    _, store, _ = cross_store
    statements = [s for s in block.split(";") if s.strip()]
    assert len(statements) == 2
    scores, diagonal = (query(store, s) for s in statements)
    assert ("iid", "standard", None) in {r[:3] for r in scores} and ("iid-then-t", "class", "class") in \
        {r[:3] for r in scores}
    assert len(diagonal) == 7 and all(0 <= r[2] <= 1 for r in diagonal if r[2] is not None)
