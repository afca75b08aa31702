"""Record what a refactoring must not change: every shipped config's job ids, and every view of each tiny config's
store (tests/test_golden.py compares the current code with them).

    python benchmarks/build_golden.py ids      # tests/data/golden/job_ids.json.gz: the job ids of every config
    python benchmarks/build_golden.py stores   # tests/data/golden/<config>/: each tiny config run once, its raw
                                               # tables as Parquet and every view's rows as JSON

Run it on the code before a refactoring, commit what it writes, and the tests hold the refactoring to it: the
same plan (job ids: data, sizes, hyper-parameters, parents), and the same views over the same raw facts (so a
rewritten SQL definition gives the same rows). The raw tables, not the trained numbers, are what is kept: a run
on another CPU (bf16 or not) trains other numbers, a view of the same rows must not.
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import duckdb

REPO = Path(__file__).resolve().parents[1]
GOLDEN = REPO / "tests" / "data" / "golden"
sys.path.insert(0, str(REPO / "tests"))


def job_ids(config: Path) -> dict[str, Any]:
    """{'jobs': sorted job ids (known jobs and grid points), 'pending': folds awaiting a grid search} or an error."""
    from beluga_core.config.load import load_config
    from beluga_core.core.errors import BelugaError
    from beluga_core.planning.plan import build_plan

    try:
        plan = build_plan(load_config(config), config.resolve(), allow_missing_tasks=True)
    except BelugaError as exc:   # the checkout's own path left out: a clean clone elsewhere reads the same
        return {"error": str(exc).replace(str(REPO), "<repo>")}
    return {"jobs": sorted(j.id for j in [*plan.jobs, *plan.grid_jobs]), "pending": len(plan.pending)}


def record_ids() -> Path:
    configs = sorted([*(REPO / "benchmarks").glob("*.toml"), *(REPO / "tests" / "data").glob("tiny-*.toml")])
    out = {str(c.relative_to(REPO)): job_ids(c) for c in configs}
    GOLDEN.mkdir(parents=True, exist_ok=True)
    path = GOLDEN / "job_ids.json.gz"
    path.write_bytes(gzip.compress(json.dumps(out, indent=1, sort_keys=True).encode("utf-8"), mtime=0))
    n = sum(len(v.get("jobs", [])) for v in out.values())
    print(f"{path}: {n} job ids of {len(out)} configs ({sum('error' in v for v in out.values())} not plannable here)")
    return path


def view_rows(con: duckdb.DuckDBPyConnection) -> dict[str, dict[str, Any]]:
    """Every view's columns and rows (sorted; floats rounded to 9 digits), as tests/test_golden.py compares."""
    from beluga_core.store.reader import VIEWS

    out = {}
    for view in VIEWS:
        cur = con.execute(f"SELECT * FROM {view}")
        cols = [d[0] for d in cur.description]
        rows = sorted((normalize(r) for r in cur.fetchall()), key=lambda r: json.dumps(r, default=str))
        out[view] = {"columns": cols, "rows": rows}
    return out


def normalize(row: tuple[Any, ...]) -> list[Any]:
    def one(x: Any) -> Any:
        if isinstance(x, float):
            return round(x, 9)
        if isinstance(x, list | tuple):
            return [one(y) for y in x]
        if isinstance(x, dict):
            return {k: one(v) for k, v in sorted(x.items())}
        return x if isinstance(x, int | str | bool | type(None)) else str(x)
    return [one(x) for x in row]


def record_stores() -> None:
    from helpers import run_benchmark

    from beluga_core.store.rows import TABLES

    for config in sorted((REPO / "tests" / "data").glob("tiny-*.toml")):
        target = GOLDEN / config.stem
        with tempfile.TemporaryDirectory() as tmp:
            store = Path(tmp) / "s.duckdb"
            run_benchmark(config, store)
            from beluga_core.analysis.refresh import refresh

            refresh(store)
            if target.exists():
                shutil.rmtree(target)
            target.mkdir(parents=True)
            con = duckdb.connect(str(store), read_only=True)
            try:
                for table in TABLES:
                    if con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]:  # type: ignore[index]
                        con.execute(f"COPY {table} TO '{target / (table + '.parquet')}' (FORMAT PARQUET, "
                                    "COMPRESSION ZSTD)")
                views = view_rows(con)
            finally:
                con.close()
        (target / "views.json.gz").write_bytes(gzip.compress(json.dumps(views, default=str).encode("utf-8"),
                                                             mtime=0))
        size = sum(p.stat().st_size for p in target.iterdir())
        print(f"{target.relative_to(REPO)}: {size / 1e6:.2f} MB", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", choices=("ids", "stores"))
    args = parser.parse_args()
    if args.what == "ids":
        record_ids()
    else:
        record_stores()


if __name__ == "__main__":
    main()
