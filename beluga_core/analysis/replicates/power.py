"""How many seeds and T_test cases a question needs (``beluga power``; docs/method.md, "Power").

For a difference between two cells paired by seed and case (a configuration against the IID baseline, or two
scenarios), every case c of group g and seed s gives d[s, c] = outcome_A − outcome_B (pass 1, fail 0). Within each
group a two-way random-effects ANOVA of that S × n_g table (method of moments) splits it into a case component
σ²_case,g (MS_case − MS_rest) / S and the rest σ²_rest,g = MS_rest; between seeds, the spread of the per-seed
difference of s_T (or of the group's pass rate) less what the rest contributes gives the training-run component
σ²_seed. With S′ seeds and n′ cases per group the difference's variance is

    s_T:        σ²_seed / S′ + mean_g σ²_case,g / (G n′) + mean_g σ²_rest,g / (G S′ n′)
    pass rate:  σ²_seed,g / S′ + σ²_case,g / n′ + σ²_rest,g / (S′ n′)
    G:          σ²_seed,G / S′ + (∂G/∂s_T)² [case and rest of Δs_T as above] + (∂G/∂s_iid)² [those of Δs_iid
                over the D_test examples, whose number is not a choice here: D_test is fixed]; σ²_seed,G from the
                spread of the per-seed ΔG itself (the training runs move s_T and s_iid together)

and the test is the two-stage t of the hierarchical interval (Welch–Satterthwaite df): power = P(|T| > t_crit)
for T noncentral t with ncp = d / SE. σ²_seed rests on S − 1 degrees of freedom, so the recommendation is given
at its estimate and at the ends of its 95 % chi-square interval; when the per-seed differences are all equal it is
not estimable at all (``Components.seed_estimable``). A search that finds no count up to MAX_SEEDS or MAX_CASES is
not a proof that none does: ``power_bound_over_seeds`` and ``power_bound_over_cases`` bound the power over every
count, and only a bound below the target means unreachable.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import stats

from beluga_core.analysis.replicates.intervals import HIERARCHICAL_MIN_SEEDS, Replicates, aligned
from beluga_core.analysis.significance.tests_on_counts import harmonic

MAX_SEEDS = 1000
MAX_CASES = 100_000
# Per-seed values equal but for rounding (sd 1e-12 points of a rate) count as equal: their variance measures nothing.
EQUAL_VARIANCE = 1e-24
# cases_needed's scan: about 10 % apart, so the bisection after it stays within one rise of the power.
_CASE_GRID = sorted({round(1.1 ** k) for k in range(int(math.log(MAX_CASES, 1.1)) + 1)} | {MAX_CASES})


@dataclass(frozen=True)
class Components:
    """Variance components of a difference, on the scale of one seed and one case per group."""

    seed: float                 # σ²_seed: between training runs (of the statistic, per seed)
    case: float                 # mean over groups of σ²_case,g
    rest: float                 # mean over groups of σ²_rest,g
    groups: int                 # G (1 for a group's pass rate)
    seeds: int                  # S the components were estimated from
    cases: float                # the mean n_g they were estimated at
    observed: float             # the observed difference (mean over seeds)
    # What the per-seed values' sample variance estimates beside σ²_seed: each seed's own noise, σ²_rest / (G n).
    rest_share: float = 0.0
    per_seed_var: float | None = None   # that sample variance (None: take σ²_seed + rest_share)

    def variance(self, seeds: float, cases: float) -> tuple[float, float]:
        """(total variance of the mean difference, the part the seeds estimate) with ``seeds`` seeds and ``cases``
        per group. The second is what sd²/S estimates, on S − 1 degrees of freedom: the training runs' spread and
        each run's own noise on its cases (σ²_rest); it sets the test's Welch–Satterthwaite df. Either may be
        ``math.inf``: the limit the power bounds read."""
        rest = self.rest / (self.groups * seeds * cases)
        seed_part = self.seed / seeds + rest
        return seed_part + self.case / (self.groups * cases), seed_part

    def seed_interval(self, level: float = 0.95) -> tuple[float, float]:
        """The interval of σ²_seed: the chi-square interval (S − 1 degrees of freedom) of what the per-seed
        variance estimates, σ²_seed + rest_share, less rest_share, at least 0. So an estimate of σ²_seed cut to 0
        (the seeds spread no more than their own noise explains) still has an upper end."""
        return _seed_interval(self.seeds, self.per_seed_var, self.seed, self.rest_share, level)

    @property
    def seed_estimable(self) -> bool:
        """Whether the per-seed values differ at all. When every seed gives the same difference (two seeds can, by
        chance) their variance, 0, says nothing of σ²_seed: its interval would be [0, 0], not merely loose."""
        v = self.per_seed_var if self.per_seed_var is not None else self.seed + self.rest_share
        return v > EQUAL_VARIANCE

    def with_seed(self, seed: float) -> Components:
        return Components(seed, self.case, self.rest, self.groups, self.seeds, self.cases, self.observed,
                          self.rest_share, self.per_seed_var)


def _seed_interval(seeds: int, per_seed_var: float | None, seed: float, rest_share: float,
                   level: float) -> tuple[float, float]:
    df = seeds - 1
    if df < 1:
        return (0.0, float("inf"))
    v = per_seed_var if per_seed_var is not None else seed + rest_share
    lo = df * v / stats.chi2.ppf(0.5 + level / 2, df) - rest_share
    hi = df * v / stats.chi2.ppf(0.5 - level / 2, df) - rest_share
    return max(float(lo), 0.0), max(float(hi), 0.0)


def _anova(d: np.ndarray) -> tuple[float, float]:
    """(σ²_case, σ²_rest) of an S × n table of differences (rows seeds, columns cases), by moments."""
    s, n = d.shape
    if n < 2:
        return 0.0, 0.0
    grand = d.mean()
    case_means = d.mean(axis=0)
    seed_means = d.mean(axis=1)
    ms_case = s * float(((case_means - grand) ** 2).sum()) / (n - 1)
    if s < 2:
        return max(ms_case, 0.0), 0.0
    resid = d - case_means[None, :] - seed_means[:, None] + grand
    ms_rest = float((resid ** 2).sum()) / ((s - 1) * (n - 1))
    return excess(ms_case, ms_rest) / s, ms_rest


def _group_tables(a: Replicates, b: Replicates) -> list[np.ndarray]:
    """Per scoring group (that s_T scores), the S × n table of A − B over the cases both evaluated on every seed."""
    out = []
    for g in range(len(a.groups)):
        if not a.scored[g]:
            continue
        cols = np.flatnonzero(a.case_group == g)
        both = (a.evaluable[:, cols] > 0).all(axis=0) & (b.evaluable[:, cols] > 0).all(axis=0)
        cols = cols[both]
        if len(cols):
            out.append(a.passed[:, cols] - b.passed[:, cols])
    return out


def suite_components(a: Replicates, b: Replicates) -> Components:
    """Components of Δs_T (A − B, paired by seed and case)."""
    a, b = aligned(a, b)
    tables = _group_tables(a, b)
    if not tables:
        raise ValueError("no scoring group with cases both cells evaluated")
    parts = [_anova(t) for t in tables]
    case = float(np.mean([p[0] for p in parts]))
    rest = float(np.mean([p[1] for p in parts]))
    per_seed = a.per_seed("s_suite") - b.per_seed("s_suite")
    n = float(np.mean([t.shape[1] for t in tables]))
    g = len(tables)
    seed, share, var = _seed_part(per_seed, rest / (g * n))
    return Components(seed, case, rest, g, a.n_seeds, n, float(np.nanmean(per_seed)), share, var)


def group_components(a: Replicates, b: Replicates, group: str) -> Components:
    """Components of the difference of one group's pass rate."""
    a, b = aligned(a, b)
    g = a.groups.index(group)
    cols = np.flatnonzero(a.case_group == g)
    cols = cols[(a.evaluable[:, cols] > 0).all(axis=0) & (b.evaluable[:, cols] > 0).all(axis=0)]
    if not len(cols):
        raise ValueError(f"no case of group {group!r} both cells evaluated")
    d = a.passed[:, cols] - b.passed[:, cols]
    case, rest = _anova(d)
    per_seed = d.mean(axis=1)
    seed, share, var = _seed_part(per_seed, rest / len(cols))
    return Components(seed, case, rest, 1, a.n_seeds, float(len(cols)), float(per_seed.mean()), share, var)


