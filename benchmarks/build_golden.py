"""Record what a refactoring must not change: every shipped config's job ids, every view of each tiny config's
store (tests/unit/store/test_golden.py compares the current code with them), and the raw rows today's worker
writes for one tiny config (tests/e2e/test_worker_golden.py).

    python benchmarks/build_golden.py ids      # tests/data/golden/job_ids.json.gz: the job ids of every config
                                               # (--only NAME…: these configs', the others kept as recorded)
    python benchmarks/build_golden.py stores   # tests/data/golden/<config>/: each tiny config run once, its raw
                                               # tables as Parquet and every view's rows as JSON (--only NAME…)
    python benchmarks/build_golden.py views    # each golden store's views again from its Parquet tables (a view
                                               # change meant to change rows)
    python benchmarks/build_golden.py store    # tests/data/stores/schema<N>.duckdb.gz: a store as this code writes
                                               # it (schema N) and its views, for the next migration's test
    python benchmarks/build_golden.py worker   # tests/data/golden/tiny-steps/worker_rows.json.gz: tiny-steps run
                                               # by this code, its raw rows and this machine's fingerprint

Run it on the code before a refactoring, commit what it writes, and the tests hold the refactoring to it: the
same plan (job ids: data, sizes, hyper-parameters, parents), and the same views over the same raw facts (so a
rewritten SQL definition gives the same rows). The raw tables, not the trained numbers, are what the view goldens
keep: a run on another CPU (bf16 or not) trains other numbers, a view of the same rows must not.

The worker golden holds the execution path itself: tests/data/tiny-steps.toml (one thread, deterministic fp32;
its jobs carry every typed evaluation step: FoldEval, CrossSuites, Attributions, Probes, IIDTest, Validation) is
run in this process by the current worker, and the rows its jobs write (``WORKER_TABLES``, without the columns
that are not results, ``NOT_RESULTS``) must be the recorded ones: bit for bit on a machine of the recorded
fingerprint (``machine_fingerprint``), the floats within ``FLOAT_REL`` / ``FLOAT_ABS`` on another. Record it again
(``worker``) only on purpose: after a change meant to change what a job computes or stores (say why in the commit),
or to make another machine the exact one.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import shutil
import sys
import tempfile
from collections.abc import Iterable, Iterator
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


def record_ids(only: list[str] | None = None) -> Path:
    """job_ids.json.gz: every config's ids; ``only``: these configs' (by name), the others' kept as recorded."""
    from helpers import shipped_configs, tiny_configs

    configs = [*shipped_configs(), *tiny_configs()]
    path = GOLDEN / "job_ids.json.gz"
    out = json.loads(gzip.decompress(path.read_bytes())) if only else {}
    out.update({str(c.relative_to(REPO)): job_ids(c) for c in configs if not only or c.stem in only})
    GOLDEN.mkdir(parents=True, exist_ok=True)
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

    return {view: rows_of(con, view, digits=digits) for view in VIEWS}


def rows_of(con: duckdb.DuckDBPyConnection, relation: str, leave_out: Iterable[str] = (),
            digits: int | None = None) -> dict[str, Any]:
    """A table's or view's columns (but ``leave_out``) and its rows, normalized and sorted by their JSON text: the
    one definition of "a table's rows" every golden compares (views, the worker golden's raw tables)."""
    dropped = set(leave_out)
    cols = [d[0] for d in con.execute(f"SELECT * FROM {relation} LIMIT 0").description if d[0] not in dropped]
    quoted = ", ".join('"' + c.replace('"', '""') + '"' for c in cols)
    cur = con.execute(f"SELECT {quoted} FROM {relation}")
    rows = sorted((normalize(r, digits) for r in cur.fetchall()), key=lambda r: json.dumps(r, default=str))
    return {"columns": cols, "rows": rows}


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


# ------------------------------------------------------------------------------------------ the worker golden
# Today's worker run end to end (tests/e2e/test_worker_golden.py): tiny-steps, whose jobs carry every typed
# evaluation step, trained and evaluated by the current code, its raw rows held against the ones recorded.
WORKER_CONFIG = REPO / "tests" / "data" / "tiny-steps.toml"
WORKER_ROWS = GOLDEN / WORKER_CONFIG.stem / "worker_rows.json.gz"
# The tables a run's jobs fill, each typed step's among them (FoldEval: outcomes, grid_outcomes, case_predictions;
# CrossSuites: cross_evaluations, cross_outcomes, case_predictions; Attributions and Probes: attributions,
# attribution_inputs, probe_outcomes, probe_predictions; IIDTest: iid_predictions, iid_metrics, iid_probs;
# Validation: grid_metrics), the selection the grid points led to, and the plan's facts they refer to. Left out:
# `cases` (every case of both suites, as their shipped files state them; case_specs holds the ones the run
# evaluates), `runs` and `beluga_meta` (the run itself), and what `beluga analyze` computes from these rows at the
# end of the run (significance tests, intervals).
WORKER_TABLES = ("models", "grid_points", "grid_selections", "outcomes", "grid_outcomes", "grid_metrics",
                 "iid_predictions", "iid_metrics", "iid_probs", "case_predictions", "cross_evaluations",
                 "cross_outcomes", "attribution_inputs", "attributions", "probe_outcomes", "probe_predictions",
                 "suites", "task_heads", "splits", "case_splits", "case_specs", "cross_maps", "fewshot_pools")
