"""Paired counts for the tests, aggregated in DuckDB so that only small count tables reach Python.

Suite: per (A arm, B arm) pair, scoring group and (A outcome, B outcome), the number of T_test cases both
arms have an outcome for (a held-out arm's outcomes are the union of its fold models'; cases paired by
suite and case id; groups in g_exclusions left out, as in s_T). i.i.d.: per pair of models whose s_iid G
uses (iid_scores), the 2×2 table of per-example correctness on D_test, paired by example_idx.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import duckdb

from beluga_core.analysis.significance.comparisons import Arm
from beluga_core.analysis.significance.tests_on_counts import IidCounts, SuiteCounts
from beluga_core.evaluation.metric_forms import model_parts, stored_form
from beluga_core.store.connection import expand_key_comparisons


def _same_key(alias: str) -> str:
    """Join condition: ``alias`` is of the draw of pair row ``p`` (its replicate key but config and method, which
    are each arm's own)."""
    return expand_key_comparisons(f"same_draw({alias}, p)")


@contextmanager
def _pairs_table(con: duckdb.DuckDBPyConnection, name: str, pairs: Sequence[tuple[Arm, Arm]]) -> Iterator[None]:
    """The arm pairs as temp table ``name`` (one row per pair, ``pair_id`` = its index), dropped afterwards."""
    con.execute(f"""CREATE OR REPLACE TEMP TABLE {name} (
                        pair_id BIGINT, task VARCHAR, suite VARCHAR, model_name VARCHAR, seed BIGINT,
                        split_seed BIGINT, variant VARCHAR, a_config VARCHAR, a_method VARCHAR, a_scenario VARCHAR,
                        b_config VARCHAR, b_method VARCHAR, b_scenario VARCHAR)""")
    try:
        con.executemany(f"INSERT INTO {name} VALUES ({', '.join('?' * 13)})",
                        [[i, a.task, a.suite, a.model_name, a.seed, a.split_seed, a.variant, a.config, a.method,
                          a.scenario, b.config, b.method, b.scenario] for i, (a, b) in enumerate(pairs)])
        yield
    finally:
        con.execute(f"DROP TABLE IF EXISTS {name}")


def suite_counts(con: duckdb.DuckDBPyConnection, pairs: Sequence[tuple[Arm, Arm]]) -> list[SuiteCounts]:
    """The SuiteCounts of every (A, B) arm pair, in order."""
    if not pairs:
        return []
    with _pairs_table(con, "_beluga_sig_suite_pairs", pairs):
        result = con.execute(f"""
            WITH a AS (
                SELECT p.pair_id, p.task, o.suite, o.case_id, o.outcome
                FROM _beluga_sig_suite_pairs p
                JOIN scored_models m ON m.status = 'done' AND {_same_key('m')}
                             AND m.config = p.a_config AND m.method = p.a_method AND m.scenario = p.a_scenario
                JOIN outcomes o ON o.model_id = m.model_id
            ), b AS (
                SELECT p.pair_id, o.suite, o.case_id, o.outcome
                FROM _beluga_sig_suite_pairs p
                JOIN scored_models m ON m.status = 'done' AND {_same_key('m')}
                             AND m.config = p.b_config AND m.method = p.b_method AND m.scenario = p.b_scenario
                JOIN outcomes o ON o.model_id = m.model_id
            )
            SELECT a.pair_id, c.scoring_group, a.outcome, b.outcome, count(*)
            FROM a
            JOIN b ON b.pair_id = a.pair_id AND b.suite = a.suite AND b.case_id = a.case_id
            JOIN cases c ON c.suite = a.suite AND c.case_id = a.case_id
            LEFT JOIN g_exclusions x ON x.task = a.task AND x.scoring_group = c.scoring_group
            WHERE x.scoring_group IS NULL
            GROUP BY ALL""").fetchall()
    by_pair: dict[int, list[tuple[str, str, str, int]]] = defaultdict(list)
    for pair_id, group, oa, ob, n in result:
        by_pair[pair_id].append((group, oa, ob, n))
    return [SuiteCounts.from_rows(by_pair[i]) for i in range(len(pairs))]


def iid_counts(con: duckdb.DuckDBPyConnection, pairs: Sequence[tuple[Arm, Arm]]) -> list[IidCounts | None]:
    """The D_test 2×2 table of the s_iid models of every (A, B) arm pair, in order; None when either arm has
    no s_iid model or they share no D_test example. Where the task's i.i.d. metric is not the correct share, the
    table carries both models' per-example parts of it (``metric_forms``), paired by example; a metric beluga
    cannot resample, or one the rows do not reproduce, gives None: no test of another metric in its place."""
    if not pairs:
        return []
    with _pairs_table(con, "_beluga_sig_iid_pairs", pairs):
        result = con.execute(f"""
            WITH ids AS (
                SELECT p.pair_id, p.task, p.suite, ia.model_id AS a_model, ib.model_id AS b_model,
                       ia.metric AS a_metric, ib.metric AS b_metric, ia.s_iid AS a_value, ib.s_iid AS b_value
                FROM _beluga_sig_iid_pairs p
                JOIN iid_scores ia ON {_same_key('ia')}
                                  AND ia.config = p.a_config AND ia.method = p.a_method
                JOIN iid_scores ib ON {_same_key('ib')}
                                  AND ib.config = p.b_config AND ib.method = p.b_method
            )
            SELECT ids.pair_id,
                   count(*) FILTER (WHERE pa.correct AND pb.correct),
                   count(*) FILTER (WHERE pa.correct AND NOT pb.correct),
                   count(*) FILTER (WHERE NOT pa.correct AND pb.correct),
                   count(*) FILTER (WHERE NOT pa.correct AND NOT pb.correct),
                   any_value(ids.a_model), any_value(ids.b_model), any_value(ids.a_metric), any_value(ids.b_metric),
                   any_value(ids.a_value), any_value(ids.b_value), any_value(h.labels)::VARCHAR,
                   bool_or(h.task IS NOT NULL)
            FROM ids
            JOIN iid_predictions pa ON pa.model_id = ids.a_model AND pa.split = 'test'
            JOIN iid_predictions pb ON pb.model_id = ids.b_model AND pb.split = 'test'
                                   AND pb.example_idx = pa.example_idx
            LEFT JOIN task_heads h ON h.task = ids.task AND h.suite = ids.suite
            GROUP BY ids.pair_id""").fetchall()
        found: dict[int, IidCounts | None] = {}
        for r in result:
            counts = IidCounts(int(r[1]), int(r[2]), int(r[3]), int(r[4]))
            a_model, b_model, a_metric, b_metric, a_value, b_value, labels, known = r[5:]
            if a_metric in ACCURACY_LIKE and b_metric == a_metric:
                found[r[0]] = counts
            elif a_metric != b_metric:
                found[r[0]] = None
            else:
                found[r[0]] = _with_parts(con, counts, str(a_metric), labels, bool(known), (a_model, a_value),
                                          (b_model, b_value))
    return [found.get(i) for i in range(len(pairs))]


# Metrics that are the share of correct examples: the 2×2 table is all their test needs.
ACCURACY_LIKE = ("accuracy", "exact_match")


def _with_parts(con: duckdb.DuckDBPyConnection, counts: IidCounts, metric: str, labels: str | None, known: bool,
                a: tuple[str, float | None], b: tuple[str, float | None]) -> IidCounts | None:
    """``counts`` with both models' parts of ``metric`` on their shared D_test examples."""
    rows = con.execute("""
        SELECT pa.gold, pa.pred, pa.correct, pb.gold, pb.pred, pb.correct
        FROM iid_predictions pa
        JOIN iid_predictions pb ON pb.model_id = ? AND pb.split = 'test' AND pb.example_idx = pa.example_idx
        WHERE pa.model_id = ? AND pa.split = 'test'
        ORDER BY pa.example_idx""", [b[0], a[0]]).fetchall()
    form = stored_form(metric, labels, known, [x for r in rows for x in (r[0], r[1], r[3], r[4]) if x is not None])
    if form is None:
        return None
    parts = [model_parts(form, metric, [r[k] for r in rows], [r[k + 1] for r in rows], [bool(r[k + 2]) for r in rows],
                         value) for k, value in ((0, a[1]), (3, b[1]))]
    if parts[0] is None or parts[1] is None:
        return None
    return IidCounts(counts.n11, counts.n10, counts.n01, counts.n00, form, parts[0], parts[1])
