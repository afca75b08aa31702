"""Seeds as replicates: the three intervals, the seed-paired marks, the cached table and `beluga power`.

Known answers are computed by hand; the store-level tests recompute every cached figure from the raw outcomes in
plain Python (no view, no beluga function) and compare.
"""

from __future__ import annotations

import math
import random
from pathlib import Path

import numpy as np
import pytest
from helpers import query, run_cli
from store_builder import StoreBuilder, make_cases

from beluga_core.analysis.refresh import refresh
from beluga_core.analysis.replicates.intervals import (
    Replicates,
    cell_intervals,
    difference_intervals,
    shared_case_variance,
    t_interval,
    two_stage_interval,
)
from beluga_core.analysis.replicates.power import Components, power, seeds_needed


def test_the_seed_level_interval_is_mean_plus_minus_t_times_the_standard_error() -> None:
    iv = t_interval([0.5, 0.6, 0.7])
    # sd 0.1, se 0.1/√3 = 0.057735, t(2) = 4.302653: half width 0.248414
    assert iv.mean == pytest.approx(0.6) and iv.df == 2
    assert (iv.lo, iv.hi) == pytest.approx((0.6 - 0.248414, 0.6 + 0.248414), abs=1e-6)
    # p of mean 0.6 against 0: t = 10.392, two-sided with 2 df: 0.009133
    assert iv.p == pytest.approx(0.009133, abs=1e-6)
    one = t_interval([0.5, float("nan")])
    assert (one.mean, one.lo, one.hi) == (0.5, None, None)


def test_the_hierarchical_interval_adds_the_case_variance_with_satterthwaite_df() -> None:
    # Two seeds 0.4 and 0.6: sd² / S = 0.02 / 2 = 0.01. No case variance: df = 0.01² · 1 / 0.01² = 1, t(1) = 12.7062.
    iv = two_stage_interval([0.4, 0.6], np.array([0.5, 0.5, 0.5]))
    assert (iv.lo, iv.hi) == pytest.approx((0.5 - 1.270620, 0.5 + 1.270620), abs=1e-5)
    # Case draws 0.4, 0.6: variance 0.02 (ddof 1). Total 0.03, df = 0.03² · 1 / 0.01² = 9, t(9) = 2.262157:
    # half width 2.262157 · √0.03 = 0.391817.
    iv = two_stage_interval([0.4, 0.6], np.array([0.4, 0.6]))
    assert iv.df == pytest.approx(9.0)
    assert (iv.lo, iv.hi) == pytest.approx((0.5 - 0.391817, 0.5 + 0.391817), abs=1e-5)
    # One seed: the case variance alone, with the normal quantile.
    iv = two_stage_interval([0.5], np.array([0.4, 0.6]))
    assert iv.df == math.inf and iv.hi == pytest.approx(0.5 + 1.959964 * math.sqrt(0.02), abs=1e-6)


def test_the_case_part_is_what_the_seeds_share_not_their_own_noise() -> None:
    # Three rounds × two seeds. Seed columns (0.4, 0.5, 0.6) and (0.5, 0.5, 0.5)+(−0.1, 0, 0.1)·1 = (0.4, 0.5, 0.6):
    # identical columns share all their variance, 0.01 (ddof 1).
    same = np.array([[0.4, 0.4], [0.5, 0.5], [0.6, 0.6]])
    assert shared_case_variance(same) == pytest.approx(0.01)
    # Columns (0.4, 0.5, 0.6) and (0.6, 0.5, 0.4): covariance −0.01, nothing shared (clamped at 0); the variance of
    # their mean (0.5 every round) is 0 too, but the columns' own variance (0.01 each) is what sd²/S holds.
    assert shared_case_variance(np.array([[0.4, 0.6], [0.5, 0.5], [0.6, 0.4]])) == 0.0
    # Columns x = (0, 0.2, 0.4) and y = (0.1, 0.1, 0.4): cov(x, y) = ((−.2)(−.1) + 0·(−.1) + (.2)(.2)) / 2 = 0.03.
    assert shared_case_variance(np.array([[0.0, 0.1], [0.2, 0.1], [0.4, 0.4]])) == pytest.approx(0.03)
    # A seed whose statistic is undefined in some round is left out; one seed left: its own variance.
    assert shared_case_variance(np.array([[0.4, np.nan], [0.5, 0.5], [0.6, 0.6]])) == pytest.approx(0.01)
    # In the interval: seeds 0.4, 0.6 (sd²/S = 0.01) and a shared case variance 0.03: total 0.04,
    # df = 0.04² · 1 / 0.01² = 16, t(16) = 2.119905, half width 2.119905 · 0.2 = 0.423981.
    iv = two_stage_interval([0.4, 0.6], np.array([[0.0, 0.1], [0.2, 0.1], [0.4, 0.4]]))
    assert iv.df == pytest.approx(16.0)
    assert (iv.lo, iv.hi) == pytest.approx((0.5 - 0.423981, 0.5 + 0.423981), abs=1e-5)


