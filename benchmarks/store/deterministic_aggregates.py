"""Does a mean over a DOUBLE column read the same bits every time? DuckDB's `avg` against the store's `mean_of`
(migration 17: the group's values sorted, then averaged in one pass), at the default row-group size.

For each size, a table of that many random doubles in 40 groups is written to a file once; then each aggregate is
read READS times, each time in a fresh read-only connection at THREADS threads, and the distinct results are counted
(a query's result as a whole: every group's mean). Prints the DuckDB version, the CPU and the wall time beside them.

    python -m benchmarks.store.deterministic_aggregates [--sizes 50000 200000 1000000] [--reads 15] [--threads 4]
"""

from __future__ import annotations

import platform
import tempfile
import time
from pathlib import Path

import duckdb

from benchmarks.harness import REPO, header, script_parser

MIGRATION = REPO / "beluga_core" / "store" / "sql" / "migrations" / "0017_deterministic_aggregates.sql"
AGGREGATES = {"avg": "avg(x)", "mean_of": "mean_of(x)", "sum": "sum(x)", "sum_of": "sum_of(x)"}


def cpu() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown CPU"


def main() -> None:
    parser = script_parser(__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[50_000, 200_000, 1_000_000])
    parser.add_argument("--reads", type=int, default=15)
    parser.add_argument("--threads", type=int, default=4)
    args = parser.parse_args()
    print(header(None))
    print(f"duckdb {duckdb.__version__} · {cpu()} · Python {platform.python_version()} · {args.reads} reads per "
          f"aggregate and size, {args.threads} threads, fresh connections · precision: float64 (DOUBLE)")
    print(f"{'rows':>10} {'row groups':>10} " + " ".join(f"{name:>9}" for name in AGGREGATES) + "   seconds")
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.sizes:
            path = Path(tmp) / f"t{n}.duckdb"
            con = duckdb.connect(str(path))
            con.execute(MIGRATION.read_text(encoding="utf-8"))
            con.execute(f"CREATE TABLE t AS SELECT (range % 40)::INTEGER AS g, random() * 1000 AS x FROM range({n})")
            groups = con.execute("SELECT count(DISTINCT row_group_id) FROM pragma_storage_info('t')").fetchone()
            con.close()
            started = time.perf_counter()
            distinct = []
            for expression in AGGREGATES.values():
                seen = set()
                for _ in range(args.reads):
                    con = duckdb.connect(str(path), read_only=True, config={"threads": args.threads})
                    seen.add(tuple(con.execute(f"SELECT g, {expression} FROM t GROUP BY g ORDER BY g").fetchall()))
                    con.close()
                distinct.append(len(seen))
            print(f"{n:>10} {groups[0] if groups else '?':>10} " + " ".join(f"{d:>9}" for d in distinct)
                  + f"   {time.perf_counter() - started:7.1f}", flush=True)
    print("(distinct results in the reads: 1 means every read gave the same bits)")


if __name__ == "__main__":
    main()
