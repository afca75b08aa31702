"""The G table as data (the paper's Table 3): i.i.d. score and G per scenario for every configuration-method, per task,
plus the Avg. column; significance marks from the ``significance`` view; the best value per column.

The one builder of the table, for the terminal and the Markdown / HTML reports alike. Every value, its
partial flag and whether it is the best of its column are rows of the ``table3`` view (means over
replicates as ``g_summary`` defines them; the IID baseline's scenario columns show its G_standard, the
reference every other row is tested against); this module only places them. A cell is marked only when
every replicate's test is current and significant in the same direction.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from beluga_core.analysis.replicates.intervals import HIERARCHICAL_MIN_SEEDS, SEED_T_WHY, t_interval
from beluga_core.analysis.report.report_data import ReportData
from beluga_core.core.constants import BASELINE, pair_order, scenario_order

IID = "i.i.d."
AVG = "Avg."

Pair = tuple[str, str]


# What the † beside a held-out scenario's figure says, in every report format.
PARTIAL_NOTE = ("a held-out scenario with fewer T_test cases than its seen scenario: folds still missing or failed, "
                "or not every group held out (`--tiny`, `[sizes] groups_per_level`, `only:` scenarios).")

@dataclass(frozen=True)
class Column:
    task: str | None        # None for Avg.
    scenario: str           # IID, a scenario name, or AVG
    cases_of: str | None = None   # the seen scenario on a crossing level's cases, beside that level's column

    @property
    def name(self) -> str:
        """The scenario as headers show it: 'seen (target cases)' for the seen scenario on a crossing level's cases."""
        return f"{self.scenario} ({self.cases_of} cases)" if self.cases_of else self.scenario

    @property
    def label(self) -> str:
        return self.scenario if self.scenario in (IID, AVG) else f"G {self.name}"

    @property
    def is_g(self) -> bool:
        return self.scenario not in (IID, AVG)


@dataclass
class Cell:
    value: float | None
    mark: str | None = None        # 'better' / 'worse'
    bold: bool = False             # the best value of its column
    partial: bool = False          # a held-out scenario with fewer cases than its seen scenario (PARTIAL_NOTE)
    s_suite: float | None = None   # G cells: the s_T it combines with the i.i.d. score
    shown_from: str | None = None  # G cells showing another scenario's values (the IID baseline: standard)
    pm: float | None = None        # half the width of its 95 % interval (replicate_summary's default kind)
    n_seeds: int = 0               # the seeds its value is the mean of (0: no interval stored)
    s_pm: float | None = None      # the same for s_suite


@dataclass
class GTable:
    tasks: list[str]
    columns: list[Column]
    rows: list[Pair]
    cells: dict[tuple[Pair, Column], Cell] = field(default_factory=dict)
    significance_status: dict[str, int] = field(default_factory=dict)   # current / stale / missing → rows
    has_significance: bool = False      # the store holds significance tests (`beluga analyze` ran)
    n_seeds: int = 0                    # the most seeds of any cell (≥ 2: marks and ± are over seeds)

    def cell(self, row: Pair, col: Column) -> Cell:
        return self.cells.get((row, col), Cell(None))

    def task_columns(self, task: str) -> list[Column]:
        return [c for c in self.columns if c.task == task]

    @property
    def avg_column(self) -> Column | None:
        return next((c for c in self.columns if c.scenario == AVG), None)


def agreed(marks: list[str | None], expected: int = 0) -> str | None:
    """The common mark of a cell's replicates; None unless every replicate (at least ``expected``) agrees."""
    if not marks or len(marks) < expected or any(m != marks[0] for m in marks):
        return None
    return marks[0]


def _column(row: dict[str, Any]) -> Column:
    kind = row["kind"]
    if kind == "iid":
        return Column(row["task"], IID)
    if kind == "avg":
        return Column(None, AVG)
    if kind == "cases":
        return Column(row["task"], "seen", cases_of=row["scenario"])
    return Column(row["task"], row["scenario"])