def test_the_interval_of_the_seed_variance_takes_the_rest_share_out() -> None:
    # Per-seed values with sample variance 0.01 over 3 seeds, of which 0.004 is each seed's own noise: the chi-square
    # interval of 0.01 with 2 df is [2 · 0.01 / 7.377759, 2 · 0.01 / 0.0506356] = [0.0027108, 0.394979]; less
    # 0.004 and cut at 0: [0, 0.390979]. σ²_seed itself (0.006) is inside.
    comp = Components(seed=0.006, case=0.0, rest=0.0, groups=1, seeds=3, cases=1, observed=0.0, rest_share=0.004,
                      per_seed_var=0.01)
    lo, hi = comp.seed_interval()
    assert lo == 0.0 and hi == pytest.approx(0.390979, abs=1e-6)
    # An estimate cut to 0 (the seeds spread less than their own noise): still an upper end, not [0, 0].
    cut = Components(seed=0.0, case=0.0, rest=0.0, groups=1, seeds=3, cases=1, observed=0.0, rest_share=0.004,
                     per_seed_var=0.002)
    assert cut.seed_interval() == (0.0, pytest.approx(2 * 0.002 / 0.0506356 - 0.004, abs=1e-6))
    assert cut.with_seed(0.1).seed_interval() == cut.seed_interval()


def test_no_variation_gives_no_interval_and_no_power_figure() -> None:
    # Every seed and every case the same (a degenerate model, one case per group): nothing measured to resolve with.
    assert two_stage_interval([0.3, 0.3, 0.3], np.zeros((5, 3))).hi is None
    assert t_interval([0.3, 0.3, 0.3]).lo is None
    from beluga_core.cli.power_cmd import power_line

    a = _cell([[1, 0], [1, 0], [1, 0]], [0, 1], iid=[[1, 0]] * 3)
    b = _cell([[0, 0], [0, 0], [0, 0]], [0, 1], iid=[[1, 0]] * 3)
    line = power_line(a, b, "s_T", None, 0.05, 0.8, 0.05)
    assert "no variation between the seeds or the cases" in line and "1 case per group" in line


def _cell(passed: list[list[int]], groups: list[int], iid: list[list[int]] | None = None) -> Replicates:
    p = np.asarray(passed, dtype=float)
    return Replicates(tuple(range(len(passed))), tuple(f"g{g}" for g in sorted(set(groups))), np.asarray(groups), p,
                      np.ones_like(p), None if iid is None else np.asarray(iid, dtype=float))


def test_per_seed_figures_and_a_constant_difference() -> None:
    # 2 groups × 2 cases, 3 seeds. s_T per seed = mean of the two groups' pass rates.
    a = _cell([[1, 1, 1, 0], [1, 0, 1, 1], [1, 1, 0, 0]], [0, 0, 1, 1], iid=[[1, 1, 0, 1]] * 3)
    assert a.per_seed("s_suite").tolist() == [0.75, 0.75, 0.5]
    assert a.per_seed("s_iid").tolist() == [0.75] * 3
    assert a.per_seed("g") == pytest.approx([0.75, 0.75, 2 * 0.5 * 0.75 / 1.25])
    assert a.per_seed("pooled").tolist() == [0.75, 0.75, 0.5]
    # B fails one case every seed passes in A: A − B is 0.25 on every seed; no spread between seeds, and the same
    # case resampled in A and B: no seed interval (no spread measured), the hierarchical one the case variance alone.
    b_passed = np.asarray(a.passed).copy()
    b_passed[:, 0] = 0
    b = Replicates(a.seeds, a.groups, a.case_group, b_passed, a.evaluable, a.iid)
    d = difference_intervals(a, b, ["s_suite"], 500, np.random.default_rng(0))["s_suite"]
    assert (d["seed"].mean, d["seed"].lo, d["seed"].hi) == (pytest.approx(0.25), None, None)
    assert d["hierarchical"].df == math.inf and d["hierarchical"].lo < 0.25 < d["hierarchical"].hi


