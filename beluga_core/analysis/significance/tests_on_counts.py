"""The two tests of docs/method.md, "Significance", on paired counts (no store access here).

- i.i.d.: the exact two-tailed binomial sign test on discordant examples (scipy's ``binomtest``) where s_iid is
  accuracy or exact match; for any other metric (macro-F1, a class's F1, micro-F1, reading's F1), the paired
  randomization test of that metric, swapping each example's two predictions (drawn once per pair of models, so
  every scenario row of a replicate has the same test; ``Comparison.iid_key``).
- G: the paired approximate randomization test. Swapping a pair of outcomes with probability 1/2 only
  matters where they differ, and every differing case of one (group, outcome pair) type moves the pass and
  evaluable counts by the same amount; so the number of swapped cases of a type is Binomial(n, 1/2), and a
  round draws one binomial per (group, type) instead of one coin per case. Same distribution, and a round
  becomes a small matrix product: 10,000 rounds at sentiment scale take milliseconds.

A test may pool several *strata* (e.g. tasks × scenarios for the paper's Avg. column): each stratum is
randomized independently, except that strata sharing an i.i.d. unit (the scenarios of one task) share its
swap, since they share the two models' s_iid. The statistic is the weighted sum of the strata's ΔG.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy.stats import binomtest

from beluga_core.evaluation.metric_forms import MetricForm

OUTCOMES = ("pass", "fail", "skip")
# Ordered (A's outcome, B's outcome) pairs that differ: a swap gives A the second and B the first.
DIFFERING = tuple((a, b) for a in OUTCOMES for b in OUTCOMES if a != b)
_IS_PASS = {"pass": 1, "fail": 0, "skip": 0}
_IS_EVAL = {"pass": 1, "fail": 1, "skip": 0}
# Change of A's pass count and evaluable count when a case of that type is swapped (B's is the negative).
_D_PASS = np.array([_IS_PASS[b] - _IS_PASS[a] for a, b in DIFFERING], dtype=np.int64)
_D_EVAL = np.array([_IS_EVAL[b] - _IS_EVAL[a] for a, b in DIFFERING], dtype=np.int64)

# Which test computed a stored row (after a '+' in its beluga_version): rows of another are recomputed, as stale
# ones are. metric1: s_iid in the task's configured metric (it was the correct share for every metric). metric2: a
# non-accuracy metric's i.i.d. test drawn once per pair of models (it was redrawn per scenario).
TEST_ESTIMATOR = "metric2"

# Rounds whose |statistic| is within this of the observed one count as "at least as extreme": recomputing
# the same G through other arithmetic may differ in the last bits, and e.g. identical models must give p = 1.
TIE_TOLERANCE = 1e-12


def sign_test(k: int, n: int) -> float:
    """Two-tailed exact binomial p of ``k`` successes in ``n`` discordant pairs; 1.0 when n = 0 (no evidence)."""
    if n == 0:
        return 1.0
    return float(binomtest(int(k), int(n), 0.5).pvalue)


def harmonic(s_suite: np.ndarray | float, s_iid: np.ndarray | float) -> np.ndarray:
    """G = 2·s_T·s_iid / (s_T + s_iid), 0 where both are 0, NaN where s_T is undefined."""
    a = np.asarray(s_suite, dtype=float)
    b = np.asarray(s_iid, dtype=float)
    den = a + b
    with np.errstate(invalid="ignore", divide="ignore"):
        g = np.where(den == 0, 0.0, 2 * a * b / np.where(den == 0, 1.0, den))
    return np.where(np.isnan(a) | np.isnan(b), np.nan, g)


@dataclass(frozen=True)
class IidCounts:
    """Paired per-example correctness of A and B on D_test: n11 both right, n10 only A, n01 only B, n00 none.

    Where the task's i.i.d. metric is not accuracy (or exact match), ``parts_a`` / ``parts_b`` are A's and B's
    per-example parts of it (``metric_forms``; N × form.width, paired by example) and s_iid is that metric."""

    n11: int = 0
    n10: int = 0
    n01: int = 0
    n00: int = 0
    form: MetricForm | None = None
    parts_a: np.ndarray | None = field(default=None, compare=False, repr=False)
    parts_b: np.ndarray | None = field(default=None, compare=False, repr=False)

    @property
    def n(self) -> int:
        return self.n11 + self.n10 + self.n01 + self.n00

    @property
    def s_a(self) -> float:
        if self.form is not None and self.parts_a is not None:
            return float(self.form.value(self.parts_a.sum(axis=0), float(len(self.parts_a))))
        return (self.n11 + self.n10) / self.n if self.n else float("nan")

    @property
    def s_b(self) -> float:
        if self.form is not None and self.parts_b is not None:
            return float(self.form.value(self.parts_b.sum(axis=0), float(len(self.parts_b))))
        return (self.n11 + self.n01) / self.n if self.n else float("nan")

    @property
    def of_metric(self) -> bool:
        """Whether s_iid is a metric other than the correct share (so the sign test is not its test)."""
        return self.form is not None and self.parts_a is not None and self.parts_b is not None

    def sign_test(self) -> float:
        return sign_test(self.n10, self.n10 + self.n01)


@dataclass(frozen=True)
class SuiteCounts:
    """Paired per-case outcomes of A and B, counted per scoring group and (A outcome, B outcome) pair.

    ``counts[g, i, j]`` = cases of group g where A's outcome is OUTCOMES[i] and B's OUTCOMES[j].
    """

    groups: tuple[str, ...]
    counts: np.ndarray  # (n_groups, 3, 3) int

    @classmethod
    def from_rows(cls, rows: Sequence[tuple[str, str, str, int]]) -> SuiteCounts:
        """From (scoring_group, A outcome, B outcome, n) rows."""
        groups = tuple(sorted({r[0] for r in rows}))
        index = {g: i for i, g in enumerate(groups)}
        counts = np.zeros((len(groups), 3, 3), dtype=np.int64)
        for group, a, b, n in rows:
            counts[index[group], OUTCOMES.index(a), OUTCOMES.index(b)] += int(n)
        return cls(groups, counts)

    @property
    def n_cases(self) -> int:
        return int(self.counts.sum())

    @property
    def n_differ(self) -> int:
        return self.n_cases - int(np.trace(self.counts, axis1=1, axis2=2).sum())

    def base(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Observed (pass_A, eval_A, pass_B, eval_B) per group."""
        c = self.counts
        pass_a, eval_a = c[:, 0, :].sum(axis=1), c[:, :2, :].sum(axis=(1, 2))
        pass_b, eval_b = c[:, :, 0].sum(axis=1), c[:, :, :2].sum(axis=(1, 2))
        return pass_a, eval_a, pass_b, eval_b

    def differing(self) -> np.ndarray:
        """(n_groups, 6) counts of the DIFFERING types."""
        return np.stack([self.counts[:, OUTCOMES.index(a), OUTCOMES.index(b)] for a, b in DIFFERING], axis=1)


