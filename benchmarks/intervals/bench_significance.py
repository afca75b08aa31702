"""Time the significance tests (issue 5): one randomization comparison at sentiment scale, and a whole
quick store.

    python -m benchmarks.intervals.bench_significance [--store runs/quick.duckdb] [--rounds 10000]

1. One comparison: 38 groups, ~21.6k T_test cases (a quarter of the sentiment suite, as a full-size
   T_test), 436 D_test examples, 10,000 rounds; the issue asks for < 10 s. Timed: reading the paired
   counts from the store (SQL), and the randomization itself.
2. A whole quick store (148 models): a copy of --store when given and finished (the original is never
   written), else a synthetic store of the same shape; `analyze_store` from scratch. The issue asks < 2 min.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path

from beluga_core.analysis.significance.comparison_tests import analyze_store, run_comparisons
from beluga_core.analysis.significance.comparisons import REPLICATE, load_arms, pair_comparisons
from beluga_core.store.connection import aggregate_row
from beluga_core.store.reader import open_store
from benchmarks.harness import header, script_parser
from tools.fixtures.synthetic_store import build_synthetic_store


def one_comparison(tmp: Path, rounds: int) -> float:
    store = tmp / "sentiment-scale.duckdb"
    build_synthetic_store(store, per_group=None, configs=("iid-plus-t",), scenarios=("seen",))
    with open_store(store) as con:
        arms = load_arms(con)
        (comparison,) = [c for c in pair_comparisons(arms, ("iid-plus-t", "vanilla"), ("iid", "vanilla"), "standard")
                         if c.scope == REPLICATE]
        n_cases = aggregate_row(con, "SELECT count(*) FROM outcomes o JOIN models m USING (model_id) "
                                     "WHERE m.config = 'iid'")[0]
        started = time.perf_counter()
        (row,) = run_comparisons(con, [comparison], arms, rounds=rounds, seed=0)
        elapsed = time.perf_counter() - started
    print(f"1. one comparison at sentiment scale: {row['n_cases']:,} paired T_test cases (of {n_cases:,}), "
          f"{row['n_iid']} D_test examples, {rounds:,} rounds: {elapsed:.2f} s (limit 10 s) "
          f"[ΔG {100 * row['delta_g']:+.2f} pp, p {row['p_g']:.4f}; Δiid {100 * row['delta_iid']:+.2f} pp, "
          f"p {row['p_iid']:.2e}]")
    return elapsed


def whole_store(tmp: Path, source: Path | None, rounds: int) -> float:
    store = tmp / "quick.duckdb"
    what = "synthetic quick-shaped store"
    if source is not None and source.exists():
        with open_store(source) as con:
            n_done = aggregate_row(con, "SELECT count(*) FROM models WHERE status = 'done'")[0]
            running = aggregate_row(con, "SELECT count(*) FROM runs WHERE status = 'running'")[0]
        if n_done >= 100 and not running:
            shutil.copyfile(source, store)
            what = f"copy of {source}"
        else:
            print(f"   ({source}: {n_done} done model(s){', a run still going' if running else ''}; "
                  "using a synthetic store instead)")
    if not store.exists():
        build_synthetic_store(store)
    with open_store(store) as con:
        n_models = aggregate_row(con, "SELECT count(*) FROM models WHERE status = 'done'")[0]
    started = time.perf_counter()
    summary = analyze_store(store, rounds=rounds, seed=0, force=True)
    elapsed = time.perf_counter() - started
    print(f"2. whole store ({what}, {n_models} models): {summary.n_computed} tests, {rounds:,} rounds each: "
          f"{elapsed:.2f} s (limit 120 s)")
    return elapsed


def main() -> int:
    parser = script_parser(__doc__, full=True)
    parser.add_argument("--store", type=Path, default=Path("runs/quick.duckdb"),
                        help="a finished quick store to copy for timing 2 (default runs/quick.duckdb)")
    parser.add_argument("--rounds", type=int, default=10_000)
    args = parser.parse_args()
    print(header(None))
    with tempfile.TemporaryDirectory(prefix="beluga-bench-sig-") as tmp:
        t1 = one_comparison(Path(tmp), args.rounds)
        t2 = whole_store(Path(tmp), args.store, args.rounds)
    ok = t1 < 10 and t2 < 120
    print("OK" if ok else "TOO SLOW")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
