"""`beluga power` says what it can (issue 52): a σ²_seed that 2 seeds cannot estimate, a cases figure the suite's
groups cannot hold, and "unreachable" only where a bound on the power says so; with known answers for the searches
and bounds behind those messages.

The stores are hand-built (tests/store_builder.py, no training); each message is read off the CLI's output and
checked against the figures it stands beside.
"""

from __future__ import annotations

import math
import random
import re
from pathlib import Path

import numpy as np
import pytest
from helpers import query, run_cli
from scipy import integrate, stats
from store_builder import StoreBuilder, make_cases

from beluga_core.analysis.replicates.power import (
    Components,
    _anova,
    cases_needed,
    power,
    power_bound_over_cases,
    power_bound_over_seeds,
    seeds_needed,
    suite_components,
)

# --- known answers -------------------------------------------------------------------------------------------------


def test_a_component_equal_to_the_rest_in_exact_arithmetic_is_0() -> None:
    # 2 seeds × 5 cases of differences. By hand (fractions): the cases' means are −1, −1, −1, −1/2, 0, the grand mean
    # −7/10, so MS_case = 2 · (3 · (3/10)² + (1/5)² + (7/10)²) / 4 = 2/5; the residuals are ±3/10 (three cases), ∓1/5
    # and ∓7/10, their squares sum to 8/5 over (2 − 1)(5 − 1): MS_rest = 2/5 too. σ²_case = (MS_case − MS_rest) / 2 is
    # 0, where float64 leaves MS_case − MS_rest = 5.6e-17 (printed as a component before).
    d = np.array([[-1, -1, -1, -1, -1], [-1, -1, -1, 0, 1]], dtype=float)
    s, n = d.shape
    grand = d.mean()
    ms_case = s * float(((d.mean(axis=0) - grand) ** 2).sum()) / (n - 1)
    resid = d - d.mean(axis=0)[None, :] - d.mean(axis=1)[:, None] + grand
    ms_rest = float((resid ** 2).sum()) / ((s - 1) * (n - 1))
    assert ms_case == pytest.approx(0.4) and ms_rest == pytest.approx(0.4) and ms_case - ms_rest > 0
    case, rest = _anova(d)
    assert case == 0.0 and rest == pytest.approx(0.4)
    # A real one stays: cases 0 and 1 on both seeds, MS_case = 2 · (1/4 + 1/4) / 1 = 1, MS_rest 0, σ²_case 1/2.
    assert _anova(np.array([[0.0, 1.0], [0.0, 1.0]])) == (0.5, 0.0)


def test_the_power_is_a_number_far_in_the_lower_tail() -> None:
    # df 4 (5 seeds, all the variance the seeds'), ncp 10: scipy's nct.cdf(−t_crit) is NaN there, and a NaN power
    # compared below every target. Independently, T = (Z + δ) / √(V/4) with V ~ χ²(4) (density v e^(−v/2) / 4):
    # P(|T| > c) = ∫ [Φ̄(c √(v/4) − δ) + Φ(−c √(v/4) − δ)] v e^(−v/2) / 4 dv.
    c, delta = float(stats.t.ppf(0.975, 4)), 10.0

    def density(v: float) -> float:
        return v * math.exp(-v / 2) / 4

    upper = integrate.quad(lambda v: stats.norm.sf(c * math.sqrt(v / 4) - delta) * density(v), 0, math.inf)[0]
    lower = integrate.quad(lambda v: stats.norm.cdf(-c * math.sqrt(v / 4) - delta) * density(v), 0, math.inf)[0]
    expected = upper + lower
    got = power(1e-4, 1e-4, 5, 0.1)
    assert math.isfinite(got) and got == pytest.approx(expected, abs=1e-9) and got == pytest.approx(0.99999962,
                                                                                                    abs=1e-8)


def _first_reaching(comp: Components, seeds: int, effect: float, upto: int) -> int | None:
    """The fewest cases per group reaching 80 %, by trying every count (what cases_needed must agree with)."""
    for n in range(1, upto + 1):
        if power(*comp.variance(seeds, float(n)), seeds, effect) >= 0.8:
            return n
    return None