def iid_components(a: Replicates, b: Replicates) -> Components:
    """Components of Δs_iid over the D_test examples (one 'group'), in the task's i.i.d. metric: each example's
    linearised contribution to it (``IidParts.pseudo_values``; a mean metric's own scores, accuracy's 0/1)."""
    a, b = aligned(a, b)
    if a.iid is None or b.iid is None:
        raise ValueError("a cell without D_test predictions")
    d = a.iid.pseudo_values() - b.iid.pseudo_values()
    case, rest = _anova(d)
    per_seed = d.mean(axis=1)
    seed, share, var = _seed_part(per_seed, rest / d.shape[1])
    return Components(seed, case, rest, 1, a.n_seeds, float(d.shape[1]), float(per_seed.mean()), share, var)


def excess(a: float, b: float) -> float:
    """a − b where it exceeds the rounding error of the subtraction, else 0. A component by moments is a difference
    of two mean squares that can be equal in exact arithmetic (a seed level that adds nothing to the cases' share):
    their float difference is then ±1e-19 or so, which would print as a component and decide the test's degrees of
    freedom by its sign."""
    d = a - b
    return d if d > EXCESS_TOLERANCE * max(abs(a), abs(b)) else 0.0


# Relative: far above float64's rounding over these sums (~1e-16 per term), far below any real component.
EXCESS_TOLERANCE = 1e-9