def crossing_notes(table: GTable) -> list[str]:
    """What a crossing level's column compares, for every report's legend (docs/method.md, "Scenarios and folds")."""
    levels = sorted({c.cases_of for c in table.columns if c.cases_of})
    pm = ("; both without ±: the stored intervals are over every case" if any(c.pm is not None for c in
                                                                          table.cells.values()) else "")
    return [f"{level}: a crossing level, whose scenario scores only the cases with a group at {level}. In its column "
            f"the IID baseline's row (its standard scenario) is on those cases too, and 'seen ({level} cases)' is "
            f"every configuration-method's seen scenario on them{pm}. The figures set side by side are on the same "
            "cases, as are the test and the interval against the baseline." for level in levels]


def build_g_table(data: ReportData) -> GTable:
    rows = data.table3
    tasks = sorted({r["task"] for r in rows if r["task"] is not None})
    pairs = pair_order({(r["config"], r["method"]) for r in rows})
    columns = []
    for task in tasks:
        scenarios = scenario_order({r["scenario"] for r in rows if r["kind"] == "g" and r["task"] == task})
        crossing = {r["scenario"] for r in rows if r["kind"] == "cases" and r["task"] == task}
        columns += [Column(task, IID), *[c for s in scenarios for c in
                                         (Column(task, s), *([Column(task, "seen", s)] if s in crossing else []))]]
    if any(r["kind"] == "avg" for r in rows):
        columns.append(Column(None, AVG))
    table = GTable(tasks, columns, pairs, has_significance=data.n_tests > 0)
    marks = significance_marks(data.significance)
    avg_over_seeds = avg_seed_marks(data.significance)
    own, diff = replicate_cells(data.replicates)
    for r in rows:
        pair, col = (r["config"], r["method"]), _column(r)
        # The baseline is the reference of every test; a column showing another scenario's value has no test.
        restricted = col.cases_of is not None or (r["kind"] == "g" and r["source_scenario"] != col.scenario
                                                  and any(c.cases_of == col.scenario and c.task == col.task
                                                          for c in columns))
        tested = pair != BASELINE and not (col.is_g and r["source_scenario"] != col.scenario) and not col.cases_of
        mark = agreed(marks.get((col.task, pair, col.scenario), []), r["n_replicates"]) if tested else None
        shown_from = r["source_scenario"] if col.is_g and r["source_scenario"] != col.scenario else None
        scenario = r["source_scenario"] if col.is_g else None
        task = col.task
        # A figure on a crossing level's cases only has no stored interval (those are over every case).
        interval = own.get((task, pair, scenario)) if task is not None and not restricted else None
        n_seeds = int(interval["n_seeds"]) if interval else 0
        if tested and n_seeds >= 2 and task is not None:
            # Seeds are replicates: the mark is the interval of the difference from the baseline (paired by seed).
            d = diff.get((task, pair, scenario))
            mark = None if d is None else {"A > B": "better", "A < B": "worse"}.get(d["ordering"])
        if tested and col.scenario == AVG and pair in avg_over_seeds:
            mark = avg_over_seeds[pair]
        s_interval = own.get((task, pair, f"s_T:{scenario}")) if task is not None and col.is_g and not restricted \
            else None
        table.n_seeds = max(table.n_seeds, n_seeds)
        table.cells[(pair, col)] = Cell(r["value"], mark, bool(r["best"]), bool(r["partial"]), r["s_suite"],
                                        shown_from, half_width(interval), n_seeds, half_width(s_interval))
    _agree_with_the_baseline(table)
    for r in data.significance or []:
        table.significance_status[r["status"]] = table.significance_status.get(r["status"], 0) + 1
    return table


def _agree_with_the_baseline(table: GTable) -> None:
    """Keep a mark only where the figures set side by side bear it out: its direction is the sign of the cell's value
    minus the IID baseline's in the same column. They do wherever the test's cases are the column's (every complete
    scenario, crossing levels included); a held-out scenario with folds missing (†) is tested on the cases it has,
    while its column's baseline figure covers all of the level's, and a mark the two figures contradict is dropped."""
    for (_, col), cell in table.cells.items():
        base = table.cells.get((BASELINE, col))
        if cell.mark is None or base is None or base.value is None or cell.value is None:
            continue
        if (cell.value > base.value) != (cell.mark == "better") or cell.value == base.value:
            cell.mark = None


