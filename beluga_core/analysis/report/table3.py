"""The paper's Table 3 as data: i.i.d. score and G per scenario for every configuration-method, per task,
plus the Avg. column; significance marks from the ``significance`` view; the best value per column.

Values are means over replicates (seeds × split seeds, and model names within a task) of the ``g_scores``
view. The IID baseline's suite columns show its G_standard (the reference every other row is tested
against). A cell is marked only when every replicate's test is current and significant in the same
direction. A held-out scenario whose folds are not all done yet is flagged *partial*.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from beluga_core.analysis.report.data import BASELINE, ReportData, pair_order, scenario_order

IID = "i.i.d."
AVG = "Avg."

Pair = tuple[str, str]


@dataclass(frozen=True)
class Column:
    task: str | None        # None for Avg.
    scenario: str           # IID, a scenario name, or AVG

    @property
    def label(self) -> str:
        return self.scenario if self.scenario in (IID, AVG) else f"G {self.scenario}"


@dataclass
class Cell:
    value: float | None
    mark: str | None = None        # 'better' / 'worse'
    bold: bool = False
    partial: bool = False


@dataclass
class Table3:
    tasks: list[str]
    columns: list[Column]
    rows: list[Pair]
    cells: dict[tuple[Pair, Column], Cell] = field(default_factory=dict)
    significance_status: dict[str, int] = field(default_factory=dict)   # current / stale / missing → rows
    has_significance: bool = False

    def cell(self, row: Pair, col: Column) -> Cell:
        return self.cells.get((row, col), Cell(None))


def _mean(values: list[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return sum(vals) / len(vals) if vals else None


def agreed(marks: list[str | None], expected: int = 0) -> str | None:
    """The common mark of a cell's replicates; None unless every replicate (at least ``expected``) agrees."""
    if not marks or len(marks) < expected or any(m != marks[0] for m in marks):
        return None
    return marks[0]


def build_table3(data: ReportData) -> Table3:
    g_rows = data.g_scores
    tasks = sorted({r["task"] for r in g_rows})
    pairs = pair_order({(r["config"], r["method"]) for r in g_rows})
    by_cell: dict[tuple[str, Pair, str], list[dict[str, Any]]] = defaultdict(list)
    for r in g_rows:
        by_cell[(r["task"], (r["config"], r["method"]), r["scenario"])].append(r)
    scenarios = {t: scenario_order({r["scenario"] for r in g_rows if r["task"] == t} - {"standard"}) or ["standard"]
                 for t in tasks}
    columns = [Column(t, s) for t in tasks for s in [IID, *scenarios[t]]]
    if tasks:
        columns.append(Column(None, AVG))
    table = Table3(tasks, columns, pairs, has_significance=data.significance is not None)
    seen_cases = {(r["task"], r["suite"], r["model_name"], r["config"], r["method"], r["seed"], r["split_seed"]):
                  r["n_cases"] for r in g_rows if r["scenario"] in ("seen", "standard")}
    marks = significance_marks(data.significance)

    for pair in pairs:
        per_task_avg = []
        for task in tasks:
            own = {sc: rs for (t, p, sc), rs in by_cell.items() if t == task and p == pair}
            if not own:
                continue
            iid = _mean([_mean([r["s_iid"] for r in rs]) for rs in own.values()])
            table.cells[(pair, Column(task, IID))] = Cell(iid, agreed(marks.get((task, pair, IID), []),
                                                                       _n_reps(own)))
            g_values = []
            for sc in scenarios[task]:
                source = "standard" if pair == BASELINE else sc
                rs = own.get(source, [])
                if not rs:
                    continue
                value = _mean([r["g"] for r in rs])
                partial = source not in ("seen", "standard") and any(
                    r["n_cases"] < seen_cases.get((r["task"], r["suite"], r["model_name"], r["config"], r["method"],
                                                   r["seed"], r["split_seed"]), 0) for r in rs)
                mark = None if pair == BASELINE else agreed(marks.get((task, pair, sc), []), len(rs))
                table.cells[(pair, Column(task, sc))] = Cell(value, mark, partial=partial)
                g_values.append(value)
            if pair == BASELINE and "standard" in own:
                g_values = [_mean([r["g"] for r in own["standard"]])]
            if g_values and all(v is not None for v in g_values):
                per_task_avg.append(sum(g_values) / len(g_values))
        if per_task_avg:
            n_reps = len({(r["seed"], r["split_seed"]) for r in g_rows if (r["config"], r["method"]) == pair})
            table.cells[(pair, Column(None, AVG))] = Cell(sum(per_task_avg) / len(per_task_avg),
                                                          agreed(marks.get((None, pair, AVG), []), n_reps))
    for col in columns:
        values = [table.cells[(p, col)].value for p in pairs if (p, col) in table.cells]
        best = max((v for v in values if v is not None), default=None)
        for p in pairs:
            cell = table.cells.get((p, col))
            if cell is not None and best is not None and cell.value is not None and abs(cell.value - best) < 1e-12:
                cell.bold = True
    if data.significance is not None:
        for r in data.significance:
            table.significance_status[r["status"]] = table.significance_status.get(r["status"], 0) + 1
    return table


def _n_reps(own: dict[str, list[dict[str, Any]]]) -> int:
    return len({(r["model_name"], r["seed"], r["split_seed"]) for rs in own.values() for r in rs})


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
