"""Models from outside the run: the ``store:PATH#SELECTOR`` and ``path:DIR`` sources of a method's ``teacher``
resolved, while the plan is built, to the file or folder holding the weights (``Plan.teachers``), and the
``store:PATH#SELECTOR`` a configuration starts from (``[training.configurations.NAME] start``) to the model and
what it trained on (``TaskPlan.starts``), so that a missing store, an unknown selector or weights that were not
kept stop the run at once, naming the source.

Planning may not read stores (a lower layer): ``plan_with_stores`` is the one place that gives it this layer's
resolvers.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import duckdb

from beluga_core.config.schema import BenchmarkConfig
from beluga_core.core.errors import BelugaError
from beluga_core.execution.worker import cache_dir_for, weights_path
from beluga_core.planning.plan import Plan, build_plan, store_path_of
from beluga_core.planning.start_sources import StartModel
from beluga_core.store.opened import StoreHandle
from beluga_core.store.reader import done_ids, open_store
from beluga_core.store.selectors import select_models, select_one, selector_text


def plan_with_stores(cfg: BenchmarkConfig, config_path: Path, *, allow_missing_tasks: bool = False,
                     config_changes: Sequence[str] = (), store: StoreHandle | None = None) -> Plan:
    """The complete plan of a run: planning's, with the outside teachers resolved by ``teacher_weights``, and the
    run's store's done models, whose IID models of an earlier id scheme keep their ids. ``config_changes``: what
    made ``cfg`` differ from the file at ``config_path`` (``Plan.config_changes``). ``store``: the run's store as
    ``beluga run`` holds it open for planning (None: read at its path, where there is one yet)."""
    path = store_path_of(cfg, config_path)
    source: StoreHandle | Path | None = store if store is not None else path if path.exists() else None
    plan = build_plan(cfg, config_path, allow_missing_tasks=allow_missing_tasks, teachers=teacher_weights,
                      starts=start_model, store_ids=done_ids(source) if source is not None else ())
    plan.config_changes = tuple(config_changes)
    return plan


def store_source(text: str, base: Path) -> tuple[Path, str]:
    """(the store, the selector) of ``PATH#SELECTOR`` (a relative path from ``base``)."""
    store_text, _, selector = text.partition("#")
    store = Path(store_text).expanduser()
    return (store if store.is_absolute() else base / store).resolve(), selector


def teacher_weights(source: str, *, task: str, model: str, base: Path) -> str:
    """The file or folder of an outside teacher: a ``path:`` as given (relative to ``base``), a ``store:``
    model's kept weights (it must be a model of ``task``, the same pretrained ``model`` as the run's)."""
    kind, _, rest = source.partition(":")
    if kind == "path":
        path = Path(rest).expanduser()
        path = path if path.is_absolute() else base / path
        if not path.exists():
            raise BelugaError(f"teacher '{source}': no such file or folder {path}")
        return str(path)
    store, selector = store_source(rest, base)
    with open_store(store) as con:
        row = select_one(con, selector, where=str(store), task=task)
    if row["model_name"] != model:
        raise BelugaError(f"teacher '{source}' is a {row['model_name']} model; the run trains {model}: a teacher "
                          "read from a store must be the same model")
    weights = weights_path(cache_dir_for(store), row["model_id"])
    if not weights.exists():
        raise BelugaError(f"teacher '{source}': model {row['model_id'][:12]} is in {store} but its weights were not "
                          f"kept ({weights}); keep them with [store] keep_weights, or name a saved checkpoint with "
                          "path:DIR")
    return str(weights)


