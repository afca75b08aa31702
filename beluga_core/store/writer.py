"""The one writer of a result store: runs, suites and their splits, and finished jobs, one transaction each.

Exactly one process writes a store: the one that runs the plan (the coordinator). A write that fails rolls
back entirely: a store never holds part of a model. Bulk rows (outcomes, i.i.d. predictions) go in as
numpy column arrays that DuckDB scans directly.

Long: every table a run writes (runs, packs, models and their rows, grid points) is written here, one transaction
per method; split, the one-writer, all-or-none discipline would be spread over modules that each open the store.
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
import pyarrow as pa

from beluga_core import __version__ as BELUGA_VERSION
from beluga_core.core.constants import EXTERNAL_CONFIG, EXTERNAL_METHOD, RUN_STATUSES, STANDARD
from beluga_core.execution.results import (
    CasePredictions,
    GridPointRecord,
    JobResult,
    ModelRecord,
    Outcomes,
    TrainingRecord,
)
from beluga_core.store.attribution_rows import write_attributions
from beluga_core.store.connection import (
    DEFAULT_LOCK_TIMEOUT_S,
    STORAGE_COMPATIBILITY,
    Store,
    WaitFn,
    as_utc,
    store_schema_version,
    transaction,
    utc_now,
)
from beluga_core.store.migrations import SCHEMA_VERSION, migrate, refresh_views, upgrade
from beluga_core.store.plan_records import PlanRecords
from beluga_core.store.rows import CaseRow, SuiteRow, canonical_json, external_model_id, level_pointer

MODEL_COLUMNS = ModelRecord.columns()
GRID_COLUMNS = GridPointRecord.columns()


def _record_values(record: TrainingRecord, columns: Sequence[str], run_id: str | None) -> list[Any]:
    values: list[Any] = []
    for name in columns:
        value = getattr(record, name)
        if name in ("hparams", "point", "settings", "pack"):
            value = canonical_json(value)
        elif isinstance(value, datetime) or name in ("started_at", "finished_at"):
            value = as_utc(value) or (utc_now() if name == "finished_at" else None)
        values.append(value)
    return [run_id, *values]


def new_run_id(started: datetime) -> str:
    """A run's id: ``YYYYmmddTHHMMSSZ-xxxxxxxx``, its start (UTC) and a random suffix, so ids sort by start."""
    return f"{as_utc(started):%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:8]}"


