"""Does `beluga power`'s recommendation reach the power it promises? A simulation from a store's components.

    python -m benchmarks.intervals.bench_power runs/quick-seeds.duckdb [--effect 0.05] [--studies 500] [--rounds 200]

For each configuration's seen scenario against the IID baseline (s_T), the store's variance components are read
as `beluga power` reads them, and the seeds it recommends for --effect at 80 % power are taken. Then --studies
synthetic studies are drawn at that many seeds: per-case differences d[s, c] = effect + a_s + b_c + e_sc
(normal, with the store's σ²_seed, σ²_case and σ²_rest, G groups × n cases as in the store), each analysed with
the hierarchical interval exactly as `beluga analyze` does (its case bootstrap included). The share of studies
whose interval excludes 0 is the achieved power (with its binomial 95 % interval); one seed fewer is shown too.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from beluga_core.analysis.replicates.intervals import Replicates, cell_intervals
from beluga_core.analysis.replicates.power import seeds_needed, suite_components
from beluga_core.analysis.replicates.seed_rows import cell_digests, load_cells
from beluga_core.analysis.significance.comparisons import BASELINE
from beluga_core.store.reader import open_store
from benchmarks.harness import header, machine, script_parser


def simulate(seed_var: float, case_var: float, rest_var: float, groups: int, cases: int, seeds: int, effect: float,
             studies: int, rounds: int, rng: np.random.Generator) -> float:
    """The share of simulated studies whose hierarchical interval of the mean difference excludes 0."""
    hits = 0
    group = np.repeat(np.arange(groups), cases)
    for _ in range(studies):
        a = rng.normal(0, np.sqrt(seed_var), size=(seeds, 1))
        b = rng.normal(0, np.sqrt(case_var), size=(1, groups * cases))
        d = effect + a + b + rng.normal(0, np.sqrt(rest_var), size=(seeds, groups * cases))
        # A "pooled" statistic over equal-sized groups is s_T's mean of group means.
        cell = Replicates(tuple(range(seeds)), tuple(str(g) for g in range(groups)), group, d, np.ones_like(d))
        iv = cell_intervals(cell, ["pooled"], rounds, rng)["pooled"]["hierarchical"]
        hits += bool(iv.excludes_zero())
    return hits / studies


def main() -> None:
    parser = script_parser(__doc__)
    parser.add_argument("store", type=Path)
    parser.add_argument("--effect", type=float, default=0.05)
    parser.add_argument("--studies", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=200, help="case-bootstrap rounds per simulated study")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(header(None))
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    with open_store(args.store) as con:
        digests = cell_digests(con)
        pairs = [(c, c.other(*BASELINE)) for c in sorted(digests) if c.scenario == "seen"
                 and c.other(*BASELINE) in digests]
        cells = load_cells(con, {x for p in pairs for x in p})
    print(f"simulated power of `beluga power`'s recommendation: {args.studies} studies per row, effect "
          f"{100 * args.effect:+.1f} points of s_T, the store's components ({args.store})")
    print("| comparison | σ²_seed | σ²_case | σ²_rest | groups × cases | recommended seeds | achieved power | "
          "one seed fewer |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for a, b in pairs:
        comp = suite_components(cells[a], cells[b])
        n = round(comp.cases)
        s = seeds_needed(comp.variance, comp.cases, args.effect)
        if s is None:
            print(f"| {a.config} seen − iid standard | … | | | | more than 1,000 | | |")
            continue
        rows = []
        for seeds in (s, s - 1):
            p = simulate(comp.seed, comp.case, comp.rest, comp.groups, n, seeds, args.effect, args.studies,
                         args.rounds, rng) if seeds >= 2 else float("nan")
            half = 1.96 * np.sqrt(p * (1 - p) / args.studies)
            rows.append(f"{100 * p:.1f} % [{100 * (p - half):.1f}, {100 * (p + half):.1f}]")
        print(f"| {a.config}/{a.method} seen − iid standard | {comp.seed:.2e} | {comp.case:.2e} | {comp.rest:.2e} | "
              f"{comp.groups} × {n} | {s} | {rows[0]} | {rows[1]} |", flush=True)
    print(f"wall time {time.perf_counter() - started:.0f} s; {machine(None)}")


if __name__ == "__main__":
    main()
