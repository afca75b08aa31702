"""Folds and jobs: pure data, a job's identity the hash of what determines its result.

A fold is the case ids a model trains on and is evaluated on (and the group it holds out); a job is a fold
with everything else that determines the trained model. ``job_id`` is the one identity function of every
kind of job — the IID model, a scenario fold, a grid point — and the store's ``models.model_id``, so resume
is "skip ids already done" and a change of any setting can never be mistaken for a finished fold.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from beluga_core import __version__
from beluga_core.core.constants import IID_CONFIG, SEEN, STANDARD
from beluga_core.core.hashing import digest, ids_digest

# Part of every job's identity, so that a change to what training or evaluation computes makes old results
# unusable rather than silently reused: bump it with such a change.
JOB_FORMAT = 1
BELUGA_MAJOR = __version__.split(".")[0]

JobKind = Literal["iid", "fold", "grid"]
# Where a grid search selects: (None, None) for the seen scenario, (level, group) for a strict-mode fold.
Scope = tuple[str | None, str | None]
# One selection: (task, configuration, method searched, scope level, scope group).
SelectionKey = tuple[str, str, str, str | None, str | None]


@dataclass(frozen=True)
class Fold:
    """The cases a model trains on and is evaluated on. ``scenario`` is ``standard``, ``seen``, the name of
    the level whose group ``heldout_group`` the fold holds out, or ``only:LEVEL=g`` for a model trained on the
    cases of group ``trained_group`` of level ``trained_level`` alone."""

    scenario: str
    heldout_group: str | None
    train_ids: tuple[str, ...]
    eval_ids: tuple[str, ...]
    trained_level: str | None = None
    trained_group: str | None = None

    @property
    def heldout_level(self) -> str | None:
        return self.scenario if self.heldout_group is not None else None

    @property
    def scope(self) -> Scope:
        return (self.heldout_level, self.heldout_group)


@dataclass(frozen=True, kw_only=True)
class JobSpec:
    """What a job trains, before its hyper-parameters are chosen (a fold waiting for a grid search)."""

    task: str
    config: str
    method: str
    seed: int
    fold: Fold
    parent_id: str | None
    score_iid: bool
    model: str
    # Jobs whose models this one reads besides its parent (a teacher); not part of its identity (the teacher's
    # source is, in the method's hyper-parameters).
    needs: tuple[str, ...] = ()

    @property
    def requires(self) -> tuple[str, ...]:
        """The jobs that must finish before this one starts: its parent and what it needs."""
        return (*((self.parent_id,) if self.parent_id else ()), *self.needs)

    @property
    def scenario(self) -> str:
        return self.fold.scenario

    @property
    def scope(self) -> Scope:
        return self.fold.scope


@dataclass(frozen=True, kw_only=True)
class Job(JobSpec):
    """A job ready to run: a ``JobSpec`` with hyper-parameters and its identity.

    ``kind``: ``iid`` (the IID model), ``fold`` (a scenario model, stored in ``models``) or ``grid`` (a grid
    point: trained on the fold's train ids, scored on its eval ids = T_val, stored in ``grid_points``, with
    the searched values in ``point`` and its D_val scoring in ``grid_scoring``).
    """

    id: str
    hparams: dict[str, Any]
    kind: JobKind = "fold"
    point: dict[str, Any] | None = None
    grid_scoring: Mapping[str, Any] = field(default_factory=dict)


def job_identity(common: Mapping[str, Any], spec: JobSpec, kind: JobKind, hparams: Mapping[str, Any],
                 grid_scoring: Mapping[str, Any]) -> dict[str, Any]:
    """Everything that determines a job's result, as hashed.

    ``common`` is what every job of a task shares (suite, data, model, split, sizes). The IID model's identity
    predates the ``beluga`` version key and the fold fields it does not have; it is kept as it is so that
    stores written by earlier versions keep resuming (and keep their IID models' training seeds).
    """
    fold = spec.fold
    out = {**common, "seed": spec.seed, "config": spec.config, "method": spec.method, "hparams": dict(hparams),
           "eval": ids_digest(fold.eval_ids)}
    if kind == "iid":
        return out
    out |= {"parent": spec.parent_id, "train": ids_digest(fold.train_ids), "beluga": BELUGA_MAJOR}
    if kind == "fold":
        return out | {"scenario": fold.scenario, "heldout": fold.heldout_group, "score_iid": spec.score_iid}
    return out | {"kind": "grid", "scope": list(fold.scope), **grid_scoring}


def job_id(common: Mapping[str, Any], spec: JobSpec, kind: JobKind, hparams: Mapping[str, Any],
           grid_scoring: Mapping[str, Any] | None = None) -> str:
    return digest(job_identity(common, spec, kind, hparams, grid_scoring or {}))


def make_job(common: Mapping[str, Any], spec: JobSpec, hparams: dict[str, Any], *, kind: JobKind = "fold",
             point: dict[str, Any] | None = None, grid_scoring: Mapping[str, Any] | None = None) -> Job:
    scoring = dict(grid_scoring or {})
    return Job(task=spec.task, config=spec.config, method=spec.method, seed=spec.seed, fold=spec.fold,
               parent_id=spec.parent_id, score_iid=spec.score_iid, model=spec.model, needs=spec.needs,
               id=job_id(common, spec, kind, hparams, scoring), hparams=hparams, kind=kind, point=point,
               grid_scoring=scoring)


def iid_fold(test_ids: tuple[str, ...]) -> Fold:
    """The IID model's fold: it trains on no suite case and is scored on all of T_test (standard)."""
    return Fold(STANDARD, None, (), test_ids)


def iid_job(common: Mapping[str, Any], task: str, seed: int, test_ids: tuple[str, ...], hparams: dict[str, Any],
            model: str, method: str) -> Job:
    spec = JobSpec(task=task, config=IID_CONFIG, method=method, seed=seed, fold=iid_fold(test_ids),
                   parent_id=None, score_iid=True, model=model)
    return make_job(common, spec, hparams, kind="iid")


def seen_fold(train_ids: tuple[str, ...], eval_ids: tuple[str, ...]) -> Fold:
    return Fold(SEEN, None, train_ids, eval_ids)