class StoreWriter(PlanRecords):
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

    @classmethod
    def holding(cls, path: Path, con: duckdb.DuckDBPyConnection) -> StoreWriter:
        """A writer on the read-write connection a command holds (``store.opened``), whose open migrated the store."""
        writer = cls.__new__(cls)
        writer.store = Store.holding(path, con)
        return writer

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
                initialise(con)
                return
            upgrade(con, version)

    @classmethod
    def create(cls, path: Path) -> None:
        """A new store at ``path`` (every migration applied), not opened (``store.opened.open_handle`` opens it)."""
        cls._create_new(path)

    @staticmethod
    def _create_new(path: Path) -> None:
        # Build the store under a temporary name and move it into place, so a failure (or a crash) never
        # leaves a half-initialised store at the real path.
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
        try:
            con = duckdb.connect(str(tmp), config={"storage_compatibility_version": STORAGE_COMPATIBILITY})
            try:
                initialise(con)
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
                  started_at: datetime | None = None, executor: Mapping[str, Any] | None = None,
                  pid: int | None = None, effective_config: Mapping[str, Any] | None = None,
                  config_changes: Sequence[str] = ()) -> str:
        """Record a run as 'running'; returns its id (sortable by start time). ``executor``: its workers (the
        setting, each worker's device and threads, and why); ``pid``: its coordinator's process (this one unless
        said); ``effective_config``: the config it actually runs (JSON-ready), ``config_changes``: what changed the
        file's settings (migration 19)."""
        started = as_utc(started_at) or utc_now()
        run_id = run_id or new_run_id(started)
        with self.store.transaction() as con:
            con.execute("INSERT INTO runs (run_id, config_path, config_text, started_at, finished_at, status, "
                        "beluga_version, duckdb_version, host, device, executor, pid, effective_config, "
                        "config_changes) VALUES (?, ?, ?, ?, NULL, 'running', ?, ?, ?, ?, ?, ?, ?, ?)",
                        [run_id, None if config_path is None else str(config_path), config_text, started,
                         BELUGA_VERSION, duckdb.__version__, host or socket.gethostname(), device,
                         canonical_json(executor), os.getpid() if pid is None else pid,
                         canonical_json(effective_config), canonical_json(list(config_changes))])
        return run_id

    def finish_run(self, run_id: str, status: str = "done", *, finished_at: datetime | None = None) -> None:
        if status not in RUN_STATUSES:
            raise ValueError(f"run status must be one of {RUN_STATUSES}, got {status!r}")
        with self.store.transaction() as con:
            found = con.execute("UPDATE runs SET status = ?, finished_at = ? WHERE run_id = ? RETURNING run_id",
                                [status, as_utc(finished_at) or utc_now(), run_id]).fetchall()
            if not found:
                raise ValueError(f"no run {run_id!r} in the store")

    def record_interrupted(self, last_alive: Mapping[str, datetime]) -> list[str]:
        """Record runs found dead (``store.run_liveness``) as ``interrupted``, each with ``finished_at`` the last time
        it was alive (run id → UTC), in one transaction; a run no longer ``running`` (it recorded its own end
        meanwhile) is left as it is. Returns the ids it changed."""
        if not last_alive:
            return []
        with self.store.transaction() as con:
            return [r[0] for run_id, at in last_alive.items()
                    for r in con.execute("UPDATE runs SET status = 'interrupted', finished_at = ? "
                                         "WHERE run_id = ? AND status = 'running' RETURNING run_id",
                                         [as_utc(at), run_id]).fetchall()]

    # ---- finished jobs

    def attributed_ids(self, methods: Sequence[str]) -> set[str]:
        """Ids of the models with stored attributions of every one of ``methods``."""
        if not methods:
            return set()
        with self.store.connection(read_only=True) as con:
            rows = con.execute("SELECT model_id FROM attributions WHERE list_contains(?, method) GROUP BY model_id "
                               "HAVING count(DISTINCT method) = ?", [list(methods), len(set(methods))]).fetchall()
        return {r[0] for r in rows}

    def commit(self, result: JobResult, run_id: str | None = None) -> None:
        """Write a finished job with all its rows in one transaction (replacing an earlier row of its id)."""
        self.commit_many([result], run_id)

    def commit_many(self, results: Sequence[JobResult], run_id: str | None = None, *,
                    replacing: Sequence[str] = ()) -> None:
        """Write finished jobs in one transaction, all or none, after deleting the models ``replacing`` names
        (derived models whose members have changed since, e.g. an ensemble's)."""
        with self.store.transaction() as con:
            _delete_models(con, replacing)
            for result in results:
                if isinstance(result.record, GridPointRecord):
                    self._write_grid_point(con, result, run_id)
                else:
                    self._write_model(con, result, run_id)
                _write_pack(con, result, run_id)

    def _write_model(self, con: duckdb.DuckDBPyConnection, result: JobResult, run_id: str | None) -> None:
        record = result.record
        assert isinstance(record, ModelRecord)
        mid = record.model_id
        if record.status == "done":
            _claim_slot(con, record)
        if con.execute("SELECT 1 FROM models WHERE model_id = ?", [mid]).fetchall():
            # A model's rows in every table are written with its models row, in one transaction: a new id has
            # none to delete (deleting from eleven tables took a fifth of a commit).
            _delete_models(con, [mid])
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
            if iid.probs is not None:
                _insert_arrow(con, "iid_probs", mid, pa.table({
                    "split": [iid.split] * len(iid.gold), "example_idx": np.arange(len(iid.gold), dtype=np.int64),
                    "probs": _float_lists(np.asarray(iid.probs, dtype=np.float32))}))
        self._insert_outcomes(con, "outcomes", "model_id", mid, record.suite, result.outcomes, heldout=record)
        for cross in result.cross:
            con.execute("INSERT INTO cross_evaluations VALUES (?, ?, ?, ?)",
                        [mid, cross.suite, len(cross.outcomes), cross.digest])
            self._insert_outcomes(con, "cross_outcomes", "model_id", mid, cross.suite, cross.outcomes)
        for kept in result.predictions:
            _insert_arrow(con, "case_predictions", mid, _case_prediction_rows(kept))
        if result.attributions:
            write_attributions(con, mid, result.attributions)
        if result.probes is not None:
            self._insert_outcomes(con, "probe_outcomes", "model_id", mid, record.suite, result.probes.outcomes)
            if result.probes.predictions is not None:
                _insert_arrow(con, "probe_predictions", mid, _case_prediction_rows(result.probes.predictions))

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
                         suite: str | None, outcomes: Outcomes, *, heldout: ModelRecord | None = None) -> None:
        """Insert ``ident``'s outcomes after checking them against the store's cases: each case known, and for a
        held-out fold (``heldout`` with a held-out level) each in its held-out group. The checks read this job's rows,
        not the table: a scan of ``outcomes`` per commit grew with the store (issue 57's fold cost)."""
        if not len(outcomes):
            return
        if suite is None:
            raise ValueError(f"{ident}: outcomes need the model's suite")
        level = None if heldout is None else heldout.heldout_level
        con.register("_beluga_outcomes", outcomes.columns())
        try:
            # An outcome without its case would silently drop out of every view.
            n_unknown, unknown, n_outside, outside = con.execute(
                """SELECT count(*) FILTER (WHERE c.case_id IS NULL),
                          list(o.case_id ORDER BY o.case_id) FILTER (WHERE c.case_id IS NULL)[1:5],
                          count(*) FILTER (WHERE c.case_id IS NOT NULL AND ?::VARCHAR IS NOT NULL
                                           AND (CASE WHEN ? = 'test_type' THEN c.test_type
                                                     ELSE json_extract_string(c.groups, ?) END) IS DISTINCT FROM ?),
                          list(o.case_id ORDER BY o.case_id)
                              FILTER (WHERE c.case_id IS NOT NULL AND ?::VARCHAR IS NOT NULL
                                      AND (CASE WHEN ? = 'test_type' THEN c.test_type
                                                ELSE json_extract_string(c.groups, ?) END) IS DISTINCT FROM ?)[1:5]
                   FROM _beluga_outcomes o LEFT JOIN cases c ON c.suite = ? AND c.case_id = o.case_id""",
                [*([level, level, None if level is None else level_pointer(level),
                    None if heldout is None else heldout.heldout_group] * 2), suite]).fetchall()[0]
            if n_unknown:
                raise ValueError(f"{ident}: {n_unknown} outcome(s) for cases not in suite '{suite}' of the store "
                                 f"(call ensure_suite first), e.g. {unknown}")
            if n_outside:
                assert heldout is not None
                raise ValueError(f"model {ident} holds out {level}={heldout.heldout_group!r}, but {n_outside} of its "
                                 f"outcomes are for cases outside that group, e.g. {outside}")
            con.execute(f"INSERT INTO {table} SELECT ?, ?, case_id, outcome, pred FROM _beluga_outcomes",
                        [ident, suite])
        finally:
            con.unregister("_beluga_outcomes")

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


