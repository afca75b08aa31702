"""Few-shot ranking (beluga rank): the statistics on hand-computed cases, and the whole path on a tiny run with
[fewshot] probe pools — pools in the store, disjointness, candidates and truths, the CLI, stored results and their
views — and on a zoo of saved checkpoints."""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pytest
from helpers import DATA, doc_blocks, query, run_benchmark, run_cli

# ------------------------------------------------------------------------------------------- known answers


# ------------------------------------------------------------------------------------------------- a run

@pytest.fixture(scope="module")
def fewshot_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tests/data/tiny-fewshot.toml run once (the length level held out, pools of the kept T_train ∪ T_val)."""
    store = tmp_path_factory.mktemp("fewshot") / "f.duckdb"
    run_benchmark(DATA / "tiny-fewshot.toml", store)
    return store


def test_pools_are_recorded_disjoint_and_predicted_by_their_candidates(fewshot_store: Path) -> None:
    store = fewshot_store
    pools = query(store, "SELECT grp, count(*) FROM fewshot_pools WHERE level = 'length' GROUP BY ALL ORDER BY 1")
    assert [g for g, _ in pools] == ["long", "medium", "short"] and all(5 <= k <= 12 for _, k in pools)
    # Pool cases are kept T_train / T_val cases of their group, never T_test.
    assert query(store, """SELECT DISTINCT s.part FROM fewshot_pools p JOIN case_splits s USING (split_id, case_id)
                            WHERE s.kept ORDER BY 1""") == [("train",), ("val",)]
    assert query(store, """SELECT count(*) FROM fewshot_pools p JOIN case_splits s USING (split_id, case_id)
                            WHERE NOT s.kept OR s.part = 'test'""") == [(0,)]
    # Each fold predicts exactly its group's pool; the IID model every pool; the seen models none.
    per_model = query(store, """SELECT m.config, m.scenario, m.heldout_group, count(o.case_id),
                                       count(*) FILTER (WHERE p.case_id IS NULL)
                                FROM models m LEFT JOIN probe_outcomes o USING (model_id)
                                LEFT JOIN fewshot_pools p ON p.case_id = o.case_id AND p.grp = m.heldout_group
                                GROUP BY ALL ORDER BY ALL""")
    sizes = dict(pools)
    for config, scenario, group, n, outside in per_model:
        if scenario == "length":
            assert (n, outside) == (sizes[group], 0)
        elif config == "iid":
            assert n == sum(sizes.values())
        else:
            assert n == 0
    # Probabilities per input, attributions (occlusion) of the pools only: first input, or 1 + 4 perturbations.
    assert query(store, "SELECT count(*) FROM probe_predictions WHERE probs IS NULL") == [(0,)]
    attributed = query(store, """SELECT count(DISTINCT a.model_id), max(a.input_idx),
                                        count(*) FILTER (WHERE p.case_id IS NULL) FROM attributions a
                                 LEFT JOIN (SELECT DISTINCT case_id FROM fewshot_pools) p USING (case_id)""")
    assert attributed[0][0] == 7 and attributed[0][1] <= 4 and attributed[0][2] == 0
    # beluga store check holds the pools to the same rules (and accepts pool attributions without T_test outcomes).
    from beluga_core.store.store_checks import check_store

    con = duckdb.connect(str(store), read_only=True)
    try:
        violations, _ = check_store(con)
    finally:
        con.close()
    assert violations == []


def test_rank_cli_stores_what_it_prints(fewshot_store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "220")
    store = tmp_path / "f.duckdb"
    shutil.copy(fewshot_store, store)
    code, out, err = run_cli(capsys, "rank", store, "--level", "length", "--n", "5", "--bootstrap", "100",
                             "--signals", "acc,conf,conf-gt,random,occlusion:perturbation-focus")
    assert code == 0, err
    assert "Few-shot ranking on level 'length'" in out and "conf-gt" in out
    assert "3 group(s) of level 'length', 3–3 candidate models each" in out
    # Truth = pass rate on T_test ∩ group, from the outcomes, for every candidate.
    truths = query(store, "SELECT grp, model_id, truth, n_truth FROM fewshot_candidates")
    for grp, mid, truth, n in truths:
        passed, scored = query(store, """SELECT count(*) FILTER (WHERE outcome = 'pass'),
                                                count(*) FILTER (WHERE outcome <> 'skip')
                                         FROM outcomes o JOIN cases c USING (suite, case_id)
                                         WHERE o.model_id = ? AND c.groups->>'length' = ?""", [mid, grp])[0]
        assert (truth, n) == (passed / scored, scored)
    assert len(truths) == 9
    # The views: per level the mean over groups of the mean over pairs; used + excluded = 3 pairs × 3 groups.
    rows = query(store, """SELECT signal, pairs_used, pairs_excluded, accuracy, stale FROM fewshot_accuracy
                           ORDER BY signal""")
    acc = next(r for r in rows if r[0] == "acc")
    assert acc[1] + acc[2] == 9 and acc[4] is False
    by_group = query(store, "SELECT avg(accuracy) FROM fewshot_group_accuracy WHERE signal = 'acc'")[0][0]
    assert acc[3] == pytest.approx(by_group)
    assert query(store, "SELECT count(*) FROM fewshot_pairs WHERE gap = 0") == [(0,)]
    # The report's section: the table per stored ranking and the figure of PA against the true gap.
    code, _, err = run_cli(capsys, "report", store, "--format", "md", "--out", tmp_path / "report")
    assert code == 0, err
    report = (tmp_path / "report" / "report.md").read_text(encoding="utf-8")
    assert "## Few-shot ranking of models on unseen groups" in report and "| occlusion:perturbation-focus |" in report
    assert any(p.name.startswith("fewshot-") and p.suffix == ".png" for p in (tmp_path / "report").rglob("*"))
    # A candidate trained again since makes the stored ranking stale.
    con = duckdb.connect(str(store))
    con.execute("UPDATE models SET finished_at = finished_at + INTERVAL 1 SECOND WHERE config = 'iid'")
    con.close()
    assert query(store, "SELECT DISTINCT stale FROM fewshot_accuracy") == [(True,)]


def test_rank_refuses_a_pool_that_overlaps_t_test(fewshot_store: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "f.duckdb"
    shutil.copy(fewshot_store, store)
    con = duckdb.connect(str(store))
    con.execute("UPDATE case_splits SET part = 'test' WHERE case_id = (SELECT min(case_id) FROM fewshot_pools)")
    con.close()
    code, _, err = run_cli(capsys, "rank", store, "--level", "length", "--no-save")
    assert code == 2 and "probe pool case(s) of level 'length' are T_test cases" in err
    code, out, _ = run_cli(capsys, "store", "check", store)
    assert code != 0 and "probe pools unseen by their candidates" in out
    code, _, err = run_cli(capsys, "rank", store, "--level", "phenomenon")
    assert code == 2 and "no probe pools for level 'phenomenon'" in err and "pools exist for length" in err


def test_a_candidate_without_its_whole_pool_is_left_out_and_options_make_another_ranking(
        fewshot_store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "f.duckdb"
    shutil.copy(fewshot_store, store)
    con = duckdb.connect(str(store))
    con.execute("""DELETE FROM probe_outcomes WHERE model_id = (SELECT min(model_id) FROM models
                   WHERE heldout_group = 'short') AND case_id = (SELECT min(case_id) FROM fewshot_pools
                   WHERE grp = 'short')""")
    con.close()
    for option in ("window.regex=[a-z]+", "window.regex=[a-z]{4,}"):
        code, out, err = run_cli(capsys, "rank", store, "--level", "length", "--n", "5", "--bootstrap", "50",
                                 "--signals", "acc,occlusion:window", "--option", option)
        assert code == 0, err
        assert "1 candidate model(s) lack probe predictions for their group's pool" in " ".join(out.split())
    assert query(store, "SELECT grp, count(*) FROM fewshot_candidates GROUP BY ALL ORDER BY 1 LIMIT 1") == [
        ("long", 6)]                                  # two rankings (one per option), 3 candidates each
    assert query(store, "SELECT count(*) FROM fewshot_candidates WHERE grp = 'short'") == [(4,)]
    assert sorted(r[0] for r in query(store, "SELECT options->>'$.window.regex' FROM fewshot_rankings")) == [
        "[a-z]+", "[a-z]{4,}"]


def test_a_model_without_its_probe_predictions_is_not_done(fewshot_store: Path, tmp_path: Path) -> None:
    from beluga_core.store.reader import done_ids
    from beluga_core.store.writer import StoreWriter

    store = tmp_path / "f.duckdb"
    shutil.copy(fewshot_store, store)
    (mid, ids), *_ = query(store, "SELECT model_id, list(case_id) FROM probe_outcomes GROUP BY ALL ORDER BY 1")
    writer = StoreWriter(store)
    assert mid in done_ids(writer.path, probes={mid: ids})
    # Another pool of the same size (pool_cap changed the sample): not done.
    assert mid not in done_ids(writer.path, probes={mid: [*ids[1:], "sst2-phenomena/plain/mft/999"]})
    with writer.store.transaction() as con:
        con.execute("DELETE FROM probe_outcomes WHERE model_id = ? AND case_id = ?", [mid, ids[0]])
    assert mid not in done_ids(writer.path, probes={mid: ids})


# ------------------------------------------------------------------------------------------------- a zoo


# ------------------------------------------------------------------------------------------------ README

@pytest.mark.parametrize("terminal", [False, True], ids=["log", "terminal"])
def test_rank_fits_80_columns(fewshot_store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                              monkeypatch: pytest.MonkeyPatch, terminal: bool) -> None:
    """At 80 columns (a CI log, and a terminal with colour) the table splits instead of squeezing its columns:
    every line fits, and each signal's name and accuracy with its interval appear whole, nothing cut to "…"."""
    import re

    from beluga_core.analysis.ranking.save import interval, percent

    monkeypatch.setenv("COLUMNS", "80")
    if terminal:
        monkeypatch.setenv("FORCE_COLOR", "1")
    store = tmp_path / "f.duckdb"
    shutil.copy(fewshot_store, store)
    signals = ["acc", "conf", "conf-gt", "random", "occlusion:perturbation-focus", "acc+occlusion:perturbation-focus"]
    code, out, err = run_cli(capsys, "rank", store, "--level", "length", "--n", "5", "--bootstrap", "50",
                             "--signals", ",".join(signals))
    assert code == 0, err
    assert ("\x1b[" in out) == terminal
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out)
    assert max(map(len, text.splitlines())) <= 80, text
    assert "…" not in text, text
    assert "(part 1 of" in text  # split into several tables, each repeating the signal column
    rows = query(store, "SELECT signal, accuracy, ci_low, ci_high FROM fewshot_accuracy")
    assert sorted(r[0] for r in rows) == sorted(signals)
    cells = [c.strip() for line in text.splitlines() for c in re.split(r"\s{2,}", line)]
    for signal, accuracy, lo, hi in rows:
        assert signal in cells, (signal, text)
        assert f"{percent(accuracy)} {interval(lo, hi)}" in cells, (signal, text)


