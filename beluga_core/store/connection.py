"""Opening a result store: lock waits, transactions, and the schema version (numbered migrations).

A store is a DuckDB file, or an in-memory database (``Store.in_memory``: ``beluga suite check`` scores
predictions through the same views). Exactly one process writes a file store; it opens the file for one
transaction and closes it again, so readers (``beluga report``, the duckdb CLI) can open the file between
two commits (DuckDB lets one read-write process hold a file, or many readers).
"""

from __future__ import annotations

import contextlib
import functools
import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

import duckdb

from beluga_core import __version__ as BELUGA_VERSION
from beluga_core.core.errors import BelugaError

# How long a writer waits for readers that hold the file open before giving up.
DEFAULT_LOCK_TIMEOUT_S = 120.0
# A run's writer holds the file for well under a second per model; readers wait a little to ride over that.
DEFAULT_READ_TIMEOUT_S = 30.0
# DuckDB 2.0 writes new files in a storage format no DuckDB before 2.0 can open; a store is meant for any
# DuckDB client (and pyproject allows duckdb>=1.0), so new stores use the 1.0 format (benchmarks/perf has the
# size and speed comparison). DuckDB keeps a file's format when it writes to it later.
STORAGE_COMPATIBILITY = "v1.0.0"


def sql_file(name: str) -> str:
    """A SQL resource of the store (``views/10_scores.sql``, ``migrations/0001_initial.sql``, …)."""
    return resources.files("beluga_core.store.sql").joinpath(name).read_text(encoding="utf-8")


def view_files() -> list[str]:
    """The view definitions, in the order they build on each other (their names sort that way)."""
    folder = resources.files("beluga_core.store.sql").joinpath("views")
    return sorted(f"views/{f.name}" for f in folder.iterdir() if f.name.endswith(".sql"))


def view_sql(name: str) -> str:
    """A view file as the store creates it: its ``same_*(x, y)`` calls expanded (``expand_key_comparisons``)."""
    return expand_key_comparisons(sql_file(name))


_KEY_MACRO = re.compile(r"CREATE OR REPLACE MACRO (same_\w+)\(a, b\) AS\s+(.*?);", re.S)
_KEY_CALL = re.compile(r"\b(same_\w+)\(\s*(\w+)\s*,\s*(\w+)\s*\)")


@functools.cache
def key_comparisons() -> dict[str, str]:
    """The replicate key's comparisons, name → body over rows ``a`` and ``b``: the ``same_*`` macros as the latest
    migration that defines each has them (migration 18 first; docs/reference/store.md "One replicate key")."""
    folder = resources.files("beluga_core.store.sql").joinpath("migrations")
    defs: dict[str, str] = {}
    for name in sorted(f.name for f in folder.iterdir() if f.name.endswith(".sql")):
        for m in _KEY_MACRO.finditer(sql_file(f"migrations/{name}")):
            defs[m.group(1)] = " ".join(m.group(2).split())
    return defs


def expand_key_comparisons(sql: str) -> str:
    """``sql`` with every ``same_*(x, y)`` call on two table aliases replaced by the macro's comparisons of their key
    columns. The store's macros compute the same, but a macro's row arguments hid the columns from DuckDB's join
    planning: table3 read 1.3× slower at DuckDB 1.2.0 (benchmarks/store/replicate_key_joins.py); expanded, the views
    are the joins on the columns they were. Calls on other arguments (a STRUCT of values) are left to the macros."""
    defs = key_comparisons()

    def expand(m: re.Match[str]) -> str:
        name, x, y = m.groups()
        if name not in defs:
            raise BelugaError(f"{name}({x}, {y}): no replicate-key comparison of that name (the store's migrations "
                              f"define {', '.join(sorted(defs))})")
        return "(" + re.sub(r"\b([ab])\.", lambda v: f"{x if v.group(1) == 'a' else y}.", defs[name]) + ")"
    return _KEY_CALL.sub(expand, sql)


def utc_now() -> datetime:
    """Now in UTC, without a zone (columns are TIMESTAMP holding UTC: no ICU extension needed to read)."""
    return datetime.now(UTC).replace(tzinfo=None)


def as_utc(ts: datetime | None) -> datetime | None:
    """Aware datetimes converted to naive UTC; naive ones taken as UTC."""
    if ts is None or ts.tzinfo is None:
        return ts
    return ts.astimezone(UTC).replace(tzinfo=None)


def _is_lock_error(exc: BaseException) -> bool:
    return isinstance(exc, duckdb.IOException) and "lock" in str(exc).lower()


# Bytes 8-11 of every DuckDB database file.
_DUCKDB_MAGIC = b"DUCK"


def _not_a_database(path: Path) -> str | None:
    if path.is_dir():
        return "is a folder, not a file; a result store is one DuckDB file, e.g. runs/quick.duckdb"
    try:
        with open(path, "rb") as fh:
            head = fh.read(12)
    except FileNotFoundError:
        return None  # a new store
    except OSError as exc:
        return f"cannot read the result store ({exc})"
    if head and head[8:12] != _DUCKDB_MAGIC:
        return "not a DuckDB database (a result store is the DuckDB file a `beluga run` writes)"
    return None


# While waiting for a lock, say who holds it this often (seconds).
LOCK_REPORT_EVERY = 10.0
WaitFn = Callable[[str], None]


