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