ReplicateKey = tuple[str, Pair, str | None]


def half_width(row: dict[str, Any] | None) -> float | None:
    """Half the width of a replicate_summary row's default interval."""
    if row is None or row["lo"] is None or row["hi"] is None:
        return None
    return float(row["hi"] - row["lo"]) / 2


def replicate_cells(rows: list[dict[str, Any]]) -> tuple[dict[ReplicateKey, dict[str, Any]],
                                                          dict[ReplicateKey, dict[str, Any]]]:
    """The current intervals of G per (task, pair, scenario), of s_T per (task, pair, "s_T:" + scenario) and of
    s_iid per (task, pair, None), and the differences from the IID baseline likewise; a key some task holds for
    several suites or models is left out (Table 3 averages those, no one interval is theirs)."""
    own: dict[ReplicateKey, list[dict[str, Any]]] = defaultdict(list)
    diff: dict[ReplicateKey, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        if r["status"] != "current" or r["grp"] or r["statistic"] not in ("g", "s_iid", "s_suite"):
            continue
        if r["base_config"] is not None and (r["base_config"], r["base_method"]) != BASELINE:
            continue
        if r["statistic"] == "s_iid" and r["scenario"] not in ("seen", "standard"):
            continue   # the i.i.d. score of a configuration-method is its seen (else standard) model's
        scenario = None if r["statistic"] == "s_iid" else r["scenario"]
        key = (r["task"], (r["config"], r["method"]), scenario if r["statistic"] != "s_suite" else f"s_T:{scenario}")
        (own if r["base_config"] is None else diff)[key].append(r)

    def unique(d: dict[ReplicateKey, list[dict[str, Any]]]) -> dict[ReplicateKey, dict[str, Any]]:
        out = {}
        for k, v in d.items():
            seen = [x for x in v if x["scenario"] == "seen"] if k[2] is None else v
            chosen = seen or v
            if len({(x["suite"], x["model_name"]) for x in chosen}) == 1:
                out[k] = chosen[0]
        return out

    return unique(own), unique(diff)


def significance_marks(rows: list[dict[str, Any]] | None) -> dict[tuple[str | None, Pair, str], list[str | None]]:
    """(task or None, pair, IID / scenario / AVG) → the marks of its replicates (None where not significant),
    from rows of the ``significance`` view (one per live replicate, so an untested replicate counts as None)."""
    out: dict[tuple[str | None, Pair, str], list[str | None]] = defaultdict(list)
    if rows is None:
        return out
    iid_seen: set[tuple] = set()
    for r in rows:
        pair = (r["config"], r["method"])
        if r["scope"] == "replicate":
            out[(r["task"], pair, r["scenario"])].append(r["g_mark"])
            rep = (r["task"], pair, r["model_name"], r["seed"], r["split_seed"])
            if rep not in iid_seen:   # the same i.i.d. test repeats in every scenario row of a replicate
                iid_seen.add(rep)
                out[(r["task"], pair, IID)].append(r["iid_mark"])
        elif r["scenario"] is None:
            out[(None, pair, AVG)].append(r["g_mark"])
    return out


AVG_RULE = ("Avg. over two or more seeds: the seed-level t interval of its per-seed differences from the IID "
            "baseline (each seed against the baseline's same seed) excludes 0")


def avg_seed_marks(rows: list[dict[str, Any]] | None) -> dict[Pair, str | None]:
    """Pair → the Avg. column's mark where the pair has two or more seeds (AVG_RULE). The Avg. has no case-level
    interval (it pools tasks and scenarios), so, as for any cell with too few seeds for the hierarchical one, the
    seed-level t decides; every seed's own randomization test agreeing would call a difference whose seeds
    disagree in size by tens of points resolved. Pairs with one seed are absent (their tests decide)."""
    deltas: dict[Pair, list[float]] = defaultdict(list)
    for r in rows or []:
        if r["scope"] == "mean_over_tasks" and r["scenario"] is None and r["delta_g"] is not None:
            deltas[(r["config"], r["method"])].append(float(r["delta_g"]))
    out: dict[Pair, str | None] = {}
    for pair, values in deltas.items():
        if len(values) >= 2:
            iv = t_interval(values)
            out[pair] = None if iv.lo is None or iv.hi is None else (
                "better" if iv.lo > 0 else "worse" if iv.hi < 0 else None)
    return out


def _span(seeds: list[int]) -> str:
    return "–".join(map(str, sorted({seeds[0], seeds[-1]})))


def difference_rule(table: GTable) -> str:
    """What decides a ▲ / ▼ over seeds, for the legends: the difference's interval paired by seed, hierarchical
    from HIERARCHICAL_MIN_SEEDS seeds on, the seed-level t below (and why); the Avg. column's (AVG_RULE)."""
    seeds = [c.n_seeds for c in table.cells.values() if c.n_seeds >= 2]
    head = "the 95 % interval of the difference, paired by seed"
    if not seeds or min(seeds) >= HIERARCHICAL_MIN_SEEDS:
        rule = f"{head} (seeds, then cases), excludes 0"
    elif max(seeds) < HIERARCHICAL_MIN_SEEDS:
        rule = f"{head}, excludes 0: the seed-level t, since {SEED_T_WHY}"
    else:
        rule = (f"{head}, excludes 0: seeds, then cases, or the seed-level t with fewer than {HIERARCHICAL_MIN_SEEDS} "
                f"seeds, since {SEED_T_WHY}")
    return f"{rule}; {AVG_RULE}" if table.avg_column is not None else rule


FLAT_NOTE = ("Without ± over seeds: {cells}: their seeds gave the same value (to rounding), so no spread between "
             "training runs is measured: no interval, and no mark from one.")
AVG_PM_NOTE = ("Avg.: the mean of the G columns, without ± (no interval is stored for a mean over scenarios); its "
               "mark over seeds is the seed-level t interval of its per-seed differences.")


def missing_pm_notes(table: GTable) -> list[str]:
    """Why Table 3's figures over seeds without ± have none: the cells whose seeds agreed (named), and Avg."""
    names = [f"{config}/{method} {col.label}" + (f" ({col.task})" if len(table.tasks) > 1 else "")
             for ((config, method), col), c in table.cells.items()
             if c.n_seeds >= 2 and c.pm is None and c.value is not None]
    notes = [FLAT_NOTE.format(cells=", ".join(names))] if names else []
    if table.avg_column is not None and table.n_seeds >= 2:
        notes.append(AVG_PM_NOTE)
    return notes


def interval_notes(table: GTable) -> list[str]:
    """What the ± of Table 3 is (docs/method.md, "Replicates"): over seeds then cases, the seed-level t where there
    are too few seeds for that (and why), and, for one training run, that it is one draw."""
    seeds = sorted({c.n_seeds for c in table.cells.values() if c.pm is not None})
    if not seeds:
        return []
    if seeds[-1] >= 2:
        hier = [s for s in seeds if s >= HIERARCHICAL_MIN_SEEDS]
        t_only = [s for s in seeds if 2 <= s < HIERARCHICAL_MIN_SEEDS]
        notes = []
        if hier:
            notes.append(f"±: half the 95 % interval over {_span(hier)} seeds, then the cases within them (the mean "
                         "over seeds is shown).")
        if t_only:
            notes.append(f"±{' with ' + _span(t_only) + ' seeds' if hier else ''}: half the seed-level t interval "
                         f"over {_span(t_only)} seeds (the mean over seeds is shown), which also decides the marks "
                         f"against the IID baseline: {SEED_T_WHY}.")
        return notes
    return ["±: half the 95 % interval of one training run: case variation only. One seed is one draw: its "
            "orderings can flip with another seed (`seeds = [1, 2, 3]` in the config trains every model three "
            "times)."]