def _readme_blocks(language: str, tag: str) -> list[str]:
    """The tested blocks of the ranking guide (they were the README's)."""
    return doc_blocks(language, tag, page="guides/ranking.md")


def test_the_readme_ranking_blocks_run(fewshot_store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    import shlex
    import tomllib

    from helpers import config_with

    monkeypatch.setenv("COLUMNS", "220")
    from beluga_core.stored_models.checkpoint_zoo import Zoo

    (toml,) = _readme_blocks("toml", "fewshot")
    config = config_with(DATA / "tiny-sentiment.toml", tmp_path, append=toml)
    code, out, err = run_cli(capsys, "run", config, "--dry-run")
    assert code == 0, err
    assert "[fewshot] test_type: 3 groups" in " ".join(out.split())
    (tmp_path / "runs").mkdir()
    shutil.copy(fewshot_store, tmp_path / "runs" / "fewshot.duckdb")
    monkeypatch.chdir(tmp_path)
    (commands,) = _readme_blocks("sh", "fewshot")
    for line in filter(str.strip, commands.splitlines()):
        code, out, err = run_cli(capsys, *shlex.split(line)[1:])
        assert code == 0, f"{line}\n{err}"
    (sql,) = _readme_blocks("sql", "fewshot")
    rows = query(tmp_path / "runs" / "fewshot.duckdb", sql)
    assert {"acc", "conf", "random", "occlusion:perturbation-focus"} <= {r[0] for r in rows}
    (zoo,) = _readme_blocks("toml", "zoo")
    assert [m.name for m in Zoo.model_validate(tomllib.loads(zoo)).models] == ["vanilla", "l2"]
