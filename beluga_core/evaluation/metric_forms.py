"""Every i.i.d. metric beluga stores, as a function of per-example *parts* summed over a sample of D_test.

A bootstrap or randomization round re-weights the D_test examples; when a metric is a function of a weighted sum
of per-example vectors, a round's metric is one matrix product (counts @ parts) and an elementwise formula, for
every round at once, instead of one metric call per round. Two shapes cover the built-in metrics:

- ``mean``: the metric is the mean of one per-example score: accuracy and exact match (correct 0/1), reading's F1
  (each question's SQuAD F1, the maximum over its gold answers);
- the F1 family: per class k, the parts are one-hot true-positive, false-positive and false-negative indicators,
  so a sum holds (TP_k, FP_k, FN_k). With D_k = 2·TP_k + FP_k + FN_k:
  ``macro_f1`` the mean of 2·TP_k / D_k over the classes with D_k > 0 (those in the gold labels or the
  predictions: scikit-learn's ``f1_score(average="macro")``); ``class_f1`` 2·TP_p / D_p of the positive class
  (paraphrase's 'duplicate'; 0 when D_p = 0); ``micro_f1`` pooled over every class but NA,
  2·ΣTP / Σ D (= 2PR / (P + R) with P, R as ``metrics.micro_f1_excluding``; 0 when nothing counts).

``form_of`` maps a stored metric name and the task's head to its form; ``parts_of`` makes the parts from the
stored per-example rows. A form is checked against the stored metric before use (``matches``): a metric it does
not reproduce is not resampled at all, so no figure of another metric is ever shown in its place.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from beluga_core.evaluation.squad_metrics import f1_score, max_over_ground_truths

MEAN, MACRO_F1, CLASS_F1, MICRO_F1 = "mean", "macro_f1", "class_f1", "micro_f1"
# Stored metric values and their recomputation from parts agree to this (float sums in another order).
MATCH_TOLERANCE = 1e-9


@dataclass(frozen=True)
class MetricForm:
    """How one metric is computed from summed per-example parts; ``classes`` for the F1 family."""

    kind: str
    classes: int = 0
    positive: int = 1      # class_f1's class
    na: int = -1           # micro_f1's excluded class

    @property
    def width(self) -> int:
        """Parts per example."""
        return 1 if self.kind == MEAN else 3 * self.classes

    def value(self, sums: np.ndarray, n: np.ndarray | float) -> np.ndarray:
        """The metric of samples whose parts sum to ``sums`` (..., width) over ``n`` (...) examples (weights);
        NaN where a sample is empty."""
        sums = np.asarray(sums, dtype=float)
        n = np.asarray(n, dtype=float)
        with np.errstate(invalid="ignore", divide="ignore"):
            if self.kind == MEAN:
                return np.where(n > 0, sums[..., 0] / np.where(n > 0, n, 1), np.nan)
            tp, fp, fn = self._split(sums)
            if self.kind == MICRO_F1:
                keep = np.arange(self.classes) != self.na
                t, d = tp[..., keep].sum(-1), (2 * tp + fp + fn)[..., keep].sum(-1)
                out = np.where(d > 0, 2 * t / np.where(d > 0, d, 1), 0.0)
            elif self.kind == CLASS_F1:
                t, d = tp[..., self.positive], (2 * tp + fp + fn)[..., self.positive]
                out = np.where(d > 0, 2 * t / np.where(d > 0, d, 1), 0.0)
            else:
                d = 2 * tp + fp + fn
                present = d > 0
                f1 = np.where(present, 2 * tp / np.where(present, d, 1), 0.0)
                count = present.sum(-1)
                out = np.where(count > 0, f1.sum(-1) / np.maximum(count, 1), np.nan)
        return np.where(n > 0, out, np.nan)

    def gradient(self, sums: np.ndarray) -> np.ndarray:
        """∂ value / ∂ (mean parts) at the mean parts ``sums`` / n (width,), for linearised per-example values.
        The F1 family is homogeneous of degree 0 in the sums, so the gradient at the sums is 1/n times this one
        taken at the sums themselves; ``pseudo_values`` scales it."""
        if self.kind == MEAN:
            return np.ones(1)
        tp, fp, fn = self._split(np.asarray(sums, dtype=float))
        g = np.zeros((3, self.classes))
        if self.kind == MICRO_F1:
            keep = np.arange(self.classes) != self.na
            t, d = tp[keep].sum(), (2 * tp + fp + fn)[keep].sum()
            if d > 0:
                g[0, keep] = 2 * (d - 2 * t) / d ** 2
                g[1, keep] = g[2, keep] = -2 * t / d ** 2
        else:
            d = 2 * tp + fp + fn
            which = (d > 0) if self.kind == MACRO_F1 else (np.arange(self.classes) == self.positive) & (d > 0)
            scale = 1 / max(int(which.sum()), 1) if self.kind == MACRO_F1 else 1.0
            dw = np.where(which, d, 1.0)
            g[0] = np.where(which, scale * 2 * (d - 2 * tp) / dw ** 2, 0.0)
            g[1] = g[2] = np.where(which, -scale * 2 * tp / dw ** 2, 0.0)
        return g.reshape(-1)

    def pseudo_values(self, parts: np.ndarray) -> np.ndarray:
        """(…, N) per-example linearised values of (…, N, width) parts: value + ∇·(x_i − x̄) at the mean x̄. Their
        mean is the metric, and a difference of their means moves as the metric's does to first order (the delta
        method), so variance components of a difference (``beluga power``) apply to any form. A mean form's are
        its scores exactly."""
        if self.kind == MEAN:
            return np.asarray(parts[..., 0], dtype=float)
        out = np.empty(parts.shape[:-1])
        for index in np.ndindex(*parts.shape[:-2]):
            x = parts[index]
            n = x.shape[0]
            sums = x.sum(axis=0)
            g = self.gradient(sums) * n          # the gradient in the mean parts
            out[index] = self.value(sums, n) + (x - sums / n) @ g
        return out

    def _split(self, sums: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        k = self.classes
        return sums[..., :k], sums[..., k:2 * k], sums[..., 2 * k:3 * k]


def class_parts(gold: np.ndarray, pred: np.ndarray, classes: int) -> np.ndarray:
    """(N, 3K) one-hot TP, FP, FN indicators of integer ``gold`` and ``pred`` ids in [0, K)."""
    n = len(gold)
    out = np.zeros((n, 3 * classes))
    rows = np.arange(n)
    hit = gold == pred
    out[rows[hit], gold[hit]] = 1
    out[rows[~hit], classes + pred[~hit]] = 1
    out[rows[~hit], 2 * classes + gold[~hit]] = 1
    return out


def form_of(metric: str, head_labels: Sequence[str] | None) -> MetricForm | None:
    """The form of a task's stored i.i.d. metric: ``head_labels`` is the task's head (its class names), None for a
    span model (reading, whose 'f1' is the mean per-question F1). None: a metric beluga cannot resample."""
    if metric in ("accuracy", "exact_match"):
        return MetricForm(MEAN)
    if head_labels is None:
        return MetricForm(MEAN) if metric == "f1" else None
    k = len(head_labels)
    if k < 1:
        return None
    if metric == "macro_f1":
        return MetricForm(MACRO_F1, k)
    if metric == "f1" and k > 1:          # paraphrase: F1 of class 1 ('duplicate')
        return MetricForm(CLASS_F1, k, positive=1)
    if metric == "micro_f1":              # relation: the NA label is the head's last class
        return MetricForm(MICRO_F1, k, na=k - 1)
    return None


def stored_form(metric: str, labels_json: str | None, head_known: bool,
                ids: Sequence[str | None] = ()) -> MetricForm | None:
    """The form of a stored metric, given the store's ``task_heads`` row (its labels as JSON; ``head_known``
    False where the store has no row). A store without the row (written before task_heads) gives the classes its
    rows use (``ids``: stored gold and predicted ids); micro-F1 then is not resampled, its NA class unknown."""
    if head_known:
        return form_of(metric, json.loads(labels_json) if labels_json is not None else None)
    if metric in ("accuracy", "exact_match"):
        return MetricForm(MEAN)
    try:
        k = 1 + max((int(str(x)) for x in ids), default=-1)
    except ValueError:
        return None
    return None if metric == "micro_f1" or k < 1 else form_of(metric, [str(i) for i in range(k)])


def model_parts(form: MetricForm, metric: str, gold: Sequence[str | None], pred: Sequence[str | None],
                correct: Sequence[bool], stored: float | None) -> np.ndarray | None:
    """``parts_of`` one model's rows, kept only where they reproduce its ``stored`` metric value."""
    parts = parts_of(form, metric, gold, pred, correct)
    return parts if parts is not None and matches(form, parts, stored) else None


