"""The degeneracy check (docs/method.md, "Scores"): predicted labels on D_test and on MFT cases against gold.

The rule and every number are the store's: the ``degeneracy`` view decides, per replicate, whether a
prediction set collapsed (its comment states the rule; ``sections.degeneracy.degeneracy_rule`` words it for
readers), and ``degeneracy_labels`` sums the label counts over replicates and folds, with label names
(``label_names``) and gold shares (gold labels are in ``cases``). A configuration-method-scenario is flagged when
its set collapsed in some replicate. This module only groups those rows for display.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from beluga_core.analysis.report.report_data import ReportData
from beluga_core.core.constants import pair_order, scenario_order

PREDICTION_SETS = ("D_test", "MFT")
NO_LABEL = "∅"


@dataclass
class LabelShare:
    """One label of a prediction set, as the ``degeneracy_labels`` view gives it."""

    label: str | None
    name: str | None
    share: float | None               # of the predictions
    gold_share: float | None          # None: no gold label known
    gold_share_upper: float | None    # also counting "not X" gold cases as possibly this label

    @property
    def display_name(self) -> str:
        return self.name or (NO_LABEL if self.label is None else self.label)


@dataclass
class Distribution:
    """Predicted (and gold) label shares of one prediction set, summed over replicates."""

    n: int
    labels: list[LabelShare]
    collapsed: bool                   # in some replicate (the degeneracy view)

    @property
    def has_gold(self) -> bool:
        return any(s.gold_share is not None for s in self.labels)

    @property
    def top(self) -> LabelShare | None:
        """The most predicted label (the first by label id among ties)."""
        return max(self.labels, key=lambda s: s.share or 0.0, default=None) if self.n else None


@dataclass
class DegeneracyRow:
    """One configuration-method-scenario of a task and suite."""

    task: str
    suite: str | None
    config: str
    method: str
    scenario: str
    iid: Distribution | None = None
    mft: Distribution | None = None
    flags: list[str] = field(default_factory=list)   # "D_test", "MFT": where some replicate collapsed


def degeneracy_rows(data: ReportData) -> list[DegeneracyRow]:
    """The rows of ``degeneracy_labels``, one DegeneracyRow per (task, suite, config, method, scenario)."""
    rows: dict[tuple[Any, ...], DegeneracyRow] = {}
    sets: dict[tuple[Any, ...], Distribution] = {}
    for r in sorted(data.degeneracy, key=_label_order):
        key = (r["task"], r["suite"], r["config"], r["method"], r["scenario"])
        row = rows.setdefault(key, DegeneracyRow(*key))
        dist = sets.get((*key, r["prediction_set"]))
        if dist is None:
            dist = sets[(*key, r["prediction_set"])] = Distribution(int(r["n"]), [], bool(r["collapsed"]))
            setattr(row, "iid" if r["prediction_set"] == "D_test" else "mft", dist)
        dist.labels.append(LabelShare(r["label"], r["name"], r["share"], r["gold_share"], r["gold_share_upper"]))
    for row in rows.values():
        row.flags = [name for name, dist in zip(PREDICTION_SETS, (row.iid, row.mft), strict=True)
                     if dist is not None and dist.collapsed]
    order = {p: i for i, p in enumerate(pair_order({(r.config, r.method) for r in rows.values()}))}
    scen = {s: i for i, s in enumerate(scenario_order({r.scenario for r in rows.values()}))}
    return sorted(rows.values(), key=lambda r: (r.task, str(r.suite), order[(r.config, r.method)], scen[r.scenario]))


def _label_order(r: dict[str, Any]) -> tuple[Any, ...]:
    label = r["label"]
    return (r["prediction_set"], label is None, len(label or ""), label or "")


def format_distribution(dist: Distribution | None) -> str:
    """'negative: 95.2 % (gold 47.3 %), positive: 4.8 % (gold 52.7 %)' (label ids where names are unknown);
    "+" after a gold share: "not X" gold cases may also have that label."""
    if dist is None or not dist.n:
        return "—"
    parts = []
    for s in dist.labels:
        text = f"{s.display_name}: {100 * (s.share or 0.0):.1f} %"
        if s.gold_share is not None:
            more = s.gold_share_upper is not None and s.gold_share_upper > s.gold_share
            text += f" (gold {100 * s.gold_share:.1f} %{'+' if more else ''})"
        parts.append(text)
    return ", ".join(parts)


def collapsed_summary(dist: Distribution) -> str:
    """'neutral: 100.0 %': the top label and its share, for one-line warnings."""
    top = dist.top
    return "—" if top is None else f"{top.display_name}: {100 * (top.share or 0.0):.1f} %"
