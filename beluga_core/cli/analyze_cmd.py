"""``beluga analyze STORE [--rounds R] [--seed S] [--compare A B] [--force]``."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from beluga_core.core.errors import BelugaError


def _pct(v: float | None) -> str:
    return "—" if v is None else f"{100 * v:+.1f}"


def _p(v: float | None) -> str:
    return "—" if v is None else f"{v:.4f}"


def _tasks(rows: list[dict]) -> int:
    return len({r["task"] for r in rows if r["task"]})


def _print_rows(console: Console, title: str, rows: list[dict]) -> None:
    one_task = _tasks(rows) <= 1
    if one_task:  # the means over tasks would repeat its rows, and a task column its name
        rows = [r for r in rows if r["task"]] or rows
        title += f" ({rows[0]['task'] or 'mean over tasks'})" if rows else ""
    # One test per training seed: with several seeds the rows differ only by it, so it gets a column.
    seeds = len({r.get("seed") for r in rows}) > 1
    table = Table(title=title + (" — one row per training seed (one run's draw)" if seeds else ""),
                  title_justify="left")
    for col in (*([] if one_task else ["task"]), "configuration/method", "scenario", *(["seed"] if seeds else []),
                "Δ i.i.d.", "p", "Δ G", "p", "status"):
        # Cells wrap rather than end in "…": two configurations may differ only at the end of their names.
        table.add_column(col, justify="right" if col in ("seed", "Δ i.i.d.", "p", "Δ G") else "left",
                         overflow="fold")
    mark = {"better": " [green]▲[/]", "worse": " [red]▼[/]"}
    for r in rows:
        variant = f"~{r['variant']}" if r.get("variant") else ""
        table.add_row(*([] if one_task else [r["task"] or "mean over tasks"]), f"{r['config']}/{r['method']}{variant}",
                      r["scenario"] or "Avg.", *([str(r.get("seed"))] if seeds else []),
                      _pct(r["delta_iid"]) + mark.get(r.get("iid_mark") or "", ""), _p(r["p_iid"]),
                      _pct(r["delta_g"]) + mark.get(r.get("g_mark") or "", ""), _p(r["p_g"]), r["status"])
    console.print(table)


def _interval(lo: float | None, hi: float | None) -> str:
    return "—" if lo is None or hi is None else f"[{100 * lo:+.1f}, {100 * hi:+.1f}]"


# The ordering the default interval of A − IID resolves (replicate_summary.default_kind: the hierarchical one, the
# seed-level t below HIERARCHICAL_MIN_SEEDS seeds), in words that fit a rise and a drop alike.
ORDERING = {"A > B": "higher: resolved", "A < B": "lower: resolved"}


def _print_seed_rows(console: Console, rows: list[dict]) -> None:
    """Differences from the IID baseline over seeds (docs/method.md, "Replicates"), in percentage points."""
    from beluga_core.analysis.replicates.intervals import HIERARCHICAL_MIN_SEEDS, SEED_T_WHY

    one_task = _tasks(rows) <= 1
    table = Table(title="Against the IID baseline over seeds, paired by seed (percentage points): the mean, the "
                        "seed-level and the hierarchical 95 % intervals, and whether the interval the verdict comes "
                        f"from (the hierarchical one from {HIERARCHICAL_MIN_SEEDS} seeds on, the seed-level t below) "
                        "resolves the difference (excludes 0)" + (f" ({rows[0]['task']})" if one_task and rows else ""),
                  title_justify="left")
    for col in (*([] if one_task else ["task"]), "configuration/method", "scenario", "figure", "seeds", "Δ",
                "seed-level", "hierarchical", "ordering"):
        table.add_column(col, justify="right" if col in ("seeds", "Δ") else "left", overflow="fold")
    names = {"g": "G", "s_suite": "s_T", "s_iid": "s_iid"}
    for r in rows:
        variant = f"~{r['variant']}" if r["variant"] else ""
        ordering = ORDERING.get(r["ordering"], "not resolved") + (" (seed-level t)" if r["default_kind"] == "seed"
                                                                   else "")
        table.add_row(*([] if one_task else [r["task"]]), f"{r['config']}/{r['method']}{variant}", r["scenario"],
                      names[r["statistic"]], str(r["n_seeds"]), _pct(r["mean"]), _interval(r["seed_lo"], r["seed_hi"]),
                      _interval(r["hier_lo"], r["hier_hi"]), ordering + (" (stale)" if r["status"] == "stale" else ""))
    console.print(table)
    if any(r["default_kind"] == "seed" for r in rows):
        console.print(f"(seed-level t): the ordering is the seed-level t interval's, not the hierarchical one's: "
                      f"{SEED_T_WHY}.", style="dim", highlight=False)


def crossing_note(rows: list[dict], crossing: set[tuple[str, str]]) -> str | None:
    """What the rows of a crossing level's scenario compare (docs/method.md, "Scenarios and folds")."""
    levels = sorted({r["scenario"] for r in rows if (r["task"], r["scenario"]) in crossing}
                    | {lv for t, lv in crossing for r in rows if r["task"] is None and r["scenario"] == lv})
    if not levels:
        return None
    return (f"{', '.join(levels)}: a crossing level, whose scenario scores only the cases with a group at it: its Δ, "
            "test and interval against the IID baseline are on those cases, the baseline's figures too.")


