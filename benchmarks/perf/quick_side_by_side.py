"""The quick run on two commits, side by side: is the newer one slower, is a fold's fixed cost lower, and does every
stored row stay bit-identical? (issue 57's third point)

    python -m benchmarks.perf.quick_side_by_side BASE_COMMIT [--head COMMIT] [--pairs 3] [--out DIR]
    python -m benchmarks.perf.quick_side_by_side d96e663 --store-rows 0 10000000

Each side is a fresh clone of its commit, run with that clone first on ``PYTHONPATH`` (the installed environment is
shared, only the code differs). Three parts, in this order:

  1. the fold profile (``benchmarks.perf.fold_profile``, this checkout's copy of it run in each clone) for each
     ``--store-rows`` (the outcome rows of other models the store already holds), base then head: the fixed cost per
     fold, and of it the commit;
  2. ``--pairs`` pairs of ``beluga run CONFIG`` (quick.toml by default) at a forced precision (fp32 by default), in
     A B B A order so that the machine's drift falls on both sides alike, each in a new store, timed from outside;
     the per-pair ratio and the harness's paired verdict (the speed of head against base, geometric mean and 95 %
     t interval over pairs);
  3. every stored row of each head store against the base store of its pair: each table a run writes, all columns but
     those that record when, where and how long (run ids, times, seconds, host, worker, pack). Bit-identical means
     equal as DuckDB returns them, floats and lists of floats included.

Both sides share one calibration cache (``XDG_CACHE_HOME`` under ``--out``), filled by one untimed dry run of each
side before the pairs, so that no timed run measures a machine (a user measures it once).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb

from benchmarks.harness import (
    MIN_PAIRED,
    REPO,
    clone_at,
    forced_config,
    header,
    script_parser,
    short_commit,
    speed_verdict,
)

# Columns that say when, where or how long, not what was computed: they differ between any two runs.
VOLATILE = {"run_id", "started_at", "finished_at", "train_seconds", "eval_seconds", "computed_at", "selected_at",
            "beluga_version", "host", "pid", "worker", "pack", "attempts"}
# Tables a run writes; `runs`, `packs` and `beluga_meta` are its record, not its results.
RESULT_TABLES = ("models", "outcomes", "iid_predictions", "iid_metrics", "iid_probs", "grid_points", "grid_metrics",
                 "grid_outcomes", "grid_selections", "case_predictions", "cross_evaluations", "cross_outcomes",
                 "probe_outcomes", "probe_predictions", "attributions", "cases", "case_splits", "splits", "suites")


def stored_rows(store: Path) -> dict[str, list[tuple[object, ...]]]:
    """Every row of the result tables, all but the volatile columns, in one order."""
    con = duckdb.connect(str(store), read_only=True)
    try:
        out = {}
        for table in RESULT_TABLES:
            columns = [c[0] for c in con.execute(f"DESCRIBE {table}").fetchall() if c[0] not in VOLATILE]
            listed = ", ".join(f'"{c}"' for c in columns)
            out[table] = con.execute(f"SELECT {listed} FROM {table} ORDER BY ALL").fetchall()
        return out
    finally:
        con.close()


def differences(a: Path, b: Path) -> list[str]:
    """Tables whose rows differ between two stores, with their row counts ([] when every row is identical)."""
    rows_a, rows_b = stored_rows(a), stored_rows(b)
    return [f"{t} ({len(rows_a[t])} against {len(rows_b[t])} rows, "
            f"{sum(x != y for x, y in zip(rows_a[t], rows_b[t], strict=False))} differing)"
            for t in RESULT_TABLES if rows_a[t] != rows_b[t]]


def _env(clone: Path, cache: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(clone), "XDG_CACHE_HOME": str(cache), "HF_HUB_OFFLINE": "1"}


def _beluga(clone: Path, cache: Path, *args: str) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "beluga_core", *args], cwd=clone, env=_env(clone, cache),
                          capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"beluga {' '.join(args)} failed in {clone} (exit {done.returncode}):\n{done.stdout[-3000:]}\n"
                 f"{done.stderr[-3000:]}")
    return wall, done.stdout


def _fold_profile(clone: Path, cache: Path, store_rows: int, folds: int) -> str:
    script = clone / "benchmarks" / "perf" / "fold_profile.py"
    if not script.exists():  # the base predates the script: this checkout's copy profiles its code
        shutil.copy(REPO / "benchmarks" / "perf" / "fold_profile.py", script)
    done = subprocess.run([sys.executable, "-m", "benchmarks.perf.fold_profile", "--folds", str(folds),
                           "--store-rows", str(store_rows)], cwd=clone, env=_env(clone, cache),
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"the fold profile failed in {clone}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return done.stdout


def main() -> None:
    parser = script_parser(__doc__, full=True)
    parser.add_argument("base", help="the earlier commit")
    parser.add_argument("--head", default="HEAD", help="the later commit (default: HEAD)")
    parser.add_argument("--pairs", type=int, default=MIN_PAIRED)
    parser.add_argument("--config", default="benchmarks/quick.toml", help="relative to the repository")
    parser.add_argument("--precision", default="fp32")
    parser.add_argument("--store-rows", type=int, nargs="*", default=[0],
                        help="fold profiles at these store sizes (outcome rows of other models; none: no profile)")
    parser.add_argument("--folds", type=int, default=24, help="folds per fold profile (default: 24)")
    parser.add_argument("--out", type=Path, default=None, help="where the clones, stores and cache go")
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="quick-side-by-side-"))
    out.mkdir(parents=True, exist_ok=True)
    cache = out / "cache"
    commits = {side: short_commit(ref) for side, ref in (("base", args.base), ("head", args.head))}
    clones = {side: clone_at(commit, out / side) for side, commit in commits.items()}
    print(header(args.precision))
    print(f"base {commits['base']}, head {commits['head']}; {args.config}; clones in {out}", flush=True)

    for rows in args.store_rows:
        for side in ("base", "head"):
            printed = _fold_profile(clones[side], cache, rows, args.folds)
            fixed = re.search(r"fixed = wall - steps - eval passes\s+([\d.]+) s", printed)
            commit = re.search(r"of which the commit\s+([\d.]+) s", printed)
            print(f"fold profile, {rows:,} outcome rows already stored, {side} ({commits[side]}): fixed "
                  f"{fixed[1] if fixed else '?'} s per fold (median), of which the commit "
                  f"{commit[1] if commit else '?'} s", flush=True)

    configs = {side: forced_config(clones[side] / args.config, args.precision) for side in clones}
    for side in clones:
        _beluga(clones[side], cache, "run", str(configs[side]), "--dry-run", "--store", str(out / f"dry-{side}.duckdb"))
    walls: dict[str, list[float]] = {"base": [], "head": []}
    stores: dict[str, list[Path]] = {"base": [], "head": []}
    for pair in range(args.pairs):
        order = ("base", "head") if pair % 2 == 0 else ("head", "base")
        for side in order:
            store = out / f"{side}-{pair + 1}.duckdb"
            wall, printed = _beluga(clones[side], cache, "run", str(configs[side]), "--store", str(store))
            walls[side].append(wall)
            stores[side].append(store)
            done = next((line for line in printed.splitlines() if "trainings" in line and "planned" in line), "")
            print(f"pair {pair + 1} {side} ({commits[side]}): {wall:.1f} s  [{done.strip()}]", flush=True)
    for pair, (w_b, w_h) in enumerate(zip(walls["base"], walls["head"], strict=True), start=1):
        print(f"pair {pair}: head / base = {w_h / w_b:.3f}")
    print(speed_verdict([1 / w for w in walls["head"]], [1 / w for w in walls["base"]],
                        f"{args.config} at {args.precision}, {commits['head']} against {commits['base']} (speed)"))
    for pair, (b, h) in enumerate(zip(stores["base"], stores["head"], strict=True), start=1):
        diff = differences(b, h)
        n = sum(len(r) for r in stored_rows(h).values())
        print(f"pair {pair} stores: " + ("every stored row bit-identical "
                                          f"({n:,} rows in {len(RESULT_TABLES)} tables)" if not diff
                                          else "DIFFER: " + "; ".join(diff)))


if __name__ == "__main__":
    main()
