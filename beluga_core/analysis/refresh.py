"""Bringing a store's computed tables up to date: the significance tests and the intervals over seeds.

What ``beluga analyze`` and the end of ``beluga run`` call. Both kinds of row are Monte Carlo results cached with
their provenance; rows whose inputs, rounds and seed are unchanged are kept.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
from rich.markup import escape

from beluga_core.analysis.replicates.cached_intervals import analyze_replicates
from beluga_core.analysis.significance.comparison_tests import (
    DEFAULT_ROUNDS,
    DEFAULT_SEED,
    AnalysisSummary,
    ConfigMethod,
    analyze_store,
)
from beluga_core.core.errors import BelugaError
from beluga_core.store.opened import StoreArg, held


@dataclass
class Refreshed:
    significance: AnalysisSummary
    intervals_computed: int
    cells_kept: int
    seconds: float


def refresh(store: StoreArg, *, rounds: int = DEFAULT_ROUNDS, seed: int = DEFAULT_SEED,
            pairs: Sequence[tuple[ConfigMethod, ConfigMethod]] = (), force: bool = False) -> Refreshed:
    """The significance tests (against the IID baseline, and ``pairs``) and the intervals over seeds, on ``store``
    open for writing (a path: opened once for this call)."""
    started = time.perf_counter()
    with held(store, write=True) as opened:
        significance = analyze_store(opened, rounds=rounds, seed=seed, pairs=pairs, force=force)
        computed, kept = analyze_replicates(opened, seed=seed, force=force)
    return Refreshed(significance, computed, kept, time.perf_counter() - started)


def refresh_after_run(store: Path, console: Any) -> None:
    """The end of ``beluga run``: bring the store's tests and intervals up to date, or say why not."""
    try:
        done = refresh(store)
    except (BelugaError, duckdb.Error) as exc:
        console.print(f"[yellow]significance tests not updated[/] ({escape(str(exc))}); run `beluga analyze {store}`")
        return
    s = done.significance
    cross = (f"; cross-suite G: {s.n_cross_computed} computed, {s.n_cross_kept} already current"
             if s.n_cross_computed or s.n_cross_kept else "")
    console.print(f"significance: {s.n_computed} test(s) computed, {s.n_kept} already current{cross}; intervals over "
                  f"seeds: {done.intervals_computed} computed, {done.cells_kept} cell(s) already current "
                  f"({done.seconds:.1f} s; {DEFAULT_ROUNDS:,} rounds, seed {DEFAULT_SEED})")
