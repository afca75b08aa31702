"""The expectation kinds CheckList's release suites need, reproducing its functions exactly.

Reference: ``checklist/expect.py`` (marcotcr/checklist) and the suites' notebooks. Where CheckList computes a
float, the same float operations are done in the same order, so results agree at the tolerance boundaries.
"""

from __future__ import annotations

import re
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, model_validator

from beluga_core.contracts.expectations import (
    CaseBatch,
    ExpectationKind,
    KeepIf,
    KindParams,
    PerInputKind,
    results_from,
)
from beluga_core.data.suite.suite_schema import Case, Scalar

# ------------------------------------------------------------------------------------------ eq / not_eq


class Normalize(BaseModel):
    """CheckList SQuAD's ``clean()``: ``s.lstrip(chars).rstrip(chars)`` — CHARACTER SETS, not words.

    So ``"the athlete"`` with ``lstrip_chars="[a,the,an,in,at] "`` becomes ``"lete"``; that quirk is kept.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    lstrip_chars: str = ""
    rstrip_chars: str = ""

    def __call__(self, s: Any) -> str:
        return str(s).lstrip(self.lstrip_chars).rstrip(self.rstrip_chars)


class _Target(BaseModel):
    """Compare against the case label (``target: label``) or a fixed ``value``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    target: Literal["label"] | None = None
    value: Scalar | None = None

    @model_validator(mode="after")
    def _one_target(self) -> _Target:
        if (self.target is None) == (self.value is None):
            raise ValueError("give exactly one of 'target: label' and a fixed 'value'")
        return self


class LabelRule(_Target):
    """An override used for the inputs whose label is one key of ``if_label``."""

    kind: Literal["eq", "not_eq"]


def _gold(batch: CaseBatch, rule: _Target) -> np.ndarray:
    """The value each input's prediction is compared with."""
    if rule.target == "label":
        return batch.input_labels
    if batch.is_softmax:
        return np.full(len(batch.pred), batch.class_id(rule.value, "value"), dtype=np.int64)
    return np.full(len(batch.pred), rule.value, dtype=object)


def _equal(batch: CaseBatch, gold: np.ndarray, normalize: Normalize | None) -> np.ndarray:
    if batch.is_softmax:
        if normalize is not None:
            raise ValueError("'normalize' applies to answer strings, but the predictions are probability vectors")
        return batch.pred == gold
    pred = batch.pred
    if normalize is not None:
        return np.array([normalize(p) == normalize(g) for p, g in zip(pred, gold, strict=True)], dtype=bool)
    return np.array([p == g for p, g in zip(pred, gold, strict=True)], dtype=bool)


def _needs_label(case: Case, rule: _Target) -> str | None:
    if rule.target == "label" and (case.label is None or (isinstance(case.label, list) and None in case.label)):
        return "the expectation compares with the case label ('target: label') but the case has no label"
    return None


class EqParams(KindParams, _Target):
    level: Literal["single"] = "single"
    normalize: Normalize | None = None
    if_label: dict[str, LabelRule] | None = None
    keep_if: KeepIf | None = None


class Eq(PerInputKind):
    """``Expect.eq``: each input's prediction equals the label (or ``value``).

    ``if_label`` swaps in another rule for inputs with a given label (sentiment "Q & A: no": a neutral
    label also accepts a positive prediction).
    """

    Params = EqParams
    params: EqParams
    train_as = "eq"

    def check_case(self, case: Case) -> str | None:
        return _needs_label(case, self.params)

    def input_results(self, batch: CaseBatch) -> np.ndarray:
        p = self.params
        passed = _equal(batch, _gold(batch, p), p.normalize)
        for key, rule in (p.if_label or {}).items():
            mask = _label_is(batch, key)
            if mask.any():
                same = _equal(batch, _gold(batch, rule), p.normalize)
                passed = np.where(mask, same if rule.kind == "eq" else ~same, passed)
        return results_from(passed)


def _label_is(batch: CaseBatch, key: str) -> np.ndarray:
    """Inputs whose label is ``key`` (a JSON object key: a label name, or a class id written as text)."""
    labels = batch.input_labels
    if batch.is_softmax:
        ident = int(key) if key.lstrip("-").isdigit() else batch.class_id(key, "if_label key")
        return labels == ident
    return np.array([str(lab) == key for lab in labels], dtype=bool)