def test_the_case_bootstrap_variance_matches_the_analytic_one() -> None:
    # One group of 40 cases, two seeds that agree on most cases. Resampling the cases (the same draw for both seeds)
    # gives the two seeds' pass rates a covariance of cov(x, y) / n (population covariance of the case outcomes):
    # the case part of the hierarchical interval.
    rng = np.random.default_rng(7)
    first = (rng.random(40) < 0.6).astype(float)
    second = first.copy()
    second[rng.choice(40, 8, replace=False)] = 1 - second[:8]
    passed = np.stack([first, second])
    cell = Replicates((0, 1), ("g",), np.zeros(40, dtype=np.int64), passed, np.ones_like(passed))
    analytic = float(np.cov(first, second, ddof=0)[0, 1]) / 40
    assert analytic > 0
    iv = cell_intervals(cell, ["s_suite"], 20_000, np.random.default_rng(1))["s_suite"]
    seed_var = passed.mean(axis=1).var(ddof=1) / 2
    half = iv["hierarchical"].hi - iv["hierarchical"].mean
    df = (seed_var + analytic) ** 2 / seed_var ** 2
    expected = float(__import__("scipy").stats.t.ppf(0.975, df)) * math.sqrt(seed_var + analytic)
    assert half == pytest.approx(expected, rel=0.03)   # 20,000 rounds: the variance to about 1 %


def _three_seed_store(path: Path, *, flip_one_seed: bool) -> Path:
    """The toy suite (5 groups × 20 cases, 40 D_test examples) with the IID baseline and iid-then-t at three seeds:
    A passes 75 % and B 45 % of the cases; with ``flip_one_seed`` A's third seed passes only 25 %."""
    cases = make_cases(per_group=20)
    builder = StoreBuilder(path, cases)
    for seed in (1, 2, 3):
        rng = random.Random(seed)
        base = {c.case_id: "pass" if rng.random() < 0.45 else "fail" for c in cases}
        share = 0.25 if (flip_one_seed and seed == 3) else 0.75
        better = {c.case_id: "pass" if rng.random() < share else "fail" for c in cases}
        builder.add("iid", "vanilla", "standard", base, [rng.random() < 0.7 for _ in range(40)], seed=seed)
        builder.add("iid-then-t", "vanilla", "seen", better, [rng.random() < 0.7 for _ in range(40)], seed=seed)
    return path


def test_the_cached_intervals_equal_an_independent_recomputation(tmp_path: Path) -> None:
    store = _three_seed_store(tmp_path / "s.duckdb", flip_one_seed=False)
    done = refresh(store, rounds=200)
    assert done.intervals_computed > 0 and done.cells_kept == 0
    # Independently: s_T per seed from the raw outcomes, then mean ± t(2) · sd / √3.
    rows = query(store, """SELECT m.seed, c.scoring_group, o.outcome FROM outcomes o JOIN models m USING (model_id)
                           JOIN cases c ON c.suite = o.suite AND c.case_id = o.case_id
                           WHERE m.config = 'iid-then-t'""")
    per_seed = []
    for seed in (1, 2, 3):
        groups = sorted({g for s, g, _ in rows if s == seed})
        rates = [sum(o == "pass" for s, g, o in rows if s == seed and g == grp)
                 / sum(o != "skip" for s, g, o in rows if s == seed and g == grp) for grp in groups]
        per_seed.append(sum(rates) / len(rates))
    mean = sum(per_seed) / 3
    sd = math.sqrt(sum((x - mean) ** 2 for x in per_seed) / 2)
    ((n, m, lo, hi, status),) = query(store, """SELECT n_seeds, mean, seed_lo, seed_hi, status FROM replicate_summary
                                                WHERE config = 'iid-then-t' AND statistic = 's_suite' AND grp = ''
                                                  AND base_config IS NULL""")
    assert (n, status) == (3, "current")
    half = 4.302653 * sd / math.sqrt(3)
    assert (m, lo, hi) == pytest.approx((mean, mean - half, mean + half))
    # The mean equals g_summary's (the views' per-seed figures).
    assert m == pytest.approx(query(store, "SELECT s_suite_mean FROM g_summary WHERE config = 'iid-then-t'")[0][0])
    # Kept when nothing changed; stale (and recomputed) when a model changes.
    assert refresh(store, rounds=200).cells_kept == len(query(store, "SELECT * FROM replicate_inputs"))
    builder = StoreBuilder(store, make_cases(per_group=20))
    builder.clock = builder.clock.replace(year=2030)
    builder.add("iid-then-t", "vanilla", "seen", {c.case_id: "pass" for c in make_cases(per_group=20)},
                [True] * 40, seed=2)
    assert {r[0] for r in query(store, "SELECT status FROM replicate_summary WHERE config = 'iid-then-t'")} == \
        {"stale"}
    refresh(store, rounds=200)
    assert {r[0] for r in query(store, "SELECT status FROM replicate_summary")} == {"current"}


