"""Significance of cross-suite G: each scenario key's G on an eval suite against the IID baseline's on the same
eval cases, with the paired randomization test of G (``stats.randomization_test``: eval-suite outcomes swapped
per case, i.i.d. correctness per D_test example).

The comparisons, their paired cases and their input digests are the ``cross_comparisons`` view's; rows are
stored in ``cross_significance_tests`` and read back through the ``cross_significance`` view.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import duckdb

from beluga_core import __version__ as BELUGA_VERSION
from beluga_core.analysis.significance.comparisons import BASELINE, Arm
from beluga_core.analysis.significance.paired_counts import iid_counts
from beluga_core.analysis.significance.tests_on_counts import (
    TEST_ESTIMATOR,
    IidCounts,
    Stratum,
    SuiteCounts,
    comparison_rng,
    randomization_test,
)
from beluga_core.store.connection import expand_key_comparisons
from beluga_core.store.opened import StoreHandle
from beluga_core.store.significance import SignificanceWriter

_KEY = ("task", "suite", "model_name", "seed", "split_seed", "variant", "config", "method", "scenario",
        "eval_suite", "mapped_level")


def _comparisons(con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    cur = con.execute("""SELECT c.*, t.inputs_digest AS stored_digest, t.rounds AS stored_rounds,
                                t.rng_seed AS stored_seed, split_part(t.beluga_version, '+', 2) AS stored_estimator
                         FROM cross_comparisons c
                         LEFT JOIN cross_significance_tests t ON t.comparison_id = c.comparison_id
                         ORDER BY c.comparison_id""")
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]


def _suite_counts(con: duckdb.DuckDBPyConnection, rows: Sequence[dict[str, Any]]) -> list[SuiteCounts]:
    """Per comparison, the paired eval-case outcomes of A and of the IID baseline at the comparison's basis."""
    con.execute("""CREATE OR REPLACE TEMP TABLE _beluga_cross_pairs (
                       pair_id BIGINT, task VARCHAR, suite VARCHAR, model_name VARCHAR, seed BIGINT,
                       split_seed BIGINT, variant VARCHAR, config VARCHAR, method VARCHAR, scenario VARCHAR,
                       eval_suite VARCHAR, mapped_level VARCHAR)""")
    try:
        con.executemany(f"INSERT INTO _beluga_cross_pairs VALUES ({', '.join('?' * 12)})",
                        [[i, *(r[k] for k in _KEY)] for i, r in enumerate(rows)])
        same = expand_key_comparisons("same_draw(x, p)") + " AND x.mapped_level IS NOT DISTINCT FROM p.mapped_level"
        result = con.execute(f"""
            WITH a AS (
                SELECT p.pair_id, x.case_id, x.eval_group, x.outcome
                FROM _beluga_cross_pairs p
                JOIN cross_case_bases x ON {same} AND x.eval_suite = p.eval_suite
                                       AND x.config = p.config AND x.method = p.method AND x.scenario = p.scenario
            ), b AS (
                SELECT p.pair_id, x.case_id, x.outcome
                FROM _beluga_cross_pairs p
                JOIN cross_case_bases x ON {same} AND x.eval_suite = p.eval_suite
                                       AND x.config = ? AND x.method = ? AND x.scenario = ?
            )
            SELECT a.pair_id, a.eval_group, a.outcome, b.outcome, count(*)
            FROM a JOIN b ON b.pair_id = a.pair_id AND b.case_id = a.case_id
            GROUP BY ALL""", list(BASELINE)).fetchall()
    finally:
        con.execute("DROP TABLE IF EXISTS _beluga_cross_pairs")
    by_pair: dict[int, list[tuple[str, str, str, int]]] = defaultdict(list)
    for pair_id, group, oa, ob, n in result:
        by_pair[pair_id].append((group, oa, ob, n))
    return [SuiteCounts.from_rows(by_pair[i]) for i in range(len(rows))]


def _arm(r: dict[str, Any], config: str, method: str, scenario: str) -> Arm:
    return Arm(r["task"], r["suite"], r["model_name"], config, method, scenario, r["seed"], r["split_seed"],
               r["variant"])


def _test(r: dict[str, Any], suite: SuiteCounts, iid: IidCounts | None, rounds: int, seed: int) -> dict[str, Any]:
    result = randomization_test([iid or IidCounts()], [Stratum(suite, 0)], rounds=rounds,
                                rng=comparison_rng(seed, r["comparison_id"]))

    def finite(v: float | None) -> float | None:
        return None if v is None or v != v else float(v)

    return {**{k: r[k] for k in ("comparison_id", *_KEY)}, "n_cases": suite.n_cases,
            "n_cases_differ": suite.n_differ, "s_cross": finite(result.s_suite_a[0]),
            "base_s_cross": finite(result.s_suite_b[0]), "g": finite(result.g_a[0]), "base_g": finite(result.g_b[0]),
            "delta_g": finite(result.delta_g), "p_g": result.p_g if iid is not None else None, "rounds": rounds,
            "rng_seed": seed, "inputs_digest": r["inputs_digest"],
            "beluga_version": f"{BELUGA_VERSION}+{TEST_ESTIMATOR}"}


def analyze_cross(store: StoreHandle, *, rounds: int, seed: int, force: bool = False) -> tuple[int, int]:
    """Compute the cross-suite tests the store (open for writing) calls for (those not current with these rounds and
    seed, or all with ``force``); returns (computed and kept, already current)."""
    con = store.con
    rows = _comparisons(con)
    current = ("inputs_digest", rounds, seed, TEST_ESTIMATOR)
    todo = [r for r in rows if force or (r["stored_digest"], r["stored_rounds"], r["stored_seed"],
                                         r["stored_estimator"]) != (r[current[0]], *current[1:])]
    if not todo:
        return 0, len(rows)
    suites = _suite_counts(con, todo)
    pairs = [(_arm(r, r["config"], r["method"], r["scenario"]), _arm(r, *BASELINE)) for r in todo]
    iids = iid_counts(con, pairs)
    tests = [_test(r, s, i, rounds, seed) for r, s, i in zip(todo, suites, iids, strict=True)]
    kept, _ = SignificanceWriter(store).write_cross(tests)
    return kept, len(rows) - len(todo)