class NotEqParams(KindParams, _Target):
    level: Literal["single"] = "single"
    normalize: Normalize | None = None
    keep_if: KeepIf | None = None


class NotEq(PerInputKind):
    """Each input's prediction differs from ``value`` (sentiment "not negative": ``pred != 0``)."""

    Params = NotEqParams
    params: NotEqParams
    train_as = "not_eq"

    def check_case(self, case: Case) -> str | None:
        return _needs_label(case, self.params)

    def input_results(self, batch: CaseBatch) -> np.ndarray:
        return results_from(~_equal(batch, _gold(batch, self.params), self.params.normalize))


# ------------------------------------------------------------------------------------------ pairwise kinds


class _PairwiseParams(KindParams):
    level: Literal["pairwise"] = "pairwise"
    keep_if: KeepIf | None = None


class InvParams(_PairwiseParams):
    tolerance: float = 0.0


class Inv(PerInputKind):
    """``Expect.inv``: pass when the predicted label is unchanged from the original input's, or the
    original class's confidence moved by at most ``tolerance``.

    For answer strings (confidence 1, CheckList's non-softmax branch) the tolerance test is
    ``conf + orig_conf <= tolerance``, i.e. 2 <= tolerance, so it reduces to exact string equality.
    """

    Params = InvParams
    params: InvParams

    def input_results(self, batch: CaseBatch) -> np.ndarray:
        tol = self.params.tolerance
        same = batch.pred == batch.orig_pred
        if not batch.is_softmax:
            return results_from(same | (tol >= 1.0 + 1.0))
        probs = batch.probs()
        rows = np.arange(len(probs))
        conf = probs[rows, batch.orig_pred]
        orig_conf = probs[batch.orig_row, batch.orig_pred]
        return results_from(same | (np.abs(conf - orig_conf) <= tol))


class InvExactParams(_PairwiseParams):
    substitute_from_meta: bool = False


# Where the importer stores the per-input (old, new) name substitutions of SQuAD's "Change name/location
# everywhere" tests: one entry per input, null / {} for the original.
SUBSTITUTIONS_META_KEY = "per_input"


class InvExact(PerInputKind):
    """SQuAD's name-substitution invariance: the prediction equals the original one, with the perturbed
    name substituted in when the input's meta names a substitution ``(a, b)``::

        pred == re.sub(r"\\b" + re.escape(a) + r"\\b", b, orig_pred)   # with meta
        pred == orig_pred                                             # without
    """

    Params = InvExactParams
    params: InvExactParams

    def check_case(self, case: Case) -> str | None:
        if not self.params.substitute_from_meta:
            return None
        subs = case.meta.get(SUBSTITUTIONS_META_KEY)
        if subs is None:
            return None
        if not isinstance(subs, list) or len(subs) != len(case.inputs):
            return (f"meta.{SUBSTITUTIONS_META_KEY} must be a list with one entry per input "
                    f"({len(case.inputs)}), null or {{}} where there is no substitution")
        for s in subs:
            if s and not (isinstance(s, list | tuple) and len(s) == 2 and all(isinstance(x, str) for x in s)):
                return f"meta.{SUBSTITUTIONS_META_KEY} entries must be [old, new] string pairs, got {s!r}"
        return None

    def input_results(self, batch: CaseBatch) -> np.ndarray:
        pred, orig = batch.pred, batch.orig_pred
        expected = orig
        if self.params.substitute_from_meta and not batch.is_softmax:
            expected = orig.copy()
            offsets = batch.preds.offsets
            for i, meta in enumerate(batch.metas):
                subs = meta.get(SUBSTITUTIONS_META_KEY) if meta else None
                for j, sub in enumerate(subs or []):
                    if sub:
                        row = offsets[i] + j
                        expected[row] = re.sub(r"\b" + re.escape(sub[0]) + r"\b", sub[1], str(orig[row]))
        return results_from(np.array([p == e for p, e in zip(pred, expected, strict=True)], dtype=bool))


class MonotonicParams(_PairwiseParams):
    label: Scalar | None = None
    increasing: bool = True
    tolerance: float = 0.0


