"""``beluga power STORE --effect D``: how many seeds and T_test cases per group detect a difference of D."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path

import typer
from rich.console import Console

from beluga_core.analysis.replicates.intervals import Replicates
from beluga_core.analysis.replicates.power import MAX_CASES, MAX_SEEDS, Components, GComponents, VarianceFn
from beluga_core.core.errors import BelugaError, did_you_mean

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
    (paired by seed, then by case). σ²_seed from S seeds has S − 1 degrees of freedom: the seeds needed are also
    given at the ends of its 95 % interval."""
    from beluga_core.analysis.replicates.seed_rows import Cell, cell_digests, load_cells
    from beluga_core.analysis.report.report_data import pick_variant, store_variants
    from beluga_core.store.opened import open_handle

    if statistic not in STATISTICS:
        raise BelugaError(f"--statistic must be one of {', '.join(STATISTICS)}, got {statistic!r}")
    if statistic == "pass_rate" and group is None:
        raise BelugaError("--statistic pass_rate needs --group GROUP: the scoring group whose pass rate is compared")
    if statistic != "pass_rate" and group is not None:
        raise BelugaError(f"--group is for --statistic pass_rate only (--statistic {statistic} averages every group)")
    if effect == 0:
        raise BelugaError("--effect must not be 0")
    if abs(effect) > 1:
        hint = f"; for {effect:g} points write {effect / 100:g}" if abs(effect) <= 100 else ""
        raise BelugaError(f"--effect {effect:g}: the difference to detect is a fraction (0.05 = 5 points), so at most "
                          f"1 in size{hint}")
    wanted = [_cell_spec(x) for x in a]
    base = _cell_spec(b)
    with open_handle(store) as opened:
        con = opened.con
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
        known = {(c.config, c.method, c.scenario) for c in digests}
        for option, text, spec in [*(("--a", x, w) for x, w in zip(a, wanted, strict=True)), ("--b", b, base)]:
            if spec not in known:
                names = sorted(f"{c}/{m}@{s}" for c, m, s in known)
                hint = did_you_mean("/".join(spec[:2]) + "@" + spec[2], names) or f"; its cells: {', '.join(names)}"
                raise BelugaError(f"{option} {text}: no such cell in this store{hint}", source=store)
        cells = load_cells(con, {c for p in pairs for c in p})
        sizes: dict[str | None, dict[str, int]] = {}
        for suite, grp, n in con.execute("SELECT suite, scoring_group, count(*) FROM cases GROUP BY ALL").fetchall():
            sizes.setdefault(suite, {})[grp] = n
    pairs = [(x, y) for x, y in pairs if x in cells and y in cells and cells[x].n_seeds >= 2]
    if group is not None and pairs and not any(group in cells[x].groups for x, _ in pairs):
        groups = sorted({str(g) for x, _ in pairs for g in cells[x].groups})
        raise BelugaError(f"--group {group}: no such scoring group in the compared cells"
                          + (did_you_mean(group, groups) or f"; their groups: {', '.join(groups)}"), source=store)
    if not pairs:
        raise BelugaError(f"no cell with two or more seeds to compare with {b}"
                          + (f" among {', '.join(a)}" if a else "") + ": the variance between training runs needs "
                          "several seeds (`seeds = [1, 2, 3]` in the run's config trains every model three times)",
                          source=store)
    console = Console(highlight=False)
    console.print(f"power {target:.0%} at α = {alpha} (two-sided), effect {100 * effect:+.1f} points of {statistic}"
                  + (f" ({group})" if group else "") + f", against {b}:", soft_wrap=True, markup=False)
    for x, y in pairs:
        label = f"{x.config}/{x.method}@{x.scenario} − {y.config}/{y.method}@{y.scenario} ({x.task})"
        try:
            line = power_line(cells[x], cells[y], statistic, group, effect, target, alpha, sizes.get(x.suite))
        except ValueError as exc:
            line = str(exc)
        # Not markup: rich reads "[more than 1,000, …]" as a style tag and drops it.
        console.print(f"  {label}: {line}", soft_wrap=True, markup=False)


