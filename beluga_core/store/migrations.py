"""The store's schema as numbered migrations: one per change, each applied in the transaction that records it.

A new store applies them all; an older store is brought up to date when a writer opens it; a store of a
newer schema is refused (``connection.store_schema_version``). Views are not migrations: ``views/*.sql`` are
re-created on a writer's open whenever they differ from the store's (``views_digest``), so a fixed definition
reaches old stores without one. The scalar macros the views share
(``g_score``, ``pass_rate``, …: migration 14) are schema, created by migrations.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
from dataclasses import dataclass

import duckdb

from beluga_core import __version__ as BELUGA_VERSION
from beluga_core.store.connection import sql_file, transaction, view_files, view_sql


@dataclass(frozen=True)
class Migration:
    version: int
    name: str

    @property
    def sql(self) -> str:
        return sql_file(f"migrations/{self.version:04d}_{self.name}.sql")


# Append only: a released migration never changes.
MIGRATIONS = (
    Migration(1, "initial"),
    Migration(2, "grid_search"),
    Migration(3, "significance"),
    Migration(4, "case_gold"),
    Migration(5, "case_splits"),
    Migration(6, "training_provenance"),
    Migration(7, "task_heads"),
    Migration(8, "cross_suites"),
    Migration(9, "regression"),
    Migration(10, "attributions"),
    Migration(11, "fewshot"),
    Migration(12, "variants_failures"),
    Migration(13, "replicates"),
    Migration(14, "score_macros"),
    Migration(15, "run_workers"),
    Migration(16, "packs"),
    Migration(17, "deterministic_aggregates"),
    Migration(18, "replicate_key"),
    Migration(19, "honest_records"),
    Migration(20, "sweeps"),
)
SCHEMA_VERSION = MIGRATIONS[-1].version


def migrate(con: duckdb.DuckDBPyConnection, current: int, *, in_open_transaction: bool = False) -> int:
    """Apply every migration after ``current``, each in its own transaction together with the new version
    number (a failure leaves the store at the last complete version); returns the new version.
    ``in_open_transaction``: all of them in the caller's transaction instead (a new store, built whole or not at
    all: sixteen commits took two thirds of the migrations' time)."""
    for migration in MIGRATIONS:
        if migration.version <= current:
            continue
        with contextlib.nullcontext(con) if in_open_transaction else transaction(con):
            con.execute(migration.sql)
            con.execute("INSERT OR REPLACE INTO beluga_meta VALUES ('schema_version', ?)", [str(migration.version)])
        current = migration.version
    return current


@functools.cache
def views_digest() -> str:
    """What the store's views are made of: every view file's name and text, and the DuckDB that binds them."""
    h = hashlib.sha256(duckdb.__version__.encode())
    for name in view_files():
        h.update(b"\0" + name.encode() + b"\0" + view_sql(name).encode())
    return h.hexdigest()


def refresh_views(con: duckdb.DuckDBPyConnection, *, force: bool = False) -> None:
    """(Re-)create every view unless the store's are already these (``views_digest``; re-creating them all took
    ~0.15 s on every writer's open), and record which beluga and DuckDB last wrote the store. ``force``: after a
    migration, whose tables the views read."""
    stored = con.execute("SELECT value FROM beluga_meta WHERE key = 'views_digest'").fetchall()
    if force or not stored or stored[0][0] != views_digest():
        for name in view_files():
            con.execute(view_sql(name))
        con.execute("INSERT OR REPLACE INTO beluga_meta VALUES ('views_digest', ?)", [views_digest()])
    con.executemany("INSERT OR REPLACE INTO beluga_meta VALUES (?, ?)",
                    [["last_beluga_version", BELUGA_VERSION], ["last_duckdb_version", duckdb.__version__]])


def upgrade(con: duckdb.DuckDBPyConnection, current: int) -> None:
    """Bring a store of schema ``current`` up to date: its migrations, then the views (re-created whenever their
    definitions differ from the store's, so a fixed definition reaches old stores without a migration)."""
    migrated = migrate(con, current) != current
    with transaction(con):
        refresh_views(con, force=migrated)