def start_model(source: str, *, task: str, model: str, labels: list[str] | None, model_config: Mapping[str, Any],
                base: Path) -> StartModel:
    """The done model a ``store:PATH#SELECTOR`` start names, and what it trained on (its store's
    ``model_training_cases``, and those of the model it started from, followed back): it must be a model of
    ``task`` with head ``labels``, of the same pretrained ``model`` and ``[model] config_overrides``."""
    store, selector = store_source(source.removeprefix("store:"), base)
    with open_store(store) as con:
        row = _one_of_task(con, selector, store, task)
        settings = _settings(con, row["model_id"])
        theirs = _head(con, row["task"], row["suite"])
        trained = _trained_cases(con, row["model_id"])
    what = f"model {row['model_id'][:12]} ({selector_text(row)}) of {store}"
    if row["model_name"] != model:
        raise BelugaError(f"{what} is a {row['model_name']} model; the run trains {model}: a start model must be "
                          "the same pretrained model")
    if dict(settings.get("model_config") or {}) != dict(model_config):
        raise BelugaError(f"{what} was built with [model] config_overrides {settings.get('model_config') or {}}, "
                          f"the run with {dict(model_config)}: its weights would not fit the run's model")
    if labels is not None and theirs is not None and theirs != labels:
        raise BelugaError(f"{what} has a head with classes {theirs}; the run's task '{task}' needs {labels}: a "
                          "start model must have the run's label space")
    for suite, ids in _followed_back(settings).items():
        trained[suite] = trained.get(suite, frozenset()) | ids
    return StartModel(source, row["model_id"], selector_text(row), str(store),
                      str(weights_path(cache_dir_for(store), row["model_id"])), str(settings.get("iid")), trained)


def _one_of_task(con: duckdb.DuckDBPyConnection, selector: str, store: Path, task: str) -> dict[str, Any]:
    """The one done model of ``task`` a selector names; when it names models of other tasks only, an error
    saying so."""
    try:
        select_models(con, selector, where=str(store), task=task)
    except BelugaError as exc:
        try:
            other = select_models(con, selector, where=str(store))
        except BelugaError:
            raise exc from None
        tasks = sorted({r["task"] for r in other})
        raise BelugaError(f"selector '{selector}' names no done model of task '{task}' in {store}, only of task(s) "
                          f"{', '.join(tasks)}: a start model must be of the run's task") from None
    return select_one(con, selector, where=str(store), task=task)


def _settings(con: duckdb.DuckDBPyConnection, model_id: str) -> dict[str, Any]:
    row = con.execute("SELECT settings::VARCHAR FROM models WHERE model_id = ?", [model_id]).fetchone()
    return json.loads(row[0]) if row is not None and row[0] is not None else {}


def _head(con: duckdb.DuckDBPyConnection, task: str, suite: str | None) -> list[str] | None:
    row = con.execute("SELECT labels::VARCHAR FROM task_heads h "
                      "WHERE same_suite(h, {'task': ?::VARCHAR, 'suite': ?::VARCHAR})",
                      [task, suite]).fetchone()
    return json.loads(row[0]) if row is not None and row[0] is not None else None


def _trained_cases(con: duckdb.DuckDBPyConnection, model_id: str) -> dict[str, frozenset[str]]:
    out: dict[str, set[str]] = {}
    for suite, case_id in con.execute("SELECT suite, case_id FROM model_training_cases WHERE model_id = ?",
                                      [model_id]).fetchall():
        out.setdefault(suite, set()).add(case_id)
    return {suite: frozenset(ids) for suite, ids in out.items()}


def _followed_back(settings: Mapping[str, Any], seen: frozenset[str] = frozenset()) -> dict[str, frozenset[str]]:
    """The suite cases that the start model's own start models trained on (``settings.start_from``, recorded with
    every model that started from another store's)."""
    start = settings.get("start_from")
    if not start or start["model_id"] in seen:
        return {}
    store = Path(start["store"])
    try:
        with open_store(store) as con:
            trained = _trained_cases(con, start["model_id"])
            earlier = _settings(con, start["model_id"])
    except BelugaError:
        raise BelugaError(f"it started from model {start['model_id'][:12]} of {store}, which cannot be read, so what "
                          "it trained on is unknown") from None
    for suite, ids in _followed_back(earlier, seen | {start["model_id"]}).items():
        trained[suite] = trained.get(suite, frozenset()) | ids
    return trained
