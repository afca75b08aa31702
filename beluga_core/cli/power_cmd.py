"""``beluga power STORE --effect D``: how many seeds and T_test cases per group detect a difference of D."""

from __future__ import annotations

import math
from pathlib import Path

import typer
from rich.console import Console

from beluga_core.analysis.replicates.intervals import Replicates
from beluga_core.analysis.replicates.power import Components, VarianceFn
from beluga_core.core.errors import BelugaError

STATISTICS = ("s_T", "G", "pass_rate")


def _cell_spec(text: str) -> tuple[str, str, str]:
    """CONFIG[/METHOD]@SCENARIO → (config, method, scenario)."""
    head, sep, scenario = text.partition("@")
    config, _, method = head.partition("/")
    if not sep or not config or not scenario:
        raise BelugaError(f"'{text}': expected CONFIG[/METHOD]@SCENARIO, e.g. iid-then-t/vanilla@seen")
    return config, method or "vanilla", scenario


def power(
    store: Path = typer.Argument(..., help="A beluga result store with two or more seeds per cell."),
    effect: float = typer.Option(..., "--effect", help="The difference to detect, as a fraction (0.05 = 5 points)."),
    a: list[str] = typer.Option([], "--a", metavar="CONFIG/METHOD@SCENARIO",
                                help="The cell(s) to compare (default: every cell with two or more seeds)."),
    b: str = typer.Option("iid/vanilla@standard", "--b", metavar="CONFIG/METHOD@SCENARIO",
                          help="What they are compared with (default: the IID baseline)."),
    statistic: str = typer.Option("s_T", "--statistic", metavar="s_T|G|pass_rate"),
    group: str | None = typer.Option(None, "--group", help="The scoring group, with --statistic pass_rate."),
    target: float = typer.Option(0.8, "--power", min=0.5, max=0.99, help="The power to reach."),
    alpha: float = typer.Option(0.05, "--alpha", min=0.001, max=0.2, help="The test's level (two-sided)."),
    variant: str | None = typer.Option(None, "--variant", help="The variant (default: the unnamed one, else the "
                                                               "store's only one)."),
) -> None:
    """From the store's variance components (between seeds, between cases within groups, the rest), the seeds and
    the T_test cases per group that detect --effect at --power and --alpha with the hierarchical interval's test
    (docs/method.md, "Power"). σ²_seed from S seeds has S − 1 degrees of freedom: the seeds needed are also given at
    the ends of its 95 % interval."""
    from beluga_core.analysis.replicates.seed_rows import Cell, cell_digests, load_cells
    from beluga_core.analysis.report.report_data import pick_variant, store_variants
    from beluga_core.store.reader import open_store

    if statistic not in STATISTICS:
        raise BelugaError(f"--statistic must be one of {', '.join(STATISTICS)}, got {statistic!r}")
    if (statistic == "pass_rate") != (group is not None):
        raise BelugaError("--group names the scoring group of --statistic pass_rate (and only of it)")
    if effect == 0:
        raise BelugaError("--effect must not be 0")
    wanted = [_cell_spec(x) for x in a]
    base = _cell_spec(b)
    with open_store(store) as con:
        v = pick_variant(store_variants(con), variant, store)
        digests = [c for c in cell_digests(con) if c.variant == v]
        pairs: list[tuple[Cell, Cell]] = []
        for cell in sorted(digests):
            other = cell.other(*base)
            if other not in digests or other == cell:
                continue
            if wanted and (cell.config, cell.method, cell.scenario) not in wanted:
                continue
            pairs.append((cell, other))
        cells = load_cells(con, {c for p in pairs for c in p})
    pairs = [(x, y) for x, y in pairs if x in cells and y in cells and cells[x].n_seeds >= 2]
    if not pairs:
        raise BelugaError(f"no cell with two or more seeds to compare with {b}"
                          + (f" among {', '.join(a)}" if a else "") + ": the variance between training runs needs "
                          "several seeds (e.g. benchmarks/quick-seeds.toml)", source=store)
    console = Console(highlight=False)
    console.print(f"power {target:.0%} at α = {alpha} (two-sided), effect {100 * effect:+.1f} points of {statistic}"
                  + (f" ({group})" if group else "") + f", against {b}:", soft_wrap=True)
    for x, y in pairs:
        label = f"{x.config}/{x.method}@{x.scenario} − {y.config}/{y.method}@{y.scenario} ({x.task})"
        try:
            line = power_line(cells[x], cells[y], statistic, group, effect, target, alpha)
        except ValueError as exc:
            line = str(exc)
        console.print(f"  {label}: {line}", soft_wrap=True)


def power_line(ra: Replicates, rb: Replicates, statistic: str, group: str | None, effect: float, target: float,
               alpha: float) -> str:
    """What ``beluga power`` says of one comparison: observed difference, components, power now, sizes needed."""
    from beluga_core.analysis.replicates.power import (
        cases_needed,
        g_variance,
        group_components,
        iid_components,
        power,
        seeds_needed,
        suite_components,
    )

    comp = group_components(ra, rb, group) if statistic == "pass_rate" and group else suite_components(ra, rb)
    observed = comp.observed

    def make(c: Components) -> VarianceFn:
        return c.variance

    if statistic == "G":
        iid = iid_components(ra, rb)
        s_suite, s_iid = float(ra.per_seed("s_suite").mean()), float(ra.per_seed("s_iid").mean())
        observed = float((ra.per_seed("g") - rb.per_seed("g")).mean())

        def make(c: Components) -> VarianceFn:
            return g_variance(c, iid, s_suite, s_iid)

    variance = make(comp)
    s_now, n_now = comp.seeds, comp.cases
    total, seed_part = variance(s_now, n_now)
    if total == 0:
        return (f"observed {100 * observed:+.1f} points over {s_now} seeds × {n_now:.0f} {_cases(n_now)} per group: "
                "no variation between the seeds or the cases (every seed gives the same outcomes on every case), "
                "so no power or size can be estimated from this store; run with more cases per group")
    now = power(total, seed_part, s_now, effect, alpha)
    lo, hi = comp.seed_interval()
    needed = [seeds_needed(make(comp.with_seed(sigma)), n_now, effect, target, alpha) for sigma in (comp.seed, lo, hi)]
    cases = cases_needed(variance, s_now, effect, target, alpha)
    by_cases = ("unreachable (the spread between training runs alone is too large)" if cases is None
                else f"{cases:,}")
    return (f"observed {100 * observed:+.1f} points over {s_now} seeds × {n_now:.0f} {_cases(n_now)} per group "
            f"({comp.groups} group(s)); components σ²_seed {comp.seed:.2e} [95 %: {lo:.2e}, {_num(hi)}], σ²_case "
            f"{comp.case:.2e}, σ²_rest {comp.rest:.2e}; power now {now:.0%}; seeds needed at {n_now:.0f} "
            f"{_cases(n_now)} per group: {_count(needed[0])} [{_count(needed[1])}, {_count(needed[2])}]; "
            f"cases per group needed at {s_now} seeds: {by_cases}")


def _cases(n: float) -> str:
    return "case" if round(n) == 1 else "cases"


def _count(n: int | None) -> str:
    return "more than 1,000" if n is None else f"{n:,}"


def _num(x: float) -> str:
    return "∞" if math.isinf(x) else f"{x:.2e}"
