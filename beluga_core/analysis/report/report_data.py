"""The store's rows a report is built from, fetched from its views in one short read-only connection; what the
report shows of them is ``sections`` (its sections, built once for every format).

Reports compute no score: every number is a column of a view (views/40_report.sql: ``table3``,
``scenario_summary``, ``pass_rate_summary``, ``worst_groups``, ``degeneracy_labels``; and ``significance``).
What is left here is layout: which rows and columns, in which order.

A run may be writing the store: the connection is held for well under a second, and what it sees is what
is finished so far (the writer commits one whole model at a time).
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb

from beluga_core.analysis.ranking.rank_inputs import grid_selected_on_seen
from beluga_core.analysis.sweeps.curves import Curves, read_curves
from beluga_core.core.errors import BelugaError, did_you_mean
from beluga_core.store.connection import aggregate_row, table_names, utc_now
from beluga_core.store.opened import StoreArg, held
from beluga_core.store.reader import FAILED_JOBS
from beluga_core.store.run_liveness import Liveness, running_runs
from beluga_core.store.significance import has_cross, has_regression, has_significance

# cross_alignment_cases counted per bootstrap unit, replicates pooled (the report's alignment intervals).
ALIGNMENT_UNITS = """
    SELECT task, suite, config, method, variant, scenario, eval_suite, mapped_level, eval_group, mapped_group, side,
           unit,
           count(*) FILTER (WHERE outcome = 'pass') AS n_pass, count(*) FILTER (WHERE outcome <> 'skip') AS n_eval
    FROM cross_alignment_cases
    GROUP BY ALL
    ORDER BY ALL"""


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
    """Rows of the report views. The figure inputs (pass rates, layouts, worst groups) are read only for the
    Markdown / HTML reports; the terminal table leaves them empty."""

    store: Path
    read_at: datetime
    runs: list[dict[str, Any]]
    n_done: int
    n_failed: int
    table3: list[dict[str, Any]]                   # the table3 view
    significance: list[dict[str, Any]] | None      # the significance view; None: no significance views
    n_tests: int                                   # stored significance tests (0: `beluga analyze` never ran)
    degeneracy: list[dict[str, Any]]               # the degeneracy_labels view
    columns: list[dict[str, Any]] = field(default_factory=list)            # report_columns
    scenario_scores: list[dict[str, Any]] = field(default_factory=list)    # scenario_summary
    pass_rates: list[dict[str, Any]] = field(default_factory=list)         # pass_rate_summary
    worst_groups: list[dict[str, Any]] = field(default_factory=list)       # worst_groups
    # The same three on a crossing level's cases (`cases_of`): the seen and standard scenarios beside its column.
    crossing_scores: list[dict[str, Any]] = field(default_factory=list)    # scenario_summary_on_cases
    crossing_pass_rates: list[dict[str, Any]] = field(default_factory=list)  # pass_rate_summary_on_cases
    crossing_worst_groups: list[dict[str, Any]] = field(default_factory=list)  # worst_groups_on_cases
    layouts: dict[str, SuiteLayout] = field(default_factory=dict)
    cross_summary: list[dict[str, Any]] = field(default_factory=list)        # cross-suite evaluation
    cross_significance: list[dict[str, Any]] = field(default_factory=list)
    cross_pass_rates: list[dict[str, Any]] = field(default_factory=list)     # cross_pass_rate_summary
    only_matrix_summary: list[dict[str, Any]] = field(default_factory=list)
    alignment_units: list[dict[str, Any]] = field(default_factory=list)      # cross_alignment_cases per unit
    regression: list[dict[str, Any]] = field(default_factory=list)           # regression_summary
    vote_share: set[tuple[str, str]] = field(default_factory=set)            # (config, method) of vote ensembles
    failing_words: list[dict[str, Any]] = field(default_factory=list)        # failing_words (attributions)
    fewshot: list[dict[str, Any]] = field(default_factory=list)              # fewshot_accuracy (beluga rank)
    fewshot_pairs: list[dict[str, Any]] = field(default_factory=list)        # fewshot_pairs
    fewshot_seeds: list[dict[str, Any]] = field(default_factory=list)        # fewshot_seed_accuracy
    grid_on_seen: set[str] = field(default_factory=set)                      # tasks selected on the seen T_val
    halving: list[dict[str, Any]] = field(default_factory=list)              # grid_halving (halving searches)
    variant: str = ""                        # the variant shown (every row read is of it)
    variants: list[str] = field(default_factory=list)                        # every variant with a done model
    failed: list[dict[str, Any]] = field(default_factory=list)               # the variant's failed jobs
    replicates: list[dict[str, Any]] = field(default_factory=list)           # replicate_summary (intervals)
    seed_scores: list[dict[str, Any]] = field(default_factory=list)          # g_scores per seed (figures)
    curves: Curves = field(default_factory=Curves)    # every sweep's curves (all its points: every variant)
    # Configurations whose models start from a model of another store (config, model_id, selector, store).
    outside_starts: list[dict[str, Any]] = field(default_factory=list)
    # The runs recorded 'running', each judged running or interrupted (store.run_liveness: "Runs that died").
    unfinished: list[Liveness] = field(default_factory=list)

    @property
    def running(self) -> list[dict[str, Any]]:
        """The runs recorded 'running' whose coordinator is not known to be gone (those are in ``interrupted``)."""
        dead = {r.run_id for r in self.interrupted}
        return [r for r in self.runs if r["status"] == "running" and r["run_id"] not in dead]

    @property
    def interrupted(self) -> list[Liveness]:
        """The runs recorded 'running' whose coordinator is gone (killed outright): what they finished is here."""
        return [r for r in self.unfinished if not r.running]


def run_lines(data: ReportData) -> list[str]:
    """A line per run recorded as running: still going, or interrupted and when it was last alive (every report
    format, the result site and the terminal table)."""
    return [r.report_line() for r in data.unfinished]


def _dicts(con: duckdb.DuckDBPyConnection, sql: str, variant: str | None = None) -> list[dict[str, Any]]:
    """Rows of ``sql``; with ``variant``, only the rows of that variant (rows without the column are kept)."""
    cur = con.execute(sql)
    names = [d[0] for d in cur.description]
    rows = [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
    if variant is None or "variant" not in names:
        return rows
    return [r for r in rows if r["variant"] == variant]


def store_variants(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The variants with a done model, the unnamed one ('') first."""
    return [r[0] for r in con.execute("SELECT DISTINCT variant FROM scored_models WHERE status = 'done' "
                                      "ORDER BY variant <> '', variant").fetchall()]


