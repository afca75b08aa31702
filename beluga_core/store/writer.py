"""The one writer of a result store: runs, suites and their splits, and finished jobs, one transaction each.

Exactly one process writes a store: the one that runs the plan (the coordinator). A write that fails rolls
back entirely: a store never holds part of a model. Bulk rows (outcomes, i.i.d. predictions) go in as
numpy column arrays that DuckDB scans directly.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb
import numpy as np

from beluga_core import __version__ as BELUGA_VERSION
from beluga_core.core.constants import EXTERNAL_CONFIG, EXTERNAL_METHOD, RUN_STATUSES, STANDARD
from beluga_core.core.errors import BelugaError
from beluga_core.execution.results import GridPointRecord, JobResult, ModelRecord, Outcomes, TrainingRecord
from beluga_core.store.connection import (
    DEFAULT_LOCK_TIMEOUT_S,
    STORAGE_COMPATIBILITY,
    Store,
    WaitFn,
    as_utc,
    sql_file,
    store_schema_version,
    transaction,
    utc_now,
    view_files,
)
from beluga_core.store.migrations import SCHEMA_VERSION, migrate
from beluga_core.store.rows import CaseRow, SplitRows, SuiteRow, canonical_json, external_model_id

MODEL_COLUMNS = ModelRecord.columns()
GRID_COLUMNS = GridPointRecord.columns()


def _record_values(record: TrainingRecord, columns: Sequence[str], run_id: str | None) -> list[Any]:
    values: list[Any] = []
    for name in columns:
        value = getattr(record, name)
        if name in ("hparams", "point"):
            value = canonical_json(value)
        elif isinstance(value, datetime) or name in ("started_at", "finished_at"):
            value = as_utc(value) or (utc_now() if name == "finished_at" else None)
        values.append(value)
    return [run_id, *values]


class StoreWriter:
    """Writes a result store; every public method is one transaction (a file store is opened and closed).

    Creating the writer creates the store when the file does not exist (applying every migration), migrates
    an older one, and refuses one written by a newer schema (``BelugaError``). ``StoreWriter.in_memory()``
    writes an in-memory database, read through ``connection()`` (``beluga suite check``).
    """

    def __init__(self, path: str | Path | None, *, lock_timeout: float = DEFAULT_LOCK_TIMEOUT_S,
                 on_wait: WaitFn | None = None) -> None:
        self.store = Store(path, lock_timeout=lock_timeout, on_wait=on_wait)
        self._prepare()

    @classmethod
    def in_memory(cls) -> StoreWriter:
        return cls(None)

    @property
    def path(self) -> Path:
        if self.store.path is None:
            raise ValueError("an in-memory store has no path")
        return self.store.path

    def connection(self) -> Any:
        """A connection for reading (``with writer.connection() as con``)."""
        return self.store.connection()

    # ---- opening

    def _prepare(self) -> None:
        if self.store.path is not None and not self.store.path.exists():
            self._create_new(self.store.path)
        with self.store.connection() as con:
            version = store_schema_version(con, self.store.where, SCHEMA_VERSION)
            if version is None:
                _initialise(con)
                return
            migrate(con, version)
            with transaction(con):
                _refresh(con)

    @staticmethod
    def _create_new(path: Path) -> None:
        # Build the store under a temporary name and move it into place, so a failure (or a crash) never
        # leaves a half-initialised store at the real path.
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
        try:
            con = duckdb.connect(str(tmp), config={"storage_compatibility_version": STORAGE_COMPATIBILITY})
            try:
                _initialise(con)
            finally:
                con.close()
            try:
                # link() fails if the path appeared meanwhile, where replace() would clobber a store.
                os.link(tmp, path)
            except FileExistsError:
                pass
            except OSError:
                os.replace(tmp, path)
        finally:
            for leftover in (tmp, tmp.with_name(tmp.name + ".wal")):
                leftover.unlink(missing_ok=True)

    # ---- runs

    def begin_run(self, config_path: str | Path | None = None, config_text: str | None = None, *,
                  device: str | None = None, host: str | None = None, run_id: str | None = None,
                  started_at: datetime | None = None) -> str:
        """Record a run as 'running'; returns its id (sortable by start time)."""
        started = as_utc(started_at) or utc_now()
        run_id = run_id or f"{started:%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:8]}"
        with self.store.transaction() as con:
            con.execute("INSERT INTO runs VALUES (?, ?, ?, ?, NULL, 'running', ?, ?, ?, ?)",
                        [run_id, None if config_path is None else str(config_path), config_text, started,
                         BELUGA_VERSION, duckdb.__version__, host or socket.gethostname(), device])
        return run_id

    def finish_run(self, run_id: str, status: str = "done", *, finished_at: datetime | None = None) -> None:
        if status not in RUN_STATUSES:
            raise ValueError(f"run status must be one of {RUN_STATUSES}, got {status!r}")
        with self.store.transaction() as con:
            found = con.execute("UPDATE runs SET status = ?, finished_at = ? WHERE run_id = ? RETURNING run_id",
                                [status, as_utc(finished_at) or utc_now(), run_id]).fetchall()
            if not found:
                raise ValueError(f"no run {run_id!r} in the store")

    # ---- suites, cases, splits

    def ensure_suite(self, suite: SuiteRow, cases: Sequence[CaseRow]) -> int:
        """Record a suite and insert the cases the store lacks; returns how many were inserted.

        A case already stored with other groups, test type or gold label means the suite changed under the
        same name: ``BelugaError`` (its old results would be scored with the new groups). Gold labels
        missing from a store written before they were recorded are filled in.
        """
        with self.store.transaction() as con:
            return self._ensure_suite(con, suite, cases)

    def _ensure_suite(self, con: duckdb.DuckDBPyConnection, suite: SuiteRow, cases: Sequence[CaseRow]) -> int:
        row = [suite.suite, canonical_json(list(suite.label_space) if suite.label_space is not None else None),
               canonical_json(list(suite.levels)), suite.scoring_level, suite.input_kind]
        old = con.execute("SELECT label_space::VARCHAR, levels::VARCHAR, scoring_level, input_kind FROM suites "
                          "WHERE suite = ?", [suite.suite]).fetchall()
        if old and tuple(old[0]) != tuple(row[1:]):
            raise BelugaError(f"suite '{suite.suite}' differs from the one this store already holds under that "
                              f"name (label space, levels, scoring level or input kind: {list(old[0])} against "
                              f"{row[1:]}); use a new store, or give the changed suite a new name",
                              source=self.store.where)
        if not old:
            con.execute("INSERT INTO suites VALUES (?, ?::JSON, ?::JSON, ?, ?)", row)
        ids = [c.case_id for c in cases]
        if len(set(ids)) != len(ids):
            raise ValueError(f"cases of suite {suite.suite!r}: duplicate case ids")
        level = suite.scoring_level
        data = {"case_id": _text(ids), "test_type": _text([c.test_type for c in cases]),
                "scoring_group": _text([c.group(level) for c in cases]),
                "groups": _text([canonical_json(dict(c.groups)) for c in cases]),
                "gold": _text([c.gold for c in cases])}
        con.register("_beluga_new_cases", data)
        try:
            n_conflicts, examples = con.execute(
                """SELECT count(*), list(n.case_id ORDER BY n.case_id)[1:5]
                   FROM _beluga_new_cases n JOIN cases c ON c.suite = ? AND c.case_id = n.case_id
                   WHERE c.test_type <> n.test_type OR c.scoring_group <> n.scoring_group
                      OR json(c.groups)::VARCHAR <> json(n.groups)::VARCHAR
                      OR c.gold IS DISTINCT FROM n.gold AND c.gold IS NOT NULL""",
                [suite.suite]).fetchall()[0]
            if n_conflicts:
                raise BelugaError(
                    f"suite '{suite.suite}' differs from the one this store already holds under that name "
                    f"({n_conflicts} case(s) with other groups, test type or gold label, e.g. {examples}); use "
                    "a new store, or give the changed suite a new name", source=self.store.where)
            con.execute("""UPDATE cases SET gold = n.gold FROM _beluga_new_cases n
                           WHERE cases.suite = ? AND cases.case_id = n.case_id AND cases.gold IS NULL
                             AND n.gold IS NOT NULL""", [suite.suite])
            (inserted,) = con.execute(
                """INSERT INTO cases (suite, case_id, test_type, scoring_group, groups, gold)
                   SELECT ?, n.case_id, n.test_type, n.scoring_group, n.groups::JSON, n.gold
                   FROM _beluga_new_cases n
                   WHERE NOT EXISTS (SELECT 1 FROM cases c WHERE c.suite = ? AND c.case_id = n.case_id)""",
                [suite.suite, suite.suite]).fetchall()[0]
        finally:
            con.unregister("_beluga_new_cases")
        return int(inserted)

    def record_split(self, split: SplitRows) -> None:
        """Record a suite's split (once per split id: the same id always means the same assignment)."""
        with self.store.transaction() as con:
            if con.execute("SELECT 1 FROM splits WHERE split_id = ?", [split.split_id]).fetchall():
                return
            con.execute("INSERT INTO splits VALUES (?, ?, ?, ?::JSON, ?::JSON)",
                        [split.split_id, split.suite, split.seed, canonical_json(list(split.ratios)),
                         canonical_json(dict(split.caps))])
            data = {"split_id": _text([split.split_id] * len(split.parts)),
                    "case_id": _text([p[0] for p in split.parts]), "part": _text([p[1] for p in split.parts]),
                    "kept": np.array([p[2] for p in split.parts], dtype=bool)}
            con.register("_beluga_parts", data)
            try:
                con.execute("INSERT INTO case_splits SELECT split_id, case_id, part, kept FROM _beluga_parts")
            finally:
                con.unregister("_beluga_parts")

    def set_task_head(self, task: str, suite: str, labels: Sequence[str] | None) -> None:
        """The class names of ``task``'s head when judged by ``suite`` (None: answers, not classes)."""
        with self.store.transaction() as con:
            con.execute("INSERT OR REPLACE INTO task_heads VALUES (?, ?, ?::JSON)",
                        [task, suite, canonical_json(list(labels) if labels is not None else None)])

    def set_g_exclusions(self, task: str, groups: Iterable[str]) -> None:
        """Replace the scoring groups of ``task`` left out of s_T and G."""
        chosen = sorted(set(groups))
        with self.store.transaction() as con:
            con.execute("DELETE FROM g_exclusions WHERE task = ?", [task])
            if chosen:
                con.executemany("INSERT INTO g_exclusions VALUES (?, ?)", [[task, g] for g in chosen])

    # ---- finished jobs

    def done_ids(self) -> set[str]:
        """Ids of the models and grid points already done (a failed one is retried on resume)."""
        with self.store.connection(read_only=True) as con:
            return {r[0] for r in con.execute("SELECT model_id FROM models WHERE status = 'done' UNION ALL "
                                              "SELECT grid_id FROM grid_points WHERE status = 'done'").fetchall()}

    def commit(self, result: JobResult, run_id: str | None = None) -> None:
        """Write a finished job with all its rows in one transaction (replacing an earlier row of its id)."""
        with self.store.transaction() as con:
            if isinstance(result.record, GridPointRecord):
                self._write_grid_point(con, result, run_id)
            else:
                self._write_model(con, result, run_id)

    def _write_model(self, con: duckdb.DuckDBPyConnection, result: JobResult, run_id: str | None) -> None:
        record = result.record
        assert isinstance(record, ModelRecord)
        mid = record.model_id
        for table in ("outcomes", "iid_predictions", "iid_metrics", "models"):
            con.execute(f"DELETE FROM {table} WHERE model_id = ?", [mid])
        con.execute(f"INSERT INTO models (run_id, {', '.join(MODEL_COLUMNS)}) "
                    f"VALUES ({', '.join('?' * (len(MODEL_COLUMNS) + 1))})",
                    _record_values(record, MODEL_COLUMNS, run_id))
        for iid in result.iid:
            con.executemany("INSERT INTO iid_metrics VALUES (?, ?, ?, ?, ?)",
                            [[mid, iid.split, name, None if value != value else float(value), name == iid.primary]
                             for name, value in iid.metrics.items()])
            con.register("_beluga_preds", iid.columns())
            try:
                con.execute("""INSERT INTO iid_predictions SELECT ?, split, example_idx, gold, pred, correct
                               FROM _beluga_preds""", [mid])
            finally:
                con.unregister("_beluga_preds")
        self._insert_outcomes(con, "outcomes", "model_id", mid, record.suite, result.outcomes)
        if record.heldout_level is not None:
            _check_heldout(con, record)

    def _write_grid_point(self, con: duckdb.DuckDBPyConnection, result: JobResult, run_id: str | None) -> None:
        record = result.record
        assert isinstance(record, GridPointRecord)
        gid = record.grid_id
        for table in ("grid_outcomes", "grid_metrics", "grid_points"):
            con.execute(f"DELETE FROM {table} WHERE grid_id = ?", [gid])
        con.execute(f"INSERT INTO grid_points (run_id, {', '.join(GRID_COLUMNS)}) "
                    f"VALUES ({', '.join('?' * (len(GRID_COLUMNS) + 1))})",
                    _record_values(record, GRID_COLUMNS, run_id))
        if result.validation:
            con.executemany("INSERT INTO grid_metrics VALUES (?, ?, ?, ?, ?, ?)",
                            [[gid, v.source, v.test_type, v.metric,
                              None if v.value is None or v.value != v.value else float(v.value), v.is_primary]
                             for v in result.validation])
        self._insert_outcomes(con, "grid_outcomes", "grid_id", gid, record.suite, result.outcomes)

    def _insert_outcomes(self, con: duckdb.DuckDBPyConnection, table: str, key: str, ident: str,
                         suite: str | None, outcomes: Outcomes) -> None:
        if not len(outcomes):
            return
        if suite is None:
            raise ValueError(f"{ident}: outcomes need the model's suite")
        con.register("_beluga_outcomes", outcomes.columns())
        try:
            con.execute(f"INSERT INTO {table} SELECT ?, ?, case_id, outcome, pred FROM _beluga_outcomes",
                        [ident, suite])
            # An outcome without its case would silently drop out of every view.
            n_unknown, examples = con.execute(
                """SELECT count(*), list(o.case_id ORDER BY o.case_id)[1:5] FROM _beluga_outcomes o
                    WHERE NOT EXISTS (SELECT 1 FROM cases c WHERE c.suite = ? AND c.case_id = o.case_id)""",
                [suite]).fetchall()[0]
        finally:
            con.unregister("_beluga_outcomes")
        if n_unknown:
            raise ValueError(f"{ident}: {n_unknown} outcome(s) for cases not in suite '{suite}' of the store "
                             f"(call ensure_suite first), e.g. {examples}")

    def record_selections(self, rows: Iterable[Mapping[str, Any]], run_id: str | None = None) -> None:
        """Record which grid point a run chose per selection (replacing that run's earlier record)."""
        cols = ("task", "config", "method", "scope_level", "scope_group", "criterion", "grid_id", "value",
                "n_points")
        now = utc_now()
        values = [[run_id, *(r.get(c) for c in cols), now] for r in rows]
        with self.store.transaction() as con:
            if run_id is not None:
                con.execute("DELETE FROM grid_selections WHERE run_id = ?", [run_id])
            if values:
                con.executemany("INSERT INTO grid_selections VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", values)

    # ---- external models

    def record_external_evaluation(self, *, model_name: str, task: str, suite: SuiteRow, cases: Sequence[CaseRow],
                                   outcomes: Outcomes, split_seed: int | None = None, run_id: str | None = None,
                                   device: str | None = None, eval_seconds: float | None = None,
                                   model_id: str | None = None) -> str:
        """Store an evaluation of a model beluga did not train (``beluga suite check --store``).

        Writes the suite's missing cases and a ``models`` row (config 'external', method 'none', scenario
        'standard', ``model_name`` naming the model) with its outcomes, in one transaction. Returns the model
        id: by default derived from (model_name, task, suite, split_seed), so checking the same model again
        replaces the earlier evaluation.
        """
        model_id = model_id or external_model_id(model_name, task, suite.suite, split_seed)
        record = ModelRecord(model_id=model_id, task=task, suite=suite.suite, model_name=model_name,
                             config=EXTERNAL_CONFIG, method=EXTERNAL_METHOD, scenario=STANDARD,
                             split_seed=split_seed, device=device, eval_seconds=eval_seconds)
        with self.store.transaction() as con:
            self._ensure_suite(con, suite, cases)
            self._write_model(con, JobResult(record, outcomes), run_id)
        return model_id


