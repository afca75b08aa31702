"""Cells of a store as ``Replicates``: per seed, the outcomes the views aggregate, read in a few queries.

A cell is a scenario key without its seed (``Cell``); its seeds are the values of ``seed`` among the store's done
models of that key. Its T_test cases are those any of its seeds was scored on (a seed that lacks one, a failed
fold, has it as not evaluable); its D_test examples those of the models its s_iid comes from (``iid_scores``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

import duckdb
import numpy as np

from beluga_core.analysis.replicates.intervals import IidParts, Replicates
from beluga_core.evaluation.metric_forms import MEAN, MetricForm, model_parts, stored_form
from beluga_core.store.connection import expand_key_comparisons

CELL_COLUMNS = ("task", "suite", "model_name", "config", "method", "variant", "scenario", "split_seed")


@dataclass(frozen=True, order=True)
class Cell:
    task: str
    suite: str | None
    model_name: str | None
    config: str
    method: str
    variant: str
    scenario: str
    split_seed: int | None

    def other(self, config: str, method: str, scenario: str) -> Cell:
        return Cell(self.task, self.suite, self.model_name, config, method, self.variant, scenario, self.split_seed)

    @property
    def unit(self) -> tuple[str, str | None, str | None, str, int | None]:
        """What the cells compared with one another share: task, suite, model, variant, split."""
        return (self.task, self.suite, self.model_name, self.variant, self.split_seed)


def _key(row: tuple[object, ...]) -> Cell:
    return Cell(*row[:8])  # type: ignore[arg-type]


def cell_digests(con: duckdb.DuckDBPyConnection) -> dict[Cell, str]:
    """Every cell with its input digest (view ``replicate_inputs``)."""
    return {_key(r): str(r[8]) for r in con.execute(
        f"SELECT {', '.join(CELL_COLUMNS)}, digest FROM replicate_inputs").fetchall()}


# Where a cell's per-case outcomes come from: (group, outcome, excluded, part) per model and case. ``part`` splits one
# cell into several Replicates (an eval suite and basis of cross-suite scores; '' for the others).
SOURCES = {
    # The T_test outcomes (s_T, pass rates, G): excluded groups are left out of s_T.
    "outcomes": """SELECT o.model_id, o.case_id, c.scoring_group AS grp, o.outcome,
                          x.scoring_group IS NOT NULL AS excluded, '' AS part
                   FROM outcomes o JOIN cases c ON c.suite = o.suite AND c.case_id = o.case_id
                   JOIN models m ON m.model_id = o.model_id
                   LEFT JOIN g_exclusions x ON x.task = m.task AND x.scoring_group = c.scoring_group""",
    # Negative / positive flips against each model's old model (NFR, PFR: the pooled rate of 'pass').
    "nfr": """SELECT model_id, case_id, scoring_group AS grp,
                     CASE flip WHEN 'skip' THEN 'skip' WHEN 'negative' THEN 'pass' ELSE 'fail' END AS outcome,
                     false AS excluded, '' AS part FROM case_flips""",
    "pfr": """SELECT model_id, case_id, scoring_group AS grp,
                     CASE flip WHEN 'skip' THEN 'skip' WHEN 'positive' THEN 'pass' ELSE 'fail' END AS outcome,
                     false AS excluded, '' AS part FROM case_flips""",
    # Eval-suite outcomes per basis (s_cross, G on the eval suite), one part per eval suite and basis.
    "cross": """SELECT model_id, case_id, eval_group AS grp, outcome, false AS excluded,
                       eval_suite || '|' || coalesce(mapped_level, '') AS part FROM cross_case_bases""",
}


# The cell columns of the temporary table k, as text (as ``build_cells`` matches them).
_CELL_TEXT = ", ".join(f"k.{c}::VARCHAR" for c in CELL_COLUMNS)


def load_cells(con: duckdb.DuckDBPyConnection, cells: Iterable[Cell],
               source: str = "outcomes") -> dict[Cell, Replicates]:
    """The ``Replicates`` of ``cells`` from ``source`` (SOURCES; one part)."""
    return {cell: rep for (cell, _), rep in load_parts(con, cells, source).items()}


def load_parts(con: duckdb.DuckDBPyConnection, cells: Iterable[Cell],
               source: str = "outcomes") -> dict[tuple[Cell, str], Replicates]:
    """The ``Replicates`` of every (cell, part) of ``cells`` in ``source``, with the cell's D_test correctness."""
    wanted = sorted(set(cells))
    if not wanted:
        return {}
    # split_seed as the store types it (the same_* macros compare the columns); every column read back as text.
    con.execute("CREATE OR REPLACE TEMP TABLE _beluga_cells "
                f"({', '.join(f'{c} BIGINT' if c == 'split_seed' else f'{c} VARCHAR' for c in CELL_COLUMNS)})")
    try:
        con.executemany(f"INSERT INTO _beluga_cells VALUES ({', '.join('?' * len(CELL_COLUMNS))})",
                        [list(_text(c)) for c in wanted])
        outcomes = con.execute(expand_key_comparisons(f"""
            SELECT {_CELL_TEXT}, m.seed, s.case_id, s.grp, s.outcome, s.excluded, s.part
            FROM _beluga_cells k
            JOIN scored_models m ON m.status = 'done' AND same_cell(m, k) AND m.scenario = k.scenario
            JOIN ({SOURCES[source]}) s ON s.model_id = m.model_id""")).fetchall()
        iid = con.execute(expand_key_comparisons(f"""
            SELECT {_CELL_TEXT}, i.seed, p.example_idx, p.correct, p.gold, p.pred,
                   i.metric, i.s_iid, h.labels::VARCHAR, h.task IS NOT NULL
            FROM _beluga_cells k
            JOIN iid_scores i ON same_cell(i, k)
            JOIN iid_predictions p ON p.model_id = i.model_id AND p.split = 'test'
            LEFT JOIN task_heads h ON h.task = k.task AND h.suite = k.suite""")).fetchall()
    finally:
        con.execute("DROP TABLE IF EXISTS _beluga_cells")
    return build_cells(wanted, outcomes, iid)


