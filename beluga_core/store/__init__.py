"""The DuckDB result store: raw facts in tables, every aggregate in a view (schemas/store.md)."""

from __future__ import annotations

from beluga_core.store.reader import VIEWS, fetch_dicts, fetch_rows, open_store, read_meta
from beluga_core.store.writer import (
    SCHEMA_VERSION,
    TABLES,
    CaseRow,
    GridPointRow,
    ModelRow,
    StoreWriter,
    case_rows,
    external_model_id,
)

__all__ = [
    "SCHEMA_VERSION",
    "TABLES",
    "VIEWS",
    "CaseRow",
    "GridPointRow",
    "ModelRow",
    "StoreWriter",
    "case_rows",
    "external_model_id",
    "fetch_dicts",
    "fetch_rows",
    "open_store",
    "read_meta",
]
