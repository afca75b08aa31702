"""Few-shot ranking (beluga rank): the statistics on hand-computed cases, and the whole path on a tiny run with
[fewshot] probe pools — pools in the store, disjointness, candidates and truths, the CLI, stored results and their
views — and on a zoo of saved checkpoints."""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import numpy as np
import pytest
from helpers import DATA, doc_blocks, query, run_benchmark, run_cli
from scipy.stats import kendalltau

from beluga_core.analysis.ranking.rank import Candidate, GroupData, SignalSpec, rank_groups, signal_specs
from beluga_core.analysis.ranking.ranking_accuracy import (
    draw_probes,
    probe_means,
    random_keys,
    rank_group,
    summarize,
    two_stage_interval,
)
from beluga_core.contracts.signals import ProbeCase, Signal
from beluga_core.core.errors import BelugaError

B = 200
TRUTH = np.array([0.2, 0.5, 0.9])


def constant_keys(values: list[float], bootstrap: int = B) -> np.ndarray:
    return np.tile(np.asarray(values, dtype=float), (bootstrap, 1))


# ------------------------------------------------------------------------------------------- known answers

def test_signal_equal_to_the_truth_is_always_right_and_its_negative_always_wrong() -> None:
    right = rank_group(TRUTH, [constant_keys(list(TRUTH))])
    assert right.accuracy == 1.0 and right.tie_rate == 0.0
    assert np.allclose(right.tau, 1.0) and np.allclose(right.top1, 1.0)
    wrong = rank_group(TRUTH, [constant_keys(list(-TRUTH))])
    assert wrong.accuracy == 0.0 and np.allclose(wrong.tau, -1.0) and np.allclose(wrong.top1, 0.0)


def test_a_constant_signal_ties_every_pair() -> None:
    half = rank_group(TRUTH, [constant_keys([0.4, 0.4, 0.4])], ties="half")
    assert half.accuracy == 0.5 and half.tie_rate == 1.0
    assert np.isnan(half.tau).all()                      # tau-b is undefined for a constant order
    # Every model is "top"; one of the three is truly best.
    assert np.allclose(half.top1, 1 / 3)
    assert rank_group(TRUTH, [constant_keys([0.4, 0.4, 0.4])], ties="fail").accuracy == 0.0
    assert np.isnan(rank_group(TRUTH, [constant_keys([0.4, 0.4, 0.4])], ties="exclude").accuracy)


def test_the_three_model_hand_example() -> None:
    # True scores (0.2, 0.5, 0.9), signal (0.1, 0.3, 0.2): pair (1,2): 0.1 < 0.3 and 0.2 < 0.5, right; pair (1,3):
    # 0.1 < 0.2 and 0.2 < 0.9, right; pair (2,3): 0.3 > 0.2 but 0.5 < 0.9, wrong → 2/3.
    g = rank_group(TRUTH, [constant_keys([0.1, 0.3, 0.2])])
    assert g.accuracy == pytest.approx(2 / 3)
    assert list(g.pair_accuracy()) == [1.0, 1.0, 0.0]
    # tau-b: 2 concordant, 1 discordant, no ties: (2 - 1) / 3.
    assert g.tau[0] == pytest.approx(1 / 3) == pytest.approx(kendalltau([0.1, 0.3, 0.2], TRUTH).statistic)
    assert g.top1[0] == 0.0                                 # model 2 (0.3) is ranked top; model 3 is best


def test_pairs_with_equal_truth_are_excluded_and_counted() -> None:
    g = rank_group([0.5, 0.5, 0.9], [constant_keys([0.1, 0.2, 0.3])])
    assert g.excluded == 1 and g.n_pairs == 2 and g.accuracy == 1.0


def test_tau_b_with_ties_equals_scipy() -> None:
    rng = np.random.default_rng(3)
    truth = np.array([0.1, 0.4, 0.4, 0.7, 0.9])
    for _ in range(20):
        key = rng.integers(0, 3, size=5).astype(float)
        got = rank_group(truth, [key[None, :]]).tau[0]
        want = kendalltau(key, truth).statistic
        assert (np.isnan(got) and np.isnan(want)) or got == pytest.approx(want)


def test_top1_with_tied_top_models_counts_the_truly_best_share() -> None:
    # Models 2 and 3 tie at the top; model 3 is truly best: half.
    assert rank_group(TRUTH, [constant_keys([0.0, 1.0, 1.0])]).top1[0] == 0.5
    # A model without a score on the probe ties every pair but is no top pick: model 3 alone is, and is best.
    g = rank_group(TRUTH, [constant_keys([np.nan, 0.2, 0.3])])
    assert g.top1[0] == 1.0 and g.tie_rate == pytest.approx(2 / 3)