def _mark(row: dict, p: str, delta: str) -> str | None:
    # As the significance view does it: only a current test below α marks, in its tested direction.
    if row["stale"] or row[p] is None or row[p] >= 0.05 or not row[delta]:
        return None
    return "better" if row[delta] > 0 else "worse"


def analyze(
    store: Path = typer.Argument(..., help="A beluga result store (DuckDB file)."),
    rounds: int = typer.Option(10_000, "--rounds", min=1,
                               help="Rounds of each paired approximate randomization test."),
    seed: int = typer.Option(0, "--seed", help="Seed of the randomization tests."),
    compare: tuple[str, str] | None = typer.Option(
        None, "--compare", metavar="A B",
        help="Also test configuration-method A against B, e.g. --compare iid-then-t/l2 iid-plus-t/vanilla "
             "(a bare configuration means its vanilla method)."),
    force: bool = typer.Option(False, "--force", help="Recompute tests that are already current."),
) -> None:
    """Compute significance tests against the IID baseline (and between two configuration-methods)."""
    if not store.exists():
        raise BelugaError("no such result store", source=store)
    from beluga_core.analysis.refresh import refresh
    from beluga_core.analysis.report.renderers.terminal import render_terminal
    from beluga_core.analysis.report.sections.curves import curve_sections
    from beluga_core.analysis.significance.comparison_tests import parse_config_method
    from beluga_core.analysis.sweeps.curves import read_curves
    from beluga_core.store.opened import open_handle

    console = Console()
    pairs = []
    if compare:
        try:
            pairs = [(parse_config_method(compare[0]), parse_config_method(compare[1]))]
        except ValueError as exc:
            raise BelugaError(f"--compare: {exc}") from exc
    # One read-write open for the whole command: the tests and intervals it caches, and the rows it prints.
    with open_handle(store, write=True) as opened:
        done = refresh(opened, rounds=rounds, seed=seed, pairs=pairs, force=force)
        con = opened.con
        cur = con.execute("""SELECT * FROM significance
                             ORDER BY scope DESC, task, config, method, scenario NULLS LAST, seed, split_seed""")
        names = [d[0] for d in cur.description]
        baseline_rows = [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
        cur = con.execute("""SELECT task, config, method, variant, scenario, statistic, n_seeds, mean, seed_lo, seed_hi,
                                    hier_lo, hier_hi, default_kind, ordering, status
                             FROM replicate_summary
                             WHERE base_config IS NOT NULL AND n_seeds >= 2 AND statistic IN ('g', 's_suite', 's_iid')
                             ORDER BY task, config, method, variant, scenario, statistic""")
        names = [d[0] for d in cur.description]
        seed_rows = [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
        crossing = {(t, lv) for t, lv in con.execute("SELECT DISTINCT task, level FROM crossing_levels").fetchall()}
        curves = read_curves(opened)
        pair_rows: list[dict] = []
        if pairs:
            (a, b), = pairs
            cur = con.execute(
                """SELECT *, CASE WHEN stale THEN 'stale' ELSE 'current' END AS status
                   FROM significance_pairs
                   WHERE config = ? AND method = ? AND base_config = ? AND base_method = ?
                   ORDER BY scope DESC, task, scenario NULLS LAST, seed, split_seed""", [*a, *b])
            names = [d[0] for d in cur.description]
            pair_rows = [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
    summary = done.significance
    console.print(f"{summary.n_comparisons} comparison(s): {summary.n_computed} computed, {summary.n_kept} "
                  f"already current ({rounds:,} rounds, seed {seed}; {summary.seconds:.1f} s); intervals over seeds: "
                  f"{done.intervals_computed} row(s) computed, {done.cells_kept} cell(s) already current")
    if summary.dropped_stale:
        console.print(f"[yellow]{len(summary.dropped_stale)} test(s) not stored: their models changed while "
                      "computing (a run is writing?); run `beluga analyze` again when it is done")
    if not baseline_rows:
        console.print("no configuration-method with an IID baseline (config iid, method vanilla) in this store yet")
    else:
        _print_rows(console, "Against the IID baseline (its G_standard), in percentage points; ▲ / ▼ significantly "
                             "better / worse (p < 0.05)", baseline_rows)
    if seed_rows:
        _print_seed_rows(console, seed_rows)
    note = crossing_note([*baseline_rows, *seed_rows], crossing)
    if note:
        console.print(note, style="dim", highlight=False)
    if pairs:
        for r in pair_rows:
            r["iid_mark"], r["g_mark"] = _mark(r, "p_iid", "delta_iid"), _mark(r, "p_g", "delta_g")
        (a, b), = pairs
        base = "its G_standard" if pair_rows and pair_rows[0]["base_scenario"] else "the same scenario"
        _print_rows(console, f"{a[0]}/{a[1]} against {b[0]}/{b[1]} ({base})", pair_rows)
    # A sweep's curves and per-point verdicts (nothing without [sweep]): computed from the views, nothing cached.
    render_terminal(curve_sections(curves, None), console)