def pick_variant(variants: list[str], wanted: str | None, store: Path) -> str:
    """The variant a report shows: ``wanted`` (which must be in the store), else the unnamed one or the only one."""
    if wanted is not None:
        if variants and wanted not in variants:
            shown = ", ".join(variant_name(v) for v in variants)
            raise BelugaError(f"no variant {wanted!r} in the store{did_you_mean(wanted, variants)}; it holds "
                              f"{shown}", source=store)
        return wanted
    return variants[0] if variants else ""


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


def variant_name(variant: str) -> str:
    return repr(variant) if variant else "(unnamed)"


def scope_lines(data: ReportData, limit: int = 5) -> list[str]:
    """What a report says beside its tables: which variant it shows, and the jobs that failed (left out of every
    figure), each with its held-out group and error."""
    lines = []
    if len(data.variants) > 1 or data.variant:
        others = ", ".join(variant_name(v) for v in data.variants if v != data.variant)
        lines.append(f"Variant {variant_name(data.variant)}" + (f"; the store also holds {others} (`--variant NAME` "
                                                              "shows one)" if others else "") + ".")
    for s in data.outside_starts:
        lines.append(f"{s['config']} starts from model {s['model_id'][:12]} ({s['selector']}) of {s['store']}, "
                     "another store's, not from the pretrained or this run's IID model.")
    if data.failed:
        lines.append(f"{len(data.failed)} job(s) failed and are left out of every figure (re-running the config "
                     "retries them; `SELECT * FROM models WHERE status = 'failed'` has their tracebacks):")
        for f in data.failed[:limit]:
            where = f"{f['scenario']}={f['grp']}" if f["grp"] is not None else f["scenario"]
            lines.append(f"  {f['config']}/{f['method']} {where} seed {f['seed']}: {f['error']} (attempts "
                         f"{f['attempts']}, {f['worker']})")
        if len(data.failed) > limit:
            lines.append(f"  … and {len(data.failed) - limit} more")
    return lines


OUTSIDE_STARTS = """SELECT DISTINCT config, variant, settings->'start_from'->>'model_id' AS model_id,
                           settings->'start_from'->>'selector' AS selector, settings->'start_from'->>'store' AS store
                    FROM models WHERE status = 'done' AND (settings->'start_from') IS NOT NULL ORDER BY ALL"""


