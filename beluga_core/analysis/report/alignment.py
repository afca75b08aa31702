"""The report's capability alignment: per eval group, its pass rate on the eval suite's cases beside the pass
rate on the training suite's own cases of the group it maps to, per model, with 95 % bootstrap intervals.

The rates are the ``cross_alignment`` view's; the intervals resample the ``unit`` of ``cross_alignment_cases``
(the source sentence of a generated case, else the case): cases made from one corpus sentence by a template
are not independent, and resampling them one by one would make the interval too narrow.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from beluga_core.analysis.regression.flips import rng_for
from beluga_core.core.constants import pair_order, scenario_order

ROUNDS = 2000
SIDES = ("template", "eval")
ALIGNMENT_NOTE = ("Per eval-suite group and the training-suite group it maps to (the suite header's or the config's "
                  "maps_to), each model's pass rate on the training suite's own T_test cases of that group "
                  "(templates) beside its pass rate on the eval suite's cases of the eval group (eval). A held-out "
                  "fold never trained on either side. 95 % intervals: 2,000 seeded bootstrap rounds resampling "
                  "source sentences (the cases one sentence yields stay together), else cases; replicates pooled.")

Model = tuple[str, str, str]          # config, method, scenario
Row = tuple[str, str]                 # eval group, mapped group


@dataclass
class AlignmentCell:
    rate: float | None
    lo: float | None
    hi: float | None
    n: int                            # evaluable cases
    units: int                        # what the bootstrap resampled


@dataclass
class AlignmentTable:
    task: str
    suite: str
    eval_suite: str
    level: str
    models: list[Model] = field(default_factory=list)
    rows: list[Row] = field(default_factory=list)
    cells: dict[tuple[Row, Model, str], AlignmentCell] = field(default_factory=dict)

    @property
    def title(self) -> str:
        return f"{self.task}: {self.eval_suite} against {self.suite} by {self.level}"

    def cell(self, row: Row, model: Model, side: str) -> AlignmentCell:
        return self.cells.get((row, model, side), AlignmentCell(None, None, None, 0, 0))


def unit_interval(passes: np.ndarray, totals: np.ndarray, rng: np.random.Generator,
                  rounds: int = ROUNDS) -> tuple[float, float]:
    """95 % percentile interval of sum(passes) / sum(totals) when the units (their pass and evaluable counts) are
    resampled with replacement."""
    keep = totals > 0
    passes, totals = passes[keep], totals[keep]
    if len(totals) == 0:
        return float("nan"), float("nan")
    idx = rng.integers(0, len(totals), size=(rounds, len(totals)))
    rates = passes[idx].sum(axis=1) / totals[idx].sum(axis=1)
    lo, hi = np.percentile(rates, [2.5, 97.5])
    return float(lo), float(hi)


def build_alignment(rows: list[dict[str, Any]]) -> list[AlignmentTable]:
    """Tables from per-unit rows (task, suite, config, method, scenario, eval_suite, mapped_level, eval_group,
    mapped_group, side, unit, n_pass, n_eval) — ``cross_alignment_cases`` counted per unit."""
    units: dict[tuple[Any, ...], list[tuple[int, int]]] = defaultdict(list)
    for r in rows:
        key = (r["task"], r["suite"], r["eval_suite"], r["mapped_level"], (r["eval_group"], r["mapped_group"]),
               (r["config"], r["method"], r["scenario"]), r["side"])
        units[key].append((int(r["n_pass"]), int(r["n_eval"])))
    tables: dict[tuple[str, str, str, str], AlignmentTable] = {}
    for (task, suite, eval_suite, level, row, model, side), counts in sorted(units.items()):
        table = tables.setdefault((task, suite, eval_suite, level), AlignmentTable(task, suite, eval_suite, level))
        passes = np.array([c[0] for c in counts], dtype=float)
        totals = np.array([c[1] for c in counts], dtype=float)
        n = int(totals.sum())
        rate = float(passes.sum() / n) if n else None
        lo, hi = unit_interval(passes, totals, rng_for(0, task, suite, eval_suite, level, *row, *model, side)) \
            if n else (None, None)
        table.cells[(row, model, side)] = AlignmentCell(rate, lo, hi, n, int((totals > 0).sum()))
    for table in tables.values():
        present = {m for (_, m, _) in table.cells}
        table.models = [(c, m, s) for c, m in pair_order({(c, m) for c, m, _ in present})
                        for s in scenario_order({s for c2, m2, s in present if (c2, m2) == (c, m)})]
        table.rows = sorted({row for (row, _, _) in table.cells})
    return [tables[k] for k in sorted(tables)]


def interval_text(c: AlignmentCell) -> str:
    if c.rate is None:
        return "—"
    return f"{100 * c.rate:.1f} [{100 * (c.lo or 0):.1f}, {100 * (c.hi or 0):.1f}]"
