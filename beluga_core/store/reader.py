"""Read-only access to a result store, for ``beluga report`` and friends.

Readers never recompute what a view defines: they fetch views. A read-only connection blocks the writer
(DuckDB allows one read-write process, or many readers), so open, fetch and close promptly: the writer
waits for readers, but only up to its lock timeout.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb

from beluga_core.core.errors import BelugaError
from beluga_core.core.hashing import sorted_ids_digest
from beluga_core.store.connection import DEFAULT_READ_TIMEOUT_S
from beluga_core.store.opened import StoreHandle, open_handle
from beluga_core.store.rows import TABLES

VIEWS = ("crossing_levels", "pass_rates_on_cases", "pass_rates", "suite_scores_on_cases", "suite_scores",
         "model_iid_scores", "iid_scores", "g_scores_on_cases", "g_scores", "g_summary_on_cases", "g_summary",
         "models_status", "duplicate_outcomes", "label_names", "label_distribution", "degeneracy",
         "iid_confusion", "iid_class_scores", "model_training_cases", "training_leaks", "grid_pass_rates",
         "grid_test_type_scores", "grid_scores", "scenario_summary_on_cases", "scenario_summary",
         "pass_rate_summary_on_cases", "pass_rate_summary", "report_columns", "table3", "worst_groups_on_cases",
         "worst_groups", "degeneracy_labels", "significance_inputs", "significance_pairs", "significance",
         "cross_case_bases", "cross_pass_rates", "cross_alignment_cases", "cross_alignment", "cross_scores",
         "cross_summary", "cross_pass_rate_summary",
         "only_matrix", "only_matrix_summary", "cross_comparisons", "cross_significance", "regression_pairs",
         "iid_flips", "regression_iid", "case_flips", "regression_cases", "regression_test_status",
         "regression_summary", "seed_expansions", "expansion_flips", "expansion_summary", "fewshot_status",
         "fewshot_pairs", "fewshot_group_accuracy", "fewshot_accuracy", "fewshot_seed_accuracy",
         "replicate_inputs", "replicate_summary")
RELATIONS = frozenset(TABLES) | frozenset(VIEWS)

Source = str | Path | duckdb.DuckDBPyConnection | StoreHandle


@contextmanager
def open_store(path: str | Path, *, timeout: float = DEFAULT_READ_TIMEOUT_S,
               migrate: bool = True) -> Iterator[duckdb.DuckDBPyConnection]:
    """A read-only connection to an existing beluga store, closed on exit: ``opened.open_handle``'s, for a reader
    that needs the connection only. A store of an older schema is first brought up to date (readers rely on the
    current columns and views), unless ``migrate`` is False (``store check``, which reports an older schema, and
    metadata reads)."""
    with open_handle(path, timeout=timeout, migrate=migrate) as handle:
        yield handle.con


def done_ids(source: Source, evaluations: Mapping[str, Mapping[str, str]] | None = None,
             probes: Mapping[str, Sequence[str]] | None = None,
             scored_on: Mapping[str, tuple[str, str]] | None = None) -> set[str]:
    """Ids of the models and grid points already done (a failed one is retried on resume), in a store (open, or a
    path: opened for this call).

    ``evaluations``: per model id, the eval suites it must have been evaluated on, each with the digest of
    its eval cases (``EvalSuitePlan.digest``); a done model lacking one, or evaluated on other cases, is not
    done. ``probes``: per model id, the case ids of its [fewshot] probe pool; a done model without an outcome
    for each of them (pools added, or changed by pool_cap) is not done either. ``scored_on``: per IID model id,
    the suite and the ``sorted_ids_digest`` of the T_test cases it must have outcomes for (its id does not hash
    them: ``planning.jobs.iid_identity``); a done one scored under another suite name or on other cases is not
    done: it is run again, to the same weights, and scored on the suite's cases."""
    with _connection(source) as con:
        done = {r[0] for r in con.execute("SELECT model_id FROM models WHERE status = 'done' UNION ALL "
                                          "SELECT grid_id FROM grid_points WHERE status = 'done'").fetchall()}
        wanted_probes = {mid: ids for mid, ids in (probes or {}).items() if ids and mid in done}
        if wanted_probes:
            have_probes: dict[str, set[str]] = {}
            for mid, cid in con.execute("SELECT model_id, case_id FROM probe_outcomes WHERE model_id IN "
                                        "(SELECT unnest(?::VARCHAR[]))", [list(wanted_probes)]).fetchall():
                have_probes.setdefault(mid, set()).add(cid)
            done -= {mid for mid, ids in wanted_probes.items() if not set(ids) <= have_probes.get(mid, set())}
        scored = {mid: want for mid, want in (scored_on or {}).items() if mid in done}
        if scored:
            have_scored = {mid: (suite, sorted_ids_digest(ids or [])) for mid, suite, ids in con.execute(
                "SELECT m.model_id, m.suite, list(o.case_id) FILTER (WHERE o.case_id IS NOT NULL) FROM models m "
                "LEFT JOIN outcomes o ON o.model_id = m.model_id WHERE m.model_id IN (SELECT unnest(?::VARCHAR[])) "
                "GROUP BY ALL", [list(scored)]).fetchall()}
            done -= {mid for mid, want in scored.items() if have_scored.get(mid) != tuple(want)}
        wanted = {mid: dict(e) for mid, e in (evaluations or {}).items() if e and mid in done}
        if not wanted:
            return done
        have: dict[str, dict[str, str]] = {}
        for mid, suite, cases_digest in con.execute(
                "SELECT model_id, suite, cases_digest FROM cross_evaluations").fetchall():
            have.setdefault(mid, {})[suite] = cases_digest
    return {mid for mid in done
            if mid not in wanted or all(have.get(mid, {}).get(s) == d for s, d in wanted[mid].items())}