def suite_score(passes: np.ndarray, evaluable: np.ndarray) -> np.ndarray:
    """s_T over the last axis: unweighted mean of the pass rates of groups with an evaluable case."""
    has = evaluable > 0
    rates = np.divide(passes, evaluable, out=np.zeros(passes.shape, dtype=float), where=has)
    n = has.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, rates.sum(axis=-1) / np.maximum(n, 1), np.nan)


@dataclass(frozen=True)
class Stratum:
    """One paired comparison inside a test: its suite counts, the i.i.d. unit it uses, and its weight."""

    suite: SuiteCounts
    iid_unit: int
    weight: float = 1.0


@dataclass
class RandomizationResult:
    """Observed values and p-values of a (possibly pooled) randomization test."""

    rounds: int
    delta_g: float                  # observed weighted ΔG (A − B)
    p_g: float | None               # None when the observed ΔG is undefined
    delta_iid: float                # observed weighted Δs_iid over the i.i.d. units
    p_iid: float | None
    g_a: list[float] = field(default_factory=list)          # per stratum
    g_b: list[float] = field(default_factory=list)
    s_suite_a: list[float] = field(default_factory=list)
    s_suite_b: list[float] = field(default_factory=list)


def _iid_draws(units: Sequence[IidCounts], rounds: int,
               rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(rounds + 1, n_units) s_iid of A and B; row 0 is the observed (unswapped) data."""
    s_a = np.empty((rounds + 1, len(units)))
    s_b = np.empty_like(s_a)
    for u, c in enumerate(units):
        if c.of_metric:
            s_a[:, u], s_b[:, u] = _metric_draws(c, rounds, rng)
            continue
        if c.n == 0:
            s_a[:, u] = s_b[:, u] = np.nan
            continue
        # Swapping an "only A right" example moves one correct answer from A to B, and vice versa.
        x10 = rng.binomial(c.n10, 0.5, size=rounds)
        x01 = rng.binomial(c.n01, 0.5, size=rounds)
        shift = np.concatenate([[0], x01 - x10])
        s_a[:, u] = (c.n11 + c.n10 + shift) / c.n
        s_b[:, u] = (c.n11 + c.n01 - shift) / c.n
    return s_a, s_b


def _metric_draws(c: IidCounts, rounds: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(rounds + 1,) s_iid of A and B in the task's metric, swapping each example's pair of predictions with
    probability 1/2. As for the suite: examples whose (A parts, B parts) are the same swap alike, so a round draws
    how many of each such type swap, Binomial(n, 1/2), and the metric is computed from the shifted sums."""
    assert c.form is not None and c.parts_a is not None and c.parts_b is not None
    a, b = c.parts_a, c.parts_b
    differ = np.any(a != b, axis=1)
    width = a.shape[1]
    types, counts = np.unique(np.concatenate([a[differ], b[differ]], axis=1), axis=0, return_counts=True)
    swapped = np.zeros((rounds + 1, len(counts)))
    if len(counts):
        swapped[1:] = rng.binomial(counts, 0.5, size=(rounds, len(counts)))
    shift = swapped @ (types[:, width:] - types[:, :width])        # (rounds + 1, width): B's parts in, A's out
    n = float(len(a))
    return (c.form.value(a.sum(axis=0) + shift, n), c.form.value(b.sum(axis=0) - shift, n))


def _suite_draws(counts: SuiteCounts, rounds: int,
                 rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(rounds + 1,) s_T of A and B; entry 0 is the observed data."""
    pass_a, eval_a, pass_b, eval_b = counts.base()
    diff = counts.differing()                       # (G, 6)
    gi, ti = np.nonzero(diff)                       # only types that occur need a draw
    swapped = np.zeros((rounds + 1, len(gi)), dtype=np.int64)
    if len(gi):
        swapped[1:] = rng.binomial(diff[gi, ti], 0.5, size=(rounds, len(gi)))
    # Scatter each drawn type's effect onto its group: (rounds+1, K) @ (K, G).
    to_group = np.zeros((len(gi), len(counts.groups)), dtype=np.int64)
    to_group[np.arange(len(gi)), gi] = 1
    d_pass = swapped @ (to_group * _D_PASS[ti][:, None])
    d_eval = swapped @ (to_group * _D_EVAL[ti][:, None])
    s_a = suite_score(pass_a + d_pass, eval_a + d_eval)
    s_b = suite_score(pass_b - d_pass, eval_b - d_eval)
    return s_a, s_b


def _p_value(stat: np.ndarray) -> float | None:
    """p = (count + 1) / (R + 1) with count = rounds at least as extreme as the observed stat[0]."""
    observed = stat[0]
    if np.isnan(observed):
        return None
    rounds = len(stat) - 1
    # A round whose statistic is undefined (e.g. every group skipped) counts as not extreme.
    extreme = np.abs(stat[1:]) >= abs(observed) - TIE_TOLERANCE
    return float((int(np.count_nonzero(extreme)) + 1) / (rounds + 1))


def randomization_test(iid_units: Sequence[IidCounts], strata: Sequence[Stratum], *, rounds: int,
                       rng: np.random.Generator, iid_weights: Sequence[float] | None = None) -> RandomizationResult:
    """Paired approximate randomization test of the weighted ΔG over ``strata`` (docs/method.md, "Significance").

    Also tests the weighted Δs_iid over ``iid_units`` with the same draws (used where the exact sign test
    does not apply: a mean over several tasks). ``iid_weights`` default to equal weights summing to 1.
    """
    if rounds < 1:
        raise ValueError("rounds must be at least 1")
    iid_a, iid_b = _iid_draws(iid_units, rounds, rng)
    w_iid = np.full(len(iid_units), 1 / max(len(iid_units), 1)) if iid_weights is None else np.asarray(iid_weights)
    stat_g = np.zeros(rounds + 1)
    g_a, g_b, t_a, t_b = [], [], [], []
    for s in strata:
        suite_a, suite_b = _suite_draws(s.suite, rounds, rng)
        ga = harmonic(suite_a, iid_a[:, s.iid_unit])
        gb = harmonic(suite_b, iid_b[:, s.iid_unit])
        stat_g += s.weight * (ga - gb)
        g_a.append(float(ga[0]))
        g_b.append(float(gb[0]))
        t_a.append(float(suite_a[0]))
        t_b.append(float(suite_b[0]))
    stat_iid = (iid_a - iid_b) @ w_iid if len(iid_units) else np.full(rounds + 1, np.nan)
    return RandomizationResult(rounds=rounds, delta_g=float(stat_g[0]), p_g=_p_value(stat_g) if strata else None,
                               delta_iid=float(stat_iid[0]), p_iid=_p_value(stat_iid),
                               g_a=g_a, g_b=g_b, s_suite_a=t_a, s_suite_b=t_b)


def comparison_rng(seed: int, key: str) -> np.random.Generator:
    """A generator for one comparison: fixed by the run's seed and the comparison's key, so a result does not
    depend on which other comparisons were computed, or in what order."""
    digest = hashlib.sha256(key.encode("utf-8")).digest()
    words = [int.from_bytes(digest[i:i + 4], "little") for i in range(0, 16, 4)]
    return np.random.default_rng(np.random.SeedSequence([int(seed), *words]))