def _seed_part(per_seed: np.ndarray, rest_share: float) -> tuple[float, float, float | None]:
    """(σ²_seed, rest_share, the per-seed values' variance): σ²_seed is that variance less the share the rest
    contributes to each (≥ 0)."""
    v = per_seed[np.isfinite(per_seed)]
    if len(v) < 2:
        return 0.0, rest_share, None
    var = float(v.var(ddof=1))
    return excess(var, rest_share), rest_share, var


def power(variance: float, seed_part: float, seeds: int, effect: float, alpha: float = 0.05) -> float:
    """Power of the two-sided two-stage t test (Welch–Satterthwaite df) to detect ``effect``."""
    if variance <= 0:
        return 1.0 if effect else alpha
    df = math.inf if seed_part <= 0 or seeds < 2 else variance ** 2 * (seeds - 1) / seed_part ** 2
    return _t_power(abs(effect) / math.sqrt(variance), df, alpha)


def _t_power(ncp: float, df: float, alpha: float) -> float:
    """P(|T| > t_crit) for T noncentral t (normal when df is infinite); it rises with ncp and with df."""
    if not math.isfinite(df):
        z = stats.norm.ppf(1 - alpha / 2)
        return float(stats.norm.sf(z - ncp) + stats.norm.cdf(-z - ncp))
    crit = stats.t.ppf(1 - alpha / 2, df)
    # The lower tail as the upper tail of −ncp: scipy's nct.cdf far in the lower tail returns NaN (e.g. df 2, ncp 8),
    # and a NaN power compares below every target.
    return float(stats.nct.sf(crit, df, ncp) + stats.nct.sf(crit, df, -ncp))


# (seeds, cases per group) → (total variance, the part the seeds estimate). Both fall, or stay, as either count grows:
# the power bounds below rest on it.
VarianceFn = Callable[[float, float], tuple[float, float]]