def failed_ids(source: Source) -> set[str]:
    """Ids of the models and grid points whose last attempt failed."""
    with _connection(source) as con:
        return {r[0] for r in con.execute("SELECT model_id FROM models WHERE status = 'failed' UNION ALL "
                                          "SELECT grid_id FROM grid_points WHERE status = 'failed'").fetchall()}


# Every job that failed on every attempt (models and grid points), oldest first.
FAILED_JOBS = """
    SELECT 'model' AS kind, model_id AS job_id, task, config, method, variant, scenario,
           coalesce(heldout_group, trained_group) AS grp, seed, error_type, error, attempts, worker, finished_at
    FROM models WHERE status = 'failed'
    UNION ALL
    SELECT 'grid point', grid_id, task, config, method, variant, 'grid', scope_group, seed, error_type, error,
           attempts, worker, finished_at
    FROM grid_points WHERE status = 'failed'
    ORDER BY finished_at, job_id"""


# A model's slot: at most one done model per slot, so that no view row mixes two settings (see
# orchestration.settings_guard). Grid points have theirs (scope and point instead of scenario and group).
SLOT_COLUMNS = ("task", "suite", "model_name", "config", "method", "variant", "scenario", "heldout_group",
                "trained_group", "seed", "split_seed")
GRID_SLOT_COLUMNS = ("task", "suite", "model_name", "config", "method", "variant", "scope_level", "scope_group",
                     "seed", "split_seed", "point")

Slot = tuple[Any, ...]


def done_slots(source: Source) -> dict[Slot, tuple[str, str | None]]:
    """Every done model's and grid point's slot → (its id, its recorded settings as JSON text or None). A grid
    point's slot starts with 'grid'."""
    out: dict[Slot, tuple[str, str | None]] = {}
    with _connection(source) as con:
        for row in con.execute(f"SELECT {', '.join(SLOT_COLUMNS)}, model_id, settings::VARCHAR FROM models "
                               "WHERE status = 'done'").fetchall():
            out[tuple(row[:-2])] = (row[-2], row[-1])
        # A halving search's rungs of one point are slots of their own (the rung after the point; NULL in a full one).
        for row in con.execute(f"SELECT {', '.join(GRID_SLOT_COLUMNS[:-1])}, point::VARCHAR, "
                               "TRY_CAST(json_extract(hparams, '$.halving.rung') AS INTEGER), grid_id, "
                               "settings::VARCHAR FROM grid_points WHERE status = 'done'").fetchall():
            out[("grid", *row[:-2])] = (row[-2], row[-1])
    return out


