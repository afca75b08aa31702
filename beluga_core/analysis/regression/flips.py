"""Negative-flip statistics on paired outcomes: NFR / PFR with bootstrap intervals, the paired randomization test
of the difference between two updates' NFRs, and centric selection among several updates.

A *pairing* is, per item (a D_test example or an evaluable suite case), whether the old model is right and
whether the new one is: ``old``, ``new`` boolean arrays of equal length. The counting itself is the store's
(``flips_between``); this module only resamples.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import duckdb
import numpy as np

from beluga_core.data.splits import halves

BOOTSTRAP_ROUNDS = 2000


@dataclass(frozen=True)
class Pairing:
    """Per item: the old model right (``old``), the new model right (``new``); skipped cases left out."""

    old: np.ndarray
    new: np.ndarray
    items: tuple[str, ...] = ()
    n_skipped: int = 0

    @property
    def n(self) -> int:
        return len(self.old)

    @property
    def nfr(self) -> float:
        return float(np.mean(self.old & ~self.new)) if self.n else float("nan")

    @property
    def pfr(self) -> float:
        return float(np.mean(~self.old & self.new)) if self.n else float("nan")

    def restricted(self, keep: np.ndarray) -> Pairing:
        return Pairing(self.old[keep], self.new[keep], tuple(i for i, k in zip(self.items, keep, strict=True) if k))


def pairing(con: duckdb.DuckDBPyConnection, old_id: str, new_id: str, source: str, part: str) -> Pairing:
    """The pairing of two models on an i.i.d. split (``source = "iid"``, part = split) or a suite's cases
    (``"suite"``, part = suite), from the store's ``flips_between`` macro."""
    rows = con.execute("""SELECT item, old_outcome, new_outcome, flip FROM flips_between(?, ?)
                          WHERE source = ? AND part = ? ORDER BY item""", [old_id, new_id, source, part]).fetchall()
    kept = [r for r in rows if r[3] != "skip"]
    right = ("right", "pass")
    return Pairing(np.array([r[1] in right for r in kept], dtype=bool), np.array([r[2] in right for r in kept],
                                                                               dtype=bool),
                   tuple(str(r[0]) for r in kept), len(rows) - len(kept))


def rng_for(seed: int, *key: str) -> np.random.Generator:
    digest = hashlib.sha256("\x1f".join(key).encode("utf-8")).digest()
    return np.random.default_rng(np.random.SeedSequence([int(seed), *(int.from_bytes(digest[i:i + 4], "little")
                                                                        for i in range(0, 16, 4))]))


def bootstrap_interval(p: Pairing, rng: np.random.Generator, rounds: int = BOOTSTRAP_ROUNDS
                       ) -> dict[str, tuple[float, float]]:
    """95 % percentile intervals of NFR, PFR and Δacc (= PFR − NFR), resampling items with replacement."""
    if p.n == 0:
        nan = (float("nan"), float("nan"))
        return {"nfr": nan, "pfr": nan, "delta_acc": nan}
    idx = rng.integers(0, p.n, size=(rounds, p.n))
    neg = (p.old & ~p.new)[idx].mean(axis=1)
    pos = (~p.old & p.new)[idx].mean(axis=1)

    def interval(x: np.ndarray) -> tuple[float, float]:
        lo, hi = np.percentile(x, [2.5, 97.5])
        return float(lo), float(hi)

    return {"nfr": interval(neg), "pfr": interval(pos), "delta_acc": interval(pos - neg)}


@dataclass(frozen=True)
class NFRTest:
    n: int
    nfr_a: float
    nfr_b: float
    n_discordant: int        # old right and exactly one of a, b wrong
    p_value: float
    rounds: int


