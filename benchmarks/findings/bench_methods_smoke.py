"""Run benchmarks/methods-smoke.toml into a fresh store, time it, and check every method got its G scores.

    python -m benchmarks.findings.bench_methods_smoke [--store PATH] [--keep]

Prints the wall time, the trainings per second, and G per configuration, method and scenario; exits 1 if
any of the 8 methods × 3 suite configurations lacks a G score in a scenario (tests/e2e/test_methods_pipeline.py
runs the CI-sized slice of the same grid).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb

from beluga_core.config.load import load_config
from benchmarks.harness import header, script_parser

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "benchmarks" / "methods-smoke.toml"
METHODS = ["vanilla", "l2", "dropout", "lp", "lp-ft", "irm", "group-dro", "fish"]
CONFIGS = ["iid-then-t", "iid-plus-t", "iid-then-iid-plus-t"]
SCENARIOS = ["seen", "class"]


def main() -> int:
    parser = script_parser(__doc__)
    parser.add_argument("--store", type=Path, default=None, help="store path (default: a temporary file)")
    args = parser.parse_args()
    store = args.store or Path(tempfile.mkdtemp(prefix="beluga-smoke-")) / "smoke.duckdb"
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "beluga_core", "run", str(CONFIG), "--store", str(store)],
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        print(f"beluga run failed with status {proc.returncode}")
        return proc.returncode
    con = duckdb.connect(str(store), read_only=True)
    try:
        rows = con.execute("SELECT config, method, scenario, g FROM g_scores ORDER BY ALL").fetchall()
        n_models, train_s = con.execute("SELECT count(*), sum(train_seconds) FROM models").fetchall()[0]
    finally:
        con.close()
    g = {(c, m, s): v for c, m, s, v in rows}
    missing = [(c, m, s) for c in CONFIGS for m in METHODS for s in SCENARIOS if g.get((c, m, s)) is None]
    print(f"\n{n_models} models in {wall:.0f} s wall ({train_s:.0f} s training); store {store}")
    print(header(load_config(CONFIG).executor.precision))
    print(f"{'configuration':22} {'method':10} " + " ".join(f"{'G ' + s:>8}" for s in SCENARIOS))
    for c in CONFIGS:
        for m in METHODS:
            print(f"{c:22} {m:10} " + " ".join(f"{g.get((c, m, s)) or float('nan'):8.3f}" for s in SCENARIOS))
    if missing:
        print(f"missing G scores: {missing}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
