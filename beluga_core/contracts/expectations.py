"""What every expectation kind shares: parameter validation, prediction batches, CheckList aggregation.

An expectation kind turns the predictions on a batch of cases (all sharing one kind + parameters) into one
outcome per case: ``PASS`` (1), ``FAIL`` (0) or ``SKIP`` (-1, CheckList's ``None``). Kinds work on whole
batches with numpy, so a suite of 100k cases evaluates in well under a second.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from beluga_core.core.constants import FAIL, PASS, SKIP
from beluga_core.core.errors import format_validation_error
from beluga_core.data.suite.suite_schema import Case, Expectation, Scalar

__all__ = ["FAIL", "NO_CLASS", "PASS", "SKIP", "CaseBatch", "ExpectationKind", "FlatPredictions", "KeepIf",
           "KindParams", "PerInputKind", "aggregate", "results_from"]

Agg = Literal["all", "all_except_first"]
# Label id that matches no class: what a missing or unknown label turns into, so that ``pred == label`` fails
# as it does in CheckList (``pred == None``).
NO_CLASS = -1


# --------------------------------------------------------------------------------------------- predictions


@dataclass(frozen=True)
class FlatPredictions:
    """Predictions for a list of cases, flattened over inputs.

    Input ``j`` of case ``i`` is row ``offsets[i] + j``. Exactly one of ``probs`` (class-probability vectors
    in the suite's label space, float64 ``[n_inputs, n_labels]``) and ``answers`` (answer strings, object
    array ``[n_inputs]``, confidence 1 as in CheckList's ``pred_only`` format) is set.
    """

    offsets: np.ndarray
    probs: np.ndarray | None = None
    answers: np.ndarray | None = None

    def __post_init__(self) -> None:
        if (self.probs is None) == (self.answers is None):
            raise ValueError("exactly one of probs and answers must be given")
        n = self.probs.shape[0] if self.probs is not None else len(self.answers)  # type: ignore[arg-type]
        if self.offsets.ndim != 1 or self.offsets[0] != 0 or self.offsets[-1] != n:
            raise ValueError(f"offsets must run from 0 to the number of inputs ({n})")
        if self.probs is not None and self.probs.ndim != 2:
            raise ValueError("probs must be a 2-d array [n_inputs, n_labels]")

    @property
    def n_cases(self) -> int:
        return len(self.offsets) - 1

    @property
    def is_softmax(self) -> bool:
        return self.probs is not None

    @classmethod
    def from_arrays(cls, probs: np.ndarray | None = None, answers: Sequence[str] | np.ndarray | None = None, *,
                    lengths: Sequence[int] | np.ndarray) -> FlatPredictions:
        """From flat per-input predictions and the number of inputs of each case."""
        offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(np.asarray(lengths, dtype=np.int64), out=offsets[1:])
        if probs is not None:
            return cls(offsets, probs=np.asarray(probs, dtype=np.float64))
        return cls(offsets, answers=_object_array([] if answers is None else answers))

    @classmethod
    def from_nested(cls, per_case: Sequence[Sequence[Any]]) -> FlatPredictions:
        """From one list per case holding one prediction per input (a probability vector or a string)."""
        lengths = [len(p) for p in per_case]
        if per_case and all(isinstance(p, np.ndarray) and p.ndim == 2 for p in per_case):
            return cls.from_arrays(probs=np.concatenate(per_case), lengths=lengths)
        flat = [x for p in per_case for x in p]
        if flat and isinstance(flat[0], str):
            return cls.from_arrays(answers=flat, lengths=lengths)
        probs = np.asarray(flat, dtype=np.float64)
        return cls.from_arrays(probs=probs.reshape(len(flat), -1) if flat else np.zeros((0, 0)), lengths=lengths)

    def take(self, case_idx: np.ndarray) -> FlatPredictions:
        """The predictions of the cases ``case_idx``, in that order."""
        starts = self.offsets[case_idx]
        lengths = self.offsets[case_idx + 1] - starts
        offsets = np.zeros(len(case_idx) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        rows = np.repeat(starts - offsets[:-1], lengths) + np.arange(offsets[-1])
        if self.probs is not None:
            return FlatPredictions(offsets, probs=self.probs[rows])
        return FlatPredictions(offsets, answers=self.answers[rows])  # type: ignore[index]


def _object_array(items: Sequence[Any] | np.ndarray) -> np.ndarray:
    arr = np.empty(len(items), dtype=object)
    arr[:] = list(items)
    return arr


@dataclass
class CaseBatch:
    """The cases one expectation (kind + parameters) evaluates at once, with their predictions."""

    preds: FlatPredictions
    labels: list[Any]
    metas: list[dict[str, Any]]
    case_ids: list[str]
    label_space: Sequence[str] | None = None
    _cache: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def n_cases(self) -> int:
        return self.preds.n_cases

    @property
    def is_softmax(self) -> bool:
        return self.preds.is_softmax

    @cached_property
    def lengths(self) -> np.ndarray:
        return np.diff(self.preds.offsets)

    @cached_property
    def case_of_input(self) -> np.ndarray:
        return np.repeat(np.arange(self.n_cases), self.lengths)

    @cached_property
    def first_row(self) -> np.ndarray:
        """Row of each case's first (original) input."""
        return self.preds.offsets[:-1]

    @cached_property
    def orig_row(self) -> np.ndarray:
        """For every input, the row of its case's original input (pairwise checks compare against it)."""
        return np.asarray(self.first_row[self.case_of_input])

    @cached_property
    def pred(self) -> np.ndarray:
        """Predicted label per input: argmax class id (first maximum, as numpy), or the answer string."""
        if self.preds.probs is not None:
            return np.asarray(self.preds.probs.argmax(axis=1))
        assert self.preds.answers is not None  # exactly one of the two is set
        return self.preds.answers

    @cached_property
    def orig_pred(self) -> np.ndarray:
        return np.asarray(self.pred[self.orig_row])

    def probs(self) -> np.ndarray:
        if self.preds.probs is None:
            raise ValueError("this expectation needs class-probability predictions, not answer strings")
        return self.preds.probs

    def class_id(self, value: Any, what: str) -> int:
        """A label given as a class id or a label name, as a class id."""
        if isinstance(value, bool):
            raise ValueError(f"{what} must be a class id or label name, not a boolean")
        if isinstance(value, int):
            return value
        if isinstance(value, str) and self.label_space is not None and value in self.label_space:
            return list(self.label_space).index(value)
        space = f"one of {list(self.label_space)}" if self.label_space else "a class id"
        raise ValueError(f"{what} {value!r} is not {space}")

    @cached_property
    def input_labels(self) -> np.ndarray:
        """The gold label of every input: class ids (``NO_CLASS`` where none) or an object array of strings.

        A scalar case label applies to every input of the case; a list gives one per input (CheckList's
        ``iter_with_optional``).
        """
        if self.is_softmax:
            if all(not isinstance(lab, list) for lab in self.labels):
                per_case = np.array([NO_CLASS if lab is None else self._label_id(lab, i)
                                     for i, lab in enumerate(self.labels)], dtype=np.int64)
                return np.asarray(per_case[self.case_of_input])
            out: list[int] = []
            for i, (lab, n) in enumerate(zip(self.labels, self.lengths.tolist(), strict=True)):
                if isinstance(lab, list):
                    out.extend(NO_CLASS if x is None else self._label_id(x, i) for x in lab)
                else:
                    out.extend([NO_CLASS if lab is None else self._label_id(lab, i)] * n)
            return np.asarray(out, dtype=np.int64)
        items: list[Any] = []
        for lab, n in zip(self.labels, self.lengths.tolist(), strict=True):
            items.extend(lab if isinstance(lab, list) else [lab] * n)
        return _object_array(items)

    def _label_id(self, lab: Any, i: int) -> int:
        try:
            return self.class_id(lab, "label")
        except ValueError as exc:
            raise ValueError(f"case '{self.case_ids[i]}': {exc}") from None


# --------------------------------------------------------------------------------------------- aggregation


def aggregate(results: np.ndarray, offsets: np.ndarray, agg: Agg) -> np.ndarray:
    """Per-input results (1 / 0 / -1) → per-case outcomes, exactly as CheckList's ``aggregate_testcase``.

    Skipped (``None``) results are dropped first; a case with none left is skipped. ``all_except_first``
    then discards the first remaining result (not necessarily the original input's) and passes an empty
    remainder, since ``np.all([])`` is True.
    """
    n_cases = len(offsets) - 1
    case_of = np.repeat(np.arange(n_cases), np.diff(offsets))
    valid = results >= 0
    fail = results == 0
    n_valid = np.bincount(case_of, weights=valid, minlength=n_cases)
    n_fail = np.bincount(case_of, weights=fail, minlength=n_cases)
    if agg == "all_except_first":
        rank = np.cumsum(valid)
        before = np.concatenate(([0], rank))[offsets[:-1]]
        first_valid = valid & (rank - before[case_of] == 1)
        n_fail -= np.bincount(case_of, weights=first_valid & fail, minlength=n_cases)
    out = np.where(n_fail > 0, FAIL, PASS).astype(np.int8)
    out[n_valid == 0] = SKIP
    return out


def results_from(passed: np.ndarray, skipped: np.ndarray | None = None) -> np.ndarray:
    """Boolean pass / skip masks → int8 results."""
    out = np.where(passed, PASS, FAIL).astype(np.int8)
    if skipped is not None:
        out[skipped] = SKIP
    return out


# --------------------------------------------------------------------------------------------- parameters


class KindParams(BaseModel):
    """Parameters every kind takes; a kind's own model adds its fields and narrows ``level``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    agg: Agg = "all"


class KeepIf(BaseModel):
    """CheckList's ``slice_orig``: keep a case only when its original input's prediction is (not) in a set.

    The slice is itself a pairwise check aggregated with ``agg``; with ``all_except_first`` a one-input case
    is always kept (nothing is left to aggregate), so that quirk is reproduced.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    orig_pred_in: list[Scalar] | None = None
    orig_pred_not_in: list[Scalar] | None = None
    agg: Agg = "all"

    @model_validator(mode="after")
    def _one_rule(self) -> KeepIf:
        if (self.orig_pred_in is None) == (self.orig_pred_not_in is None):
            raise ValueError("give exactly one of orig_pred_in and orig_pred_not_in")
        return self

    def keep(self, batch: CaseBatch) -> np.ndarray:
        values = self.orig_pred_in if self.orig_pred_in is not None else self.orig_pred_not_in
        orig = batch.pred[batch.first_row]
        if batch.is_softmax:
            ids = [batch.class_id(v, "keep_if value") for v in values or []]
            inside = np.isin(orig, ids)
        else:
            inside = np.array([p in (values or []) for p in orig], dtype=bool)
        keep = inside if self.orig_pred_in is not None else ~inside
        if self.agg == "all_except_first":
            keep = keep | (batch.lengths == 1)
        return keep


class ExpectationKind(ABC):
    """Base of expectation-kind plugins. A subclass sets ``Params`` (its parameters, a pydantic model) and
    implements ``evaluate``, or derives from ``PerInputKind`` and implements ``input_results``."""

    Params: ClassVar[type[KindParams]] = KindParams
    #: What a single-input loss (``mft``) trains a case judged by this kind toward: ``"eq"`` its gold class,
    #: ``"not_eq"`` away from it. None: only a pair loss can train such a case.
    train_as: ClassVar[Literal["eq", "not_eq"] | None] = None

    def __init__(self, params: KindParams) -> None:
        self.params = params

    @classmethod
    def parse(cls, expectation: Expectation) -> ExpectationKind:
        """Validate an expectation's parameters; a bad one raises ``ValueError`` with a readable message."""
        data = expectation.model_dump(exclude={"kind"})
        try:
            return cls(cls.Params.model_validate(data))
        except ValidationError as exc:
            raise ValueError(_params_message(expectation.kind, cls.Params, exc)) from None

    def check_case(self, case: Case) -> str | None:
        """Why this expectation cannot judge ``case`` (wrong input count, missing label, ...), or None."""
        return None

    @abstractmethod
    def evaluate(self, batch: CaseBatch) -> np.ndarray:
        """int8 per case: 1 pass, 0 fail, -1 skip."""


class PerInputKind(ExpectationKind):
    """A kind judged input by input (CheckList's ``single`` / ``pairwise``), then aggregated per case."""

    @abstractmethod
    def input_results(self, batch: CaseBatch) -> np.ndarray:
        """int8 per input: 1 pass, 0 fail, -1 skip."""

    def evaluate(self, batch: CaseBatch) -> np.ndarray:
        out = aggregate(self.input_results(batch), batch.preds.offsets, self.params.agg)
        keep_if: KeepIf | None = getattr(self.params, "keep_if", None)
        if keep_if is not None:
            out[~keep_if.keep(batch)] = SKIP
        return out


def _params_message(kind: str, model: type[BaseModel], exc: ValidationError) -> str:
    allowed = ", ".join(sorted(model.model_fields))
    unknown = [str(e["loc"][0]) for e in exc.errors()
               if e["type"] == "extra_forbidden" and len(e["loc"]) == 1]
    if unknown:
        return (f"unknown parameter(s) {', '.join(repr(u) for u in unknown)} for expectation kind '{kind}'; "
                f"it takes: {allowed}")
    return f"invalid parameters for expectation kind '{kind}': {format_validation_error(exc)}"