def nfr_randomization_test(old: np.ndarray, a: np.ndarray, b: np.ndarray, *, rounds: int,
                           rng: np.random.Generator) -> NFRTest:
    """Paired approximate randomization test of NFR(a) − NFR(b) against the same old model: in each round, a's
    and b's correctness are swapped with probability 1/2 per item where they differ; p = (count + 1) / (R + 1)
    with count = rounds whose |Δ| is at least the observed one. Only items the old model gets right and exactly
    one of a, b gets wrong move the statistic, so a round draws how many of those swap (a binomial)."""
    if rounds < 1:
        raise ValueError("rounds must be at least 1")
    n = len(old)
    only_a_wrong = int(np.sum(old & ~a & b))
    only_b_wrong = int(np.sum(old & a & ~b))
    k = only_a_wrong + only_b_wrong
    observed = (only_a_wrong - only_b_wrong) / n if n else 0.0
    swapped = rng.binomial(k, 0.5, size=rounds)
    # Swapping moves an "only a wrong" item to b and vice versa: Δ = (c_a − c_b)/n with c_a ~ the items on a's side.
    stats = (only_a_wrong - only_b_wrong + 2 * (swapped - only_a_wrong)) / n if n else np.zeros(rounds)
    # Equal |Δ| counts as extreme (identical models: every round, p = 1), up to float noise.
    count = int(np.count_nonzero(np.abs(stats) >= abs(observed) - 1e-12))
    return NFRTest(n, float(np.mean(old & ~a)) if n else float("nan"), float(np.mean(old & ~b)) if n else float("nan"),
                   k, (count + 1) / (rounds + 1), rounds)


@dataclass(frozen=True)
class Centric:
    """Centric selection (Xie et al. §5): the model whose mean NFR against the other candidates (each as the
    old model) is lowest on the selection half of D_test, reported on the other half."""

    chosen: str
    selection_nfr: dict[str, float]    # candidate → mean NFR from the others, selection half
    report_nfr: dict[str, float]       # candidate → the same on the report half
    report_accuracy: dict[str, float]
    n_selection: int
    n_report: int


def centric_selection(correct: dict[str, np.ndarray], seed: int) -> Centric:
    """``correct``: per candidate model, its correctness on the same D_test examples (same order). The examples
    are split into seeded halves (the first selects, the second reports)."""
    ids = sorted(correct)
    if len(ids) < 3:
        raise ValueError("centric selection needs at least 3 candidate models")
    n = len(correct[ids[0]])
    if any(len(v) != n for v in correct.values()):
        raise ValueError("the candidates' predictions cover different examples")
    first, second = (np.asarray(h, dtype=np.int64) for h in halves(n, seed))

    def mean_nfr(j: str, part: np.ndarray) -> float:
        return float(np.mean([np.mean(correct[i][part] & ~correct[j][part]) for i in ids if i != j]))

    selection = {j: mean_nfr(j, first) for j in ids}
    chosen = min(ids, key=lambda j: (selection[j], j))
    return Centric(chosen, selection, {j: mean_nfr(j, second) for j in ids},
                   {j: float(np.mean(correct[j][second])) for j in ids}, len(first), len(second))


def pooled(pairings: Sequence[Pairing]) -> Pairing:
    """Several replicates' pairings as one (their items side by side)."""
    if not pairings:
        return Pairing(np.zeros(0, dtype=bool), np.zeros(0, dtype=bool))
    return Pairing(np.concatenate([p.old for p in pairings]), np.concatenate([p.new for p in pairings]),
                   tuple(i for p in pairings for i in p.items), sum(p.n_skipped for p in pairings))


def count_interval(n: int, n_neg: int, n_pos: int, rng: np.random.Generator, rounds: int = BOOTSTRAP_ROUNDS
                   ) -> dict[str, tuple[float, float]]:
    """``bootstrap_interval`` from the counts alone: resampling n items with replacement draws the numbers of
    negative and positive flips from Multinomial(n; NFR, PFR, rest) — the same distribution, without the items."""
    if n == 0:
        nan = (float("nan"), float("nan"))
        return {"nfr": nan, "pfr": nan, "delta_acc": nan}
    draws = rng.multinomial(n, [n_neg / n, n_pos / n, max(0.0, 1 - (n_neg + n_pos) / n)], size=rounds) / n

    def interval(x: np.ndarray) -> tuple[float, float]:
        lo, hi = np.percentile(x, [2.5, 97.5])
        return float(lo), float(hi)

    nfr, pfr = draws[:, 0], draws[:, 1]
    return {"nfr": interval(nfr), "pfr": interval(pfr), "delta_acc": interval(pfr - nfr)}