@contextmanager
def _connection(source: Source, *, migrate: bool = True,
                timeout: float = DEFAULT_READ_TIMEOUT_S) -> Iterator[duckdb.DuckDBPyConnection]:
    """The connection of an open store (a command's), else the store at a path opened for this one read."""
    if isinstance(source, duckdb.DuckDBPyConnection):
        yield source
    elif isinstance(source, StoreHandle):
        yield source.con
    else:
        with open_store(source, migrate=migrate, timeout=timeout) as con:
            yield con


def _quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def fetch_rows(source: Source, relation: str, *, where: Mapping[str, Any] | None = None,
               order_by: Sequence[str] | None = None) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Column names and rows of a view or table; ``where`` filters on column equality (None: IS NULL).

    Rows are sorted by ``order_by`` columns, or by all columns, so output is deterministic.
    """
    if relation not in RELATIONS:
        raise BelugaError(f"unknown store view or table '{relation}'; known: {', '.join(sorted(RELATIONS))}")
    sql = f"SELECT * FROM {_quote(relation)}"
    params: list[Any] = []
    if where:
        conds = []
        for col, value in where.items():
            if value is None:
                conds.append(f"{_quote(col)} IS NULL")
            else:
                conds.append(f"{_quote(col)} = ?")
                params.append(value)
        sql += " WHERE " + " AND ".join(conds)
    sql += " ORDER BY " + (", ".join(_quote(c) for c in order_by) if order_by else "ALL")
    with _connection(source) as con:
        try:
            cur = con.execute(sql, params)
        except duckdb.BinderException as exc:
            raise BelugaError(f"cannot query '{relation}': {exc}") from exc
        columns = [d[0] for d in cur.description]
        return columns, cur.fetchall()


def fetch_dicts(source: Source, relation: str, *, where: Mapping[str, Any] | None = None,
                order_by: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """Like ``fetch_rows``, as one dict per row."""
    columns, rows = fetch_rows(source, relation, where=where, order_by=order_by)
    return [dict(zip(columns, r, strict=True)) for r in rows]


def read_meta(source: Source) -> dict[str, str]:
    """The ``beluga_meta`` key/value pairs (schema_version, beluga_version, duckdb_version, created_at, …)."""
    with _connection(source, migrate=False) as con:
        return dict(con.execute("SELECT key, value FROM beluga_meta").fetchall())


def recorded_pack_size(source: Source) -> int | None:
    """The pack size ``[executor] pack = "auto"`` chose for the store's latest run that recorded one
    (``runs.executor``), None where none did (or there is no store at the path)."""
    if isinstance(source, str | Path) and not Path(source).is_file():
        return None
    with _connection(source) as con:
        row = con.execute("""SELECT TRY_CAST(json_extract_string(executor, '$.pack.size') AS INTEGER) AS size
                             FROM runs WHERE json_extract_string(executor, '$.pack.setting') = 'auto'
                             AND size IS NOT NULL ORDER BY started_at DESC LIMIT 1""").fetchone()
    return None if row is None or row[0] is None else int(row[0])


def finished_seconds(source: Source) -> dict[str, tuple[float, float]]:
    """Job id → (train seconds, eval seconds) of the store's finished models and grid points (empty without a
    readable store): what the dry run fits its rates to (``orchestration.pricing``)."""
    if isinstance(source, str | Path) and not Path(source).is_file():
        return {}
    try:
        with _connection(source, timeout=2.0) as con:
            rows = con.execute("""SELECT model_id, train_seconds, coalesce(eval_seconds, 0) FROM models
                                  WHERE status = 'done' AND train_seconds > 0
                                  UNION ALL
                                  SELECT grid_id, train_seconds, coalesce(eval_seconds, 0) FROM grid_points
                                  WHERE status = 'done' AND train_seconds > 0""").fetchall()
    except (BelugaError, duckdb.Error):
        return {}
    return {str(i): (float(t), float(e)) for i, t, e in rows}