def power_bound_over_cases(variance: VarianceFn, seeds: int, effect: float, alpha: float = 0.05) -> float:
    """An upper bound on the power any number of cases per group gives with ``seeds``: below the target, no number
    of cases reaches it (the training runs' spread at this many seeds is too large).

    Not the power at infinitely many cases: more cases shrink the variance, but the test's df falls with the share
    the cases estimate, to S − 1 at the limit, so the power can peak at a finite count. Between two counts n₁ < n₂
    the noncentrality is at most its value at n₂ and the df at most (S − 1)·(total(n₁) / seed part(n₂))², since
    both parts fall with n; the power at those two bounds the power anywhere between. The largest such bound over
    the scan's grid and the tail from MAX_CASES to the limit bounds it everywhere; where the grid's counts are
    consecutive the powers at them are exact."""
    if seeds < 2:
        total, _ = variance(seeds, math.inf)
        return power(total, 0.0, seeds, effect, alpha)
    points = [float(n) for n in _CASE_GRID] + [math.inf]
    parts = [variance(seeds, n) for n in points]
    best = 0.0
    for (n_1, (total_1, seed_1)), (n_2, (total_2, seed_2)) in itertools.pairwise(zip(points, parts, strict=True)):
        if total_2 <= 0:
            return power(total_2, seed_2, seeds, effect, alpha)
        if n_2 - n_1 <= 1:
            # Cases come in whole numbers: no count lies between consecutive ones, so the powers at the two counts
            # are the bound (the continuous bound between 1 and 2 cases, where the variance halves, was loose
            # enough to call reachable an effect no count reaches).
            best = max(best, power(total_1, seed_1, seeds, effect, alpha), power(total_2, seed_2, seeds, effect, alpha))
            continue
        df = math.inf if seed_2 <= 0 else (seeds - 1) * (total_1 / seed_2) ** 2
        best = max(best, _t_power(abs(effect) / math.sqrt(total_2), df, alpha))
    return best


def power_bound_over_seeds(variance: VarianceFn, cases: float, effect: float, alpha: float = 0.05) -> float:
    """An upper bound on the power any number of seeds gives with ``cases`` per group: the normal test at the
    variance's limit at infinitely many seeds (what the cases contribute, mean_g σ²_case,g / (G n), and for G
    D_test's part). No count of seeds has a smaller variance, and the t's finite df only lowers the power; as the
    seeds grow the df grows too, so the power approaches this bound: above the target, enough seeds reach it."""
    total, _ = variance(math.inf, cases)
    return power(total, 0.0, MAX_SEEDS, effect, alpha)


def seeds_needed(variance: VarianceFn, cases: float, effect: float, target: float = 0.8,
                 alpha: float = 0.05) -> int | None:
    """The fewest seeds (≥ HIERARCHICAL_MIN_SEEDS: with fewer the verdicts are the seed-level t's, not this test's)
    that reach ``target`` power with ``cases`` per group; None when none up to MAX_SEEDS does
    (``power_bound_over_seeds`` says whether any number could)."""
    if power_bound_over_seeds(variance, cases, effect, alpha) < target:
        return None
    for s in range(max(2, HIERARCHICAL_MIN_SEEDS), MAX_SEEDS + 1):
        total, seed_part = variance(s, cases)
        if power(total, seed_part, s, effect, alpha) >= target:
            return s
    return None


def cases_needed(variance: VarianceFn, seeds: int, effect: float, target: float = 0.8,
                 alpha: float = 0.05) -> int | None:
    """The fewest T_test cases per group that reach ``target`` power with ``seeds``; None when none up to MAX_CASES
    does (``power_bound_over_cases`` says whether any number could).

    The power is not monotone in the cases: more cases shrink the variance, but also the share of it the cases
    estimate, so the test's df falls towards S − 1 and its critical value rises. It can pass the target at a few
    hundred cases and fall below it again by MAX_CASES; a bisection over [1, MAX_CASES] would miss that. So a
    geometric scan finds the first grid point that reaches the target, and a bisection the first count since the
    grid point before."""
    if power_bound_over_cases(variance, seeds, effect, alpha) < target:
        return None

    def reaches(n: int) -> bool:
        total, seed_part = variance(seeds, float(n))
        return power(total, seed_part, seeds, effect, alpha) >= target

    before = 0
    for n in _CASE_GRID:
        if reaches(n):
            lo, hi = before + 1, n
            while lo < hi:
                mid = (lo + hi) // 2
                if reaches(mid):
                    hi = mid
                else:
                    lo = mid + 1
            return lo
        before = n
    return None


