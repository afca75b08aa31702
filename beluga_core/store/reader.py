"""Read-only access to a result store, for ``beluga report`` and friends.

Readers never recompute what a view defines: they fetch views. A read-only connection blocks the writer
(DuckDB allows one read-write process, or many readers), so open, fetch and close promptly: the writer
waits for readers, but only up to its lock timeout.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb

from beluga_core.core.errors import BelugaError
from beluga_core.store.connection import DEFAULT_READ_TIMEOUT_S, connect, store_schema_version
from beluga_core.store.migrations import SCHEMA_VERSION
from beluga_core.store.rows import TABLES

VIEWS = ("pass_rates", "suite_scores", "model_iid_scores", "iid_scores", "g_scores", "g_summary",
         "models_status", "duplicate_outcomes", "label_names", "label_distribution", "degeneracy",
         "iid_confusion", "iid_class_scores", "model_training_cases", "training_leaks", "grid_pass_rates",
         "grid_test_type_scores", "grid_scores", "scenario_summary", "pass_rate_summary", "report_columns", "table3",
         "worst_groups", "degeneracy_labels", "significance_inputs", "significance_pairs", "significance",
         "cross_case_bases", "cross_pass_rates", "cross_alignment_cases", "cross_alignment", "cross_scores",
         "cross_summary", "cross_pass_rate_summary",
         "only_matrix", "only_matrix_summary", "cross_comparisons", "cross_significance", "regression_pairs",
         "iid_flips", "regression_iid", "case_flips", "regression_cases", "regression_test_status",
         "regression_summary", "seed_expansions", "expansion_flips", "expansion_summary", "fewshot_status",
         "fewshot_pairs", "fewshot_group_accuracy", "fewshot_accuracy")
RELATIONS = frozenset(TABLES) | frozenset(VIEWS)

Source = str | Path | duckdb.DuckDBPyConnection


@contextmanager
def open_store(path: str | Path, *,
               timeout: float = DEFAULT_READ_TIMEOUT_S) -> Iterator[duckdb.DuckDBPyConnection]:
    """A read-only connection to an existing beluga store, closed on exit."""
    path = Path(path)
    if not path.exists():
        raise BelugaError("no such result store", source=path)
    con = connect(path, read_only=True, timeout=timeout)
    try:
        if store_schema_version(con, path, SCHEMA_VERSION) is None:
            raise BelugaError("an empty DuckDB file, not a beluga result store", source=path)
        yield con
    finally:
        con.close()


@contextmanager
def _connection(source: Source) -> Iterator[duckdb.DuckDBPyConnection]:
    if isinstance(source, duckdb.DuckDBPyConnection):
        yield source
    else:
        with open_store(source) as con:
            yield con


def _quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def fetch_rows(source: Source, relation: str, *, where: Mapping[str, Any] | None = None,
               order_by: Sequence[str] | None = None) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Column names and rows of a view or table; ``where`` filters on column equality (None: IS NULL).

    Rows are sorted by ``order_by`` columns, or by all columns, so output is deterministic.
    """
    if relation not in RELATIONS:
        raise BelugaError(f"unknown store view or table '{relation}'; known: {', '.join(sorted(RELATIONS))}")
    sql = f"SELECT * FROM {_quote(relation)}"
    params: list[Any] = []
    if where:
        conds = []
        for col, value in where.items():
            if value is None:
                conds.append(f"{_quote(col)} IS NULL")
            else:
                conds.append(f"{_quote(col)} = ?")
                params.append(value)
        sql += " WHERE " + " AND ".join(conds)
    sql += " ORDER BY " + (", ".join(_quote(c) for c in order_by) if order_by else "ALL")
    with _connection(source) as con:
        try:
            cur = con.execute(sql, params)
        except duckdb.BinderException as exc:
            raise BelugaError(f"cannot query '{relation}': {exc}") from exc
        columns = [d[0] for d in cur.description]
        return columns, cur.fetchall()


def fetch_dicts(source: Source, relation: str, *, where: Mapping[str, Any] | None = None,
                order_by: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """Like ``fetch_rows``, as one dict per row."""
    columns, rows = fetch_rows(source, relation, where=where, order_by=order_by)
    return [dict(zip(columns, r, strict=True)) for r in rows]


def read_meta(source: Source) -> dict[str, str]:
    """The ``beluga_meta`` key/value pairs (schema_version, beluga_version, duckdb_version, created_at, …)."""
    with _connection(source) as con:
        return dict(con.execute("SELECT key, value FROM beluga_meta").fetchall())


def measured_train_rate(path: Path) -> float | None:
    """Training examples × epochs per training second over the store's done models (``--dry-run``'s time
    estimates); None without a readable store or trained model."""
    if not path.is_file():
        return None
    try:
        with open_store(path, timeout=2.0) as con:
            row = con.execute("""SELECT sum((coalesce(n_train_iid, 0) + coalesce(n_train_suite, 0))
                                           * coalesce(TRY_CAST(hparams->>'epochs' AS DOUBLE), 1)),
                                        sum(train_seconds)
                                 FROM models WHERE status = 'done' AND train_seconds > 0""").fetchone()
    except (BelugaError, duckdb.Error):
        return None
    if row is None or not row[0] or not row[1]:
        return None
    return float(row[0]) / float(row[1])
