"""Cross-suite evaluation and only:LEVEL matrices as report data: layout only, every value a view's column.

A cross table is Table 3 for an eval suite: per configuration-method, G (and s) on the eval suite in each
scenario column — seen on every evaluated eval case, a held-out level on the eval cases mapped to the held-out
groups (``cross_summary``, basis = that level). The IID baseline's row shows its standard scenario on the
same cases as each column: the reference the column's significance test compares with (``cross_significance``).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from beluga_core.analysis.report.g_table_data import Pair, agreed
from beluga_core.core.constants import BASELINE, FIXED_SCENARIOS, STANDARD, pair_order, parse_only, scenario_order


@dataclass
class CrossCell:
    g: float | None
    s: float | None
    mark: str | None = None
    shown_from: str | None = None        # the baseline: its standard scenario on this column's cases
    pm: float | None = None              # G: half its 95 % interval over seeds (replicate_summary's default kind)


@dataclass
class CrossTable:
    task: str
    suite: str
    eval_suite: str
    columns: list[str]                   # scenarios (standard only when there is nothing else)
    rows: list[Pair]
    cells: dict[tuple[Pair, str], CrossCell] = field(default_factory=dict)
    # (pair, column) → eval group → (pass rate, the training groups its cases map to at the column's level)
    groups: dict[tuple[Pair, str], dict[str, tuple[float | None, str | None]]] = field(default_factory=dict)
    eval_groups: list[str] = field(default_factory=list)

    def cell(self, row: Pair, col: str) -> CrossCell:
        return self.cells.get((row, col), CrossCell(None, None))

    @property
    def title(self) -> str:
        return f"{self.task} ({self.suite}) evaluated on {self.eval_suite}"


def basis(column: str) -> str | None:
    """The mapped level a column's values are computed on: the held-out level itself, else every eval case."""
    return None if column in FIXED_SCENARIOS or parse_only(column) is not None else column


def build_cross_tables(data: Any) -> list[CrossTable]:
    """One CrossTable per (task, training suite, eval suite) of ``data.cross_summary``."""
    summary: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in data.cross_summary:
        summary[(r["task"], r["suite"], r["eval_suite"])].append(r)
    marks: dict[tuple[Any, ...], list[str | None]] = defaultdict(list)
    for r in data.cross_significance:
        marks[(r["task"], r["suite"], r["eval_suite"], r["config"], r["method"], r["scenario"])].append(r["g_mark"])
    rates: dict[tuple[Any, ...], dict[str, tuple[float | None, str | None]]] = defaultdict(dict)
    for r in data.cross_pass_rates:
        key = (r["task"], r["suite"], r["eval_suite"], r["config"], r["method"], r["scenario"], r["mapped_level"])
        rates[key][r["eval_group"]] = (r["pass_rate"], r["mapped_groups"])
    over_seeds = {(r["task"], r["suite"], r["grp"], r["config"], r["method"], r["scenario"]): r
                  for r in data.replicates if r["statistic"] == "g_cross" and r["status"] == "current"
                  and r["n_seeds"] >= 2}
    out = []
    for (task, suite, eval_suite), rows in sorted(summary.items()):
        scenarios = {r["scenario"] for r in rows if parse_only(r["scenario"]) is None}
        columns = [s for s in scenario_order(scenarios) if s != STANDARD] or [STANDARD]
        by_key = {(r["config"], r["method"], r["scenario"], r["mapped_level"]): r for r in rows}
        table = CrossTable(task, suite, eval_suite, columns, pair_order({(r["config"], r["method"]) for r in rows}))
        for pair in table.rows:
            for col in columns:
                only_standard = not any((*pair, s, basis(s)) in by_key for s in columns if s != STANDARD)
                source = STANDARD if pair == BASELINE or only_standard else col
                r = by_key.get((*pair, source, basis(col)))
                if r is None:
                    continue
                tested = source == col and pair != BASELINE
                mark = agreed(marks[(task, suite, eval_suite, *pair, col)], r["n_replicates"]) if tested else None
                seeds = over_seeds.get((task, suite, f"{eval_suite}|{basis(col) or ''}", *pair, source))
                pm = None if seeds is None or seeds["lo"] is None else (seeds["hi"] - seeds["lo"]) / 2
                table.cells[(pair, col)] = CrossCell(r["g"], r["s_cross"], mark,
                                                     source if source != col else None, pm)
                table.groups[(pair, col)] = rates.get((task, suite, eval_suite, *pair, source, basis(col)), {})
        table.eval_groups = sorted({g for v in table.groups.values() for g in v})
        out.append(table)
    return out


@dataclass
class OnlyMatrix:
    """Pass rates of the models trained on one group of ``level`` alone (rows) on each group (columns)."""

    task: str
    suite: str
    config: str
    method: str
    level: str
    trained: list[str]        # rows: the groups a model was trained on alone
    groups: list[str]         # columns: the groups evaluated
    values: np.ndarray        # (trained group, eval group), fractions; NaN where none evaluable

    @property
    def title(self) -> str:
        return f"{self.task} ({self.suite}) {self.config}/{self.method}: trained on one {self.level} alone"


def build_only_matrices(data: Any) -> list[OnlyMatrix]:
    cells: dict[tuple[str, str, str, str, str], dict[tuple[str, str], float | None]] = defaultdict(dict)
    for r in data.only_matrix_summary:
        if r["eval_group"] is None:   # cases in no group of a crossing level: no column of this matrix
            continue
        cells[(r["task"], r["suite"], r["config"], r["method"], r["level"])][(r["trained_group"], r["eval_group"])] = \
            r["pass_rate"]
    out = []
    for key, values in sorted(cells.items()):
        trained = sorted({t for t, _ in values})
        groups = sorted({e for _, e in values})
        matrix = np.full((len(trained), len(groups)), np.nan)
        for (t, e), v in values.items():
            if v is not None:
                matrix[trained.index(t), groups.index(e)] = v
        out.append(OnlyMatrix(*key, trained, groups, matrix))
    return out
