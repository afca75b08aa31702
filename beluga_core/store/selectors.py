"""Model selectors: how a user names models of a store on the command line and in configs.

``CONFIG/METHOD[~VARIANT][@SCENARIO[=GROUP]][#SEED]`` — e.g. ``iid/vanilla@standard#0``, ``iid-update/distill#1``,
``iid-then-t/vanilla@functionality`` (every fold model of that scenario), ``iid-then-t/vanilla@class=Negation``
(the fold that held Negation out; an ``only:LEVEL=g`` scenario is named whole) — or a model id (or a unique
prefix of at least 8 characters). ``METHOD`` defaults to vanilla; without ``@SCENARIO``, the models that hold
nothing out are meant (standard, seen), which is one model per seed for most configurations. Without
``~VARIANT``, the models of the unnamed variant (``beluga run --variant``) are meant.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import duckdb

from beluga_core.core.errors import BelugaError

_SELECTOR = re.compile(r"^(?P<config>[^/@#~]+)(?:/(?P<method>[^@#~]+))?(?:~(?P<variant>[^@#]+))?"
                       r"(?:@(?P<scenario>[^#]+))?(?:#(?P<seed>-?\d+))?$")
MODEL_COLUMNS = ("model_id", "task", "suite", "model_name", "config", "method", "scenario", "heldout_level",
                 "heldout_group", "seed", "split_seed", "parent_model_id", "hparams", "variant")


@dataclass(frozen=True)
class Selector:
    text: str
    config: str | None = None
    method: str | None = None
    scenario: str | None = None
    seed: int | None = None
    group: str | None = None      # the held-out group of a fold scenario
    model_id: str | None = None   # a bare word: a model id (or prefix) if one matches, else a configuration
    variant: str = ""

    @classmethod
    def parse(cls, text: str) -> Selector:
        text = text.strip()
        if not text:
            raise BelugaError("an empty model selector; expected CONFIG/METHOD[@SCENARIO][#SEED] or a model id")
        bare = not any(c in text for c in "/@#~")
        m = _SELECTOR.match(text)
        if bare and m is not None:   # a model id (or its prefix), else a configuration with its vanilla method
            return cls(text, text, "vanilla", model_id=text)
        if m is None:
            raise BelugaError(f"model selector '{text}': expected CONFIG/METHOD[~VARIANT][@SCENARIO][#SEED] (e.g. "
                              "iid/vanilla@standard#0) or a model id")
        seed = m.group("seed")
        scenario, group = m.group("scenario"), None
        if scenario is not None and "=" in scenario and not scenario.startswith("only:"):
            scenario, group = scenario.split("=", 1)
        return cls(text, m.group("config"), m.group("method") or "vanilla", scenario,
                   int(seed) if seed is not None else None, group, variant=m.group("variant") or "")

    def __str__(self) -> str:
        return self.text


def selector_text(row: dict[str, Any]) -> str:
    """The selector that names a model row: ``CONFIG/METHOD[~VARIANT]@SCENARIO[=GROUP][#SEED]`` (its label in
    reports)."""
    variant = f"~{row['variant']}" if row.get("variant") else ""
    group = f"={row['heldout_group']}" if row.get("heldout_group") is not None else ""
    seed = f"#{row['seed']}" if row.get("seed") is not None else ""
    return f"{row['config']}/{row['method']}{variant}@{row['scenario']}{group}{seed}"


def select_models(con: duckdb.DuckDBPyConnection, selector: Selector | str, *, where: str = "store",
                  task: str | None = None) -> list[dict[str, Any]]:
    """The done models a selector names (model rows as dicts, ordered by seed and group); an error naming what
    the store holds when none matches."""
    sel = Selector.parse(selector) if isinstance(selector, str) else selector
    cols = ", ".join(MODEL_COLUMNS)
    rows: list[tuple[Any, ...]] = []
    if sel.model_id is not None:   # an id, or a unique prefix of at least 8 characters
        rows = con.execute(f"SELECT {cols} FROM models WHERE status = 'done' AND (model_id = ? OR "
                           "(length(?) >= 8 AND starts_with(model_id, ?))) ORDER BY model_id",
                           [sel.model_id] * 3).fetchall()
        exact = [r for r in rows if r[0] == sel.model_id]
        rows = exact or rows
        if len(rows) > 1:
            raise BelugaError(f"model id prefix '{sel.model_id}' is ambiguous in {where}: "
                              + ", ".join(str(r[0])[:16] for r in rows[:5]))
    if not rows and sel.config is not None:
        conditions, params = _named(sel, task)
        order = "seed NULLS FIRST, scenario, heldout_group NULLS FIRST, model_id"
        rows = con.execute(f"SELECT {cols} FROM models WHERE status = 'done' AND {conditions} ORDER BY {order}",
                           params).fetchall()
    if not rows:
        unfinished = _unfinished(con, sel, task)
        if unfinished:
            raise BelugaError(f"model selector '{sel}' names no done model in {where}: "
                              + "; ".join(f"model {i[:12]} is {status}" for i, status in unfinished[:5])
                              + (" …" if len(unfinished) > 5 else "") + " (finish its run, or name a done model)")
        held = con.execute("SELECT DISTINCT config || '/' || method || CASE WHEN variant = '' THEN '' ELSE '~' || "
                           "variant END || '@' || scenario || coalesce('#' || seed, '') "
                           "FROM models WHERE status = 'done' AND heldout_level IS NULL ORDER BY 1").fetchall()
        listing = ", ".join(r[0] for r in held[:12]) + (" …" if len(held) > 12 else "")
        raise BelugaError(f"model selector '{sel}' names no done model in {where}; it holds {listing or 'none'}")
    return [dict(zip(MODEL_COLUMNS, r, strict=True)) for r in rows]


def _unfinished(con: duckdb.DuckDBPyConnection, sel: Selector, task: str | None) -> list[tuple[str, str]]:
    """(model id, status) of the models a selector names that are not done (failed, or of an interrupted run)."""
    if sel.model_id is not None:
        found = con.execute("SELECT model_id, status FROM models WHERE status <> 'done' AND (model_id = ? OR "
                            "(length(?) >= 8 AND starts_with(model_id, ?))) ORDER BY model_id",
                            [sel.model_id] * 3).fetchall()
        if found:
            return [(str(i), str(s)) for i, s in found]
    if sel.config is None:
        return []
    conditions, params = _named(sel, task)
    return [(str(i), str(s)) for i, s in con.execute(
        f"SELECT model_id, status FROM models WHERE status <> 'done' AND {conditions} ORDER BY model_id",
        params).fetchall()]


def _named(sel: Selector, task: str | None) -> tuple[str, list[Any]]:
    """The WHERE condition (and its parameters) of the models a CONFIG/METHOD… selector names, of any status."""
    conditions = ["config = ?", "method = ?", "variant = ?"]
    params: list[Any] = [sel.config, sel.method, sel.variant]
    if sel.scenario is not None:
        conditions.append("scenario = ?")
        params.append(sel.scenario)
        if sel.group is not None:
            conditions.append("heldout_group = ?")
            params.append(sel.group)
    else:
        conditions.append("heldout_level IS NULL AND trained_group IS NULL")
    if sel.seed is not None:
        conditions.append("seed = ?")
        params.append(sel.seed)
    if task is not None:
        conditions.append("task = ?")
        params.append(task)
    return " AND ".join(conditions), params


def select_one(con: duckdb.DuckDBPyConnection, selector: Selector | str, *, where: str = "store",
               task: str | None = None) -> dict[str, Any]:
    """The one done model a selector names; an error listing the candidates when it names several."""
    rows = select_models(con, selector, where=where, task=task)
    if len(rows) > 1:
        listing = "; ".join(f"{r['model_id'][:12]} ({r['config']}/{r['method']}@{r['scenario']}"
                            f"{'' if r['heldout_group'] is None else ' ' + str(r['heldout_group'])}"
                            f"{'' if r['seed'] is None else ' #' + str(r['seed'])})" for r in rows[:6])
        raise BelugaError(f"model selector '{selector}' names {len(rows)} models in {where}; name one (add "
                          f"@SCENARIO[=GROUP] or #SEED, or give its id): {listing}{' …' if len(rows) > 6 else ''}")
    return rows[0]