def _text(values: Sequence[Any]) -> np.ndarray:
    # Labels may arrive as ints (label ids) or numpy scalars; the store keeps them as text.
    arr = np.empty(len(values), dtype=object)
    arr[:] = [None if v is None else str(v) for v in values]
    return arr


def _check_heldout(con: duckdb.DuckDBPyConnection, record: ModelRecord) -> None:
    """A held-out fold's outcomes must all lie in its held-out group."""
    assert record.heldout_level is not None
    pointer = "/" + record.heldout_level.replace("~", "~0").replace("/", "~1")
    n_outside, examples = con.execute(
        """SELECT count(*), list(o.case_id ORDER BY o.case_id)[1:5]
           FROM outcomes o JOIN cases c ON c.suite = o.suite AND c.case_id = o.case_id
           WHERE o.model_id = ?
             AND (CASE WHEN ? = 'test_type' THEN c.test_type ELSE json_extract_string(c.groups, ?) END)
                 IS DISTINCT FROM ?""",
        [record.model_id, record.heldout_level, pointer, record.heldout_group]).fetchall()[0]
    if n_outside:
        raise ValueError(f"model {record.model_id} holds out {record.heldout_level}={record.heldout_group!r}, but "
                         f"{n_outside} of its outcomes are for cases outside that group, e.g. {examples}")


def _refresh(con: duckdb.DuckDBPyConnection) -> None:
    for name in view_files():
        con.execute(sql_file(name))
    con.executemany("INSERT OR REPLACE INTO beluga_meta VALUES (?, ?)",
                    [["last_beluga_version", BELUGA_VERSION], ["last_duckdb_version", duckdb.__version__]])


def _initialise(con: duckdb.DuckDBPyConnection) -> None:
    """A new store: every migration, the views and the creation facts."""
    migrate(con, 0)
    with transaction(con):
        con.executemany("INSERT OR REPLACE INTO beluga_meta VALUES (?, ?)",
                        [["beluga_version", BELUGA_VERSION], ["duckdb_version", duckdb.__version__],
                         ["created_at", utc_now().isoformat(timespec="seconds") + "Z"]])
        _refresh(con)


__all__ = ["GRID_COLUMNS", "MODEL_COLUMNS", "StoreWriter"]
