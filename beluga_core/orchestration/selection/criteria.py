"""Selection criteria: names of ``grid_scores`` columns, or a SQL expression over them (higher is better)."""

from __future__ import annotations

from pathlib import Path

import duckdb

from beluga_core.core.errors import BelugaError
from beluga_core.store.writer import StoreWriter

# The built-in criteria are columns of the grid_scores view (beluga_core/store/sql/views/30_grid.sql documents each).
CRITERIA = ("reference", "reference_iid", "mean_pass", "worst_group", "g_val", "iid_val")
DEFAULT_CRITERION = "reference"


def criterion_sql(criterion: str) -> str:
    return criterion if criterion in CRITERIA else f"({criterion})"


def check_criterion(criterion: str, source: Path | None = None) -> None:
    """Fail early (at plan time, before any training) on a criterion the grid_scores view cannot compute."""
    with StoreWriter.in_memory().connection() as con:
        try:
            con.execute(f"SELECT {criterion_sql(criterion)} FROM grid_scores LIMIT 0").fetchall()
        except duckdb.Error as exc:
            raise BelugaError(f"grid criterion '{criterion}' is neither one of {', '.join(CRITERIA)} nor a SQL "
                              f"expression over the columns of the grid_scores view: {str(exc).splitlines()[0]}",
                              source=source, field="grid.criterion") from None