def parts_of(form: MetricForm, metric: str, gold: Sequence[str | None], pred: Sequence[str | None],
             correct: Sequence[bool]) -> np.ndarray | None:
    """(N, width) parts of one model's stored D_test rows (gold and predicted ids as text, or reading's JSON gold
    answers and predicted text); None where the rows cannot give them (a label outside the head)."""
    if form.kind == MEAN:
        if metric == "f1":
            scores = [max_over_ground_truths(f1_score, p or "", json.loads(g or "[]") or [""])
                      for g, p in zip(gold, pred, strict=True)]
            return np.asarray(scores, dtype=float)[:, None]
        return np.asarray(correct, dtype=float)[:, None]
    try:
        g = np.asarray([int(x) for x in gold], dtype=np.int64)  # type: ignore[arg-type]
        p = np.asarray([int(x) for x in pred], dtype=np.int64)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    if len(g) and (min(g.min(), p.min()) < 0 or max(g.max(), p.max()) >= form.classes):
        return None
    return class_parts(g, p, form.classes)


def matches(form: MetricForm, parts: np.ndarray, stored: float | None) -> bool:
    """Whether ``parts`` reproduce a model's stored metric value (the check that the form is the metric's)."""
    if stored is None or not np.isfinite(stored):
        return False
    value = float(form.value(parts.sum(axis=0), float(parts.shape[0])))
    return bool(np.isfinite(value)) and abs(value - stored) <= MATCH_TOLERANCE
