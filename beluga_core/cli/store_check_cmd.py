"""``beluga store check STORE``: verify the invariants the store's views rely on (exit 1 listing violations)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape


def check_cmd(
    store: Path = typer.Argument(..., help="A beluga result store (DuckDB file)."),
    sample: int = typer.Option(5, "--sample", min=1, help="Offending rows shown per violated invariant."),
) -> None:
    """Check a result store: one outcome per T_test case per scenario key and no duplicates, folds scored only
    inside their held-out group and trained without it (the recorded training-set digests match the split),
    every done model with its outcomes and i.i.d. metrics, a known schema version.

    Exits 0 when every invariant holds, 1 listing each violated one with sample rows, 2 for a missing or
    unreadable store. Works while a run goes on (read-only).
    """
    from beluga_core.store.opened import open_handle
    from beluga_core.store.store_checks import check_store

    with open_handle(store, migrate=False) as opened:
        violations, n_checked = check_store(opened.con, sample=sample)
    console = Console(highlight=False)
    if not violations:
        console.print(f"store check: all {n_checked} invariants hold ({escape(str(store))})")
        return
    for v in violations:
        console.print(f"[bold red]violated[/] {escape(v.name)}: {escape(v.rule)} — {v.total} row(s)")
        console.print("  " + escape(" | ".join(v.columns)))
        for row in v.rows:
            console.print("  " + escape(" | ".join("NULL" if x is None else str(x) for x in row)))
    console.print(f"store check: {len(violations)} of {n_checked} invariants violated ({escape(str(store))})")
    raise typer.Exit(1)