def lock_holder(exc: BaseException) -> str:
    """Who holds the lock, from DuckDB's message ("Conflicting lock is held in PROGRAM (PID N)")."""
    found = re.search(r"lock is held in (.*?) \(PID (\d+)\)", str(exc))
    return f"process {found[2]} ({found[1]})" if found else "another process"


def connect(path: Path, *, read_only: bool, timeout: float,
            on_wait: WaitFn | None = None) -> duckdb.DuckDBPyConnection:
    """Open ``path``, waiting up to ``timeout`` seconds while another process holds a conflicting lock (and
    telling ``on_wait``, every ``LOCK_REPORT_EVERY`` seconds, who holds it)."""
    problem = _not_a_database(path)
    if problem is not None:
        raise BelugaError(problem, source=path)
    started = time.monotonic()
    deadline = started + timeout
    next_report = started + LOCK_REPORT_EVERY
    delay = 0.02
    while True:
        try:
            return duckdb.connect(str(path), read_only=read_only)
        except duckdb.IOException as exc:
            if not _is_lock_error(exc):
                raise BelugaError(f"cannot open the result store: {exc}", source=path) from exc
            now = time.monotonic()
            if on_wait is not None and now >= next_report and now < deadline:
                next_report += LOCK_REPORT_EVERY
                on_wait(f"waiting for the result store {path}: {lock_holder(exc)} holds it open "
                        f"({now - started:.0f} s of at most {timeout:.0f} s)")
            if now >= deadline:
                holder = f"is being written by {lock_holder(exc)}" if read_only else \
                    f"is held open by {lock_holder(exc)} (a `beluga report`, a duckdb CLI, another run?)"
                raise BelugaError(f"the result store {holder}; waited {timeout:.0f} s", source=path) from exc
        except duckdb.Error as exc:
            raise BelugaError(f"cannot open the result store: {exc}", source=path) from exc
        time.sleep(delay)
        delay = min(delay * 2, 0.5)


@contextmanager
def transaction(con: duckdb.DuckDBPyConnection) -> Iterator[duckdb.DuckDBPyConnection]:
    """One transaction on ``con``: committed on success, rolled back entirely on any error."""
    con.begin()
    try:
        yield con
        con.commit()
    except BaseException:
        with contextlib.suppress(duckdb.Error):  # the failure may have aborted it already
            con.rollback()
        raise


class Store:
    """Where a store lives: a file (opened per transaction), one in-memory database (kept open), or a file a command
    holds open (``holding``: every transaction on that connection)."""

    def __init__(self, path: str | Path | None, *, lock_timeout: float = DEFAULT_LOCK_TIMEOUT_S,
                 on_wait: WaitFn | None = None) -> None:
        self.path = None if path is None else Path(path)
        self.lock_timeout = lock_timeout
        self.on_wait = on_wait
        self._kept: duckdb.DuckDBPyConnection | None = duckdb.connect(":memory:") if path is None else None

    @classmethod
    def in_memory(cls) -> Store:
        return cls(None)

    @classmethod
    def holding(cls, path: Path, con: duckdb.DuckDBPyConnection) -> Store:
        """The file at ``path`` through ``con``, the read-write connection a command holds (``store.opened``)."""
        store = cls(path)
        store._kept = con
        return store

    @property
    def where(self) -> str:
        return str(self.path) if self.path is not None else ":memory:"

    @contextmanager
    def connection(self, *, read_only: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
        if self._kept is not None:
            yield self._kept
            return
        assert self.path is not None
        con = connect(self.path, read_only=read_only, timeout=self.lock_timeout, on_wait=self.on_wait)
        try:
            yield con
        finally:
            con.close()

    @contextmanager
    def transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        with self.connection() as con, transaction(con) as tx:
            yield tx


def aggregate_row(con: duckdb.DuckDBPyConnection, sql: str, params: list[object] | None = None) -> tuple[Any, ...]:
    """The one row of an aggregate query (which always has one)."""
    row = con.execute(sql, params or []).fetchone()
    if row is None:
        raise AssertionError(f"an aggregate query returned no row: {sql}")
    return row


def table_names(con: duckdb.DuckDBPyConnection) -> set[str]:
    return {r[0] for r in con.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main'").fetchall()}


def store_schema_version(con: duckdb.DuckDBPyConnection, where: str | Path, newest: int) -> int | None:
    """The schema version a store records; None for a DuckDB database with no tables at all.

    Raises ``BelugaError`` for a file that is not a beluga store, or one of a schema newer than ``newest``
    (naming both versions and the beluga that wrote it).
    """
    tables = table_names(con)
    if "beluga_meta" not in tables:
        if tables:
            raise BelugaError(f"not a beluga result store (it has tables {sorted(tables)[:5]} but no "
                              "beluga_meta); pass a new file or an existing store", source=where)
        return None
    rows = con.execute("SELECT value FROM beluga_meta WHERE key = 'schema_version'").fetchall()
    if not rows:
        raise BelugaError("beluga_meta has no schema_version: not a beluga store, or a damaged one", source=where)
    version = int(rows[0][0])
    if version > newest:
        created = con.execute("SELECT value FROM beluga_meta WHERE key = 'last_beluga_version'").fetchall()
        by = f" by beluga {created[0][0]}" if created else ""
        raise BelugaError(f"this store was last written{by} with store schema version {version}; this beluga "
                          f"({BELUGA_VERSION}) understands schema versions up to {newest}. Upgrade beluga, or "
                          "use another store file", source=where)
    return version
