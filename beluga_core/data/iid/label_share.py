"""Whether one label dominates a task's i.i.d. data while G's i.i.d. score is accuracy.

On i.i.d. data that is 94 % one label, a model that answers that label for everything scores 94 % accuracy, and
G (the harmonic mean of s_T and the i.i.d. score) calls it good. Macro-F1 averages the labels, so that predictor
scores below 50 % there. ``beluga suite info --config`` and ``beluga run`` (and its dry run) say so, from this one
check, before anything trains.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from beluga_core.data.iid.examples import IIDData

# From this share of one label on, accuracy says little about a classifier (a constant one reaches it): 90 %, the
# share at which the degeneracy check calls a model's predictions collapsed, too.
MAJORITY_SHARE = 0.90
# The metrics that a constant prediction does not inflate, in the order a fix names them (the first the task
# computes): classification and relation compute macro_f1, paraphrase the positive class's f1.
BALANCED_METRICS = ("macro_f1", "f1")


@dataclass(frozen=True)
class LabelCounts:
    """Labels of the i.i.d. data accuracy is computed on (D_val and D_test: the source's dev set), most frequent
    first."""

    counts: list[tuple[str, int]]

    @property
    def total(self) -> int:
        return sum(n for _, n in self.counts)

    def share(self, i: int = 0) -> float:
        return self.counts[i][1] / self.total if self.total else 0.0

    def line(self) -> str:
        return ", ".join(f"{name} {n:,} ({n / self.total:.1%})" for name, n in self.counts)


def label_counts(data: IIDData) -> LabelCounts | None:
    """The labels of D_val and D_test by name, most frequent first; None for data without class labels (answers)."""
    if not data.label_names:
        return None
    counts: Counter[str] = Counter()
    for ex in (*data.val, *data.test):
        label = ex.label
        if not isinstance(label, int):
            return None
        counts[data.label_names[label] if 0 <= label < len(data.label_names) else str(label)] += 1
    if not counts:
        return None
    return LabelCounts(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def majority_label_warning(data: IIDData, *, task: str, metric: str, metrics: Sequence[str]) -> str | None:
    """A warning when G's i.i.d. ``metric`` is accuracy and one label is at least MAJORITY_SHARE of the i.i.d.
    data it is computed on, naming the label, its share and the fix (``iid_metric``, among the task's
    ``metrics``); None otherwise."""
    if metric != "accuracy":
        return None
    labels = label_counts(data)
    if labels is None or labels.share() < MAJORITY_SHARE:
        return None
    name, n = labels.counts[0]
    share = labels.share()
    head = (f"label '{name}' is {share:.1%} of the i.i.d. data of task '{task}' ({data.source}: {n:,} of "
            f"{labels.total:,} examples of D_val and D_test), and G's i.i.d. score is accuracy: a model that always "
            f"answers '{name}' scores {share:.1%} on it, which G takes for a good i.i.d. score")
    fix = next((m for m in BALANCED_METRICS if m in metrics), None)
    if fix is None:
        return (f"{head}. Task '{task}' computes {', '.join(metrics)} only: balance its i.i.d. data, or train it "
                f"with task 'classification' and iid_metric = \"macro_f1\"")
    if fix == "macro_f1":
        k = max(len(data.label_names), 2)
        constant = 2 * share / (1 + share) / k   # its F1 on the label it always answers, 0 on the others
        why = f"macro-F1 averages the labels, so that model scores {constant:.1%}"
    else:
        why = f"{fix} is not inflated by a constant answer"
    return f"{head}. Set iid_metric = \"{fix}\" in the task's [[tasks]] entry of the config: {why}"