def test_random_order_never_ties_and_is_near_half() -> None:
    keys = random_keys(5, 4000, 0, "g")
    assert all(sorted(row) == [0, 1, 2, 3, 4] for row in keys[:50])
    g = rank_group([0.1, 0.3, 0.5, 0.7, 0.9], [keys])
    assert g.tie_rate == 0.0
    # Measured over seeds 0–19: |accuracy − 0.5| at most 0.005, sd 0.0026; 0.02 is about 8 sd.
    assert abs(g.accuracy - 0.5) < 0.02


def test_acc_then_factor_breaks_ties_lexicographically() -> None:
    acc = constant_keys([0.5, 0.5, 1.0])
    factor = constant_keys([-0.3, -0.1, -0.9])   # breaks the tie of models 1 and 2: model 2 above model 1
    g = rank_group(TRUTH, [acc, factor])
    assert g.accuracy == 1.0 and g.tie_rate == 0.0
    assert rank_group(TRUTH, [acc]).accuracy == pytest.approx((0.5 + 1 + 1) / 3)


def test_probes_are_seeded_shared_and_means_skip_inapplicable_cases() -> None:
    a, b = draw_probes(7, 10, 50, 0, "g"), draw_probes(7, 10, 50, 0, "g")
    assert (a == b).all() and a.shape == (50, 10) and a.min() >= 0 and a.max() < 7
    assert not (a == draw_probes(7, 10, 50, 1, "g")).all()
    assert not (a == draw_probes(7, 10, 50, 0, "h")).all()
    values = np.array([[1.0, np.nan, 3.0], [np.nan, np.nan, np.nan]])
    means = probe_means(values, np.array([[0, 1, 2], [1, 1, 1]]))
    assert means[0, 0] == 2.0 and np.isnan(means[1, 0]) and np.isnan(means[:, 1]).all()


def test_summary_against_itself_and_two_stage_interval() -> None:
    g = rank_group(TRUTH, [constant_keys([0.1, 0.3, 0.2])])
    s = summarize([g, g], [g, g], rounds=200)
    assert s.accuracy == pytest.approx(2 / 3) and s.diff == 0.0 and s.diff_ci == (0.0, 0.0)
    assert s.p_one_sided == 1.0 and s.p_two_sided == 1.0 and s.holds_better() is False
    assert s.pairs_used == 6
    lo, hi = two_stage_interval([np.array([0.0, 1.0] * 50), np.array([1.0] * 100)], 500,
                                np.random.default_rng(0))
    # Measured over generator seeds 0–19: lo 0.445–0.467, hi 1.0 (the second stage's units are all 1).
    assert lo < 0.75 < hi and lo > 0.4 and hi <= 1.0


class Fixed(Signal):
    """A test signal: the case's first probability (what ACC would give for these hand-made cases)."""

    def value(self, case: ProbeCase) -> float | None:
        p = case.probs[0]
        return None if p is None else float(p[0])


def _group(n_models: int, n_cases: int, rng: np.random.Generator) -> GroupData:
    truth = np.linspace(0.1, 0.9, n_models)
    passed = rng.random((n_models, n_cases)) < truth[:, None]
    cases = [[ProbeCase(f"c{j}", "MFT", ("x",), "pass" if passed[i, j] else "fail", (0,),
                        (np.array([float(passed[i, j]), 0.0]),)) for j in range(n_cases)] for i in range(n_models)]
    return GroupData("g", [Candidate(f"m{i}", f"m{i}", float(t), 10) for i, t in enumerate(truth)],
                     [f"c{j}" for j in range(n_cases)], {"": cases})


def test_every_signal_sees_the_same_probes_and_the_same_seed_gives_the_same_ranking() -> None:
    group = _group(4, 30, np.random.default_rng(0))
    specs, _ = signal_specs(["acc", "random"], [], {})
    fixed = SignalSpec("fixed", (("fixed", "", Fixed()),))
    one = rank_groups("lv", [group], [*specs, fixed], n=10, bootstrap=100, seed=4)
    two = rank_groups("lv", [group], [*specs, fixed], n=10, bootstrap=100, seed=4)
    acc, same = one.results["acc"][0].ranking, one.results["fixed"][0].ranking
    assert acc is not None and same is not None
    # Fixed equals the outcome here, so on the same probes it must succeed exactly where ACC does.
    assert np.array_equal(acc.success, same.success)
    assert one.summaries["fixed"].diff == 0.0
    assert np.array_equal(acc.success, two.results["acc"][0].ranking.success)  # type: ignore[union-attr]
    other = rank_groups("lv", [group], specs, n=10, bootstrap=100, seed=5)
    assert not np.array_equal(acc.success, other.results["acc"][0].ranking.success)  # type: ignore[union-attr]


