"""What a run records before any model: the suites and their cases, splits, task heads, cross-suite mappings and
G exclusions (a mixin of ``StoreWriter``; every method is one transaction)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa

from beluga_core.core.errors import BelugaError
from beluga_core.store.connection import Store
from beluga_core.store.rows import CaseRow, SplitRows, SuiteRow, canonical_json


def text_column(values: Sequence[Any]) -> pa.Array:
    # Labels may arrive as ints (label ids) or numpy scalars; the store keeps them as text.
    return pa.array([None if v is None else str(v) for v in values], type=pa.string())


def _register(con: duckdb.DuckDBPyConnection, name: str, columns: Mapping[str, Any]) -> None:
    """``columns`` as a view for one statement, typed by Arrow: DuckDB before 2.0 cannot scan a NumPy object
    column of over ~1,000 Nones (a suite's gold labels when it has none)."""
    con.register(name, pa.table(dict(columns)))


class PlanRecords:
    store: Store

    def ensure_suite(self, suite: SuiteRow, cases: Sequence[CaseRow]) -> int:
        """Record a suite and insert the cases the store lacks; returns how many were inserted.

        A case already stored with other groups, test type or gold label means the suite changed under the
        same name: ``BelugaError`` (its old results would be scored with the new groups). Gold labels
        missing from a store written before they were recorded are filled in.
        """
        with self.store.transaction() as con:
            return self._ensure_suite(con, suite, cases)

    def _ensure_suite(self, con: duckdb.DuckDBPyConnection, suite: SuiteRow, cases: Sequence[CaseRow]) -> int:
        row = [suite.suite, canonical_json(list(suite.label_space) if suite.label_space is not None else None),
               canonical_json(list(suite.levels)), suite.scoring_level, suite.input_kind]
        old = con.execute("SELECT label_space::VARCHAR, levels::VARCHAR, scoring_level, input_kind FROM suites "
                          "WHERE suite = ?", [suite.suite]).fetchall()
        if old and tuple(old[0]) != tuple(row[1:]):
            raise BelugaError(f"suite '{suite.suite}' differs from the one this store already holds under that "
                              f"name (label space, levels, scoring level or input kind: {list(old[0])} against "
                              f"{row[1:]}); use a new store, or give the changed suite a new name",
                              source=self.store.where)
        if not old:
            con.execute("INSERT INTO suites VALUES (?, ?::JSON, ?::JSON, ?, ?)", row)
        ids = [c.case_id for c in cases]
        if len(set(ids)) != len(ids):
            raise ValueError(f"cases of suite {suite.suite!r}: duplicate case ids")
        level = suite.scoring_level
        data = {"case_id": text_column(ids), "test_type": text_column([c.test_type for c in cases]),
                "scoring_group": text_column([c.group(level) for c in cases]),
                "groups": text_column([canonical_json(dict(c.groups)) for c in cases]),
                "gold": text_column([c.gold for c in cases])}
        _register(con, "_beluga_new_cases", data)
        try:
            n_conflicts, examples = con.execute(
                """SELECT count(*), list(n.case_id ORDER BY n.case_id)[1:5]
                   FROM _beluga_new_cases n JOIN cases c ON c.suite = ? AND c.case_id = n.case_id
                   WHERE c.test_type <> n.test_type OR c.scoring_group <> n.scoring_group
                      OR json(c.groups)::VARCHAR <> json(n.groups)::VARCHAR
                      OR c.gold IS DISTINCT FROM n.gold AND c.gold IS NOT NULL""",
                [suite.suite]).fetchall()[0]
            if n_conflicts:
                raise BelugaError(
                    f"suite '{suite.suite}' differs from the one this store already holds under that name "
                    f"({n_conflicts} case(s) with other groups, test type or gold label, e.g. {examples}); use "
                    "a new store, or give the changed suite a new name", source=self.store.where)
            con.execute("""UPDATE cases SET gold = n.gold FROM _beluga_new_cases n
                           WHERE cases.suite = ? AND cases.case_id = n.case_id AND cases.gold IS NULL
                             AND n.gold IS NOT NULL""", [suite.suite])
            (inserted,) = con.execute(
                """INSERT INTO cases (suite, case_id, test_type, scoring_group, groups, gold)
                   SELECT ?, n.case_id, n.test_type, n.scoring_group, n.groups::JSON, n.gold
                   FROM _beluga_new_cases n
                   WHERE NOT EXISTS (SELECT 1 FROM cases c WHERE c.suite = ? AND c.case_id = n.case_id)""",
                [suite.suite, suite.suite]).fetchall()[0]
        finally:
            con.unregister("_beluga_new_cases")
        return int(inserted)

    def record_split(self, split: SplitRows) -> None:
        """Record a suite's split (once per split id: the same id always means the same assignment)."""
        with self.store.transaction() as con:
            if con.execute("SELECT 1 FROM splits WHERE split_id = ?", [split.split_id]).fetchall():
                return
            con.execute("INSERT INTO splits VALUES (?, ?, ?, ?::JSON, ?::JSON)",
                        [split.split_id, split.suite, split.seed, canonical_json(list(split.ratios)),
                         canonical_json(dict(split.caps))])
            data = {"split_id": text_column([split.split_id] * len(split.parts)),
                    "case_id": text_column([p[0] for p in split.parts]),
                    "part": text_column([p[1] for p in split.parts]),
                    "kept": np.array([p[2] for p in split.parts], dtype=bool)}
            _register(con, "_beluga_parts", data)
            try:
                con.execute("INSERT INTO case_splits SELECT split_id, case_id, part, kept FROM _beluga_parts")
            finally:
                con.unregister("_beluga_parts")

    def record_pools(self, split_id: str, suite: str, pools: Mapping[tuple[str, str], Sequence[str]]) -> None:
        """Record a split's [fewshot] probe pools (replacing earlier ones of the split: pool_cap may change)."""
        rows = [(level, group, cid) for (level, group), ids in pools.items() for cid in ids]
        with self.store.transaction() as con:
            con.execute("DELETE FROM fewshot_pools WHERE split_id = ? AND suite = ? AND level IN "
                        "(SELECT unnest(?::VARCHAR[]))", [split_id, suite, sorted({r[0] for r in rows})])
            if not rows:
                return
            data = {"level": text_column([r[0] for r in rows]), "grp": text_column([r[1] for r in rows]),
                    "case_id": text_column([r[2] for r in rows])}
            _register(con, "_beluga_pools", data)
            try:
                con.execute("INSERT INTO fewshot_pools SELECT ?, ?, level, grp, case_id FROM _beluga_pools",
                            [split_id, suite])
            finally:
                con.unregister("_beluga_pools")

    def set_task_head(self, task: str, suite: str, labels: Sequence[str] | None) -> None:
        """The class names of ``task``'s head when judged by ``suite`` (None: answers, not classes)."""
        with self.store.transaction() as con:
            con.execute("INSERT OR REPLACE INTO task_heads VALUES (?, ?, ?::JSON)",
                        [task, suite, canonical_json(list(labels) if labels is not None else None)])

    def set_cross_maps(self, task: str, train_suite: str, eval_suite: str,
                       maps: Mapping[str, Mapping[str, str]]) -> None:
        """Replace how ``eval_suite``'s cases map onto ``train_suite``'s groups for ``task`` (level → eval case
        id → training group)."""
        rows = [(level, cid, group) for level, m in maps.items() for cid, group in m.items()]
        data = {"level": text_column([r[0] for r in rows]), "case_id": text_column([r[1] for r in rows]),
                "train_group": text_column([r[2] for r in rows])}
        with self.store.transaction() as con:
            con.execute("DELETE FROM cross_maps WHERE task = ? AND train_suite = ? AND eval_suite = ?",
                        [task, train_suite, eval_suite])
            if not rows:
                return
            _register(con, "_beluga_cross_maps", data)
            try:
                con.execute("""INSERT INTO cross_maps SELECT ?, ?, ?, level, case_id, train_group
                               FROM _beluga_cross_maps""", [task, train_suite, eval_suite])
            finally:
                con.unregister("_beluga_cross_maps")

    def set_g_exclusions(self, task: str, groups: Iterable[str]) -> None:
        """Replace the scoring groups of ``task`` left out of s_T and G."""
        chosen = sorted(set(groups))
        with self.store.transaction() as con:
            con.execute("DELETE FROM g_exclusions WHERE task = ?", [task])
            if chosen:
                con.executemany("INSERT INTO g_exclusions VALUES (?, ?)", [[task, g] for g in chosen])

    def record_case_specs(self, suite: str, specs: Sequence[tuple[str, str]]) -> int:
        """Record (case id, the case as JSON) of cases the store lacks; returns how many were new."""
        if not specs:
            return 0
        with self.store.transaction() as con:
            _register(con, "_beluga_specs", {"case_id": text_column([c for c, _ in specs]),
                                            "spec": text_column([j for _, j in specs])})
            try:
                (inserted,) = con.execute(
                    """INSERT INTO case_specs SELECT ?, n.case_id, n.spec::JSON FROM _beluga_specs n
                       WHERE NOT EXISTS (SELECT 1 FROM case_specs c WHERE c.suite = ? AND c.case_id = n.case_id)""",
                    [suite, suite]).fetchall()[0]
            finally:
                con.unregister("_beluga_specs")
        return int(inserted)

    def record_shared_models(self, variant: str, model_ids: Iterable[str]) -> None:
        """Record as models of ``variant`` (point_models) those of ``model_ids`` the store holds under another variant:
        a run whose jobs a sweep point trained already (the same settings give the same ids) counts them."""
        ids = sorted(set(model_ids))
        if not ids:
            return
        with self.store.transaction() as con:
            con.execute("""INSERT OR IGNORE INTO point_models
                           SELECT ?, model_id FROM models WHERE variant <> ? AND model_id IN (SELECT unnest(?))""",
                        [variant, variant, ids])

    def record_sweep_point(self, point: Mapping[str, Any], model_ids: Iterable[str]) -> None:
        """Record a sweep point (migration 20's sweep_points row: variant, sweep, base_variant, position, axis, value,
        values, capped) and the models it is made of (point_models), adding to those recorded before."""
        ids = sorted(set(model_ids))
        with self.store.transaction() as con:
            con.execute("DELETE FROM sweep_points WHERE variant = ?", [point["variant"]])
            con.execute('INSERT INTO sweep_points (variant, sweep, base_variant, position, axis, value, "values", '
                        "capped) VALUES (?, ?, ?, ?, ?, ?, ?::JSON, ?::JSON)",
                        [point["variant"], point["sweep"], point["base_variant"], point["position"], point["axis"],
                         float(point["value"]), canonical_json(point["values"]), canonical_json(point["capped"])])
            if ids:
                con.executemany("INSERT OR IGNORE INTO point_models VALUES (?, ?)",
                                [[point["variant"], mid] for mid in ids])