def power_line(ra: Replicates, rb: Replicates, statistic: str, group: str | None, effect: float, target: float,
               alpha: float, suite_sizes: Mapping[str, int] | None = None) -> str:
    """What ``beluga power`` says of one comparison: observed difference, components, power now, sizes needed.
    ``suite_sizes``: the suite's cases per scoring group, in all (default: the cases the cells have outcomes for)."""
    from beluga_core.analysis.replicates.intervals import HIERARCHICAL_MIN_SEEDS, SEED_T_WHY
    from beluga_core.analysis.replicates.power import (
        cases_needed,
        g_components,
        group_components,
        power,
        power_bound_over_cases,
        power_bound_over_seeds,
        seeds_needed,
        suite_components,
    )

    comp: Components | GComponents
    if statistic == "pass_rate" and group:
        if group not in ra.groups:
            raise ValueError(f"no group {group!r} here (its groups: {', '.join(map(str, ra.groups))})")
        comp = group_components(ra, rb, group)
    elif statistic == "G":
        # σ²_seed of ΔG itself, on the seeds and cases both cells have (a crossing level's scenario scores only the
        # cases with a group there, and its G is compared with the baseline's on those).
        comp = g_components(ra, rb)
    else:
        comp = suite_components(ra, rb)
    observed = comp.observed
    # The statistics whose per-seed differences are all equal: σ²_seed is not estimable from them. Their σ²_seed is
    # taken as 0 below, the least it can be, so that what is printed is a bound (power at most, cases at least).
    flat = [] if comp.seed_estimable else [{"pass_rate": "the pass rate", "G": "G"}.get(statistic, "s_T")]
    if flat:
        comp = comp.with_seed(0.0)

    def make(c: Components | GComponents) -> VarianceFn:
        return c.variance

    variance = make(comp)
    s_now, n_now = comp.seeds, comp.cases
    at_now = f"{n_now:.0f} {_cases(n_now)} per group"
    total, seed_part = variance(s_now, n_now)
    if total == 0:
        return (f"observed {100 * observed:+.1f} points over {s_now} seeds × {at_now}: "
                "no variation between the seeds or the cases (every seed gives the same outcomes on every case), "
                "so no power or size can be estimated from this store; run with more cases per group")
    now = power(total, seed_part, s_now, effect, alpha)
    # Below HIERARCHICAL_MIN_SEEDS the verdicts (orderings, ▲ / ▼) are the seed-level t's: say so beside this test's.
    below = (f"; at {s_now} seeds beluga's verdicts are the seed-level t's, not this test's: {SEED_T_WHY} (the seeds "
             f"needed count from {HIERARCHICAL_MIN_SEEDS})" if s_now < HIERARCHICAL_MIN_SEEDS else "")
    fixed = " or from s_iid on the fixed D_test" if statistic == "G" else ""
    head = (f"observed {100 * observed:+.1f} points over {s_now} seeds × {at_now} ({comp.groups} group(s)); "
            "components σ²_seed" + (" of ΔG " if isinstance(comp, GComponents) else " "))
    if isinstance(comp, GComponents):
        rest = (f"of Δs_T σ²_case {comp.suite.case:.2e}, σ²_rest {comp.suite.rest:.2e}, of Δs_iid over D_test's "
                f"{comp.iid.cases:.0f} examples σ²_case {comp.iid.case:.2e}, σ²_rest {comp.iid.rest:.2e} (ΔG = "
                f"{comp.ga:.2f} Δs_T + {comp.gb:.2f} Δs_iid)")
    else:
        rest = f"σ²_case {comp.case:.2e}, σ²_rest {comp.rest:.2e}"
    groups = _group_sizes(ra, statistic, group, suite_sizes)

    def by_cases(at_least: bool) -> str:
        bound = power_bound_over_cases(variance, s_now, effect, alpha)
        if bound < target:
            return (f"unreachable: with any number of cases per group the power stays at most "
                    f"{_at_most(bound, target)} (more cases do not shrink the part of the variance from the training "
                    f"runs{fixed})")
        n = cases_needed(variance, s_now, effect, target, alpha)
        if n is None:
            return f"more than {MAX_CASES:,} (the most searched)"
        return ("at least " if at_least else "") + _fits(n, *groups)

    if flat:
        return (head + f"not estimable from {s_now} seeds (the per-seed differences of {' and '.join(flat)} are all "
                f"equal), {rest}; power now at most {now:.0%} (σ²_seed taken as 0, the least it can be); seeds "
                f"needed: none estimated until the seeds differ: run another seed; cases per group needed at "
                f"{s_now} seeds: {by_cases(at_least=True)}" + below)
    lo, hi = comp.seed_interval()
    seeds_bound = power_bound_over_seeds(variance, n_now, effect, alpha)
    if seeds_bound < target:
        by_seeds = (f"unreachable: with any number of seeds the power stays at most {_at_most(seeds_bound, target)} "
                    f"(more seeds do not shrink the part of the variance from the cases{fixed})")
    else:
        needed = [seeds_needed(make(comp.with_seed(sigma)), n_now, effect, target, alpha)
                  for sigma in (comp.seed, lo, hi)]
        by_seeds = f"{_count(needed[0])} [{_count(needed[1])}, {_count(needed[2])}]"
    return (head + f"{comp.seed:.2e} [95 %: {lo:.2e}, {_num(hi)}], {rest}; power now {now:.0%}; seeds needed at "
            f"{at_now}: {by_seeds}; cases per group needed at {s_now} seeds: {by_cases(at_least=False)}" + below)