def test_marks_over_seeds_follow_the_difference_interval(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = _three_seed_store(tmp_path / "good.duckdb", flip_one_seed=False)
    flipped = _three_seed_store(tmp_path / "flipped.duckdb", flip_one_seed=True)
    for store in (good, flipped):
        refresh(store, rounds=300)
    ((ordering, p),) = query(good, """SELECT ordering, p_hier FROM replicate_summary WHERE config = 'iid-then-t'
                                      AND statistic = 'g' AND base_config = 'iid'""")
    assert ordering == "A > B" and p < 0.05
    ((ordering,),) = query(flipped, """SELECT ordering FROM replicate_summary WHERE config = 'iid-then-t'
                                       AND statistic = 'g' AND base_config = 'iid'""")
    assert ordering == "not resolved"
    # The flipped store's per-seed randomization tests are significant on two seeds of three, in opposite
    # directions: seeds as replicates do not resolve it, and the report marks nothing.
    code, out, _ = run_cli(capsys, "report", flipped)
    assert code == 0 and "▲" not in out and "▼" not in out and "±" in out
    code, out, _ = run_cli(capsys, "report", good)
    text = " ".join(out.split())
    # Three seeds are below HIERARCHICAL_MIN_SEEDS: the ± and the marks are the seed-level t's, and the note says why.
    assert code == 0 and "▲" in out and "half the seed-level t interval over 3 seeds" in text
    assert "the 95 % interval of the difference, paired by seed" in text


def test_power_of_the_two_stage_test() -> None:
    # Known answer with the normal limit (no seed component): SE 0.02, effect 0.056: ncp 2.8, power
    # Φ(2.8 − 1.959964) + Φ(−2.8 − 1.959964) = 0.79961.
    assert power(0.0004, 0.0, 10, 0.056) == pytest.approx(0.79961, abs=1e-4)
    # Seeds only: σ²_seed 0.01, S seeds, SE² = 0.01 / S; 80 % power for 0.05 needs S with t(S−1) noncentral.
    comp = Components(seed=0.01, case=0.0, rest=0.0, groups=1, seeds=3, cases=10, observed=0.05)
    s = seeds_needed(comp.variance, 10, 0.05)
    assert s is not None
    total, seed_part = comp.variance(s, 10)
    assert power(total, seed_part, s, 0.05) >= 0.8 > power(*comp.variance(s - 1, 10), s - 1, 0.05)
    # z-approximation: n ≈ (1.96 + 0.84)² · 0.01 / 0.05² = 31.4; the t correction adds about two.
    assert 32 <= s <= 36


def test_the_recommended_seeds_reach_the_power_in_simulation() -> None:
    # Seeds dominate: per-seed differences N(0.05, 0.1²) plus case noise; the recommendation for 80 % power
    # reaches it in 400 simulated studies (binomial sd of the rate 2 points: within 6 of 80).
    comp = Components(seed=0.01, case=0.0, rest=0.0, groups=1, seeds=3, cases=1, observed=0.05)
    s = seeds_needed(comp.variance, 1, 0.05)
    assert s is not None
    rng = np.random.default_rng(0)
    hits = 0
    for _ in range(400):
        iv = two_stage_interval(rng.normal(0.05, 0.1, size=s), np.zeros(2))
        hits += bool(iv.excludes_zero())
    assert abs(hits / 400 - 0.8) <= 0.06


def test_beluga_power_on_a_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = _three_seed_store(tmp_path / "s.duckdb", flip_one_seed=True)
    code, out, err = run_cli(capsys, "power", store, "--effect", "0.05")
    assert code == 0, err
    text = " ".join(out.split())
    assert "iid-then-t/vanilla@seen − iid/vanilla@standard (sentiment): observed" in text
    assert "seeds needed at 20 cases per group:" in text and "power now" in text
    code, out, err = run_cli(capsys, "power", store, "--effect", "0.05", "--statistic", "pass_rate", "--group", "f1")
    assert code == 0 and "(1 group(s))" in " ".join(out.split())
    code, _, err = run_cli(capsys, "power", store, "--effect", "0.05", "--statistic", "pass_rate")
    assert code == 2 and "--statistic pass_rate needs --group GROUP" in err, err
    code, _, err = run_cli(capsys, "power", store, "--effect", "0.05", "--group", "f1")
    assert code == 2 and "--group is for --statistic pass_rate only" in err, err
    one = StoreBuilder(tmp_path / "one.duckdb", make_cases(per_group=5))
    one.add("iid", "vanilla", "standard", {c.case_id: "pass" for c in make_cases(per_group=5)}, [True] * 4)
    code, _, err = run_cli(capsys, "power", tmp_path / "one.duckdb", "--effect", "0.05")
    assert code == 2 and "two or more seeds" in err
