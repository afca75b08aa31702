"""Classification metrics of i.i.d. predictions (and of MFT validation cases), each defined once.

Per-class precision / recall and the confusion matrix are SQL views over the stored predictions
(``iid_confusion``, ``iid_class_scores``); these are the numbers a task stores as its i.i.d. metrics.
"""

from __future__ import annotations

import numpy as np


def accuracy(pred: np.ndarray, gold: np.ndarray) -> float:
    return float((pred == gold).mean()) if len(gold) else float("nan")


def f1_of_class(pred: np.ndarray, gold: np.ndarray, positive: int = 1) -> float:
    """F1 of one class (QQP's 'duplicate'): 2·TP / (predicted + gold positives); 0 when both are empty."""
    tp = float(((pred == positive) & (gold == positive)).sum())
    denom = float((pred == positive).sum() + (gold == positive).sum())
    return 2 * tp / denom if denom else 0.0


def macro_f1(pred: np.ndarray, gold: np.ndarray) -> float:
    """Unweighted mean F1 over the classes that occur in the gold labels or the predictions (scikit-learn's
    ``f1_score(average="macro")``)."""
    if not len(gold):
        return float("nan")
    classes = np.union1d(np.unique(gold), np.unique(pred))
    return float(np.mean([f1_of_class(pred, gold, int(c)) for c in classes]))


def micro_f1_excluding(pred: np.ndarray, gold: np.ndarray, na: int) -> float:
    """Micro-F1 over every class but ``na`` (OpenNRE's relation-extraction metric): P = correct non-NA
    predictions / non-NA predictions, R = correct non-NA predictions / non-NA gold labels, F1 = 2PR / (P + R);
    0 when nothing non-NA is predicted or correct. With no NA in the data and none predicted it is accuracy."""
    if not len(gold):
        return float("nan")
    correct = float(((pred == gold) & (gold != na)).sum())
    predicted, actual = float((pred != na).sum()), float((gold != na).sum())
    p = correct / predicted if predicted else 0.0
    r = correct / actual if actual else 0.0
    return 2 * p * r / (p + r) if p + r else 0.0