# What is not a result: when, where and how long a job ran, its run and pack, the versions that ran it.
NOT_RESULTS = frozenset({"run_id", "started_at", "finished_at", "selected_at", "train_seconds", "eval_seconds",
                         "worker", "pack", "host", "pid", "beluga_version", "duckdb_version"})
# The CPU features that choose torch's kernels (and so the last bits of a float), as /proc/cpuinfo names them.
ISA_FLAGS = frozenset({"sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512dq",
                       "avx512_vnni", "avx512_bf16", "avx512_fp16", "avx_vnni", "amx_tile", "amx_bf16", "amx_int8"})
# On a machine whose fingerprint differs, floats are compared within this (math.isclose) and all else exactly. Other
# kernels on the recording machine (ATEN_CPU_CAPABILITY=avx2, =default, and with MKL held to SSE4.2 and oneDNN to
# AVX2) moved no discrete value and no float by more than 1.8e-7 (probabilities near 0.5, attribution scores near
# 1e-5): the tolerance leaves five times that (docs/project/development.md, "Statistical margins in the tests").
FLOAT_REL = 1e-4
FLOAT_ABS = 1e-6


def machine_fingerprint() -> dict[str, str]:
    """What a float of the worker golden depends on besides the code: the torch, transformers and numpy versions,
    the kernels torch dispatches to (its CPU capability, which ``ATEN_CPU_CAPABILITY`` may lower), the CPU model
    and its ISA flags. The same fingerprint, one thread and deterministic fp32: the same bits."""
    import platform

    import numpy
    import torch
    import transformers

    from beluga_core.training.precision import cpu_model

    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
        flags = set(next((x.partition(":")[2] for x in lines if x.startswith(("flags", "Features"))), "").split())
    except OSError:
        flags = set()
    return {"torch": torch.__version__, "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "transformers": transformers.__version__, "numpy": numpy.__version__, "machine": platform.machine(),
            "cpu": cpu_model(), "isa": " ".join(sorted(flags & ISA_FLAGS))}


@contextlib.contextmanager
def toy_model_as_embedded() -> Iterator[None]:
    """The toy model (tests/toy_model.py) under the embedded model's name: a job id, and so a training seed, hashes
    the model's name, which for a local folder is its absolute path; under this name the worker golden's ids (and
    numbers) are the same in every checkout, and they are the ids job_ids.json.gz records for its config."""
    from toy_model import TOY_DIR, toy_model

    from beluga_core.data import pretrained
    from beluga_core.training import models

    toy_model()
    real = pretrained.resolve_model_path

    def resolve(name: str) -> str:
        return str(TOY_DIR) if name == "embedded:minilm" else real(name)

    pretrained.resolve_model_path = models.resolve_model_path = resolve
    try:
        yield
    finally:
        pretrained.resolve_model_path = models.resolve_model_path = real


def worker_run(folder: Path) -> dict[str, Any]:
    """Run the worker golden's config in this process, into a store in ``folder``, and return its rows as the
    golden keeps them: {"fingerprint": this machine's, "tables": {table: rows_of(...)}}."""
    from helpers import run_benchmark
    from toy_model import TOY_NAME

    text = WORKER_CONFIG.read_text(encoding="utf-8")
    assert f'name = "{TOY_NAME}"' in text
    config = folder / WORKER_CONFIG.name
    config.write_text(text.replace(f'name = "{TOY_NAME}"', 'name = "embedded:minilm"'), encoding="utf-8")
    store = folder / "worker.duckdb"
    with toy_model_as_embedded():
        run_benchmark(config, store)
    con = duckdb.connect(str(store), read_only=True)
    try:
        tables = {t: rows_of(con, t, leave_out=NOT_RESULTS) for t in WORKER_TABLES}
    finally:
        con.close()
    return {"fingerprint": machine_fingerprint(), "tables": json.loads(json.dumps(tables, default=str))}


