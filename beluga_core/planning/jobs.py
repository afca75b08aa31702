"""Folds and jobs: pure data, a job's identity the hash of what determines its result.

A fold is the case ids a model trains on and is evaluated on (and the group it holds out); a job is a fold
with everything else that determines the trained model. ``job_id`` is the one identity function of every
kind of job — the IID model, a scenario fold, a grid point — and the store's ``models.model_id``, so resume
is "skip ids already done" and a change of any setting can never be mistaken for a finished fold.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, TypeVar

from beluga_core import __version__
from beluga_core.config.schema import BenchmarkConfig, TaskSpec
from beluga_core.core.constants import IID_CONFIG, SEEN, STANDARD
from beluga_core.core.hashing import digest, ids_digest
from beluga_core.data.suite.suite_files import Suite
from beluga_core.planning.steps import Step

# Part of every job's identity, so that a change to what training or evaluation computes makes old results
# unusable rather than silently reused: bump it with such a change.
JOB_FORMAT = 1
BELUGA_MAJOR = __version__.split(".")[0]



class JobKind(Enum):
    """What a job trains and where it is stored: the IID model and a scenario model (``models``), a grid point
    (``grid_points``). The value is what a job's identity hashes (``job_identity``)."""

    IID = "iid"
    FOLD = "fold"
    GRID = "grid"

    @property
    def plural(self) -> str:
        """What the dry run calls jobs of this kind."""
        return _PLURALS[self]


_PLURALS = {JobKind.IID: "IID models", JobKind.FOLD: "scenario models", JobKind.GRID: "grid points"}
S = TypeVar("S", bound=Step)

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
    # The model of another store it starts from (``[training.configurations.NAME] start = "store:…"``): its id,
    # part of the job's identity; None for a start from the pretrained or the run's IID model (``parent_id``).
    start_model: str | None = None

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

    ``kind``: ``IID`` (the IID model), ``FOLD`` (a scenario model, stored in ``models``) or ``GRID`` (a grid
    point: trained on the fold's train ids, scored on its eval ids = T_val, stored in ``grid_points``, with
    the searched values in ``point`` and its D_val scoring in ``grid_scoring``). ``steps``: what its trained
    model is evaluated on, in order (``planning.steps``; not part of its identity: they follow from it and the
    config).
    """

    id: str
    hparams: dict[str, Any]
    # The identity of its training alone, where its id hashes more (the IID model's names the suite it is scored on,
    # which its training does not read): its training seed derives from it (``training_key``).
    training_id: str = ""
    kind: JobKind = JobKind.FOLD
    point: dict[str, Any] | None = None
    grid_scoring: Mapping[str, Any] = field(default_factory=dict)
    steps: tuple[Step, ...] = ()
    # A rung of a halving search (``planning.halving``) after the first: the previous rung's job of its point, whose
    # saved state it goes on from (not part of its identity: without that state it trains from the start, to the
    # same model).
    resume_from: str | None = None

    @property
    def is_iid_model(self) -> bool:
        return self.kind is JobKind.IID

    @property
    def training_key(self) -> str:
        """What the worker derives the training seed from: the training's identity, else the job's id."""
        return self.training_id or self.id

    @property
    def is_grid_point(self) -> bool:
        return self.kind is JobKind.GRID

    def step(self, kind: type[S]) -> S | None:
        """The job's step of type ``kind``, if it has one."""
        return next((s for s in self.steps if isinstance(s, kind)), None)


def common_identity(cfg: BenchmarkConfig, spec: TaskSpec, suite: Suite, model: str) -> dict[str, Any]:
    """What every job id of a task hashes: its suite and data, model, split and sizes."""
    sizes = cfg.sizes
    return {
        "format": JOB_FORMAT, "task": spec.name, "suite": suite.header.name,
        "suite_cases": len(suite.cases), "corrections": spec.apply_corrections, "iid": spec.iid,
        "model": model, "max_length": cfg.model.max_length, "split": cfg.split.model_dump(mode="json"),
        # Settings added after the first release enter the identity only when set, so the ids of jobs that
        # do not use them stay as they were (stores keep resuming).
        "sizes": sizes.model_dump(exclude={k for k in ("suite_test_per_group_of", "iid_mix_of", "groups_per_level")
                                           if not getattr(sizes, k)}),
        **_task_settings(cfg, spec),
    }


def iid_identity(cfg: BenchmarkConfig, spec: TaskSpec, suite: Suite, model: str) -> dict[str, Any]:
    """What the IID model's training reads, and so what its id hashes (with its seed, method and hyper-parameters):
    the task's i.i.d. data, its head (a suite's label space where the task has no head of its own: the one thing of
    the suite it reads), the model, the i.i.d. sizes and the D_val / D_test seed; and the suite's name, the suite it
    is scored on, which its training seed leaves out (``iid_training_identity``). Not the suite's cases, corrections
    or split, nor the suite-only sizes: it never trains on the suite, so a change there leaves it, and its training
    seed, as they were. What it is scored on (T_test) is checked apart from its id (``reader.done_ids``'
    ``scored_on``: a done IID model scored on other cases is run again, to the same weights). ``"identity": 2``
    tells these ids from the earlier scheme's (``legacy_iid_identity``)."""
    sizes = cfg.sizes
    return {
        # The suite's name: not read by training (``iid_training_identity`` leaves it out, and the training seed with
        # it), but the suite the model is scored on, so that a store scoring one recipe on two suites keeps two rows.
        "suite": suite.header.name,
        "format": JOB_FORMAT, "identity": 2, "task": spec.name, "iid": spec.iid, "head": suite.header.label_space,
        "model": model, "max_length": cfg.model.max_length, "iid_train": sizes.iid_train, "iid_test": sizes.iid_test,
        "iid_eval_seed": cfg.split.iid_eval_seed,
        **_task_settings(cfg, spec),
    }