def _text(c: Cell) -> tuple[str | None, ...]:
    """A cell's columns as text (how the temporary table holds them, so that NULLs and numbers compare)."""
    return tuple(None if v is None else str(v) for v in (c.task, c.suite, c.model_name, c.config, c.method,
                                                            c.variant, c.scenario, c.split_seed))


def build_cells(cells: list[Cell], outcomes: list[tuple[object, ...]],
                iid: list[tuple[object, ...]]) -> dict[tuple[Cell, str], Replicates]:
    """Assemble ``Replicates`` from (cell columns…, seed, case_id, group, outcome, excluded, part) outcome rows and
    (cell columns…, seed, example_idx, correct[, gold, pred, metric, stored s_iid, head labels JSON, head known])
    i.i.d. rows; cell columns as text, as the query returns them. Without the metric columns, s_iid is accuracy."""
    as_text = {_text(c): c for c in cells}
    per: dict[tuple[Cell, str], list[tuple[object, ...]]] = defaultdict(list)
    for r in outcomes:
        per[(as_text[r[:8]], str(r[13]))].append(r[8:13])  # type: ignore[index]
    per_iid: dict[Cell, list[tuple[object, ...]]] = defaultdict(list)
    for r in iid:
        per_iid[as_text[r[:8]]].append(r[8:])  # type: ignore[index]
    return {key: _replicates(rows, per_iid.get(key[0], [])) for key, rows in sorted(per.items(), key=lambda kv:
                                                                                     (kv[0][0], kv[0][1]))}


def _replicates(rows: list[tuple[object, ...]], iid: list[tuple[object, ...]]) -> Replicates:
    seeds = sorted({r[0] for r in rows}, key=lambda s: (s is None, s))
    cases = sorted({(str(r[2]), str(r[1])) for r in rows})          # by group, then case id
    groups = sorted({g for g, _ in cases})
    excluded = {str(r[2]) for r in rows if r[4]}
    case_index = {cid: i for i, (_, cid) in enumerate(cases)}
    seed_index = {s: i for i, s in enumerate(seeds)}
    passed = np.zeros((len(seeds), len(cases)))
    evaluable = np.zeros_like(passed)
    for seed, cid, _, outcome, _ in rows:
        i, j = seed_index[seed], case_index[str(cid)]
        passed[i, j] = outcome == "pass"
        evaluable[i, j] = outcome != "skip"
    index = {g: i for i, g in enumerate(groups)}
    return Replicates(tuple(seeds), tuple(groups),  # type: ignore[arg-type]
                      np.array([index[g] for g, _ in cases], dtype=np.int64), passed, evaluable,
                      iid_parts(seeds, [r for r in iid if r[0] in seed_index]),
                      np.array([g not in excluded for g in groups]), tuple(c for _, c in cases))


def iid_parts(seeds: list[object], rows: list[tuple[object, ...]]) -> IidParts | None:
    """Every seed's D_test parts of the task's i.i.d. metric from its (seed, example_idx, correct[, gold, pred,
    metric, stored value, head labels, head known]) rows; None (no s_iid, and so no G, over seeds) where a seed
    lacks the others' examples, or the metric is one beluga cannot resample or does not reproduce from the rows: an
    interval of another metric is never given in its place."""
    if not rows:
        return None
    per_seed: dict[object, list[tuple[object, ...]]] = defaultdict(list)
    for r in rows:
        per_seed[r[0]].append(r)
    examples = sorted({int(r[1]) for r in rows})  # type: ignore[call-overload]
    with_metric = len(rows[0]) > 5   # rows without their metric: correctness, accuracy
    metrics = {str(r[5]) for r in rows} if with_metric else {"accuracy"}
    if len(metrics) != 1 or set(per_seed) != set(seeds):
        return None
    metric = metrics.pop()
    form = (stored_form(metric, _opt(rows[0][7]), bool(rows[0][8]), [x for r in rows for x in (_opt(r[3]), _opt(r[4]))
                                                                      if x is not None])
            if with_metric else MetricForm(MEAN))
    if form is None:
        return None
    out = np.zeros((len(seeds), len(examples), form.width))
    for i, seed in enumerate(seeds):
        mine = sorted(per_seed[seed], key=lambda r: int(r[1]))  # type: ignore[call-overload]
        if [int(r[1]) for r in mine] != examples:  # type: ignore[call-overload]
            return None   # a seed without the same D_test
        correct = [bool(r[2]) for r in mine]
        if not with_metric:
            out[i] = np.asarray(correct, dtype=float)[:, None]
            continue
        stored = mine[0][6]
        parts = model_parts(form, metric, [_opt(r[3]) for r in mine], [_opt(r[4]) for r in mine], correct,
                            None if stored is None else float(stored))  # type: ignore[arg-type]
        if parts is None:
            return None
        out[i] = parts
    return IidParts(out, form)


def _opt(v: object) -> str | None:
    return None if v is None else str(v)
