"""Record what a refactoring must not change: every shipped config's job ids, and every view of each tiny config's
store (tests/unit/store/test_golden.py compares the current code with them).

    python benchmarks/build_golden.py ids      # tests/data/golden/job_ids.json.gz: the job ids of every config
    python benchmarks/build_golden.py stores   # tests/data/golden/<config>/: each tiny config run once, its raw
                                               # tables as Parquet and every view's rows as JSON
    python benchmarks/build_golden.py views    # each golden store's views again from its Parquet tables (a view
                                               # change meant to change rows)
    python benchmarks/build_golden.py store    # tests/data/stores/schema<N>.duckdb.gz: a store as this code writes
                                               # it (schema N) and its views, for the next migration's test

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
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import duckdb

REPO = Path(__file__).resolve().parents[1]
GOLDEN = REPO / "tests" / "data" / "golden"
sys.path.insert(0, str(REPO / "tests"))


def job_ids(config: Path, store_ids: Iterable[str] = ()) -> dict[str, Any]:
    """{'jobs': sorted job ids (known jobs and grid points), 'pending': folds awaiting a grid search} or an error.
    ``store_ids``: planned for a store holding these done models (an earlier scheme's IID ids keep theirs)."""
    plan = planned(config, store_ids)
    if isinstance(plan, dict):
        return plan
    return {"jobs": sorted(j.id for j in [*plan.jobs, *plan.grid_jobs]), "pending": len(plan.pending)}


def planned(config: Path, store_ids: Iterable[str] = ()) -> Any:
    """The plan of ``config`` as the goldens record it, or {"error": why it cannot be planned here}."""
    from toy_model import TOY_NAME

    from beluga_core.config.load import load_config
    from beluga_core.core.errors import BelugaError
    from beluga_core.planning.plan import build_plan

    text = config.read_text(encoding="utf-8")
    toy = f'name = "{TOY_NAME}"'
    # A job id hashes the model's name, and a local folder's is its absolute path: the tests' toy model is planned
    # under the embedded model's name, so that the ids are the same in every checkout.
    written = config.with_name(f".golden-{config.name}") if toy in text else config
    if written != config:
        written.write_text(text.replace(toy, 'name = "embedded:minilm"'), encoding="utf-8")
    try:
        return build_plan(load_config(written), written.resolve(), allow_missing_tasks=True, store_ids=store_ids)
    except BelugaError as exc:   # the checkout's own path left out: a clean clone elsewhere reads the same
        return {"error": str(exc).replace(str(REPO), "<repo>").replace(written.name, config.name)}
    finally:
        if written != config:
            written.unlink()


def record_ids() -> Path:
    from helpers import shipped_configs, tiny_configs

    configs = [*shipped_configs(), *tiny_configs()]
    out = {str(c.relative_to(REPO)): job_ids(c) for c in configs}
    GOLDEN.mkdir(parents=True, exist_ok=True)
    path = GOLDEN / "job_ids.json.gz"
    path.write_bytes(gzip.compress(json.dumps(out, indent=1, sort_keys=True).encode("utf-8"), mtime=0))
    n = sum(len(v.get("jobs", [])) for v in out.values())
    print(f"{path}: {n} job ids of {len(out)} configs ({sum('error' in v for v in out.values())} not plannable here)")
    return path


def view_rows(con: duckdb.DuckDBPyConnection, digits: int | None = None) -> dict[str, dict[str, Any]]:
    """Every view's columns and rows (sorted), as tests/unit/store/test_golden.py compares: floats exact (JSON
    writes a float's shortest repr, which reads back as the same double; the views read the same bits on every
    read), or rounded to ``digits`` for a recording made before they did (the schema fixtures of
    tests/data/stores up to schema 16)."""
    from beluga_core.store.reader import VIEWS

    out = {}
    for view in VIEWS:
        cur = con.execute(f"SELECT * FROM {view}")
        cols = [d[0] for d in cur.description]
        rows = sorted((normalize(r, digits) for r in cur.fetchall()), key=lambda r: json.dumps(r, default=str))
        out[view] = {"columns": cols, "rows": rows}
    return out


def normalize(row: tuple[Any, ...], digits: int | None = None) -> list[Any]:
    def one(x: Any) -> Any:
        if isinstance(x, float):
            return x if digits is None else round(x, digits)
        if isinstance(x, list | tuple):
            return [one(y) for y in x]
        if isinstance(x, dict):
            return {k: one(v) for k, v in sorted(x.items())}
        return x if isinstance(x, int | str | bool | type(None)) else str(x)
    return [one(x) for x in row]


def record_stores(only: list[str] | None = None) -> None:
    from helpers import run_benchmark, tiny_configs

    from beluga_core.store.rows import TABLES

    for config in tiny_configs():
        if only and config.stem not in only:
            continue
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


def golden_views(golden: Path, store: Path) -> dict[str, dict[str, Any]]:
    """Every view (``view_rows``) over a golden folder's raw tables, loaded into ``store``, a new store of today's
    schema."""
    from beluga_core.store.writer import StoreWriter

    StoreWriter(store)
    con = duckdb.connect(str(store))
    try:
        con.execute("DELETE FROM beluga_meta")
        for parquet in sorted(golden.glob("*.parquet")):
            con.execute(f"INSERT INTO {parquet.stem} BY NAME SELECT * FROM read_parquet('{parquet}')")
        return view_rows(con)
    finally:
        con.close()


def record_views() -> None:
    """Each golden store's views.json.gz again, from its raw tables and today's views (after a change to the views
    that is meant to change their rows; commit it with the reason)."""
    for golden in sorted(p for p in GOLDEN.iterdir() if p.is_dir()):
        with tempfile.TemporaryDirectory() as tmp:
            views = golden_views(golden, Path(tmp) / "s.duckdb")
        (golden / "views.json.gz").write_bytes(gzip.compress(json.dumps(views, default=str).encode("utf-8"),
                                                             mtime=0))
        print(f"{(golden / 'views.json.gz').relative_to(REPO)}: {sum(bool(v['rows']) for v in views.values())} of "
              f"{len(views)} views with rows", flush=True)


# The real run the migration test's store starts from: a held-out level other than test_type, significance tests
# and replicate intervals.
OLD_STORE_BASE = "tiny-executors"


def record_store() -> Path:
    """tests/data/stores/schema<N>.duckdb.gz and its views: a store as this code writes it, for the test that the
    next migration opens, migrates and reads it the same. Its rows: the golden rows of a tiny config's real run,
    and, written through the writer, what no tiny config runs (grid points, cross-suite evaluations, an
    only:LEVEL model, a G exclusion) with the edge cases the views handle: groups without an evaluable case, G
    of two zeros, a scenario and a grid point without an i.i.d. score. Run it on the code before a migration
    (the store must have the previous schema) and commit what it writes."""
    from beluga_core.store.migrations import SCHEMA_VERSION
    from beluga_core.store.store_checks import check_store
    from beluga_core.store.writer import StoreWriter

    target = REPO / "tests" / "data" / "stores" / f"schema{SCHEMA_VERSION}"
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "s.duckdb"
        writer = StoreWriter(store)
        con = duckdb.connect(str(store))
        try:
            for parquet in sorted((GOLDEN / OLD_STORE_BASE).glob("*.parquet")):
                if parquet.stem != "beluga_meta":   # the writer's own: this code made the store
                    con.execute(f"INSERT INTO {parquet.stem} BY NAME SELECT * FROM read_parquet('{parquet}')")
            kept = con.execute("""SELECT s.part, c.case_id, c.scoring_group, c.test_type, c.groups->>'length'
                                  FROM case_splits s JOIN cases c ON c.case_id = s.case_id
                                  WHERE s.kept AND s.part IN ('val', 'test') ORDER BY ALL""").fetchall()
        finally:
            con.close()
        _hand_made(writer, [r[1:] for r in kept if r[0] == "val"], [r[1:] for r in kept if r[0] == "test"])
        con = duckdb.connect(str(store))
        try:
            violations, _ = check_store(con)
            assert not violations, [v.name for v in violations]
            views = view_rows(con)
        finally:
            con.close()
        target.with_suffix(".duckdb.gz").write_bytes(gzip.compress(store.read_bytes(), compresslevel=9, mtime=0))
    target.with_suffix(".views.json.gz").write_bytes(gzip.compress(json.dumps(views, default=str).encode("utf-8"),
                                                                   mtime=0))
    print(f"{target.relative_to(REPO)}: schema {SCHEMA_VERSION}, "
          f"{sum(bool(v['rows']) for v in views.values())} of {len(views)} views with rows")
    return target


Kept = list[tuple[str, str, str, str]]   # case id, scoring group, test type, length group


def _hand_made(writer: Any, val: Kept, test: Kept) -> None:
    from datetime import datetime

    import numpy as np

    from beluga_core.core.constants import only_scenario
    from beluga_core.execution.results import (
        CrossResult,
        GridPointRecord,
        IIDResult,
        JobResult,
        ModelRecord,
        Outcomes,
        ValidationRow,
    )
    from beluga_core.store.rows import CaseRow, SuiteRow

    task, suite, evals = "sentiment", "sst2-phenomena", "handmade-evals"
    # Fixed times: the views that digest them (significance_inputs, …) are then the same on every recording.
    clock = iter(datetime(2025, 1, 1, 0, 0, s) for s in range(60))
    writer.set_g_exclusions(task, ["contrast"])
    # Grid points on T_val: mixed (the group 'plain' all skipped: no evaluable case), all failing with an i.i.d.
    # score of 0 (G of two zeros), and one without an i.i.d. score (no G).
    points = {
        "grid-mixed": (["skip" if g == "plain" else ("pass", "fail", "skip")[i % 3] for i, (_, g, _, _) in
                        enumerate(val)],
                       [ValidationRow("suite_val", "MFT", "f1", 0.5), ValidationRow("iid_val", None, "accuracy", 0.75,
                                                                                  True)]),
        "grid-zero": (["fail"] * len(val), [ValidationRow("iid_val", None, "accuracy", 0.0, True)]),
        "grid-no-iid": (["fail" if (g, t) == ("negation", "INV") else "pass" for _, g, t, _ in val],
                        [ValidationRow("suite_val", "INV", "objective", 0.25)]),
    }
    for i, (grid_id, (outcomes, metrics)) in enumerate(points.items()):
        record = GridPointRecord(grid_id=grid_id, task=task, config="iid-plus-t", method="vanilla",
                                 point={"learning_rate": (1e-5, 3e-5, 1e-4)[i]}, suite=suite,
                                 model_name="embedded:minilm", seed=42, split_seed=123, finished_at=next(clock))
        writer.commit(JobResult(record, Outcomes.of([c for c, _, _, _ in val], outcomes), validation=metrics))

    # An eval suite: 'neg' maps to negation / short, 'int' to intensifier / long, 'odd' to nothing.
    writer.ensure_suite(SuiteRow(evals, ("phenomenon",), "phenomenon", "text", ("negative", "positive")),
                        [CaseRow(f"{p}-{j}", "MFT", {"phenomenon": p}) for p in ("neg", "int", "odd")
                         for j in range(3)])
    writer.set_cross_maps(task, suite, evals, {
        "length": {**{f"neg-{j}": "short" for j in range(3)}, **{f"int-{j}": "long" for j in range(3)}},
        "phenomenon": {**{f"neg-{j}": "negation" for j in range(3)}, **{f"int-{j}": "intensifier" for j in range(3)}}})

    def model(mid: str, config: str, scenario: str, outcomes: dict[str, str], cross: dict[str, str], *,
              accuracy: float | None = None, heldout: str | None = None, trained: tuple[str, str] | None = None
              ) -> None:
        record = ModelRecord(model_id=mid, task=task, suite=suite, model_name="handmade", config=config,
                             method="vanilla", scenario=scenario, heldout_level="length" if heldout else None,
                             heldout_group=heldout, seed=42, split_seed=123,
                             trained_level=trained[0] if trained else None,
                             trained_group=trained[1] if trained else None, finished_at=next(clock))
        iid = []
        if accuracy is not None:
            correct = np.array([i < accuracy * 8 for i in range(8)])
            iid = [IIDResult("test", ["1"] * 8, ["1" if c else "0" for c in correct], correct,
                             {"accuracy": accuracy}, "accuracy")]
        writer.commit(JobResult(record, Outcomes.of(list(outcomes), list(outcomes.values())), iid,
                                cross=[CrossResult(evals, "handmade", Outcomes.of(list(cross), list(cross.values())))]))

    cases = [f"{p}-{j}" for p in ("neg", "int", "odd") for j in range(3)]
    # The IID baseline fails everything and scores 0 on D_test: G of two zeros, on T_test and on the eval suite.
    model("handmade-iid", "iid", "standard", {c: "fail" for c, _, _, _ in test}, dict.fromkeys(cases, "fail"),
          accuracy=0.0)
    model("handmade-seen", "iid-then-t", "seen",
          {c: "skip" if g == "plain" else ("pass", "fail")[i % 2] for i, (c, g, _, _) in enumerate(test)},
          dict(zip(cases, ["pass", "pass", "fail", "skip", "pass", "fail", "skip", "skip", "skip"], strict=True)),
          accuracy=0.5)
    fold_cross = {"short": {"neg-0": "pass", "neg-1": "fail", "neg-2": "fail"},
                  "long": dict.fromkeys(("int-0", "int-1", "int-2"), "pass"), "medium": {}}
    for group, cross in fold_cross.items():
        model(f"handmade-length-{group}", "iid-then-t", "length",
              {c: ("fail", "pass")[i % 2] for i, (c, _, _, n) in enumerate(test) if n == group}, cross, heldout=group)
    # A configuration with no seen model has no s_iid: no G.
    model("handmade-plus-length-short", "iid-plus-t", "length",
          {c: "pass" for c, _, _, n in test if n == "short"}, {"neg-0": "pass"}, heldout="short")
    model("handmade-only-negation", "iid-then-t", only_scenario("phenomenon", "negation"),
          {c: "pass" if g == "negation" else ("fail", "pass", "skip")[i % 3] for i, (c, g, _, _) in enumerate(test)},
          dict.fromkeys(cases, "pass"), trained=("phenomenon", "negation"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", choices=("ids", "stores", "views", "store"))
    parser.add_argument("--only", nargs="+", metavar="CONFIG",
                        help="stores: record these tiny configs only (by name: a new config's, the others unchanged)")
    args = parser.parse_args()
    if args.what == "ids":
        record_ids()
    elif args.what == "stores":
        record_stores(args.only)
    elif args.what == "views":
        record_views()
    else:
        record_store()


if __name__ == "__main__":
    main()
