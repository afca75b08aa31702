"""``beluga report STORE``."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

from beluga_core.cli.app import app
from beluga_core.errors import BelugaError


@app.command("report")
def report(store: Path = typer.Argument(..., help="A beluga result store (DuckDB file).")) -> None:
    """Print i.i.d. scores and G per scenario for every configuration-method (works while a run goes on)."""
    if not store.exists():
        raise BelugaError("no such result store", source=store)
    from beluga_core.report.terminal import print_g_table

    print_g_table(store, Console())
