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


def _same_key(alias: str) -> str:
    """Join condition: ``alias`` has the replicate key of pair row ``p`` (NULL keys match NULL)."""
    return " AND ".join([f"{alias}.task = p.task"] + [f"{alias}.{c} IS NOT DISTINCT FROM p.{c}"
                                                     for c in ("suite", "model_name", "seed", "split_seed",
                                                               "variant")])


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
                JOIN models m ON m.status = 'done' AND {_same_key('m')}
                             AND m.config = p.a_config AND m.method = p.a_method AND m.scenario = p.a_scenario
                JOIN outcomes o ON o.model_id = m.model_id
            ), b AS (
                SELECT p.pair_id, o.suite, o.case_id, o.outcome
                FROM _beluga_sig_suite_pairs p
                JOIN models m ON m.status = 'done' AND {_same_key('m')}
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
    no s_iid model or they share no D_test example."""
    if not pairs:
        return []
    with _pairs_table(con, "_beluga_sig_iid_pairs", pairs):
        result = con.execute(f"""
            WITH ids AS (
                SELECT p.pair_id, ia.model_id AS a_model, ib.model_id AS b_model
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
                   count(*) FILTER (WHERE NOT pa.correct AND NOT pb.correct)
            FROM ids
            JOIN iid_predictions pa ON pa.model_id = ids.a_model AND pa.split = 'test'
            JOIN iid_predictions pb ON pb.model_id = ids.b_model AND pb.split = 'test'
                                   AND pb.example_idx = pa.example_idx
            GROUP BY ids.pair_id""").fetchall()
    found = {r[0]: IidCounts(*(int(x) for x in r[1:])) for r in result}
    return [found.get(i) for i in range(len(pairs))]
