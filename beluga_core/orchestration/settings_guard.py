"""One store, many runs: a run never adds a model beside a stored one of the same slot with other settings.

Every view keys on (task, suite, model, configuration, method, variant, scenario, seed, split seed): a slot (that
key plus the held-out group) holds one model. A re-run whose settings are unchanged has the same job ids and
resumes; one whose settings changed has new ids for the same slots, and writing them would put two models, of
two settings, under one view row (or, for the settings that shape a model outside its id, such as the precision
policy, would pass the stored models off as this run's). Such a run is refused before anything trains, naming
the settings that differ (the stored models' recorded settings against the run's), and the two ways out:
another store, or a variant name of its own (which every view keys on).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from beluga_core.core.errors import BelugaError
from beluga_core.planning.halving import rung_of
from beluga_core.planning.jobs import Job
from beluga_core.planning.plan import Plan, TaskPlan
from beluga_core.store.opened import StoreHandle
from beluga_core.store.reader import Slot, done_slots
from beluga_core.store.rows import canonical_json

# What the identity's keys mean, for the message (the rest are named by their path, e.g. hparams.method.rho).
_MEANING = {"eval": "the T_test cases it is scored on", "train": "the suite cases it trains on",
            "parent": "the model it starts from, whose own settings changed", "beluga": "beluga's major version",
            "format": "beluga's job format (a new beluga computes this job differently)"}


def job_slot(tp: TaskPlan, job: Job) -> Slot:
    """The slot ``job``'s model (or grid point) takes in the store (reader.SLOT_COLUMNS / GRID_SLOT_COLUMNS)."""
    common = tp.common
    key = (job.task, tp.suite.header.name, job.model, job.config, job.method, tp.rows_variant)
    if job.is_grid_point:
        rung = rung_of(job.hparams)
        return ("grid", *key, job.fold.heldout_level, job.fold.heldout_group, job.seed, common["split"]["seed"],
                canonical_json(job.point or {}), None if rung is None else rung.index)
    fold = job.fold
    return (*key, fold.scenario, fold.heldout_group, fold.trained_group, job.seed, common["split"]["seed"])


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """Nested dicts as {dotted.path: leaf}."""
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for k, v in value.items():
            out |= flatten(v, f"{prefix}.{k}" if prefix else str(k))
        return out
    return {prefix: value}


def settings_diff(stored: Mapping[str, Any], wanted: Mapping[str, Any]) -> list[str]:
    """What differs between two job identities, as 'path: old → new' lines ('(unset)' where one lacks it)."""
    old, new = flatten(stored), flatten(wanted)
    lines = []
    for path in sorted(set(old) | set(new)):
        if old.get(path, _UNSET) == new.get(path, _UNSET):
            continue
        top = path.split(".", 1)[0]
        if top in _MEANING:
            lines.append(f"{path} ({_MEANING[top]})")
        else:
            lines.append(f"{path}: {_show(old.get(path, _UNSET))} → {_show(new.get(path, _UNSET))}")
    return lines


_UNSET = object()


def _show(value: Any) -> str:
    return "(unset)" if value is _UNSET else json.dumps(value, ensure_ascii=False, default=str)


def check_settings(plan: Plan, jobs: Iterable[Job] | None = None, *, opened: StoreHandle | None = None) -> None:
    """Refuse (``BelugaError``, exit 2) when the store holds a done model or grid point in the slot of one of
    ``jobs`` (default: the plan's known jobs and grid points) under another id. ``opened``: the store as the command
    holds it open (None: read at its path, where there is one yet)."""
    store = plan.store_path()
    if opened is None and not store.exists():
        return
    stored = done_slots(opened if opened is not None else store)
    if not stored:
        return
    by_task = {tp.spec.name: tp for tp in plan.tasks}
    todo = list(jobs) if jobs is not None else [*plan.jobs, *plan.grid_jobs]
    cells: dict[tuple[str, str, str], list[tuple[Job, str, str | None]]] = defaultdict(list)
    for job in todo:
        tp = by_task[job.task]
        found = stored.get(job_slot(tp, job))
        if found is None:
            continue
        # Another id in the slot; or the same id with settings that shape it outside its id (precision).
        if found[0] != job.id or (found[1] is not None and json.loads(found[1]) != tp.settings(job)):
            cells[(job.task, job.config, job.method)].append((job, *found))
    if cells:
        raise BelugaError(_message(plan, store, cells, by_task))


def _message(plan: Plan, store: Path, cells: Mapping[tuple[str, str, str], list[tuple[Job, str, str | None]]],
             by_task: Mapping[str, TaskPlan]) -> str:
    variant = plan.config.variant
    lines = [f"the store {store} already holds models of {len(cells)} (task, configuration, method) cell(s) "
             f"{'of variant ' + repr(variant) + ' ' if variant else ''}trained with other settings than this run's; "
             "writing this run's beside them would mix two settings in every view:"]
    for (task, config, method), clashes in sorted(cells.items()):
        job, _, settings = clashes[0]
        if job.is_iid_model and (settings is None or "identity" not in json.loads(settings)):
            why = ("its IID model was stored by a beluga before the IID model's second identity scheme, whose id "
                   "hashed the suite's cases, [sizes] and [split] and the T_test it was scored on besides what its "
                   "training reads: with any of them changed it cannot be matched to this run's")
        elif settings is None:
            why = "its models were stored by an earlier beluga that did not record their settings; their ids differ"
        else:
            diff = settings_diff(json.loads(settings), by_task[task].settings(job))
            why = "; ".join(diff[:6]) + (f"; … {len(diff) - 6} more" if len(diff) > 6 else "")
        lines.append(f"  {task} {config}/{method} ({len(clashes)} model(s)): {why}")
    lines.append("A store keeps one set of settings per cell and variant. Either write this run to another store "
                 "(`beluga run CONFIG --store OTHER.duckdb`), or give its settings a variant name of their own "
                 "(`beluga run CONFIG --variant NAME`, or `variant = \"NAME\"` in the config): every view keys on the "
                 "variant, and `beluga report STORE --variant NAME` shows it.")
    return "\n".join(lines)
