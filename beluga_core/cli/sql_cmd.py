"""``beluga sql STORE QUERY``: SQL on a result store with nothing but what ``pip install beluga`` gives."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import duckdb
import typer
from rich import box
from rich.console import Console
from rich.table import Table

from beluga_core.core.errors import BelugaError
from beluga_core.store.opened import open_handle

FORMATS = ("table", "csv", "json")


def sql(
    store: Path = typer.Argument(..., help="A beluga result store (DuckDB file)."),
    query: str = typer.Argument(..., help="A SQL query over its tables and views, e.g. \"SELECT * FROM g_scores\"."),
    fmt: str = typer.Option("table", "--format", metavar="table|csv|json", help="How to print the rows."),
    limit: int = typer.Option(1000, "--limit", min=0, help="At most this many rows (0: all)."),
) -> None:
    """Run a read-only SQL query on a store and print its rows (the DuckDB command-line program is not needed;
    the store stays readable by any DuckDB client)."""
    if fmt not in FORMATS:
        raise BelugaError(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    with open_handle(store) as opened:
        con = opened.con
        try:
            cur = con.execute(query)
        except duckdb.Error as exc:
            raise BelugaError(f"the query failed: {exc}", source=store) from None
        if cur.description is None:
            return
        names = [d[0] for d in cur.description]
        rows = cur.fetchall() if limit == 0 else cur.fetchmany(limit + 1)
    cut = limit and len(rows) > limit
    rows = rows[:limit] if cut else rows
    if fmt == "csv":
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(names)
        writer.writerows(rows)
    elif fmt == "json":
        for r in rows:
            sys.stdout.write(json.dumps(dict(zip(names, r, strict=True)), default=str) + "\n")
    else:
        table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, header_style="bold")
        for name in names:
            table.add_column(name, no_wrap=True)
        for r in rows:
            table.add_row(*("" if v is None else str(v) for v in r))
        console = Console(highlight=False)
        # Rows are data: never folded or cut to the terminal's width (a wide result wraps whole lines).
        natural = console.measure(table, options=console.options.update_width(100_000)).maximum
        Console(highlight=False, width=max(console.width, natural)).print(table)
    if cut:
        Console(stderr=True).print(f"(first {limit} rows; --limit 0 prints all)")