def _float_lists(matrix: np.ndarray) -> pa.ListArray:
    """Rows of a 2-d float32 array as a list column (DuckDB FLOAT[])."""
    rows, cols = matrix.shape
    offsets = pa.array(np.arange(0, rows * cols + 1, cols, dtype=np.int32))
    return pa.ListArray.from_arrays(offsets, pa.array(matrix.reshape(-1), type=pa.float32()))


def _case_prediction_rows(kept: CasePredictions) -> pa.Table:
    flat = kept.predictions
    lengths = np.diff(flat.offsets)
    n = int(flat.offsets[-1])
    columns: dict[str, Any] = {
        "suite": [kept.suite] * n,
        "case_id": np.repeat(np.asarray(kept.case_ids, dtype=object), lengths).tolist(),
        "input_idx": np.concatenate([np.arange(k, dtype=np.int32) for k in lengths]) if n else
        np.zeros(0, dtype=np.int32)}
    if flat.probs is not None:
        columns["probs"] = _float_lists(np.asarray(flat.probs, dtype=np.float32))
        columns["answer"] = pa.nulls(n, pa.string())
    else:
        columns["probs"] = pa.nulls(n, pa.list_(pa.float32()))
        # ``answers`` is an object array: ``answers or []`` asks for its truth value, which numpy refuses.
        answers = flat.answers if flat.answers is not None else ()
        columns["answer"] = pa.array([None if a is None else str(a) for a in answers], pa.string())
    return pa.table(columns)


