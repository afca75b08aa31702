"""The one writer of a result store (DuckDB).

Exactly one process writes a store: the one that runs the plan. It opens the file, writes one finished
model in one transaction, and closes it again, so that readers (``beluga report``, the duckdb CLI) can
open the file between two commits (DuckDB lets one read-write process hold a file, or many readers).
A write that fails rolls back entirely: a store never holds part of a model.

Bulk rows (outcomes, i.i.d. predictions) go in as numpy column arrays that DuckDB scans directly; a
21k-outcome model commits in well under a second (see tests/test_store.py).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields
from datetime import datetime, timezone
from importlib import resources
from pathlib import Path
from typing import Any

import duckdb
import numpy as np

from beluga_core import __version__ as BELUGA_VERSION
from beluga_core.errors import BelugaError

# Bump with a migration in _MIGRATIONS whenever a table changes (views need no bump: they are re-created
# on every open).
SCHEMA_VERSION = 2

STANDARD = "standard"
SEEN = "seen"
OUTCOMES = ("pass", "fail", "skip")
IID_SPLITS = ("val", "test")
MODEL_STATUSES = ("done", "failed")
RUN_STATUSES = ("running", "done", "failed", "interrupted")
EXTERNAL_CONFIG = "external"
EXTERNAL_METHOD = "none"

TABLES = ("beluga_meta", "runs", "cases", "models", "iid_predictions", "iid_metrics", "outcomes",
          "g_exclusions", "grid_points", "grid_outcomes", "grid_metrics", "grid_selections")
GRID_SOURCES = ("suite_val", "iid_val")

# DuckDB 2.0 writes new files in a storage format that no DuckDB before 2.0 can open; a store is meant for
# any DuckDB client (and pyproject allows duckdb>=1.0), so new stores use the 1.0 format. Measured: same
# size and speed on a 60-model, 1.3M-outcome store. DuckDB keeps a file's format when it writes to it later.
STORAGE_COMPATIBILITY = "v1.0.0"

# How long a writer waits for readers that hold the file open before giving up.
DEFAULT_LOCK_TIMEOUT_S = 120.0

# version -> function bringing a store at that version to version + 1, run inside one transaction.
# 1 -> 2 adds the grid-search tables; schema.sql creates only what is missing, so it is the migration.
_MIGRATIONS: dict[int, Callable[[duckdb.DuckDBPyConnection], None]] = {
    1: lambda con: con.execute(schema_sql()),
}


def schema_sql() -> str:
    return resources.files("beluga_core.store").joinpath("schema.sql").read_text(encoding="utf-8")


def views_sql() -> str:
    return resources.files("beluga_core.store").joinpath("views.sql").read_text(encoding="utf-8")


def utc_now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


def _utc(ts: datetime | None) -> datetime | None:
    # Columns are TIMESTAMP (no zone) holding UTC; aware datetimes are converted, naive ones taken as UTC.
    if ts is None or ts.tzinfo is None:
        return ts
    return ts.astimezone(timezone.utc).replace(tzinfo=None)


def _json(value: Mapping[str, Any] | None) -> str | None:
    # Canonical text, so equal dicts compare equal as stored strings (ensure_cases relies on it).
    if value is None:
        return None
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def _is_lock_error(exc: BaseException) -> bool:
    return isinstance(exc, duckdb.IOException) and "lock" in str(exc).lower()


def connect(path: Path, *, read_only: bool, timeout: float) -> duckdb.DuckDBPyConnection:
    """Open ``path``, waiting up to ``timeout`` seconds while another process holds a conflicting lock."""
    deadline = time.monotonic() + timeout
    delay = 0.02
    while True:
        try:
            return duckdb.connect(str(path), read_only=read_only)
        except duckdb.IOException as exc:
            if not _is_lock_error(exc):
                raise BelugaError(f"cannot open the result store: {exc}", source=path) from exc
            if time.monotonic() >= deadline:
                holder = "is being written by another process" if read_only else \
                    "is held open by another process (a `beluga report`, a duckdb CLI, another run?)"
                raise BelugaError(f"the result store {holder}; waited {timeout:.0f} s ({exc})",
                                  source=path) from exc
        except duckdb.Error as exc:
            raise BelugaError(f"cannot open the result store: {exc}", source=path) from exc
        time.sleep(delay)
        delay = min(delay * 2, 0.5)


def store_schema_version(con: duckdb.DuckDBPyConnection, path: Path) -> int | None:
    """The schema version a store records; None for a DuckDB file with no tables at all.

    Raises ``BelugaError`` for a file that is not a beluga store, or one of a newer schema.
    """
    tables = {r[0] for r in con.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main'").fetchall()}
    if "beluga_meta" not in tables:
        if tables:
            raise BelugaError(f"not a beluga result store (it has tables {sorted(tables)[:5]} but no "
                              "beluga_meta); pass a new file or an existing store", source=path)
        return None
    rows = con.execute("SELECT value FROM beluga_meta WHERE key = 'schema_version'").fetchall()
    if not rows:
        raise BelugaError("beluga_meta has no schema_version: not a beluga store, or a damaged one",
                          source=path)
    version = int(rows[0][0])
    if version > SCHEMA_VERSION:
        created = con.execute("SELECT value FROM beluga_meta WHERE key = 'beluga_version'").fetchall()
        by = f" by beluga {created[0][0]}" if created else ""
        raise BelugaError(f"this store was written{by} with store schema version {version}, newer than this "
                          f"beluga ({BELUGA_VERSION}) understands ({SCHEMA_VERSION}); upgrade beluga, or "
                          "use another store file", source=path)
    return version


# --------------------------------------------------------------------------------------------- rows


@dataclass(frozen=True, kw_only=True)
class ModelRow:
    """One row of ``models``: a trained (or evaluated) model. See schemas/store.md for each field."""

    model_id: str
    task: str
    config: str
    method: str
    scenario: str
    suite: str | None = None
    model_name: str | None = None
    heldout_level: str | None = None
    heldout_group: str | None = None
    seed: int | None = None
    split_seed: int | None = None
    hparams: Mapping[str, Any] | None = None
    parent_model_id: str | None = None
    status: str = "done"
    error: str | None = None
    run_id: str | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    train_seconds: float | None = None
    eval_seconds: float | None = None
    n_train_iid: int | None = None
    n_train_suite: int | None = None
    device: str | None = None

    def __post_init__(self) -> None:
        for name in ("model_id", "task", "config", "method", "scenario"):
            if not getattr(self, name):
                raise ValueError(f"model row: '{name}' is required")
        if self.status not in MODEL_STATUSES:
            raise ValueError(f"model {self.model_id}: status must be one of {MODEL_STATUSES}, "
                             f"got {self.status!r}")
        if self.scenario in (STANDARD, SEEN):
            if self.heldout_level is not None or self.heldout_group is not None:
                raise ValueError(f"model {self.model_id}: scenario '{self.scenario}' holds nothing out, "
                                 f"but heldout_level={self.heldout_level!r}, "
                                 f"heldout_group={self.heldout_group!r}")
        else:
            # The scenario of a fold is the name of the level it holds out.
            if self.heldout_level is None:
                object.__setattr__(self, "heldout_level", self.scenario)
            if self.heldout_level != self.scenario:
                raise ValueError(f"model {self.model_id}: a held-out scenario is named after its level, but "
                                 f"scenario={self.scenario!r} and heldout_level={self.heldout_level!r}")
            if self.heldout_group is None:
                raise ValueError(f"model {self.model_id}: held-out scenario '{self.scenario}' "
                                 "needs heldout_group")

    @classmethod
    def of(cls, row: ModelRow | Mapping[str, Any]) -> ModelRow:
        if isinstance(row, ModelRow):
            return row
        known = {f.name for f in fields(cls)}
        unknown = set(row) - known
        if unknown:
            raise ValueError(f"model row has unknown field(s) {sorted(unknown)}; known: {sorted(known)}")
        return cls(**row)

    def db_values(self) -> list[Any]:
        d = asdict(self)
        d["hparams"] = _json(self.hparams)
        d["started_at"] = _utc(self.started_at)
        d["finished_at"] = _utc(self.finished_at) or utc_now()
        return [d[c] for c in _MODEL_COLUMNS]


_MODEL_COLUMNS = ("model_id", "run_id", "task", "suite", "model_name", "config", "method", "scenario",
                  "heldout_level", "heldout_group", "seed", "split_seed", "hparams", "parent_model_id",
                  "status", "error", "started_at", "finished_at", "train_seconds", "eval_seconds",
                  "n_train_iid", "n_train_suite", "device")


@dataclass(frozen=True, kw_only=True)
class GridPointRow:
    """One row of ``grid_points``: a trained grid point. See schemas/store.md for each field."""

    grid_id: str
    task: str
    config: str
    method: str
    point: Mapping[str, Any]
    suite: str | None = None
    model_name: str | None = None
    seed: int | None = None
    split_seed: int | None = None
    scope_level: str | None = None
    scope_group: str | None = None
    hparams: Mapping[str, Any] | None = None
    parent_model_id: str | None = None
    status: str = "done"
    error: str | None = None
    run_id: str | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    train_seconds: float | None = None
    eval_seconds: float | None = None
    n_train_iid: int | None = None
    n_train_suite: int | None = None
    n_val_suite: int | None = None
    device: str | None = None

    def __post_init__(self) -> None:
        for name in ("grid_id", "task", "config", "method"):
            if not getattr(self, name):
                raise ValueError(f"grid point row: '{name}' is required")
        if self.status not in MODEL_STATUSES:
            raise ValueError(f"grid point {self.grid_id}: status must be one of {MODEL_STATUSES}")
        if (self.scope_level is None) != (self.scope_group is None):
            raise ValueError(f"grid point {self.grid_id}: scope_level and scope_group are set together")

    @classmethod
    def of(cls, row: GridPointRow | Mapping[str, Any]) -> GridPointRow:
        if isinstance(row, GridPointRow):
            return row
        known = {f.name for f in fields(cls)}
        unknown = set(row) - known
        if unknown:
            raise ValueError(f"grid point row has unknown field(s) {sorted(unknown)}; known: {sorted(known)}")
        return cls(**row)

    def db_values(self) -> list[Any]:
        d = asdict(self)
        d["point"] = _json(self.point)
        d["hparams"] = _json(self.hparams)
        d["started_at"] = _utc(self.started_at)
        d["finished_at"] = _utc(self.finished_at) or utc_now()
        return [d[c] for c in _GRID_COLUMNS]


_GRID_COLUMNS = ("grid_id", "run_id", "task", "suite", "model_name", "config", "method", "seed", "split_seed",
                 "scope_level", "scope_group", "point", "hparams", "parent_model_id", "status", "error",
                 "started_at", "finished_at", "train_seconds", "eval_seconds", "n_train_iid", "n_train_suite",
                 "n_val_suite", "device")


def _as_model_row(row: GridPointRow) -> ModelRow:
    # Only to reuse the outcome validation of _ModelBatch (no held-out check: a grid point's T_val spans groups).
    return ModelRow(model_id=row.grid_id, task=row.task, config=row.config, method=row.method, scenario=SEEN,
                    suite=row.suite)


@dataclass(frozen=True)
class CaseRow:
    """One row of ``cases`` (the suite name is given separately to ``ensure_cases``)."""

    case_id: str
    test_type: str
    scoring_group: str
    groups: Mapping[str, str]


Rows = Mapping[str, Sequence[Any]] | Iterable[Sequence[Any] | Mapping[str, Any]]


def _columns(rows: Rows | None, names: Sequence[str], what: str,
             optional: Sequence[str] = ()) -> dict[str, list[Any]]:
    """Normalise rows given as a mapping of columns, or as tuples / mappings / dataclasses, to columns."""
    if rows is None:
        return {n: [] for n in names}
    if isinstance(rows, Mapping):
        missing = [n for n in names if n not in rows and n not in optional]
        if missing:
            raise ValueError(f"{what}: missing column(s) {missing}; expected {list(names)}")
        unknown = set(rows) - set(names)
        if unknown:
            raise ValueError(f"{what}: unknown column(s) {sorted(unknown)}; expected {list(names)}")
        lengths = {n: len(rows[n]) for n in names if n in rows}
        if len(set(lengths.values())) > 1:
            raise ValueError(f"{what}: columns differ in length: {lengths}")
        n_rows = next(iter(lengths.values()), 0)
        return {n: list(rows[n]) if n in rows else [None] * n_rows for n in names}
    cols: dict[str, list[Any]] = {n: [] for n in names}
    for i, row in enumerate(rows):
        if isinstance(row, Mapping) or hasattr(row, "__dataclass_fields__"):
            get = row.get if isinstance(row, Mapping) else lambda k, d=None, r=row: getattr(r, k, d)
            for n in names:
                value = get(n, _MISSING)
                if value is _MISSING:
                    if n not in optional:
                        raise ValueError(f"{what}: row {i} lacks '{n}'")
                    value = None
                cols[n].append(value)
        else:
            if not (len(names) - len(optional) <= len(row) <= len(names)):
                raise ValueError(f"{what}: row {i} has {len(row)} values; expected {list(names)}")
            for n, value in zip(names, (*row, *([None] * (len(names) - len(row)))), strict=True):
                cols[n].append(value)
    return cols


_MISSING = object()


def _str_array(values: Sequence[Any]) -> np.ndarray:
    # Labels may arrive as ints (label ids) or numpy scalars; the store keeps them as text.
    return np.array([None if v is None else str(v) for v in values], dtype=object)


def _check_values(values: Sequence[Any], allowed: Sequence[str], what: str) -> None:
    bad = sorted({v for v in values if v not in allowed}, key=str)
    if bad:
        raise ValueError(f"{what} must be one of {list(allowed)}; got {bad[:5]}")


def case_rows(suite: Any, scoring_level: str | None = None) -> list[CaseRow]:
    """The ``cases`` rows of a loaded ``Suite`` (pass ``suite.effective()`` to store corrected test types)."""
    level = scoring_level or suite.header.scoring_level
    rows = []
    for case in suite.cases:
        group = case.test_type if level == "test_type" else case.groups[level]
        rows.append(CaseRow(case.id, case.test_type, group, dict(case.groups)))
    return rows


def external_model_id(model_name: str, task: str, suite: str, split_seed: int | None = None,
                      seed: int | None = None) -> str:
    """Identity of an external evaluation: re-checking the same model on the same suite replaces it."""
    key = json.dumps(["external", model_name, task, suite, split_seed, seed])
    return "external-" + hashlib.sha256(key.encode()).hexdigest()[:24]


# ------------------------------------------------------------------------------------------- writer


class StoreWriter:
    """Writes a result store; every public method opens the file, does one transaction, and closes it.

    Creating the writer creates the store (schema, views, ``beluga_meta``) when the file does not exist,
    migrates an older one, and refuses one written by a newer schema version (``BelugaError``).
    """

    def __init__(self, path: str | Path, *, lock_timeout: float = DEFAULT_LOCK_TIMEOUT_S) -> None:
        self.path = Path(path)
        self.lock_timeout = lock_timeout
        self._prepare()

    # ---- opening

    def _connect(self, *, read_only: bool = False) -> duckdb.DuckDBPyConnection:
        return connect(self.path, read_only=read_only, timeout=self.lock_timeout)

    @contextmanager
    def _transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        con = self._connect()
        try:
            con.begin()
            yield con
            con.commit()
        except BaseException:
            with contextlib.suppress(duckdb.Error):  # the failure may have aborted it already
                con.rollback()
            raise
        finally:
            con.close()

    def _prepare(self) -> None:
        if not self.path.exists():
            self._create_new()
        with self._transaction() as con:
            version = store_schema_version(con, self.path)
            if version is None:
                # An empty DuckDB file (no tables): initialise in place; DDL is transactional.
                self._initialise(con)
                return
            while version < SCHEMA_VERSION:
                _MIGRATIONS[version](con)
                version += 1
                con.execute("UPDATE beluga_meta SET value = ? WHERE key = 'schema_version'", [str(version)])
            con.execute(views_sql())
            self._set_meta(con, {"last_beluga_version": BELUGA_VERSION,
                                 "last_duckdb_version": duckdb.__version__})

    def _create_new(self) -> None:
        # Build the store under a temporary name and move it into place, so a failure (or a crash) never
        # leaves a half-initialised store at the real path.
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
        try:
            con = duckdb.connect(str(tmp), config={"storage_compatibility_version": STORAGE_COMPATIBILITY})
            try:
                con.begin()
                self._initialise(con)
                con.commit()
            finally:
                con.close()
            try:
                # link() fails if the path appeared meanwhile, where replace() would clobber a store.
                os.link(tmp, self.path)
            except FileExistsError:
                pass
            except OSError:
                os.replace(tmp, self.path)
        finally:
            for leftover in (tmp, tmp.with_name(tmp.name + ".wal")):
                leftover.unlink(missing_ok=True)

    def _initialise(self, con: duckdb.DuckDBPyConnection) -> None:
        con.execute(schema_sql())
        con.execute(views_sql())
        self._set_meta(con, {
            "schema_version": str(SCHEMA_VERSION),
            "beluga_version": BELUGA_VERSION,
            "duckdb_version": duckdb.__version__,
            "created_at": utc_now().isoformat(timespec="seconds") + "Z",
            "last_beluga_version": BELUGA_VERSION,
            "last_duckdb_version": duckdb.__version__,
        })

    @staticmethod
    def _set_meta(con: duckdb.DuckDBPyConnection, values: Mapping[str, str]) -> None:
        con.executemany("INSERT OR REPLACE INTO beluga_meta VALUES (?, ?)", list(values.items()))

    # ---- runs

    def begin_run(self, config_path: str | Path | None = None, config_text: str | None = None, *,
                  device: str | None = None, host: str | None = None, run_id: str | None = None,
                  started_at: datetime | None = None) -> str:
        """Record a run as 'running'; returns its id (sortable by start time)."""
        started = _utc(started_at) or utc_now()
        run_id = run_id or f"{started:%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:8]}"
        with self._transaction() as con:
            con.execute("INSERT INTO runs VALUES (?, ?, ?, ?, NULL, 'running', ?, ?, ?, ?)",
                        [run_id, None if config_path is None else str(config_path), config_text, started,
                         BELUGA_VERSION, duckdb.__version__, host or socket.gethostname(), device])
        return run_id

    def finish_run(self, run_id: str, status: str = "done", *, finished_at: datetime | None = None) -> None:
        if status not in RUN_STATUSES:
            raise ValueError(f"run status must be one of {RUN_STATUSES}, got {status!r}")
        with self._transaction() as con:
            found = con.execute(
                "UPDATE runs SET status = ?, finished_at = ? WHERE run_id = ? RETURNING run_id",
                [status, _utc(finished_at) or utc_now(), run_id]).fetchall()
            if not found:
                raise ValueError(f"no run {run_id!r} in the store")

    # ---- cases

    def ensure_cases(self, suite_name: str, rows: Rows) -> int:
        """Insert the suite's cases the store lacks; returns how many were inserted.

        ``rows``: ``CaseRow``s, (case_id, test_type, scoring_group, groups) tuples, mappings with those
        keys, or a mapping of those columns. A case already stored with other values means the suite
        changed under the same name: ``BelugaError`` (its old results would be scored with the new groups).
        """
        with self._transaction() as con:
            return self._insert_cases(con, suite_name, rows)

    def _insert_cases(self, con: duckdb.DuckDBPyConnection, suite_name: str, rows: Rows) -> int:
        cols = _columns(rows, ("case_id", "test_type", "scoring_group", "groups"), "cases")
        ids = cols["case_id"]
        if len(set(ids)) != len(ids):
            dup = sorted({i for i in ids if ids.count(i) > 1})[:5] if len(ids) < 10_000 else "some"
            raise ValueError(f"cases of suite {suite_name!r}: duplicate case ids {dup}")
        for name in ("case_id", "test_type", "scoring_group"):
            if any(v is None or v == "" for v in cols[name]):
                raise ValueError(f"cases of suite {suite_name!r}: empty {name}")
        data = {"case_id": _str_array(ids), "test_type": _str_array(cols["test_type"]),
                "scoring_group": _str_array(cols["scoring_group"]),
                "groups": np.array([_json(dict(g or {})) for g in cols["groups"]], dtype=object)}
        con.register("_beluga_new_cases", data)
        try:
            n_conflicts, examples = con.execute(
                """SELECT count(*), list(n.case_id ORDER BY n.case_id)[1:5]
                   FROM _beluga_new_cases n JOIN cases c ON c.suite = ? AND c.case_id = n.case_id
                   WHERE c.test_type <> n.test_type OR c.scoring_group <> n.scoring_group
                      OR c.groups::VARCHAR <> n.groups::VARCHAR""", [suite_name]).fetchall()[0]
            if n_conflicts:
                raise BelugaError(
                    f"suite '{suite_name}' differs from the one this store already holds under that name "
                    f"({n_conflicts} case(s) with other groups or test type, e.g. {examples}); use a new "
                    "store, or give the changed suite a new name", source=self.path)
            (inserted,) = con.execute(
                """INSERT INTO cases
                   SELECT ?, n.case_id, n.test_type, n.scoring_group, n.groups::JSON
                   FROM _beluga_new_cases n
                   WHERE NOT EXISTS (SELECT 1 FROM cases c WHERE c.suite = ? AND c.case_id = n.case_id)""",
                [suite_name, suite_name]).fetchall()[0]
        finally:
            con.unregister("_beluga_new_cases")
        return int(inserted)

    # ---- models

    def done_model_ids(self) -> set[str]:
        """Ids of the models already done (a failed model is retried on resume)."""
        con = self._connect(read_only=True)
        try:
            return {r[0] for r in con.execute("SELECT model_id FROM models WHERE status = 'done'").fetchall()}
        finally:
            con.close()

    def commit_model(self, model: ModelRow | Mapping[str, Any], iid_predictions: Rows | None = None,
                     iid_metrics: Rows | None = None, outcomes: Rows | None = None) -> None:
        """Write one model with all its rows in one transaction (replacing an earlier row of that id).

        - ``iid_predictions``: (split, example_idx, gold, pred, correct) rows, or a mapping of columns.
        - ``iid_metrics``: (split, metric, value, is_primary) rows (is_primary defaults to False); the
          primary metric of a split must be a fraction in [0, 1], since G mixes it with pass rates.
        - ``outcomes``: (case_id, outcome, pred) rows (pred optional), or a mapping of columns; the suite
          is the model's. The cases must be in the store already (``ensure_cases``), and a held-out fold's
          outcomes must all lie in its held-out group.
        Any error rolls back everything: the store keeps no row of this model (nor loses an earlier one).
        """
        row = ModelRow.of(model)
        batch = _ModelBatch.build(row, iid_predictions, iid_metrics, outcomes)
        with self._transaction() as con:
            self._write_model(con, row, batch)

    def _write_model(self, con: duckdb.DuckDBPyConnection, row: ModelRow, batch: _ModelBatch) -> None:
        mid = row.model_id
        if con.execute("SELECT 1 FROM models WHERE model_id = ?", [mid]).fetchall():
            for table in ("outcomes", "iid_predictions", "iid_metrics", "models"):
                con.execute(f"DELETE FROM {table} WHERE model_id = ?", [mid])
        con.execute(f"INSERT INTO models ({', '.join(_MODEL_COLUMNS)}) "
                    f"VALUES ({', '.join('?' * len(_MODEL_COLUMNS))})", row.db_values())
        if batch.metrics:
            con.executemany("INSERT INTO iid_metrics VALUES (?, ?, ?, ?, ?)",
                            [[mid, *m] for m in batch.metrics])
        if batch.predictions is not None:
            con.register("_beluga_preds", batch.predictions)
            try:
                con.execute("""INSERT INTO iid_predictions
                               SELECT ?, split::VARCHAR, example_idx::BIGINT, gold::VARCHAR, pred::VARCHAR,
                                      correct::BOOLEAN
                               FROM _beluga_preds""", [mid])
            finally:
                con.unregister("_beluga_preds")
        if batch.outcomes is not None:
            if row.suite is None:
                raise ValueError(f"model {mid}: outcomes need the model's suite")
            con.register("_beluga_outcomes", batch.outcomes)
            try:
                con.execute("""INSERT INTO outcomes
                               SELECT ?, ?, case_id::VARCHAR, outcome::VARCHAR, pred::VARCHAR
                               FROM _beluga_outcomes""", [mid, row.suite])
            finally:
                con.unregister("_beluga_outcomes")
            self._check_outcomes(con, row)

    @staticmethod
    def _check_outcomes(con: duckdb.DuckDBPyConnection, row: ModelRow) -> None:
        # Checked in SQL after the insert (inside the transaction) because DuckDB does it in milliseconds;
        # an outcome without its case would silently drop out of every view.
        n_unknown, examples = con.execute(
            """SELECT count(*), list(o.case_id ORDER BY o.case_id)[1:5] FROM outcomes o
               WHERE o.model_id = ? AND NOT EXISTS
                     (SELECT 1 FROM cases c WHERE c.suite = o.suite AND c.case_id = o.case_id)""",
            [row.model_id]).fetchall()[0]
        if n_unknown:
            raise ValueError(f"model {row.model_id}: {n_unknown} outcome(s) for cases not in suite "
                             f"'{row.suite}' of the store (call ensure_cases first), e.g. {examples}")
        if row.heldout_level is None:
            return
        pointer = "/" + row.heldout_level.replace("~", "~0").replace("/", "~1")
        n_outside, examples = con.execute(
            """SELECT count(*), list(o.case_id ORDER BY o.case_id)[1:5]
               FROM outcomes o JOIN cases c ON c.suite = o.suite AND c.case_id = o.case_id
               WHERE o.model_id = ?
                 AND (CASE WHEN ? = 'test_type' THEN c.test_type ELSE json_extract_string(c.groups, ?) END)
                     IS DISTINCT FROM ?""",
            [row.model_id, row.heldout_level, pointer, row.heldout_group]).fetchall()[0]
        if n_outside:
            raise ValueError(f"model {row.model_id} holds out {row.heldout_level}={row.heldout_group!r}, but "
                             f"{n_outside} of its outcomes are for cases outside that group, e.g. {examples}")

    # ---- grid search

    def done_grid_ids(self) -> set[str]:
        """Ids of the grid points already done (finished grid points are never retrained)."""
        con = self._connect(read_only=True)
        try:
            return {r[0] for r in con.execute("SELECT grid_id FROM grid_points WHERE status = 'done'").fetchall()}
        finally:
            con.close()

    def commit_grid_point(self, row: GridPointRow | Mapping[str, Any], outcomes: Rows | None = None,
                          metrics: Rows | None = None) -> None:
        """Write one grid point with its T_val outcomes and validation metrics in one transaction.

        - ``outcomes``: (case_id, outcome, pred) rows for the point's T_val cases (in the store's ``cases``).
        - ``metrics``: (source, test_type, metric, value, is_primary) rows; source ``suite_val`` (per test
          type) or ``iid_val`` (test_type None).
        """
        row = GridPointRow.of(row)
        outs = _ModelBatch.build(_as_model_row(row), None, None, outcomes).outcomes
        m = _columns(metrics, ("source", "test_type", "metric", "value", "is_primary"),
                     f"grid point {row.grid_id}: metrics", optional=("test_type", "is_primary"))
        _check_values(m["source"], GRID_SOURCES, f"grid point {row.grid_id}: metric source")
        metric_rows = [[row.grid_id, src, tt, str(name), None if v is None or v != v else float(v), bool(prim)]
                       for src, tt, name, v, prim in zip(m["source"], m["test_type"], m["metric"], m["value"],
                                                         m["is_primary"], strict=True)]
        gid = row.grid_id
        with self._transaction() as con:
            for table in ("grid_outcomes", "grid_metrics", "grid_points"):
                con.execute(f"DELETE FROM {table} WHERE grid_id = ?", [gid])
            con.execute(f"INSERT INTO grid_points ({', '.join(_GRID_COLUMNS)}) "
                        f"VALUES ({', '.join('?' * len(_GRID_COLUMNS))})", row.db_values())
            if metric_rows:
                con.executemany("INSERT INTO grid_metrics VALUES (?, ?, ?, ?, ?, ?)", metric_rows)
            if outs is not None:
                con.register("_beluga_grid_outcomes", outs)
                try:
                    con.execute("""INSERT INTO grid_outcomes
                                   SELECT ?, ?, case_id::VARCHAR, outcome::VARCHAR, pred::VARCHAR
                                   FROM _beluga_grid_outcomes""", [gid, row.suite])
                finally:
                    con.unregister("_beluga_grid_outcomes")
                (n_unknown,) = con.execute(
                    """SELECT count(*) FROM grid_outcomes o WHERE o.grid_id = ? AND NOT EXISTS
                       (SELECT 1 FROM cases c WHERE c.suite = o.suite AND c.case_id = o.case_id)""",
                    [gid]).fetchall()[0]
                if n_unknown:
                    raise ValueError(f"grid point {gid}: {n_unknown} outcome(s) for cases not in suite "
                                     f"'{row.suite}' of the store (call ensure_cases first)")

    def record_selections(self, rows: Iterable[Mapping[str, Any]], run_id: str | None = None) -> None:
        """Record which grid point a run chose per selection (replacing that run's earlier record)."""
        cols = ("task", "config", "method", "scope_level", "scope_group", "criterion", "grid_id", "value",
                "n_points")
        now = utc_now()
        values = [[run_id, *(r.get(c) for c in cols), now] for r in rows]
        with self._transaction() as con:
            if run_id is not None:
                con.execute("DELETE FROM grid_selections WHERE run_id = ?", [run_id])
            if values:
                con.executemany("INSERT INTO grid_selections VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", values)

    # ---- exclusions

    def set_g_exclusions(self, task: str, groups: Iterable[str]) -> None:
        """Replace the scoring groups of ``task`` left out of s_T and G (METHOD.md §6)."""
        groups = sorted(set(groups))
        with self._transaction() as con:
            con.execute("DELETE FROM g_exclusions WHERE task = ?", [task])
            if groups:
                con.executemany("INSERT INTO g_exclusions VALUES (?, ?)", [[task, g] for g in groups])

    # ---- external models

    def record_external_evaluation(self, *, model_name: str, task: str, suite: str, outcomes: Rows,
                                   cases: Rows | None = None, iid_metrics: Rows | None = None,
                                   split_seed: int | None = None, run_id: str | None = None,
                                   device: str | None = None, eval_seconds: float | None = None,
                                   model_id: str | None = None) -> str:
        """Store an evaluation of a model beluga did not train (``beluga suite check --store``).

        Writes a ``models`` row (config 'external', method 'none', scenario 'standard', ``model_name``
        naming the model) with its outcomes, and with ``cases`` given, the suite's missing cases first, all
        in one transaction. Returns the model id: by default derived from (model_name, task, suite,
        split_seed), so checking the same model again replaces the earlier evaluation.
        """
        model_id = model_id or external_model_id(model_name, task, suite, split_seed)
        row = ModelRow(model_id=model_id, task=task, suite=suite, model_name=model_name,
                       config=EXTERNAL_CONFIG, method=EXTERNAL_METHOD, scenario=STANDARD,
                       split_seed=split_seed, run_id=run_id, device=device, eval_seconds=eval_seconds)
        batch = _ModelBatch.build(row, None, iid_metrics, outcomes)
        with self._transaction() as con:
            if cases is not None:
                self._insert_cases(con, suite, cases)
            self._write_model(con, row, batch)
        return model_id


@dataclass
class _ModelBatch:
    """A model's rows, validated and turned into columns before the store is opened (keeps it short)."""

    predictions: dict[str, np.ndarray] | None
    metrics: list[tuple[str, str, float | None, bool]]
    outcomes: dict[str, np.ndarray] | None

    @classmethod
    def build(cls, row: ModelRow, iid_predictions: Rows | None, iid_metrics: Rows | None,
              outcomes: Rows | None) -> _ModelBatch:
        mid = row.model_id
        predictions = None
        if iid_predictions is not None:
            p = _columns(iid_predictions, ("split", "example_idx", "gold", "pred", "correct"),
                         f"model {mid}: iid_predictions")
            if p["split"]:
                _check_values(p["split"], IID_SPLITS, f"model {mid}: iid_predictions split")
                correct = np.asarray(p["correct"])
                if correct.dtype != np.bool_:
                    if any(c is None for c in p["correct"]):
                        raise ValueError(f"model {mid}: iid_predictions 'correct' may not be None")
                    correct = correct.astype(bool)
                keys = list(zip(p["split"], p["example_idx"], strict=True))
                if len(set(keys)) != len(keys):
                    raise ValueError(f"model {mid}: iid_predictions repeat a (split, example_idx)")
                predictions = {"split": np.array(p["split"], dtype=object),
                               "example_idx": np.asarray(p["example_idx"], dtype=np.int64),
                               "gold": _str_array(p["gold"]), "pred": _str_array(p["pred"]),
                               "correct": correct}
        metrics: list[tuple[str, str, float | None, bool]] = []
        if iid_metrics is not None:
            m = _columns(iid_metrics, ("split", "metric", "value", "is_primary"), f"model {mid}: iid_metrics",
                         optional=("is_primary",))
            _check_values(m["split"], IID_SPLITS, f"model {mid}: iid_metrics split")
            for split, metric, value, primary in zip(m["split"], m["metric"], m["value"], m["is_primary"],
                                                     strict=True):
                value = None if value is None or value != value else float(value)  # NaN -> NULL
                metrics.append((split, str(metric), value, bool(primary)))
            for split in IID_SPLITS:
                primaries = [x for x in metrics if x[0] == split and x[3]]
                if len(primaries) > 1:
                    raise ValueError(f"model {mid}: {len(primaries)} primary metrics on split '{split}': "
                                     f"{[x[1] for x in primaries]}")
                if primaries and primaries[0][2] is not None and not 0.0 <= primaries[0][2] <= 1.0:
                    raise ValueError(f"model {mid}: primary metric {primaries[0][1]}={primaries[0][2]} is "
                                     "not a fraction in [0, 1] (G averages it with pass rates)")
        outs = None
        if outcomes is not None:
            o = _columns(outcomes, ("case_id", "outcome", "pred"), f"model {mid}: outcomes",
                         optional=("pred",))
            if o["case_id"]:
                _check_values(set(o["outcome"]), OUTCOMES, f"model {mid}: outcome")
                if len(set(o["case_id"])) != len(o["case_id"]):
                    raise ValueError(f"model {mid}: outcomes repeat a case id")
                outs = {"case_id": _str_array(o["case_id"]), "outcome": np.array(o["outcome"], dtype=object),
                        "pred": _str_array(o["pred"])}
        return cls(predictions, metrics, outs)
