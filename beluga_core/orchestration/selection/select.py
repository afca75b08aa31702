"""Choosing grid points from the store, by any criterion, without retraining anything.

The coordinator calls ``select_for_plan`` between its two phases; ``beluga select STORE --criterion …`` calls
``rank_grid_points`` to show what another criterion would choose.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import duckdb

from beluga_core.orchestration.selection.criteria import check_criterion, criterion_sql
from beluga_core.planning.halving import kept
from beluga_core.planning.jobs import Job, SelectionKey
from beluga_core.planning.plan import Plan
from beluga_core.store.opened import StoreArg, held

KEY_COLUMNS = ("task", "suite", "model_name", "config", "method", "seed", "split_seed", "variant", "scope_level",
               "scope_group")


@dataclass(frozen=True)
class Ranked:
    """One grid point of a selection key with its criterion value and rank (1 = chosen)."""

    key: dict[str, Any]
    grid_id: str
    point: str
    value: float | None
    rank: int
    n_points: int
    scores: dict[str, Any]


def rank_grid_points(con: duckdb.DuckDBPyConnection, criterion: str, *, grid_ids: list[str] | None = None,
                     top: int = 1) -> list[Ranked]:
    """The ``top`` best done grid points of every selection key by ``criterion``.

    Ties (and NULL values, e.g. a criterion needing D_val scores that were not computed) are broken by the
    point's JSON text, so a selection never depends on row order. A halving search's points are ranked at the last
    rung the key reached (``grid_ids``, where given, are one rung's).
    """
    check_criterion(criterion)
    where, params = "", list[object]([top])
    if grid_ids is not None:
        where, params = "WHERE grid_id IN (SELECT unnest(?::VARCHAR[]))", [list(grid_ids), top]
    partition = ", ".join(KEY_COLUMNS)
    sql = f"""
        WITH scored AS (SELECT *, {criterion_sql(criterion)} AS criterion_value FROM grid_scores {where}
                        QUALIFY rung IS NOT DISTINCT FROM max(rung) OVER (PARTITION BY {partition}))
        SELECT *, row_number() OVER (PARTITION BY {partition}
                                     ORDER BY criterion_value DESC NULLS LAST, point::VARCHAR) AS rank_,
               count(*) OVER (PARTITION BY {partition}) AS n_points_
        FROM scored
        QUALIFY rank_ <= ?
        ORDER BY {partition}, rank_"""
    cur = con.execute(sql, params)
    names = [d[0] for d in cur.description]
    rows = [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
    out = []
    for r in rows:
        value = r.pop("criterion_value")
        out.append(Ranked({k: r[k] for k in KEY_COLUMNS}, r["grid_id"], str(r["point"]),
                          None if value is None else float(value), int(r.pop("rank_")), int(r.pop("n_points_")),
                          {k: v for k, v in r.items() if k not in KEY_COLUMNS}))
    return out


def promote_rungs(store: StoreArg, plan: Plan) -> tuple[list[Job], list[Ranked]]:
    """The next rung of every halving search whose last rung has run (``planning.halving``): its best ``1/reduction``
    finished points by the config's criterion, ranked as selection ranks; and that ranking."""
    searches = [(tp, s) for tp in plan.tasks for s in tp.halving if not s.complete]
    if not searches:
        return [], []
    of = {j.id: s for _, s in searches for j in s.rungs[-1]}
    with held(store) as opened:
        ranked = rank_grid_points(opened.con, plan.config.grid.criterion, grid_ids=list(of),
                                  top=max(kept(len(s.rungs[-1]), s.reduction) for _, s in searches))
    winners: dict[int, list[str]] = {}
    for r in ranked:
        search = of[r.grid_id]
        if r.rank <= kept(len(search.rungs[-1]), search.reduction):
            winners.setdefault(id(search), []).append(r.grid_id)
    new = [j for tp, s in searches for j in tp.promote(plan.config, s, winners.get(id(s), []))]
    return new, [r for r in ranked if r.rank <= kept(len(of[r.grid_id].rungs[-2]), of[r.grid_id].reduction)]


def select_for_plan(store: StoreArg, plan: Plan) -> tuple[dict[SelectionKey, dict[str, Any]], list[Ranked]]:
    """The chosen point of every selection the plan's pending folds need, among the plan's own grid points (a halving
    search's: its last rung's)."""
    by_id = {j.id: j for j in plan.selectable_grid_jobs()}
    with held(store) as opened:
        ranked = rank_grid_points(opened.con, plan.config.grid.criterion, grid_ids=list(by_id))
    chosen: dict[SelectionKey, dict[str, Any]] = {}
    for r in ranked:
        job = by_id[r.grid_id]
        assert job.point is not None
        # The point as the plan has it (not re-read from JSON), so fold ids are exactly reproducible.
        chosen[(job.task, job.config, job.method, *job.scope)] = dict(job.point)
    return chosen, ranked


def replay_choices(store: StoreArg, plan: Plan, done: frozenset[str]) -> None:
    """Bring ``plan`` to where a run of it would stand on what ``store`` holds (``done``: its finished job ids): each
    halving rung whose every job has finished promoted, as the run promotes it; then, once every grid point has
    finished, the pending folds resolved with the choices. What the dry run of a resumed run counts."""
    while plan.halving and any(not s.complete for s in plan.halving):
        if any(j.id not in done for s in plan.halving if not s.complete for j in s.rungs[-1]):
            return
        promote_rungs(store, plan)
    if plan.pending and all(j.id in done for j in plan.grid_jobs):
        plan.resolve(select_for_plan(store, plan)[0])
