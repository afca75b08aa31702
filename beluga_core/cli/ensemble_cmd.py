"""``beluga ensemble STORE --members SEL… --name NAME [--rule vote|mean]``: a derived model of stored models."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape


def ensemble(
    store: Path = typer.Argument(..., help="A beluga result store (DuckDB file)."),
    members: list[str] = typer.Option(..., "--members", help=(
        "Member models: selectors (CONFIG/METHOD[@SCENARIO][#SEED] or ids), repeatable; a selector without #SEED "
        "takes every seed, so `--members iid-update/vanilla` ensembles all its seeds.")),
    name: str = typer.Option(..., "--name", help="The ensemble's name: its rows' `method`."),
    rule: str = typer.Option("vote", "--rule", help="vote (majority label; ties by mean probability) or mean "
                                                    "(mean probabilities; needs [store] keep_probabilities)."),
) -> None:
    """Combine stored models into an ensemble: one model row per scenario group of the members (a held-out
    scenario: one per held-out group), scored on D_test and on the suite cases from the members' stored
    predictions, so that g_scores, significance and the regression views treat it like any model."""
    from beluga_core.analysis.regression.ensemble import EnsembleSpec, build_ensemble
    from beluga_core.store.opened import open_handle

    with open_handle(store, write=True) as opened:
        ids = build_ensemble(opened, EnsembleSpec(name, tuple(members), rule))
    Console(highlight=False).print(f"ensemble {escape(name)} ({rule} of {len(members)} selector(s)): {len(ids)} model "
                                   f"row(s) written to {escape(str(store))}")
