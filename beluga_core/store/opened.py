"""One opened store per command: the handle (``StoreHandle``) a command opens, and migrates, once, and hands down
to everything it runs, so a command checks the schema once and no function below it opens the file again.

A command that only reads opens the file read-only: other readers may open it beside it, and a run's writer waits
for it to close (``connection``). One that writes (``beluga analyze`` caches its tests and intervals, ``beluga rank``
its ranking) opens it read-write for the whole command: DuckDB lets one process hold a file read-write, and a
process cannot hold the same file both ways, so its reads and writes go through the one connection.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import duckdb

from beluga_core.core.errors import BelugaError
from beluga_core.store.connection import (
    DEFAULT_LOCK_TIMEOUT_S,
    DEFAULT_READ_TIMEOUT_S,
    connect,
    store_schema_version,
    transaction,
)
from beluga_core.store.migrations import SCHEMA_VERSION, upgrade
from beluga_core.store.writer import StoreWriter, initialise


@dataclass(frozen=True)
class StoreHandle:
    """An open result store: its file, the connection the command holds, and whether it may write."""

    path: Path
    con: duckdb.DuckDBPyConnection
    writable: bool

    @contextmanager
    def transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """One transaction on the held connection: committed on success, rolled back on any error."""
        if not self.writable:
            raise ValueError(f"{self.path} is open read-only: a command that writes opens it with write=True")
        with transaction(self.con) as tx:
            yield tx

    def writer(self) -> StoreWriter:
        """The store's writer on the held connection (a command that writes models: ``beluga ensemble``, …)."""
        if not self.writable:
            raise ValueError(f"{self.path} is open read-only: a command that writes opens it with write=True")
        return StoreWriter.holding(self.path, self.con)


@contextmanager
def open_handle(path: str | Path, *, write: bool = False, migrate: bool = True, create: bool = False,
                timeout: float | None = None) -> Iterator[StoreHandle]:
    """The store at ``path``, opened once and closed on exit. Read-only unless ``write``; a store of an older schema
    is first brought up to date (readers rely on the current columns and views), unless ``migrate`` is False
    (``store check``, which reports an older schema, and metadata reads). Opened for writing, the store is migrated
    and its views refreshed on the held connection, as ``StoreWriter`` does on its open (an empty DuckDB file
    becomes a store). ``create`` (with ``write``): a missing store is created first (``beluga rank --zoo``'s)."""
    path = Path(path)
    if create and write and not path.exists():
        StoreWriter.create(path)
    if not path.exists():
        raise BelugaError("no such result store", source=path)
    if write:
        con = connect(path, read_only=False, timeout=DEFAULT_LOCK_TIMEOUT_S if timeout is None else timeout)
        try:
            version = store_schema_version(con, path, SCHEMA_VERSION)
            if version is None:
                initialise(con)
            else:
                upgrade(con, version)
            yield StoreHandle(path, con, True)
        finally:
            con.close()
        return
    timeout = DEFAULT_READ_TIMEOUT_S if timeout is None else timeout
    con = connect(path, read_only=True, timeout=timeout)
    try:
        version = store_schema_version(con, path, SCHEMA_VERSION)
        if version is None:
            raise BelugaError("an empty DuckDB file, not a beluga result store", source=path)
        if migrate and version < SCHEMA_VERSION:
            # A read-only connection cannot migrate: bring the store up to date once, then read it.
            con.close()
            _migrate(path)
            con = connect(path, read_only=True, timeout=timeout)
        yield StoreHandle(path, con, False)
    finally:
        con.close()


def _migrate(path: Path) -> None:
    con = connect(path, read_only=False, timeout=DEFAULT_LOCK_TIMEOUT_S)
    try:
        version = store_schema_version(con, path, SCHEMA_VERSION)
        if version is not None:
            upgrade(con, version)
    finally:
        con.close()


# What the entry points of the library API take (``analyze_store``, ``read_report_data``, …): an open store, or, for
# a caller outside a command (tests, notebooks), the path of one to open for that one call.
StoreArg = StoreHandle | str | Path


@contextmanager
def held(store: StoreArg, *, write: bool = False) -> Iterator[StoreHandle]:
    """``store`` itself when it is open (a command's handle: never opened again), else the store at that path opened
    for this one call (read-write with ``write``)."""
    if isinstance(store, StoreHandle):
        if write and not store.writable:
            raise ValueError(f"{store.path} is open read-only; this writes to it")
        yield store
        return
    with open_handle(store, write=write) as handle:
        yield handle