@dataclass(frozen=True)
class GComponents:
    """Variance components of a difference of G (docs/method.md, "Power"): σ²_seed of the per-seed ΔG itself (so
    it holds what the training runs move in s_T and s_iid together, their covariance included), and the case and
    rest components of Δs_T and Δs_iid carried to G's scale by the delta method at (s_T, s_iid). The same questions
    as ``Components`` (variance, seed interval, with_seed) answer for G."""

    seed: float                 # σ²_seed of ΔG per seed
    suite: Components           # Δs_T's components (their case and rest parts are used)
    iid: Components             # Δs_iid's over D_test (fixed size: iid.cases)
    ga: float                   # ∂G/∂s_T
    gb: float                   # ∂G/∂s_iid
    observed: float
    per_seed_var: float | None

    @property
    def seeds(self) -> int:
        return self.suite.seeds

    @property
    def cases(self) -> float:
        return self.suite.cases

    @property
    def groups(self) -> int:
        return self.suite.groups

    @property
    def rest_share(self) -> float:
        """What each seed's own noise adds to the per-seed ΔG's variance: the rest parts on G's scale."""
        return (self.ga ** 2 * self.suite.rest / (self.suite.groups * self.suite.cases)
                + self.gb ** 2 * self.iid.rest / self.iid.cases)

    def variance(self, seeds: float, cases: float) -> tuple[float, float]:
        rest = (self.ga ** 2 * self.suite.rest / (self.suite.groups * seeds * cases)
                + self.gb ** 2 * self.iid.rest / (seeds * self.iid.cases))
        seed_part = self.seed / seeds + rest
        case = self.ga ** 2 * self.suite.case / (self.suite.groups * cases) + self.gb ** 2 * self.iid.case / \
            self.iid.cases
        return seed_part + case, seed_part

    def seed_interval(self, level: float = 0.95) -> tuple[float, float]:
        return _seed_interval(self.seeds, self.per_seed_var, self.seed, self.rest_share, level)

    @property
    def seed_estimable(self) -> bool:
        v = self.per_seed_var if self.per_seed_var is not None else self.seed + self.rest_share
        return v > EQUAL_VARIANCE

    def with_seed(self, seed: float) -> GComponents:
        return GComponents(seed, self.suite, self.iid, self.ga, self.gb, self.observed, self.per_seed_var)


def g_components(a: Replicates, b: Replicates) -> GComponents:
    """Components of ΔG (A − B, paired by seed, on the cases and seeds both cells have)."""
    suite, iid = suite_components(a, b), iid_components(a, b)
    pa, pb = aligned(a, b)
    s_suite, s_iid = float(pa.per_seed("s_suite").mean()), float(pa.per_seed("s_iid").mean())
    den = (s_suite + s_iid) ** 2
    ga, gb = (2 * s_iid ** 2 / den, 2 * s_suite ** 2 / den) if den else (0.0, 0.0)
    per_seed = pa.per_seed("g") - pb.per_seed("g")
    share = ga ** 2 * suite.rest / (suite.groups * suite.cases) + gb ** 2 * iid.rest / iid.cases
    seed, _, var = _seed_part(per_seed, share)
    return GComponents(seed, suite, iid, ga, gb, float(np.nanmean(per_seed)), var)


def observed_g_difference(a: Replicates, b: Replicates) -> float:
    a, b = aligned(a, b)
    return float(np.nanmean(harmonic(a.per_seed("s_suite"), a.per_seed("s_iid"))
                            - harmonic(b.per_seed("s_suite"), b.per_seed("s_iid"))))
