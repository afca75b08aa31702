"""Few-shot ranking (beluga rank): the statistics on hand-computed cases, and the whole path on a tiny run with
[fewshot] probe pools — pools in the store, disjointness, candidates and truths, the CLI, stored results and their
views — and on a zoo of saved checkpoints."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from helpers import DATA, query, run_cli
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