def read_report_data(store: StoreArg, *, figures: bool = True, variant: str | None = None) -> ReportData:
    """The rows a report shows, of one variant (``variant``, else the unnamed one or the store's only one), read from
    the open ``store`` (a path: opened for this call); ``figures=False`` (the terminal table) skips the heatmaps'
    inputs."""
    with held(store) as opened:
        con, path = opened.con, opened.path
        variants = store_variants(con)
        v = pick_variant(variants, variant, path)

        def rows(sql: str) -> list[dict[str, Any]]:
            return _dicts(con, sql, v)

        runs = _dicts(con, "SELECT run_id, status, started_at, finished_at FROM runs ORDER BY started_at")
        n_done, n_failed = aggregate_row(con, "SELECT coalesce(sum(n_done), 0), coalesce(sum(n_failed), 0) "
                                              "FROM models_status WHERE variant = ?", [v])
        table3 = rows("SELECT * FROM table3 ORDER BY ALL")
        significance, n_tests = None, 0
        if has_significance(con):
            significance = rows("SELECT * FROM significance")
            n_tests = int(aggregate_row(con, "SELECT count(*) FROM significance_tests WHERE variant = ?", [v])[0])
        degeneracy = rows("SELECT * FROM degeneracy_labels ORDER BY ALL")
        data = ReportData(path, utc_now(), runs, int(n_done), int(n_failed),
                          table3, significance, n_tests, degeneracy, variant=v, variants=variants,
                          failed=rows(FAILED_JOBS))
        data.outside_starts = rows(OUTSIDE_STARTS)
        data.unfinished = running_runs(con, path)
        data.curves = read_curves(opened)
        if "replicate_summary" in table_names(con):
            data.replicates = rows("SELECT * FROM replicate_summary WHERE grp = '' ORDER BY ALL" if not figures
                                   else "SELECT * FROM replicate_summary ORDER BY ALL")
        if has_cross(con):
            data.cross_summary = rows("SELECT * FROM cross_summary ORDER BY ALL")
            data.cross_significance = rows("SELECT * FROM cross_significance ORDER BY ALL")
            data.cross_pass_rates = rows("SELECT * FROM cross_pass_rate_summary ORDER BY ALL")
            data.only_matrix_summary = rows("SELECT * FROM only_matrix_summary ORDER BY ALL")
            data.alignment_units = rows(ALIGNMENT_UNITS)
        if has_regression(con):
            data.regression = rows("SELECT * FROM regression_summary ORDER BY ALL")
            data.vote_share = {(r[0], r[1]) for r in con.execute(
                "SELECT DISTINCT config, method FROM models WHERE hparams->>'vote_share' = 'true' AND variant = ?",
                [v]).fetchall()}
        if "fewshot_rankings" in table_names(con):
            data.fewshot = rows("SELECT * FROM fewshot_accuracy ORDER BY ALL")
            data.fewshot_seeds = rows("SELECT * FROM fewshot_seed_accuracy ORDER BY ALL")
            data.grid_on_seen = {t for (t,) in con.execute("SELECT DISTINCT task FROM grid_selections").fetchall()
                                 if grid_selected_on_seen(con, t)}
            if figures:
                data.fewshot_pairs = rows("SELECT * FROM fewshot_pairs ORDER BY ALL")
        if figures and "grid_halving" in table_names(con):   # views a writer of this beluga has created
            data.halving = rows("SELECT * FROM grid_halving ORDER BY ALL")
        if figures and "failing_words" in table_names(con):
            data.failing_words = rows("SELECT * FROM failing_words ORDER BY ALL")
        if figures:
            data.columns = rows("SELECT * FROM report_columns ORDER BY ALL")
            data.scenario_scores = rows("SELECT * FROM scenario_summary ORDER BY ALL")
            data.pass_rates = rows("SELECT * FROM pass_rate_summary ORDER BY ALL")
            data.worst_groups = rows("SELECT * FROM worst_groups ORDER BY ALL")
            if "worst_groups_on_cases" in table_names(con):   # views a writer of this beluga has created
                data.crossing_scores = rows("SELECT * FROM scenario_summary_on_cases WHERE cases_of IS NOT NULL "
                                            "ORDER BY ALL")
                data.crossing_pass_rates = rows("SELECT * FROM pass_rate_summary_on_cases "
                                                "WHERE cases_of IS NOT NULL ORDER BY ALL")
                data.crossing_worst_groups = rows("SELECT * FROM worst_groups_on_cases WHERE cases_of IS NOT NULL "
                                                  "ORDER BY ALL")
            data.seed_scores = rows("SELECT task, config, method, variant, scenario, seed, g FROM g_scores "
                                    "ORDER BY ALL")
            data.layouts = suite_layouts(con)
    return data