def read_worker_rows() -> dict[str, Any]:
    rows: dict[str, Any] = json.loads(gzip.decompress(WORKER_ROWS.read_bytes()))
    return rows


def worker_differences(recorded: dict[str, Any], now: dict[str, Any], exact: bool) -> list[str]:
    """What differs between two worker_run results, one line per table that differs (empty: none). ``exact``:
    every value bit for bit; else every value but the floats exactly, and the floats within FLOAT_REL / FLOAT_ABS
    (another machine's kernels round otherwise)."""
    import math

    def masked(x: Any) -> Any:   # the row without its floats
        if isinstance(x, float):
            return "<float>"
        return [masked(y) for y in x] if isinstance(x, list) else x

    def floats(x: Any) -> list[float]:
        if isinstance(x, float):
            return [x]
        return [f for y in x for f in floats(y)] if isinstance(x, list) else []

    out = []
    for table in sorted(set(recorded["tables"]) | set(now["tables"])):
        was, got = recorded["tables"].get(table), now["tables"].get(table)
        if was is None or got is None:
            out.append(f"{table}: {'not recorded' if was is None else 'not written'}")
            continue
        if was["columns"] != got["columns"]:
            out.append(f"{table}: columns {was['columns']} recorded, {got['columns']} now")
            continue
        key = (lambda r: json.dumps(r)) if exact else (lambda r: json.dumps(masked(r)))
        old, new = sorted(was["rows"], key=key), sorted(got["rows"], key=key)
        missing = _multiset([key(r) for r in old], [key(r) for r in new])
        extra = _multiset([key(r) for r in new], [key(r) for r in old])
        if missing or extra:
            out.append(f"{table}: {len(missing)} of {len(old)} recorded rows not written, {len(extra)} of {len(new)} "
                       f"written rows not recorded (first not written: {missing[:1]}, first not recorded: "
                       f"{extra[:1]})")
            continue
        if not exact:
            worst = max((abs(a - b) for r, s in zip(old, new, strict=True)
                         for a, b in zip(floats(r), floats(s), strict=True)
                         if not (math.isclose(a, b, rel_tol=FLOAT_REL, abs_tol=FLOAT_ABS)
                                 or (math.isnan(a) and math.isnan(b)))), default=None)
            if worst is not None:
                out.append(f"{table}: floats differ by up to {worst:g}, beyond rel {FLOAT_REL:g} / abs {FLOAT_ABS:g}")
    return out


def _multiset(a: list[str], b: list[str]) -> list[str]:
    """The items of ``a`` not in ``b``, counting repeats."""
    from collections import Counter

    return list((Counter(a) - Counter(b)).elements())


def record_worker() -> Path:
    """tests/data/golden/tiny-steps/worker_rows.json.gz: the worker golden's rows as this code and machine write
    them, with the machine's fingerprint. Record it on purpose: after a change meant to change what a job
    computes or stores (say why in the commit), or to move its exact comparison to another machine."""
    with tempfile.TemporaryDirectory() as tmp:
        rows = worker_run(Path(tmp))
    WORKER_ROWS.parent.mkdir(parents=True, exist_ok=True)
    WORKER_ROWS.write_bytes(gzip.compress(json.dumps(rows, indent=0, sort_keys=True).encode("utf-8"), mtime=0))
    counts = ", ".join(f"{t} {len(v['rows'])}" for t, v in rows["tables"].items())
    print(f"{WORKER_ROWS.relative_to(REPO)}: {counts}; fingerprint {rows['fingerprint']}")
    return WORKER_ROWS


# The real run the migration test's store starts from: a held-out level other than test_type, significance tests
# and replicate intervals.
OLD_STORE_BASE = "tiny-executors"


def record_store() -> Path:
    """tests/data/stores/schema<N>.duckdb.gz and its views: a store as this code writes it, for the test that the
    next migration opens, migrates and reads it the same. Its rows: the golden rows of a tiny config's real run,
    and, written through the writer, what that config does not run (grid points, cross-suite evaluations, an
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
    parser.add_argument("what", choices=("ids", "stores", "views", "store", "worker"))
    parser.add_argument("--only", nargs="+", metavar="CONFIG",
                        help="ids, stores: record these configs only (by name: a new config's, the others unchanged)")
    args = parser.parse_args()
    if args.what == "ids":
        record_ids(args.only)
    elif args.what == "stores":
        record_stores(args.only)
    elif args.what == "views":
        record_views()
    elif args.what == "worker":
        record_worker()
    else:
        record_store()


if __name__ == "__main__":
    main()