class Monotonic(PerInputKind):
    """``Expect.monotonic``: the confidence in ``label`` (default: the original prediction) must not go down
    (``increasing``) / up by more than ``tolerance``.

    Skips an input when it cannot fail: increasing with original confidence <= tolerance, decreasing with
    original confidence >= 1 - tolerance (so decreasing checks skip originals predicted with >= 0.9).
    """

    Params = MonotonicParams
    params: MonotonicParams

    def input_results(self, batch: CaseBatch) -> np.ndarray:
        p = self.params
        tol = p.tolerance
        if batch.is_softmax:
            probs = batch.probs()
            label = batch.orig_pred if p.label is None else np.full(len(probs), batch.class_id(p.label, "label"))
            orig_conf = probs[batch.orig_row, label]
            conf_diff = probs[np.arange(len(probs)), label] - orig_conf
        else:
            if p.label is not None:
                raise ValueError("monotonic with a fixed 'label' needs probability-vector predictions")
            orig_conf = np.ones(len(batch.pred))
            conf_diff = np.where(batch.pred == batch.orig_pred, 0.0, -(1.0 + 1.0))
        if p.increasing:
            return results_from(conf_diff + tol >= 0, skipped=orig_conf <= tol)
        return results_from(conf_diff - tol <= 0, skipped=orig_conf >= 1 - tol)


class Score(BaseModel):
    """score(p) = sum(p[plus]) - sum(p[minus]); classes by id or label name."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    plus: list[int | str]
    minus: list[int | str] = []


class ScoreMonotonicParams(_PairwiseParams):
    score: Score
    increasing: bool = True
    tolerance: float = 0.0


class ScoreMonotonic(PerInputKind):
    """Sentiment "add positive / negative phrases": p[pos] - p[neg] must not go down (up) by more than
    ``tolerance``. The change is computed as the notebook's ``orig[neg] - conf[neg] + conf[pos] - orig[pos]``.
    """

    Params = ScoreMonotonicParams
    params: ScoreMonotonicParams

    def input_results(self, batch: CaseBatch) -> np.ndarray:
        p = self.params
        probs = batch.probs()
        plus = [batch.class_id(c, "score class") for c in p.score.plus]
        minus = [batch.class_id(c, "score class") for c in p.score.minus]
        orig = probs[batch.orig_row]
        change = (orig[:, minus].sum(axis=1) - probs[:, minus].sum(axis=1)) + probs[:, plus].sum(axis=1) \
            - orig[:, plus].sum(axis=1)
        if p.increasing:
            return results_from(change + p.tolerance >= 0)
        return results_from(change - p.tolerance <= 0)


# ------------------------------------------------------------------------------------------ testcase kinds


class ImplicationTripletParams(KindParams):
    level: Literal["testcase"] = "testcase"
    variant: Literal["released", "intended"] = "released"


class ImplicationTriplet(ExpectationKind):
    """QQP "Testing implications": inputs (x, a), (x, b), (a, b) with predictions p0, p1, p2 (1 = duplicate).

    ``intended`` (the test's description): p0 = p1 = 1 → pass iff p2 = 1; exactly one of p0, p1 is 1 →
    pass iff p2 = 0; otherwise skip. ``released`` reproduces the shipped function's bug: p0 = p1 = 1 →
    pass iff p2 = 1; p0 = 0, p1 = 1 → always fail; otherwise (including p0 = 1, p1 = 0) skip.
    The outcome is decided per case, so ``agg`` has nothing left to aggregate.
    """

    Params = ImplicationTripletParams
    params: ImplicationTripletParams

    def check_case(self, case: Case) -> str | None:
        if len(case.inputs) != 3:
            return f"implication_triplet needs exactly 3 inputs ((x, a), (x, b), (a, b)), got {len(case.inputs)}"
        return None

    def evaluate(self, batch: CaseBatch) -> np.ndarray:
        if not batch.is_softmax:
            raise ValueError("implication_triplet needs probability-vector predictions")
        if np.any(batch.lengths != 3):
            raise ValueError("implication_triplet needs exactly 3 inputs per case")
        p = batch.pred.reshape(-1, 3)
        p0, p1, p2 = p[:, 0] == 1, p[:, 1] == 1, p[:, 2] == 1
        both = p0 & p1
        passed = np.where(both, p2, False)
        if self.params.variant == "intended":
            one = p0 ^ p1
            passed = passed | (one & ~p2)
            skipped = ~(both | one)
        else:
            skipped = ~(both | (~p0 & p1))
        return results_from(passed, skipped)