def _task_settings(cfg: BenchmarkConfig, spec: TaskSpec) -> dict[str, Any]:
    """The settings every job of a task hashes, the IID model's included, each only when set (so the ids of jobs
    that do not use one stay as they were and stores keep resuming)."""
    return {
        **({"iid_metric": spec.iid_metric} if spec.iid_metric else {}),
        **({"task_options": spec.options} if spec.options else {}),
        **({"label_map": spec.label_map} if spec.label_map else {}),
        **({"model_config": cfg.model.config_overrides} if cfg.model.config_overrides else {}),
        **({"deterministic": True} if cfg.executor.deterministic else {}),
        # A named variant is a complete set of models of its own (its IID model included).
        **({"variant": cfg.variant} if cfg.variant else {}),
    }


def iid_training_identity(iid_common: Mapping[str, Any], spec: JobSpec, hparams: Mapping[str, Any]) -> dict[str, Any]:
    """What the IID model's training reads (its seed derives from the hash): its identity without the suite's name."""
    return job_identity({k: v for k, v in iid_common.items() if k != "suite"}, spec, JobKind.IID, hparams, {})


def legacy_iid_identity(common: Mapping[str, Any], spec: JobSpec, hparams: Mapping[str, Any]) -> dict[str, Any]:
    """The IID model's identity as beluga hashed it before ``iid_identity`` (identity scheme 1): the task's
    ``common_identity`` (suite, suite sizes and split included) and the T_test it is scored on. A store made then
    keeps its ids: the plan takes this one where the store holds it (``TaskPlan.new_job``), so that the folds
    that start from the model, whose ids hash its id, keep theirs and resume."""
    return {**common, "seed": spec.seed, "config": spec.config, "method": spec.method, "hparams": dict(hparams),
            "eval": ids_digest(spec.fold.eval_ids)}


def split_identity(suite: Suite, cfg: BenchmarkConfig) -> str:
    """The identity of a suite's split: the suite, the seed, the ratios and the ``[sizes]`` caps."""
    sizes = cfg.sizes
    return digest({"suite": suite.header.name, "cases": len(suite.cases), "split": cfg.split.model_dump(mode="json"),
                   "caps": [sizes.suite_train_per_group, sizes.suite_val_per_group, sizes.suite_test_per_group],
                   "caps_of": sizes.suite_test_per_group_of})


def job_identity(common: Mapping[str, Any], spec: JobSpec, kind: JobKind, hparams: Mapping[str, Any],
                 grid_scoring: Mapping[str, Any]) -> dict[str, Any]:
    """Everything that determines a job's result, as hashed.

    ``common`` is what every job of a task shares (suite, data, model, split, sizes): ``common_identity``; for
    the IID model, ``iid_identity``, what its training reads and the suite's name (not the suite's cases, nor
    what it is scored on). A fold hashes the T_test cases it is scored on, its suite cases and its parent's id.
    """
    fold = spec.fold
    out = {**common, "seed": spec.seed, "config": spec.config, "method": spec.method, "hparams": dict(hparams)}
    if kind is JobKind.IID:
        return out
    out |= {"eval": ids_digest(fold.eval_ids), "parent": spec.parent_id, "train": ids_digest(fold.train_ids),
            "beluga": BELUGA_MAJOR}
    if spec.start_model is not None:  # only when set: the ids of jobs that start elsewhere stay as they were
        out["start_model"] = spec.start_model
    if kind is JobKind.FOLD:
        return out | {"scenario": fold.scenario, "heldout": fold.heldout_group, "score_iid": spec.score_iid}
    return out | {"kind": kind.value, "scope": list(fold.scope), **grid_scoring}


def job_id(common: Mapping[str, Any], spec: JobSpec, kind: JobKind, hparams: Mapping[str, Any],
           grid_scoring: Mapping[str, Any] | None = None) -> str:
    return digest(job_identity(common, spec, kind, hparams, grid_scoring or {}))


def make_job(common: Mapping[str, Any], spec: JobSpec, hparams: dict[str, Any], *, kind: JobKind = JobKind.FOLD,
             point: dict[str, Any] | None = None, grid_scoring: Mapping[str, Any] | None = None,
             steps: tuple[Step, ...] = ()) -> Job:
    scoring = dict(grid_scoring or {})
    return Job(task=spec.task, config=spec.config, method=spec.method, seed=spec.seed, fold=spec.fold,
               parent_id=spec.parent_id, score_iid=spec.score_iid, model=spec.model, needs=spec.needs,
               start_model=spec.start_model, id=job_id(common, spec, kind, hparams, scoring), hparams=hparams,
               kind=kind, point=point, grid_scoring=scoring, steps=steps)


def iid_fold(test_ids: tuple[str, ...]) -> Fold:
    """The IID model's fold: it trains on no suite case and is scored on all of T_test (standard)."""
    return Fold(STANDARD, None, (), test_ids)


def iid_spec(task: str, seed: int, test_ids: tuple[str, ...], model: str, method: str) -> JobSpec:
    """The IID model of ``task`` and ``seed``: trained on D_train alone, scored on all of T_test and D_test."""
    return JobSpec(task=task, config=IID_CONFIG, method=method, seed=seed, fold=iid_fold(test_ids),
                   parent_id=None, score_iid=True, model=model)


def seen_fold(train_ids: tuple[str, ...], eval_ids: tuple[str, ...]) -> Fold:
    return Fold(SEEN, None, train_ids, eval_ids)
