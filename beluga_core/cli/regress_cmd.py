"""``beluga regress STORE``: what model updates broke that the old model got right (negative flips)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console
from rich.markup import escape

if TYPE_CHECKING:
    from beluga_core.store.opened import StoreHandle


def _pct(v: float | None) -> str:
    return "—" if v is None or v != v else f"{100 * v:.1f}"


def _ci(ci: tuple[float, float]) -> str:
    return "" if ci[0] != ci[0] else f"[{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]"


def regress(
    store: Path = typer.Argument(..., help="A beluga result store (DuckDB file)."),
    old: str | None = typer.Option(None, "--old", help=(
        "The old model: a selector (CONFIG/METHOD[@SCENARIO][#SEED], e.g. iid/vanilla@standard#0, or a model id); "
        "OTHER.duckdb::SELECTOR to import a model of another store; or a predictions file (`beluga suite check` "
        "format). Default: each model's own old model (its parent, else the IID baseline of its seed).")),
    new: list[str] = typer.Option([], "--new", help="New models (selectors; repeatable). Default: every model "
                                                    "with an old model."),
    by: str | None = typer.Option(None, "--by", help="Also per group of this suite level (or test_type)."),
    split: str = typer.Option("test", "--split", help="i.i.d. split: test (D_test) or val (D_val, where scored)."),
    rounds: int = typer.Option(10_000, "--rounds", min=1, help="Rounds of the randomization tests."),
    seed: int = typer.Option(0, "--seed", help="Seed of the bootstrap intervals, the tests and centric halves."),
    centric: str | None = typer.Option(None, "--centric", help=(
        "Centric selection among the ≥ 3 models this selector names (seeds of one update): the one with the "
        "lowest mean NFR against the others on one seeded half of D_test, reported on the other half.")),
) -> None:
    """NFR, PFR and Δacc (= PFR − NFR) of model updates against their old model, on D_test and on the suite's
    T_test cases, with 95 % bootstrap intervals; with two or more --new, the paired randomization test of each
    pair's NFR difference (stored in the store's regression_tests). The store's views regression_iid,
    regression_cases, iid_flips, case_flips and the macros regression_between / flips_between give the same
    in SQL."""
    from beluga_core.analysis.regression.external import is_external
    from beluga_core.core.errors import BelugaError
    from beluga_core.store.opened import open_handle

    if split not in ("test", "val"):
        raise BelugaError(f"--split {split}: expected test or val")
    console = Console(highlight=False)
    # One open for the whole command, read-write when it writes: an imported --old model, the tests of two or
    # more --new.
    with open_handle(store, write=(old is not None and is_external(old)) or len(new) >= 2) as opened:
        _regress(opened, console, old=old, new=new, by=by, split=split, rounds=rounds, seed=seed,
                 centric=centric)


def _regress(opened: StoreHandle, console: Console, *, old: str | None, new: list[str], by: str | None, split: str,
             rounds: int, seed: int, centric: str | None) -> None:
    from beluga_core.analysis.regression.regress import centric as run_centric
    from beluga_core.analysis.regression.regress import compute, run_tests
    from beluga_core.analysis.report.renderers.terminal_tables import print_value_table

    report = compute(opened, old=old, new=new, by=by, split=split, seed=seed)
    if report.imported:
        console.print(f"imported the old model as {report.imported} (config 'external')")
    if not report.rows:
        console.print("no model with an old model to compare with (train an update, or name --old / --new)")
    for old_label in dict.fromkeys(r.old_label for r in report.rows):
        rows = [r for r in report.rows if r.old_label == old_label]
        labels = [("new model", [r.label for r in rows]),
                  ("on", [(f"D_{r.part}" if r.source == "iid" else r.part) + (f": {r.group}" if r.group else "")
                          for r in rows])]
        values = [("n", [f"{r.pairing.n}" + (f"+{r.pairing.n_skipped}s" if r.pairing.n_skipped else "")
                         for r in rows]),
                  ("NFR", [f"{_pct(r.pairing.nfr)} {_ci(r.ci['nfr'])}" for r in rows]),
                  ("PFR", [f"{_pct(r.pairing.pfr)} {_ci(r.ci['pfr'])}" for r in rows]),
                  ("Δacc", [f"{_pct(r.pairing.pfr - r.pairing.nfr)} {_ci(r.ci['delta_acc'])}" for r in rows]),
                  ("rel. NFR", ["—" if r.rel_nfr is None else f"{r.rel_nfr:.2f}" for r in rows])]
        print_value_table(console, f"against {old_label}: negative / positive flips (%, 95 % bootstrap "
                                   "intervals; n: paired items, +Ns skipped)", labels, values)
    if len(new) >= 2:
        run_tests(opened, report, rounds=rounds, seed=seed)
        for a, b, source, part, t in report.tests:
            where = f"D_{part}" if source == "iid" else part
            console.print(f"NFR {escape(a)} − {escape(b)} on {escape(where)}: {100 * t.nfr_a:.1f} − {100 * t.nfr_b:.1f}"
                          f" = {100 * (t.nfr_a - t.nfr_b):+.1f} points, p = {t.p_value:.4f} ({t.n_discordant} "
                          f"discordant of {t.n}; paired randomization, {t.rounds:,} rounds, seed {seed})")
    if centric is not None:
        result, names = run_centric(opened, centric, split=split, seed=seed)
        console.print(f"centric selection among {len(names)} models of {escape(centric)} (half 1: "
                      f"{result.n_selection} examples selects, half 2: {result.n_report} reports):")
        for mid in sorted(names, key=lambda m: result.selection_nfr[m]):
            mark = "  ← chosen" if mid == result.chosen else ""
            console.print(f"  {escape(names[mid])}: mean NFR from the others {100 * result.selection_nfr[mid]:.2f} "
                          f"(half 1), {100 * result.report_nfr[mid]:.2f} (half 2); accuracy "
                          f"{100 * result.report_accuracy[mid]:.1f} (half 2){mark}")
