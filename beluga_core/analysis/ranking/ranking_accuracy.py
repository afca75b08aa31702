"""How well a signal ranks models from probes of n cases: pairwise ranking accuracy, Kendall τ-b, top-1 hit rate,
and their uncertainty.

For one group: B probes of n cases are drawn with replacement from the group's pool — the same probes for every
signal and model (common random numbers, so signals are compared on identical evidence). On each probe a model's
score is the mean of the signal over the probe's cases where it applies; models are ordered by ``direction ×
score`` (with tie-breaking keys after it: ACC-then-factor). For each pair of models whose true scores differ, a
probe succeeds when it orders the pair as the truth does; a tie counts 0.5 (``half``: the expected value of a
random tie-break), 0 (``fail``) or is left out (``exclude``). Pairs with equal true scores have no order to get
right: they are excluded and counted.

Uncertainty: a group's accuracy gets a percentile interval from resampling its probes; a level's (the mean over its
groups) from a two-stage bootstrap — groups with replacement, then probes within each — so it also reflects how
much the groups differ. Against a reference signal (ACC) on the same probes: the per-probe difference d_b, its
two-stage interval, and the share of probes with d_b ≤ 0 as a one-sided p-value (with a two-sided version).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from beluga_core.analysis.regression.flips import rng_for

Ties = Literal["half", "fail", "exclude"]
TIES: tuple[Ties, ...] = ("half", "fail", "exclude")


def draw_probes(pool_size: int, n: int, bootstrap: int, seed: int, key: str) -> np.ndarray:
    """``[B, n]`` indices into a pool of ``pool_size`` cases, drawn with replacement."""
    if pool_size < 1:
        raise ValueError("an empty pool has no probes")
    return rng_for(seed, "probes", key).integers(0, pool_size, size=(bootstrap, n))


def random_keys(n_models: int, bootstrap: int, seed: int, key: str) -> np.ndarray:
    """``[B, m]``: a random order of the models per probe (a permutation: never a tie)."""
    rng = rng_for(seed, "random-order", key)
    return np.stack([rng.permutation(n_models).astype(np.float64) for _ in range(bootstrap)]) if n_models else \
        np.zeros((bootstrap, 0))


def probe_means(values: np.ndarray, probes: np.ndarray) -> np.ndarray:
    """``[B, m]``: per probe and model, the mean of ``values[m, case]`` over the probe's cases, NaN (not
    applicable) left out; NaN where no case of the probe applies."""
    v = np.asarray(values, dtype=np.float64)[:, probes]            # [m, B, n]
    present = ~np.isnan(v)
    counts = present.sum(axis=-1)
    sums = np.where(present, v, 0.0).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
    return means.T


def _signs(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """sign(a − b) with near-equal values (and NaN on either side) a tie."""
    with np.errstate(invalid="ignore"):
        close = np.isclose(a, b, rtol=1e-9, atol=1e-12) | np.isnan(a) | np.isnan(b)
        return np.where(close, 0, np.sign(a - b)).astype(np.int8)


def order_signs(keys: Sequence[np.ndarray]) -> np.ndarray:
    """``[B, m, m]``: +1 where model i is ranked above model k, −1 below, 0 tied — lexicographic over ``keys``
    (each ``[B, m]``, already multiplied by its direction)."""
    first = np.asarray(keys[0])
    out = _signs(first[:, :, None], first[:, None, :])
    for key in keys[1:]:
        k = np.asarray(key)
        out = np.where(out == 0, _signs(k[:, :, None], k[:, None, :]), out).astype(np.int8)
    return out


@dataclass
class GroupRanking:
    """One signal on one group: per probe and pair, success (1, 0, the tie value, or NaN when excluded)."""

    truth: np.ndarray          # [m]
    pairs: np.ndarray          # [P, 2] model indices (i < k) whose true scores differ
    excluded: int              # pairs with equal true scores
    success: np.ndarray        # [B, P]
    tied: np.ndarray           # [B, P] bool
    tau: np.ndarray            # [B] Kendall tau-b of the probe's order against the truth (NaN: undefined)
    top1: np.ndarray           # [B] share of the top-ranked (tied) models that are truly best

    @property
    def n_pairs(self) -> int:
        return len(self.pairs)

    def probe_accuracy(self) -> np.ndarray:
        """``[B]``: mean success over the pairs, per probe (NaN without a scored pair)."""
        if not self.n_pairs:
            return np.full(len(self.success), np.nan)
        with np.errstate(invalid="ignore"):
            counts = (~np.isnan(self.success)).sum(axis=1)
            return np.where(counts > 0, np.nansum(self.success, axis=1) / np.maximum(counts, 1), np.nan)

    @property
    def accuracy(self) -> float:
        return _nanmean(self.probe_accuracy())

    def pair_accuracy(self) -> np.ndarray:
        """``[P]``: pairwise ranking accuracy PA(i, k), the mean over probes."""
        with np.errstate(invalid="ignore"):
            counts = (~np.isnan(self.success)).sum(axis=0)
            return np.where(counts > 0, np.nansum(self.success, axis=0) / np.maximum(counts, 1), np.nan)

    @property
    def mean_tau(self) -> float:
        """Kendall tau-b averaged over the probes where it is defined."""
        return _nanmean(self.tau)

    @property
    def tau_undefined(self) -> float:
        """The share of probes whose order is constant (tau-b undefined)."""
        return float(np.isnan(self.tau).mean()) if self.tau.size else float("nan")

    @property
    def tie_rate(self) -> float:
        return float(self.tied.mean()) if self.tied.size else float("nan")


def _nanmean(x: np.ndarray) -> float:
    x = np.asarray(x, dtype=np.float64)
    return float(np.nanmean(x)) if np.any(~np.isnan(x)) else float("nan")


def rank_group(truth: Sequence[float], keys: Sequence[np.ndarray], ties: Ties = "half") -> GroupRanking:
    """Score the orders given by ``keys`` (each ``[B, m]``, direction applied; later keys break ties of earlier
    ones) against the true scores."""
    if ties not in TIES:
        raise ValueError(f"ties '{ties}': expected one of {', '.join(TIES)}")
    t = np.asarray(truth, dtype=np.float64)
    m = len(t)
    signs = order_signs(keys)                                           # [B, m, m]
    iu, ku = np.triu_indices(m, 1)
    predicted = signs[:, iu, ku].astype(np.int8)                        # [B, all pairs]
    true_sign = _signs(t[iu], t[ku])                                    # [all pairs]
    used = true_sign != 0
    pred, want = predicted[:, used], true_sign[used]
    tied = pred == 0
    success = (pred == want[None, :]).astype(np.float64)
    success[tied] = {"half": 0.5, "fail": 0.0, "exclude": np.nan}[ties]
    # Kendall tau-b over every pair: (concordant − discordant) / sqrt((n0 − ties in order)(n0 − ties in truth)).
    n0 = len(iu)
    concord = (predicted * true_sign[None, :]).sum(axis=1).astype(np.float64)
    denominator = np.sqrt((n0 - (predicted == 0).sum(axis=1)) * float(n0 - (true_sign == 0).sum()))
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = np.where(denominator > 0, concord / np.where(denominator > 0, denominator, 1.0), np.nan)
    # Top-1: the models no other model is ranked above; the share of them that are truly best.
    top = (signs >= 0).all(axis=2) if m else np.zeros((len(signs), 0), dtype=bool)
    # A model without a score on the probe (no applicable case) ties everything; it is not a top pick unless no
    # model has a score.
    missing = np.isnan(np.asarray(keys[0], dtype=np.float64))
    top = np.where(missing.all(axis=1, keepdims=True), top, top & ~missing)
    best = np.isclose(t, t.max()) if m else np.zeros(0, dtype=bool)
    with np.errstate(invalid="ignore", divide="ignore"):
        top1 = (top & best[None, :]).sum(axis=1) / np.maximum(top.sum(axis=1), 1)
    pairs = np.stack([iu[used], ku[used]], axis=1) if used.any() else np.zeros((0, 2), dtype=np.int64)
    return GroupRanking(t, pairs, int((~used).sum()), success, tied, tau, top1.astype(np.float64))


# ------------------------------------------------------------------------------------------------ uncertainty

def probe_interval(per_probe: np.ndarray, rounds: int, rng: np.random.Generator) -> tuple[float, float]:
    """95 % percentile interval of the mean over probes (resampling probes)."""
    x = np.asarray(per_probe, dtype=np.float64)
    x = x[~np.isnan(x)]
    if not len(x):
        return (float("nan"), float("nan"))
    means = x[rng.integers(0, len(x), size=(rounds, len(x)))].mean(axis=1)
    lo, hi = np.percentile(means, [2.5, 97.5])
    return (float(lo), float(hi))


def two_stage_interval(per_group: Sequence[np.ndarray], rounds: int,
                       rng: np.random.Generator) -> tuple[float, float]:
    """95 % percentile interval of the mean over groups of each group's mean over probes: groups resampled with
    replacement, then probes within each group."""
    groups = [np.asarray(g, dtype=np.float64) for g in per_group]
    groups = [g[~np.isnan(g)] for g in groups]
    groups = [g for g in groups if len(g)]
    if not groups:
        return (float("nan"), float("nan"))
    picks = rng.integers(0, len(groups), size=(rounds, len(groups)))                                    # [R, G]
    # Every pick (round, slot) resamples its group's probes afresh, also when a round picks a group twice.
    means = np.empty(picks.shape)
    for g, values in enumerate(groups):
        rows, slots = np.nonzero(picks == g)
        if len(rows):
            means[rows, slots] = values[rng.integers(0, len(values), size=(len(rows), len(values)))].mean(axis=1)
    level = means.mean(axis=1)
    lo, hi = np.percentile(level, [2.5, 97.5])
    return (float(lo), float(hi))


@dataclass
class LevelSummary:
    """One signal over a level's groups."""

    n_groups: int
    pairs_used: int
    pairs_excluded: int
    accuracy: float
    ci: tuple[float, float]
    tie_rate: float
    tau_b: float
    top1: float
    top1_ci: tuple[float, float]
    diff: float = float("nan")                     # mean accuracy minus the reference's, same probes
    diff_ci: tuple[float, float] = (float("nan"), float("nan"))
    p_one_sided: float = float("nan")              # share of probes with d_b <= 0 (the signal not better)
    p_two_sided: float = float("nan")
    near: float = float("nan")                     # mean PA of pairs with |true gap| <= the median gap
    far: float = float("nan")

    def holds_better(self) -> bool | None:
        """Whether the signal beats the reference with an interval of the difference excluding 0 (None: not
        compared)."""
        lo = self.diff_ci[0]
        if np.isnan(lo):
            return None
        return lo > 0


