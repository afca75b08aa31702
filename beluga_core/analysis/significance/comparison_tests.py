"""Compute the significance tests a store calls for and store them with their provenance.

``analyze_store`` is what ``beluga analyze`` and the end of ``beluga run`` call: it reads the paired counts, runs
the tests in numpy, and writes the rows in one transaction (``SignificanceWriter``), all on the store the command
holds open for writing (``store.opened``; a run's writer waits for it). Rows whose inputs, rounds and seed are
unchanged are kept, not recomputed.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import duckdb
import numpy as np

from beluga_core import __version__ as BELUGA_VERSION
from beluga_core.analysis.significance.comparisons import (
    Arm,
    Comparison,
    baseline_comparisons,
    default_base_scenario,
    load_arms,
    pair_comparisons,
)
from beluga_core.analysis.significance.cross_tests import analyze_cross
from beluga_core.analysis.significance.paired_counts import iid_counts, suite_counts
from beluga_core.analysis.significance.tests_on_counts import (
    TEST_ESTIMATOR,
    IidCounts,
    Stratum,
    SuiteCounts,
    comparison_rng,
    randomization_test,
)
from beluga_core.store.connection import sql_file
from beluga_core.store.opened import StoreArg, held
from beluga_core.store.significance import SignificanceWriter, has_significance

DEFAULT_ROUNDS = 10_000
DEFAULT_SEED = 0
ALPHA = 0.05

ConfigMethod = tuple[str, str]


@dataclass
class AnalysisSummary:
    """What one analysis did."""

    n_comparisons: int = 0
    n_computed: int = 0
    n_kept: int = 0                                     # already current with these rounds and seed
    dropped_stale: list[str] = field(default_factory=list)  # inputs changed while computing
    seconds: float = 0.0
    comparison_ids: list[str] = field(default_factory=list)
    n_cross_computed: int = 0                           # cross-suite G tests (eval suites)
    n_cross_kept: int = 0


def parse_config_method(text: str) -> ConfigMethod:
    """'iid-then-t/l2' → ('iid-then-t', 'l2'); a bare configuration means its 'vanilla' method."""
    config, _, method = text.partition("/")
    if not config:
        raise ValueError(f"expected CONFIGURATION[/METHOD], got {text!r}")
    return config, method or "vanilla"


def plan_comparisons(arms: dict[Arm, str], pairs: Sequence[tuple[ConfigMethod, ConfigMethod]] = (),
                     *, baseline: bool = True) -> list[Comparison]:
    """The baseline comparisons (when ``baseline``) and those of each (A, B) in ``pairs``."""
    out = baseline_comparisons(arms) if baseline else []
    for a, b in pairs:
        out += pair_comparisons(arms, a, b, default_base_scenario(arms, b))
    seen: set[str] = set()
    unique = []
    for c in out:
        if c.comparison_id not in seen:
            seen.add(c.comparison_id)
            unique.append(c)
    return unique


def run_comparisons(con: duckdb.DuckDBPyConnection, comparisons: Sequence[Comparison], arms: dict[Arm, str], *,
                    rounds: int = DEFAULT_ROUNDS, seed: int = DEFAULT_SEED) -> list[dict[str, Any]]:
    """Run ``comparisons`` on the store behind ``con``; one ``significance_tests`` row (a dict) each."""
    stratum_pairs = sorted({p for c in comparisons for p in c.strata})
    suite_of = dict(zip(stratum_pairs, suite_counts(con, stratum_pairs), strict=True))
    # s_iid depends on (config, method) and the replicate only: one D_test pairing per unit.
    unit_pairs = sorted({(a.other(a.config, a.method, "-"), b.other(b.config, b.method, "-"))
                         for c in comparisons for a, b in c.strata})
    iid_of = dict(zip(unit_pairs, iid_counts(con, unit_pairs), strict=True))
    return [_run_one(c, arms, suite_of, iid_of, rounds, seed) for c in comparisons]


def _run_one(c: Comparison, arms: dict[Arm, str], suite_of: dict[tuple[Arm, Arm], SuiteCounts],
             iid_of: dict[tuple[Arm, Arm], IidCounts | None], rounds: int, seed: int) -> dict[str, Any]:
    units = c.iid_units()
    unit_index = {u: i for i, u in enumerate(units)}
    unit_counts: list[IidCounts | None] = [None] * len(units)
    for a, b in c.strata:
        key = (a.other(a.config, a.method, "-"), b.other(b.config, b.method, "-"))
        unit_counts[unit_index[(a.task, a.suite, a.model_name)]] = iid_of[key]
    iid = [u if u is not None else IidCounts() for u in unit_counts]
    strata = [Stratum(suite_of[(a, b)], unit_index[(a.task, a.suite, a.model_name)], w)
              for (a, b), w in zip(c.strata, c.weights(), strict=True)]
    w_iid = c.iid_weights()
    result = randomization_test(iid, strata, rounds=rounds, rng=comparison_rng(seed, c.comparison_id),
                                iid_weights=w_iid)
    has_iid = all(u is not None and u.n > 0 for u in unit_counts)
    if len(iid) == 1 and not iid[0].of_metric:
        iid_test, p_iid = "binomial", (iid[0].sign_test() if has_iid else None)
    else:
        # The same two models in every scenario row of a replicate: one test, drawn from the models' key (c.iid_key),
        # not from this comparison's draws, which the G test pairs with one scenario's cases (issue 52: the rows of
        # one pair of models gave several p and marks, and the report's i.i.d. column took one of them).
        alone = randomization_test(iid, [], rounds=rounds, rng=comparison_rng(seed, c.iid_key), iid_weights=w_iid)
        iid_test, p_iid = "randomization", (alone.p_iid if has_iid else None)
    w = np.asarray(c.weights())

    def wmean(values: Sequence[float], weights: Sequence[float] | np.ndarray) -> float | None:
        v = float(np.dot(np.asarray(values, dtype=float), weights))
        return None if np.isnan(v) else v

    def finite(v: float) -> float | None:
        return None if v is None or np.isnan(v) else float(v)

    return {
        "comparison_id": c.comparison_id, "scope": c.scope, "task": c.task, "suite": c.suite,
        "model_name": c.model_name, "seed": c.seed, "split_seed": c.split_seed, "variant": c.variant,
        "config": c.config,
        "method": c.method, "scenario": c.scenario, "base_config": c.base_config, "base_method": c.base_method,
        "base_scenario": c.base_scenario, "n_tasks": c.n_tasks, "n_strata": len(c.strata),
        "iid_test": iid_test if has_iid else None,
        "n_iid": sum(u.n for u in iid), "n_discordant": sum(u.n10 + u.n01 for u in iid),
        "k_better": sum(u.n10 for u in iid),
        "s_iid": wmean([u.s_a for u in iid], w_iid), "base_s_iid": wmean([u.s_b for u in iid], w_iid),
        "delta_iid": finite(result.delta_iid), "p_iid": p_iid,
        "n_cases": sum(s.suite.n_cases for s in strata), "n_cases_differ": sum(s.suite.n_differ for s in strata),
        "s_suite": wmean(result.s_suite_a, w), "base_s_suite": wmean(result.s_suite_b, w),
        "g": wmean(result.g_a, w), "base_g": wmean(result.g_b, w), "delta_g": finite(result.delta_g),
        "p_g": result.p_g, "rounds": rounds, "rng_seed": seed, "inputs_digest": c.digest(arms),
        "beluga_version": f"{BELUGA_VERSION}+{TEST_ESTIMATOR}",
    }


def analyze_store(store: StoreArg, *, rounds: int = DEFAULT_ROUNDS, seed: int = DEFAULT_SEED,
                  pairs: Sequence[tuple[ConfigMethod, ConfigMethod]] = (), baseline: bool = True,
                  force: bool = False) -> AnalysisSummary:
    """Compute and store the significance tests of a store (against the IID baseline, and for ``pairs``); ``store``
    is open for writing (a path: opened for this call).

    Tests already stored for the same inputs, rounds and seed are kept unless ``force``.
    """
    if rounds < 1:
        raise ValueError("rounds must be at least 1")
    started = time.perf_counter()
    summary = AnalysisSummary()
    with held(store, write=True) as opened:
        writer = SignificanceWriter(opened)
        con = opened.con
        arms = load_arms(con)
        comparisons = plan_comparisons(arms, pairs, baseline=baseline)
        stored = {r[0]: r[1:] for r in con.execute(
            "SELECT comparison_id, inputs_digest, rounds, rng_seed, split_part(beluga_version, '+', 2) "
            "FROM significance_tests").fetchall()}
        todo = [c for c in comparisons
                if force or stored.get(c.comparison_id) != (c.digest(arms), rounds, seed, TEST_ESTIMATOR)]
        rows = run_comparisons(con, todo, arms, rounds=rounds, seed=seed) if todo else []
        kept, dropped = writer.write(rows)
        summary.n_cross_computed, summary.n_cross_kept = analyze_cross(opened, rounds=rounds, seed=seed, force=force)
    summary.n_comparisons = len(comparisons)
    summary.n_computed = kept
    summary.n_kept = len(comparisons) - len(todo)
    summary.dropped_stale = dropped
    summary.comparison_ids = [c.comparison_id for c in comparisons]
    summary.seconds = time.perf_counter() - started
    return summary


def compare(source: StoreArg, a: ConfigMethod | str, b: ConfigMethod | str, *, rounds: int = DEFAULT_ROUNDS,
            seed: int = DEFAULT_SEED, base_scenario: str | None = "auto",
            store: bool = True) -> list[dict[str, Any]]:
    """Test configuration-method ``a`` against ``b`` (per replicate and scenario, and means over tasks).

    ``base_scenario``: B's scenario for every comparison; None pairs each of A's scenarios with B's same
    scenario; "auto" picks 'standard' when B has no other (an IID-style model), else None. With ``store``
    the rows are also written to the store (see the ``significance_pairs`` view; ``source`` is then open for
    writing, a path opened so for this call). Returns the rows.
    """
    a = parse_config_method(a) if isinstance(a, str) else a
    b = parse_config_method(b) if isinstance(b, str) else b
    with held(source, write=store) as opened:
        con = opened.con
        if not store:
            _views_in_memory(con)
        arms = load_arms(con)
        b_scenario = default_base_scenario(arms, b) if base_scenario == "auto" else base_scenario
        comparisons = pair_comparisons(arms, a, b, b_scenario)
        rows = run_comparisons(con, comparisons, arms, rounds=rounds, seed=seed)
        if store:
            SignificanceWriter(opened).write(rows)
    return rows


def _views_in_memory(con: duckdb.DuckDBPyConnection) -> None:
    # A read-only look at a store written by an older beluga (no writer has migrated it yet): the digest
    # view as a temporary view.
    if has_significance(con):
        return
    sql = sql_file("views/50_significance.sql")
    start = sql.index("CREATE OR REPLACE VIEW significance_inputs")
    end = sql.index("CREATE OR REPLACE VIEW significance_pairs")
    con.execute(sql[start:end].replace("CREATE OR REPLACE VIEW", "CREATE OR REPLACE TEMP VIEW", 1))