def test_cases_needed_finds_a_peak_before_the_limit() -> None:
    # σ²_seed 1e-4 at 2 seeds, σ²_case 0.05: with more cases the variance falls to σ²_seed / 2, but the test's df
    # falls to 1 (t_crit 12.7), so the power peaks at about 1,000 cases (95 %) and ends at 42 % by infinitely many.
    # The old bisection read the power at 100,000 cases, found it below 80 % and called the target unreachable.
    comp = Components(seed=1e-4, case=0.05, rest=0.0, groups=1, seeds=2, cases=20, observed=0.0)
    assert power(*comp.variance(2, math.inf), 2, 0.05) == pytest.approx(0.42096, abs=1e-4)
    assert power(*comp.variance(2, 1000.0), 2, 0.05) == pytest.approx(0.95484, abs=1e-4)
    assert cases_needed(comp.variance, 2, 0.05) == _first_reaching(comp, 2, 0.05, 1000) == 199
    assert power_bound_over_cases(comp.variance, 2, 0.05) >= 0.95


def test_cases_needed_on_the_guides_components() -> None:
    # The components docs/guides/replicates.md printed for IID→T (36 groups × 9 cases, 3 seeds): 74 % now, 11 cases
    # per group reach 80 %. The old answer, 23,131 (37,358 from these rounded figures), came of a NaN power at
    # 100,000 cases and a bisection over it.
    comp = Components(seed=1.17e-4, case=5.64e-2, rest=8.82e-2, groups=36, seeds=3, cases=9, observed=0.0)
    assert power(*comp.variance(3, 9.0), 3, 0.05) == pytest.approx(0.7426, abs=1e-4)
    assert cases_needed(comp.variance, 3, 0.05) == _first_reaching(comp, 3, 0.05, 100) == 11


def test_the_bound_over_cases_bounds_the_power_at_every_count() -> None:
    # IID→(IID+T)'s components in benchmarks/findings/RESULTS.md: at 3 seeds the power peaks at 64.6 % (82 cases per
    # group) and no number of cases gets to 80 %. The bound, from brackets of the scan's grid and the tail, is above
    # every power and within a few points of the peak.
    comp = Components(seed=3.87e-4, case=3.88e-2, rest=1.53e-1, groups=36, seeds=3, cases=9, observed=0.0)
    bound = power_bound_over_cases(comp.variance, 3, 0.05)
    counts = [*range(1, 3001), *(10 ** k for k in range(4, 13)), math.inf]
    powers = [power(*comp.variance(3, float(n)), 3, 0.05) for n in counts]
    assert max(powers) == pytest.approx(0.64572, abs=1e-4) and counts[int(np.argmax(powers))] == 82
    assert max(powers) <= bound < max(powers) + 0.03 and bound < 0.8
    assert cases_needed(comp.variance, 3, 0.05) is None


def test_the_bound_over_seeds_is_the_normal_power_of_the_case_part() -> None:
    # σ²_case 0.02 over 2 groups × 10 cases: however many seeds, the variance stays above 0.02 / 20 = 0.001, so the
    # power stays below the normal power at ncp 0.05 / √0.001 = 1.5811: Φ(1.5811 − 1.96) + Φ(−1.5811 − 1.96).
    comp = Components(seed=0.01, case=0.02, rest=0.0, groups=2, seeds=3, cases=10, observed=0.0)
    ncp, z = 0.05 / math.sqrt(0.001), 1.959964

    def phi(x: float) -> float:
        return 0.5 * math.erfc(-x / math.sqrt(2))

    assert power_bound_over_seeds(comp.variance, 10, 0.05) == pytest.approx(phi(ncp - z) + phi(-ncp - z), abs=1e-6)
    assert power_bound_over_seeds(comp.variance, 10, 0.05) == pytest.approx(0.35261, abs=1e-5)
    assert power(*comp.variance(10 ** 6, 10), 10 ** 6, 0.05) < 0.35261
    assert seeds_needed(comp.variance, 10, 0.05) is None
    # With 400 cases per group the bound is 99.99 %: enough seeds reach 80 %.
    assert seeds_needed(comp.variance, 400, 0.05) == _first_seeds(comp, 400, 0.05)


def _first_seeds(comp: Components, cases: float, effect: float) -> int | None:
    for s in range(2, 1001):
        if power(*comp.variance(s, cases), s, effect) >= 0.8:
            return s
    return None


def test_a_seed_variance_of_zero_is_not_an_estimate() -> None:
    def seeds_varying(per_seed_var: float) -> Components:
        return Components(seed=0.0, case=0.01, rest=0.2, groups=5, seeds=2, cases=20.0, observed=0.3,
                          rest_share=0.002, per_seed_var=per_seed_var)

    assert not seeds_varying(0.0).seed_estimable
    # Equal but for rounding (a few ulps of a rate): still equal.
    assert not seeds_varying(1e-33).seed_estimable
    # Spread less than the seeds' own noise explains: σ²_seed cut to 0, but measured.
    assert seeds_varying(1e-4).seed_estimable


