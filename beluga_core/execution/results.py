"""What a worker hands back for a finished job: one typed record, from the worker to the store writer.

The store's ``models`` and ``grid_points`` columns are these records' fields (the writer derives its column
lists from them), so a model row is spelled once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any

import numpy as np

from beluga_core.attributions.compute import AttributedInput
from beluga_core.contracts.expectations import FlatPredictions
from beluga_core.core.constants import FIXED_SCENARIOS, IID_SPLITS, MODEL_STATUSES, OUTCOMES, only_scenario, parse_only


@dataclass(frozen=True, kw_only=True)
class TrainingRecord:
    """A trained (or evaluated) model: what it is, how it was trained, and when. See docs/reference/store.md."""

    task: str
    config: str
    method: str
    suite: str | None = None
    model_name: str | None = None
    seed: int | None = None
    split_seed: int | None = None
    split_id: str | None = None
    hparams: dict[str, Any] | None = None
    parent_model_id: str | None = None
    status: str = "done"
    error: str | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    train_seconds: float | None = None
    eval_seconds: float | None = None
    n_train_iid: int | None = None
    n_train_suite: int | None = None
    # sha256 of the sorted ids of the suite cases the model trained on (None: it trained on none).
    train_digest: str | None = None
    device: str | None = None
    # The run's variant name ('' unnamed): part of every view's scenario key.
    variant: str = ""
    # Everything that shaped the model, as its id hashes it (planning.jobs.job_identity): what a refused
    # re-run with other settings compares against.
    settings: dict[str, Any] | None = None
    # A failed job (status 'failed'): the exception's class (``error`` holds class and message), the last
    # lines of its traceback, how many times it was tried and where it ran.
    error_type: str | None = None
    traceback: str | None = None
    attempts: int | None = None
    worker: str | None = None
    # The pack it trained in ({"setting", "size", "members"}), None where it trained alone.
    pack: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        for name in ("task", "config", "method"):
            if not getattr(self, name):
                raise ValueError(f"{type(self).__name__}: '{name}' is required")
        if self.status not in MODEL_STATUSES:
            raise ValueError(f"{type(self).__name__}: status must be one of {MODEL_STATUSES}, got {self.status!r}")

    @classmethod
    def columns(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))


@dataclass(frozen=True, kw_only=True)
class ModelRecord(TrainingRecord):
    """A scenario model (a row of ``models``): ``scenario`` is standard, seen, the held-out level, or
    ``only:LEVEL=g`` (trained on group g of LEVEL alone: ``trained_level``, ``trained_group``)."""

    model_id: str
    scenario: str
    heldout_level: str | None = None
    heldout_group: str | None = None
    trained_level: str | None = None
    trained_group: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.model_id or not self.scenario:
            raise ValueError("model record: 'model_id' and 'scenario' are required")
        held = self.heldout_level is not None or self.heldout_group is not None
        only = parse_only(self.scenario)
        if only is not None or self.trained_level is not None or self.trained_group is not None:
            if (held or self.trained_level is None or self.trained_group is None
                    or self.scenario != only_scenario(self.trained_level, self.trained_group)):
                raise ValueError(f"model {self.model_id}: an only:LEVEL=group scenario names its trained level and "
                                 f"group and holds nothing out; got scenario {self.scenario!r}, trained "
                                 f"{self.trained_level!r}={self.trained_group!r}, held out "
                                 f"{self.heldout_level!r}={self.heldout_group!r}")
            return
        if self.scenario in FIXED_SCENARIOS and held:
            raise ValueError(f"model {self.model_id}: scenario '{self.scenario}' holds nothing out, but "
                             f"heldout_level={self.heldout_level!r}, heldout_group={self.heldout_group!r}")
        if self.scenario not in FIXED_SCENARIOS and (self.heldout_level != self.scenario
                                                     or self.heldout_group is None):
            raise ValueError(f"model {self.model_id}: held-out scenario '{self.scenario}' names its level and "
                             f"needs its group; got heldout_level={self.heldout_level!r}, "
                             f"heldout_group={self.heldout_group!r}")


@dataclass(frozen=True, kw_only=True)
class GridPointRecord(TrainingRecord):
    """A grid point (a row of ``grid_points``): trained on T_train (strict mode: without the scope's group)
    and scored on T_val; ``point`` holds the searched values."""

    grid_id: str
    point: dict[str, Any]
    scope_level: str | None = None
    scope_group: str | None = None
    n_val_suite: int | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.grid_id:
            raise ValueError("grid point record: 'grid_id' is required")
        if (self.scope_level is None) != (self.scope_group is None):
            raise ValueError(f"grid point {self.grid_id}: scope_level and scope_group are set together")


def _column(values: Any, dtype: Any = object) -> np.ndarray:
    arr = np.empty(len(values), dtype=dtype) if dtype is object else np.asarray(values, dtype=dtype)
    if dtype is object:
        arr[:] = [None if v is None else str(v) for v in values]
    return arr


@dataclass
class Outcomes:
    """Per case: its id, outcome (pass / fail / skip) and first prediction (a class id as text, or an answer)."""

    case_id: np.ndarray
    outcome: np.ndarray
    pred: np.ndarray

    @classmethod
    def of(cls, case_ids: Sequence[str], outcomes: Sequence[str],
           preds: Sequence[str | None] | None = None) -> Outcomes:
        n = len(case_ids)
        if len(outcomes) != n or (preds is not None and len(preds) != n):
            raise ValueError(f"outcomes: {n} case ids, {len(outcomes)} outcomes"
                             + (f", {len(preds)} predictions" if preds is not None else ""))
        bad = sorted(set(outcomes) - set(OUTCOMES))
        if bad:
            raise ValueError(f"outcome must be one of {list(OUTCOMES)}; got {bad[:5]}")
        if len(set(case_ids)) != n:
            raise ValueError("outcomes repeat a case id")
        return cls(_column(case_ids), _column(outcomes), _column(preds if preds is not None else [None] * n))

    def __len__(self) -> int:
        return len(self.case_id)

    def columns(self) -> dict[str, np.ndarray]:
        return {"case_id": self.case_id, "outcome": self.outcome, "pred": self.pred}


@dataclass
class IIDResult:
    """A model's i.i.d. results on one split: per example (gold, prediction, correct) and its metrics; with
    ``[store] keep_probabilities``, its class probabilities (``[n, C]``, the head's classes)."""

    split: str
    gold: list[str]
    pred: list[str]
    correct: np.ndarray
    metrics: dict[str, float]
    primary: str
    probs: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.split not in IID_SPLITS:
            raise ValueError(f"i.i.d. split must be one of {IID_SPLITS}, got {self.split!r}")
        if not (len(self.gold) == len(self.pred) == len(self.correct)):
            raise ValueError("i.i.d. results: gold, pred and correct differ in length")
        if self.primary not in self.metrics:
            raise ValueError(f"primary metric {self.primary!r} is not among {sorted(self.metrics)}")
        value = self.metrics[self.primary]
        if value == value and not 0.0 <= value <= 1.0:
            raise ValueError(f"primary metric {self.primary}={value} is not a fraction in [0, 1] (G averages it "
                             "with pass rates)")

    def columns(self) -> dict[str, np.ndarray]:
        n = len(self.gold)
        return {"split": _column([self.split] * n), "example_idx": np.arange(n, dtype=np.int64),
                "gold": _column(self.gold), "pred": _column(self.pred),
                "correct": np.asarray(self.correct, dtype=bool)}


@dataclass(frozen=True)
class ValidationRow:
    """A grid point's validation score: ``suite_val`` (per test type, the task's own scores) or ``iid_val``."""

    source: str
    test_type: str | None
    metric: str
    value: float | None
    is_primary: bool = False


@dataclass
class CasePredictions:
    """A model's per-input predictions on the cases of one suite (``[store] keep_probabilities``): class
    probabilities in the suite's label space, or answers."""

    suite: str
    case_ids: list[str]
    predictions: FlatPredictions

    def __post_init__(self) -> None:
        if len(self.case_ids) != self.predictions.n_cases:
            raise ValueError(f"case predictions of {self.suite}: {len(self.case_ids)} case ids, "
                             f"{self.predictions.n_cases} cases predicted")


@dataclass
class CrossResult:
    """A model's outcomes on one eval suite (cross-suite evaluation); ``digest`` identifies the eval cases it
    was meant to be evaluated on (``EvalSuitePlan.digest``), also when there were none."""

    suite: str
    digest: str
    outcomes: Outcomes


@dataclass
class ProbeResult:
    """A model's predictions on its [fewshot] probe pool (cases it never trained on, outside T_test): outcomes,
    per-input probabilities, and their attributions (kept in ``JobResult.attributions``)."""

    outcomes: Outcomes
    predictions: CasePredictions | None


@dataclass(frozen=True)
class PackTime:
    """A pack's wall time so far (``training.pack_clock.PackClock``): seconds it trained, members finished, its
    start."""

    seconds: float
    finished: int
    started_at: datetime


@dataclass
class JobResult:
    """Everything a finished job produced; the coordinator writes it to the store in one transaction."""

    record: ModelRecord | GridPointRecord
    outcomes: Outcomes
    iid: list[IIDResult] = field(default_factory=list)
    validation: list[ValidationRow] = field(default_factory=list)
    cross: list[CrossResult] = field(default_factory=list)
    predictions: list[CasePredictions] = field(default_factory=list)
    attributions: list[AttributedInput] = field(default_factory=list)
    probes: ProbeResult | None = None
    # Where the job's training resumed from its checkpoint ("step 340 of 1000"), for the run's console; not stored:
    # a resumed job stores what an uninterrupted one would.
    resumed_from: str | None = None
    # A pack member's: the pack's time when it finished (the ``packs`` row, written once per pack).
    pack_time: PackTime | None = None

    @property
    def id(self) -> str:
        return self.record.model_id if isinstance(self.record, ModelRecord) else self.record.grid_id
