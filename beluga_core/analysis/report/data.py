"""Everything a report shows, fetched from the store's views in one short read-only connection.

A run may be writing the store: the connection is held for well under a second, and what it sees is what
is finished so far (the writer commits one whole model at a time).
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import duckdb

from beluga_core.store.reader import open_store
from beluga_core.store.significance import has_significance

BASELINE = ("iid", "vanilla")
FIXED_SCENARIOS = ("standard", "seen")


def scenario_order(scenarios: set[str]) -> list[str]:
    return [s for s in FIXED_SCENARIOS if s in scenarios] + sorted(scenarios - set(FIXED_SCENARIOS))


def pair_order(pairs: set[tuple[str, str]]) -> list[tuple[str, str]]:
    """The IID baseline first, then the others by configuration and method."""
    return sorted(pairs, key=lambda k: (k != BASELINE, k))


@dataclass
class GroupInfo:
    """A scoring group, numbered in suite order, with its parent group and test type."""

    number: int
    name: str
    test_type: str          # the cases' test type, or "mixed"
    parent: str | None      # its group at the parent level (e.g. the class of a functionality)


@dataclass
class SuiteLayout:
    """How a suite's scoring groups nest: the scoring level, the level right above it, groups in order."""

    suite: str
    scoring_level: str | None
    parent_level: str | None
    levels: list[str]
    groups: list[GroupInfo]

    def by_name(self) -> dict[str, GroupInfo]:
        return {g.name: g for g in self.groups}


@dataclass
class ReportData:
    store: Path
    read_at: datetime
    runs: list[dict[str, Any]]
    n_done: int
    n_failed: int
    g_scores: list[dict[str, Any]]
    pass_rates: list[dict[str, Any]]
    significance: list[dict[str, Any]] | None      # None: the store has no significance tables yet
    labels: list[dict[str, Any]]
    layouts: dict[str, SuiteLayout]
    mft_gold: dict[tuple[str, str], dict[str, int]] = field(default_factory=dict)  # (task, suite) → label → n
    mft_gold_source: str | None = None
    mft_case_ids: dict[tuple[str, str], set[str]] = field(default_factory=dict)  # evaluated MFT cases
    mft_label_names: dict[tuple[str, str], dict[str, str]] = field(default_factory=dict)  # label id → name

    @property
    def running(self) -> list[dict[str, Any]]:
        return [r for r in self.runs if r["status"] == "running"]


def _dicts(con: duckdb.DuckDBPyConnection, sql: str, params: list[Any] | None = None) -> list[dict[str, Any]]:
    cur = con.execute(sql, params or [])
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]


def suite_layouts(con: duckdb.DuckDBPyConnection) -> dict[str, SuiteLayout]:
    """Scoring level, parent level and group order of every suite, from the ``cases`` table alone."""
    rows = con.execute("""SELECT suite, scoring_group, test_type, groups::VARCHAR, min(rowid) AS first
                          FROM cases GROUP BY ALL ORDER BY suite, first""").fetchall()
    per_suite: dict[str, list[tuple[str, str, dict[str, str]]]] = defaultdict(list)
    for suite, group, test_type, groups, _ in rows:
        per_suite[suite].append((group, test_type, json.loads(groups)))
    return {suite: _layout(suite, items) for suite, items in per_suite.items()}


def _layout(suite: str, items: list[tuple[str, str, dict[str, str]]]) -> SuiteLayout:
    levels = sorted({lvl for _, _, g in items for lvl in g})
    scoring = next((lvl for lvl in levels if all(g.get(lvl) == grp for grp, _, g in items)), None)
    if scoring is None and all(grp == tt for grp, tt, _ in items):
        scoring = "test_type"
    group_names = list(dict.fromkeys(grp for grp, _, _ in items))
    # The parent level: one group per scoring group, fewer groups than the scoring level; the finest such.
    parent, best = None, 0
    for lvl in levels:
        if lvl == scoring:
            continue
        mapping: dict[str, set[str | None]] = defaultdict(set)
        for grp, _, g in items:
            mapping[grp].add(g.get(lvl))
        if any(len(v) != 1 or None in v for v in mapping.values()):
            continue
        n = len({next(iter(v)) for v in mapping.values()})
        if 1 < n < len(group_names) and n > best:
            parent, best = lvl, n
    test_types: dict[str, set[str]] = defaultdict(set)
    parents: dict[str, str | None] = {}
    for grp, tt, g in items:
        test_types[grp].add(tt)
        parents[grp] = g.get(parent) if parent else None
    # Suite order, but kept together by parent (in the order parents first appear).
    parent_rank = {p: i for i, p in enumerate(dict.fromkeys(parents[g] for g in group_names))}
    ordered = sorted(group_names, key=lambda g: parent_rank[parents[g]])
    infos = [GroupInfo(i + 1, g, next(iter(test_types[g])) if len(test_types[g]) == 1 else "mixed", parents[g])
             for i, g in enumerate(ordered)]
    return SuiteLayout(suite, scoring, parent, levels, infos)


