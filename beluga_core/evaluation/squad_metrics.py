"""SQuAD v1.1 exact match and token F1, exactly as the official ``evaluate-v1.1.py`` defines them.

Answers are normalised by lower-casing, removing ASCII punctuation (``string.punctuation``), replacing the
whole words a / an / the by a space and collapsing white space; a prediction scores the maximum over the
gold answers. Kept bit-for-bit with the official script, quirks included: F1 is 0 whenever the two
normalised answers share no token, so an empty prediction against an answer that normalises to nothing
("the") has EM 1 but F1 0.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Callable, Sequence

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = frozenset(string.punctuation)


def normalize_answer(s: str) -> str:
    """Lower case, strip punctuation, drop articles, collapse white space (the official order)."""
    text = s.lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def exact_match_score(prediction: str, ground_truth: str) -> bool:
    return normalize_answer(prediction) == normalize_answer(ground_truth)


def f1_score(prediction: str, ground_truth: str) -> float:
    prediction_tokens = normalize_answer(prediction).split()
    ground_truth_tokens = normalize_answer(ground_truth).split()
    common = Counter(prediction_tokens) & Counter(ground_truth_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0.0
    precision = num_same / len(prediction_tokens)
    recall = num_same / len(ground_truth_tokens)
    return 2 * precision * recall / (precision + recall)


def max_over_ground_truths(metric: Callable[[str, str], float], prediction: str,
                           ground_truths: Sequence[str]) -> float:
    if not ground_truths:
        raise ValueError("a SQuAD example needs at least one gold answer")
    return max(float(metric(prediction, gt)) for gt in ground_truths)


def squad_scores(predictions: Sequence[str], gold: Sequence[Sequence[str]]) -> tuple[list[bool], list[float]]:
    """Per-example exact match and F1 (each the maximum over that example's gold answers)."""
    if len(predictions) != len(gold):
        raise ValueError(f"{len(predictions)} predictions for {len(gold)} examples")
    em = [max_over_ground_truths(exact_match_score, p, g) == 1.0 for p, g in zip(predictions, gold, strict=True)]
    f1 = [max_over_ground_truths(f1_score, p, g) for p, g in zip(predictions, gold, strict=True)]
    return em, f1


def squad_metrics(predictions: Sequence[str], gold: Sequence[Sequence[str]]) -> dict[str, float]:
    """Mean exact match and F1 as fractions in [0, 1] (the official script prints them × 100)."""
    em, f1 = squad_scores(predictions, gold)
    n = len(em)
    return {"exact_match": sum(em) / n if n else float("nan"), "f1": sum(f1) / n if n else float("nan")}