def _group_sizes(ra: Replicates, statistic: str, group: str | None,
                 suite_sizes: Mapping[str, int] | None) -> tuple[list[int], list[int]]:
    """(cases in all, cases in T_test here) of each group the statistic averages."""
    names = [group] if statistic == "pass_rate" and group else \
        [name for g, name in enumerate(ra.groups) if ra.scored[g]]
    here = {name: int((ra.case_group == ra.groups.index(name)).sum()) for name in names if name in ra.groups}
    in_all = [(suite_sizes or {}).get(name, n) for name, n in here.items()]
    return in_all, list(here.values())


def _fits(n: int, in_all: list[int], here: list[int]) -> str:
    """``n`` cases per group, and what the suite's groups say of it: the answer assumes n in every group."""
    if not in_all:
        return f"{n:,}"
    if n > max(in_all):
        return (f"{n:,}, which cannot be reached with this suite: its groups hold {_span(in_all)} cases in all "
                f"({_span(here)} in T_test here)")
    notes = []
    if n > min(in_all):
        notes.append(f"more than some of the suite's groups hold: {_span(in_all)} cases in all")
    # Reachable with this suite, but T_test here is smaller (its share of the split, or [sizes]' caps).
    if n > max(here):
        notes.append(f"more than T_test holds here, {_span(here)} per group")
    elif n > min(here):
        notes.append(f"more than some groups hold in T_test here, {_span(here)} per group")
    return f"{n:,}" + (f" ({'; '.join(notes)})" if notes else "")


def _span(sizes: list[int]) -> str:
    lo, hi = min(sizes), max(sizes)
    return f"{lo:,}" if lo == hi else f"{lo:,}–{hi:,}"


def _at_most(p: float, target: float) -> str:
    """A power bound below ``target`` as a percentage rounded up, so that "at most" stays true, with as many decimals
    as it takes to stay below the target (79.6 %, not 80 %, against 80 %)."""
    for decimals in range(4):
        scale = 10 ** (2 + decimals)
        up = math.ceil(scale * p - 1e-9) / scale
        if up < target:
            return f"{100 * up:.{decimals}f}%"
    return f"just below {target:.0%}"


def _cases(n: float) -> str:
    return "case" if round(n) == 1 else "cases"


def _count(n: int | None) -> str:
    return f"more than {MAX_SEEDS:,}" if n is None else f"{n:,}"


def _num(x: float) -> str:
    return "∞" if math.isinf(x) else f"{x:.2e}"
