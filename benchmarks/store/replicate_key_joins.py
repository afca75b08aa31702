"""Do the replicate key's macros (migration 18) slow the views down? Every view read on the synthetic store with the
views of a base commit (each key column compared with IS NOT DISTINCT FROM, written out in every join) and with this
checkout's (the same_* macros), paired and alternated in one run.

    python -m benchmarks.store.replicate_key_joins [--base 471a717] [--rounds 10] [--per-group 40]

Builds the benchmarks' synthetic store (three training seeds) with this checkout, copies it, and re-creates the base
commit's view files (`git show BASE:beluga_core/store/sql/views/…`) in the copy. Each round reads every view of both
stores in fresh read-only connections, in alternating order, and times the whole read. Prints the per-round ratio
new / base, its mean with a 95 % t interval, the machine line, and the wall times. Run it with the floors
virtualenv's Python for DuckDB 1.2.0.
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import duckdb
from scipy import stats

from beluga_core.store.connection import view_files
from beluga_core.store.reader import VIEWS
from benchmarks.harness import REPO, header, script_parser
from tools.fixtures.synthetic_store import build_synthetic_store


def read_all(store: Path) -> float:
    started = time.perf_counter()
    con = duckdb.connect(str(store), read_only=True)
    try:
        for view in VIEWS:
            con.execute(f"SELECT count(*) FROM (SELECT * FROM {view})").fetchall()
    finally:
        con.close()
    return time.perf_counter() - started


def main() -> None:
    parser = script_parser(__doc__)
    parser.add_argument("--base", default="471a717")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--per-group", type=int, default=40)
    args = parser.parse_args()
    print(f"{header(None)} · duckdb {duckdb.__version__} · base {args.base} · {args.rounds} rounds")
    with tempfile.TemporaryDirectory() as tmp:
        new = Path(tmp) / "new.duckdb"
        build_synthetic_store(new, per_group=args.per_group, configs=("iid-plus-t",), seeds=(42, 43, 44))
        base = Path(tmp) / "base.duckdb"
        shutil.copyfile(new, base)
        con = duckdb.connect(str(base))
        for name in view_files():
            sql = subprocess.run(["git", "show", f"{args.base}:beluga_core/store/sql/{name}"], cwd=REPO, check=True,
                                 capture_output=True, text=True).stdout
            con.execute(sql)
        con.close()
        n = duckdb.connect(str(new), read_only=True).execute("SELECT count(*) FROM outcomes").fetchone()
        print(f"synthetic store: {n[0] if n else '?'} outcomes, {len(VIEWS)} views")
        read_all(new), read_all(base)   # warm the page cache
        ratios, t_new, t_base = [], [], []
        for r in range(args.rounds):
            order = (new, base) if r % 2 == 0 else (base, new)
            times = {p: read_all(p) for p in order}
            t_new.append(times[new])
            t_base.append(times[base])
            ratios.append(times[new] / times[base])
            print(f"round {r + 1:2d}: base {times[base]:.3f} s, new {times[new]:.3f} s, ratio {ratios[-1]:.3f}",
                  flush=True)
    mean = statistics.fmean(ratios)
    half = stats.t.ppf(0.975, len(ratios) - 1) * statistics.stdev(ratios) / len(ratios) ** 0.5
    print(f"base: median {statistics.median(t_base):.3f} s; new: median {statistics.median(t_new):.3f} s; "
          f"new / base: {mean:.3f} [{mean - half:.3f}, {mean + half:.3f}] (95 % t over {len(ratios)} paired rounds)")


if __name__ == "__main__":
    main()