# --- `beluga power` on hand-built stores ---------------------------------------------------------------------------


def _line(out: str) -> str:
    return " ".join(out.split())


def _components(store: Path, seeds: int) -> Components:
    """suite_components of iid-then-t@seen − iid@standard, read as `beluga power` reads them."""
    from beluga_core.analysis.replicates.seed_rows import cell_digests, load_cells
    from beluga_core.store.reader import open_store

    with open_store(store) as con:
        cells = load_cells(con, list(cell_digests(con)))
    by_config = {cell.config: rep for cell, rep in cells.items()}
    comp = suite_components(by_config["iid-then-t"], by_config["iid"])
    assert comp.seeds == seeds
    return comp


def _equal_differences_store(path: Path) -> Path:
    """2 seeds × 5 groups of 20: iid-then-t passes 15 of each group and the baseline 9 on both seeds, other cases on
    each seed. The per-seed differences of s_T are both exactly +30 points; the cases still vary."""
    cases = make_cases(per_group=20)
    builder = StoreBuilder(path, cases)
    for seed in (1, 2):
        base, better = {}, {}
        for c in cases:
            j = int(c.case_id.split("-")[1])
            better[c.case_id] = "pass" if (j + 7 * seed) % 20 < 15 else "fail"
            base[c.case_id] = "pass" if (j + 3 * seed * seed) % 20 < 9 else "fail"
        builder.add("iid", "vanilla", "standard", base, [True] * 30 + [False] * 10, seed=seed)
        builder.add("iid-then-t", "vanilla", "seen", better, [True] * 28 + [False] * 12, seed=seed)
    return path


