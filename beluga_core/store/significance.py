"""Storage of significance tests: rows of the ``significance_tests`` table (migration 3), read back through
the views of views/50_significance.sql.

Rows are written through the store a command holds open for writing (``opened.StoreHandle``), one transaction
per call, all or none.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import duckdb

from beluga_core import __version__ as BELUGA_VERSION
from beluga_core.store.connection import table_names, utc_now
from beluga_core.store.opened import StoreHandle

TABLE = "significance_tests"
VIEWS = ("significance_inputs", "significance_pairs", "significance")

CROSS_TABLE = "cross_significance_tests"
CROSS_COLUMNS = ("comparison_id", "task", "suite", "model_name", "seed", "split_seed", "variant", "config", "method",
                 "scenario",
                 "eval_suite", "mapped_level", "n_cases", "n_cases_differ", "s_cross", "base_s_cross", "g", "base_g",
                 "delta_g", "p_g", "rounds", "rng_seed", "inputs_digest", "computed_at", "beluga_version")

COLUMNS = ("comparison_id", "scope", "task", "suite", "model_name", "seed", "split_seed", "variant", "config", "method",
           "scenario", "base_config", "base_method", "base_scenario", "n_tasks", "n_strata", "iid_test", "n_iid",
           "n_discordant", "k_better", "s_iid", "base_s_iid", "delta_iid", "p_iid", "n_cases", "n_cases_differ",
           "s_suite", "base_s_suite", "g", "base_g", "delta_g", "p_g", "rounds", "rng_seed", "inputs_digest",
           "computed_at", "beluga_version")


REPLICATE_TABLE = "replicate_intervals"
REPLICATE_COLUMNS = ("interval_id", "task", "suite", "model_name", "config", "method", "variant", "scenario",
                     "split_seed", "base_config", "base_method", "base_scenario", "statistic", "grp", "n_seeds",
                     "n_cases", "mean", "seed_lo", "seed_hi", "hier_lo", "hier_hi", "hier_df", "cases_lo", "cases_hi",
                     "p_hier", "rounds", "rng_seed", "inputs_digest", "computed_at", "beluga_version")


def has_significance(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether the store holds the significance table and views (every store of schema 3 or newer)."""
    names = table_names(con)
    return TABLE in names and all(v in names for v in VIEWS)


def has_cross(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether the store holds the cross-suite views (schema 8 or newer, opened by a writer since)."""
    names = table_names(con)
    return all(v in names for v in ("cross_summary", "cross_significance", "only_matrix_summary"))


def has_regression(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether the store holds the regression views (schema 9 or newer, opened by a writer since)."""
    return "regression_summary" in table_names(con)


class SignificanceWriter:
    """Writes significance rows into a store open for writing (its open migrated it and refreshed its views); each
    method is one transaction."""

    def __init__(self, store: StoreHandle) -> None:
        if not store.writable:
            raise ValueError(f"{store.path} is open read-only; significance rows need it open for writing")
        self.store = store

    def write(self, rows: Sequence[Mapping[str, Any]]) -> tuple[int, list[str]]:
        """Insert (or replace) rows of ``significance_tests`` by ``comparison_id``; returns (rows kept, ids
        dropped as stale).

        A row is dropped again, in the same transaction, when the view finds its inputs changed between the
        read the test was computed from and this write (e.g. a run committed a model meanwhile): a stored
        p-value always matches the digest it claims.
        """
        return self._write(TABLE, COLUMNS, rows, "SELECT comparison_id FROM significance_pairs WHERE stale")

    def write_cross(self, rows: Sequence[Mapping[str, Any]]) -> tuple[int, list[str]]:
        """``write`` for the cross-suite tests (``cross_significance_tests``)."""
        return self._write(CROSS_TABLE, CROSS_COLUMNS, rows,
                           "SELECT comparison_id FROM cross_significance WHERE status = 'stale'")

    def write_replicates(self, rows: Sequence[Mapping[str, Any]]) -> tuple[int, list[str]]:
        """``write`` for the intervals over seeds (``replicate_intervals``, keyed by ``interval_id``)."""
        return self._write(REPLICATE_TABLE, REPLICATE_COLUMNS, rows,
                           "SELECT interval_id FROM replicate_summary WHERE status = 'stale'", key="interval_id")

    def _write(self, table: str, columns: Sequence[str], rows: Sequence[Mapping[str, Any]],
               stale_sql: str, key: str = "comparison_id") -> tuple[int, list[str]]:
        if not rows:
            return 0, []
        now = utc_now()
        values = []
        for r in rows:
            full = {**r, "computed_at": r.get("computed_at") or now,
                    "beluga_version": r.get("beluga_version") or BELUGA_VERSION}
            missing = [c for c in columns if c not in full]
            if missing:
                raise ValueError(f"{table} row {r.get(key)}: missing {missing}")
            values.append([full[c] for c in columns])
        ids = [v[0] for v in values]
        with self.store.transaction() as con:
            con.execute("CREATE TEMP TABLE _beluga_sig_ids (id VARCHAR)")
            con.executemany("INSERT INTO _beluga_sig_ids VALUES (?)", [[i] for i in ids])
            con.execute(f"DELETE FROM {table} WHERE {key} IN (SELECT id FROM _beluga_sig_ids)")
            con.executemany(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
                            values)
            stale = [r[0] for r in con.execute(
                f"""SELECT {key} FROM ({stale_sql})
                    WHERE {key} IN (SELECT id FROM _beluga_sig_ids) ORDER BY {key}"""
            ).fetchall()]
            if stale:
                con.executemany(f"DELETE FROM {table} WHERE {key} = ?", [[i] for i in stale])
            con.execute("DROP TABLE _beluga_sig_ids")
        return len(ids) - len(stale), stale