def summarize(groups: Sequence[GroupRanking], reference: Sequence[GroupRanking] | None = None, *,
              rounds: int = 2000, seed: int = 0, key: str = "") -> LevelSummary:
    """The level's figures over ``groups`` (those with at least one scored pair), each group weighing the same.
    ``reference``: the same groups under the reference signal, on the same probes."""
    rng = rng_for(seed, "summary", key)
    scored = [i for i, g in enumerate(groups) if g.n_pairs]
    per_group = [groups[i].probe_accuracy() for i in scored]
    accuracy = _nanmean(np.array([_nanmean(a) for a in per_group])) if per_group else float("nan")
    top1_groups = [groups[i].top1 for i in scored]
    taus = [groups[i].mean_tau for i in scored]
    ties = [groups[i].tie_rate for i in scored]
    out = LevelSummary(
        n_groups=len(scored), pairs_used=sum(g.n_pairs for g in groups),
        pairs_excluded=sum(g.excluded for g in groups), accuracy=accuracy,
        ci=two_stage_interval(per_group, rounds, rng), tie_rate=_nanmean(np.array(ties)) if ties else float("nan"),
        tau_b=_nanmean(np.array(taus)) if taus else float("nan"),
        top1=_nanmean(np.array([_nanmean(t) for t in top1_groups])) if top1_groups else float("nan"),
        top1_ci=two_stage_interval(top1_groups, rounds, rng))
    gaps = np.concatenate([np.abs(groups[i].truth[groups[i].pairs[:, 0]] - groups[i].truth[groups[i].pairs[:, 1]])
                           for i in scored]) if scored else np.zeros(0)
    pas = np.concatenate([groups[i].pair_accuracy() for i in scored]) if scored else np.zeros(0)
    if len(gaps):
        median = float(np.median(gaps))
        out.near = _nanmean(pas[gaps <= median])
        out.far = _nanmean(pas[gaps > median]) if (gaps > median).any() else float("nan")
    if reference is not None and scored:
        diffs = [groups[i].probe_accuracy() - reference[i].probe_accuracy() for i in scored]
        out.diff = _nanmean(np.array([_nanmean(d) for d in diffs]))
        out.diff_ci = two_stage_interval(diffs, rounds, rng)
        with np.errstate(invalid="ignore"):
            per_probe = np.nanmean(np.stack(diffs), axis=0)
        per_probe = per_probe[~np.isnan(per_probe)]
        if len(per_probe):
            below, above = float((per_probe <= 0).mean()), float((per_probe >= 0).mean())
            out.p_one_sided = below
            out.p_two_sided = min(1.0, 2 * min(below, above))
    return out