def test_power_with_two_equal_seed_differences(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = _equal_differences_store(tmp_path / "equal.duckdb")
    # Independently: each seed's s_T difference from the raw outcomes (mean over groups of the pass rates).
    rows = query(store, """SELECT m.config, m.seed, c.scoring_group, avg((o.outcome = 'pass')::INT)
                           FROM outcomes o JOIN models m USING (model_id)
                           JOIN cases c ON c.suite = o.suite AND c.case_id = o.case_id GROUP BY ALL""")
    s_t = {(cfg, seed): np.mean([r for c2, s2, _, r in rows if (c2, s2) == (cfg, seed)]) for cfg, seed, _, _ in rows}
    assert [s_t[("iid-then-t", s)] - s_t[("iid", s)] for s in (1, 2)] == [pytest.approx(0.3)] * 2
    code, out, err = run_cli(capsys, "power", store, "--effect", "0.05")
    assert code == 0, err
    text = _line(out)
    assert "σ²_seed not estimable from 2 seeds (the per-seed differences of s_T are all equal)" in text
    assert "run another seed" in text
    # No seeds figure, no σ²_seed figure or interval, and nothing called unreachable.
    assert "seeds needed at" not in text and "[95 %" not in text and "unreachable" not in text
    # What is printed is at σ²_seed = 0, the least it can be: power at most, cases at least.
    comp = _components(store, 2)
    now = power(*comp.with_seed(0.0).variance(2, 20.0), 2, 0.05)
    assert f"power now at most {now:.0%}" in text
    n = cases_needed(comp.with_seed(0.0).variance, 2, 0.05)
    assert n is not None and f"cases per group needed at 2 seeds: at least {n:,}" in text


def _small_groups_store(path: Path) -> Path:
    """3 seeds; the toy suite's 5 groups cut to 8, 3, 5, 6 and 4 cases; iid-then-t passes about 75 %, the baseline
    about 45 %, drawn afresh on each seed."""
    sizes = {"f1": 8, "f2": 3, "f3": 5, "f4": 6, "f5": 4}
    cases = [c for c in make_cases(per_group=8) if int(c.case_id.split("-")[1]) < sizes[c.groups["functionality"]]]
    builder = StoreBuilder(path, cases)
    for seed in (1, 2, 3):
        rng = random.Random(seed)
        base = {c.case_id: "pass" if rng.random() < 0.45 else "fail" for c in cases}
        better = {c.case_id: "pass" if rng.random() < 0.75 else "fail" for c in cases}
        builder.add("iid", "vanilla", "standard", base, [rng.random() < 0.7 for _ in range(40)], seed=seed)
        builder.add("iid-then-t", "vanilla", "seen", better, [rng.random() < 0.7 for _ in range(40)], seed=seed)
    return path


def test_power_when_the_groups_are_too_small_for_the_answer(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    store = _small_groups_store(tmp_path / "small.duckdb")
    code, out, err = run_cli(capsys, "power", store, "--effect", "0.05")
    assert code == 0, err
    text = _line(out)
    m = re.search(r"cases per group needed at 3 seeds: ([\d,]+), which cannot be reached with this suite: its groups "
                  r"hold 3–8 cases in all \(3–8 in T_test here\)", text)
    assert m, text
    n = int(m.group(1).replace(",", ""))
    assert n > 8
    # The figure is the fewest cases per group that reach 80 % at 3 seeds.
    comp = _components(store, 3)
    assert power(*comp.variance(3, float(n)), 3, 0.05) >= 0.8 > power(*comp.variance(3, float(n - 1)), 3, 0.05)
    # At 5 cases per group no number of seeds gets there either: said where the bound over seeds says so.
    assert text.count("unreachable") == 1 and "seeds needed at 5 cases per group: unreachable" in text
    assert power_bound_over_seeds(comp.variance, comp.cases, 0.05) < 0.8


def _spread_seeds_store(path: Path) -> Path:
    """3 seeds × 5 groups of 20: iid-then-t passes about 75 % on two seeds and 25 % on the third, the baseline 45 %:
    the training runs disagree by 50 points."""
    cases = make_cases(per_group=20)
    builder = StoreBuilder(path, cases)
    for seed in (1, 2, 3):
        rng = random.Random(seed)
        base = {c.case_id: "pass" if rng.random() < 0.45 else "fail" for c in cases}
        share = 0.25 if seed == 3 else 0.75
        better = {c.case_id: "pass" if rng.random() < share else "fail" for c in cases}
        builder.add("iid", "vanilla", "standard", base, [rng.random() < 0.7 for _ in range(40)], seed=seed)
        builder.add("iid-then-t", "vanilla", "seen", better, [rng.random() < 0.7 for _ in range(40)], seed=seed)
    return path


def _case_spread_store(path: Path) -> Path:
    """3 seeds × 5 groups of 4: in every group iid-then-t passes cases 0 and 1, the baseline 2 and 3, on every
    seed (a case-by-case difference of ±1 the seeds share), and iid-then-t one or two more cases on seeds 1 and 3."""
    cases = make_cases(per_group=4)
    builder = StoreBuilder(path, cases)
    extra = {1: {"f1-2"}, 2: set(), 3: {"f2-3", "f4-2"}}
    for seed in (1, 2, 3):
        base = {c.case_id: "pass" if c.case_id[-1] in "23" else "fail" for c in cases}
        better = {c.case_id: "pass" if c.case_id[-1] in "01" or c.case_id in extra[seed] else "fail" for c in cases}
        builder.add("iid", "vanilla", "standard", base, [True] * 30 + [False] * 10, seed=seed)
        builder.add("iid-then-t", "vanilla", "seen", better, [True] * 30 + [False] * 10, seed=seed)
    return path


def test_power_of_an_unreachable_effect(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The training runs disagree: no number of cases reaches 80 % at 3 seeds; enough seeds do.
    store = _spread_seeds_store(tmp_path / "spread.duckdb")
    code, out, err = run_cli(capsys, "power", store, "--effect", "0.05")
    assert code == 0, err
    text = _line(out)
    m = re.search(r"cases per group needed at 3 seeds: unreachable: with any number of cases per group the power "
                  r"stays at most ([\d.]+)% \(more cases do not shrink the part of the variance from the training "
                  r"runs\)", text)
    assert m, text
    at_most = float(m.group(1)) / 100
    assert text.count("unreachable") == 1 and re.search(r"seeds needed at 20 cases per group: [\d,]+ \[", text)
    comp = _components(store, 3)
    assert power_bound_over_cases(comp.variance, 3, 0.05) <= at_most < 0.8
    # Indeed: from 1 case per group to 10¹², and at the limit, the power stays below the printed bound.
    for n in [*range(1, 200), *(10 ** k for k in range(3, 13)), math.inf]:
        assert power(*comp.variance(3, float(n)), 3, 0.05) <= at_most
    assert power_bound_over_seeds(comp.variance, 20.0, 0.05) >= 0.8

    # The cases disagree, the seeds hardly: no number of seeds reaches 80 % at 4 cases per group; more cases would
    # (765 at 3 seeds), but the suite's groups hold 4.
    store = _case_spread_store(tmp_path / "cases.duckdb")
    code, out, err = run_cli(capsys, "power", store, "--effect", "0.05")
    assert code == 0, err
    text = _line(out)
    m = re.search(r"seeds needed at 4 cases per group: unreachable: with any number of seeds the power stays at most "
                  r"([\d.]+)% \(more seeds do not shrink the part of the variance from the cases\)", text)
    assert m, text
    at_most = float(m.group(1)) / 100
    assert text.count("unreachable") == 1
    assert "cases per group needed at 3 seeds: 765, which cannot be reached with this suite: its groups hold 4 cases" \
        in text
    comp = _components(store, 3)
    assert power_bound_over_seeds(comp.variance, 4.0, 0.05) <= at_most < 0.8
    for s in [*range(2, 200), *(10 ** k for k in range(3, 10))]:
        assert power(*comp.variance(s, 4.0), s, 0.05) <= at_most
    assert power_bound_over_cases(comp.variance, 3, 0.05) >= 0.8


def test_power_beyond_the_search_is_not_unreachable(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The training runs disagree and the effect is 2 points: more than 1,000 seeds at 20 cases per group, at the
    # estimate and at both ends of σ²_seed's interval; but enough seeds would, so it is not "unreachable" (and the
    # bracketed figures are printed, not swallowed as a rich style tag).
    store = _spread_seeds_store(tmp_path / "spread.duckdb")
    code, out, err = run_cli(capsys, "power", store, "--effect", "0.02")
    assert code == 0, err
    text = _line(out)
    assert "seeds needed at 20 cases per group: more than 1,000 [more than 1,000, more than 1,000];" in text
    comp = _components(store, 3)
    assert seeds_needed(comp.variance, 20.0, 0.02) is None
    assert power_bound_over_seeds(comp.variance, 20.0, 0.02) >= 0.8


def test_a_bound_below_the_target_never_prints_as_the_target() -> None:
    from beluga_core.cli.power_cmd import _at_most

    # Rounded up (so "at most" holds), with the decimals it takes to stay below the target.
    assert [_at_most(p, 0.8) for p in (0.5, 0.7912, 0.796, 0.79991, 0.7999999)] == \
        ["50%", "79.2%", "79.6%", "79.991%", "just below 80%"]


def _iid_moves_store(path: Path) -> Path:
    """3 seeds × 5 groups of 20: both cells give the same outcomes on every seed (s_T's difference is +25 points
    on each), while iid-then-t's D_test accuracy moves from seed to seed (30, 22, 34 of 40; the baseline 28)."""
    cases = make_cases(per_group=20)
    builder = StoreBuilder(path, cases)
    base = {c.case_id: "pass" if int(c.case_id.split("-")[1]) < 9 else "fail" for c in cases}
    better = {c.case_id: "pass" if int(c.case_id.split("-")[1]) < 14 else "fail" for c in cases}
    right = {1: 30, 2: 22, 3: 34}
    for seed in (1, 2, 3):
        builder.add("iid", "vanilla", "standard", base, [True] * 28 + [False] * 12, seed=seed)
        mine = [(i * 7 + seed) % 40 < right[seed] for i in range(40)]
        builder.add("iid-then-t", "vanilla", "seen", better, mine, seed=seed)
    return path


def test_power_of_g_rests_on_the_spread_of_g_itself(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """s_T's per-seed differences are all equal; G's are not (s_iid moves). `power --statistic G` used to call σ²_seed
    not estimable (it read s_T's) and bracket the seeds by s_T's σ²_seed alone; its σ²_seed is ΔG's, checked here
    from the raw rows: the per-seed ΔG's variance less each seed's own D_test noise (two-way ANOVA's residual)."""
    store = _iid_moves_store(tmp_path / "g.duckdb")
    outcomes = query(store, """SELECT m.config, m.seed, c.scoring_group, avg((o.outcome = 'pass')::INT)
                               FROM outcomes o JOIN models m USING (model_id)
                               JOIN cases c ON c.suite = o.suite AND c.case_id = o.case_id GROUP BY ALL""")
    s_t = {(cfg, seed): np.mean([r for c2, s2, _, r in outcomes if (c2, s2) == (cfg, seed)])
           for cfg, seed, _, _ in outcomes}
    rows = query(store, """SELECT m.config, m.seed, p.correct FROM iid_predictions p JOIN models m USING (model_id)
                           ORDER BY m.config, m.seed, p.example_idx""")
    correct = {(cfg, seed): np.array([c for c2, s2, c in rows if (c2, s2) == (cfg, seed)], dtype=float)
               for cfg, seed, _ in rows}
    seeds = (1, 2, 3)
    s_iid = {k: v.mean() for k, v in correct.items()}
    g = {k: 2 * s_t[k] * s_iid[k] / (s_t[k] + s_iid[k]) for k in s_t}
    delta = np.array([g[("iid-then-t", s)] - g[("iid", s)] for s in seeds])
    assert len({round(s_t[("iid-then-t", s)] - s_t[("iid", s)], 12) for s in seeds}) == 1
    st, si = np.mean([s_t[("iid-then-t", s)] for s in seeds]), np.mean([s_iid[("iid-then-t", s)] for s in seeds])
    gb = 2 * st ** 2 / (st + si) ** 2                         # ∂G/∂s_iid at A's means
    d = np.array([correct[("iid-then-t", s)] - correct[("iid", s)] for s in seeds])   # seeds × examples
    resid = d - d.mean(axis=0) - d.mean(axis=1)[:, None] + d.mean()
    rest = (resid ** 2).sum() / ((d.shape[0] - 1) * (d.shape[1] - 1))
    share = gb ** 2 * rest / d.shape[1]                       # s_T's residual is 0: its outcomes repeat every seed
    sigma = max(delta.var(ddof=1) - share, 0.0)
    hi = 2 * delta.var(ddof=1) / stats.chi2.ppf(0.025, 2) - share
    code, out, err = run_cli(capsys, "power", store, "--effect", "0.2", "--statistic", "G")
    assert code == 0, err
    text = _line(out)
    m = re.search(r"components σ²_seed of ΔG ([\d.e+-]+) \[95 %: ([\d.e+-]+), ([\d.e+-]+)\]", text)
    assert m, text
    assert float(m.group(1)) == pytest.approx(sigma, rel=5e-3) and float(m.group(3)) == pytest.approx(hi, rel=5e-3)
    assert re.search(r"seeds needed at 20 cases per group: [\d,]+ \[[\d,]+, (more than )?[\d,]+\]", text), text
    assert "not estimable" not in text


def test_power_refuses_what_it_would_misread(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = _spread_seeds_store(tmp_path / "spread.duckdb")
    code, _, err = run_cli(capsys, "power", store, "--effect", "2.0")
    assert code == 2 and "--effect 2: the difference to detect is a fraction" in err and "write 0.02" in err, err
    code, _, err = run_cli(capsys, "power", store, "--effect", "0.05", "--a", "iid-then-t/vanila@seen")
    assert code == 2 and "--a iid-then-t/vanila@seen: no such cell in this store; did you mean " \
        "'iid-then-t/vanilla@seen'?" in _line(err), err
    code, _, err = run_cli(capsys, "power", store, "--effect", "0.05", "--statistic", "pass_rate", "--group", "f9")
    assert code == 2
    assert "--group f9: no such scoring group in the compared cells; their groups: f1, f2, f3, f4, f5" in _line(err)


def test_the_bound_over_cases_is_exact_where_counts_are_consecutive() -> None:
    """A new user's G cell: σ²_seed of ΔG 0, Δs_T all rest, D_test's rest fixed. No count of cases reaches 80 %
    (the power tends to t(1)'s at the D_test part, about 73 %), but the continuous bound between 1 and 2 cases, where
    the variance halves, said 95 %, so `power` printed "more than 100,000" beside an effect no count reaches."""
    from beluga_core.analysis.replicates.power import GComponents

    suite = Components(0.0, 0.0, 4.9e-3, 4, 2, 17.0, 0.0)
    iid = Components(0.0, 0.0, 1.6e-2, 1, 2, 150.0, 0.0)
    g = GComponents(0.0, suite, iid, 0.51, 0.49, 0.0, 1e-5)
    bound = power_bound_over_cases(g.variance, 2, 0.05)
    every = [power(*g.variance(2, float(n)), 2, 0.05) for n in range(1, 5000)]
    # By hand at the limit: SE² = 0.49² · 0.016 / (2 · 150), ncp = 0.05 / SE, power of t with 1 df.
    ncp = 0.05 / math.sqrt(0.49 ** 2 * 0.016 / 300)
    crit = stats.t.ppf(0.975, 1)
    limit = stats.nct.sf(crit, 1, ncp) + stats.nct.sf(crit, 1, -ncp)
    assert max(every) <= bound < 0.8 and bound == pytest.approx(max(*every, limit), abs=2e-3)
