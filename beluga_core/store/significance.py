"""Storage of significance tests: the ``significance_tests`` table and its views (significance.sql).

Writes follow StoreWriter's rule: open, one transaction, commit, close, so a running ``beluga run`` and
readers are held up for milliseconds only. The table and views are created on demand (idempotently) by the
first analysis, not by StoreWriter, so stores and their schema version are untouched until then.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import Any

import duckdb

from beluga_core import __version__ as BELUGA_VERSION
from beluga_core.errors import BelugaError
from beluga_core.store.writer import DEFAULT_LOCK_TIMEOUT_S, connect, store_schema_version, utc_now

# Bump (with a migration below) when significance_tests changes; views need none (re-created each write).
SIGNIFICANCE_SCHEMA_VERSION = 1
META_KEY = "significance_schema_version"
TABLE = "significance_tests"
VIEWS = ("significance_inputs", "significance_pairs", "significance")

COLUMNS = ("comparison_id", "scope", "task", "suite", "model_name", "seed", "split_seed", "config", "method",
           "scenario", "base_config", "base_method", "base_scenario", "n_tasks", "n_strata", "iid_test", "n_iid",
           "n_discordant", "k_better", "s_iid", "base_s_iid", "delta_iid", "p_iid", "n_cases", "n_cases_differ",
           "s_suite", "base_s_suite", "g", "base_g", "delta_g", "p_g", "rounds", "rng_seed", "inputs_digest",
           "computed_at", "beluga_version")


def significance_sql() -> str:
    return resources.files("beluga_core.store").joinpath("significance.sql").read_text(encoding="utf-8")


def has_significance(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether the store holds the significance table and views (i.e. an analysis ran once)."""
    names = {r[0] for r in con.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main'").fetchall()}
    return TABLE in names and all(v in names for v in VIEWS)


def ensure_significance(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    """Create (or refresh) the table and views inside the caller's transaction."""
    if store_schema_version(con, path) is None:
        raise BelugaError("an empty DuckDB file, not a beluga result store", source=path)
    rows = con.execute("SELECT value FROM beluga_meta WHERE key = ?", [META_KEY]).fetchall()
    if rows and int(rows[0][0]) > SIGNIFICANCE_SCHEMA_VERSION:
        raise BelugaError(f"this store's significance tables are of a newer version ({rows[0][0]}) than this "
                          f"beluga understands ({SIGNIFICANCE_SCHEMA_VERSION}); upgrade beluga", source=path)
    con.execute(significance_sql())
    con.execute("INSERT OR REPLACE INTO beluga_meta VALUES (?, ?)", [META_KEY, str(SIGNIFICANCE_SCHEMA_VERSION)])


class SignificanceWriter:
    """Writes significance rows into an existing store; each method is one open → transaction → close."""

    def __init__(self, path: str | Path, *, lock_timeout: float = DEFAULT_LOCK_TIMEOUT_S) -> None:
        self.path = Path(path)
        self.lock_timeout = lock_timeout
        if not self.path.exists():
            raise BelugaError("no such result store", source=self.path)

    @contextmanager
    def _transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        con = connect(self.path, read_only=False, timeout=self.lock_timeout)
        try:
            con.begin()
            yield con
            con.commit()
        except BaseException:
            with contextlib.suppress(duckdb.Error):
                con.rollback()
            raise
        finally:
            con.close()

    def ensure_schema(self) -> None:
        with self._transaction() as con:
            ensure_significance(con, self.path)

    def write(self, rows: Sequence[Mapping[str, Any]]) -> tuple[int, list[str]]:
        """Insert (or replace) rows by ``comparison_id``; returns (rows kept, ids dropped as stale).

        A row is dropped again, in the same transaction, when the view finds its inputs changed between the
        read the test was computed from and this write (e.g. a run committed a model meanwhile): a stored
        p-value always matches the digest it claims.
        """
        if not rows:
            return 0, []
        now = utc_now()
        values = []
        for r in rows:
            full = {**r, "computed_at": r.get("computed_at") or now,
                    "beluga_version": r.get("beluga_version") or BELUGA_VERSION}
            missing = [c for c in COLUMNS if c not in full]
            if missing:
                raise ValueError(f"significance row {r.get('comparison_id')}: missing {missing}")
            values.append([full[c] for c in COLUMNS])
        ids = [v[0] for v in values]
        with self._transaction() as con:
            ensure_significance(con, self.path)
            con.execute("CREATE TEMP TABLE _beluga_sig_ids (comparison_id VARCHAR)")
            con.executemany("INSERT INTO _beluga_sig_ids VALUES (?)", [[i] for i in ids])
            con.execute(f"DELETE FROM {TABLE} WHERE comparison_id IN (SELECT comparison_id FROM _beluga_sig_ids)")
            con.executemany(f"INSERT INTO {TABLE} ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})",
                            values)
            stale = [r[0] for r in con.execute(
                """SELECT comparison_id FROM significance_pairs
                   WHERE stale AND comparison_id IN (SELECT comparison_id FROM _beluga_sig_ids)
                   ORDER BY comparison_id""").fetchall()]
            if stale:
                con.executemany(f"DELETE FROM {TABLE} WHERE comparison_id = ?", [[i] for i in stale])
            con.execute("DROP TABLE _beluga_sig_ids")
        return len(ids) - len(stale), stale