def read_report_data(store: str | Path) -> ReportData:
    store = Path(store)
    with open_store(store) as con:
        runs = _dicts(con, "SELECT run_id, status, started_at, finished_at, config_path, config_text FROM runs "
                           "ORDER BY started_at")
        n_done, n_failed = con.execute("SELECT count(*) FILTER (WHERE status = 'done'), "
                                       "count(*) FILTER (WHERE status = 'failed') FROM models").fetchone()
        g_scores = _dicts(con, "SELECT * FROM g_scores ORDER BY ALL")
        pass_rates = _dicts(con, "SELECT * FROM pass_rates ORDER BY ALL")
        significance = _dicts(con, "SELECT * FROM significance") if has_significance(con) else None
        # Per scenario key (a held-out scenario's folds together): D_test and MFT label counts.
        labels = _dicts(con, """
            SELECT task, suite, model_name, config, method, scenario, seed, split_seed, source, label,
                   sum(n_pred)::BIGINT AS n_pred, sum(n_gold)::BIGINT AS n_gold
            FROM label_distribution
            WHERE source = 'iid_test' OR (source = 'suite' AND test_type = 'MFT')
            GROUP BY ALL ORDER BY ALL""")
        layouts = suite_layouts(con)
        gold, gold_source = _store_mft_gold(con)
        mft_ids: dict[tuple[str, str], set[str]] = defaultdict(set)
        if not gold:
            for task, suite, case_id in con.execute(
                    """SELECT DISTINCT m.task, o.suite, o.case_id
                       FROM outcomes o JOIN models m ON m.model_id = o.model_id
                       JOIN cases c ON c.suite = o.suite AND c.case_id = o.case_id
                       WHERE m.status = 'done' AND c.test_type = 'MFT'""").fetchall():
                mft_ids[(task, suite)].add(case_id)
    data = ReportData(store, datetime.now(timezone.utc).replace(tzinfo=None), runs, int(n_done), int(n_failed),
                      g_scores, pass_rates, significance, labels, layouts)
    data.mft_gold, data.mft_gold_source, data.mft_case_ids = gold, gold_source, dict(mft_ids)
    return data


def _store_mft_gold(con: duckdb.DuckDBPyConnection) -> tuple[dict[tuple[str, str], dict[str, int]], str | None]:
    """Gold label counts of the evaluated MFT cases, when the store holds them (an ``outcomes.gold`` column,
    not part of schema version 1); otherwise empty (see degeneracy.suite_mft_gold)."""
    cols = {r[0] for r in con.execute("SELECT column_name FROM information_schema.columns "
                                      "WHERE table_name = 'outcomes'").fetchall()}
    if "gold" not in cols:
        return {}, None
    rows = con.execute("""SELECT m.task, o.suite, o.gold, count(DISTINCT o.case_id)
                          FROM outcomes o JOIN models m ON m.model_id = o.model_id
                          JOIN cases c ON c.suite = o.suite AND c.case_id = o.case_id
                          WHERE m.status = 'done' AND c.test_type = 'MFT' AND o.gold IS NOT NULL
                          GROUP BY ALL""").fetchall()
    out: dict[tuple[str, str], dict[str, int]] = defaultdict(dict)
    for task, suite, gold, n in rows:
        out[(task, suite)][gold] = int(n)
    return dict(out), "the store (outcomes.gold)"