def _insert_arrow(con: duckdb.DuckDBPyConnection, table: str, model_id: str, rows: pa.Table) -> None:
    """Insert ``rows`` (every column of ``table`` but ``model_id``, in order) for ``model_id``."""
    if rows.num_rows == 0:
        return
    con.register("_beluga_rows", rows)
    try:
        con.execute(f"INSERT INTO {table} SELECT ?, * FROM _beluga_rows", [model_id])
    finally:
        con.unregister("_beluga_rows")


# A model's slot: its replicate cell (the record's key columns as a row for replicate_key), scenario and groups.
_SLOT = """same_replicate(models, {'task': ?::VARCHAR, 'suite': ?::VARCHAR, 'model_name': ?::VARCHAR,
    'config': ?::VARCHAR, 'method': ?::VARCHAR, 'seed': ?::BIGINT, 'split_seed': ?::BIGINT, 'variant': ?::VARCHAR})
    AND scenario = ? AND heldout_group IS NOT DISTINCT FROM ? AND trained_group IS NOT DISTINCT FROM ?
    AND model_id <> ?"""


_MODEL_TABLES = ("outcomes", "iid_predictions", "iid_metrics", "iid_probs", "cross_outcomes", "cross_evaluations",
                 "case_predictions", "attributions", "probe_outcomes", "probe_predictions", "models")


def _write_pack(con: duckdb.DuckDBPyConnection, result: JobResult, run_id: str | None) -> None:
    """The ``packs`` row of a packed member's pack: inserted with its first member, then the pack's time and count
    of finished members as each later member commits (its members finish in turn; the last one brings the whole)."""
    pack, spent = result.record.pack, result.pack_time
    if pack is None or spent is None or "id" not in pack:
        return
    con.execute("""INSERT INTO packs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                   ON CONFLICT (pack_id) DO UPDATE SET
                       train_seconds = greatest(packs.train_seconds, excluded.train_seconds),
                       finished = greatest(packs.finished, excluded.finished),
                       finished_at = greatest(packs.finished_at, excluded.finished_at)""",
                [pack["id"], run_id, canonical_json(pack.get("setting")), pack.get("size"),
                 canonical_json(pack.get("members")), spent.seconds, spent.finished, as_utc(spent.started_at),
                 as_utc(result.record.finished_at) or utc_now()])


def _delete_models(con: duckdb.DuckDBPyConnection, ids: Sequence[str]) -> None:
    if not ids:
        return
    for table in _MODEL_TABLES:
        con.execute(f"DELETE FROM {table} WHERE model_id IN (SELECT unnest(?::VARCHAR[]))", [list(ids)])


def _claim_slot(con: duckdb.DuckDBPyConnection, record: ModelRecord) -> None:
    """A done model's slot (its view key and held-out group) holds no other done model: two would mix in every
    view (``beluga run`` refuses such a run before it trains; this is the store's own guarantee). Failed rows of
    the slot are superseded and go."""
    key = [record.task, record.suite, record.model_name, record.config, record.method, record.seed,
           record.split_seed, record.variant, record.scenario, record.heldout_group, record.trained_group,
           record.model_id]
    other = con.execute(f"SELECT model_id FROM models WHERE status = 'done' AND {_SLOT} LIMIT 1", key).fetchall()
    if other:
        raise ValueError(f"model {record.model_id} ({record.config}/{record.method} {record.scenario}"
                         f"{'=' + record.heldout_group if record.heldout_group else ''}, seed {record.seed}, variant "
                         f"{record.variant!r}) takes the slot of done model {other[0][0]}: two models of one slot "
                         "would mix in every view")
    stale = [r[0] for r in con.execute(f"SELECT model_id FROM models WHERE status = 'failed' AND {_SLOT}",
                                       key).fetchall()]
    if stale:
        _delete_models(con, stale)


def initialise(con: duckdb.DuckDBPyConnection) -> None:
    """A new store: every migration, the views and the creation facts, in one transaction."""
    with transaction(con):
        migrate(con, 0, in_open_transaction=True)
        con.executemany("INSERT OR REPLACE INTO beluga_meta VALUES (?, ?)",
                        [["beluga_version", BELUGA_VERSION], ["duckdb_version", duckdb.__version__],
                         ["created_at", utc_now().isoformat(timespec="seconds") + "Z"]])
        refresh_views(con)


__all__ = ["GRID_COLUMNS", "MODEL_COLUMNS", "StoreWriter", "initialise"]