def test_signal_names_and_errors() -> None:
    specs, skipped = signal_specs(None, ["tokig"], {})
    names = [s.name for s in specs]
    assert {"acc", "conf", "conf-gt", "random", "tokig:max-diff", "acc+tokig:perturbation-focus"} <= set(names)
    assert "window" in skipped                      # no feature word configured
    with pytest.raises(BelugaError, match="did you mean 'conf-gt'"):
        signal_specs(["conf-gtt"], [], {})
    with pytest.raises(BelugaError, match="name the method as METHOD:max-diff"):
        signal_specs(["max-diff"], ["lime", "shap"], {})
    _, skipped = signal_specs(["shap:max-diff"], ["tokig"], {})
    assert "no stored attributions of shap" in skipped["shap:max-diff"]


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
    from beluga_core.store.writer import StoreWriter

    store = tmp_path / "f.duckdb"
    shutil.copy(fewshot_store, store)
    (mid, ids), *_ = query(store, "SELECT model_id, list(case_id) FROM probe_outcomes GROUP BY ALL ORDER BY 1")
    writer = StoreWriter(store)
    assert mid in writer.done_ids(probes={mid: ids})
    # Another pool of the same size (pool_cap changed the sample): not done.
    assert mid not in writer.done_ids(probes={mid: [*ids[1:], "sst2-phenomena/plain/mft/999"]})
    with writer.store.transaction() as con:
        con.execute("DELETE FROM probe_outcomes WHERE model_id = ? AND case_id = ?", [mid, ids[0]])
    assert mid not in writer.done_ids(probes={mid: ids})


def test_dry_run_refuses_pools_smaller_than_the_probe(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from helpers import config_with

    config = config_with(DATA / "tiny-fewshot.toml", tmp_path, replace={"n = 5": "n = 10"})
    code, _, err = run_cli(capsys, "run", config, "--dry-run")
    assert code == 2
    err = " ".join(err.split())
    assert "[fewshot] n = 10, but 1 probe pool(s) are smaller" in err and "length 'long': 9" in err
    assert "set [sizes] suite_val_per_group = 6 (now 4" in err
    config = config_with(DATA / "tiny-fewshot.toml", tmp_path, replace={"pool_cap = 12": "pool_cap = 3"})
    code, _, err = run_cli(capsys, "run", config, "--dry-run")
    assert code == 2 and "pool_cap = 3 is below the probe size fewshot.n = 5" in " ".join(err.split())


# ------------------------------------------------------------------------------------------------- a zoo

def _checkpoint(folder: Path, seed: int) -> Path:
    """A 1-layer BERT classifier with MiniLM's tokenizer and random weights, saved as a checkpoint folder."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    from beluga_core.data.pretrained import resolve_model_path

    source = resolve_model_path("embedded:minilm")
    tokenizer = AutoTokenizer.from_pretrained(source)
    torch.manual_seed(seed)
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=64, num_labels=2)
    BertForSequenceClassification(config).save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    return folder


def test_zoo_ranks_saved_checkpoints(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "220")
    for i in range(3):
        _checkpoint(tmp_path / f"m{i}", i)
    zoo = tmp_path / "zoo.toml"
    zoo.write_text("""task = "sentiment"
probe = "builtin:sst2-phenomena"
group = "length=short"
pool_cap = 20
attributions = ["occlusion"]
store = "zoo.duckdb"

[signal_options.window]
regex = '[a-z]+'

[[models]]
name = "first"
path = "m0"
truth = 0.3

[[models]]
name = "second"
path = "m1"
truth = 0.6

[[models]]
name = "third"
path = "m2"
truth = 0.9
""", encoding="utf-8")
    code, out, err = run_cli(capsys, "rank", "--zoo", zoo, "--n", "5", "--bootstrap", "50",
                             "--signals", "acc,conf,random,occlusion:window")
    assert code == 0, err
    assert "Ranking 3 models on sst2-phenomena" in out and "first 30.0, second 60.0, third 90.0" in out
    rows = query(tmp_path / "zoo.duckdb", "SELECT signal, pairs_used FROM fewshot_accuracy ORDER BY 1")
    assert [r[0] for r in rows] == ["acc", "conf", "occlusion:window", "random"] and all(r[1] == 3 for r in rows)
    zoo.write_text(zoo.read_text().replace("truth = 0.9\n", ""), encoding="utf-8")
    code, _, err = run_cli(capsys, "rank", "--zoo", zoo)
    assert code == 2 and "no truth for ['third']" in err


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
    assert "(1/" in text  # split into several tables, each repeating the signal column
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
