"""How often each interval of docs/method.md ("Replicates") covers the truth, on synthetic cells with known
variance components and a known true difference.

    python benchmarks/bench_coverage.py [--stores 500] [--rounds 1000] [--seed 0]

A synthetic cell is a suite of 20 scoring groups × 8 T_test cases (quick.toml's T_test per functionality), a
D_test of 200 examples, and S seeds (3, 5, 10) of two configurations: A, and the baseline B it is compared with.
A case of group g passes when μ_g + δ (A only) + a_s + a_sg + b_c + e > 0: a_s the training run (seed), a_sg the
run's effect on the group, b_c the case (shared by A and B, and by every seed: the cases are drawn once per
store), e the rest, all normal. The truth is the expectation over training runs and over the group's cases,
Φ(μ_g [+ δ] / σ_total) averaged over groups, for s_T of A and for s_T(A) − s_T(B). Every store is drawn afresh
(new cases, new runs); each interval is computed exactly as `beluga analyze` computes it (the
`beluga_core.analysis.replicates.intervals` functions on the per-seed outcome arrays a store's views give).

Three settings of the components: seed-dominated (training runs differ more than cases do), case-dominated,
and quick-like (the spread of the two one-seed IID→T draws in benchmarks/RESULTS.md).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch
from scipy.stats import norm

sys.path.insert(0, str(Path(__file__).resolve().parent))

from beluga_core.analysis.replicates.intervals import (
    Interval,
    Replicates,
    cell_intervals,
    difference_intervals,
    draw,
    make_plan,
    percentile_interval,
)
from beluga_core.training.precision import machine_line

GROUPS, CASES, IID = 20, 8, 200
# (name, σ_seed, σ_seed×group, σ_case, σ_rest) on the latent scale; δ is A's shift.
SETTINGS = (("seed-dominated", 0.45, 0.25, 0.3, 0.5), ("case-dominated", 0.1, 0.1, 1.0, 0.5),
            ("quick-like", 0.25, 0.3, 0.8, 0.5))
DELTA = 0.15
KINDS = ("seed", "bootstrap", "hierarchical", "cases")


def _cell(rng: np.random.Generator, mu: np.ndarray, case: np.ndarray, seeds: int, shift: float,
          sd: tuple[float, float, float, float], iid_mu: float) -> Replicates:
    s_seed, s_sg, _, s_rest = sd
    group = np.repeat(np.arange(GROUPS), CASES)
    a = rng.normal(0, s_seed, size=(seeds, 1))
    ag = rng.normal(0, s_sg, size=(seeds, GROUPS))[:, group]
    latent = mu[group][None, :] + shift + a + ag + case[None, :] + rng.normal(0, s_rest, size=(seeds, len(group)))
    passed = (latent > 0).astype(float)
    iid_latent = iid_mu + a + rng.normal(0, 1.0, size=(seeds, IID))
    return Replicates(tuple(range(seeds)), tuple(f"g{i}" for i in range(GROUPS)), group, passed,
                      np.ones_like(passed), (iid_latent > 0).astype(float))


def coverage(setting: tuple[str, float, float, float, float], seeds: int, stores: int, rounds: int,
             rng: np.random.Generator) -> dict[str, dict[str, float]]:
    _, *components = setting
    sd = (components[0], components[1], components[2], components[3])
    total = float(np.sqrt(sum(c * c for c in sd)))
    mu = np.linspace(-1.0, 1.5, GROUPS)
    truth_a = float(norm.cdf((mu + DELTA) / total).mean())
    truth_d = truth_a - float(norm.cdf(mu / total).mean())
    hits = {what: dict.fromkeys(KINDS, 0) for what in ("s_T", "s_T(A) − s_T(B)")}
    widths: dict[str, dict[str, list[float]]] = {what: {k: [] for k in KINDS} for what in hits}
    for _ in range(stores):
        case = rng.normal(0, sd[2], size=GROUPS * CASES)   # this store's cases, shared by A, B and every seed
        a = _cell(rng, mu, case, seeds, DELTA, sd, 0.8)
        b = _cell(rng, mu, case, seeds, 0.0, sd, 0.8)
        single = cell_intervals(a, ["s_suite"], rounds, rng)["s_suite"] | {"bootstrap": _crossed(a, None, rounds, rng)}
        diff = difference_intervals(a, b, ["s_suite"], rounds, rng)["s_suite"] | {"bootstrap": _crossed(a, b, rounds,
                                                                                                       rng)}
        for what, ivs, truth in (("s_T", single, truth_a), ("s_T(A) − s_T(B)", diff, truth_d)):
            for kind, iv in ivs.items():
                if iv.lo is not None and iv.hi is not None:
                    hits[what][kind] += int(iv.lo <= truth <= iv.hi)
                    widths[what][kind].append(iv.hi - iv.lo)
    return {what: {k: hits[what][k] / stores for k in KINDS} | {
        f"width:{k}": float(np.mean(widths[what][k])) for k in KINDS} for what in hits}


def _crossed(a: Replicates, b: Replicates | None, rounds: int, rng: np.random.Generator) -> Interval:
    """The percentile interval of a bootstrap over seeds and cases together (not beluga's hierarchical interval:
    shown for comparison)."""
    plan = make_plan(a, rounds, rng, seeds=True)
    da = draw(a, plan)
    stat = da.mean(da.per_seed("s_suite"))
    mean = float(a.per_seed("s_suite").mean())
    if b is not None:
        db = draw(b, plan)
        stat = stat - db.mean(db.per_seed("s_suite"))
        mean -= float(b.per_seed("s_suite").mean())
    return percentile_interval(stat, mean)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stores", type=int, default=500, help="synthetic stores per setting and seed count")
    parser.add_argument("--rounds", type=int, default=1000, help="bootstrap rounds per interval")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    print(f"coverage of the 95 % intervals over {args.stores} synthetic stores per row ({GROUPS} groups × {CASES} "
          f"T_test cases, {IID} D_test examples, {args.rounds} bootstrap rounds); a coverage c over n stores has a "
          f"binomial standard error √(c(1−c)/n) ≈ {100 * np.sqrt(0.95 * 0.05 / args.stores):.1f} points at 95 %")
    print("| components (σ seed, seed×group, case, rest) | seeds | figure | seed-level t | bootstrap over seeds × "
          "cases | hierarchical (beluga's) | cases only | mean widths (t / bootstrap / hierarchical / cases) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for setting in SETTINGS:
        for seeds in (3, 5, 10):
            result = coverage(setting, seeds, args.stores, args.rounds, rng)
            for what, c in result.items():
                print(f"| {setting[0]} ({', '.join(str(x) for x in setting[1:])}) | {seeds} | {what} | "
                      f"{100 * c['seed']:.1f} % | {100 * c['bootstrap']:.1f} % | {100 * c['hierarchical']:.1f} % | "
                      f"{100 * c['cases']:.1f} % | {c['width:seed']:.3f} / {c['width:bootstrap']:.3f} / "
                      f"{c['width:hierarchical']:.3f} / {c['width:cases']:.3f} |",
                      flush=True)
    print(f"wall time {time.perf_counter() - started:.0f} s; {machine_line(None, torch.device('cpu'))}")


if __name__ == "__main__":
    main()
